//! The record of a run, as plain serialisable data: what `--json` writes
//! and `show`, `merge` and `compare` read back.
//!
//! One record for the live run and the saved one: the run's layers fill
//! it ([`OpRecord::of`] from an operation's result, the app the set-up and
//! the server), the report prints it, and reading a saved report gives the
//! same record back, so that a saved run is printed by the code that
//! printed it live. Keys are the README's; keys added later are read as
//! absent from a report written before them, and `app::saved` fills what
//! it can of an old report from the workload's registry.
//!
//! What the pictures need beyond it (each worker's latency samples, the
//! fine timeline) is kept by the live run alone: a saved report is not
//! drawn again.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::outcome::{Check, Finding, Metric, StatementStats};
use super::server::ServerFigures;
use super::{IntervalFigures, OpResult, Percentiles, Stats, nanos};

/// A whole run.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always "ysql-bench": how the tool recognises its own files.
    pub tool: String,
    pub version: String,
    /// When the run started, RFC 3339, UTC.
    pub started_at: String,
    pub config: RunConfig,
    pub server: ServerRecord,
    pub operations: Vec<OpRecord>,
    /// `--clients`: the run this report is part of (or, merged, all of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<RunCluster>,
    /// `--per-statement`: the run's text held the latency per statement
    /// (the statements are recorded either way).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_statement: bool,
    /// `--show-rowsize`: the row size the run measured after its last
    /// operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_size: Option<RowSize>,
    /// `--slo`: the criteria and each verdict with its measured value
    /// (see [`super::slo`]); a merge judges its merged figures again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<super::slo::SloRecord>,
    /// `--find-max`: the search and every step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_max: Option<super::find_max::FindMaxRecord>,
}

/// The average row size of the last operation's table, measured over a
/// sample after the run (`--show-rowsize`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowSize {
    /// Bytes per row on average; None when the table was empty or the
    /// size could not be measured.
    pub avg_bytes: Option<f64>,
    /// The rows of the sample.
    pub rows: u64,
    /// As the summary says it: "128.0 bytes (average over 10000 rows)",
    /// "empty table" or "not measured: why".
    pub text: String,
}

/// A client's place in a run of several, or the clients a merged report
/// was made of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunCluster {
    pub run_id: String,
    pub clients: usize,
    /// This client's index; None in a merged report.
    pub client_index: Option<usize>,
    /// The run's seed, from which each client's own (config.seed) is derived.
    #[serde(with = "super::exact_u64")]
    pub run_seed: u64,
    /// A merged report: the indexes of the clients it was made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<usize>,
}

/// When an operation started on the database's clock, so that intervals
/// line up across clients: interval i ends at `at_s + end_s`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpStart {
    /// Seconds since the Unix epoch, on the database's clock (the end of
    /// the warmup, if any, is `at_s + warmup_s`).
    pub at_s: f64,
    /// This client's start minus the common instant, in milliseconds.
    pub skew_ms: f64,
}

/// One client's share of a merged operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientShare {
    pub client: usize,
    pub skew_ms: Option<f64>,
    /// The client's own `-t` (absent in reports before clients could
    /// differ in it).
    #[serde(default)]
    pub threads: usize,
    /// Rows it wrote (its share of a load) or read.
    #[serde(default)]
    pub rows: u64,
    pub units: u64,
    pub units_per_s: f64,
    pub wallclock_s: f64,
}

