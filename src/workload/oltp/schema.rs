//! The sbtest tables as sysbench makes them: names, DDL, the shape of
//! their values, and the limit of their ids.

use std::fmt::Write as _;

use rand::RngExt;
use rand::rngs::SmallRng;

use super::OltpSettings;
use crate::db::dialect::Flavor;
use crate::db::schema::TableDef;
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::{Settings, Spec, Tables};

/// The columns of an sbtest table, as `format_type` names them.
const COLUMNS: [(&str, &str); 4] = [
    ("id", "integer"),
    ("k", "integer"),
    ("c", "character(120)"),
    ("pad", "character(60)"),
];

/// sysbench's `c` and `pad` values: groups of 11 digits joined by `-`.
pub(super) const C_GROUPS: usize = 10;
pub(super) const PAD_GROUPS: usize = 5;

/// Appends a value of `groups` groups of 11 random digits joined by `-`.
pub fn digits_value(rng: &mut SmallRng, groups: usize, out: &mut String) {
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        // 11 digits: one draw below 10^11, zero-padded.
        let v: u64 = rng.random_range(0..100_000_000_000);
        let _ = write!(out, "{v:011}");
    }
}

pub(super) fn table(i: usize) -> TableName {
    // sbtest1..N: a fixed name, always valid.
    TableName::new(&format!("sbtest{i}")).unwrap_or_else(|_| unreachable!("sbtestN is valid"))
}

/// `CREATE TABLE` and its index, as sysbench makes them; hash-sharded on
/// YugabyteDB.
pub fn create_sql(flavor: Flavor, i: usize, tablets: Option<u32>) -> String {
    let cols = "id serial, k integer default '0' not null, c char(120) default '' not null, \
                pad char(60) default '' not null";
    let t = table(i).quoted();
    let create = match flavor {
        Flavor::Postgres => format!("create table {t} ({cols}, primary key (id))"),
        Flavor::Yugabyte => {
            let mut sql = format!("create table {t} ({cols}, primary key (id hash))");
            if let Some(n) = tablets {
                sql.push_str(&format!(" split into {n} tablets"));
            }
            sql
        }
    };
    format!("{create}; create index k_{i} on {t}(k)")
}

/// The tables sbtest1..N, as sysbench makes them.
fn sbtest_defs(s: &Settings, flavor: Flavor) -> Result<Vec<TableDef>> {
    Ok((1..=s.family::<OltpSettings>().tables)
        .map(|i| TableDef {
            name: table(i),
            columns: COLUMNS
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
            shape: "id integer, k integer, c char(120), pad char(60)",
            ddl: create_sql(flavor, i, s.tablets),
        })
        .collect())
}

/// sbtest1..N.
pub static SBTABLES: Tables = Tables {
    key: "sbtest",
    loader: "oltp-prepare",
    defs: sbtest_defs,
    left_empty: &[],
    load_flags: |s| {
        vec![
            format!("--tables {}", s.family::<OltpSettings>().tables),
            format!("-r {}", s.rows),
        ]
    },
};

pub(super) fn check_rows(spec: &Spec, s: &Settings) -> Result<()> {
    if s.rows > i32::MAX as u64 {
        return Err(Error::usage(format!(
            "-r {} is more than an sbtest table's integer id holds: at most {} rows per table",
            s.rows,
            i32::MAX
        )));
    }
    if s.rows == 0 {
        return Err(Error::usage(format!(
            "-r 0 leaves {spec} no row: give the rows per table, e.g. -r 10000"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn values_have_sysbench_shape() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut c = String::new();
        digits_value(&mut rng, C_GROUPS, &mut c);
        assert_eq!(c.len(), 119);
        assert_eq!(c.matches('-').count(), 9);
        assert!(
            c.split('-')
                .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit()))
        );
        let mut pad = String::new();
        digits_value(&mut rng, PAD_GROUPS, &mut pad);
        assert_eq!(pad.len(), 59);
    }

    #[test]
    fn the_ddl_is_sysbenchs_and_hash_sharded_on_yugabytedb() {
        let pg = create_sql(Flavor::Postgres, 3, Some(4));
        assert!(
            pg.starts_with("create table \"sbtest3\" (id serial, k integer"),
            "{pg}"
        );
        assert!(pg.ends_with("primary key (id)); create index k_3 on \"sbtest3\"(k)"));
        let yb = create_sql(Flavor::Yugabyte, 3, Some(4));
        assert!(
            yb.contains("primary key (id hash)) split into 4 tablets"),
            "{yb}"
        );
    }
}
