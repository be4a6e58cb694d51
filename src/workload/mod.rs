//! Workloads: what each runnable thing of `-o` sends to the server, and how
//! it counts.
//!
//! A workload is one module that exports a [`Spec`] and is listed once in
//! [`REGISTRY`]. The spec says what the runner, the reports and the
//! configuration need to know (its names in `-o`, whether it loads or
//! queries, whether `--rate` paces it, what a unit is called) and how to
//! build the workload from the validated [`Settings`]. The built
//! [`Workload`] does the per-run set-up on one connection and makes one
//! [`Operation`] per worker. Nothing in the runner, the reports or the app
//! matches on a workload's name: adding one is a module and a registry line.
//!
//! Workloads differ only in the SQL they send and in what a unit of work
//! is (a batch of rows, one COPY of a file, one CALL, one query, one
//! transaction of a mix). How units are scheduled, timed and counted is the
//! runner's business, in one loop for all of them ([`crate::runner`]).
//! `stage` prepares the next unit outside the timed section (random strings,
//! COPY buffers, which key and which type of transaction), `execute` sends
//! it and is timed. Each unit says which of the workload's transaction
//! [`Workload::types`] it is, and every statistic is kept per type.
//!
//! An operation whose unit is one prepared statement may also offer itself
//! to the lean driver ([`crate::db::wire`]) through [`Operation::wire`]: it
//! then says what to prepare, which parameters a unit binds and what the
//! answer means, and the worker's session sends it without tokio-postgres
//! and without a boxed future.
//!
//! The runner drives a worker's operation through `Box<dyn DynOperation>`:
//! one small allocation per executed unit for the boxed future, against
//! tens of microseconds for the round trip, buys a registry without a
//! closed enum.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use tokio_postgres::Client;

use crate::db::dialect::Flavor;
use crate::db::schema::{self, TableDef};
use crate::db::sql::TableName;
use crate::error::Result;

pub mod booking;
pub mod cleanup;
pub mod copy_file;
pub mod copy_load;
pub mod copy_mem;
pub mod csv_gen;
pub mod insert;
pub mod keys;
pub mod limits;
pub mod oltp;
pub mod partition;
pub mod pgbench_init;
pub mod procedure;
pub mod rowgen;
pub mod script;
pub mod select;
pub mod table;
pub mod tpcc;
pub mod update;
pub mod ycsb;

/// A boxed future that may move between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Every workload, in the order `--help` lists them.
pub static REGISTRY: &[&Spec] = &[
    &insert::SPEC,
    &copy_mem::SPEC,
    &copy_file::SPEC,
    &procedure::SPEC,
    &select::SPEC,
    &update::SPEC,
    &table::CLEANUP,
    &ycsb::LOAD,
    &ycsb::A,
    &ycsb::B,
    &ycsb::C,
    &ycsb::D,
    &ycsb::E,
    &ycsb::F,
    &ycsb::CLEANUP,
    &oltp::PREPARE,
    &oltp::READ_WRITE,
    &oltp::READ_ONLY,
    &oltp::WRITE_ONLY,
    &oltp::POINT_SELECT,
    &oltp::UPDATE_INDEX,
    &oltp::UPDATE_NON_INDEX,
    &oltp::INSERT,
    &oltp::DELETE_INSERT,
    &oltp::CLEANUP,
    &booking::LOAD,
    &booking::BOOKING,
    &booking::CHECK,
    &booking::CLEANUP,
    &tpcc::LOAD,
    &tpcc::RUN,
    &tpcc::CHECK,
    &tpcc::CLEANUP,
    &pgbench_init::SPEC,
    &pgbench_init::CLEANUP,
    &script::SPEC,
    &cleanup::SPEC,
];

/// The workload named `name` in `-o` (its name or an alias).
pub fn lookup(name: &str) -> Option<&'static Spec> {
    REGISTRY
        .iter()
        .copied()
        .find(|s| s.name == name || s.aliases.contains(&name))
}

/// The names `-o` accepts, for messages and `--help`.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|s| s.name).collect()
}

