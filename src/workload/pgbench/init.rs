//! `-o pgbench-init -s SCALE`: pgbench's four tables, as `pgbench -i`
//! makes them, so that pgbench's built-in scripts (and pgbench itself) run
//! on them without pgbench installed.
//!
//! The tables and their contents are pgbench's: `pgbench_branches` (SCALE
//! rows, balance 0), `pgbench_tellers` (10 per branch), `pgbench_accounts`
//! (100000 per branch, `bid = (aid - 1) / 100000 + 1`, balance 0, an empty
//! filler) and an empty `pgbench_history`, with pgbench's column types and
//! primary keys. What differs is how fast: branches and tellers are made by
//! one INSERT each on the server, the accounts are streamed by COPY over
//! `-t` connections at once (at least 10000 accounts per COPY; `-b` raises
//! it), and on PostgreSQL the primary keys are added after the load, as
//! `pgbench -i` does, then the tables vacuumed and analyzed. On YugabyteDB
//! the keys are declared at creation (hash-sharded; `--tablets` splits
//! them), since a primary key cannot be added later without rewriting the
//! table.
//!
//! Like every table of the tool they are created marked as ysql-bench's;
//! tables that `pgbench -i` made are refused (they would be emptied)
//! unless `--force` is given. aid stays an integer, so the scale stops
//! below 20000, where pgbench switches to bigint.

use tokio_postgres::Client;

use super::script::ScriptSettings;
use crate::db::dialect::Flavor;
use crate::db::schema::{self, TableDef};
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::copy_load::{CopyLoad, Lines};
use crate::workload::kit::partition::thread_range;
use crate::workload::{
    BoxFuture, DynOperation, Facts, Role, Settings, Spec, TableSet, Tables, Workload,
};

/// Accounts per branch, as pgbench.
pub const ACCOUNTS_PER_BRANCH: u64 = 100_000;
/// Tellers per branch, as pgbench.
pub const TELLERS_PER_BRANCH: u64 = 10;
/// The largest scale with integer account ids (pgbench uses bigint from
/// 20000 on).
pub const MAX_SCALE: u64 = 19_999;
/// The fewest accounts one COPY sends: fewer would spend the load on
/// round trips and commits.
pub const MIN_COPY_ROWS: usize = 10_000;

/// `-o pgbench-init`.
pub static SPEC: Spec = Spec {
    name: "pgbench-init",
    aliases: &[],
    about: "pgbench's tables at -s SCALE (as pgbench -i), accounts by COPY over the threads",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build,
};

/// `-o pgbench-cleanup`.
pub static CLEANUP: Spec = crate::workload::kit::cleanup::spec(
    "pgbench-cleanup",
    "drop pgbench's four tables, those ysql-bench created (never those of pgbench -i)",
    |spec, s| crate::workload::kit::cleanup::build(spec, s, Some(&FAMILY), &[]),
);

/// The family's tables, as the clean-ups know them.
pub static FAMILY: crate::workload::kit::cleanup::Family = crate::workload::kit::cleanup::Family {
    name: "pgbench",
    tables: &PGBENCH_TABLES,
    more: None,
    routines: false,
};

fn name(t: &str) -> TableName {
    TableName::new(t).unwrap_or_else(|_| unreachable!("a fixed, valid name"))
}

