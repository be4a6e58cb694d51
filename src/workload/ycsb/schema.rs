//! usertable: its name, its DDL, its record keys and the checks of its
//! shape.

use crate::db::dialect::Flavor;
use crate::db::schema::TableDef;
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::keys::fnv1a_64;
use crate::workload::{Settings, Tables};

/// The key of record `n`, as YCSB names it.
pub fn key_of(n: u64) -> String {
    format!("user{}", fnv1a_64(n))
}

pub(super) fn table_name(s: &Settings) -> Result<TableName> {
    TableName::new(s.table_name.as_deref().unwrap_or(DEFAULT_TABLE))
}

pub(super) fn check_shape(s: &Settings) -> Result<()> {
    let y = s.family::<YcsbSettings>();
    if y.field_count == 0 || y.field_count > 1000 {
        return Err(Error::usage(format!(
            "--ycsb-field-count {} is out of range: give 1 to 1000 (YCSB's default is 10)",
            y.field_count
        )));
    }
    if y.field_length > crate::workload::kit::limits::MAX_FIELD_LEN {
        return Err(Error::usage(format!(
            "--ycsb-field-length {} is too large: the limit is {} characters",
            y.field_length,
            crate::workload::kit::limits::MAX_FIELD_LEN
        )));
    }
    Ok(())
}

/// usertable, YCSB's one table.
pub static USERTABLE: Tables = Tables {
    key: DEFAULT_TABLE,
    loader: "ycsb-load",
    defs: |s, flavor| {
        let name = table_name(s)?;
        let fields = s.family::<YcsbSettings>().field_count;
        let mut columns = vec![("ycsb_key".to_string(), "character varying(255)".to_string())];
        columns.extend((0..fields).map(|i| (format!("field{i}"), "text".to_string())));
        Ok(vec![TableDef {
            ddl: create_sql(flavor, &name, fields, s.tablets),
            name,
            columns,
            shape: "ycsb_key varchar(255), field0..fieldN text",
        }])
    },
    left_empty: &[],
    load_flags: crate::workload::rows_flag,
};
use super::{DEFAULT_TABLE, YcsbSettings};

/// `CREATE TABLE` of usertable: the key hash-sharded on YugabyteDB.
pub fn create_sql(
    flavor: Flavor,
    table: &TableName,
    fields: usize,
    tablets: Option<u32>,
) -> String {
    let t = table.quoted();
    let cols: Vec<String> = (0..fields).map(|i| format!("field{i} text")).collect();
    match flavor {
        Flavor::Postgres => format!(
            "create table {t} (ycsb_key varchar(255) primary key, {})",
            cols.join(", ")
        ),
        Flavor::Yugabyte => {
            let mut sql = format!(
                "create table {t} (ycsb_key varchar(255), {}, primary key (ycsb_key hash))",
                cols.join(", ")
            );
            if let Some(n) = tablets {
                sql.push_str(&format!(" split into {n} tablets"));
            }
            sql
        }
    }
}

/// The SELECT list of every field.
pub(super) fn field_list(count: usize) -> String {
    (0..count)
        .map(|i| format!("field{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_user_and_the_fnv_hash_of_the_record_number() {
        assert_eq!(key_of(0), format!("user{}", fnv1a_64(0)));
        assert_ne!(key_of(1), key_of(2));
        assert!(key_of(12345).starts_with("user"));
    }

    #[test]
    fn the_ddl_hash_shards_the_key_on_yugabytedb_only() {
        let t = TableName::new("usertable").unwrap();
        let pg = create_sql(Flavor::Postgres, &t, 2, Some(4));
        assert_eq!(
            pg,
            "create table \"usertable\" (ycsb_key varchar(255) primary key, field0 text, field1 text)"
        );
        let yb = create_sql(Flavor::Yugabyte, &t, 2, Some(4));
        assert!(
            yb.ends_with("primary key (ycsb_key hash)) split into 4 tablets"),
            "{yb}"
        );
    }
}