/// Whether a workload empties and fills its tables, or works on what is
/// already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Writes keys `0..rows` into emptied tables, split over the workers;
    /// ends when every worker's share is done (or at `--time`).
    Load,
    /// Reads or changes the loaded tables until `--time` is up.
    Query,
}

/// What the rest of the program knows of a workload.
pub struct Spec {
    /// The name in `-o` and in reports.
    pub name: &'static str,
    /// Other spellings `-o` accepts (the original tool's `copy_mem`).
    pub aliases: &'static [&'static str],
    /// One line for `--help`.
    pub about: &'static str,
    pub role: Role,
    /// Whether `--rate` paces its units (not so for one statement per
    /// thread, as procedure and copy-file send).
    pub paced: bool,
    /// Whether it writes into its tables (a query workload may too).
    pub writes: bool,
    /// Whether it drops tables (a clean-up): it needs none created, and
    /// no workload after it in `-o` may need the ones it drops.
    pub drops: bool,
    /// What one timed unit is, for reports, singular and plural.
    pub unit: &'static str,
    pub units: &'static str,
    /// Checks the flags for this workload and builds it for the run.
    pub build: fn(&'static Spec, &Settings) -> Result<Box<dyn Workload>>,
}

impl Spec {
    pub fn is_load(&self) -> bool {
        self.role == Role::Load
    }

    /// What the statistics keep of this workload.
    pub fn kind(&self) -> crate::stats::OpKind {
        crate::stats::OpKind {
            name: self.name,
            unit: self.unit,
            units: self.units,
            load: self.is_load(),
            paced: self.paced,
        }
    }
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Spec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A workload built for one run.
pub trait Workload: Send + Sync {
    fn spec(&self) -> &'static Spec;

    /// The transaction types its units report, in the order reports show
    /// them; [`Operation::unit_type`] indexes this list. One type, named
    /// after the unit, unless the workload is a mix.
    fn types(&self) -> Vec<&'static str> {
        vec![self.spec().unit]
    }

    /// The tables it works on, checked once per run before any workload
    /// starts and created only when a load of the run fills them (see
    /// [`TableSet::reads`] and [`TableSet::prepare`]). Workloads that share
    /// tables return the same set; the first one prepares it.
    fn tables(&self) -> &'static dyn TableSet;

    /// Set-up on one connection before the workers start, not timed: for a
    /// load, emptying and marking the tables.
    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>>;

