//! `--csv FILE` and `merge --csv FILE`: one row per interval per
//! operation, for spreadsheets and plotting tools. Latencies are in
//! microseconds, measured from when each unit was due. A merged report
//! has the same columns: its intervals' percentiles are not known (the
//! clients' interval histograms are not kept), so those cells are empty
//! rather than a made-up 0, and it has no server columns (each client's
//! server figures overlap). A workload's own figures per interval
//! (TPC-C's tpmC) come next, in columns the caller lists
//! ([`FigureColumn`]): this module names none of them. When the nodes of
//! a YugabyteDB cluster were discovered, the units of each interval per
//! zone come last (`units_zone_cloud.region.zone`).

use std::io::Write;

use crate::error::{Error, Result};
use crate::stats::outcome::FigureColumn;
use crate::stats::record::OpRecord;

/// The columns every row has; also how the tool recognises its own file
/// (the header is these, then the workloads' figures). `type` is
/// the transaction type, `all` for the operation as a whole; it, `retries`
/// and the server's columns come last so that the columns of earlier
/// versions keep their places. The server's columns (commits, rollbacks and wait events
/// of the interval, see [`super::server::csv_columns`]) are filled on the
/// `all` rows only: the server does not know the transaction types.
pub const COLUMNS: [&str; 22] = [
    "operation",
    "elapsed_s",
    "interval_s",
    "count",
    "rows",
    "rate",
    "rows_per_s",
    "min_us",
    "mean_us",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p999_us",
    "max_us",
    "errors",
    "skipped",
    "type",
    "retries",
    "server_commits",
    "server_rollbacks",
    "server_waits",
];

/// Whether a file starting with `head` was written by this module (also
/// by an earlier version, whose header lacked p90_us or skipped).
pub fn is_ours(head: &str) -> bool {
    head.starts_with(&COLUMNS[..7].join(","))
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// Writes the intervals of every operation: per interval one row for the
/// operation (`all`), and for a mix one per transaction type before it.
/// `figures`: the workloads' figures per interval, the last columns, each
/// filled on the `all` rows of an operation that keeps it (from its
/// `interval_metrics` of that key) and empty otherwise.
pub fn write_csv<W: Write>(w: W, ops: &[OpRecord], figures: &[FigureColumn]) -> Result<()> {
    let fail = |e: csv::Error| Error::run(format!("cannot write the CSV report: {e}"));
    let mut out = csv::Writer::from_writer(w);
    // YugabyteDB zones (discovered nodes): one column of units per zone,
    // after the workloads' figures, in the order the zones first appear.
    let mut zones: Vec<&str> = Vec::new();
    for z in ops.iter().flat_map(|o| o.zones.iter()) {
        if !zones.contains(&z.zone.as_str()) {
            zones.push(&z.zone);
        }
    }
    let zone_heads = zones.iter().map(|z| format!("units_zone_{z}"));
    let header = COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(figures.iter().map(|c| c.key.to_string()))
        .chain(zone_heads);
    out.write_record(header).map_err(fail)?;
    let none = vec![String::new(); figures.len() + zones.len()];
    for op in ops {
        for (i, all) in op.intervals.iter().enumerate() {
            let types = op
                .types
                .iter()
                .filter(|_| op.is_mix())
                .filter_map(|t| t.intervals.get(i).map(|f| (t.name.as_str(), f)));
            for (ty, f) in types {
                let cells = row(&op.operation, ty, f, Default::default());
                out.write_record(cells.iter().chain(&none)).map_err(fail)?;
            }
            let server = super::server::csv_columns(op, i);
            let workload = figures.iter().map(|c| {
                op.interval_metrics
                    .get(c.key)
                    .and_then(|v| v.get(i))
                    .map(|v| format!("{v:.*}", c.decimals))
                    .unwrap_or_default()
            });
            let by_zone = zones.iter().map(|z| {
                if op.zones.is_empty() {
                    String::new()
                } else {
                    all.zone_units.get(*z).copied().unwrap_or(0).to_string()
                }
            });
            let cells = row(&op.operation, "all", all, server);
            out.write_record(cells.into_iter().chain(workload).chain(by_zone))
                .map_err(fail)?;
        }
    }
    out.flush()
        .map_err(|e| Error::io("cannot write the CSV report", e))
}

/// One row of the report, but for the workloads' figures.
fn row(
    operation: &str,
    ty: &str,
    f: &crate::stats::IntervalFigures,
    server: [String; 3],
) -> [String; 22] {
    let l = &f.latency;
    // A recorded latency is at least 1 ns, so a p50 of 0 beside a max is
    // a merged interval whose percentiles are not known: left empty.
    let known = !(l.p50 == 0 && l.max > 0);
    let pct = |ns: u64| if known { us(ns) } else { String::new() };
    let [commits, rollbacks, waits] = server;
    [
        operation.to_string(),
        format!("{:.3}", f.end_s),
        format!("{:.3}", f.seconds),
        f.ops.to_string(),
        f.rows.to_string(),
        format!("{:.1}", f.ops_per_s),
        format!("{:.1}", f.rows_per_s),
        us(l.min),
        format!("{:.1}", l.mean / 1000.0),
        pct(l.p50),
        pct(l.p90),
        pct(l.p95),
        pct(l.p99),
        pct(l.p999),
        us(l.max),
        f.errors.to_string(),
        f.skipped.to_string(),
        ty.to_string(),
        f.retries.to_string(),
        commits,
        rollbacks,
        waits,
    ]
}
