//! `--json FILE`: the whole run, for other tools and for later comparison.
//!
//! It keeps the configuration (never the password), the server, and per
//! operation the counts, errors, throughput, percentiles, per-interval
//! figures and the HDR histograms themselves, serialised in HdrHistogram's
//! V2 compressed encoding and base64 (the encoding of HdrHistogram log
//! files), so that runs can be merged and re-plotted later with any
//! HdrHistogram library. Field meanings are documented in the README.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::app::RunReport;
use crate::config::RunPlan;
use crate::db::connect::ConnTarget;
use crate::error::{Error, Result};
use crate::report::summary::Figures;
use crate::stats::{IntervalFigures, OpResult, Percentiles, Stats, nanos};

/// The report, as written.
#[derive(Debug, Serialize, Deserialize)]
pub struct JsonReport {
    /// Always "ysql-bench": how the tool recognises its own files.
    pub tool: String,
    pub version: String,
    /// When the run started, RFC 3339, UTC.
    pub started_at: String,
    pub config: JsonConfig,
    pub server: JsonServer,
    pub operations: Vec<JsonOperation>,
    /// `--clients`: the run this report is part of (or, merged, all of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<JsonCluster>,
}

/// A client's place in a run of several, or the clients a merged report
/// was made of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonCluster {
    pub run_id: String,
    pub clients: usize,
    /// This client's index; None in a merged report.
    pub client_index: Option<usize>,
    /// The run's seed, from which each client's own (config.seed) is derived.
    #[serde(with = "crate::report::exact_u64")]
    pub run_seed: u64,
    /// A merged report: the indexes of the clients it was made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<usize>,
}

/// When an operation started on the database's clock, so that intervals
/// line up across clients: interval i ends at `at_s + end_s`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonStart {
    /// Seconds since the Unix epoch, on the database's clock (the end of
    /// the warmup, if any, is `at_s + warmup_s`).
    pub at_s: f64,
    /// This client's start minus the common instant, in milliseconds.
    pub skew_ms: f64,
}