    /// For a query workload: what is wrong with the tables it is about to
    /// read (missing rows), as a warning; None when nothing is.
    fn check_loaded<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// After a load that ran to its end: marks the tables as loaded.
    fn finish_load<'a>(&'a self, _client: &'a Client, _rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// SQLSTATEs whose failure makes a unit be tried again (unless
    /// `--retry-on` says otherwise): serialization failures and deadlocks
    /// (YugabyteDB reports its read-restart and conflict errors as 40001).
    fn retry_on(&self) -> &'static [&'static str] {
        &["40001", "40P01"]
    }

    /// Tries per unit unless `--max-tries` says otherwise (0: no limit but
    /// the end of the run): one for single statements; transactional
    /// workloads retry as the tools they stand in for do.
    fn default_max_tries(&self) -> u32 {
        1
    }

    /// After the operation, on a connection of its own: consistency
    /// checks of what the workload wrote. A broken one fails the run.
    fn checks<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<Vec<Check>>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Whether this run of the workload writes into its tables (so that
    /// a table the tool did not create is refused without `--force`): the
    /// spec's, unless the flags change it (a custom YCSB mix).
    fn writes(&self) -> bool {
        self.spec().writes
    }

    /// Whether the workload runs timed units at all (not so for one whose
    /// work is its set-up or its checks): its summary is then only what
    /// it did.
    fn has_units(&self) -> bool {
        true
    }

    /// Whether the workload needs its tables created and checked before
    /// the run (not so for one that drops them, nor for scripts).
    fn needs_tables(&self) -> bool {
        !self.spec().drops
    }

    /// What a workload without units did, line by line (a clean-up's
    /// dropped and left tables), read after its set-up, also a failed
    /// one: for the summary and the JSON report.
    fn findings(&self) -> Vec<Finding> {
        Vec::new()
    }

    /// Figures of its own, from what was measured of each type (in the
    /// order of [`Workload::types`]) over the measured wallclock: TPC-C's
    /// tpmC. Shown in the summary and the JSON report's `metrics`.
    fn metrics(&self, _types: &[TypeFigures], _wallclock: std::time::Duration) -> Vec<Metric> {
        Vec::new()
    }

    /// The same figures per interval (TPC-C: tpmC and efficiency), from
    /// each type's figures of one interval: on the progress lines, in the
    /// CSV and JSON reports and on the throughput picture. An owned
    /// function, as the collector of intervals outlives no workload.
    fn interval_metrics(&self) -> Option<IntervalMetrics> {
        None
    }

    /// What this run of the workload is, beyond its name: a mix's shares,
    /// its key distribution, its record shape. Shown in the summary and
    /// the JSON report; empty when the name says it all.
    fn describe(&self) -> String {
        String::new()
    }

    /// What the run is sized by, in a few words for a picture's title
    /// ("2 warehouses", "scale 10"), when it is not the rows of `-r` (or
    /// of [`Workload::load_rows`]); asked after the run.
    fn scale(&self) -> Option<String> {
        None
    }

    /// What one unit holds, as the summary's `batch` line says it.
    fn batch_text(&self) -> String {
        String::new()
    }

    /// What the units that found rows missing are, as the summary says
    /// them (TPC-C: the New-Orders rolled back by rule, not missing rows).
    fn missing_label(&self) -> &'static str {
        "missing"
    }

    /// What the latency histogram is of, e.g. "batch (200 rows)".
    fn histogram_note(&self) -> String {
        self.spec().unit.to_string()
    }

    /// The table the rows go to or come from, for `--show-rowsize`.
    fn table(&self) -> &TableName;

    /// For a load: the rows this client's workers will write, when `-r`
    /// does not say it (TPC-C's warehouses, booking's flights). The
    /// progress bar and the "stopped by --time" line measure against it.
    fn load_rows(&self) -> Option<u64> {
        None
    }

    /// The tables whose server statistics the run reports
    /// ([`crate::db::server_watch`]): the one of [`Workload::table`]
    /// unless the workload says more.
    fn stat_tables(&self) -> Vec<String> {
        vec![self.table().as_str().to_string()]
    }

    /// The operation of worker `thread` (0-based).
    fn worker(&self, thread: usize) -> Box<dyn DynOperation>;
}

/// The [`TableSet`] of a workload family, described by its tables: each
/// is created when missing and refused when it is not the tool's (see
/// [`schema::prepare_table`]).
pub struct Tables {
    pub key: &'static str,
    pub loader: &'static str,
    /// The tables, with their DDL for the server's flavour.
    pub defs: fn(&Settings, Flavor) -> Result<Vec<TableDef>>,
    /// The tables a complete load leaves empty (booking's seats, pgbench's
    /// history): a query refuses them missing, not empty.
    pub left_empty: &'static [&'static str],
    /// See [`TableSet::load_flags`].
    pub load_flags: fn(&Settings) -> Vec<String>,
}

impl TableSet for Tables {
    fn key(&self) -> &'static str {
        self.key
    }

    fn loader(&self) -> &'static str {
        self.loader
    }

    fn reads(&self, s: &Settings) -> Result<Vec<ReadTable>> {
        // The names alone: the flavour only changes the DDL.
        Ok((self.defs)(s, Flavor::Postgres)?
            .into_iter()
            .map(|d| ReadTable {
                holds_rows: !self.left_empty.contains(&d.name.as_str()),
                name: d.name,
            })
            .collect())
    }

    fn load_flags(&self, s: &Settings) -> Vec<String> {
        (self.load_flags)(s)
    }

    fn prepare<'a>(
        &'a self,
        client: &'a Client,
        s: &'a Settings,
        flavor: Flavor,
        how: TableUse,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for def in (self.defs)(s, flavor)? {
                schema::prepare_table(client, &def, s.drop, s.force, how.written, how.filled)
                    .await?;
            }
            Ok(())
        })
    }
}

