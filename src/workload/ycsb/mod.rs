//! YCSB's core workloads: `ycsb-load` and the mixes `ycsb-a` … `ycsb-f`.
//!
//! This module is the example of the workload seam: everything YCSB is
//! here (its table, its loader, its mixes and their defaults), plugged in
//! by seven lines of [`crate::workload::REGISTRY`].
//!
//! The data follows YCSB's core workload: table `usertable` with
//! `ycsb_key varchar(255) primary key` and `field0..field9 text` of 100
//! characters; record `n`'s key is `"user"` and the decimal FNV-1a hash of
//! `n` (so keys are not in record order), and `-r` records `0..N-1` are
//! loaded exactly, split over the threads, by COPY in batches of `-b`.
//!
//! A mix draws, per unit, one transaction type with the mix's
//! proportions, and a record with the key distribution (scrambled zipfian
//! by default, `latest` for D, both of θ = 0.99 or `--zipf-theta`): read (every field of one record),
//! update (one random field, or all with `--ycsb-write-all-fields`),
//! insert (a new record), scan (`ycsb_key >= $1 order by ycsb_key limit
//! $2`, length uniform in 1..=100) and read-modify-write (a read and an
//! update of the same record, timed as one unit, in one transaction with
//! `--ycsb-rmw-txn`). Inserts take record numbers after those in the table
//! (counted at set-up, then probed until a free key), from one counter
//! shared by the workers, so that no two workers and no rerun insert the
//! same key.

pub mod args;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

use crate::db::dialect::Flavor;
use crate::db::schema::{self, TableDef};
use crate::db::sql::{TableName, quote_literal};
use crate::db::unnamed;
use crate::db::wire::{Answer, Param};
use crate::error::{Error, Result};
use crate::workload::kit::copy_load::{CopyLoad, Lines};
use crate::workload::kit::keys::{KeyDistribution, KeyPicker, fnv1a_64};
use crate::workload::kit::rowgen::fill_alphanumeric;
use crate::workload::kit::simple_query::command_rows;
use crate::workload::{
    BoxFuture, DynOperation, Operation, Outcome, Role, Settings, Spec, TableSet, Tables,
    WireStatement, WireUnit, Workload, worker_seed,
};

/// The table's default name, as in YCSB.
pub const DEFAULT_TABLE: &str = "usertable";
/// The longest scan, as YCSB's `maxscanlength`.
pub const MAX_SCAN: i64 = 100;
/// YCSB's default zipfian constant, every zipfian's default.
pub use crate::workload::kit::keys::ZIPF_THETA;

/// The YCSB flags.
#[derive(Clone, Debug)]
pub struct YcsbSettings {
    pub field_count: usize,
    pub field_length: usize,
    pub write_all_fields: bool,
    pub rmw_txn: bool,
    /// `--ycsb-proportions`: replaces the mix's own.
    pub proportions: Option<Mix>,
}

impl Default for YcsbSettings {
    fn default() -> Self {
        YcsbSettings {
            field_count: 10,
            field_length: 100,
            write_all_fields: false,
            rmw_txn: false,
            proportions: None,
        }
    }
}

/// The transaction types, in the order reports show them.
pub const TYPES: [&str; 5] = ["read", "update", "insert", "scan", "read-modify-write"];

/// Proportions of the five types, in the order of [`TYPES`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix(pub [f64; 5]);

impl Mix {
    /// Parses `read=0.9,update=0.1`: types not named get 0.
    pub fn parse(text: &str) -> std::result::Result<Mix, String> {
        let mut p = [0.0; 5];
        for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                format!("'{part}' is not TYPE=SHARE: write e.g. read=0.9,update=0.1")
            })?;
            let name = name.trim();
            let i = TYPES.iter().position(|t| *t == name).ok_or_else(|| {
                format!("'{name}' is not a YCSB operation: use {}", TYPES.join(", "))
            })?;
            let v: f64 = value.trim().parse().map_err(|_| {
                format!("'{value}' is not a share: write a number such as 0.5 for {name}")
            })?;
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{name}={value}: a share is a number of 0 or more"));
            }
            p[i] += v;
        }
        if p.iter().sum::<f64>() <= 0.0 {
            return Err("the shares add up to 0: give at least one positive, e.g. read=1".into());
        }
        Ok(Mix(p))
    }

    fn total(&self) -> f64 {
        self.0.iter().sum()
    }
}

/// What a mix of `-o` is, before the flags change it.
struct MixDef {
    mix: [f64; 5],
    keys: KeyDistribution,
}

const fn mix_spec(name: &'static str, about: &'static str, writes: bool) -> Spec {
    Spec {
        name,
        aliases: &[],
        about,
        role: Role::Query,
        paced: true,
        writes,
        drops: false,
        unit: "op",
        units: "ops",
        build: build_mix,
    }
}

