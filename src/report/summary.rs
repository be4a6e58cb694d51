//! The text summary of an operation, in the original tool's layout, from
//! its record: the same for a live run and a saved one.
//!
//! [`Figures`] holds the arithmetic (pure, unit-tested); [`write_summary`]
//! lays it out. Loads report per row (`wallclock tm/row`, `db tm/row`,
//! rows/s); select and update report per query. `tot db time` is the sum
//! of all workers' time inside timed units, so with T threads it can reach
//! T x 100% of the wallclock: that means every thread was always waiting on
//! the database.

use std::io::{self, Write};
use std::time::Duration;

use crate::stats::Percentiles;
use crate::stats::record::OpRecord;

/// The derived numbers of an operation's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub wallclock: Duration,
    pub db_time: Duration,
    /// db time as a percentage of wallclock (up to threads x 100).
    pub db_pct: f64,
    pub units: u64,
    pub rows: u64,
    /// Average rows (loads) or queries per thread.
    pub per_thread_avg: f64,
    pub per_thread_min: u64,
    pub per_thread_max: u64,
    /// Wallclock divided by rows (loads) or queries.
    pub wallclock_per_item: Duration,
    /// Database time divided by rows (loads) or queries.
    pub db_per_item: Duration,
    /// Rows/s (loads) or queries/s: the record's own rate (over the
    /// wallclock for one client's run, over the window all clients shared
    /// for a merged one), never made again here.
    pub rate: f64,
}

impl Figures {
    pub fn of(r: &OpRecord) -> Figures {
        let items = r.items();
        let per_thread: Vec<u64> = if r.load {
            r.thread_rows.clone()
        } else {
            // Queries per thread are not kept per thread; spread evenly.
            vec![]
        };
        let threads = r.threads.max(1) as f64;
        let wall = r.wallclock_s;
        Figures {
            wallclock: r.wallclock(),
            db_time: r.figures.busy,
            db_pct: if wall > 0.0 {
                100.0 * r.figures.busy.as_secs_f64() / wall
            } else {
                0.0
            },
            units: r.figures.ops,
            rows: r.figures.rows,
            per_thread_avg: items as f64 / threads,
            per_thread_min: per_thread.iter().copied().min().unwrap_or(0),
            per_thread_max: per_thread.iter().copied().max().unwrap_or(0),
            wallclock_per_item: per(r.wallclock(), items),
            db_per_item: per(r.figures.busy, items),
            rate: if r.load {
                r.rates.rows_per_s
            } else {
                r.rates.units_per_s
            },
        }
    }
}

fn per(d: Duration, n: u64) -> Duration {
    if n == 0 {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(d.as_secs_f64() / n as f64)
    }
}

/// A duration with a unit that keeps three or four significant digits.
pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} us", s * 1e6)
    }
}

const W: usize = 22;

fn line(w: &mut dyn Write, label: &str, value: impl std::fmt::Display) -> io::Result<()> {
    writeln!(w, "{label:<W$}: {value}")
}

/// `min .. max` of a latency histogram (nanoseconds) on one line.
pub fn percentile_line(h: &hdrhistogram::Histogram<u64>) -> String {
    let p = Percentiles::of(h);
    let d = Duration::from_nanos;
    format!(
        "min {}, p50 {}, p90 {}, p95 {}, p99 {}, p99.9 {}, max {}",
        human(d(p.min)),
        human(d(p.p50)),
        human(d(p.p90)),
        human(d(p.p95)),
        human(d(p.p99)),
        human(d(p.p999)),
        human(d(p.max))
    )
}

/// A warning when a rate-limited operation fell clearly short of its
/// target or ran well behind its schedule.
pub fn keep_up_note(r: &OpRecord) -> Option<String> {
    let target = r.rate_target?;
    let wall = r.wallclock_s;
    if wall <= 0.0 {
        return None;
    }
    let achieved = r.rates.units_per_s;
    let pct = 100.0 * achieved / target;
    let lag = human(r.figures.lag_max);
    if achieved < 0.95 * target {
        Some(format!(
            "the server (or client) did not keep up with the rate: {pct:.0}% of the target achieved, schedule lag up to {lag}"
        ))
    } else if r.figures.lag_max > Duration::from_secs(1) {
        Some(format!(
            "the units fell behind their schedule by up to {lag} at some point (a stall?), then caught up: {pct:.0}% of the target achieved"
        ))
    } else {
        None
    }
}

