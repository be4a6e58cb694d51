//! sysbench's OLTP family: `oltp-prepare`, `oltp-cleanup` and the eight
//! transaction scripts of sysbench's `oltp_*.lua`, on the same tables, so
//! that sysbench can run on tables ysql-bench prepared and the other way
//! round.
//!
//! Tables `sbtest1..N` (`--tables`) of `-r` rows (`--table-size`) each, in
//! sysbench's layout: `id serial primary key, k integer, c char(120), pad
//! char(60)` and index `k_N` on `k`; `c` is ten groups of 11 random digits
//! joined by `-`, `pad` five, `k` uniform in 1..rows, ids 1..rows (the
//! sequence is moved past them, so that sysbench's own inserts go on
//! after). `oltp-prepare` loads them with COPY over the threads;
//! `oltp-cleanup` drops them (only the tool's, or with `--force` those of
//! sysbench's shape; see [`crate::workload::cleanup`]).
//!
//! One unit is one sysbench *event*: for the transactional scripts a
//! BEGIN … COMMIT holding the groups of statements of `oltp_common.lua`
//! (point selects, the four range selects over `--range-size`, index and
//! non-index updates, delete-then-insert of one id), each group on a table
//! drawn at random, the ids from `--key-distribution` (uniform by
//! default). The statements of a unit are drawn in `stage`, untimed; a
//! failed transaction is rolled back, and `--retry-on` (40001, 40P01 and
//! 23505 by default, as sysbench's PostgreSQL driver) runs the same
//! transaction again. Each statement kind keeps its own latency, reported
//! with `--per-statement` and always in JSON, and the summary counts
//! queries as sysbench does (read, write, other).

pub mod args;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::workload::kit::copy_in::copy_in;
use crate::workload::kit::keys::{KeyDistribution, KeyPicker};
use crate::workload::kit::simple_query::command_rows;

use crate::db::dialect::Flavor;
use crate::db::schema::{self, TableDef};
use crate::db::sql::TableName;
use crate::db::unnamed;
use crate::db::wire::{Answer, Param};
use crate::error::{Error, Result};
use crate::workload::{
    BoxFuture, DynOperation, Operation, Outcome, Role, Settings, Spec, StatementStats, TableSet,
    Tables, WireStatement, WireUnit, Workload, worker_seed,
};

/// sysbench's knobs.
#[derive(Clone, Debug)]
pub struct OltpSettings {
    pub tables: usize,
    pub range_size: u64,
    /// `--point-selects`; None: 10 (1 for oltp-point-select).
    pub point_selects: Option<u32>,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
    pub skip_trx: bool,
}

impl Default for OltpSettings {
    fn default() -> Self {
        OltpSettings {
            tables: 1,
            range_size: 100,
            point_selects: None,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
        }
    }
}

/// The columns of an sbtest table, as `format_type` names them.
const COLUMNS: [(&str, &str); 4] = [
    ("id", "integer"),
    ("k", "integer"),
    ("c", "character(120)"),
    ("pad", "character(60)"),
];

/// sysbench's `c` and `pad` values: groups of 11 digits joined by `-`.
const C_GROUPS: usize = 10;
const PAD_GROUPS: usize = 5;

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

fn table(i: usize) -> TableName {
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

/// What one oltp workload runs per unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Script {
    ReadWrite,
    ReadOnly,
    WriteOnly,
    PointSelect,
    UpdateIndex,
    UpdateNonIndex,
    Insert,
    DeleteInsert,
}

const fn run_spec(name: &'static str, about: &'static str, writes: bool) -> Spec {
    Spec {
        name,
        aliases: &[],
        about,
        role: Role::Query,
        paced: true,
        writes,
        drops: false,
        unit: "txn",
        units: "txns",
        build: build_run,
    }
}