/// `-o ycsb-load`.
pub static LOAD: Spec = Spec {
    name: "ycsb-load",
    aliases: &[],
    about: "YCSB: load usertable with -r records by COPY",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: build_load,
};
pub static A: Spec = mix_spec("ycsb-a", "YCSB A: read/update 50/50, zipfian", true);
pub static B: Spec = mix_spec("ycsb-b", "YCSB B: read/update 95/5, zipfian", true);
pub static C: Spec = mix_spec("ycsb-c", "YCSB C: read only, zipfian", false);
pub static D: Spec = mix_spec("ycsb-d", "YCSB D: read/insert 95/5, latest", true);
pub static E: Spec = mix_spec("ycsb-e", "YCSB E: scan/insert 95/5, zipfian", true);
pub static F: Spec = mix_spec(
    "ycsb-f",
    "YCSB F: read/read-modify-write 50/50, zipfian",
    true,
);

/// Mix `name` as YCSB defines it, its zipfian (or `latest`) of exponent
/// `theta`.
fn mix_def(name: &str, theta: f64) -> MixDef {
    let zipf = KeyDistribution::Zipfian { theta };
    let (mix, keys) = match name {
        "ycsb-a" => ([0.5, 0.5, 0.0, 0.0, 0.0], zipf),
        "ycsb-b" => ([0.95, 0.05, 0.0, 0.0, 0.0], zipf),
        "ycsb-c" => ([1.0, 0.0, 0.0, 0.0, 0.0], zipf),
        "ycsb-d" => (
            [0.95, 0.0, 0.05, 0.0, 0.0],
            KeyDistribution::Latest { theta },
        ),
        "ycsb-e" => ([0.0, 0.0, 0.05, 0.95, 0.0], zipf),
        _ => ([0.5, 0.0, 0.0, 0.0, 0.5], zipf),
    };
    MixDef { mix, keys }
}

/// Mix `name` as the flags make it: `--key-distribution` replaces its
/// keys; else its own zipfian or `latest` takes `--zipf-theta` when given,
/// as YCSB's `zipfian_constant` changes every mix.
fn mix_of(name: &str, s: &Settings) -> MixDef {
    let def = mix_def(name, s.zipf_theta.unwrap_or(ZIPF_THETA));
    MixDef {
        mix: s
            .family::<YcsbSettings>()
            .proportions
            .map_or(def.mix, |m| m.0),
        keys: s.keys.unwrap_or(def.keys),
    }
}

/// The key of record `n`, as YCSB names it.
pub fn key_of(n: u64) -> String {
    format!("user{}", fnv1a_64(n))
}

fn table_name(s: &Settings) -> Result<TableName> {
    TableName::new(s.table_name.as_deref().unwrap_or(DEFAULT_TABLE))
}