/// An average per thread: whole when it is whole ("500"), else "333.7".
fn per_thread(avg: f64) -> String {
    if avg.fract() == 0.0 {
        format!("{avg:.0}")
    } else {
        format!("{avg:.1}")
    }
}

/// The per-type block of a mix, in the manner of YCSB's `[READ],
/// Operations` and latency lines: each type's count and share, rate,
/// failures and HDR percentiles.
fn write_types(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    // Labels as wide as the longest type's ("[read-modify-write] latency"),
    // so that the block stays aligned.
    let width = r
        .types
        .iter()
        .map(|t| t.name.len() + 10)
        .max()
        .unwrap_or(W)
        .max(W);
    let line = |w: &mut dyn Write, label: &str, value: String| -> io::Result<()> {
        writeln!(w, "{label:<width$}: {value}")
    };
    let all = r.figures.ops.max(1) as f64;
    for ty in &r.types {
        let s = &ty.figures;
        let rate = ty.rates.units_per_s;
        let mut text = format!(
            "{} ({:.1}%), {rate:.1}/s",
            s.ops,
            100.0 * s.ops as f64 / all
        );
        if s.failed() > 0 {
            text.push_str(&format!(", {} failed", s.failed()));
        }
        if s.missing > 0 {
            text.push_str(&format!(", {} {}", s.missing, r.missing_label()));
        }
        line(w, &format!("[{}]", ty.name), text)?;
        if s.ops > 0 {
            line(
                w,
                &format!("[{}] latency", ty.name),
                percentile_line(&s.latency),
            )?;
            if r.has_intended_starts() {
                line(
                    w,
                    &format!("[{}] service", ty.name),
                    percentile_line(&s.service),
                )?;
            }
            if r.terminals.is_some() {
                line(w, &format!("[{}] queueing", ty.name), queueing(s))?;
            }
        }
    }
    Ok(())
}

/// For workloads that keep statements (transactions): queries in all and
/// per second, split as sysbench splits them (read, write, other).
fn write_queries(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    if r.statements.is_empty() {
        return Ok(());
    }
    let mut by_class = [0u64; 3];
    for s in &r.statements {
        let i = match s.class.as_str() {
            "read" => 0,
            "write" => 1,
            _ => 2,
        };
        by_class[i] += s.count;
    }
    let all: u64 = by_class.iter().sum();
    let rate = r.per_s(all);
    line(
        w,
        "queries",
        format!(
            "{all} ({rate:.1}/s): read {}, write {}, other {}",
            by_class[0], by_class[1], by_class[2]
        ),
    )
}

/// `--per-statement`: the latency of each statement kind inside the
/// units, as pgbench's `-r` gives averages, here with percentiles.
pub fn write_statements(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    for s in &r.statements {
        if s.count == 0 {
            continue;
        }
        line(
            w,
            &format!("  {} ({})", s.name, s.count),
            percentile_line(&s.latency),
        )?;
    }
    Ok(())
}

/// The consistency checks run after the operation.
fn write_checks(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    for c in &r.checks {
        let state = if c.held { "held" } else { "BROKEN" };
        line(w, "check", format!("{state}: {} ({})", c.name, c.detail))?;
    }
    Ok(())
}

/// Writes the summary of one operation.
pub fn write_summary(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    writeln!(w, "== {} ==", r.operation)?;
    if !r.workload.is_empty() {
        line(w, "workload", &r.workload)?;
    }
    if !r.measured {
        return write_unmeasured(w, r);
    }
    let f = Figures::of(r);
    line(w, "wallclock time", human(f.wallclock))?;
    line(
        w,
        "tot db time",
        format!("{} ({:.1}% of wallclock)", human(f.db_time), f.db_pct),
    )?;
    if r.load {
        write_load_figures(w, r, &f)?;
    } else {
        write_query_figures(w, r, &f)?;
    }
    write_latencies(w, r)?;
    if r.is_mix() {
        write_types(w, r)?;
    }
    write_queries(w, r)?;
    write_pacing(w, r)?;
    write_ending(w, r)?;
    super::conns::write_conn_lines(w, r)?;
    write_failures(w, r)?;
    for m in r.metric_lines() {
        line(w, &m.label, &m.text)?;
    }
    write_checks(w, r)?;
    if let Some(why) = &r.failure {
        line(w, "FAILED", why)?;
    }
    super::server::write_server(w, r)
}