/// One client's share of a merged operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonClientShare {
    pub client: usize,
    pub skew_ms: Option<f64>,
    pub units: u64,
    pub units_per_s: f64,
    pub wallclock_s: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct JsonConfig {
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
    pub table: String,
    /// A string of digits: a JSON number above 2^53 is rounded by jq and
    /// JavaScript. Read from either form.
    #[serde(with = "crate::report::exact_u64")]
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
    pub time_s: f64,
    pub warmup_s: Option<f64>,
    pub rate: Option<f64>,
    pub rate_distribution: String,
    pub latency_limit_ms: Option<f64>,
    pub interval_s: f64,
    /// failover, round-robin or random (several hosts).
    #[serde(default)]
    pub load_balance: String,
    /// -C: a new connection per unit.
    #[serde(default)]
    pub reconnect: bool,
    #[serde(default)]
    pub sslmode: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct JsonServer {
    /// "postgres" or "yugabyte".
    pub flavor: String,
    pub version: String,
    /// The tool's own connection: "TLSv1.3 (cipher)", "none" or "unknown".
    #[serde(default)]
    pub encryption: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct JsonOperation {
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
    pub unit: String,
    /// Throughput of all the operation's units.
    #[serde(flatten)]
    pub rates: Rates,
    /// Counts, percentiles and histograms of all the operation's units
    /// (with `reconnects`, the connections made again after being lost).
    #[serde(flatten)]
    pub figures: Stats,
    pub rate_target: Option<f64>,
    /// Which client library ran the units: lean or tokio-postgres.
    #[serde(default)]
    pub driver: String,
    pub thread_rows: Vec<u64>,
    pub intervals: Vec<IntervalFigures>,
    /// The same figures per transaction type (one type, named after the
    /// unit, for the operations that are not a mix).
    #[serde(default)]
    pub types: Vec<JsonType>,
    /// Per statement kind inside the units (transactions): count and
    /// latency.
    #[serde(default)]
    pub statements: Vec<JsonStatement>,
    /// Consistency checks run after the operation.
    #[serde(default)]
    pub checks: Vec<crate::stats::outcome::Check>,
    /// What an operation without units did: a clean-up's dropped and left
    /// tables, one `{label, text}` a line as the summary shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::stats::outcome::Finding>,
    /// The workload's own figures by key (TPC-C: tpmc, efficiency).
    #[serde(default)]
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// The same figures per interval, one value per entry of `intervals`
    /// (TPC-C: tpmc, efficiency of each interval's committed New-Orders).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub interval_metrics: std::collections::BTreeMap<String, Vec<f64>>,
    /// Connections and units per host.
    #[serde(default)]
    pub hosts: Vec<super::conns::JsonHost>,
    /// Connect time and throughput without it, under --reconnect.
    #[serde(default)]
    pub connect: Option<super::conns::JsonConnect>,
    /// What the server saw of the operation (absent with --no-server-stats).
    #[serde(default)]
    pub server: Option<crate::stats::server::ServerFigures>,
    /// `--clients`: when the operation started, on the database's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<JsonStart>,
    /// A merged report: each client's share.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<JsonClientShare>,
}

/// One statement kind inside an operation's units.
#[derive(Debug, Serialize, Deserialize)]
pub struct JsonStatement {
    pub name: String,
    pub count: u64,
    pub latency_ns: Percentiles,
    /// Base64 HdrHistogram V2 compressed, nanoseconds.
    pub histogram: String,
}

/// One transaction type of an operation.
#[derive(Debug, Serialize, Deserialize)]
pub struct JsonType {
    pub name: String,
    #[serde(flatten)]
    pub rates: Rates,
    #[serde(flatten)]
    pub figures: Stats,
    pub intervals: Vec<IntervalFigures>,
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

/// [`Stats`] as the report writes them: the counts, the percentiles of
/// each histogram (for readers without an HDR library) and the histograms
/// themselves, from which reading a report back makes the same `Stats`,
/// so that `merge` adds what the runs measured with [`Stats::add`] and
/// `show` and `compare` print what the run printed. Field names are the
/// README's; `busy_ns`, `lag_total_ns` and the retried histograms came
/// later, and a report without them reads as having none.
impl Serialize for Stats {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeStruct};
        let enc = |h: &Histogram<u64>| encode_histogram(h).map_err(S::Error::custom);
        let mut m = ser.serialize_struct("Stats", 23)?;
        m.serialize_field("units", &self.ops)?;
        m.serialize_field("rows", &self.rows)?;
        m.serialize_field("missing_rows", &self.missing)?;
        m.serialize_field("failed", &self.failed())?;
        m.serialize_field("errors", &self.errors)?;
        m.serialize_field("latency_ns", &Percentiles::of(&self.latency))?;
        m.serialize_field("service_ns", &Percentiles::of(&self.service))?;
        m.serialize_field("attempt_ns", &Percentiles::of(&self.attempt()))?;
        let per_row = !self.row_latency.is_empty();
        m.serialize_field(
            "row_latency_ns",
            &per_row.then(|| Percentiles::of(&self.row_latency)),
        )?;
        m.serialize_field("busy_ns", &nanos(self.busy))?;
        m.serialize_field(
            "lag_avg_ns",
            &nanos(self.lag_total).checked_div(self.ops).unwrap_or(0),
        )?;
        m.serialize_field("lag_total_ns", &nanos(self.lag_total))?;
        m.serialize_field("lag_max_ns", &nanos(self.lag_max))?;
        m.serialize_field("late", &self.late)?;
        m.serialize_field("skipped", &self.skipped)?;
        m.serialize_field("retried", &self.retried)?;
        m.serialize_field("retries", &self.retries)?;
        m.serialize_field("reconnects", &self.reconnects)?;
        m.serialize_field("failed_units", &self.failed_units)?;
        m.serialize_field("schedule_wait_ns", &nanos(self.schedule_wait))?;
        m.serialize_field("pause_wait_ns", &nanos(self.pause_wait))?;
        let retried = !self.retried_service.is_empty();
        m.serialize_field(
            "histograms",
            &SavedHistograms {
                latency: enc(&self.latency)?,
                service: enc(&self.service)?,
                row_latency: if per_row {
                    Some(enc(&self.row_latency)?)
                } else {
                    None
                },
                retried_service: if retried {
                    Some(enc(&self.retried_service)?)
                } else {
                    None
                },
                retried_attempt: if retried {
                    Some(enc(&self.retried_attempt)?)
                } else {
                    None
                },
            },
        )?;
        m.end()
    }
}

/// What reading [`Stats`] back needs of the written fields; the derived
/// ones (percentiles, `failed`) are made again from these.
#[derive(Deserialize)]
struct SavedStats {
    units: u64,
    rows: u64,
    missing_rows: u64,
    #[serde(default)]
    errors: BTreeMap<String, u64>,
    #[serde(default)]
    busy_ns: Option<u64>,
    #[serde(default)]
    lag_avg_ns: u64,
    #[serde(default)]
    lag_total_ns: Option<u64>,
    #[serde(default)]
    lag_max_ns: u64,
    #[serde(default)]
    late: u64,
    #[serde(default)]
    skipped: u64,
    #[serde(default)]
    retried: u64,
    #[serde(default)]
    retries: u64,
    #[serde(default)]
    reconnects: u64,
    #[serde(default)]
    failed_units: Vec<String>,
    #[serde(default)]
    schedule_wait_ns: u64,
    #[serde(default)]
    pause_wait_ns: u64,
    histograms: SavedHistograms,
}

/// The HDR histograms of a [`Stats`], base64 of the V2 compressed form.
#[derive(Debug, Serialize, Deserialize)]
struct SavedHistograms {
    latency: String,
    service: String,
    /// Loads only, as `row_latency_ns`.
    #[serde(default)]
    row_latency: Option<String>,
    /// Of the units that succeeded after retries: all their tries, and
    /// the successful one alone (absent when nothing was retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retried_service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retried_attempt: Option<String>,
}

impl<'de> Deserialize<'de> for Stats {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let s = SavedStats::deserialize(de)?;
        let dec = |h: &str| decode_histogram(h).map_err(D::Error::custom);
        // A decoded histogram is as wide as the values it held: each goes
        // into one of the run's own shape, so that later sums fit.
        let widen = |h: Option<&String>| -> std::result::Result<Histogram<u64>, D::Error> {
            let mut out = crate::stats::new_histogram();
            if let Some(h) = h {
                out.add(dec(h)?)
                    .map_err(|e| D::Error::custom(format!("cannot add the histograms: {e:?}")))?;
            }
            Ok(out)
        };
        let h = &s.histograms;
        let service = widen(Some(&h.service))?;
        // Older reports kept no busy time: the service times' sum is it,
        // within the histogram's precision.
        let busy = match s.busy_ns {
            Some(ns) => Duration::from_nanos(ns),
            None => Duration::from_nanos((service.mean() * service.len() as f64) as u64),
        };
        Ok(Stats {
            ops: s.units,
            rows: s.rows,
            missing: s.missing_rows,
            busy,
            latency: widen(Some(&h.latency))?,
            service,
            row_latency: widen(h.row_latency.as_ref())?,
            lag_total: Duration::from_nanos(
                s.lag_total_ns
                    .unwrap_or(s.lag_avg_ns.saturating_mul(s.units)),
            ),
            lag_max: Duration::from_nanos(s.lag_max_ns),
            late: s.late,
            skipped: s.skipped,
            errors: s.errors,
            retried: s.retried,
            retries: s.retries,
            retried_service: widen(h.retried_service.as_ref())?,
            retried_attempt: widen(h.retried_attempt.as_ref())?,
            reconnects: s.reconnects,
            failed_units: s.failed_units,
            conns: Default::default(),
            schedule_wait: Duration::from_nanos(s.schedule_wait_ns),
            pause_wait: Duration::from_nanos(s.pause_wait_ns),
        })
    }
}

