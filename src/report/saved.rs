//! Saved reports: `ysql-bench merge`, `show` and `compare` read `--json`
//! files back.
//!
//! `merge` makes one report of the clients of one run (`--clients`):
//! counts are summed, and percentiles come from the sum of the clients'
//! HDR histograms, so they are exact within HDR's precision, where adding
//! throughputs and taking the largest p99 (what is usually done) is not a
//! percentile of anything. The reports keep no histogram per interval, so
//! the merged intervals have exact counts, rates, min, mean and max, but no
//! percentiles (written as 0). Intervals are lined up on the database's
//! clock (each operation's `start.at_s`), not on the clients' clocks.
//!
//! The throughput of a merged operation is over the window all clients
//! shared (from the last client's start of measurement to the first
//! client's end), counted from the merged intervals that lie in it; when
//! no whole interval does, over the run's whole span.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use hdrhistogram::Histogram;

use super::json::{
    JsonClientShare, JsonCluster, JsonOperation, JsonReport, JsonStart, JsonType, Rates,
    decode_histogram, encode_histogram,
};
use crate::error::{Error, Result};
use crate::stats::{IntervalFigures, Percentiles, Stats};

/// Reads a `--json` report; anything else is a usage error naming the file.
pub fn load(path: &Path) -> Result<JsonReport> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    let report: JsonReport = serde_json::from_str(&text).map_err(|e| {
        Error::usage(format!(
            "{} is not a ysql-bench --json report: {e}",
            path.display()
        ))
    })?;
    if report.tool != "ysql-bench" {
        return Err(Error::usage(format!(
            "{} is not a ysql-bench --json report (its tool is '{}')",
            path.display(),
            report.tool
        )));
    }
    Ok(report)
}

/// The configuration fields that may differ between the clients of one
/// run: where each connected, and each client's own seed.
const PER_CLIENT: &[&str] = &["target", "seed"];

/// Why `b` cannot be merged with `a`, naming the first difference.
fn config_difference(a: &JsonReport, b: &JsonReport) -> Option<String> {
    let va = serde_json::to_value(&a.config).ok()?;
    let vb = serde_json::to_value(&b.config).ok()?;
    let (Some(ma), Some(mb)) = (va.as_object(), vb.as_object()) else {
        return None;
    };
    let keys: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    for k in keys {
        if PER_CLIENT.contains(&k.as_str()) {
            continue;
        }
        let (x, y) = (ma.get(k), mb.get(k));
        if x != y {
            let show =
                |v: Option<&serde_json::Value>| v.map_or("none".to_string(), |v| v.to_string());
            return Some(format!(
                "{k} is {} in one and {} in the other",
                show(x),
                show(y)
            ));
        }
    }
    let ops_a: Vec<&str> = a.operations.iter().map(|o| o.operation.as_str()).collect();
    let ops_b: Vec<&str> = b.operations.iter().map(|o| o.operation.as_str()).collect();
    if ops_a != ops_b {
        return Some(format!(
            "the operations that ran are {} in one and {} in the other",
            ops_a.join(","),
            ops_b.join(",")
        ));
    }
    match (&a.cluster, &b.cluster) {
        (Some(x), Some(y)) if x.run_id != y.run_id => Some(format!(
            "the run id is {} in one and {} in the other",
            x.run_id, y.run_id
        )),
        (Some(x), Some(y)) if x.clients != y.clients => Some(format!(
            "--clients is {} in one and {} in the other",
            x.clients, y.clients
        )),
        (Some(_), None) | (None, Some(_)) => {
            Some("one is a client of a --clients run and the other is not".to_string())
        }
        _ => None,
    }
}