/// A clean-up or a check: what it found, nothing timed.
fn write_unmeasured(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    if !r.checks.is_empty() {
        let held = r.checks.iter().filter(|c| c.held).count();
        line(
            w,
            "checks",
            format!(
                "{} run, {held} held, {} broken",
                r.checks.len(),
                r.checks.len() - held
            ),
        )?;
    }
    write_checks(w, r)?;
    for f in &r.findings {
        line(w, &f.label, &f.text)?;
    }
    if let Some(why) = &r.failure {
        line(w, "FAILED", why)?;
    }
    Ok(())
}

/// A load's figures: per row, as the original tool gave them.
fn write_load_figures(w: &mut dyn Write, r: &OpRecord, f: &Figures) -> io::Result<()> {
    let spread = if f.per_thread_min == f.per_thread_max {
        String::new()
    } else {
        format!(" ({}..{})", f.per_thread_min, f.per_thread_max)
    };
    line(
        w,
        "rows per thread",
        format!("{}{spread}", per_thread(f.per_thread_avg)),
    )?;
    line(w, "threads", r.threads)?;
    // A report written before the text was kept (0.2.0) does not know
    // it: no line rather than an empty one.
    if !r.batch.is_empty() {
        line(w, "batch", &r.batch)?;
    }
    line(w, "total rows", f.rows)?;
    line(w, "nontransactional", r.nontransactional)?;
    line(w, "wallclock tm/row", human(f.wallclock_per_item))?;
    line(w, "db tm/row", human(f.db_per_item))?;
    line(w, "rows/s", format!("{:.1}", f.rate))?;
    line(w, &r.units(), f.units)
}

/// A query workload's figures: per unit, a query or an operation of a
/// mix.
fn write_query_figures(w: &mut dyn Write, r: &OpRecord, f: &Figures) -> io::Result<()> {
    let (one, many) = (r.unit.as_str(), r.units());
    line(w, "threads", r.threads)?;
    if !r.driver.is_empty() {
        line(w, "driver", &r.driver)?;
    }
    if r.pipeline > 1 {
        line(
            w,
            "pipeline",
            pipeline_line(r.pipeline, r.pipeline_sync, &many),
        )?;
    }
    line(w, &format!("nr {many}"), f.units)?;
    line(
        w,
        &format!("{many} per thread"),
        per_thread(f.per_thread_avg),
    )?;
    if let Some(n) = r.transactions {
        line(
            w,
            "--transactions",
            format!(
                "{n} {many} per thread, {} in all (done, failed or skipped)",
                n.saturating_mul(r.threads as u64)
            ),
        )?;
    }
    line(
        w,
        &format!("avg wallclock/{one}"),
        human(f.wallclock_per_item),
    )?;
    line(w, &format!("avg db time/{one}"), human(f.db_per_item))?;
    line(w, &format!("{many}/s"), format!("{:.1}", f.rate))?;
    let label = match r.missing_label() {
        "missing" => "missing rows",
        other => other,
    };
    line(w, label, r.figures.missing)
}

/// The percentile lines: latency, service time under a rate, per row of
/// a load, the successful try of retried units.
fn write_latencies(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    let t = &r.figures;
    let unit = r.unit.as_str();
    if t.ops > 0 {
        line(
            w,
            &format!("latency per {unit}"),
            percentile_line(&t.latency),
        )?;
        if r.has_intended_starts() {
            line(
                w,
                &format!("service per {unit}"),
                percentile_line(&t.service),
            )?;
        }
        if r.load {
            line(w, "latency per row", percentile_line(&t.row_latency))?;
        }
    }
    if t.retried > 0 && t.ops > 0 {
        line(
            w,
            &format!("attempt per {unit}"),
            percentile_line(&t.attempt()),
        )?;
    }
    Ok(())
}

/// The wait for a free connection of the units of `s` (their latency
/// beyond their service time), on average and at most.
fn queueing(s: &crate::stats::Stats) -> String {
    let avg = if s.ops > 0 {
        s.lag_total / s.ops.min(u64::from(u32::MAX)) as u32
    } else {
        Duration::ZERO
    };
    format!(
        "avg {}, max {} (waiting for a free connection: in the latency, not in the service time)",
        human(avg),
        human(s.lag_max)
    )
}