/// Whether a file starting with `head` was written by this module.
pub fn is_ours(head: &str) -> bool {
    head.trim_start().starts_with('{') && head.contains("\"tool\": \"ysql-bench\"")
}

/// Encodes a histogram as base64 of its V2 compressed form.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| Error::run(format!("cannot encode a histogram: {e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// Decodes what [`encode_histogram`] made.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| Error::run(format!("a histogram is not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| Error::run(format!("cannot decode a histogram: {e:?}")))
}

/// Builds the report of a finished run.
pub fn build(plan: &RunPlan, target: &str, report: &RunReport) -> Result<JsonReport> {
    let (w, r) = (&plan.workload, &plan.run);
    let mut operations = Vec::new();
    let mut starts = report
        .cluster
        .iter()
        .flat_map(|c| c.starts.iter())
        .peekable();
    for op in &report.operations {
        let mut o = operation(op)?;
        // Starts are recorded in the order operations reached their first
        // unit; one that failed before has none.
        if let Some(st) = starts.next_if(|s| s.operation == op.spec.name) {
            o.start = Some(JsonStart {
                at_s: st.at_s,
                skew_ms: st.skew_ms,
            });
        }
        operations.push(o);
    }
    Ok(JsonReport {
        tool: "ysql-bench".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: humantime::format_rfc3339_seconds(report.started_at).to_string(),
        config: JsonConfig {
            target: match &plan.target {
                ConnTarget::Sandbox => format!("sandbox ({target})"),
                ConnTarget::Server(_) => target.to_string(),
            },
            operations: plan.operations.iter().map(|o| o.name.to_string()).collect(),
            threads: w.threads,
            rows: w.rows,
            batch_size: w.batch_size,
            fields_length: w.field_len,
            nontransactional: r.nontransactional,
            tablets: w.tablets,
            prepared: w.prepared,
            table: report
                .operations
                .first()
                .map(|o| o.table.clone())
                .unwrap_or_default(),
            seed: w.seed,
            key_distribution: w.keys.map(|k| k.name().to_string()),
            isolation: r.isolation.map(|i| i.sql().to_string()),
            retry_on: r.retry_on.clone(),
            max_tries: r.max_tries,
            time_s: r.run_time.as_secs_f64(),
            warmup_s: r.warmup.map(|d| d.as_secs_f64()),
            rate: r.rate,
            rate_distribution: format!("{:?}", r.rate_distribution).to_lowercase(),
            latency_limit_ms: r.latency_limit.map(|d| d.as_secs_f64() * 1e3),
            interval_s: r.interval().as_secs_f64(),
            load_balance: plan.balance.name().to_string(),
            reconnect: r.reconnect,
            sslmode: plan.tls.mode.name().to_string(),
        },
        server: JsonServer {
            flavor: format!("{:?}", report.server.flavor).to_lowercase(),
            version: report.server.version.clone(),
            encryption: report.server.encryption.clone(),
        },
        operations,
        cluster: report.cluster.as_ref().map(|c| JsonCluster {
            run_id: c.plan.run_id.clone(),
            clients: c.plan.clients,
            client_index: Some(c.plan.index),
            run_seed: c.plan.run_seed,
            merged: Vec::new(),
        }),
    })
}