/// Merges the reports of `paths` (in any order) into one; warnings (a
/// client missing) go to stderr, or are refused under `strict`.
pub fn merge_files(paths: &[std::path::PathBuf], strict: bool) -> Result<JsonReport> {
    if paths.is_empty() {
        return Err(Error::usage("merge needs at least one report"));
    }
    let mut reports = Vec::with_capacity(paths.len());
    for p in paths {
        reports.push((p.clone(), load(p)?));
    }
    for (p, r) in &reports[1..] {
        if let Some(why) = config_difference(&reports[0].1, r) {
            return Err(Error::usage(format!(
                "{} and {} are not of one run: {why}",
                reports[0].0.display(),
                p.display()
            )));
        }
    }
    let mut seen: BTreeMap<usize, &Path> = BTreeMap::new();
    for (p, r) in &reports {
        if let Some(i) = r.cluster.as_ref().and_then(|c| c.client_index)
            && let Some(before) = seen.insert(i, p)
        {
            return Err(Error::usage(format!(
                "{} and {} are both client {i}: give each client's report once",
                before.display(),
                p.display()
            )));
        }
    }
    if let Some(c) = &reports[0].1.cluster {
        let missing: Vec<String> = (0..c.clients)
            .filter(|i| !seen.contains_key(i))
            .map(|i| i.to_string())
            .collect();
        if !missing.is_empty() {
            let msg = format!(
                "run {}: the report(s) of client(s) {} of {} are missing",
                c.run_id,
                missing.join(", "),
                c.clients
            );
            if strict {
                return Err(Error::usage(format!("{msg} (--strict)")));
            }
            crate::say!("warning: {msg}; the merged figures are of the others only");
        }
    }
    reports.sort_by_key(|(_, r)| r.cluster.as_ref().and_then(|c| c.client_index));
    let parts: Vec<JsonReport> = reports.into_iter().map(|(_, r)| r).collect();
    merge(parts)
}

/// One report of several clients' reports, already checked to be of one
/// run, in client order.
pub fn merge(mut parts: Vec<JsonReport>) -> Result<JsonReport> {
    if parts.is_empty() {
        return Err(Error::usage("merge needs at least one report"));
    }
    let n_ops = parts[0].operations.len();
    if parts.iter().any(|r| r.operations.len() != n_ops) {
        return Err(Error::usage(
            "the reports ran different numbers of operations: they are not of one run",
        ));
    }
    let mut operations = Vec::with_capacity(n_ops);
    for i in 0..n_ops {
        let ops: Vec<&JsonOperation> = parts.iter().map(|r| &r.operations[i]).collect();
        let indexes: Vec<usize> = parts
            .iter()
            .enumerate()
            .map(|(k, r)| r.cluster.as_ref().and_then(|c| c.client_index).unwrap_or(k))
            .collect();
        operations.push(merge_operation(&ops, &indexes)?);
    }
    let first = parts.remove(0);
    let cluster = first.cluster.as_ref().map(|c| JsonCluster {
        run_id: c.run_id.clone(),
        clients: c.clients,
        client_index: None,
        run_seed: c.run_seed,
        merged: std::iter::once(c.client_index)
            .chain(
                parts
                    .iter()
                    .map(|r| r.cluster.as_ref().and_then(|c| c.client_index)),
            )
            .flatten()
            .collect(),
    });
    Ok(JsonReport {
        operations,
        cluster,
        ..first
    })
}

/// Where an operation's measurement started and ended, in seconds on the
/// database's clock (or from a common zero without a start).
fn window(o: &JsonOperation) -> (f64, f64) {
    let at = o.start.as_ref().map_or(0.0, |s| s.at_s) + o.warmup_s.unwrap_or(0.0);
    (at, at + o.wallclock_s)
}

