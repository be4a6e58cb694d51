//! TPC-C: `tpcc-load` (the initial population of clause 4.3), `tpcc` (the
//! five transactions of clause 2 in the standard mix) and `tpcc-check`
//! (the consistency conditions of clause 3.3.2).
//!
//! Faithful to the specification where it matters for the numbers: the
//! schema, cardinalities and data rules, the transactions' profiles and
//! input rules (NURand with the run's constants, 1% of New-Orders rolled
//! back on an unused item, 1% remote order lines, 15% remote payments, 60%
//! of customer look-ups by last name), the mix and tpmC, and with
//! `--tpcc-wait` the keying and think times of clause 5.2.5 (off by
//! default, as in go-tpc and BenchBase). Not a compliant implementation:
//! no terminal emulation, no pricing or durability audit, so no result
//! from it is a TPC-C result. See the README's TPC-C section.
//!
//! Several clients drive disjoint warehouses of one database: each
//! terminal's home warehouse is in [`TpccSettings::homes`]
//! (`--warehouse-range`, or a client's share under `--clients`), its
//! remote warehouses anywhere in 1..W.
//!
//! Files: [`schema`] the DDL, [`load`] the data generation, [`txn`] the
//! transactions, [`terminals`] the terminals queued for the connections,
//! [`wait`] the keying and think times, [`check`] the consistency
//! conditions.

pub mod args;

use rand::RngExt;
use rand::rngs::SmallRng;
use tokio_postgres::Client;

use super::{
    BoxFuture, Check, DynOperation, Facts, FigureColumn, Metric, PauseWords, Role, Rule, Settings,
    Spec, TableSet, TypeFigures, Workload,
};
use crate::db::schema as db_schema;
use crate::db::sql::TableName;
use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::kit::check_only::CheckOnly;

pub mod check;
pub mod load;
pub mod schema;
pub mod terminals;
pub mod txn;
pub mod wait;

/// Items in `item` and stock rows per warehouse (clause 1.2.1).
pub const ITEMS: u32 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: u32 = 10;
/// Customers per district.
pub const CUSTOMERS: u32 = 3_000;
/// Orders per district at load time.
pub const ORDERS: u32 = 3_000;
/// The first order of a district still undelivered at load time (the
/// last 900 are in `new_order`).
pub const NEW_ORDERS_FROM: u32 = 2_101;
/// The constant C of NURand(255, ..) for c_last at load time (clause
/// 2.1.6). The specification draws it at random; a fixed one lets a run,
/// which may not know the load's seed, choose its own C within the
/// distance of clause 2.1.6.1.
pub const C_LOAD_LAST: u32 = 157;

/// NURand(A, x, y) with constant `c` (clause 2.1.6).
pub fn nurand(rng: &mut SmallRng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// Warehouses `first..=last` (1-based): `--warehouse-range`, or the
/// share of one client of several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarehouseRange {
    pub first: u32,
    pub last: u32,
}

impl WarehouseRange {
    /// Warehouses 1..=w.
    pub fn all(w: u32) -> Self {
        WarehouseRange {
            first: 1,
            last: w.max(1),
        }
    }

    /// Parses `START..END` (inclusive, 1-based, START <= END).
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        let form = "give START..END, e.g. 1..10 (inclusive, 1-based)";
        let (a, b) = s
            .trim()
            .split_once("..")
            .ok_or_else(|| format!("'{s}' is not a range: {form}"))?;
        let num = |x: &str| {
            x.trim()
                .trim_start_matches('=')
                .parse::<u32>()
                .map_err(|_| format!("'{}' is not a warehouse number: {form}", x.trim()))
        };
        let (first, last) = (num(a)?, num(b)?);
        if first == 0 {
            return Err(format!("warehouses count from 1, not 0: {form}"));
        }
        if first > last {
            return Err(format!(
                "{first}..{last} is empty: START must not be above END"
            ));
        }
        Ok(WarehouseRange { first, last })
    }

    /// How many warehouses.
    pub fn len(&self) -> u32 {
        self.last - self.first + 1
    }

    /// Never true: a range holds at least its first warehouse.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// As a Rust range, for iterating.
    pub fn ids(&self) -> std::ops::Range<u32> {
        self.first..self.last + 1
    }
}

impl std::fmt::Display for WarehouseRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

/// The warehouses a run or load works on, for a picture's title: `2
/// warehouses`, or `warehouses 1..5 of 10` under `--warehouse-range`.
fn warehouses_text(t: &TpccSettings) -> String {
    if t.homes == WarehouseRange::all(t.warehouses) {
        format!(
            "{} warehouse{}",
            t.warehouses,
            if t.warehouses == 1 { "" } else { "s" }
        )
    } else {
        format!("warehouses {} of {}", t.homes, t.warehouses)
    }
}