/// `-o oltp-prepare`.
pub static PREPARE: Spec = Spec {
    name: "oltp-prepare",
    aliases: &[],
    about: "sysbench OLTP: create and load sbtest1..--tables with -r rows each",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: build_prepare,
};
/// `-o oltp-cleanup`.
pub static CLEANUP: Spec = crate::workload::cleanup::spec(
    "oltp-cleanup",
    "sysbench OLTP: drop sbtest1..--tables and every other sbtestN, those ysql-bench created",
    |spec, s| crate::workload::cleanup::build(spec, s, Some(&crate::workload::cleanup::OLTP)),
);
pub static READ_WRITE: Spec = run_spec(
    "oltp-read-write",
    "sysbench oltp_read_write: selects, ranges, updates, delete+insert in one transaction",
    true,
);
pub static READ_ONLY: Spec = run_spec(
    "oltp-read-only",
    "sysbench oltp_read_only: point and range selects in one transaction",
    false,
);
pub static WRITE_ONLY: Spec = run_spec(
    "oltp-write-only",
    "sysbench oltp_write_only: updates and delete+insert in one transaction",
    true,
);
pub static POINT_SELECT: Spec = run_spec(
    "oltp-point-select",
    "sysbench oltp_point_select: one point select",
    false,
);
pub static UPDATE_INDEX: Spec = run_spec(
    "oltp-update-index",
    "sysbench oltp_update_index: k = k + 1 of one row",
    true,
);
pub static UPDATE_NON_INDEX: Spec = run_spec(
    "oltp-update-non-index",
    "sysbench oltp_update_non_index: c of one row",
    true,
);
pub static INSERT: Spec = run_spec(
    "oltp-insert",
    "sysbench oltp_insert: one insert with a new serial id",
    true,
);
pub static DELETE_INSERT: Spec = run_spec(
    "oltp-delete-insert",
    "sysbench OLTP: delete and re-insert one id in one transaction",
    true,
);

fn script_of(name: &str) -> Script {
    match name {
        "oltp-read-write" => Script::ReadWrite,
        "oltp-read-only" => Script::ReadOnly,
        "oltp-write-only" => Script::WriteOnly,
        "oltp-point-select" => Script::PointSelect,
        "oltp-update-index" => Script::UpdateIndex,
        "oltp-update-non-index" => Script::UpdateNonIndex,
        "oltp-insert" => Script::Insert,
        _ => Script::DeleteInsert,
    }
}

fn check_rows(spec: &Spec, s: &Settings) -> Result<()> {
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

// ---------------------------------------------------------------- prepare

fn build_prepare(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_rows(spec, s)?;
    Ok(Box::new(Prepare {
        spec,
        settings: s.clone(),
        first: table(1),
    }))
}

struct Prepare {
    spec: &'static Spec,
    settings: Settings,
    first: TableName,
}

impl Workload for Prepare {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn tables(&self) -> &'static dyn TableSet {
        &SBTABLES
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let tables: Vec<TableName> = (1..=self.settings.family::<OltpSettings>().tables)
                .map(table)
                .collect();
            schema::require_privileges(client, &tables, &["INSERT"], self.spec.name).await?;
            // One statement: all of them emptied, or none.
            let list: Vec<String> = tables.iter().map(TableName::quoted).collect();
            client
                .batch_execute(&format!(
                    "truncate table {} restart identity",
                    list.join(", ")
                ))
                .await
                .map_err(|e| Error::db(format!("cannot truncate tables {}", list.join(", ")), e))?;
            for t in &tables {
                schema::mark_loading(client, t).await?;
            }
            Ok(())
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, _rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let rows = self.settings.rows;
            for i in 1..=self.settings.family::<OltpSettings>().tables {
                let t = table(i);
                // sysbench's own inserts (oltp_insert) take ids from the
                // sequence: past the loaded ones.
                client
                    .batch_execute(&format!(
                        "select setval(pg_get_serial_sequence('{0}', 'id'), {rows}); analyze {0}",
                        t.quoted()
                    ))
                    .await
                    .map_err(|e| Error::db(format!("cannot finish table {}", t.quoted()), e))?;
                schema::mark_loaded(client, &t, rows).await?;
            }
            Ok(())
        })
    }

    fn batch_text(&self) -> String {
        format!("{} rows per COPY", self.settings.batch_size)
    }

    fn histogram_note(&self) -> String {
        format!("batch ({} rows)", self.settings.batch_size)
    }

    fn table(&self) -> &TableName {
        &self.first
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let total = s.rows * s.family::<OltpSettings>().tables as u64;
        Box::new(PrepareOp {
            share: s.share(total, thread),
            rows: s.rows,
            batch: s.batch_size as u64,
            seed: s.seed,
            prepared: s.prepared,
            statements: Vec::new(),
            data: Bytes::new(),
            staged_table: 0,
            staged: 0..0,
        })
    }
}

/// A worker's share of all tables' rows, numbered 0..tables×rows: row g
/// is id g mod rows + 1 of table g / rows + 1. A batch never spans two
/// tables (one COPY goes to one table).
struct PrepareOp {
    share: std::ops::Range<u64>,
    rows: u64,
    batch: u64,
    seed: u64,
    prepared: bool,
    /// The prepared COPY of each table, made as tables are met.
    statements: Vec<Option<Statement>>,
    data: Bytes,
    staged_table: usize,
    staged: std::ops::Range<u64>,
}

impl PrepareOp {
    fn copy_sql(i: usize) -> String {
        format!("copy {} (id, k, c, pad) from stdin", table(i).quoted())
    }
}