fn merge_operation(ops: &[&JsonOperation], indexes: &[usize]) -> Result<JsonOperation> {
    let first = ops[0];
    let windows: Vec<(f64, f64)> = ops.iter().map(|o| window(o)).collect();
    let begin = windows.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
    let end = windows
        .iter()
        .map(|w| w.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let shared = (
        windows
            .iter()
            .map(|w| w.0)
            .fold(f64::NEG_INFINITY, f64::max),
        windows.iter().map(|w| w.1).fold(f64::INFINITY, f64::min),
    );
    let span = (end - begin).max(0.0);
    let interval_s = ops
        .iter()
        .flat_map(|o| o.intervals.iter())
        .map(|f| f.seconds)
        .fold(0.0, f64::max);
    let lists: Vec<(&[IntervalFigures], f64)> = ops
        .iter()
        .zip(&windows)
        .map(|(o, w)| (o.intervals.as_slice(), w.0 - begin))
        .collect();
    let intervals = merge_intervals(&lists, interval_s);
    let (rates, figures) = merge_figures(
        &ops.iter()
            .map(|o| (&o.figures, o.rates))
            .collect::<Vec<_>>(),
        &intervals,
        (shared.0 - begin, shared.1 - begin),
        span,
    );
    let mut types = Vec::new();
    for (t, ty) in first.types.iter().enumerate() {
        let same: Vec<&JsonType> = ops.iter().filter_map(|o| o.types.get(t)).collect();
        let lists: Vec<(&[IntervalFigures], f64)> = same
            .iter()
            .zip(&windows)
            .map(|(x, w)| (x.intervals.as_slice(), w.0 - begin))
            .collect();
        let intervals = merge_intervals(&lists, interval_s);
        let (rates, figures) = merge_figures(
            &same
                .iter()
                .map(|x| (&x.figures, x.rates))
                .collect::<Vec<_>>(),
            &intervals,
            (shared.0 - begin, shared.1 - begin),
            span,
        );
        types.push(JsonType {
            name: ty.name.clone(),
            rates,
            figures,
            intervals,
        });
    }
    let mut statements: Vec<super::json::JsonStatement> = Vec::new();
    for st in ops.iter().flat_map(|o| o.statements.iter()) {
        let h = decode_histogram(&st.histogram)?;
        match statements.iter_mut().find(|s| s.name == st.name) {
            Some(s) => {
                let mut sum = crate::stats::new_histogram();
                add(&mut sum, &decode_histogram(&s.histogram)?)?;
                add(&mut sum, &h)?;
                s.count += st.count;
                s.latency_ns = Percentiles::of(&sum);
                s.histogram = encode_histogram(&sum)?;
            }
            None => statements.push(super::json::JsonStatement {
                name: st.name.clone(),
                count: st.count,
                latency_ns: Percentiles::of(&h),
                histogram: st.histogram.clone(),
            }),
        }
    }
    let clients = ops
        .iter()
        .zip(indexes)
        .map(|(o, &i)| JsonClientShare {
            client: i,
            skew_ms: o.start.as_ref().map(|s| s.skew_ms),
            units: o.figures.ops,
            units_per_s: o.rates.units_per_s,
            wallclock_s: o.wallclock_s,
        })
        .collect();
    Ok(JsonOperation {
        // Every client snapshots the same server, so their server figures
        // overlap and do not add up: a merged report leaves them out (each
        // client's report keeps its own).
        server: None,
        // A workload's own figures (tpmC) are each client's: rates of one
        // shared window add up, the rest is not summed (see README).
        metrics: merged_metrics(ops, &types),
        interval_metrics: merged_interval_metrics(ops, &types),
        operation: first.operation.clone(),
        table: first.table.clone(),
        workload: first.workload.clone(),
        succeeded: ops.iter().all(|o| o.succeeded),
        failure: ops.iter().find_map(|o| o.failure.clone()),
        interrupted: ops.iter().any(|o| o.interrupted),
        timed_out: ops.iter().any(|o| o.timed_out),
        threads: ops.iter().map(|o| o.threads).sum(),
        wallclock_s: span,
        db_time_s: ops.iter().map(|o| o.db_time_s).sum(),
        warmup_s: first.warmup_s,
        warmup_interrupted: ops.iter().any(|o| o.warmup_interrupted),
        unit: first.unit.clone(),
        rates,
        figures,
        rate_target: ops.iter().map(|o| o.rate_target).sum::<Option<f64>>(),
        driver: first.driver.clone(),
        thread_rows: ops
            .iter()
            .flat_map(|o| o.thread_rows.iter().copied())
            .collect(),
        intervals,
        types,
        statements,
        checks: first.checks.clone(),
        // Only the leader cleans up: its lines are the run's.
        findings: ops
            .iter()
            .find(|o| !o.findings.is_empty())
            .map(|o| o.findings.clone())
            .unwrap_or_default(),
        // Per host and connect figures are each client's own.
        hosts: if ops.len() == 1 {
            first.hosts.clone()
        } else {
            Vec::new()
        },
        connect: if ops.len() == 1 {
            first.connect.clone()
        } else {
            None
        },
        start: first.start.as_ref().map(|s| JsonStart {
            at_s: ops
                .iter()
                .filter_map(|o| o.start.as_ref().map(|s| s.at_s))
                .fold(s.at_s, f64::min),
            // The client furthest from the common instant.
            skew_ms: ops
                .iter()
                .filter_map(|o| o.start.as_ref().map(|s| s.skew_ms))
                .fold(0.0, |m: f64, x| if x.abs() > m.abs() { x } else { m }),
        }),
        clients,
    })
}

fn add(sum: &mut Histogram<u64>, h: &Histogram<u64>) -> Result<()> {
    sum.add(h)
        .map_err(|e| Error::run(format!("cannot add the histograms: {e:?}")))
}

/// The clients' figures added up ([`Stats::add`]: counts summed,
/// histograms added, so percentiles of the sum are exact), and their rate
/// over the shared window (`shared`, seconds from the first start) when
/// whole intervals lie in it, else over `span`.
fn merge_figures(
    all: &[(&Stats, Rates)],
    intervals: &[IntervalFigures],
    shared: (f64, f64),
    span: f64,
) -> (Rates, Stats) {
    let mut sum = Stats::default();
    for (f, _) in all {
        sum.add(f);
    }
    // One report: its own rates (the same window).
    if let [(_, rates)] = all {
        return (*rates, sum);
    }
    let inside: Vec<&IntervalFigures> = intervals
        .iter()
        .filter(|f| f.end_s - f.seconds >= shared.0 - 1e-6 && f.end_s <= shared.1 + 1e-6)
        .collect();
    let secs: f64 = inside.iter().map(|f| f.seconds).sum();
    let rates = if secs > 0.0 {
        Rates::over(
            inside.iter().map(|f| f.ops).sum(),
            inside.iter().map(|f| f.rows).sum(),
            secs,
        )
    } else {
        Rates::over(sum.ops, sum.rows, span)
    };
    (rates, sum)
}

/// Lines the clients' intervals up on one clock: each list with the
/// offset of its start from the first client's, binned by the interval
/// length. Counts are summed; min, mean and max are exact; percentiles
/// are not known (0).
fn merge_intervals(lists: &[(&[IntervalFigures], f64)], interval_s: f64) -> Vec<IntervalFigures> {
    if lists.len() == 1 {
        return lists[0].0.to_vec();
    }
    if interval_s <= 0.0 {
        return Vec::new();
    }
    let mut bins: BTreeMap<u64, IntervalFigures> = BTreeMap::new();
    for (list, offset) in lists {
        for f in list.iter() {
            let end = f.end_s + offset;
            let k = (end / interval_s).ceil().max(1.0) as u64;
            let b = bins.entry(k).or_insert_with(|| IntervalFigures {
                index: k - 1,
                end_s: k as f64 * interval_s,
                seconds: interval_s,
                ops: 0,
                rows: 0,
                errors: 0,
                skipped: 0,
                retries: 0,
                missing: 0,
                ops_per_s: 0.0,
                rows_per_s: 0.0,
                latency: Percentiles {
                    min: u64::MAX,
                    ..Percentiles::default()
                },
                lag_avg_ns: 0,
                lag_max_ns: 0,
            });
            let before = b.ops;
            b.ops += f.ops;
            b.rows += f.rows;
            b.errors += f.errors;
            b.skipped += f.skipped;
            b.retries += f.retries;
            b.missing += f.missing;
            if f.ops > 0 {
                b.latency.min = b.latency.min.min(f.latency.min);
                b.latency.max = b.latency.max.max(f.latency.max);
                b.latency.mean =
                    (b.latency.mean * before as f64 + f.latency.mean * f.ops as f64) / b.ops as f64;
                b.lag_avg_ns = ((b.lag_avg_ns as f64 * before as f64
                    + f.lag_avg_ns as f64 * f.ops as f64)
                    / b.ops as f64) as u64;
            }
            b.lag_max_ns = b.lag_max_ns.max(f.lag_max_ns);
        }
    }
    bins.into_values()
        .map(|mut b| {
            if b.latency.min == u64::MAX {
                b.latency.min = 0;
            }
            b.ops_per_s = b.ops as f64 / b.seconds;
            b.rows_per_s = b.rows as f64 / b.seconds;
            b
        })
        .collect()
}

/// The first line of `merge --csv`.
const INTERVALS_HEADER: &str = "operation,interval,end_s,seconds,ops,rows,errors,ops_per_s,rows_per_s,latency_min_ns,latency_mean_ns,latency_max_ns,tpmc,efficiency";

/// Whether a file starting with `head` is a CSV the tool wrote, by
/// `merge --csv` or by a run's `--csv`: one `merge --csv` may overwrite.
fn is_intervals_csv(head: &str) -> bool {
    head.starts_with("operation,interval,end_s,") || super::csv::is_ours(head)
}

/// Writes a merged report's intervals as CSV, one row per interval per
/// operation; `tpmc` and `efficiency` are TPC-C's per interval (empty for
/// other operations).
pub fn write_intervals_csv(w: &mut dyn Write, r: &JsonReport) -> std::io::Result<()> {
    writeln!(w, "{INTERVALS_HEADER}")?;
    for o in &r.operations {
        for (i, f) in o.intervals.iter().enumerate() {
            let [tpmc, efficiency] = [("tpmc", 1), ("efficiency", 4)].map(|(k, places)| {
                o.interval_metrics
                    .get(k)
                    .and_then(|v| v.get(i))
                    .map(|v| format!("{v:.places$}"))
                    .unwrap_or_default()
            });
            writeln!(
                w,
                "{},{},{:.3},{:.3},{},{},{},{:.3},{:.3},{},{:.0},{},{tpmc},{efficiency}",
                o.operation,
                f.index,
                f.end_s,
                f.seconds,
                f.ops,
                f.rows,
                f.errors,
                f.ops_per_s,
                f.rows_per_s,
                f.latency.min,
                f.latency.mean,
                f.latency.max
            )?;
        }
    }
    Ok(())
}

/// A workload figure: whole numbers as they are, others to 4 places.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// Nanoseconds as the summary shows them.
pub fn ns(v: u64) -> String {
    let v = v as f64;
    if v >= 1e9 {
        format!("{:.3} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.3} ms", v / 1e6)
    } else {
        format!("{:.3} us", v / 1e3)
    }
}

/// `ysql-bench show`: a saved report's summary, and with `histogram` each
/// operation's latency histogram, its rows so spaced.
pub fn write_show(
    w: &mut dyn Write,
    r: &JsonReport,
    histogram: Option<super::histogram::Scale>,
) -> Result<()> {
    let io = |e| Error::io("cannot write the summary", e);
    writeln!(w, "{:<22}: {}", "report of", r.started_at).map_err(io)?;
    writeln!(w, "{:<22}: {}", "target", r.config.target).map_err(io)?;
    writeln!(
        w,
        "{:<22}: {} {}",
        "server", r.server.flavor, r.server.version
    )
    .map_err(io)?;
    if let Some(c) = &r.cluster {
        let who = match c.client_index {
            Some(i) => format!("client {i} of {}", c.clients),
            None => format!("merged from clients {:?} of {}", c.merged, c.clients),
        };
        writeln!(w, "{:<22}: {} ({who})", "run", c.run_id).map_err(io)?;
    }
    writeln!(w, "{:<22}: {}", "seed", r.config.seed).map_err(io)?;
    for o in &r.operations {
        writeln!(w).map_err(io)?;
        writeln!(w, "{:<22}: {}", "operation", o.operation).map_err(io)?;
        if !o.workload.is_empty() {
            writeln!(w, "{:<22}: {}", "workload", o.workload).map_err(io)?;
        }
        writeln!(
            w,
            "{:<22}: {} ({} threads, {:.3} s)",
            "status",
            if o.succeeded {
                "ok".to_string()
            } else {
                format!("failed: {}", o.failure.as_deref().unwrap_or("units failed"))
            },
            o.threads,
            o.wallclock_s
        )
        .map_err(io)?;
        write_figures(w, &o.unit, o.rates, &o.figures).map_err(io)?;
        if o.types.len() > 1 {
            for t in &o.types {
                writeln!(w, "[{}]", t.name).map_err(io)?;
                write_figures(w, &t.name, t.rates, &t.figures).map_err(io)?;
            }
        }
        // The workload's own figures (TPC-C: tpmc, efficiency as a
        // fraction, p90_limits_met 1 or 0), by their JSON keys.
        for (k, v) in &o.metrics {
            writeln!(w, "{k:<22}: {}", number(*v)).map_err(io)?;
        }
        for f in &o.findings {
            writeln!(w, "{:<22}: {}", f.label, f.text).map_err(io)?;
        }
        if let Some(s) = &o.start {
            writeln!(
                w,
                "{:<22}: {:.3} ms from the common start",
                "start skew", s.skew_ms
            )
            .map_err(io)?;
        }
        for c in &o.clients {
            writeln!(
                w,
                "{:<22}: {} units ({:.1}/s) over {:.3} s, start skew {}",
                format!("client {}", c.client),
                c.units,
                c.units_per_s,
                c.wallclock_s,
                c.skew_ms
                    .map_or("unknown".to_string(), |s| format!("{s:.3} ms"))
            )
            .map_err(io)?;
        }
        if let Some(scale) = histogram
            && o.figures.ops > 0
        {
            writeln!(w, "histogram is per {}", o.unit).map_err(io)?;
            let h = &o.figures.latency;
            super::histogram::write_histogram(w, h, 10, scale).map_err(io)?;
        }
    }
    Ok(())
}

fn write_figures(w: &mut dyn Write, unit: &str, r: Rates, f: &Stats) -> std::io::Result<()> {
    writeln!(
        w,
        "{:<22}: {} ({:.1}/s), {} rows ({:.1}/s), {} failed",
        format!("units ({unit})"),
        f.ops,
        r.units_per_s,
        f.rows,
        r.rows_per_s,
        f.failed()
    )?;
    let p = &Percentiles::of(&f.latency);
    writeln!(
        w,
        "{:<22}: min {}, p50 {}, p90 {}, p95 {}, p99 {}, p99.9 {}, max {}",
        format!("latency per {unit}"),
        ns(p.min),
        ns(p.p50),
        ns(p.p90),
        ns(p.p95),
        ns(p.p99),
        ns(p.p999),
        ns(p.max)
    )
}

/// Runs `merge`, `show` or `compare`, writing to `out`; returns the exit
/// code. Errors are printed here, once: bad input (a file that is not a
/// report, reports of different runs) is exit 2.
pub fn run_command(command: &crate::cli::Command, out: &mut dyn Write) -> i32 {
    match run_inner(command, out) {
        Ok(()) => crate::error::EXIT_OK,
        // A closed pipe (`| head`) is the reader's choice.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            crate::error::EXIT_OK
        }
        Err(e) => {
            crate::say!("error: {e}");
            e.exit_code()
        }
    }
}