/// The TPC-C flags.
#[derive(Clone, Debug)]
pub struct TpccSettings {
    /// `--warehouses`: all the database's warehouses (remote order lines
    /// and payments go to any of them).
    pub warehouses: u32,
    /// `--tpcc-mix`, or the standard one.
    pub mix: txn::Mix,
    /// The terminals' home warehouses: `--warehouse-range`, or this
    /// client's share of 1..=W under `--clients`, or all of them.
    pub homes: WarehouseRange,
    /// `--warehouse-range` was given: `tpcc-load` empties and loads those
    /// warehouses alone (and `item` only when they start at 1).
    pub partial: bool,
    /// `--tpcc-wait`: keying and think times (clause 5.2.5).
    pub wait: bool,
    /// `--tpcc-wait-scale`: the keying and think times multiplied by it.
    pub wait_scale: f64,
    /// `--terminals`, if given (see [`TpccSettings::terminal_count`]).
    pub terminals: Option<u32>,
    /// `--all-warehouses`: each transaction's warehouse drawn from all
    /// the homes rather than the terminal's own.
    pub all_warehouses: bool,
    /// `--check-sample`: the consistency conditions on this many
    /// warehouses drawn at random, not on all.
    pub check_sample: Option<u32>,
    /// The run's `--seed`, the same on every client of several: the data
    /// of the load and the NURand constants depend on it alone (clause
    /// 2.1.6 wants one C for all terminals).
    pub seed: u64,
}

impl Default for TpccSettings {
    fn default() -> Self {
        TpccSettings {
            warehouses: 1,
            mix: txn::MIX,
            homes: WarehouseRange::all(1),
            partial: false,
            wait: false,
            wait_scale: 1.0,
            terminals: None,
            all_warehouses: false,
            check_sample: None,
            seed: 0,
        }
    }
}

impl TpccSettings {
    /// The run's terminals: `--terminals`, else ten per home warehouse
    /// with keying and think times (what reaches the 12.86 tpmC per
    /// warehouse of the reference), else one per connection (`threads`),
    /// each sending its next transaction as soon as the last one ends.
    pub fn terminal_count(&self, threads: usize) -> u32 {
        self.terminals.unwrap_or(if self.wait {
            self.homes.len().saturating_mul(10)
        } else {
            u32::try_from(threads.max(1)).unwrap_or(u32::MAX)
        })
    }
}

fn name(t: &str) -> TableName {
    TableName::new(t).unwrap_or_else(|_| unreachable!("a fixed, valid name"))
}

/// `-o tpcc-cleanup`.
pub static CLEANUP: Spec = crate::workload::kit::cleanup::spec(
    "tpcc-cleanup",
    "TPC-C: drop the nine tables, those ysql-bench created",
    |spec, s| crate::workload::kit::cleanup::build(spec, s, Some(&FAMILY), &[]),
);

/// The family's tables, as the clean-ups know them.
pub static FAMILY: crate::workload::kit::cleanup::Family = crate::workload::kit::cleanup::Family {
    name: "TPC-C",
    tables: &schema::TPCC_TABLES,
    more: None,
    routines: false,
};

/// `-o tpcc-load`.
pub static LOAD: Spec = Spec {
    name: "tpcc-load",
    aliases: &[],
    about: "TPC-C: create and load the nine tables for --warehouses W (clause 4.3)",
    role: Role::Load,
    paced: false,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: build_load,
};

fn build_load(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Load {
        spec,
        facts: Facts {
            description: describe_load(&s.family::<TpccSettings>()),
            batch_text: "one COPY per district and table (10000 rows of item or stock)".to_string(),
            ..Facts::new(spec, name("warehouse"))
        },
        settings: s.clone(),
        sent: Default::default(),
    }))
}

/// What a load of `t` fills: all the warehouses, or a range of them.
fn describe_load(t: &TpccSettings) -> String {
    if t.partial {
        format!(
            "warehouses {} of {} (--warehouse-range), {}",
            t.homes,
            t.warehouses,
            if t.homes.first == 1 {
                "and the item table"
            } else {
                "not the item table (the range that starts at 1 loads it)"
            }
        )
    } else {
        format!("{} warehouses", t.warehouses)
    }
}

struct Load {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    /// Bytes of COPY text the workers sent (see [`load::LoadOp`]).
    sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Workload for Load {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &schema::TPCC_TABLES
    }