fn check_shape(s: &Settings) -> Result<()> {
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

/// `-o ycsb-cleanup`.
pub static CLEANUP: Spec = crate::workload::cleanup::spec(
    "ycsb-cleanup",
    "YCSB: drop usertable (or --table-name) if ysql-bench created it",
    |spec, s| crate::workload::cleanup::build(spec, s, Some(&crate::workload::cleanup::YCSB)),
);

/// usertable, YCSB's one table.
pub static USERTABLE: Tables = Tables {
    key: DEFAULT_TABLE,
    loader: "ycsb-load",
    defs: |s, flavor| {
        let name = table_name(s)?;
        let mut columns = vec![("ycsb_key".to_string(), "character varying(255)".to_string())];
        columns.extend(
            (0..s.family::<YcsbSettings>().field_count)
                .map(|i| (format!("field{i}"), "text".to_string())),
        );
        Ok(vec![TableDef {
            ddl: create_sql(
                flavor,
                &name,
                s.family::<YcsbSettings>().field_count,
                s.tablets,
            ),
            name,
            columns,
            shape: "ycsb_key varchar(255), field0..fieldN text",
        }])
    },
    left_empty: &[],
    load_flags: crate::workload::rows_flag,
};

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
fn field_list(count: usize) -> String {
    (0..count)
        .map(|i| format!("field{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------- load

fn build_load(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_shape(s)?;
    let row_bytes =
        s.family::<YcsbSettings>().field_count * (s.family::<YcsbSettings>().field_length + 1) + 32;
    if s.batch_size.saturating_mul(row_bytes) > crate::workload::kit::limits::MAX_BATCH_BYTES {
        return Err(Error::usage(format!(
            "--batch-size {} of YCSB records of {row_bytes} bytes makes batches over {} MiB: use a smaller -b",
            s.batch_size,
            crate::workload::kit::limits::MAX_BATCH_BYTES >> 20
        )));
    }
    Ok(Box::new(Load {
        spec,
        table: table_name(s)?,
        settings: s.clone(),
    }))
}

struct Load {
    spec: &'static Spec,
    table: TableName,
    settings: Settings,
}

impl Workload for Load {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn tables(&self) -> &'static dyn TableSet {
        &USERTABLE
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let table = std::slice::from_ref(&self.table);
            schema::require_privileges(client, table, &["INSERT"], self.spec.name).await?;
            schema::truncate(client, &self.table).await?;
            schema::mark_loading(client, &self.table).await
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(schema::mark_loaded(client, &self.table, rows))
    }

    fn batch_text(&self) -> String {
        format!("{} records per COPY", self.settings.batch_size)
    }

    fn histogram_note(&self) -> String {
        format!("batch ({} records)", self.settings.batch_size)
    }

    fn table(&self) -> &TableName {
        &self.table
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        Box::new(CopyLoad::new(
            format!(
                "copy {} (ycsb_key, {}) from stdin",
                self.table.quoted(),
                field_list(s.family::<YcsbSettings>().field_count)
            ),
            s.share(s.rows, thread),
            s.batch_size,
            Records {
                seed: s.seed,
                fields: s.family::<YcsbSettings>().field_count,
                field_len: s.family::<YcsbSettings>().field_length,
            },
            s.prepared,
        ))
    }
}

/// usertable's records, as COPY lines.
struct Records {
    seed: u64,
    fields: usize,
    field_len: usize,
}

impl Lines for Records {
    fn line(&self, n: u64, out: &mut Vec<u8>) {
        record_line(self.seed, n, self.fields, self.field_len, out);
    }

    fn line_bytes(&self) -> usize {
        self.fields * (self.field_len + 1) + 24
    }

    fn what(&self) -> &'static str {
        "records"
    }
}

/// Appends record `n` as a COPY text line; its fields are a pure function
/// of (seed, n), so a seeded load is the same whatever the threads.
fn record_line(seed: u64, n: u64, fields: usize, field_len: usize, out: &mut Vec<u8>) {
    let mut rng = SmallRng::seed_from_u64(worker_seed(seed, n as usize, 7));
    out.extend_from_slice(key_of(n).as_bytes());
    for _ in 0..fields {
        out.push(b'\t');
        fill_alphanumeric(&mut rng, out, field_len);
    }
    out.push(b'\n');
}

// ---------------------------------------------------------------- mixes

fn build_mix(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_shape(s)?;
    if s.rows == 0 {
        return Err(Error::usage(format!(
            "--rows 0 leaves {spec} no record to read: give the records loaded by ycsb-load, e.g. -r 100000"
        )));
    }
    let MixDef { mix, keys } = mix_of(spec.name, s);
    // The types that can happen, in TYPES order; a unit's type indexes it.
    let active: Vec<usize> = (0..TYPES.len()).filter(|&i| mix[i] > 0.0).collect();
    let mix_shares = mix;
    let total = Mix(mix).total();
    let mut cumulative = Vec::with_capacity(active.len());
    let mut acc = 0.0;
    for &i in &active {
        acc += mix[i] / total;
        cumulative.push(acc);
    }
    Ok(Box::new(YcsbMix {
        spec,
        table: table_name(s)?,
        settings: s.clone(),
        active,
        mix: mix_shares,
        cumulative,
        keys,
        next_insert: Arc::new(AtomicU64::new(s.rows)),
        insert_base: Arc::new(AtomicU64::new(s.rows)),
        acked: Arc::new(Acknowledged::new(s.rows)),
    }))
}

struct YcsbMix {
    spec: &'static Spec,
    table: TableName,
    settings: Settings,
    /// Indexes into TYPES of the types this mix draws.
    active: Vec<usize>,
    /// The shares of all five types, as given.
    mix: [f64; 5],
    /// Cumulative shares of `active`, the last being 1.
    cumulative: Vec<f64>,
    keys: KeyDistribution,
    /// The next record number to insert, shared by the workers.
    next_insert: Arc<AtomicU64>,
    /// The first free record number when the mix started, the same for
    /// every client (they all read it before any inserts).
    insert_base: Arc<AtomicU64>,
    /// How far inserts are done without a gap (for `latest`).
    acked: Arc<Acknowledged>,
}

impl YcsbMix {
    /// The first record number past every record in the table: from the
    /// count, past every key that exists within a window above the last
    /// one found (an earlier run's inserts, with the holes its failed
    /// inserts left: they are never more than the workers in flight).
    async fn first_free(&self, client: &Client) -> Result<u64> {
        let t = self.table.quoted();
        let count: i64 = unnamed::query_one(client, &format!("select count(*) from {t}"), &[])
            .await
            .map_err(|e| Error::db(format!("cannot count the records of {t}"), e))?
            .get(0);
        let mut free = (count.max(0) as u64).max(self.settings.rows);
        let window = (4 * self.settings.threads as u64).max(64);
        let probe = format!("select ycsb_key from {t} where ycsb_key = any($1)");
        loop {
            let keys: Vec<String> = (free..free + window).map(key_of).collect();
            let found: Vec<String> = unnamed::query(client, &probe, &[&keys])
                .await
                .map_err(|e| Error::db(format!("cannot look for free keys in {t}"), e))?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let last = keys
                .iter()
                .enumerate()
                .filter(|(_, k)| found.contains(k))
                .map(|(i, _)| i as u64)
                .max();
            match last {
                Some(i) => free += i + 1,
                None => return Ok(free),
            }
        }
    }
}

/// How far the inserts of a run are done without a gap, as YCSB's
/// acknowledged counter: `latest` reads only below it, so it never looks
/// for a record whose insert (or an earlier-numbered one) is in flight.
/// Inserts are a few per cent of a mix, so a short lock on acknowledging
/// one costs nothing that matters; reading the limit takes no lock.
pub struct Acknowledged {
    upto: AtomicU64,
    done: std::sync::Mutex<std::collections::BTreeSet<u64>>,
}

impl Acknowledged {
    fn new(first: u64) -> Self {
        Acknowledged {
            upto: AtomicU64::new(first),
            done: std::sync::Mutex::new(std::collections::BTreeSet::new()),
        }
    }

    fn reset(&self, first: u64) {
        self.upto.store(first, Ordering::Relaxed);
        self.done.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Every record below this is in the table (or its insert failed).
    pub fn upto(&self) -> u64 {
        self.upto.load(Ordering::Acquire)
    }

    /// Insert `n` is done.
    pub fn ack(&self, n: u64) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let mut upto = self.upto.load(Ordering::Relaxed);
        if n < upto {
            return;
        }
        done.insert(n);
        while done.remove(&upto) {
            upto += 1;
        }
        self.upto.store(upto, Ordering::Release);
    }
}

/// The key distribution, as reports say it.
fn describe_keys(k: KeyDistribution) -> String {
    match k {
        KeyDistribution::Zipfian { theta } => format!("zipfian (scrambled, theta {theta})"),
        KeyDistribution::Latest { theta } => format!("latest (theta {theta})"),
        KeyDistribution::Hotspot { fraction, ops } => {
            format!("hotspot ({fraction} of the keys take {ops} of the operations)")
        }
        other => other.name().to_string(),
    }
}

impl Workload for YcsbMix {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn types(&self) -> Vec<&'static str> {
        self.active.iter().map(|&i| TYPES[i]).collect()
    }

    fn writes(&self) -> bool {
        // From the mix run, not the workload's name: ycsb-c with
        // --ycsb-proportions update=1 writes.
        self.active.iter().any(|&i| i != READ && i != SCAN)
    }

    fn describe(&self) -> String {
        let total: f64 = self.active.iter().map(|&i| self.mix[i]).sum();
        let shares: Vec<String> = self
            .active
            .iter()
            .map(|&i| format!("{}={}", TYPES[i], self.mix[i] / total))
            .collect();
        let custom = if self.settings.family::<YcsbSettings>().proportions.is_some() {
            " (custom mix, --ycsb-proportions)"
        } else {
            ""
        };
        format!(
            "{}{custom}; keys {}; {} fields of {} characters{}{}",
            shares.join(","),
            describe_keys(self.keys),
            self.settings.family::<YcsbSettings>().field_count,
            self.settings.family::<YcsbSettings>().field_length,
            if self.settings.family::<YcsbSettings>().write_all_fields {
                "; updates write all fields"
            } else {
                ""
            },
            if self.settings.family::<YcsbSettings>().rmw_txn {
                "; read-modify-write in one transaction"
            } else {
                ""
            }
        )
    }

    fn tables(&self) -> &'static dyn TableSet {
        &USERTABLE
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let first = if self.active.contains(&INSERT) {
                self.first_free(client).await?
            } else {
                self.settings.rows
            };
            self.next_insert.store(first, Ordering::Relaxed);
            self.insert_base.store(first, Ordering::Relaxed);
            self.acked.reset(first);
            Ok(())
        })
    }

    fn check_loaded<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let t = self.table.quoted();
            let rows = self.settings.rows;
            Ok(match schema::load_state(client, &self.table).await? {
                schema::LoadState::Incomplete => Some(format!(
                    "the last ycsb-load of {t} did not finish: {} will find records missing",
                    self.spec
                )),
                schema::LoadState::Loaded(n) if n < rows => Some(format!(
                    "{t} was loaded with {n} records but -r is {rows}: {} will find records missing",
                    self.spec
                )),
                schema::LoadState::Loaded(n) if n > rows => Some(format!(
                    "{t} was loaded with {n} records but -r is {rows}: {} will use only the first {rows} (give -r {n} to use them all)",
                    self.spec
                )),
                schema::LoadState::Unknown if schema::is_empty(client, &self.table).await? => {
                    Some(format!(
                        "{t} is empty: load it first, e.g. -o ycsb-load,{}",
                        self.spec
                    ))
                }
                _ => None,
            })
        })
    }

    fn table(&self) -> &TableName {
        &self.table
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let seed = worker_seed(s.seed, thread, 11);
        let start = (s.rows as u128 * thread as u128 / s.threads.max(1) as u128) as u64;
        Box::new(MixOp {
            table: self.table.quoted(),
            rng: SmallRng::seed_from_u64(seed),
            keys: KeyPicker::new(self.keys, s.rows, start),
            latest: matches!(self.keys, KeyDistribution::Latest { .. }),
            // Set up before the workers are made: the first record number
            // past every record in the table.
            acked: self.acked.clone(),
            pending_ack: None,
            active: self.active.clone(),
            cumulative: self.cumulative.clone(),
            fields: s.family::<YcsbSettings>().field_count,
            field_len: s.family::<YcsbSettings>().field_length,
            write_all: s.family::<YcsbSettings>().write_all_fields,
            rmw_txn: s.family::<YcsbSettings>().rmw_txn,
            prepared: s.prepared,
            next_insert: self.next_insert.clone(),
            insert_base: self.insert_base.load(Ordering::Relaxed),
            client: s.client,
            st: None,
            staged: Staged::default(),
            values: Vec::new(),
        })
    }
}