impl Operation for PrepareOp {
    async fn prepare(&mut self, _client: &Client) -> Result<()> {
        // Statements are prepared per table on first use (a reconnect
        // forgets them all).
        self.statements.clear();
        Ok(())
    }

    fn stage(&mut self) -> bool {
        if self.share.start >= self.share.end {
            return false;
        }
        let g = self.share.start;
        let table_end = (g / self.rows + 1) * self.rows;
        let end = (g + self.batch).min(self.share.end).min(table_end);
        self.share.start = end;
        self.staged_table = (g / self.rows) as usize + 1;
        let mut buf = String::with_capacity(((end - g) * 200) as usize);
        for row in g..end {
            let id = row % self.rows + 1;
            let mut rng = SmallRng::seed_from_u64(worker_seed(self.seed, row as usize, 13));
            let k = rng.random_range(1..=self.rows);
            let _ = write!(buf, "{id}\t{k}\t");
            digits_value(&mut rng, C_GROUPS, &mut buf);
            buf.push('\t');
            digits_value(&mut rng, PAD_GROUPS, &mut buf);
            buf.push('\n');
        }
        self.data = Bytes::from(buf);
        self.staged = g % self.rows + 1..(end - 1) % self.rows + 2;
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!(
            "sbtest{} ids {}..{}",
            self.staged_table, self.staged.start, self.staged.end
        ))
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let i = self.staged_table;
        let sql = Self::copy_sql(i);
        if self.prepared {
            if self.statements.len() < i {
                self.statements.resize(i, None);
            }
            if self.statements[i - 1].is_none() {
                self.statements[i - 1] = Some(
                    client
                        .prepare(&sql)
                        .await
                        .map_err(|e| Error::db("cannot prepare the COPY of an sbtest table", e))?,
                );
            }
        }
        let statement = self
            .statements
            .get(i.wrapping_sub(1))
            .and_then(|s| s.as_ref());
        let chunk = futures_util::stream::iter([Ok(self.data.clone())]);
        let rows = copy_in(client, statement, &sql, chunk).await?;
        Ok(Outcome { rows, missing: 0 })
    }
}

// ---------------------------------------------------------------- runs

/// Statement kinds, in the order reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    PointSelect,
    SimpleRange,
    SumRange,
    OrderRange,
    DistinctRange,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
    Begin,
    Commit,
}

const KINDS: [Kind; 11] = [
    Kind::PointSelect,
    Kind::SimpleRange,
    Kind::SumRange,
    Kind::OrderRange,
    Kind::DistinctRange,
    Kind::IndexUpdate,
    Kind::NonIndexUpdate,
    Kind::Delete,
    Kind::Insert,
    Kind::Begin,
    Kind::Commit,
];

impl Kind {
    /// What a failed statement of this kind is called (as on tokio-postgres).
    fn failed_text(self) -> &'static str {
        match self {
            Kind::PointSelect => "oltp point_select failed",
            Kind::SimpleRange => "oltp simple_range failed",
            Kind::SumRange => "oltp sum_range failed",
            Kind::OrderRange => "oltp order_range failed",
            Kind::DistinctRange => "oltp distinct_range failed",
            Kind::IndexUpdate => "oltp index_update failed",
            Kind::NonIndexUpdate => "oltp non_index_update failed",
            Kind::Delete => "oltp delete failed",
            Kind::Insert => "oltp insert failed",
            Kind::Begin => "oltp begin failed",
            Kind::Commit => "oltp commit failed",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::PointSelect => "point_select",
            Kind::SimpleRange => "simple_range",
            Kind::SumRange => "sum_range",
            Kind::OrderRange => "order_range",
            Kind::DistinctRange => "distinct_range",
            Kind::IndexUpdate => "index_update",
            Kind::NonIndexUpdate => "non_index_update",
            Kind::Delete => "delete",
            Kind::Insert => "insert",
            Kind::Begin => "begin",
            Kind::Commit => "commit",
        }
    }

    /// sysbench's statement text for table `t`, with `$n` parameters.
    fn sql(self, t: &str, serial_insert: bool) -> String {
        match self {
            Kind::PointSelect => format!("SELECT c FROM {t} WHERE id=$1"),
            Kind::SimpleRange => format!("SELECT c FROM {t} WHERE id BETWEEN $1 AND $2"),
            Kind::SumRange => format!("SELECT SUM(k) FROM {t} WHERE id BETWEEN $1 AND $2"),
            Kind::OrderRange => format!("SELECT c FROM {t} WHERE id BETWEEN $1 AND $2 ORDER BY c"),
            Kind::DistinctRange => {
                format!("SELECT DISTINCT c FROM {t} WHERE id BETWEEN $1 AND $2 ORDER BY c")
            }
            Kind::IndexUpdate => format!("UPDATE {t} SET k=k+1 WHERE id=$1"),
            Kind::NonIndexUpdate => format!("UPDATE {t} SET c=$2 WHERE id=$1"),
            Kind::Delete => format!("DELETE FROM {t} WHERE id=$1"),
            Kind::Insert if serial_insert => {
                format!("INSERT INTO {t} (k, c, pad) VALUES ($1, $2, $3)")
            }
            Kind::Insert => format!("INSERT INTO {t} (id, k, c, pad) VALUES ($1, $2, $3, $4)"),
            Kind::Begin => "BEGIN".to_string(),
            Kind::Commit => "COMMIT".to_string(),
        }
    }

    fn is_read(self) -> bool {
        matches!(
            self,
            Kind::PointSelect
                | Kind::SimpleRange
                | Kind::SumRange
                | Kind::OrderRange
                | Kind::DistinctRange
        )
    }
}