    /// Empties what the load writes: every table, or with
    /// `--warehouse-range` the rows of those warehouses alone (and `item`
    /// when the range starts at 1), so that clients loading disjoint
    /// ranges of one database do not empty each other's rows.
    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let t = &*self.settings.family::<TpccSettings>();
            // A range is emptied by one DELETE per table: each must be
            // allowed before the first runs.
            let privileges: &[&str] = if t.partial {
                &["INSERT", "DELETE"]
            } else {
                &["INSERT"]
            };
            let tables: Vec<TableName> = schema::NAMES.iter().map(|t| name(t)).collect();
            db_schema::require_privileges(client, &tables, privileges, self.spec.name).await?;
            if t.partial {
                let (first, last) = (t.homes.first as i32, t.homes.last as i32);
                for (table, column) in schema::WAREHOUSE_COLUMNS {
                    unnamed::execute(
                        client,
                        &format!("delete from {table} where {column} between $1 and $2"),
                        &[&first, &last],
                    )
                    .await
                    .map_err(|e| {
                        Error::db(format!("cannot empty warehouses {} of {table}", t.homes), e)
                    })?;
                }
                if t.homes.first == 1 {
                    client
                        .batch_execute("truncate table item")
                        .await
                        .map_err(|e| Error::db("cannot empty the item table", e))?;
                }
            } else {
                client
                    .batch_execute(&format!("truncate table {}", schema::NAMES.join(", ")))
                    .await
                    .map_err(|e| Error::db("cannot empty the TPC-C tables", e))?;
            }
            for t in schema::NAMES {
                db_schema::mark_loading(client, &name(t)).await?;
            }
            Ok(())
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, _rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for t in schema::NAMES {
                client
                    .batch_execute(&format!("analyze {t}"))
                    .await
                    .map_err(|e| Error::db(format!("cannot analyze {t}"), e))?;
                let rows: i64 =
                    unnamed::query_one(client, &format!("select count(*) from {t}"), &[])
                        .await
                        .map_err(|e| Error::db(format!("cannot count {t}"), e))?
                        .get(0);
                db_schema::mark_loaded(client, &name(t), rows as u64).await?;
            }
            Ok(())
        })
    }

    fn scale(&self) -> Option<String> {
        let t = &*self.settings.family::<TpccSettings>();
        Some(warehouses_text(t))
    }

    fn load_rows(&self) -> Option<u64> {
        let seed = self.settings.family::<TpccSettings>().seed;
        Some(
            (0..self.settings.threads.max(1))
                .flat_map(|t| self.chunks(t))
                .map(|c| load::chunk_rows(c, seed))
                .sum(),
        )
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace('T', " ")
            .trim_end_matches('Z')
            .to_string();
        Box::new(load::LoadOp::new(
            self.chunks(thread),
            self.settings.family::<TpccSettings>().seed,
            now,
            self.sent.clone(),
        ))
    }

    /// The load's rate in MB/s of the COPY text it sent, beside the
    /// rows/s every load reports.
    fn metrics(&self, _types: &[TypeFigures], wallclock: std::time::Duration) -> Vec<Metric> {
        let bytes = self.sent.load(std::sync::atomic::Ordering::Relaxed);
        load_rate(bytes, wallclock)
    }
}

/// MB/s (10^6 bytes) of `bytes` of COPY text over `wallclock`.
fn load_rate(bytes: u64, wallclock: std::time::Duration) -> Vec<Metric> {
    let secs = wallclock.as_secs_f64();
    let mb = bytes as f64 / 1e6;
    let rate = if secs > 0.0 { mb / secs } else { 0.0 };
    vec![
        Metric::new(
            "mb_per_s",
            "MB/s",
            rate,
            format!("{rate:.1} (of the COPY text sent, {mb:.1} MB)"),
        )
        .merged_by(Rule::Sum),
        Metric::new(
            "copy_bytes",
            "COPY text",
            bytes as f64,
            format!("{bytes} bytes"),
        )
        .merged_by(Rule::Sum),
    ]
}

impl Load {
    /// What this client's worker `thread` loads: with `--warehouse-range`
    /// its share of the range, among this client's workers; otherwise its
    /// share of everything among all clients' workers (`--clients`), as
    /// one client with all their threads would deal it.
    fn chunks(&self, thread: usize) -> std::collections::VecDeque<load::Chunk> {
        let s = &self.settings;
        let t = &*s.family::<TpccSettings>();
        if t.partial {
            load::worker_chunks(t.homes, t.homes.first == 1, s.threads, thread)
        } else {
            load::worker_chunks(
                WarehouseRange::all(t.warehouses),
                true,
                s.client.all_threads(s.threads),
                s.client.global_thread(s.threads, thread),
            )
        }
    }
}

/// `-o tpcc`.
pub static RUN: Spec = Spec {
    name: "tpcc",
    aliases: &[],
    about: "TPC-C: New-Order, Payment, Order-Status, Delivery, Stock-Level 45/43/4/4/4; tpmC",
    role: Role::Query,
    paced: true,
    writes: true,
    drops: false,
    unit: "transaction",
    units: "transactions",
    build: build_run,
};

/// `-o tpcc-check`.
pub static CHECK: Spec = Spec {
    name: "tpcc-check",
    aliases: &[],
    about: "TPC-C: check the consistency conditions of clause 3.3.2",
    role: Role::Query,
    paced: false,
    writes: false,
    drops: false,
    unit: "check",
    units: "checks",
    build: build_check,
};

/// What the summary calls the New-Orders that found an unused item.
pub const MISSING_LABEL: &str = "rolled back by rule";

/// The reference throughput per warehouse at the specification's keying
/// and think times (clause 5.4.1 bounds tpmC by 12.86 × W).
pub const MAX_TPMC_PER_WAREHOUSE: f64 = 12.86;