const READ: usize = 0;
const UPDATE: usize = 1;
const INSERT: usize = 2;
const SCAN: usize = 3;
const RMW: usize = 4;

/// The prepared statements of a mix worker.
struct Statements {
    read: Option<Statement>,
    /// One per field: `update … set fieldK = $2 where ycsb_key = $1`.
    update_one: Vec<Statement>,
    update_all: Option<Statement>,
    insert: Option<Statement>,
    scan: Option<Statement>,
}

#[derive(Default)]
struct Staged {
    /// Index into `active`.
    slot: usize,
    key: String,
    /// The field an update writes (when not all).
    field: usize,
    scan_len: i64,
    /// The record number of an insert (it counts for `latest` once done).
    insert_n: u64,
}

struct MixOp {
    table: String,
    rng: SmallRng,
    keys: KeyPicker,
    latest: bool,
    /// Inserts done without a gap: `latest` draws below it.
    acked: Arc<Acknowledged>,
    /// An insert staged and not yet acknowledged (a failed one is
    /// acknowledged when the next unit is staged, so that the count does
    /// not wait for it for ever).
    pending_ack: Option<u64>,
    active: Vec<usize>,
    cumulative: Vec<f64>,
    fields: usize,
    field_len: usize,
    write_all: bool,
    rmw_txn: bool,
    prepared: bool,
    next_insert: Arc<AtomicU64>,
    /// Where this mix's inserts began; the client's record numbers are
    /// interleaved with the other clients' from there.
    insert_base: u64,
    client: crate::workload::kit::partition::ClientShare,
    st: Option<Statements>,
    staged: Staged,
    /// The staged values: every field's for an insert or a full update,
    /// one field's otherwise, each `field_len` bytes.
    values: Vec<u8>,
}