fn operation(op: &OpResult) -> Result<JsonOperation> {
    let f = Figures::of(op);
    let types = op
        .types
        .iter()
        .map(|t| JsonType {
            name: t.name.to_string(),
            rates: Rates::of(&t.stats, op.wallclock),
            figures: t.stats.clone(),
            intervals: t.intervals.clone(),
        })
        .collect();
    Ok(JsonOperation {
        operation: op.spec.name.to_string(),
        table: op.table.clone(),
        workload: op.workload.clone(),
        succeeded: op.succeeded(),
        failure: op.failure.clone(),
        interrupted: op.interrupted,
        timed_out: op.timed_out,
        threads: op.threads,
        wallclock_s: op.wallclock.as_secs_f64(),
        db_time_s: f.db_time.as_secs_f64(),
        warmup_s: op.warmup.map(|d| d.as_secs_f64()),
        warmup_interrupted: op.warmup_cut,
        unit: op.spec.unit.to_string(),
        rates: Rates::of(&op.total, op.wallclock),
        figures: op.total.clone(),
        rate_target: op.rate.map(|r| r.per_second),
        thread_rows: op.thread_rows.clone(),
        intervals: op.intervals.clone(),
        types,
        statements: op
            .statements
            .iter()
            .map(|s| {
                Ok(JsonStatement {
                    name: s.name.to_string(),
                    count: s.count,
                    latency_ns: Percentiles::of(&s.latency),
                    histogram: encode_histogram(&s.latency)?,
                })
            })
            .collect::<Result<_>>()?,
        checks: op.checks.clone(),
        findings: op.findings.clone(),
        metrics: op
            .metrics
            .iter()
            .map(|m| (m.key.clone(), m.value))
            .collect(),
        interval_metrics: op.interval_metrics.clone(),
        hosts: super::conns::json_hosts(op),
        driver: op.driver.clone(),
        connect: super::conns::json_connect(op),
        server: op.server.clone(),
        start: None,
        clients: Vec::new(),
    })
}