/// Which statements a script's event runs, and how many of each group.
fn groups(script: Script, o: &OltpSettings) -> Vec<(Kind, u32)> {
    let ranges = |g: &mut Vec<(Kind, u32)>| {
        if o.range_selects {
            g.push((Kind::SimpleRange, o.simple_ranges));
            g.push((Kind::SumRange, o.sum_ranges));
            g.push((Kind::OrderRange, o.order_ranges));
            g.push((Kind::DistinctRange, o.distinct_ranges));
        }
    };
    let writes = |g: &mut Vec<(Kind, u32)>| {
        g.push((Kind::IndexUpdate, o.index_updates));
        g.push((Kind::NonIndexUpdate, o.non_index_updates));
        g.push((Kind::Delete, o.delete_inserts));
    };
    let mut g = Vec::new();
    match script {
        Script::ReadWrite => {
            g.push((Kind::PointSelect, o.point_selects.unwrap_or(10)));
            ranges(&mut g);
            writes(&mut g);
        }
        Script::ReadOnly => {
            g.push((Kind::PointSelect, o.point_selects.unwrap_or(10)));
            ranges(&mut g);
        }
        Script::WriteOnly => writes(&mut g),
        // sysbench's oltp_point_select sets point_selects to 1 itself.
        Script::PointSelect => g.push((Kind::PointSelect, o.point_selects.unwrap_or(1))),
        Script::UpdateIndex => g.push((Kind::IndexUpdate, o.index_updates)),
        Script::UpdateNonIndex => g.push((Kind::NonIndexUpdate, o.non_index_updates)),
        Script::Insert => g.push((Kind::Insert, 1)),
        Script::DeleteInsert => g.push((Kind::Delete, o.delete_inserts)),
    }
    g.retain(|(_, n)| *n > 0);
    g
}

/// Whether a script's event is one transaction (BEGIN … COMMIT): the
/// multi-group scripts, as sysbench's, unless `--skip-trx`.
fn transactional(script: Script, o: &OltpSettings) -> bool {
    !o.skip_trx
        && matches!(
            script,
            Script::ReadWrite | Script::ReadOnly | Script::WriteOnly | Script::DeleteInsert
        )
}

fn build_run(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_rows(spec, s)?;
    let script = script_of(spec.name);
    if groups(script, &s.family::<OltpSettings>()).is_empty() {
        return Err(Error::usage(format!(
            "{spec} has no statement left to run with these counts: give at least one of its statements a count above 0"
        )));
    }
    Ok(Box::new(OltpRun {
        spec,
        script,
        settings: s.clone(),
        first: table(1),
    }))
}

struct OltpRun {
    spec: &'static Spec,
    script: Script,
    settings: Settings,
    first: TableName,
}