/// `-r N`: the rows a load writes and the queries look up.
pub fn rows_flag(s: &Settings) -> Vec<String> {
    vec![format!("-r {}", s.rows)]
}

/// A table a query workload reads, as checked before a run that does not
/// load it first (see [`TableSet::reads`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadTable {
    pub name: TableName,
    /// Whether a complete load leaves rows in it, so that an empty one
    /// means it was never loaded (and is refused as a missing one is).
    pub holds_rows: bool,
}

/// How the run uses a set of tables, for [`TableSet::prepare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableUse {
    /// A load of the run fills them: missing ones are created (and with
    /// `--drop`, existing ones dropped first). Otherwise only queries
    /// read them, and nothing is created or dropped.
    pub filled: bool,
    /// A workload of the run writes into them (a table that is not the
    /// tool's is then refused without `--force`).
    pub written: bool,
}

/// The worker of a workload whose work is all in its set-up or checks.
pub struct NoUnits;

impl Operation for NoUnits {
    async fn prepare(&mut self, _client: &Client) -> Result<()> {
        Ok(())
    }
    fn stage(&mut self) -> bool {
        false
    }
    async fn execute(&mut self, _client: &Client) -> Result<Outcome> {
        Ok(Outcome::default())
    }
}

/// The figures the workload named `operation` puts on its record, with
/// the rules by which a merge makes them again: for a report written
/// before the record kept the rules (only TPC-C's have figures).
pub fn figure_rules(operation: &str) -> Vec<Metric> {
    if [tpcc::LOAD.name, tpcc::RUN.name].contains(&operation) {
        tpcc::figure_rules()
    } else {
        Vec::new()
    }
}

/// sysbench's query classes of a statement kind, by its name: `read`
/// (selects and ranges), `other` (BEGIN, COMMIT, ROLLBACK) or `write`.
pub fn query_class(name: &str) -> &'static str {
    if let Some(class) = script::query_class(name) {
        return class;
    }
    if name.contains("select") || name.ends_with("_range") || name == "read" || name == "scan" {
        "read"
    } else if matches!(name, "begin" | "commit" | "rollback") {
        "other"
    } else {
        "write"
    }
}

/// A set of tables that one or more workloads use.
pub trait TableSet: Sync {
    /// Tells sets apart: workloads with the same key share their tables.
    fn key(&self) -> &'static str;

    /// The workload of `-o` that loads these tables, for advice such as
    /// "load it first with -o copy-mem,select".
    fn loader(&self) -> &'static str;

    /// The tables the set's query workloads read. A run whose query comes
    /// before any load of the set refuses, before anything is created or
    /// written, when one is missing or (if a load leaves rows in it)
    /// empty: every lookup would miss, and the run still end "well".
    /// None by default: the tables of a set that does not say are not
    /// the tool's to know (a user's scripts).
    fn reads(&self, _settings: &Settings) -> Result<Vec<ReadTable>> {
        Ok(Vec::new())
    }

    /// The flags of this run that the loader needs to fill what the
    /// queries read, as a command line gives them ("--tables 7", "-r
    /// 1000"): the advice to load first repeats them, so that the load
    /// fills exactly what the query will look for.
    fn load_flags(&self, _settings: &Settings) -> Vec<String> {
        Vec::new()
    }

    /// Creates the tables when a load of the run fills them (dropping
    /// them first with `--drop`), and refuses any that is not the tool's
    /// before anything is written (see [`TableUse`]).
    fn prepare<'a>(
        &'a self,
        client: &'a Client,
        settings: &'a Settings,
        flavor: Flavor,
        how: TableUse,
    ) -> BoxFuture<'a, Result<()>>;
}

/// Waits around a unit that are not work for the server: TPC-C's keying
/// time before a transaction and think time after it (clause 5.2.5). The
/// runner waits them outside the timed section, so they are in no
/// latency, and ends them at once on the stop or the end of `--time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pauses {
    pub before: std::time::Duration,
    pub after: std::time::Duration,
}

pub use crate::stats::outcome::{
    Check, Finding, IntervalMetrics, Metric, Outcome, Rule, StatementStats, TypeFigures,
};