fn cols(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The four tables: pgbench's columns, and the DDL for the flavour.
pub fn table_defs(flavor: Flavor, tablets: Option<u32>) -> Vec<TableDef> {
    // PostgreSQL: keys added after the load; YugabyteDB: declared now.
    let pk = |k: &str| match flavor {
        Flavor::Postgres => String::new(),
        Flavor::Yugabyte => format!(", primary key ({k} hash)"),
    };
    let tail = match flavor {
        Flavor::Postgres => " with (fillfactor=100)".to_string(),
        Flavor::Yugabyte => tablets.map_or(String::new(), |n| format!(" split into {n} tablets")),
    };
    let history_tail = match flavor {
        Flavor::Postgres => String::new(),
        Flavor::Yugabyte => tail.clone(),
    };
    vec![
        TableDef {
            name: name("pgbench_branches"),
            columns: cols(&[
                ("bid", "integer"),
                ("bbalance", "integer"),
                ("filler", "character(88)"),
            ]),
            shape: "bid integer, bbalance integer, filler char(88)",
            ddl: format!(
                "create table pgbench_branches (bid int not null, bbalance int, filler char(88){}){tail}",
                pk("bid")
            ),
        },
        TableDef {
            name: name("pgbench_tellers"),
            columns: cols(&[
                ("tid", "integer"),
                ("bid", "integer"),
                ("tbalance", "integer"),
                ("filler", "character(84)"),
            ]),
            shape: "tid integer, bid integer, tbalance integer, filler char(84)",
            ddl: format!(
                "create table pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84){}){tail}",
                pk("tid")
            ),
        },
        TableDef {
            name: name("pgbench_accounts"),
            columns: cols(&[
                ("aid", "integer"),
                ("bid", "integer"),
                ("abalance", "integer"),
                ("filler", "character(84)"),
            ]),
            shape: "aid integer, bid integer, abalance integer, filler char(84)",
            ddl: format!(
                "create table pgbench_accounts (aid int not null, bid int, abalance int, filler char(84){}){tail}",
                pk("aid")
            ),
        },
        TableDef {
            name: name("pgbench_history"),
            columns: cols(&[
                ("tid", "integer"),
                ("bid", "integer"),
                ("aid", "integer"),
                ("delta", "integer"),
                ("mtime", "timestamp without time zone"),
                ("filler", "character(22)"),
            ]),
            shape: "tid, bid, aid, delta integer, mtime timestamp, filler char(22)",
            ddl: format!(
                "create table pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22)){history_tail}"
            ),
        },
    ]
}

/// The keys `pgbench -i` adds after the load (PostgreSQL).
const PRIMARY_KEYS: [(&str, &str); 3] = [
    ("pgbench_branches", "bid"),
    ("pgbench_tellers", "tid"),
    ("pgbench_accounts", "aid"),
];

/// pgbench's tables as a [`TableSet`].
pub static PGBENCH_TABLES: Tables = Tables {
    key: "pgbench",
    loader: "pgbench-init",
    defs: |s, flavor| Ok(table_defs(flavor, s.tablets)),
    left_empty: &["pgbench_history"],
    load_flags: |s| vec![format!("-s {}", scale(s))],
};

/// The scale of the run: `-s`, 1 when not given.
pub fn scale(s: &Settings) -> u64 {
    s.family::<ScriptSettings>().scale.unwrap_or(1)
}

fn build(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    let scale = scale(s);
    if scale > MAX_SCALE {
        return Err(Error::usage(format!(
            "-s {scale} is too large: pgbench-init keeps aid an integer, so at most -s {MAX_SCALE} ({} accounts)",
            MAX_SCALE * ACCOUNTS_PER_BRANCH
        )));
    }
    let copy_rows = copy_rows(s);
    Ok(Box::new(Init {
        spec,
        facts: Facts {
            batch_text: format!(
                "{copy_rows} accounts per COPY (scale {scale}: {scale} branches, {} tellers, {} accounts)",
                scale * TELLERS_PER_BRANCH,
                scale * ACCOUNTS_PER_BRANCH
            ),
            histogram_note: format!("batch ({copy_rows} accounts)"),
            ..Facts::new(spec, name("pgbench_accounts"))
        },
        settings: s.clone(),
        scale,
        accounts: name("pgbench_accounts"),
    }))
}

/// Accounts per COPY: `-b`, but never so few that the load is all round
/// trips.
fn copy_rows(s: &Settings) -> usize {
    s.batch_size.max(MIN_COPY_ROWS)
}

struct Init {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    scale: u64,
    accounts: TableName,
}

async fn flavor_of(client: &Client) -> Result<Flavor> {
    Ok(schema::detect(client).await?.flavor)
}

impl Workload for Init {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &PGBENCH_TABLES
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let fail = |what: &'static str| move |e| Error::db(format!("pgbench-init: {what}"), e);
            let filled = ["pgbench_branches", "pgbench_tellers", "pgbench_accounts"].map(name);
            schema::require_privileges(client, &filled, &["INSERT"], self.spec.name).await?;
            if flavor_of(client).await? == Flavor::Postgres {
                // As pgbench -i: the keys come after the rows, which load
                // faster into a table without an index.
                for (t, _) in PRIMARY_KEYS {
                    client
                        .batch_execute(&format!(
                            "alter table {t} drop constraint if exists {t}_pkey"
                        ))
                        .await
                        .map_err(fail("cannot drop a primary key before the load"))?;
                }
            }
            client
                .batch_execute(
                    "truncate table pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history",
                )
                .await
                .map_err(fail("cannot empty pgbench's tables"))?;
            schema::mark_loading(client, &self.accounts).await?;
            let s = self.scale;
            client
                .batch_execute(&format!(
                    "insert into pgbench_branches (bid, bbalance) select b, 0 from generate_series(1, {s}) b"
                ))
                .await
                .map_err(fail("cannot load pgbench_branches"))?;
            client
                .batch_execute(&format!(
                    "insert into pgbench_tellers (tid, bid, tbalance) \
                     select t, (t - 1) / {TELLERS_PER_BRANCH} + 1, 0 from generate_series(1, {}) t",
                    s * TELLERS_PER_BRANCH
                ))
                .await
                .map_err(fail("cannot load pgbench_tellers"))
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let fail = |what: &'static str| move |e| Error::db(format!("pgbench-init: {what}"), e);
            let flavor = flavor_of(client).await?;
            if flavor == Flavor::Postgres {
                crate::say!(">> pgbench-init: primary keys, vacuum analyze");
                for (t, k) in PRIMARY_KEYS {
                    client
                        .batch_execute(&format!("alter table {t} add primary key ({k})"))
                        .await
                        .map_err(fail("cannot add a primary key"))?;
                }
            }
            let verb = match flavor {
                Flavor::Postgres => "vacuum analyze",
                // VACUUM is a no-op there.
                Flavor::Yugabyte => "analyze",
            };
            // One statement each: VACUUM refuses to run in the implicit
            // transaction of a multi-statement query.
            for t in [
                "pgbench_branches",
                "pgbench_tellers",
                "pgbench_accounts",
                "pgbench_history",
            ] {
                client
                    .batch_execute(&format!("{verb} {t}"))
                    .await
                    .map_err(fail("cannot vacuum and analyze the tables"))?;
            }
            schema::mark_loaded(client, &self.accounts, rows).await
        })
    }

    fn scale(&self) -> Option<String> {
        Some(format!("scale {}", self.scale))
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let total = self.scale * ACCOUNTS_PER_BRANCH;
        Box::new(CopyLoad::new(
            COPY.to_string(),
            thread_range(total, self.settings.threads, thread),
            copy_rows(&self.settings),
            Accounts,
        ))
    }
}