/// `--rate` and `--latency-limit`: the target against what was achieved,
/// the schedule lag, the late units; users queued for the connections.
fn write_pacing(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    let t = &r.figures;
    if let Some(n) = r.terminals {
        line(
            w,
            "terminals",
            format!("{n} over {} connections", r.threads),
        )?;
        line(w, "queueing", queueing(t))?;
    }
    if let Some(target) = r.rate_target {
        line(
            w,
            "rate",
            format!(
                "target {:.1} {}/s, achieved {:.1}/s",
                target,
                r.units(),
                r.rates.units_per_s
            ),
        )?;
        let lag_avg = if t.ops > 0 {
            t.lag_total / t.ops as u32
        } else {
            Duration::ZERO
        };
        line(
            w,
            "schedule lag",
            format!("avg {}, max {}", human(lag_avg), human(t.lag_max)),
        )?;
        if let Some(note) = keep_up_note(r) {
            line(w, "note", note)?;
        }
    }
    if let Some(limit) = r.latency_limit() {
        line(
            w,
            &format!("late (> {})", human(limit)),
            format!(
                "{} of {} {}, skipped {}",
                t.late,
                t.ops,
                r.units(),
                t.skipped
            ),
        )?;
    }
    Ok(())
}

/// How measurement began and ended when not as planned: a warmup first,
/// a load cut by `--time`, an interrupt.
fn write_ending(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    if let Some(wu) = r.warmup() {
        let what = if r.warmup_interrupted {
            format!("stopped after {}: nothing was measured", human(wu))
        } else {
            format!("{} ran first, not measured", human(wu))
        };
        line(w, "warmup", what)?;
    }
    if r.timed_out {
        line(
            w,
            "stopped by --time",
            // A report written before the table's rows were kept (0.2.0)
            // does not know how many it was to hold.
            if r.table_rows > 0 {
                format!("{} of {} rows loaded", r.figures.rows, r.table_rows)
            } else {
                format!("{} rows loaded", r.figures.rows)
            },
        )?;
    }
    if r.interrupted {
        line(
            w,
            "interrupted",
            "yes: these figures cover the run until the interrupt",
        )?;
    }
    Ok(())
}

/// Failed units by error class, retries, reconnects, and which units
/// failed.
fn write_failures(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    let t = &r.figures;
    let failed = t.failed();
    if failed > 0 {
        let by_code: Vec<String> = t.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        line(w, "failed", format!("{failed} ({})", by_code.join(", ")))?;
    }
    if t.retries > 0 {
        line(
            w,
            "retries",
            format!(
                "{} {} retried, {} retries in all",
                t.retried,
                r.units(),
                t.retries
            ),
        )?;
    }
    if t.reconnects > 0 {
        line(w, "reconnects", t.reconnects)?;
    }
    if !t.failed_units.is_empty() {
        let more = if failed > t.failed_units.len() as u64 {
            ", ..."
        } else {
            ""
        };
        line(
            w,
            &format!("failed {}", r.units()),
            format!("{}{more}", t.failed_units.join(", ")),
        )?;
    }
    Ok(())
}