/// One worker's share of a workload, on its own connection.
pub trait Operation: Send + 'static {
    /// Per-connection set-up, not timed: prepares statements.
    fn prepare(&mut self, client: &Client) -> impl Future<Output = Result<()>> + Send;

    /// Makes the next unit ready, not timed. Returns false when this
    /// worker's share is done (loads); queries always have a next unit.
    fn stage(&mut self) -> bool;

    /// Sends the staged unit and waits for its result: the timed part.
    /// May be called again for the same unit to retry it.
    fn execute(&mut self, client: &Client) -> impl Future<Output = Result<Outcome>> + Send;

    /// Which of the workload's types the staged unit is.
    fn unit_type(&self) -> usize {
        0
    }

    /// Which rows the staged unit holds, for error messages ("ids 0..200").
    fn unit_label(&self) -> Option<String> {
        None
    }

    /// What the runner waits before and after the staged unit (none but
    /// for TPC-C's terminals with `--tpcc-wait`).
    fn pauses(&self) -> Pauses {
        Pauses::default()
    }

    /// Whether a failed unit may simply be sent again. False where a
    /// failure can leave part of the unit committed.
    fn retryable(&self) -> bool {
        true
    }

    /// Whether one unit may run for a long time (one CALL or one COPY of a
    /// whole share). Such a unit is cancelled on the server when the run is
    /// stopped or `--time` is up, instead of being waited for.
    fn long_unit(&self) -> bool {
        false
    }

    /// Hands over (and forgets) the per-statement figures kept since the
    /// last call; the runner calls it after the warmup (to drop those)
    /// and at the end.
    fn take_statements(&mut self) -> Vec<StatementStats> {
        Vec::new()
    }

    /// Rows that a failed or cancelled unit left committed in the table.
    /// None for units that commit all or nothing.
    fn committed_rows(&mut self, _client: &Client) -> impl Future<Output = Result<u64>> + Send {
        std::future::ready(Ok(0))
    }

    /// The operation as the lean driver runs it, if it can be: None (the
    /// default) keeps it on tokio-postgres. An operation that answers
    /// here must answer so from its creation on, for every unit.
    fn wire(&mut self) -> Option<&mut dyn WireUnit> {
        None
    }
}

/// A statement of a [`WireUnit`]: its SQL, and what its failures are
/// called (the same words as on tokio-postgres).
pub struct WireStatement {
    pub sql: String,
    /// Context of a failed prepare, e.g. "cannot prepare the SELECT".
    pub prepare_failed: String,
    /// Context of a failed unit, e.g. "SELECT failed".
    pub failed: &'static str,
}

/// An operation whose every unit is one prepared statement with int and
/// text parameters, as the lean driver ([`crate::db::wire`]) runs it: the
/// session prepares [`WireUnit::statements`] on each new connection, and
/// for each unit binds [`WireUnit::param`]s to the statement
/// [`WireUnit::statement`] names and hands the answer to
/// [`WireUnit::outcome`]. Nothing here is async, so nothing is boxed.
pub trait WireUnit: Send {
    /// The statements to prepare on a new connection, in the order
    /// [`WireUnit::statement`] indexes them.
    fn statements(&self) -> Vec<WireStatement>;

    /// Which statement the staged unit runs.
    fn statement(&self) -> usize {
        0
    }

    /// Parameter `i` (0-based) of the staged unit.
    fn param(&self, i: usize) -> crate::db::wire::Param<'_>;

    /// What the unit did, from the server's answer (to its last
    /// statement, for a unit of several).
    fn outcome(&mut self, answer: crate::db::wire::Answer) -> Outcome;

    /// None (the default): the unit is one statement,
    /// [`WireUnit::statement`] with [`WireUnit::param`]s. Some(n): it is n
    /// statements one after another, each its own round trip (a
    /// transaction: BEGIN, its statements, COMMIT), which the `step_`
    /// methods below describe, each answer going to
    /// [`WireUnit::step_done`] and the last also to [`WireUnit::outcome`].
    fn steps(&self) -> Option<usize> {
        None
    }