/// How the run was set up: what it takes to repeat it.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunConfig {
    /// Where the run connected; hosts, ports, user, database; no password.
    pub target: String,
    pub operations: Vec<String>,
    pub threads: usize,
    pub rows: u64,
    pub batch_size: usize,
    pub fields_length: usize,
    pub nontransactional: bool,
    pub tablets: Option<u32>,
    pub prepared: bool,
    /// `-M`: prepared, extended or simple (absent in reports before 0.3).
    #[serde(default)]
    pub protocol: String,
    pub table: String,
    /// A string of digits: a JSON number above 2^53 is rounded by jq and
    /// JavaScript. Read from either form.
    #[serde(with = "super::exact_u64")]
    pub seed: u64,
    /// --key-distribution, when given (each workload has its default).
    #[serde(default)]
    pub key_distribution: Option<String>,
    /// --isolation, when given (the server's default otherwise).
    #[serde(default)]
    pub isolation: Option<String>,
    /// --retry-on and --max-tries, when given (each workload has its
    /// defaults, which `operations[].workload` and the retries show).
    #[serde(default)]
    pub retry_on: Option<Vec<String>>,
    #[serde(default)]
    pub max_tries: Option<u32>,
    /// The run time of query workloads (its default when `--transactions`
    /// bounds them instead).
    pub time_s: f64,
    /// `--transactions`: the units each thread of a query workload ends.
    #[serde(default)]
    pub transactions: Option<u64>,
    pub warmup_s: Option<f64>,
    pub rate: Option<f64>,
    pub rate_distribution: String,
    pub latency_limit_ms: Option<f64>,
    pub interval_s: f64,
    /// failover, round-robin or random (several hosts).
    #[serde(default)]
    pub load_balance: String,
    /// YugabyteDB: the discovered nodes' types and zones a connection may
    /// go to (`only-primary`, `prefer-rr, topology aws.r1.z1:1,…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// -C: a new connection per unit.
    #[serde(default)]
    pub reconnect: bool,
    #[serde(default)]
    pub sslmode: String,
    /// The command line as it was given, passwords taken out: what the
    /// report page shows as the command that repeats the run (a merged
    /// report keeps none: each client ran its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_line: Vec<String>,
}

/// The server the run measured.
#[derive(Debug, Serialize, Deserialize)]
pub struct ServerRecord {
    /// "postgres" or "yugabyte".
    pub flavor: String,
    pub version: String,
    /// The tool's own connection: "TLSv1.3 (cipher)", "none" or "unknown".
    #[serde(default)]
    pub encryption: String,
}

fn yes() -> bool {
    true
}

fn one() -> usize {
    1
}