impl Workload for OltpRun {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn tables(&self) -> &'static dyn TableSet {
        &SBTABLES
    }

    fn set_up<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn retry_on(&self) -> &'static [&'static str] {
        // sysbench's PostgreSQL driver also re-runs an event on a unique
        // violation (two transactions re-inserting one deleted id).
        &["40001", "40P01", "23505"]
    }

    fn default_max_tries(&self) -> u32 {
        // As sysbench: an "ignored error" re-runs the event, without limit.
        0
    }

    fn check_loaded<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            for i in 1..=self.settings.family::<OltpSettings>().tables {
                let t = table(i);
                match schema::load_state(client, &t).await? {
                    schema::LoadState::Incomplete => {
                        return Ok(Some(format!(
                            "the last oltp-prepare of {} did not finish: rows are missing",
                            t.quoted()
                        )));
                    }
                    schema::LoadState::Loaded(n) if n != self.settings.rows => {
                        return Ok(Some(format!(
                            "{} was prepared with {n} rows but -r is {}: ids will be missed or only part of the table used",
                            t.quoted(),
                            self.settings.rows
                        )));
                    }
                    schema::LoadState::Unknown => {
                        // A table sysbench prepared carries no mark: its
                        // highest id says its size.
                        let max: Option<i32> = unnamed::query_one(
                            client,
                            &format!("select max(id) from {}", t.quoted()),
                            &[],
                        )
                        .await
                        .map_err(|e| Error::db(format!("cannot read {}", t.quoted()), e))?
                        .get(0);
                        let max = max.unwrap_or(0) as u64;
                        // An empty table was refused before the run (this
                        // is one emptied since): no -r would help.
                        if max == 0 {
                            return Ok(Some(format!(
                                "{} is empty: every id will be missing",
                                t.quoted()
                            )));
                        }
                        if max != self.settings.rows {
                            return Ok(Some(format!(
                                "{} holds ids up to {max} but -r is {} (sysbench's --table-size is 10000 by default): give -r {max}",
                                t.quoted(),
                                self.settings.rows
                            )));
                        }
                    }
                    _ => {}
                }
            }
            Ok(None)
        })
    }

    fn table(&self) -> &TableName {
        &self.first
    }

    fn describe(&self) -> String {
        let s = &self.settings;
        let o = &*s.family::<OltpSettings>();
        let per: Vec<String> = groups(self.script, o)
            .iter()
            .map(|(k, n)| format!("{n} {}", k.name()))
            .collect();
        format!(
            "{} table(s) of {} rows; per event: {}{}; range size {}; keys {}",
            o.tables,
            s.rows,
            per.join(", "),
            if transactional(self.script, o) {
                " in BEGIN/COMMIT"
            } else {
                ""
            },
            o.range_size,
            s.keys.unwrap_or(KeyDistribution::Uniform).name()
        )
    }

    fn stat_tables(&self) -> Vec<String> {
        (1..=self.settings.family::<OltpSettings>().tables)
            .map(|i| format!("sbtest{i}"))
            .collect()
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let keys = s.keys.unwrap_or(KeyDistribution::Uniform);
        let start = (s.rows as u128 * thread as u128 / s.threads.max(1) as u128) as u64;
        let groups = groups(self.script, &s.family::<OltpSettings>());
        let mut stats: Vec<StatementStats> = Vec::new();
        let txn = transactional(self.script, &s.family::<OltpSettings>());
        for k in KINDS {
            let used = groups.iter().any(|(g, _)| *g == k)
                || (k == Kind::Insert
                    && groups.iter().any(|(g, _)| *g == Kind::Delete)
                    && self.script != Script::Insert)
                || (txn && matches!(k, Kind::Begin | Kind::Commit));
            if used {
                stats.push(StatementStats::new(k.name()));
            }
        }
        // The lean driver's statements, in the order they are prepared:
        // each used kind per table, then BEGIN and COMMIT once.
        let mut wire = Vec::new();
        for t in 1..=s.family::<OltpSettings>().tables {
            for k in KINDS {
                if !matches!(k, Kind::Begin | Kind::Commit)
                    && stats.iter().any(|st| st.name == k.name())
                {
                    wire.push((t, k));
                }
            }
        }
        if txn {
            wire.push((1, Kind::Begin));
            wire.push((1, Kind::Commit));
        }
        let at = |t: usize, k: Kind| wire.iter().position(|&w| w == (t, k));
        let wire_slots = (1..=s.family::<OltpSettings>().tables)
            .map(|t| {
                KINDS
                    .iter()
                    .map(|&k| match k {
                        Kind::Begin | Kind::Commit => at(1, k),
                        _ => at(t, k),
                    })
                    .collect()
            })
            .collect();
        let stat_slots = KINDS.map(|k| stats.iter().position(|st| st.name == k.name()));
        Box::new(OltpOp {
            wire,
            wire_slots,
            stat_slots,
            done: Outcome::default(),
            tables: s.family::<OltpSettings>().tables,
            rows: s.rows,
            range: s.family::<OltpSettings>().range_size,
            groups,
            txn,
            serial_insert: self.script == Script::Insert,
            prepared: s.prepared,
            rng: SmallRng::seed_from_u64(worker_seed(s.seed, thread, 17)),
            keys: KeyPicker::new(keys, s.rows, start),
            statements: Vec::new(),
            steps: Vec::new(),
            failed_at: None,
            stats,
        })
    }
}

/// One statement of a staged transaction.
struct Step {
    kind: Kind,
    table: usize,
    id: i32,
    /// The end of a range, or an insert's k.
    other: i32,
    /// The new c of a non-index update or an insert.
    c: String,
    pad: String,
}