fn build_run(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    let t = s.family::<TpccSettings>();
    let constants = txn::Constants::for_run(t.seed, C_LOAD_LAST);
    let count = t.terminal_count(s.threads);
    let homes = txn::Homes {
        homes: t.homes,
        warehouses: t.warehouses,
    };
    let waits = t.wait.then_some(terminals::Waits {
        scale: t.wait_scale,
    });
    let begin = match s.isolation {
        Some(i) => format!("begin isolation level {}", i.sql()),
        None => "begin".to_string(),
    };
    let shared = txn::Shared {
        terminals: std::sync::Arc::new(terminals::Terminals::new(
            count, s.seed, homes, t.mix, waits,
        )),
        warehouses: t.warehouses,
        k: constants,
        spread: t.all_warehouses.then_some(t.homes),
        begin,
    };
    Ok(Box::new(Run {
        spec,
        facts: Facts {
            types: txn::TYPES.to_vec(),
            description: describe_run(&t, count, s.threads, constants),
            // A transaction is retried until it goes through, as the TPC-C
            // drivers people use do; a retry is counted, never a New-Order
            // twice.
            default_max_tries: 0,
            // A New-Order that meets its unused item rolls back by rule
            // (clause 2.4.2.3): not an error, and no row of the tables is
            // missing.
            missing_label: MISSING_LABEL,
            // Without keying and think times a worker still waits when
            // no terminal is free (fewer terminals than workers).
            pauses: Some(if t.wait {
                pause_words()
            } else {
                PauseWords {
                    what: "a free terminal".to_string(),
                    flag: "--terminals".to_string(),
                }
            }),
            terminals: Some(u64::from(count)),
            reads_after_run: true,
            ..Facts::new(spec, name("warehouse"))
        },
        settings: s.clone(),
        shared,
        server: Default::default(),
    }))
}

/// A run: its scale, terminals, mix, waits and NURand constants.
fn describe_run(t: &TpccSettings, terminals: u32, threads: usize, k: txn::Constants) -> String {
    let homes = if t.homes == WarehouseRange::all(t.warehouses) {
        String::new()
    } else {
        format!(" (terminals on warehouses {})", t.homes)
    };
    let spread = if t.all_warehouses {
        ", each transaction on any of them (--all-warehouses)"
    } else {
        ""
    };
    let waits = match (t.wait, t.wait_scale) {
        (false, _) => "no keying/think times".to_string(),
        (true, 1.0) => "keying and think times of clause 5.2.5 (--tpcc-wait)".to_string(),
        (true, f) => format!(
            "keying and think times of clause 5.2.5 (--tpcc-wait) × {f} (--tpcc-wait-scale: not the specification's)"
        ),
    };
    format!(
        "TPC-C, {} warehouses{homes}, {terminals} terminals over {threads} connections{spread}, mix {}{}, {waits}, NURand C {}/{}/{}",
        t.warehouses,
        t.mix,
        if t.mix == txn::MIX {
            " (standard)"
        } else {
            " (not the standard mix)"
        },
        k.c_last,
        k.c_id,
        k.ol_i_id
    )
}

struct Run {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    /// The terminals and what the drivers share.
    shared: txn::Shared,
    /// What was read of the server around the run.
    server: std::sync::Mutex<ServerReadings>,
}

/// What a run reads of the server: the committed New-Orders of its home
/// warehouses before and after (the rise of sum(d_next_o_id)), and the
/// isolation level its transactions ran at.
#[derive(Default)]
struct ServerReadings {
    next_o_id_before: Option<i64>,
    next_o_id_after: Option<i64>,
    /// `default_transaction_isolation`, read in the set-up.
    isolation: Option<String>,
}

/// The sum of `d_next_o_id` over the districts of warehouses `homes`:
/// each committed New-Order raises it by one.
async fn next_o_id_sum(client: &Client, homes: WarehouseRange) -> Result<i64> {
    let row = unnamed::query_one(
        client,
        "select coalesce(sum(d_next_o_id), 0)::int8 from district where d_w_id between $1 and $2",
        &[&(homes.first as i32), &(homes.last as i32)],
    )
    .await
    .map_err(|e| Error::db("cannot read sum(d_next_o_id) of the districts", e))?;
    Ok(row.get(0))
}