/// The summary's pipeline line: the depth, and batches of several units
/// per Sync when `--pipeline-sync` made them.
fn pipeline_line(depth: usize, per_sync: usize, many: &str) -> String {
    if per_sync > 1 {
        format!(
            "{depth} {many} in flight per connection, in batches of {per_sync} per Sync (each batch one transaction)"
        )
    } else {
        format!("{depth} {many} in flight per connection")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::OpResult;
    use crate::stats::Stats;
    use crate::workload::Outcome;

    fn load(rows_per_batch: &[u64], threads: usize, wall_ms: u64) -> OpResult {
        let mut total = Stats::default();
        for r in rows_per_batch {
            total.record(
                crate::stats::Timing::unscheduled(Duration::from_millis(10)),
                Outcome {
                    rows: *r,
                    missing: 0,
                },
            );
        }
        let mut r = OpResult::new(crate::workload::basic::insert::SPEC.kind(), threads);
        r.batch_text = "200".to_string();
        r.table_rows = rows_per_batch.iter().sum();
        r.wallclock = Duration::from_millis(wall_ms);
        r.total = total;
        r.thread_rows = vec![334, 334, 333];
        r
    }

    #[test]
    fn load_figures_are_per_row() {
        // 1001 rows in 6 batches of 10 ms each, 3 threads, 25 ms wallclock.
        let r = load(&[200, 134, 200, 134, 200, 133], 3, 25);
        let f = Figures::of(&OpRecord::of(&r));
        assert_eq!(f.rows, 1001);
        assert_eq!(f.units, 6);
        assert_eq!(f.db_time, Duration::from_millis(60));
        assert!((f.db_pct - 240.0).abs() < 1e-9);
        assert!((f.per_thread_avg - 333.666).abs() < 0.001);
        assert_eq!((f.per_thread_min, f.per_thread_max), (333, 334));
        assert!((f.rate - 1001.0 / 0.025).abs() < 1e-6);
        let expect = 0.025 / 1001.0;
        assert!((f.wallclock_per_item.as_secs_f64() - expect).abs() < 1e-9);
    }

    #[test]
    fn query_figures_are_per_query() {
        let mut r = load(&[1, 1, 1, 0], 2, 100);
        r.spec = crate::workload::basic::select::SPEC.kind();
        r.total.missing = 1;
        let f = Figures::of(&OpRecord::of(&r));
        assert_eq!(f.units, 4);
        assert!((f.rate - 40.0).abs() < 1e-9);
        assert_eq!(f.db_per_item, Duration::from_millis(10));
        assert_eq!(f.per_thread_avg, 2.0);
    }

    #[test]
    fn nothing_done_gives_zeros_not_nan() {
        let r = load(&[], 1, 0);
        let f = Figures::of(&OpRecord::of(&r));
        assert_eq!(f.rate, 0.0);
        assert_eq!(f.db_pct, 0.0);
        assert_eq!(f.wallclock_per_item, Duration::ZERO);
    }

    #[test]
    fn the_summary_has_the_original_labels() {
        let r = load(&[200, 134, 200, 134, 200, 133], 3, 25);
        let mut out = Vec::new();
        write_summary(&mut out, &OpRecord::of(&r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for label in [
            "wallclock time",
            "tot db time",
            "rows per thread",
            "threads",
            "batch",
            "total rows",
            "nontransactional",
            "wallclock tm/row",
            "db tm/row",
            "rows/s",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(label)),
                "{label} missing in\n{text}"
            );
        }
        assert!(text.contains("total rows            : 1001"));
        assert!(text.contains("(333..334)"));
        // HDR values are within 0.1% (3 significant digits) of the 10 ms
        // recorded, every figure the top of its bucket: equal samples read
        // the same from min to max.
        assert!(
            text.contains("latency per batch     : min 10.002 ms, p50 10.002 ms"),
            "{text}"
        );
        assert!(text.contains("latency per row"), "{text}");
    }

    #[test]
    fn a_rate_that_was_not_kept_is_called_out() {
        let mut r = load(&[1; 50], 1, 1000);
        r.spec = crate::workload::basic::select::SPEC.kind();
        r.rate = Some(crate::stats::RateTarget { per_second: 100.0 });
        let note = keep_up_note(&OpRecord::of(&r)).unwrap();
        assert!(note.contains("50% of the target"), "{note}");
        r.rate = Some(crate::stats::RateTarget { per_second: 50.0 });
        assert_eq!(keep_up_note(&OpRecord::of(&r)), None);
        // A stall the schedule caught up from is not "did not keep up".
        r.total.lag_max = std::time::Duration::from_millis(1500);
        let note = keep_up_note(&OpRecord::of(&r)).unwrap();
        assert!(note.contains("caught up: 100% of the target"), "{note}");
        assert!(!note.contains("did not keep up"), "{note}");
        r.total.lag_max = std::time::Duration::ZERO;
        let mut out = Vec::new();
        write_summary(&mut out, &OpRecord::of(&r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("rate                  : target 50.0 queries/s, achieved 50.0/s"),
            "{text}"
        );
        assert!(text.contains("schedule lag"), "{text}");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(human(Duration::from_millis(1500)), "1.500 s");
        assert_eq!(human(Duration::from_micros(2500)), "2.500 ms");
        assert_eq!(human(Duration::from_nanos(42_500)), "42.500 us");
    }
}