struct OltpOp {
    /// The lean driver's statements: (table, kind) in the order prepared.
    wire: Vec<(usize, Kind)>,
    /// Where (table, kind) is in `wire` (index table-1, then as in KINDS).
    wire_slots: Vec<Vec<Option<usize>>>,
    /// Where each kind's figures are in `stats` (as in KINDS).
    stat_slots: [Option<usize>; KINDS.len()],
    /// What the staged unit's statements did so far (lean driver).
    done: Outcome,
    tables: usize,
    rows: u64,
    range: u64,
    groups: Vec<(Kind, u32)>,
    txn: bool,
    /// oltp-insert: the id comes from the table's sequence.
    serial_insert: bool,
    prepared: bool,
    rng: SmallRng,
    keys: KeyPicker,
    /// Prepared statements per table (index table-1) and kind (index in
    /// KINDS).
    statements: Vec<Vec<Option<Statement>>>,
    /// The staged event.
    steps: Vec<Step>,
    /// The step that failed last, for the failed unit's label.
    failed_at: Option<usize>,
    stats: Vec<StatementStats>,
}

impl OltpOp {
    fn id(&mut self) -> i32 {
        // Keys 1..rows, as sysbench's ids; rows fits an int (checked).
        (self.keys.next(&mut self.rng) + 1) as i32
    }

    fn kind_index(k: Kind) -> usize {
        KINDS.iter().position(|x| *x == k).unwrap_or(0)
    }

    fn record(&mut self, kind: Kind, began: Instant) {
        self.record_took(kind, began.elapsed());
    }

    fn record_took(&mut self, kind: Kind, took: Duration) {
        if let Some(i) = self.stat_slots[Self::kind_index(kind)]
            && let Some(s) = self.stats.get_mut(i)
        {
            s.record(took);
        }
    }

    /// Runs one statement; returns the rows it read or wrote.
    async fn run(&mut self, client: &Client, i: usize) -> Result<u64> {
        let step = &self.steps[i];
        let kind = step.kind;
        let began = Instant::now();
        let fail = |e| Error::db(format!("oltp {} failed", kind.name()), e);
        let n = if let Some(st) = self
            .statements
            .get(step.table - 1)
            .and_then(|t| t[Self::kind_index(kind)].as_ref())
        {
            match kind {
                Kind::PointSelect => {
                    client.query(st, &[&step.id]).await.map_err(fail)?.len() as u64
                }
                Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange => {
                    client
                        .query(st, &[&step.id, &step.other])
                        .await
                        .map_err(fail)?
                        .len() as u64
                }
                Kind::IndexUpdate | Kind::Delete => {
                    client.execute(st, &[&step.id]).await.map_err(fail)?
                }
                Kind::NonIndexUpdate => client
                    .execute(st, &[&step.id, &step.c])
                    .await
                    .map_err(fail)?,
                Kind::Insert if self.serial_insert => {
                    let p: [&(dyn ToSql + Sync); 3] = [&step.other, &step.c, &step.pad];
                    client.execute(st, &p).await.map_err(fail)?
                }
                Kind::Insert => {
                    let p: [&(dyn ToSql + Sync); 4] = [&step.id, &step.other, &step.c, &step.pad];
                    client.execute(st, &p).await.map_err(fail)?
                }
                Kind::Begin | Kind::Commit => {
                    client.execute(st, &[]).await.map_err(fail)?;
                    0
                }
            }
        } else {
            let sql = self.literal_sql(step);
            let msgs = client.simple_query(&sql).await.map_err(fail)?;
            let rows = msgs
                .iter()
                .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
                .count() as u64;
            if kind.is_read() {
                rows
            } else {
                command_rows(&msgs)
            }
        };
        self.record(kind, began);
        Ok(n)
    }