/// The histogram's row spacing `--histogram-scale` asks for.
fn scale(arg: crate::cli::HistogramScaleArg) -> super::histogram::Scale {
    match arg {
        crate::cli::HistogramScaleArg::Linear => super::histogram::Scale::Linear,
        crate::cli::HistogramScaleArg::Log => super::histogram::Scale::Log,
    }
}

fn run_inner(command: &crate::cli::Command, out: &mut dyn Write) -> Result<()> {
    use crate::cli::Command;
    match command {
        Command::Merge {
            reports,
            json,
            csv,
            print_histogram,
            histogram_scale,
            strict,
        } => {
            // The outputs are tried before the reports are read: a
            // merge of many large reports should not end in "cannot
            // create".
            let json_file = json.as_deref().filter(|p| *p != Path::new("-"));
            crate::config::check_distinct_outputs(&[
                ("--json", json_file),
                ("--csv", csv.as_deref()),
            ])?;
            if let Some(p) = json_file {
                crate::config::check_output_file(p, "--json", super::json::is_ours)?;
            }
            if let Some(p) = csv {
                crate::config::check_output_file(p, "--csv", is_intervals_csv)?;
            }
            let merged = merge_files(reports, *strict)?;
            match json.as_deref() {
                Some(p) if p == Path::new("-") => super::json::write_json(&mut *out, &merged)?,
                Some(p) => {
                    let f = std::fs::File::create(p)
                        .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
                    let mut w = std::io::BufWriter::new(f);
                    super::json::write_json(&mut w, &merged)?;
                    // Flushed here, not on drop, where an error (a full
                    // disk) would go unseen and leave a cut report.
                    w.flush()
                        .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
                    crate::say!(">> wrote {}", p.display());
                }
                None => {}
            }
            if let Some(p) = csv {
                let f = std::fs::File::create(p)
                    .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
                let mut w = std::io::BufWriter::new(f);
                write_intervals_csv(&mut w, &merged)
                    .and_then(|()| w.flush())
                    .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
                crate::say!(">> wrote {}", p.display());
            }
            if json.as_deref() != Some(Path::new("-")) {
                write_show(
                    out,
                    &merged,
                    print_histogram.then(|| scale(*histogram_scale)),
                )?;
            }
            Ok(())
        }
        Command::Show {
            report,
            print_histogram,
            histogram_scale,
        } => write_show(
            out,
            &load(report)?,
            print_histogram.then(|| scale(*histogram_scale)),
        ),
        Command::Compare { base, new } => {
            let (b, n) = (load(base)?, load(new)?);
            super::compare::write_compare(out, &b, &n)
        }
        Command::Completions { .. } | Command::Man => Ok(()),
    }
}