const COPY: &str = "copy pgbench_accounts (aid, bid, abalance, filler) from stdin";

/// The accounts as COPY lines: line n is account n + 1.
struct Accounts;

impl Lines for Accounts {
    fn line(&self, n: u64, out: &mut Vec<u8>) {
        account_lines(n..n + 1, out);
    }

    fn line_bytes(&self) -> usize {
        20
    }

    fn what(&self) -> &'static str {
        "accounts (aid - 1)"
    }
}

/// Appends accounts `range` (aid - 1) as COPY text lines: aid, bid, a zero
/// balance and an empty filler, as pgbench -i writes them.
pub fn account_lines(range: std::ops::Range<u64>, out: &mut Vec<u8>) {
    let mut a = itoa::Buffer::new();
    let mut b = itoa::Buffer::new();
    for n in range {
        out.extend_from_slice(a.format(n + 1).as_bytes());
        out.push(b'\t');
        out.extend_from_slice(b.format(n / ACCOUNTS_PER_BRANCH + 1).as_bytes());
        out.extend_from_slice(b"\t0\t\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_are_written_as_pgbench_writes_them() {
        let mut out = Vec::new();
        account_lines(99_999..100_001, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "100000\t1\t0\t\n100001\t2\t0\t\n"
        );
    }

    #[test]
    fn the_ddl_has_pgbench_columns_and_keys_where_they_belong() {
        let pg = table_defs(Flavor::Postgres, Some(3));
        assert_eq!(pg.len(), 4);
        assert_eq!(
            pg[2].ddl,
            "create table pgbench_accounts (aid int not null, bid int, abalance int, filler char(84)) with (fillfactor=100)"
        );
        assert!(!pg[3].ddl.contains("fillfactor"));
        let yb = table_defs(Flavor::Yugabyte, Some(3));
        assert_eq!(
            yb[0].ddl,
            "create table pgbench_branches (bid int not null, bbalance int, filler char(88), primary key (bid hash)) split into 3 tablets"
        );
        assert!(yb[3].ddl.ends_with("filler char(22)) split into 3 tablets"));
    }
}