/// One operation of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpRecord {
    pub operation: String,
    /// The table the operation loaded or read.
    #[serde(default)]
    pub table: String,
    /// What the run of the workload was beyond its name: a mix's shares,
    /// its key distribution and theta, its record shape.
    #[serde(default)]
    pub workload: String,
    pub succeeded: bool,
    pub failure: Option<String>,
    pub interrupted: bool,
    pub timed_out: bool,
    pub threads: usize,
    pub wallclock_s: f64,
    pub db_time_s: f64,
    pub warmup_s: Option<f64>,
    /// The run was stopped during the warmup (warmup_s says after how
    /// long): nothing was measured.
    pub warmup_interrupted: bool,
    /// `--transactions`: the units each thread was to end (done, failed
    /// or skipped), instead of a run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    pub unit: String,
    /// The unit's plural, as the summary says it ("queries"); empty in a
    /// report written before it was kept.
    #[serde(default)]
    pub unit_plural: String,
    /// Whether the operation loads (its figures are per row).
    #[serde(default)]
    pub load: bool,
    /// Whether it runs timed units (not a clean-up or a check).
    #[serde(default = "yes")]
    pub measured: bool,
    /// What one unit holds, as the summary's `batch` line says it.
    #[serde(default)]
    pub batch: String,
    /// What the units that found rows missing are, in the summary.
    #[serde(default)]
    pub missing_label: String,
    /// What the latency histogram is of, e.g. "batch (200 rows)".
    #[serde(default)]
    pub histogram_of: String,
    /// Rows the table was to hold (loads) or ids were drawn from.
    #[serde(default)]
    pub table_rows: u64,
    #[serde(default)]
    pub nontransactional: bool,
    /// `--latency-limit`, if given.
    #[serde(default)]
    pub latency_limit_ms: Option<f64>,
    /// Throughput of all the operation's units.
    #[serde(flatten)]
    pub rates: Rates,
    /// Counts, percentiles and histograms of all the operation's units
    /// (with `reconnects`, the connections made again after being lost).
    #[serde(flatten)]
    pub figures: Stats,
    pub rate_target: Option<f64>,
    /// Units each worker kept in flight on its connection (`--pipeline`);
    /// 1, one at a time, in a report written before it was kept.
    #[serde(default = "one")]
    pub pipeline: usize,
    /// Of those, how many shared a Sync and were one transaction
    /// (`--pipeline-sync`); 1, a Sync each, in a report written before it
    /// was kept.
    #[serde(default = "one")]
    pub pipeline_sync: usize,
    /// Which client library ran the units: lean or tokio-postgres.
    #[serde(default)]
    pub driver: String,
    pub thread_rows: Vec<u64>,
    pub intervals: Vec<IntervalFigures>,
    /// The same figures per transaction type (one type, named after the
    /// unit, for the operations that are not a mix).
    #[serde(default)]
    pub types: Vec<TypeRecord>,
    /// Per statement kind inside the units (transactions): count and
    /// latency.
    #[serde(default)]
    pub statements: Vec<StatementRecord>,
    /// Consistency checks run after the operation.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// What an operation without units did: a clean-up's dropped and left
    /// tables, one `{label, text}` a line as the summary shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The workload's own figures by key (TPC-C: tpmc, efficiency).
    #[serde(default)]
    pub metrics: BTreeMap<String, f64>,
    /// The same figures as the summary shows them, with the rules by
    /// which a merge makes them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_lines: Vec<Metric>,
    /// The same figures per interval, one value per entry of `intervals`
    /// (TPC-C: tpmc, efficiency of each interval's committed New-Orders).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interval_metrics: BTreeMap<String, Vec<f64>>,
    /// How the workload names its pauses between units (TPC-C's keying
    /// and think times), when it made any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pauses: Option<super::outcome::PauseWords>,
    /// The users (TPC-C's terminals) the workers' connections served,
    /// when the workload queued them for the connections: a unit's
    /// latency beyond its service time is its user's wait for a free
    /// connection (queueing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminals: Option<u64>,
    /// Connections and units per host.
    #[serde(default)]
    pub hosts: Vec<HostRecord>,
    /// The same per YugabyteDB zone (`cloud.region.zone`), when the nodes
    /// were discovered; added up by zone in a merge of several clients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<ZoneRecord>,
    /// Connect time and throughput without it, under --reconnect.
    #[serde(default)]
    pub connect: Option<ConnectRecord>,
    /// What the server saw of the operation (absent with --no-server-stats).
    #[serde(default)]
    pub server: Option<ServerFigures>,
    /// `--clients`: when the operation started, on the database's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<OpStart>,
    /// A merged report: each client's share.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientShare>,
}

/// One transaction type of an operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TypeRecord {
    pub name: String,
    #[serde(flatten)]
    pub rates: Rates,
    #[serde(flatten)]
    pub figures: Stats,
    pub intervals: Vec<IntervalFigures>,
}

/// One statement kind inside an operation's units, written with its
/// percentiles and its histogram (base64 HdrHistogram V2 compressed,
/// nanoseconds), read back from the histogram.
#[derive(Clone, Debug)]
pub struct StatementRecord {
    pub name: String,
    /// "read", "write" or "other"; empty in a report written before it
    /// was kept.
    pub class: String,
    pub count: u64,
    pub latency: Histogram<u64>,
}

/// One host in the JSON report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    pub host: String,
    pub connections: u64,
    pub units: u64,
    /// Its zone, `cloud.region.zone` (discovered nodes only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,
    /// `primary` or `read_replica` (discovered nodes only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_type: String,
}

/// One YugabyteDB zone in the JSON report: its hosts' figures added up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZoneRecord {
    pub zone: String,
    /// The zone's hosts the run knew of.
    pub hosts: u64,
    pub connections: u64,
    pub units: u64,
}

/// The figures of `hosts` per zone, in the order the zones first appear;
/// empty when no host has a zone.
pub fn zones_of(hosts: &[HostRecord]) -> Vec<ZoneRecord> {
    let mut out: Vec<ZoneRecord> = Vec::new();
    for h in hosts.iter().filter(|h| !h.zone.is_empty()) {
        let i = match out.iter().position(|z| z.zone == h.zone) {
            Some(i) => i,
            None => {
                out.push(ZoneRecord {
                    zone: h.zone.clone(),
                    hosts: 0,
                    connections: 0,
                    units: 0,
                });
                out.len() - 1
            }
        };
        out[i].hosts += 1;
        out[i].connections += h.connections;
        out[i].units += h.units;
    }
    out
}