impl Workload for Run {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &schema::TPCC_TABLES
    }

    /// Refuses to start on fewer warehouses or items than the run needs:
    /// every transaction of a terminal without its warehouse would fail,
    /// and a missing item would pass for the 1% rollback. Reads the
    /// server's count of New-Orders and its isolation level.
    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let t = self.settings.family::<TpccSettings>();
            let row = unnamed::query_one(
                client,
                "select (select count(*) from warehouse where w_id between 1 and $1), \
                 (select count(*) from item), current_setting('default_transaction_isolation')",
                &[&(t.warehouses as i32)],
            )
            .await
            .map_err(|e| Error::db("cannot count the warehouses and items", e))?;
            let (w, items): (i64, i64) = (row.get(0), row.get(1));
            let want = i64::from(t.warehouses);
            let short = if w < want {
                Some(format!("{w} of warehouses 1..{want}"))
            } else if items != i64::from(ITEMS) {
                Some(format!("{items} items, not {ITEMS}"))
            } else {
                None
            };
            if let Some(short) = short {
                return Err(Error::usage(format!(
                    "the TPC-C tables hold {short}: run -o tpcc-load --warehouses {want} first"
                )));
            }
            let before = next_o_id_sum(client, t.homes).await?;
            if let Ok(mut r) = self.server.lock() {
                r.isolation = Some(row.get(2));
                r.next_o_id_before = Some(before);
            }
            Ok(())
        })
    }

    /// The server's count of New-Orders after the run, against the
    /// terminals' own.
    fn after_run<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let homes = self.settings.family::<TpccSettings>().homes;
            let after = next_o_id_sum(client, homes).await?;
            if let Ok(mut r) = self.server.lock() {
                r.next_o_id_after = Some(after);
            }
            Ok(())
        })
    }

    fn checks<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Vec<Check>>> {
        let t = self.settings.family::<TpccSettings>();
        Box::pin(check::run_checks(client, t.check_sample, t.seed))
    }

    fn metrics(&self, types: &[TypeFigures], wallclock: std::time::Duration) -> Vec<Metric> {
        let t = &*self.settings.family::<TpccSettings>();
        let mut out = tpmc_metrics(types, wallclock, t.homes.len(), t.wait);
        if t.wait {
            scaled_waits_note(&mut out, t.wait_scale);
        }
        let counted = self
            .shared
            .terminals
            .committed_new_orders
            .load(std::sync::atomic::Ordering::Relaxed);
        if let Ok(r) = self.server.lock() {
            if let (Some(a), Some(b)) = (r.next_o_id_after, r.next_o_id_before) {
                out.extend(server_count(a - b, counted, t.homes));
            }
            let isolation = match (self.settings.isolation, &r.isolation) {
                (Some(i), _) => Some((i.sql().to_string(), "--isolation")),
                (None, Some(server)) => {
                    Some((server.clone(), "the server's default_transaction_isolation"))
                }
                (None, None) => None,
            };
            if let Some((level, whence)) = isolation {
                out.push(isolation_metric(&level, whence));
            }
        }
        out
    }

    fn interval_metrics(&self) -> Option<super::IntervalMetrics> {
        let warehouses = self.settings.family::<TpccSettings>().homes.len();
        Some(std::sync::Arc::new(move |types| {
            interval_tpmc(types, warehouses)
        }))
    }

    fn scale(&self) -> Option<String> {
        Some(warehouses_text(&self.settings.family::<TpccSettings>()))
    }

    fn worker(&self, _thread: usize) -> Box<dyn DynOperation> {
        Box::new(txn::Driver::new(self.shared.clone()).protocol(self.settings.protocol))
    }
}

/// The server's count of committed New-Orders over the operation (the
/// rise of sum(d_next_o_id) over the home warehouses, from the set-up to
/// after the last transaction, the warmup included) beside the
/// terminals' count over the same span: they agree unless a commit's
/// answer was lost, or another client drove the same warehouses.
fn server_count(server: i64, counted: u64, homes: WarehouseRange) -> Vec<Metric> {
    let server = server.max(0) as u64;
    let gap = server.abs_diff(counted);
    let share = if server > 0 {
        gap as f64 / server as f64
    } else if counted > 0 {
        1.0
    } else {
        0.0
    };
    let verdict = if share <= 0.01 {
        format!("agree (within {:.2}%)", share * 100.0)
    } else {
        format!(
            "DIFFER by {:.1}% (another client on the same warehouses, or commits whose answer was lost?)",
            share * 100.0
        )
    };
    vec![
        Metric::new(
            "server_new_orders",
            "new-orders (server)",
            server as f64,
            format!(
                "{server} committed by the server's count (sum(d_next_o_id) of warehouses {homes} rose by {server} over the operation, warmup included); the terminals committed {counted}: {verdict}"
            ),
        )
        .merged_by(Rule::Sum),
        Metric::new(
            "terminal_new_orders",
            "new-orders (terminals)",
            counted as f64,
            format!("{counted} committed, by the terminals' count over the same span"),
        )
        .merged_by(Rule::Sum),
    ]
}

/// With `--tpcc-wait-scale F` other than 1, efficiency's text says what
/// ten terminals per warehouse give at those waits (about 100% / F), in
/// place of the 100% the specification's waits allow.
fn scaled_waits_note(out: &mut [Metric], scale: f64) {
    if scale == 1.0 {
        return;
    }
    let warehouses = out
        .iter()
        .find(|m| m.key == "warehouses")
        .map_or(0.0, |m| m.value);
    if let Some(e) = out.iter_mut().find(|m| m.key == "efficiency") {
        e.text = format!(
            "{:.1}% of {MAX_TPMC_PER_WAREHOUSE} tpmC × {warehouses} warehouses (keying and think times × {scale}, --tpcc-wait-scale: 10 terminals per warehouse give at most about {:.0}%, not the specification's 100%)",
            e.value * 100.0,
            100.0 / scale
        );
    }
}

