//! The nine TPC-C tables (clause 1.3) with the specification's table and
//! column names, and the secondary indexes the transactions need.
//!
//! Each table is described once, as (column, type) pairs spelled the way
//! PostgreSQL's `format_type` prints them, so the DDL and the list of
//! expected columns (with which a table that is not the tool's is refused)
//! cannot disagree.
//!
//! On YugabyteDB every table but `item` is hash-sharded on its warehouse
//! column (`primary key (x_w_id hash, …)`): every transaction works on one
//! home warehouse, so its rows of one table sit in one tablet, and the
//! warehouses spread evenly over the tablets. `item` is read by `i_id`
//! alone and is hash-sharded on it. On PostgreSQL the keys are plain
//! b-trees in the same column order.

use super::super::{Settings, Tables};
use crate::db::dialect::Flavor;
use crate::db::schema::TableDef;
use crate::db::sql::TableName;
use crate::error::Result;

/// One table: its name, columns, primary key (first column the
/// warehouse, or the item), and its secondary indexes.
struct Table {
    name: &'static str,
    shape: &'static str,
    columns: &'static [(&'static str, &'static str)],
    key: &'static [&'static str],
    /// (index name, columns).
    indexes: &'static [(&'static str, &'static [&'static str])],
}

const VC10: &str = "character varying(10)";
const VC20: &str = "character varying(20)";
const INT: &str = "integer";
const TS: &str = "timestamp without time zone";