/// Several clients' zones added up by name (hosts counted once per
/// client: two clients may know the same node).
pub fn add_zones(all: &[&[ZoneRecord]]) -> Vec<ZoneRecord> {
    let mut out: Vec<ZoneRecord> = Vec::new();
    for z in all.iter().flat_map(|zs| zs.iter()) {
        match out.iter_mut().find(|o| o.zone == z.zone) {
            Some(o) => {
                o.hosts = o.hosts.max(z.hosts);
                o.connections += z.connections;
                o.units += z.units;
            }
            None => out.push(z.clone()),
        }
    }
    out
}

/// The connect figures of --reconnect in the JSON report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectRecord {
    pub connections: u64,
    pub avg_ns: u64,
    pub connect_ns: Percentiles,
    /// Throughput with an average worker's connect time taken out.
    pub units_per_s_without_connect: f64,
    pub rows_per_s_without_connect: f64,
}

/// Throughput of an operation or a transaction type over its window: the
/// one figure of a report that [`Stats`] cannot say alone (it needs the
/// window), written beside them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    pub units_per_s: f64,
    pub rows_per_s: f64,
}

impl Rates {
    /// The rates of `s` over `wall`.
    pub fn of(s: &Stats, wall: Duration) -> Rates {
        Rates::over(s.ops, s.rows, wall.as_secs_f64())
    }

    /// `units` and `rows` over `secs` (none over no time).
    pub fn over(units: u64, rows: u64, secs: f64) -> Rates {
        if secs > 0.0 {
            Rates {
                units_per_s: units as f64 / secs,
                rows_per_s: rows as f64 / secs,
            }
        } else {
            Rates::default()
        }
    }
}

impl Serialize for StatementRecord {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeStruct};
        let histogram = super::saved::encode_histogram(&self.latency).map_err(S::Error::custom)?;
        let mut m = ser.serialize_struct("StatementRecord", 5)?;
        m.serialize_field("name", &self.name)?;
        m.serialize_field("count", &self.count)?;
        m.serialize_field("latency_ns", &Percentiles::of(&self.latency))?;
        m.serialize_field("histogram", &histogram)?;
        m.serialize_field("class", &self.class)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for StatementRecord {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        #[derive(Deserialize)]
        struct Saved {
            name: String,
            count: u64,
            histogram: String,
            #[serde(default)]
            class: String,
        }
        let s = Saved::deserialize(de)?;
        let latency = super::saved::decode_histogram(&s.histogram).map_err(D::Error::custom)?;
        Ok(StatementRecord {
            name: s.name,
            class: s.class,
            count: s.count,
            latency,
        })
    }
}

impl StatementRecord {
    fn of(s: &StatementStats) -> StatementRecord {
        StatementRecord {
            name: s.name.to_string(),
            class: s.class.to_string(),
            count: s.count,
            latency: s.latency.clone(),
        }
    }
}