impl MixOp {
    fn kind(&self) -> usize {
        self.active[self.staged.slot]
    }

    fn value(&self, i: usize) -> Result<&str> {
        std::str::from_utf8(&self.values[i * self.field_len..(i + 1) * self.field_len])
            .map_err(|_| Error::run("generated fields are not UTF-8"))
    }

    fn read_sql(&self) -> String {
        format!(
            "select ycsb_key, {} from {} where ycsb_key = $1",
            field_list(self.fields),
            self.table
        )
    }

    fn insert_sql(&self) -> String {
        let params: Vec<String> = (1..=self.fields + 1).map(|i| format!("${i}")).collect();
        format!(
            "insert into {} (ycsb_key, {}) values ({})",
            self.table,
            field_list(self.fields),
            params.join(", ")
        )
    }

    fn scan_sql(&self) -> String {
        format!(
            "select ycsb_key, {} from {} where ycsb_key >= $1 order by ycsb_key limit $2",
            field_list(self.fields),
            self.table
        )
    }

    /// The statements this mix draws, in the order both drivers prepare
    /// them: read, the update(s), insert, scan.
    fn statement_sqls(&self) -> Vec<(usize, String)> {
        let has = |t: usize| self.active.contains(&t);
        let mut out = Vec::new();
        if has(READ) || has(RMW) {
            out.push((READ, self.read_sql()));
        }
        if has(UPDATE) || has(RMW) {
            if self.write_all {
                out.push((UPDATE, self.update_sql_all()));
            } else {
                out.extend((0..self.fields).map(|f| (UPDATE, self.update_sql_one(f))));
            }
        }
        if has(INSERT) {
            out.push((INSERT, self.insert_sql()));
        }
        if has(SCAN) {
            out.push((SCAN, self.scan_sql()));
        }
        out
    }

    fn update_sql_one(&self, field: usize) -> String {
        format!(
            "update {} set field{field} = $2 where ycsb_key = $1",
            self.table
        )
    }

    fn update_sql_all(&self) -> String {
        let sets: Vec<String> = (0..self.fields)
            .map(|i| format!("field{i} = ${}", i + 2))
            .collect();
        format!(
            "update {} set {} where ycsb_key = $1",
            self.table,
            sets.join(", ")
        )
    }