/// The isolation level the transactions ran at (`whence`: who set it),
/// as words and as a number in JSON: 1 read uncommitted, 2 read
/// committed, 3 repeatable read, 4 serializable, 0 another.
fn isolation_metric(level: &str, whence: &str) -> Metric {
    let level = level.trim().to_lowercase();
    let code = match level.as_str() {
        "read uncommitted" => 1.0,
        "read committed" => 2.0,
        "repeatable read" => 3.0,
        "serializable" => 4.0,
        _ => 0.0,
    };
    Metric::new(
        "isolation",
        "isolation",
        code,
        format!(
            "{level} ({whence}; JSON: 1 read uncommitted, 2 read committed, 3 repeatable read, 4 serializable)"
        ),
    )
}

/// The 90th percentile response time limits of clause 5.2.5.3, per type
/// in the order of [`txn::TYPES`] (Delivery: the 80 s of its deferred
/// part, clause 2.7.2.2, which this tool runs as the whole transaction).
pub const P90_LIMITS_S: [u64; 5] = [5, 5, 5, 80, 20];

/// tpmC, efficiency against 12.86 tpmC per warehouse the terminals drive
/// (their home warehouses), the rollbacks by rule, and whether each type
/// kept its 90th percentile limit. `wait`: the terminals kept keying and
/// think times.
///
/// tpmC counts every completed New-Order, the 1% rolled back on an
/// unused item included, per minute of the measured wallclock: clause
/// 5.4.2 computes the throughput from the completed New-Order
/// transactions, and a New-Order rolled back by clause 2.4.2.3 is one (it
/// runs the whole profile, then rolls back as the clause requires), as
/// yugabyte/tpcc counts it (its pull request 107). HammerDB's NOPM counts
/// the committed ones alone; the summary gives both.
pub fn tpmc_metrics(
    types: &[TypeFigures],
    wallclock: std::time::Duration,
    warehouses: u32,
    wait: bool,
) -> Vec<Metric> {
    let no = types.get(txn::NEW_ORDER).copied().unwrap_or_default();
    let (units, rollbacks) = (no.units, no.missing);
    let committed = units.saturating_sub(rollbacks);
    let minutes = wallclock.as_secs_f64() / 60.0;
    let per_minute = |n: u64| {
        if minutes > 0.0 {
            n as f64 / minutes
        } else {
            0.0
        }
    };
    let tpmc = per_minute(units);
    let efficiency = tpmc / (MAX_TPMC_PER_WAREHOUSE * f64::from(warehouses.max(1)));
    // The rules travel with the figures, so that a merge of several
    // clients' reports makes them again without knowing TPC-C.
    let mut out = vec![
        Metric::new(
            "tpmc",
            "tpmC",
            tpmc,
            format!(
                "{tpmc:.1} (all {units} New-Orders completed, the {rollbacks} rolled back by rule \
                 included, as clause 5.4.2 counts them; committed alone {:.1} a minute)",
                per_minute(committed)
            ),
        )
        .merged_by(Rule::Sum)
        .per_interval_by(Rule::PerMinute {
            of_type: txn::TYPES[txn::NEW_ORDER].to_string(),
        })
        .titled(tpmc_title(tpmc)),
        Metric::new(
            "efficiency",
            "efficiency",
            efficiency,
            format!(
                "{:.1}% of {MAX_TPMC_PER_WAREHOUSE} tpmC × {warehouses} warehouses ({})",
                efficiency * 100.0,
                if wait {
                    "keying and think times on: 10 terminals per warehouse give at most about 100%"
                } else {
                    "over 100% without keying and think times"
                }
            ),
        )
        .merged_by(efficiency_rule())
        .per_interval_by(efficiency_rule())
        .titled(efficiency_title(efficiency)),
        // What efficiency is over, so that a merge of several clients'
        // reports can recompute it over all their warehouses.
        Metric::new(
            "warehouses",
            "warehouses driven",
            f64::from(warehouses),
            format!("{warehouses} (the terminals' home warehouses)"),
        )
        .merged_by(Rule::Sum),
        Metric::new(
            "new_order_rollbacks",
            "new-orders rolled back by rule (1%)",
            rollbacks as f64,
            rollbacks.to_string(),
        )
        .merged_by(Rule::Sum),
    ];
    let mut missed = Vec::new();
    let mut parts = Vec::new();
    for ((ty, f), limit) in txn::TYPES.iter().zip(types).zip(P90_LIMITS_S) {
        if f.units == 0 {
            continue;
        }
        let ok = f.p90 <= std::time::Duration::from_secs(limit);
        if !ok {
            missed.push(*ty);
        }
        parts.push(format!(
            "{ty} {:.1} ms {} {limit} s",
            f.p90.as_secs_f64() * 1000.0,
            if ok { "<=" } else { "> MISSED" }
        ));
    }
    out.push(
        Metric::new(
            "p90_limits_met",
            "90th percentile limits",
            if missed.is_empty() { 1.0 } else { 0.0 },
            format!(
                "{} (clause 5.2.5.3): {}",
                if missed.is_empty() { "met" } else { "missed" },
                parts.join(", ")
            ),
        )
        .merged_by(Rule::LatencyLimits {
            quantile: 0.90,
            limits_s: txn::TYPES
                .iter()
                .zip(P90_LIMITS_S)
                .map(|(ty, limit)| (ty.to_string(), limit as f64))
                .collect(),
        }),
    );
    let nopm = per_minute(committed);
    out.push(
        Metric::new(
            "nopm",
            "NOPM",
            nopm,
            format!(
                "{nopm:.1} (the committed New-Orders a minute, HammerDB's figure; tpmC also counts the {rollbacks} rolled back by rule)"
            ),
        )
        .merged_by(Rule::Sum),
    );
    out
}