impl OpRecord {
    /// The record of an operation that ran.
    pub fn of(op: &OpResult) -> OpRecord {
        let types = op
            .types
            .iter()
            .map(|t| TypeRecord {
                name: t.name.to_string(),
                rates: Rates::of(&t.stats, op.wallclock),
                figures: t.stats.clone(),
                intervals: t.intervals.clone(),
            })
            .collect();
        OpRecord {
            operation: op.spec.name.to_string(),
            table: op.table.clone(),
            workload: op.workload.clone(),
            succeeded: op.succeeded(),
            failure: op.failure.clone(),
            interrupted: op.interrupted,
            timed_out: op.timed_out,
            threads: op.threads,
            wallclock_s: op.wallclock.as_secs_f64(),
            db_time_s: op.total.busy.as_secs_f64(),
            warmup_s: op.warmup.map(|d| d.as_secs_f64()),
            warmup_interrupted: op.warmup_cut,
            transactions: op.transactions,
            unit: op.spec.unit.to_string(),
            unit_plural: op.spec.units.to_string(),
            load: op.spec.is_load(),
            measured: op.measured,
            batch: op.batch_text.clone(),
            missing_label: op.missing_label.to_string(),
            histogram_of: op.spec.unit.to_string(),
            table_rows: op.table_rows,
            nontransactional: op.nontransactional,
            latency_limit_ms: op.latency_limit.map(|d| d.as_secs_f64() * 1e3),
            rates: Rates::of(&op.total, op.wallclock),
            figures: op.total.clone(),
            rate_target: op.rate.map(|r| r.per_second),
            pipeline: op.pipeline,
            pipeline_sync: op.pipeline_sync,
            thread_rows: op.thread_rows.clone(),
            intervals: zone_intervals(op),
            types,
            statements: op.statements.iter().map(StatementRecord::of).collect(),
            checks: op.checks.clone(),
            findings: op.findings.clone(),
            metrics: op
                .metrics
                .iter()
                .map(|m| (m.key.clone(), m.value))
                .collect(),
            metric_lines: op.metrics.clone(),
            interval_metrics: op.interval_metrics.clone(),
            pauses: op.pauses.clone(),
            terminals: op.terminals,
            hosts: hosts(op),
            zones: zones_of(&hosts(op)),
            driver: op.driver.clone(),
            connect: connect(op),
            server: op.server.clone(),
            start: None,
            clients: Vec::new(),
        }
    }

    /// Whether its units had intended starts apart from when they were
    /// sent (`--rate`'s schedule, or users queued for the connections):
    /// their latency then differs from their service time.
    pub fn has_intended_starts(&self) -> bool {
        self.rate_target.is_some() || self.terminals.is_some()
    }

    /// Whether the operation failed before its first unit was sent: its
    /// set-up or every worker's connection failed. It has nothing to
    /// summarise.
    pub fn never_started(&self) -> bool {
        self.failure.is_some()
            && self.figures.ops == 0
            && self.figures.failed() == 0
            && self.figures.rows == 0
            && self.checks.is_empty()
            && self.findings.is_empty()
    }

    /// From the start of measurement to the end of the last worker.
    pub fn wallclock(&self) -> Duration {
        Duration::from_secs_f64(self.wallclock_s.max(0.0))
    }

    /// Rows (loads) or units (queries): what the figures are per.
    pub fn items(&self) -> u64 {
        if self.load {
            self.figures.rows
        } else {
            self.figures.ops
        }
    }

    /// `n` things done along the units, per second of the window the
    /// record's rates are over: the wallclock of one client's run; for a
    /// merged one, at the merged units' rate (over the window all clients
    /// shared), which the wallclock (their whole span) is not.
    pub fn per_s(&self, n: u64) -> f64 {
        if !self.clients.is_empty() {
            if self.figures.ops == 0 {
                return 0.0;
            }
            return n as f64 * self.rates.units_per_s / self.figures.ops as f64;
        }
        if self.wallclock_s > 0.0 {
            n as f64 / self.wallclock_s
        } else {
            0.0
        }
    }

    /// Whether the operation is a mix of several transaction types, whose
    /// figures reports then show per type too.
    pub fn is_mix(&self) -> bool {
        self.types.len() > 1
    }

    /// The unit's plural; made from the singular for a report written
    /// before the plural was kept.
    pub fn units(&self) -> String {
        if self.unit_plural.is_empty() {
            plural(&self.unit)
        } else {
            self.unit_plural.clone()
        }
    }

    /// What the units that found rows missing are called ("missing"
    /// unless the workload says otherwise).
    pub fn missing_label(&self) -> &str {
        if self.missing_label.is_empty() {
            "missing"
        } else {
            &self.missing_label
        }
    }

    /// `--latency-limit`, if given.
    pub fn latency_limit(&self) -> Option<Duration> {
        self.latency_limit_ms
            .map(|ms| Duration::from_secs_f64((ms / 1e3).max(0.0)))
    }

    /// The warmup that ran before measurement, if any.
    pub fn warmup(&self) -> Option<Duration> {
        self.warmup_s.map(|s| Duration::from_secs_f64(s.max(0.0)))
    }