    async fn read(&self, client: &Client) -> Result<u64> {
        match self.st.as_ref().and_then(|st| st.read.as_ref()) {
            Some(read) => Ok(client
                .query(read, &[&self.staged.key])
                .await
                .map_err(|e| Error::db("YCSB read failed", e))?
                .len() as u64),
            None => {
                let sql = format!(
                    "select ycsb_key, {} from {} where ycsb_key = {}",
                    field_list(self.fields),
                    self.table,
                    quote_literal(&self.staged.key)
                );
                simple_rows(client, &sql, "YCSB read failed").await
            }
        }
    }

    async fn update(&self, client: &Client) -> Result<u64> {
        let key = &self.staged.key;
        let prepared = self
            .st
            .as_ref()
            .filter(|st| st.update_all.is_some() || !st.update_one.is_empty());
        if let Some(st) = prepared {
            let n = if let Some(all) = &st.update_all {
                let vals: Vec<&str> = (0..self.fields)
                    .map(|i| self.value(i))
                    .collect::<Result<_>>()?;
                let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(self.fields + 1);
                params.push(key);
                params.extend(vals.iter().map(|v| v as &(dyn ToSql + Sync)));
                client.execute(all, &params).await
            } else {
                let v = self.value(0)?;
                client
                    .execute(&st.update_one[self.staged.field], &[key, &v])
                    .await
            };
            return n.map_err(|e| Error::db("YCSB update failed", e));
        }
        let sets: Vec<String> = if self.write_all {
            (0..self.fields)
                .map(|i| Ok(format!("field{i} = {}", quote_literal(self.value(i)?))))
                .collect::<Result<_>>()?
        } else {
            vec![format!(
                "field{} = {}",
                self.staged.field,
                quote_literal(self.value(0)?)
            )]
        };
        let sql = format!(
            "update {} set {} where ycsb_key = {}",
            self.table,
            sets.join(", "),
            quote_literal(key)
        );
        Ok(command_rows(
            &client
                .simple_query(&sql)
                .await
                .map_err(|e| Error::db("YCSB update failed", e))?,
        ))
    }

    async fn insert(&self, client: &Client) -> Result<u64> {
        let key = &self.staged.key;
        let vals: Vec<&str> = (0..self.fields)
            .map(|i| self.value(i))
            .collect::<Result<_>>()?;
        if let Some(insert) = self.st.as_ref().and_then(|st| st.insert.as_ref()) {
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(self.fields + 1);
            params.push(key);
            params.extend(vals.iter().map(|v| v as &(dyn ToSql + Sync)));
            return client
                .execute(insert, &params)
                .await
                .map_err(|e| Error::db("YCSB insert failed", e));
        }
        let lits: Vec<String> = vals.iter().map(|v| quote_literal(v)).collect();
        let sql = format!(
            "insert into {} (ycsb_key, {}) values ({}, {})",
            self.table,
            field_list(self.fields),
            quote_literal(key),
            lits.join(", ")
        );
        Ok(command_rows(
            &client
                .simple_query(&sql)
                .await
                .map_err(|e| Error::db("YCSB insert failed", e))?,
        ))
    }

    async fn scan(&self, client: &Client) -> Result<u64> {
        match self.st.as_ref().and_then(|st| st.scan.as_ref()) {
            Some(scan) => Ok(client
                .query(scan, &[&self.staged.key, &self.staged.scan_len])
                .await
                .map_err(|e| Error::db("YCSB scan failed", e))?
                .len() as u64),
            None => {
                let sql = format!(
                    "select ycsb_key, {} from {} where ycsb_key >= {} order by ycsb_key limit {}",
                    field_list(self.fields),
                    self.table,
                    quote_literal(&self.staged.key),
                    self.staged.scan_len
                );
                simple_rows(client, &sql, "YCSB scan failed").await
            }
        }
    }

    async fn read_modify_write(&self, client: &Client) -> Result<u64> {
        if !self.rmw_txn {
            let found = self.read(client).await?;
            let _ = self.update(client).await?;
            return Ok(found);
        }
        let fail = |e| Error::db("YCSB read-modify-write transaction failed", e);
        client.batch_execute("begin").await.map_err(fail)?;
        let done = async {
            let found = self.read(client).await?;
            self.update(client).await?;
            Ok::<_, Error>(found)
        }
        .await;
        match done {
            Ok(found) => {
                client.batch_execute("commit").await.map_err(fail)?;
                Ok(found)
            }
            Err(e) => {
                // The error is the unit's; a failed rollback on a lost
                // connection adds nothing to it.
                let _ = client.batch_execute("rollback").await;
                Err(e)
            }
        }
    }
}

async fn simple_rows(client: &Client, sql: &str, what: &'static str) -> Result<u64> {
    Ok(client
        .simple_query(sql)
        .await
        .map_err(|e| Error::db(what, e))?
        .iter()
        .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
        .count() as u64)
}