const TABLES: &[Table] = &[
    Table {
        name: "warehouse",
        shape: "w_id, w_name, w_street_1..w_zip, w_tax, w_ytd (TPC-C clause 1.3)",
        columns: &[
            ("w_id", INT),
            ("w_name", VC10),
            ("w_street_1", VC20),
            ("w_street_2", VC20),
            ("w_city", VC20),
            ("w_state", "character(2)"),
            ("w_zip", "character(9)"),
            ("w_tax", "numeric(4,4)"),
            ("w_ytd", "numeric(12,2)"),
        ],
        key: &["w_id"],
        indexes: &[],
    },
    Table {
        name: "district",
        shape: "d_id, d_w_id, d_name, d_street_1..d_zip, d_tax, d_ytd, d_next_o_id (TPC-C clause 1.3)",
        columns: &[
            ("d_id", INT),
            ("d_w_id", INT),
            ("d_name", VC10),
            ("d_street_1", VC20),
            ("d_street_2", VC20),
            ("d_city", VC20),
            ("d_state", "character(2)"),
            ("d_zip", "character(9)"),
            ("d_tax", "numeric(4,4)"),
            ("d_ytd", "numeric(12,2)"),
            ("d_next_o_id", INT),
        ],
        key: &["d_w_id", "d_id"],
        indexes: &[],
    },
    Table {
        name: "customer",
        shape: "c_id, c_d_id, c_w_id, c_first, c_middle, c_last, ... c_data (TPC-C clause 1.3)",
        columns: &[
            ("c_id", INT),
            ("c_d_id", INT),
            ("c_w_id", INT),
            ("c_first", "character varying(16)"),
            ("c_middle", "character(2)"),
            ("c_last", "character varying(16)"),
            ("c_street_1", VC20),
            ("c_street_2", VC20),
            ("c_city", VC20),
            ("c_state", "character(2)"),
            ("c_zip", "character(9)"),
            ("c_phone", "character(16)"),
            ("c_since", TS),
            ("c_credit", "character(2)"),
            ("c_credit_lim", "numeric(12,2)"),
            ("c_discount", "numeric(4,4)"),
            ("c_balance", "numeric(12,2)"),
            ("c_ytd_payment", "numeric(12,2)"),
            ("c_payment_cnt", INT),
            ("c_delivery_cnt", INT),
            ("c_data", "character varying(500)"),
        ],
        key: &["c_w_id", "c_d_id", "c_id"],
        // Payment and Order-Status by last name (clause 2.5.2.2).
        indexes: &[("customer_last", &["c_w_id", "c_d_id", "c_last", "c_first"])],
    },
    Table {
        name: "history",
        shape: "h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data (TPC-C clause 1.3)",
        columns: &[
            ("h_c_id", INT),
            ("h_c_d_id", INT),
            ("h_c_w_id", INT),
            ("h_d_id", INT),
            ("h_w_id", INT),
            ("h_date", TS),
            ("h_amount", "numeric(6,2)"),
            ("h_data", "character varying(24)"),
        ],
        // The specification gives history no key, and no transaction
        // reads it back.
        key: &[],
        indexes: &[],
    },
    Table {
        name: "new_order",
        shape: "no_o_id, no_d_id, no_w_id (TPC-C clause 1.3)",
        columns: &[("no_o_id", INT), ("no_d_id", INT), ("no_w_id", INT)],
        key: &["no_w_id", "no_d_id", "no_o_id"],
        indexes: &[],
    },
    Table {
        name: "orders",
        shape: "o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local (TPC-C clause 1.3)",
        columns: &[
            ("o_id", INT),
            ("o_d_id", INT),
            ("o_w_id", INT),
            ("o_c_id", INT),
            ("o_entry_d", TS),
            ("o_carrier_id", INT),
            ("o_ol_cnt", INT),
            ("o_all_local", INT),
        ],
        key: &["o_w_id", "o_d_id", "o_id"],
        // Order-Status: a customer's latest order (clause 2.6.2.2).
        indexes: &[("orders_customer", &["o_w_id", "o_d_id", "o_c_id", "o_id"])],
    },
    Table {
        name: "order_line",
        shape: "ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ... ol_dist_info (TPC-C clause 1.3)",
        columns: &[
            ("ol_o_id", INT),
            ("ol_d_id", INT),
            ("ol_w_id", INT),
            ("ol_number", INT),
            ("ol_i_id", INT),
            ("ol_supply_w_id", INT),
            ("ol_delivery_d", TS),
            ("ol_quantity", INT),
            ("ol_amount", "numeric(6,2)"),
            ("ol_dist_info", "character(24)"),
        ],
        key: &["ol_w_id", "ol_d_id", "ol_o_id", "ol_number"],
        indexes: &[],
    },
    Table {
        name: "item",
        shape: "i_id, i_im_id, i_name, i_price, i_data (TPC-C clause 1.3)",
        columns: &[
            ("i_id", INT),
            ("i_im_id", INT),
            ("i_name", "character varying(24)"),
            ("i_price", "numeric(5,2)"),
            ("i_data", "character varying(50)"),
        ],
        key: &["i_id"],
        indexes: &[],
    },
    Table {
        name: "stock",
        shape: "s_i_id, s_w_id, s_quantity, s_dist_01..10, s_ytd, s_order_cnt, s_remote_cnt, s_data (TPC-C clause 1.3)",
        columns: &[
            ("s_i_id", INT),
            ("s_w_id", INT),
            ("s_quantity", INT),
            ("s_dist_01", "character(24)"),
            ("s_dist_02", "character(24)"),
            ("s_dist_03", "character(24)"),
            ("s_dist_04", "character(24)"),
            ("s_dist_05", "character(24)"),
            ("s_dist_06", "character(24)"),
            ("s_dist_07", "character(24)"),
            ("s_dist_08", "character(24)"),
            ("s_dist_09", "character(24)"),
            ("s_dist_10", "character(24)"),
            ("s_ytd", INT),
            ("s_order_cnt", INT),
            ("s_remote_cnt", INT),
            ("s_data", "character varying(50)"),
        ],
        key: &["s_w_id", "s_i_id"],
        indexes: &[],
    },
];

/// The table names, in the order `truncate` and the checks list them.
pub const NAMES: [&str; 9] = [
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
];

/// The tables of a warehouse, with the column that names it: what a load
/// of some warehouses (`--warehouse-range`) empties. A history row belongs
/// to the warehouse of the payment (`h_w_id`), as conditions 8 and 9 count it.
pub const WAREHOUSE_COLUMNS: [(&str, &str); 8] = [
    ("warehouse", "w_id"),
    ("district", "d_w_id"),
    ("customer", "c_w_id"),
    ("history", "h_w_id"),
    ("new_order", "no_w_id"),
    ("orders", "o_w_id"),
    ("order_line", "ol_w_id"),
    ("stock", "s_w_id"),
];

