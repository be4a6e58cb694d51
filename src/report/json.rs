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
    /// Counts, rates, percentiles and histograms of all the operation's
    /// units.
    #[serde(flatten)]
    pub figures: JsonFigures,
    pub rate_target: Option<f64>,
    /// Connections made again after being lost.
    pub reconnects: u64,
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
    pub checks: Vec<crate::workload::Check>,
    /// The workload's own figures by key (TPC-C: tpmc, efficiency).
    #[serde(default)]
    pub metrics: std::collections::BTreeMap<String, f64>,
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
    pub figures: JsonFigures,
    pub intervals: Vec<IntervalFigures>,
}

/// What [`Stats`] holds, as the report shows it: for an operation and
/// for each of its transaction types alike.
#[derive(Debug, Serialize, Deserialize)]
pub struct JsonFigures {
    /// Timed units that succeeded: batches, files, calls or queries.
    pub units: u64,
    pub rows: u64,
    pub missing_rows: u64,
    pub failed: u64,
    /// Failed units by SQLSTATE (or client-side class).
    pub errors: BTreeMap<String, u64>,
    pub units_per_s: f64,
    pub rows_per_s: f64,
    /// Per unit, from when it was due (equal to service time without --rate).
    pub latency_ns: Percentiles,
    /// Per unit, from when it was sent.
    pub service_ns: Percentiles,
    /// Per unit, its successful try alone (equal to service_ns when
    /// nothing was retried).
    #[serde(default)]
    pub attempt_ns: Percentiles,
    /// Per row (unit latency / rows of the unit), for loads.
    pub row_latency_ns: Option<Percentiles>,
    pub lag_avg_ns: u64,
    pub lag_max_ns: u64,
    pub late: u64,
    pub skipped: u64,
    /// Units that needed retries, and the retries in all (--max-tries).
    pub retried: u64,
    pub retries: u64,
    /// The first failed units, e.g. "ids 400..600".
    pub failed_units: Vec<String>,
    /// Base64 of HdrHistogram V2 compressed encodings, in nanoseconds.
    pub histograms: JsonHistograms,
}

impl JsonFigures {
    /// The figures of `t` over `wall`; `per_row` for loads.
    pub fn of(t: &Stats, wall: Duration, per_row: bool) -> Result<JsonFigures> {
        let wall = wall.as_secs_f64();
        let per_s = |n: u64| if wall > 0.0 { n as f64 / wall } else { 0.0 };
        Ok(JsonFigures {
            units: t.ops,
            rows: t.rows,
            missing_rows: t.missing,
            failed: t.failed(),
            errors: t.errors.clone(),
            units_per_s: per_s(t.ops),
            rows_per_s: per_s(t.rows),
            latency_ns: Percentiles::of(&t.latency),
            service_ns: Percentiles::of(&t.service),
            attempt_ns: Percentiles::of(&t.attempt()),
            row_latency_ns: per_row.then(|| Percentiles::of(&t.row_latency)),
            lag_avg_ns: nanos(t.lag_total).checked_div(t.ops).unwrap_or(0),
            lag_max_ns: nanos(t.lag_max),
            late: t.late,
            skipped: t.skipped,
            retried: t.retried,
            retries: t.retries,
            failed_units: t.failed_units.clone(),
            histograms: JsonHistograms {
                latency: encode_histogram(&t.latency)?,
                service: encode_histogram(&t.service)?,
                row_latency: if per_row {
                    Some(encode_histogram(&t.row_latency)?)
                } else {
                    None
                },
            },
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct JsonHistograms {
    pub latency: String,
    pub service: String,
    /// Loads only, as `row_latency_ns`.
    #[serde(default)]
    pub row_latency: Option<String>,
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
    let load = op.spec.is_load();
    let mut types = Vec::with_capacity(op.types.len());
    for t in &op.types {
        types.push(JsonType {
            name: t.name.to_string(),
            figures: JsonFigures::of(&t.stats, op.wallclock, load)?,
            intervals: t.intervals.clone(),
        });
    }
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
        figures: JsonFigures::of(&op.total, op.wallclock, load)?,
        rate_target: op.rate.map(|r| r.per_second),
        reconnects: op.total.reconnects,
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
        metrics: op
            .metrics
            .iter()
            .map(|m| (m.key.clone(), m.value))
            .collect(),
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
}