/// How the report names a terminal's pauses (`--tpcc-wait`).
pub fn pause_words() -> PauseWords {
    PauseWords {
        what: "the keying and think times".to_string(),
        flag: "--tpcc-wait".to_string(),
    }
}

/// tpmC as the throughput picture's title gives it: whole above 1000.
pub fn tpmc_title(tpmc: f64) -> String {
    if tpmc >= 1000.0 {
        format!("tpmC {tpmc:.0}")
    } else {
        format!("tpmC {tpmc:.1}")
    }
}

/// Efficiency (a fraction, 1.0 = 100%) as the throughput picture's title
/// gives it: a percentage up to 10 times the maximum, beyond that a
/// multiple of it. The maximum is 12.86 tpmC per warehouse, the most the
/// specification's keying and think times allow; without them a terminal
/// runs flat out and the share is hundreds of times that, which reads
/// better as a multiple than as `23158.3%`.
pub fn efficiency_title(eff: f64) -> String {
    if eff < 10.0 {
        format!("efficiency {:.1}%", eff * 100.0)
    } else {
        format!("{eff:.0}× the specification's maximum (no keying and think times)")
    }
}

/// The figures tpcc-load and tpcc put on their record, with the rules by
/// which a merge makes them again (their values 0): for a report written
/// before the record kept the rules.
pub fn figure_rules() -> Vec<Metric> {
    let mut all = tpmc_metrics(&[], std::time::Duration::ZERO, 1, false);
    all.extend(load_rate(0, std::time::Duration::ZERO));
    all
}

/// The figures of tpcc-load or tpcc (`operation`) with their summary's
/// text, made again from what a report written before the record kept
/// the text (0.2.0) holds: the types' counts and histograms, the
/// wallclock, the figures by key (the warehouses driven, the COPY text's
/// bytes), and the run's description, which says whether the terminals
/// kept keying and think times. Their values are the caller's to keep.
pub fn figures_again(
    operation: &str,
    description: &str,
    types: &[TypeFigures],
    wallclock: std::time::Duration,
    stored: &std::collections::BTreeMap<String, f64>,
) -> Vec<Metric> {
    let whole = |key: &str| stored.get(key).map(|v| v.max(0.0).round());
    if operation == RUN.name {
        let Some(warehouses) = whole("warehouses") else {
            return Vec::new();
        };
        let wait = !description.contains("no keying/think times");
        tpmc_metrics(
            types,
            wallclock,
            warehouses.min(f64::from(u32::MAX)) as u32,
            wait,
        )
    } else if operation == LOAD.name {
        match whole("copy_bytes") {
            Some(bytes) => load_rate(bytes as u64, wallclock),
            None => Vec::new(),
        }
    } else {
        Vec::new()
    }
}

/// Efficiency as a merge makes it again: tpmC over the reference
/// throughput of all the clients' warehouses.
fn efficiency_rule() -> Rule {
    Rule::Ratio {
        of: "tpmc".to_string(),
        reference: MAX_TPMC_PER_WAREHOUSE,
        times: "warehouses".to_string(),
    }
}

/// The figures [`interval_tpmc`] keeps per interval, as columns of the
/// interval CSV: tpmC to a tenth, efficiency (a fraction) to four places.
pub const INTERVAL_COLUMNS: [FigureColumn; 2] = [
    FigureColumn {
        key: "tpmc",
        decimals: 1,
    },
    FigureColumn {
        key: "efficiency",
        decimals: 4,
    },
];