    /// `--no-prepared`: the statement with its values as literals (ids are
    /// integers, c and pad digits and dashes: nothing to escape).
    fn literal_sql(&self, s: &Step) -> String {
        let t = table(s.table).quoted();
        match s.kind {
            Kind::PointSelect => format!("SELECT c FROM {t} WHERE id={}", s.id),
            Kind::SimpleRange => {
                format!(
                    "SELECT c FROM {t} WHERE id BETWEEN {} AND {}",
                    s.id, s.other
                )
            }
            Kind::SumRange => format!(
                "SELECT SUM(k) FROM {t} WHERE id BETWEEN {} AND {}",
                s.id, s.other
            ),
            Kind::OrderRange => format!(
                "SELECT c FROM {t} WHERE id BETWEEN {} AND {} ORDER BY c",
                s.id, s.other
            ),
            Kind::DistinctRange => format!(
                "SELECT DISTINCT c FROM {t} WHERE id BETWEEN {} AND {} ORDER BY c",
                s.id, s.other
            ),
            Kind::IndexUpdate => format!("UPDATE {t} SET k=k+1 WHERE id={}", s.id),
            Kind::NonIndexUpdate => format!("UPDATE {t} SET c='{}' WHERE id={}", s.c, s.id),
            Kind::Delete => format!("DELETE FROM {t} WHERE id={}", s.id),
            Kind::Insert if self.serial_insert => format!(
                "INSERT INTO {t} (k, c, pad) VALUES ({}, '{}', '{}')",
                s.other, s.c, s.pad
            ),
            Kind::Insert => format!(
                "INSERT INTO {t} (id, k, c, pad) VALUES ({}, {}, '{}', '{}')",
                s.id, s.other, s.c, s.pad
            ),
            Kind::Begin => "BEGIN".to_string(),
            Kind::Commit => "COMMIT".to_string(),
        }
    }

    fn step(&self, kind: Kind, table: usize, id: i32, other: i32) -> Step {
        Step {
            kind,
            table,
            id,
            other,
            c: String::new(),
            pad: String::new(),
        }
    }
}

impl Operation for OltpOp {
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        self.statements.clear();
        if !self.prepared {
            return Ok(());
        }
        for i in 1..=self.tables {
            let t = table(i).quoted();
            let mut per_kind = vec![None; KINDS.len()];
            for (k, slot) in KINDS.iter().zip(per_kind.iter_mut()) {
                let used = self
                    .stats
                    .iter()
                    .any(|s| s.name == k.name() && !matches!(k, Kind::Begin | Kind::Commit));
                if used {
                    let sql = k.sql(&t, self.serial_insert);
                    *slot = Some(
                        client
                            .prepare(&sql)
                            .await
                            .map_err(|e| Error::db(format!("cannot prepare '{sql}'"), e))?,
                    );
                }
            }
            if self.txn {
                for k in [Kind::Begin, Kind::Commit] {
                    per_kind[Self::kind_index(k)] = Some(
                        client
                            .prepare(k.sql("", false).as_str())
                            .await
                            .map_err(|e| Error::db(format!("cannot prepare {}", k.name()), e))?,
                    );
                }
            }
            self.statements.push(per_kind);
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.steps.clear();
        self.failed_at = None;
        if self.txn {
            let s = self.step(Kind::Begin, 1, 0, 0);
            self.steps.push(s);
        }
        let groups = self.groups.clone();
        for (kind, n) in groups {
            let t = self.rng.random_range(1..=self.tables);
            for _ in 0..n {
                let id = self.id();
                match kind {
                    Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange => {
                        let end = (id as u64 + self.range - 1).min(i32::MAX as u64) as i32;
                        let s = self.step(kind, t, id, end);
                        self.steps.push(s);
                    }
                    Kind::NonIndexUpdate => {
                        let mut s = self.step(kind, t, id, 0);
                        digits_value(&mut self.rng, C_GROUPS, &mut s.c);
                        self.steps.push(s);
                    }
                    Kind::Delete => {
                        self.steps.push(self.step(Kind::Delete, t, id, 0));
                        let k = self.id();
                        let mut s = self.step(Kind::Insert, t, id, k);
                        digits_value(&mut self.rng, C_GROUPS, &mut s.c);
                        digits_value(&mut self.rng, PAD_GROUPS, &mut s.pad);
                        self.steps.push(s);
                    }
                    Kind::Insert => {
                        let k = (self.rng.random_range(1..=self.rows)) as i32;
                        let mut s = self.step(Kind::Insert, t, 0, k);
                        digits_value(&mut self.rng, C_GROUPS, &mut s.c);
                        digits_value(&mut self.rng, PAD_GROUPS, &mut s.pad);
                        self.steps.push(s);
                    }
                    _ => {
                        let s = self.step(kind, t, id, 0);
                        self.steps.push(s);
                    }
                }
            }
        }
        if self.txn {
            let s = self.step(Kind::Commit, 1, 0, 0);
            self.steps.push(s);
        }
        true
    }