/// `copy <table> (<columns>) from stdin`, the columns in the table's
/// order (the loader writes its lines in that order).
pub fn copy_sql(table: &str) -> String {
    let cols = TABLES
        .iter()
        .find(|t| t.name == table)
        .map(|t| {
            t.columns
                .iter()
                .map(|(c, _)| *c)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    format!("copy {table} ({cols}) from stdin")
}

/// `first hash, rest…` on YugabyteDB, the columns as they are on
/// PostgreSQL.
fn key_list(flavor: Flavor, cols: &[&str]) -> String {
    match (flavor, cols.split_first()) {
        (Flavor::Yugabyte, Some((first, rest))) => {
            let mut s = format!("{first} hash");
            for c in rest {
                s.push_str(", ");
                s.push_str(c);
            }
            s
        }
        _ => cols.join(", "),
    }
}

fn ddl(t: &Table, flavor: Flavor, tablets: Option<u32>) -> String {
    let mut sql = format!("create table {} (", t.name);
    for (i, (c, ty)) in t.columns.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(c);
        sql.push(' ');
        sql.push_str(ty);
    }
    if !t.key.is_empty() {
        sql.push_str(&format!(", primary key ({})", key_list(flavor, t.key)));
    }
    sql.push(')');
    if let (Flavor::Yugabyte, Some(n)) = (flavor, tablets) {
        sql.push_str(&format!(" split into {n} tablets"));
    }
    for (name, cols) in t.indexes {
        sql.push_str(&format!(
            "; create index {name} on {} ({})",
            t.name,
            key_list(flavor, cols)
        ));
    }
    if t.name == "history" && flavor == Flavor::Yugabyte {
        // No key: rows are spread by a hidden row id; the index keeps a
        // warehouse's history findable for the checks.
        sql.push_str("; create index history_w on history (h_w_id hash, h_d_id)");
    }
    sql
}

/// The nine tables with their DDL for the flavour.
pub fn table_defs(flavor: Flavor, tablets: Option<u32>) -> Vec<TableDef> {
    TABLES
        .iter()
        .map(|t| TableDef {
            name: TableName::new(t.name).unwrap_or_else(|_| unreachable!("a fixed, valid name")),
            columns: t
                .columns
                .iter()
                .map(|(c, ty)| (c.to_string(), ty.to_string()))
                .collect(),
            shape: t.shape,
            ddl: ddl(t, flavor, tablets),
        })
        .collect()
}

/// The TPC-C tables, shared by tpcc-load, tpcc and tpcc-check.
pub static TPCC_TABLES: Tables = Tables {
    key: "tpcc",
    loader: "tpcc-load",
    defs,
    // The load fills all nine, history and new_order included.
    left_empty: &[],
    load_flags: |s| {
        vec![format!(
            "--warehouses {}",
            s.family::<super::TpccSettings>().warehouses
        )]
    },
};

fn defs(s: &Settings, flavor: Flavor) -> Result<Vec<TableDef>> {
    Ok(table_defs(flavor, s.tablets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nine_tables_with_the_specifications_names() {
        let defs = table_defs(Flavor::Postgres, None);
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        let mut want = NAMES.to_vec();
        want.sort_unstable();
        assert_eq!(sorted, want);
        // Every table but item is emptied by warehouse, on a column it has.
        for (t, col) in WAREHOUSE_COLUMNS {
            let def = defs.iter().find(|d| d.name.as_str() == t).unwrap();
            assert!(
                def.columns
                    .iter()
                    .any(|(c, ty)| c == col && ty == "integer"),
                "{t}.{col}"
            );
        }
        assert_eq!(WAREHOUSE_COLUMNS.len(), NAMES.len() - 1);
        let customer = &defs[2];
        assert!(customer.ddl.contains("c_last character varying(16)"));
        assert!(customer.ddl.contains("primary key (c_w_id, c_d_id, c_id))"));
        assert!(customer.ddl.contains(
            "; create index customer_last on customer (c_w_id, c_d_id, c_last, c_first)"
        ));
    }

    #[test]
    fn yugabytedb_ddl_hash_shards_on_the_warehouse() {
        let defs = table_defs(Flavor::Yugabyte, Some(6));
        let ddl: Vec<&str> = defs.iter().map(|d| d.ddl.as_str()).collect();
        assert!(
            ddl[1].contains("primary key (d_w_id hash, d_id)) split into 6 tablets"),
            "{}",
            ddl[1]
        );
        assert!(ddl[6].contains("primary key (ol_w_id hash, ol_d_id, ol_o_id, ol_number))"));
        assert!(ddl[7].contains("primary key (i_id hash))"));
        assert!(ddl[8].contains("primary key (s_w_id hash, s_i_id))"));
        assert!(ddl[5].contains(
            "create index orders_customer on orders (o_w_id hash, o_d_id, o_c_id, o_id)"
        ));
        assert!(ddl[3].contains("create index history_w on history (h_w_id hash, h_d_id)"));
        assert!(!ddl[3].contains("primary key"));
    }
}