    /// What the latency histogram is of ("batch (200 rows)"): the unit
    /// in a report written before it was kept.
    pub fn histogram_of(&self) -> &str {
        if self.histogram_of.is_empty() {
            &self.unit
        } else {
            &self.histogram_of
        }
    }

    /// The workload's figures as the summary shows them: a report written
    /// before their lines were kept shows each by its key.
    pub fn metric_lines(&self) -> Vec<Metric> {
        if !self.metric_lines.is_empty() || self.metrics.is_empty() {
            return self.metric_lines.clone();
        }
        self.metrics
            .iter()
            .map(|(k, v)| Metric::new(k, k, *v, number(*v)))
            .collect()
    }
}

/// A workload figure: whole numbers as they are, others to 4 places.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// The plural of a unit's name as reports keep it (`query`, `batch`,
/// `txn`), for a report written when it kept the singular only.
pub fn plural(unit: &str) -> String {
    let consonant_y = unit.len() > 1
        && unit.ends_with('y')
        && !unit[..unit.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &unit[..unit.len() - 1])
    } else if unit.ends_with("ch") || unit.ends_with("sh") || unit.ends_with(['s', 'x']) {
        format!("{unit}es")
    } else {
        format!("{unit}s")
    }
}

/// The intervals as the record keeps them: units per zone instead of per
/// host index (an index means nothing to another client or a later run).
fn zone_intervals(r: &OpResult) -> Vec<IntervalFigures> {
    r.intervals
        .iter()
        .map(|f| {
            let mut f = f.clone();
            for (i, n) in std::mem::take(&mut f.host_units).into_iter().enumerate() {
                match r.host_places.get(i) {
                    Some((zone, _)) if !zone.is_empty() => {
                        *f.zone_units.entry(zone.clone()).or_default() += n
                    }
                    _ => {}
                }
            }
            f
        })
        .collect()
}

/// Connections and units per host.
fn hosts(r: &OpResult) -> Vec<HostRecord> {
    let c = &r.total.conns;
    r.hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let (zone, node_type) = r.host_places.get(i).cloned().unwrap_or_default();
            HostRecord {
                host: host.clone(),
                connections: c.opened.get(i).copied().unwrap_or(0),
                units: c.ops.get(i).copied().unwrap_or(0),
                zone,
                node_type,
            }
        })
        .collect()
}

/// The --reconnect figures; None without --reconnect. "Without" follows
/// pgbench: the connect time of an average worker (all workers' connect
/// time / threads) is taken out of the wallclock.
pub fn connect(r: &OpResult) -> Option<ConnectRecord> {
    let c = &r.total.conns;
    if c.timed() == 0 {
        return None;
    }
    let per_worker = c.connect_total.as_secs_f64() / r.threads.max(1) as f64;
    let wall = (r.wallclock.as_secs_f64() - per_worker).max(0.0);
    let per_s = |n: u64| if wall > 0.0 { n as f64 / wall } else { 0.0 };
    Some(ConnectRecord {
        connections: c.timed(),
        avg_ns: nanos(c.connect_total) / c.timed(),
        connect_ns: Percentiles::of(&c.connect),
        units_per_s_without_connect: per_s(r.total.ops),
        rows_per_s_without_connect: per_s(r.total.rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_made_plural_as_english_does() {
        for (one, many) in [
            ("query", "queries"),
            ("batch", "batches"),
            ("txn", "txns"),
            ("op", "ops"),
            ("transaction", "transactions"),
            ("booking", "bookings"),
            ("day", "days"),
        ] {
            assert_eq!(plural(one), many);
        }
        // Every workload's own plural is what the reports would make.
        for s in crate::workload::REGISTRY {
            assert_eq!(plural(s.unit), s.units, "{}", s.name);
        }
    }

    #[test]
    fn a_statement_reads_back_with_its_histogram() {
        let mut s = StatementStats::new("point_select");
        s.class = "read";
        s.record(Duration::from_micros(40));
        s.record(Duration::from_micros(900));
        let r = StatementRecord::of(&s);
        let text = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["count"], 2);
        assert!(v["latency_ns"]["max"].as_u64().unwrap() > 800_000);
        let back: StatementRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.latency, s.latency);
        assert_eq!(back.class, "read");
    }
}