/// tpmC and efficiency over one interval: its completed New-Orders (the
/// rolled back by rule included, as [`tpmc_metrics`] counts them) per
/// minute.
pub fn interval_tpmc(types: &[crate::stats::IntervalFigures], warehouses: u32) -> Vec<Metric> {
    let (completed, seconds) = types
        .get(txn::NEW_ORDER)
        .map(|f| (f.ops, f.seconds))
        .unwrap_or_default();
    let tpmc = if seconds > 0.0 {
        completed as f64 * 60.0 / seconds
    } else {
        0.0
    };
    let efficiency = tpmc / (MAX_TPMC_PER_WAREHOUSE * f64::from(warehouses.max(1)));
    vec![
        Metric::new("tpmc", "tpmC", tpmc, format!("tpmC {tpmc:.1}")),
        Metric::new(
            "efficiency",
            "efficiency",
            efficiency,
            format!("efficiency {:.1}%", efficiency * 100.0),
        ),
    ]
}

fn build_check(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    let t = s.family::<TpccSettings>();
    let (sample, seed) = (t.check_sample, t.seed);
    Ok(Box::new(CheckOnly::new(
        spec,
        &schema::TPCC_TABLES,
        name("warehouse"),
        move |client| Box::pin(check::run_checks(client, sample, seed)),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_reads_as_a_percentage_or_a_multiple() {
        assert_eq!(efficiency_title(0.962), "efficiency 96.2%");
        assert_eq!(efficiency_title(3.5), "efficiency 350.0%");
        let big = efficiency_title(2193.713);
        assert!(
            big.starts_with("2194× the specification's maximum"),
            "{big}"
        );
        assert!(!big.contains('%'), "{big}");
        assert_eq!(tpmc_title(56420.4), "tpmC 56420");
        assert_eq!(tpmc_title(24.74), "tpmC 24.7");
    }

    #[test]
    fn scaled_waits_say_what_efficiency_ten_terminals_reach() {
        let types = [TypeFigures {
            units: 2474,
            ..Default::default()
        }];
        let mut m = tpmc_metrics(&types, std::time::Duration::from_secs(6000), 2, true);
        scaled_waits_note(&mut m, 1.0);
        assert!(
            m[1].text.contains("give at most about 100%"),
            "{}",
            m[1].text
        );
        scaled_waits_note(&mut m, 0.2);
        assert_eq!(
            m[1].text,
            "96.2% of 12.86 tpmC × 2 warehouses (keying and think times × 0.2, --tpcc-wait-scale: 10 terminals per warehouse give at most about 500%, not the specification's 100%)"
        );
    }

    #[test]
    fn the_picture_title_has_tpmc_then_efficiency_and_nothing_else() {
        let types = [TypeFigures {
            units: 2474,
            ..Default::default()
        }];
        let m = tpmc_metrics(&types, std::time::Duration::from_secs(6000), 2, true);
        let titles: Vec<&str> = m.iter().filter_map(|m| m.title.as_deref()).collect();
        assert_eq!(titles, ["tpmC 24.7", "efficiency 96.2%"]);
    }

    #[test]
    fn the_load_rate_is_in_megabytes_of_copy_text_a_second() {
        let m = load_rate(50_000_000, std::time::Duration::from_secs(10));
        assert_eq!(m[0].key, "mb_per_s");
        assert!((m[0].value - 5.0).abs() < 1e-9);
        assert_eq!(m[0].text, "5.0 (of the COPY text sent, 50.0 MB)");
        assert_eq!(m[1].value, 5e7);
        assert_eq!(load_rate(1, std::time::Duration::ZERO)[0].value, 0.0);
    }

    #[test]
    fn tpmc_counts_completed_new_orders_per_minute() {
        let f = |units, missing, ms| TypeFigures {
            units,
            missing,
            p90: std::time::Duration::from_millis(ms),
        };
        let m = tpmc_metrics(
            &[
                f(1000, 10, 20),
                f(900, 0, 10),
                f(40, 0, 5),
                f(40, 0, 30),
                f(40, 0, 5),
            ],
            std::time::Duration::from_secs(30),
            2,
            false,
        );
        assert_eq!(m[0].key, "tpmc");
        // Clause 5.4.2: the 10 rolled back are completed New-Orders too.
        assert!((m[0].value - 2000.0).abs() < 1e-9);
        assert!(
            m[0].text.contains("committed alone 1980.0"),
            "{}",
            m[0].text
        );
        assert!((m[1].value - 2000.0 / 25.72).abs() < 1e-9);
        assert_eq!(m[2].key, "warehouses");
        assert_eq!(m[2].value, 2.0);
        assert_eq!(m[3].value, 10.0);
        assert_eq!(m[4].key, "p90_limits_met");
        assert_eq!(m[4].value, 1.0);
        assert!(m[4].text.starts_with("met"), "{}", m[4].text);
        let slow = tpmc_metrics(
            &[f(10, 0, 6000), f(10, 0, 10)],
            std::time::Duration::from_secs(30),
            1,
            true,
        );
        assert!(
            m[1].text.contains("over 100% without keying"),
            "{}",
            m[1].text
        );
        assert!(
            slow[1].text.contains("keying and think times on"),
            "{}",
            slow[1].text
        );
        assert_eq!(slow[4].value, 0.0);
        assert!(
            slow[4].text.contains("new-order 6000.0 ms > MISSED 5 s"),
            "{}",
            slow[3].text
        );
    }
}