/// The workload figures of a merged operation: rates (`tpmc`, and any
/// `*_per_s`), counts (`new_order_rollbacks`, `*_bytes`) and the warehouses the
/// terminals drove add up over clients that shared one window; TPC-C's
/// efficiency is then recomputed over all clients' warehouses, and
/// whether the 90th percentile limits were met from the merged
/// histograms of each transaction type (`types`).
fn merged_metrics(
    ops: &[&JsonOperation],
    types: &[JsonType],
) -> std::collections::BTreeMap<String, f64> {
    use crate::workload::tpcc::{MAX_TPMC_PER_WAREHOUSE, P90_LIMITS_S};
    let mut out = std::collections::BTreeMap::new();
    for op in ops {
        for (k, v) in &op.metrics {
            if k == "tpmc"
                || k == "warehouses"
                || k.ends_with("_per_s")
                || k.ends_with("_bytes")
                || k.ends_with("rollbacks")
            {
                *out.entry(k.clone()).or_insert(0.0) += v;
            }
        }
    }
    if let (Some(tpmc), Some(&w)) = (out.get("tpmc"), out.get("warehouses"))
        && w > 0.0
    {
        let efficiency = tpmc / (MAX_TPMC_PER_WAREHOUSE * w);
        out.insert("efficiency".to_string(), efficiency);
    }
    if ops.iter().any(|o| o.metrics.contains_key("p90_limits_met")) {
        let met = types.iter().zip(P90_LIMITS_S).all(|(t, limit)| {
            t.figures.ops == 0 || t.figures.latency.value_at_quantile(0.90) <= limit * 1_000_000_000
        });
        out.insert("p90_limits_met".to_string(), if met { 1.0 } else { 0.0 });
    }
    out
}