impl Operation for MixOp {
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        if !self.prepared {
            return Ok(());
        }
        let mut st = Statements {
            read: None,
            update_one: Vec::new(),
            update_all: None,
            insert: None,
            scan: None,
        };
        // Only the statements of the types this mix draws: with -C they
        // are made again on every connection.
        for (kind, sql) in self.statement_sqls() {
            let s = client
                .prepare(&sql)
                .await
                .map_err(|e| Error::db(format!("cannot prepare '{sql}'"), e))?;
            match kind {
                READ => st.read = Some(s),
                UPDATE if self.write_all => st.update_all = Some(s),
                UPDATE => st.update_one.push(s),
                INSERT => st.insert = Some(s),
                _ => st.scan = Some(s),
            }
        }
        self.st = Some(st);
        Ok(())
    }
    fn stage(&mut self) -> bool {
        if let Some(n) = self.pending_ack.take() {
            self.acked.ack(n);
        }
        let u: f64 = self.rng.random();
        let slot = self
            .cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.cumulative.len() - 1);
        self.staged.slot = slot;
        let kind = self.active[slot];
        let n = if kind == INSERT {
            // The client's own count, from the common base; the record
            // number is interleaved with the other clients' (--clients).
            let local = self.next_insert.fetch_add(1, Ordering::Relaxed);
            let n = self.client.interleave(self.insert_base, local);
            self.staged.insert_n = n;
            self.pending_ack = Some(local);
            n
        } else if self.latest {
            self.keys.next_latest(
                &mut self.rng,
                self.client.spread(self.insert_base, self.acked.upto()),
            )
        } else {
            self.keys.next(&mut self.rng)
        };
        self.staged.key = key_of(n);
        self.values.clear();
        match kind {
            INSERT => fill_alphanumeric(
                &mut self.rng,
                &mut self.values,
                self.fields * self.field_len,
            ),
            UPDATE | RMW if self.write_all => fill_alphanumeric(
                &mut self.rng,
                &mut self.values,
                self.fields * self.field_len,
            ),
            UPDATE | RMW => {
                self.staged.field = self.rng.random_range(0..self.fields);
                fill_alphanumeric(&mut self.rng, &mut self.values, self.field_len);
            }
            SCAN => self.staged.scan_len = self.rng.random_range(1..=MAX_SCAN),
            _ => {}
        }
        true
    }

    fn unit_type(&self) -> usize {
        self.staged.slot
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!("{} of {}", TYPES[self.kind()], self.staged.key))
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let kind = self.kind();
        let rows = match kind {
            READ => self.read(client).await?,
            UPDATE => self.update(client).await?,
            INSERT => {
                let n = self.insert(client).await?;
                if let Some(k) = self.pending_ack.take() {
                    self.acked.ack(k);
                }
                n
            }
            SCAN => self.scan(client).await?,
            _ => self.read_modify_write(client).await?,
        };
        // A read, update or read-modify-write that found no record; a
        // scan past the last key may rightly find none.
        let missing = u64::from(rows == 0 && kind != SCAN);
        Ok(Outcome { rows, missing })
    }

    /// On the lean driver unless the mix has read-modify-write, whose
    /// unit is two statements (or a transaction).
    fn wire(&mut self) -> Option<&mut dyn WireUnit> {
        if self.prepared && !self.active.contains(&RMW) {
            Some(self)
        } else {
            None
        }
    }
}

impl WireUnit for MixOp {
    fn statements(&self) -> Vec<WireStatement> {
        self.statement_sqls()
            .into_iter()
            .map(|(kind, sql)| WireStatement {
                prepare_failed: format!("cannot prepare '{sql}'"),
                sql,
                failed: match kind {
                    READ => "YCSB read failed",
                    UPDATE => "YCSB update failed",
                    INSERT => "YCSB insert failed",
                    _ => "YCSB scan failed",
                },
            })
            .collect()
    }