    /// Which statement step `step` runs.
    fn step_statement(&self, step: usize) -> usize {
        let _ = step;
        self.statement()
    }

    /// Parameter `i` of step `step`.
    fn step_param(&self, step: usize, i: usize) -> crate::db::wire::Param<'_> {
        let _ = step;
        self.param(i)
    }

    /// Step `step` of a unit of several answered, `took` after it was sent
    /// (per-statement figures).
    fn step_done(&mut self, step: usize, answer: crate::db::wire::Answer, took: Duration) {
        let _ = (step, answer, took);
    }

    /// Step `step` failed, and with it the unit (for the unit's label).
    fn step_failed(&mut self, step: usize) {
        let _ = step;
    }

    /// Whether a failed unit leaves a transaction to roll back.
    fn rolls_back(&self) -> bool {
        false
    }
}

/// [`Operation`] as a trait object, so that the registry can hand any
/// workload's operations to the one worker loop. Every `Operation` is one.
pub trait DynOperation: Send + 'static {
    fn prepare_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<()>>;
    fn stage_dyn(&mut self) -> bool;
    fn execute_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<Outcome>>;
    fn unit_type_dyn(&self) -> usize;
    fn unit_label_dyn(&self) -> Option<String>;
    fn pauses_dyn(&self) -> Pauses;
    fn retryable_dyn(&self) -> bool;
    fn long_unit_dyn(&self) -> bool;
    fn committed_rows_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<u64>>;
    fn take_statements_dyn(&mut self) -> Vec<StatementStats>;
    fn wire_dyn(&mut self) -> Option<&mut dyn WireUnit>;
}

impl<O: Operation> DynOperation for O {
    fn prepare_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.prepare(client))
    }
    fn stage_dyn(&mut self) -> bool {
        self.stage()
    }
    fn execute_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<Outcome>> {
        Box::pin(self.execute(client))
    }
    fn unit_type_dyn(&self) -> usize {
        self.unit_type()
    }
    fn unit_label_dyn(&self) -> Option<String> {
        self.unit_label()
    }
    fn pauses_dyn(&self) -> Pauses {
        self.pauses()
    }
    fn retryable_dyn(&self) -> bool {
        self.retryable()
    }
    fn long_unit_dyn(&self) -> bool {
        self.long_unit()
    }
    fn committed_rows_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<u64>> {
        Box::pin(self.committed_rows(client))
    }
    fn take_statements_dyn(&mut self) -> Vec<StatementStats> {
        // The query class goes on the statistics here, once for every
        // workload, so that the report reads it instead of asking us.
        let mut taken = self.take_statements();
        for s in taken.iter_mut().filter(|s| s.class.is_empty()) {
            s.class = query_class(s.name);
        }
        taken
    }
    fn wire_dyn(&mut self) -> Option<&mut dyn WireUnit> {
        self.wire()
    }
}

/// A worker's operation of any workload, as the runner drives it. A named
/// type rather than `Box<dyn DynOperation>` itself: the compiler's proof
/// that the worker loop's future is `Send` would otherwise stumble on the
/// trait object's lifetime (rust-lang/rust#64552).
pub struct AnyOperation(pub Box<dyn DynOperation>);

impl Operation for AnyOperation {
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        self.0.prepare_dyn(client).await
    }
    fn stage(&mut self) -> bool {
        self.0.stage_dyn()
    }
    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        self.0.execute_dyn(client).await
    }
    fn unit_type(&self) -> usize {
        self.0.unit_type_dyn()
    }
    fn unit_label(&self) -> Option<String> {
        self.0.unit_label_dyn()
    }
    fn pauses(&self) -> Pauses {
        self.0.pauses_dyn()
    }
    fn retryable(&self) -> bool {
        self.0.retryable_dyn()
    }
    fn long_unit(&self) -> bool {
        self.0.long_unit_dyn()
    }
    async fn committed_rows(&mut self, client: &Client) -> Result<u64> {
        self.0.committed_rows_dyn(client).await
    }
    fn take_statements(&mut self) -> Vec<StatementStats> {
        self.0.take_statements_dyn()
    }
    fn wire(&mut self) -> Option<&mut dyn WireUnit> {
        self.0.wire_dyn()
    }
}