/// TPC-C's tpmC and efficiency per merged interval, from the merged
/// intervals of each type (committed New-Orders are the New-Order units
/// less the rolled back) over all clients' warehouses; empty for other
/// workloads.
fn merged_interval_metrics(
    ops: &[&JsonOperation],
    types: &[JsonType],
) -> std::collections::BTreeMap<String, Vec<f64>> {
    let mut out: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let warehouses: f64 = ops.iter().filter_map(|o| o.metrics.get("warehouses")).sum();
    if warehouses <= 0.0 {
        return out;
    }
    let n = types.first().map_or(0, |t| t.intervals.len());
    for i in 0..n {
        let one: Vec<IntervalFigures> = types
            .iter()
            .map(|t| t.intervals.get(i).cloned().unwrap_or_default())
            .collect();
        for m in crate::workload::tpcc::interval_tpmc(&one, warehouses as u32) {
            out.entry(m.key).or_default().push(m.value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(index: u64, ops: u64, max: u64) -> IntervalFigures {
        IntervalFigures {
            index,
            end_s: (index + 1) as f64,
            seconds: 1.0,
            ops,
            rows: ops,
            errors: 0,
            skipped: 0,
            retries: 0,
            missing: 0,
            ops_per_s: ops as f64,
            rows_per_s: ops as f64,
            latency: Percentiles {
                min: 10,
                mean: 20.0,
                p50: 20,
                max,
                ..Percentiles::default()
            },
            lag_avg_ns: 0,
            lag_max_ns: 0,
        }
    }

    #[test]
    fn intervals_line_up_on_the_common_clock_with_exact_counts() {
        let a = [interval(0, 100, 50), interval(1, 100, 60)];
        // The second client started half an interval later: its first
        // interval ends at 1.5 s on the common clock, so in the second bin.
        let b = [interval(0, 10, 90), interval(1, 10, 30)];
        let m = merge_intervals(&[(&a, 0.0), (&b, 0.4)], 1.0);
        let ops: Vec<u64> = m.iter().map(|f| f.ops).collect();
        assert_eq!(ops, vec![100, 110, 10]);
        assert_eq!(m[1].latency.max, 90);
        assert_eq!(m[1].latency.min, 10);
        // Percentiles per merged interval are not known.
        assert_eq!(m[1].latency.p50, 0);
        assert_eq!(m.iter().map(|f| f.ops).sum::<u64>(), 220);
        // One client: its own intervals, percentiles and all.
        assert_eq!(merge_intervals(&[(&a, 0.0)], 1.0), a.to_vec());
    }
}