/// Writes the report, pretty-printed.
pub fn write_json<W: Write>(w: W, report: &JsonReport) -> Result<()> {
    serde_json::to_writer_pretty(w, report)
        .map_err(|e| Error::run(format!("cannot write the JSON report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, record_ns};

    #[test]
    fn histograms_survive_the_round_trip() {
        let mut h = new_histogram();
        for v in [1_000u64, 2_500, 50_000, 50_000, 9_000_000_000] {
            record_ns(&mut h, v);
        }
        let back = decode_histogram(&encode_histogram(&h).unwrap()).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert!(decode_histogram("not base64!").is_err());
    }

    #[test]
    fn the_tool_recognises_its_own_json() {
        assert!(is_ours("{\n  \"tool\": \"ysql-bench\",\n  \"version\""));
        assert!(!is_ours("{\"tool\": \"other\"}"));
        assert!(!is_ours("hello"));
    }

    fn measured() -> Stats {
        let mut s = Stats::default();
        for (i, v) in [900u64, 1_200, 5_000, 70_000, 3_000_000]
            .into_iter()
            .enumerate()
        {
            let latency = std::time::Duration::from_nanos(v + 100 * i as u64);
            let service = std::time::Duration::from_nanos(v);
            s.record(
                crate::stats::Timing { latency, service },
                crate::workload::Outcome {
                    rows: 2,
                    missing: 1,
                },
            );
        }
        s.record_retried(
            std::time::Duration::from_micros(50),
            std::time::Duration::from_micros(20),
        );
        s.retried = 1;
        s.retries = 3;
        s.reconnects = 2;
        s.late = 1;
        s.schedule_wait = std::time::Duration::from_micros(1234);
        s.pause_wait = std::time::Duration::from_micros(56);
        s.record_error("40001", Some("ids 1..2".to_string()));
        s
    }

    fn same(a: &Stats, b: &Stats) {
        assert_eq!(
            (a.ops, a.rows, a.missing, a.busy, a.lag_total, a.lag_max),
            (b.ops, b.rows, b.missing, b.busy, b.lag_total, b.lag_max)
        );
        assert_eq!(
            (a.late, a.skipped, a.retried, a.retries),
            (b.late, b.skipped, b.retried, b.retries)
        );
        assert_eq!(
            (&a.errors, &a.failed_units, a.reconnects),
            (&b.errors, &b.failed_units, b.reconnects)
        );
        assert_eq!(
            (a.schedule_wait, a.pause_wait),
            (b.schedule_wait, b.pause_wait)
        );
        assert_eq!(a.latency, b.latency);
        assert_eq!(a.service, b.service);
        assert_eq!(a.row_latency, b.row_latency);
        assert_eq!(a.retried_service, b.retried_service);
        assert_eq!(a.retried_attempt, b.retried_attempt);
        assert_eq!(Percentiles::of(&a.attempt()), Percentiles::of(&b.attempt()));
    }

    #[test]
    fn stats_read_back_are_the_stats_written() {
        let s = measured();
        let text = serde_json::to_string(&s).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // The README's fields, derived ones included.
        assert_eq!(v["units"], 5);
        assert_eq!(v["failed"], 1);
        assert_eq!(v["missing_rows"], 5);
        assert_eq!(v["latency_ns"]["max"].as_u64(), Some(s.latency.max()));
        assert!(v["row_latency_ns"].is_object());
        assert!(v["histograms"]["retried_attempt"].is_string());
        let back: Stats = serde_json::from_str(&text).unwrap();
        same(&s, &back);
        // Two read back add up as the runs' own do (what merge does).
        let mut sum = back;
        sum.add(&serde_json::from_str(&text).unwrap());
        let mut twice = measured();
        twice.add(&measured());
        same(&sum, &twice);
    }

    #[test]
    fn a_report_written_before_busy_and_retried_histograms_still_reads() {
        let s = measured();
        let mut v = serde_json::to_value(&s).unwrap();
        let m = v.as_object_mut().unwrap();
        m.remove("busy_ns");
        m.remove("lag_total_ns");
        m.remove("schedule_wait_ns");
        m.remove("pause_wait_ns");
        let h = m["histograms"].as_object_mut().unwrap();
        h.remove("retried_service");
        h.remove("retried_attempt");
        let back: Stats = serde_json::from_value(v).unwrap();
        assert_eq!(back.ops, 5);
        assert_eq!(back.latency, s.latency);
        // The busy time from the service times, within HDR's precision.
        let (b, e) = (back.busy.as_nanos() as f64, s.busy.as_nanos() as f64);
        assert!((b - e).abs() / e < 0.002, "{b} vs {e}");
        assert!(back.retried_attempt.is_empty());
    }
}