    fn unit_label(&self) -> Option<String> {
        let step = match self.failed_at {
            Some(i) => self.steps.get(i)?,
            None => self.steps.iter().find(|s| s.kind != Kind::Begin)?,
        };
        Some(format!("{} on sbtest{}", step.kind.name(), step.table))
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let mut rows = 0;
        let mut missing = 0;
        for i in 0..self.steps.len() {
            match self.run(client, i).await {
                Ok(n) => {
                    rows += n;
                    missing += u64::from(n == 0 && self.steps[i].kind == Kind::PointSelect);
                }
                Err(e) => {
                    self.failed_at = Some(i);
                    if self.txn {
                        // The error is the unit's; a failed rollback on a
                        // lost connection adds nothing to it.
                        let _ = client.batch_execute("ROLLBACK").await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(Outcome { rows, missing })
    }

    fn take_statements(&mut self) -> Vec<StatementStats> {
        self.stats
            .iter_mut()
            .map(|s| std::mem::replace(s, StatementStats::new(s.name)))
            .collect()
    }

    /// On the lean driver whenever statements are prepared: a unit is
    /// its statements one after another, as [`OltpOp::run`] sends them.
    fn wire(&mut self) -> Option<&mut dyn WireUnit> {
        if self.prepared { Some(self) } else { None }
    }
}

impl WireUnit for OltpOp {
    fn statements(&self) -> Vec<WireStatement> {
        self.wire
            .iter()
            .map(|&(t, k)| {
                let sql = k.sql(&table(t).quoted(), self.serial_insert);
                WireStatement {
                    prepare_failed: match k {
                        Kind::Begin | Kind::Commit => format!("cannot prepare {}", k.name()),
                        _ => format!("cannot prepare '{sql}'"),
                    },
                    sql,
                    failed: k.failed_text(),
                }
            })
            .collect()
    }

    fn param(&self, i: usize) -> Param<'_> {
        self.step_param(0, i)
    }

    fn outcome(&mut self, _last: Answer) -> Outcome {
        self.done
    }

    fn steps(&self) -> Option<usize> {
        Some(self.steps.len())
    }

    fn step_statement(&self, step: usize) -> usize {
        let s = &self.steps[step];
        // Every staged kind was prepared (both come from the same groups).
        self.wire_slots
            .get(s.table - 1)
            .and_then(|t| t[Self::kind_index(s.kind)])
            .unwrap_or(0)
    }

    fn step_param(&self, step: usize, i: usize) -> Param<'_> {
        let s = &self.steps[step];
        let id = Param::Int(i64::from(s.id));
        let other = Param::Int(i64::from(s.other));
        match (s.kind, i) {
            (Kind::Insert, _) if self.serial_insert => {
                [other, Param::Text(&s.c), Param::Text(&s.pad)][i.min(2)]
            }
            (Kind::Insert, _) => [id, other, Param::Text(&s.c), Param::Text(&s.pad)][i.min(3)],
            (Kind::NonIndexUpdate, 1) => Param::Text(&s.c),
            (Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange, 1) => {
                other
            }
            _ => id,
        }
    }

    fn step_done(&mut self, step: usize, answer: Answer, took: Duration) {
        if step == 0 {
            // A new try of the unit: a retried one starts again.
            self.done = Outcome::default();
        }
        let kind = self.steps[step].kind;
        let n = match kind {
            k if k.is_read() => answer.rows,
            Kind::Begin | Kind::Commit => 0,
            _ => answer.affected,
        };
        self.done.rows += n;
        self.done.missing += u64::from(n == 0 && kind == Kind::PointSelect);
        self.record_took(kind, took);
    }

    fn step_failed(&mut self, step: usize) {
        self.failed_at = Some(step);
    }

    fn rolls_back(&self) -> bool {
        self.txn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn read_write_has_sysbench_statements_per_transaction() {
        let g = groups(Script::ReadWrite, &OltpSettings::default());
        let n: u32 = g.iter().map(|(_, n)| n).sum();
        // 10 point selects, 4 ranges, 2 updates, 1 delete (+ its insert).
        assert_eq!(n, 17);
        assert!(transactional(Script::ReadWrite, &OltpSettings::default()));
        assert!(!transactional(
            Script::PointSelect,
            &OltpSettings::default()
        ));
        assert_eq!(
            groups(Script::PointSelect, &OltpSettings::default()),
            vec![(Kind::PointSelect, 1)]
        );
        let no_ranges = OltpSettings {
            range_selects: false,
            ..OltpSettings::default()
        };
        assert_eq!(groups(Script::ReadOnly, &no_ranges).len(), 1);
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

    #[test]
    fn statements_are_classed_as_sysbench_counts_queries() {
        use crate::workload::query_class;
        for k in KINDS {
            let expect = if k.is_read() {
                "read"
            } else if matches!(k, Kind::Begin | Kind::Commit) {
                "other"
            } else {
                "write"
            };
            assert_eq!(query_class(k.name()), expect, "{k:?}");
        }
        assert_eq!(query_class("point_select"), "read");
        assert_eq!(query_class("distinct_range"), "read");
        assert_eq!(query_class("delete"), "write");
        assert_eq!(query_class("commit"), "other");
    }
}