    /// The index in [`MixOp::statement_sqls`] of the staged unit's.
    fn statement(&self) -> usize {
        let has = |t: usize| self.active.contains(&t);
        let reads = usize::from(has(READ));
        let updates = match (has(UPDATE), self.write_all) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => self.fields,
        };
        let inserts = usize::from(has(INSERT));
        match self.kind() {
            READ => 0,
            UPDATE if self.write_all => reads,
            UPDATE => reads + self.staged.field,
            INSERT => reads + updates,
            _ => reads + updates + inserts,
        }
    }

    /// $1 the key; then the values (update, insert) or the scan's length.
    fn param(&self, i: usize) -> Param<'_> {
        match (i, self.kind()) {
            (0, _) => Param::Text(&self.staged.key),
            (_, SCAN) => Param::Int(self.staged.scan_len),
            (i, _) => {
                let v = &self.values[(i - 1) * self.field_len..i * self.field_len];
                Param::Text(std::str::from_utf8(v).unwrap_or_default())
            }
        }
    }

    fn outcome(&mut self, answer: Answer) -> Outcome {
        let kind = self.kind();
        let rows = match kind {
            READ | SCAN => answer.rows,
            _ => answer.affected,
        };
        if kind == INSERT
            && let Some(k) = self.pending_ack.take()
        {
            self.acked.ack(k);
        }
        Outcome {
            rows,
            missing: u64::from(rows == 0 && kind != SCAN),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportions_parse_and_refuse_what_they_cannot_use() {
        assert_eq!(
            Mix::parse("read=0.9, update=0.1").unwrap(),
            Mix([0.9, 0.1, 0.0, 0.0, 0.0])
        );
        assert_eq!(
            Mix::parse("read-modify-write=1").unwrap(),
            Mix([0.0, 0.0, 0.0, 0.0, 1.0])
        );
        assert!(
            Mix::parse("delete=1")
                .unwrap_err()
                .contains("not a YCSB operation")
        );
        assert!(Mix::parse("read").unwrap_err().contains("TYPE=SHARE"));
        assert!(Mix::parse("read=-1").unwrap_err().contains("0 or more"));
        assert!(Mix::parse("read=0").unwrap_err().contains("add up to 0"));
    }

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

    #[test]
    fn the_standard_mixes_have_ycsb_shares() {
        assert_eq!(mix_def("ycsb-a", ZIPF_THETA).mix, [0.5, 0.5, 0.0, 0.0, 0.0]);
        assert_eq!(
            mix_def("ycsb-e", ZIPF_THETA).mix,
            [0.0, 0.0, 0.05, 0.95, 0.0]
        );
        assert!(matches!(
            mix_def("ycsb-d", ZIPF_THETA).keys,
            KeyDistribution::Latest { .. }
        ));
        assert_eq!(mix_def("ycsb-f", ZIPF_THETA).mix, [0.5, 0.0, 0.0, 0.0, 0.5]);
    }

    /// The settings of a command line, as the run would get them.
    fn settings_of(args: &[&str]) -> Settings {
        use clap::Parser;
        let mut all = vec!["ysql-bench", "--sandbox"];
        all.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(all).expect("clap accepts the flags");
        crate::config::RunPlan::from_cli(cli)
            .expect("a valid command line")
            .workload
    }

    /// --zipf-theta reaches the mixes' own zipfian and `latest`, and the
    /// workload line (the summary's and the JSON's) says the theta used;
    /// --key-distribution still replaces the mix's keys.
    #[test]
    fn the_mixes_keys_take_the_zipf_theta_given() {
        for (args, keys) in [
            (
                &["-o", "ycsb-a", "-r", "10000"][..],
                KeyDistribution::Zipfian { theta: 0.99 },
            ),
            (
                &["-o", "ycsb-a", "-r", "10000", "--zipf-theta", "0.5"][..],
                KeyDistribution::Zipfian { theta: 0.5 },
            ),
            (
                &["-o", "ycsb-d", "-r", "10000", "--zipf-theta", "1.2"][..],
                KeyDistribution::Latest { theta: 1.2 },
            ),
            (
                &[
                    "-o",
                    "ycsb-c",
                    "-r",
                    "10000",
                    "--key-distribution",
                    "latest",
                    "--zipf-theta",
                    "0.7",
                ][..],
                KeyDistribution::Latest { theta: 0.7 },
            ),
            (
                &[
                    "-o",
                    "ycsb-b",
                    "-r",
                    "10000",
                    "--key-distribution",
                    "uniform",
                ][..],
                KeyDistribution::Uniform,
            ),
        ] {
            let s = settings_of(args);
            let name = args[1];
            assert_eq!(mix_of(name, &s).keys, keys, "{args:?}");
            let spec = [&A, &B, &C, &D]
                .into_iter()
                .find(|spec| spec.name == name)
                .expect("a mix");
            let w = build_mix(spec, &s).expect("the mix builds");
            assert!(
                w.describe().contains(&describe_keys(keys)),
                "{args:?}: {}",
                w.describe()
            );
        }
        let w = build_mix(&A, &settings_of(&["-o", "ycsb-a", "--zipf-theta", "0.5"]))
            .expect("the mix builds");
        assert!(
            w.describe().contains("keys zipfian (scrambled, theta 0.5)"),
            "{}",
            w.describe()
        );
    }

    #[test]
    fn latest_counts_only_inserts_done_without_a_gap() {
        let a = Acknowledged::new(100);
        a.ack(101);
        a.ack(102);
        assert_eq!(a.upto(), 100, "100 is still in flight");
        a.ack(100);
        assert_eq!(a.upto(), 103);
        a.ack(50);
        assert_eq!(a.upto(), 103);
        a.reset(7);
        assert_eq!(a.upto(), 7);
    }

    #[test]
    fn a_record_line_is_the_same_for_the_same_seed() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        record_line(7, 42, 3, 5, &mut a);
        record_line(7, 42, 3, 5, &mut b);
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        assert_eq!(text.matches('\t').count(), 3);
        assert!(text.starts_with(&key_of(42)));
        assert_eq!(text.len(), key_of(42).len() + 3 * 6 + 1);
    }
}