/// What workloads need from the command line: the shape of the data, how
/// keys are drawn, how statements are sent. Nothing about pacing or
/// reports.
#[derive(Clone, Debug)]
pub struct Settings {
    pub threads: usize,
    /// Rows (records) loaded, or keys drawn from.
    pub rows: u64,
    pub batch_size: usize,
    pub field_len: usize,
    /// False under --no-prepared: no operation may leave a named statement
    /// on its connection (literals over the simple protocol, or unnamed
    /// statements, see [`crate::db::unnamed`]).
    pub prepared: bool,
    /// The table name given with --table-name, if any (each table set has
    /// its own default).
    pub table_name: Option<String>,
    pub tablets: Option<u32>,
    pub drop: bool,
    pub force: bool,
    pub seed: u64,
    pub csv_dir: PathBuf,
    /// copy-file streams the files from this machine (COPY FROM STDIN).
    pub copy_file_client: bool,
    /// How query workloads pick keys; None: the workload's own default.
    pub keys: Option<keys::KeyDistribution>,
    /// `--zipf-theta`, if given: the exponent of the zipfian and `latest`
    /// of --key-distribution and of the YCSB mixes' own keys.
    pub zipf_theta: Option<f64>,
    pub ycsb: ycsb::YcsbSettings,
    pub oltp: oltp::OltpSettings,
    pub booking: booking::BookingSettings,
    pub tpcc: tpcc::TpccSettings,
    /// `--script`, `--builtin`, `-D` and `-s`.
    pub script: script::ScriptSettings,
    /// `--isolation`, for workloads that begin their transactions with
    /// an explicit level.
    pub isolation: Option<crate::db::sql::Isolation>,
    /// Which of several clients this is (`--clients`): loads take the
    /// share of the client's threads among all clients' threads.
    pub client: partition::ClientShare,
}

impl Settings {
    /// The ids (records, rows of all tables) this client's thread `t`
    /// loads out of `rows`: every loader takes its share through here, so
    /// that several clients together load 0..rows once.
    pub fn share(&self, rows: u64, t: usize) -> std::ops::Range<u64> {
        self.client.thread_range(rows, self.threads, t)
    }
}

/// A 64-bit mix of the run's seed and a worker's index, so that workers of
/// one run draw different ids while the run stays reproducible.
pub fn worker_seed(seed: u64, thread: usize, salt: u64) -> u64 {
    let mut z = seed
        .wrapping_add((thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws the keys a query workload looks for, from its own seeded
/// generator and key distribution.
pub struct IdPicker {
    rng: rand::rngs::SmallRng,
    keys: keys::KeyPicker,
}

impl IdPicker {
    pub fn new(
        seed: u64,
        thread: usize,
        threads: usize,
        rows: u64,
        dist: keys::KeyDistribution,
    ) -> Self {
        use rand::SeedableRng;
        let rows = rows.max(1);
        let start = (rows as u128 * thread as u128 / threads.max(1) as u128) as u64;
        IdPicker {
            rng: rand::rngs::SmallRng::seed_from_u64(worker_seed(seed, thread, 1)),
            keys: keys::KeyPicker::new(dist, rows, start),
        }
    }

    /// The next key, 0..rows.
    pub fn next_key(&mut self) -> u64 {
        self.keys.next(&mut self.rng)
    }

    /// The next id, as test_table's int column wants it.
    pub fn next_id(&mut self) -> i32 {
        // rows <= 2^31 is checked in the plan, so the id fits in an i32.
        self.next_key() as i32
    }

    /// The generator, for operations that also need random text.
    pub fn rng(&mut self) -> &mut rand::rngs::SmallRng {
        &mut self.rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_alias_finds_one_workload() {
        let mut seen = std::collections::HashSet::new();
        for s in REGISTRY {
            for n in std::iter::once(&s.name).chain(s.aliases) {
                assert!(seen.insert(*n), "{n} is listed twice");
                assert_eq!(lookup(n).map(|x| x.name), Some(s.name));
            }
        }
        assert!(lookup("delete").is_none());
    }
}
