//! The server's side of an operation as people read it: the summary's
//! server block, the per-interval columns of the CSV report, and the
//! stacked band of wait events under the throughput picture.
//!
//! The block puts each server figure beside the tool's own: the server's
//! commits beside the units the tool counted (and why they differ), the
//! server's execution time beside the client's time in the database (the
//! rest is network, protocol and client), and what the run's backends
//! waited on with a sentence on what that means: under `--rate` or a
//! workload's pauses between units (named in the workload's words, which
//! it puts on the record) read against the time the tool itself held the
//! workers back, which the server sees as backends waiting for the client. The
//! figures themselves
//! come from [`crate::db::server_watch`] as plain data
//! ([`crate::stats::server`]); nothing here talks to the server. The
//! block and the CSV columns read the run's record, so that a saved run
//! shows them as the live one did; the band is drawn from the live run.

use std::io::{self, Write};
use std::time::Duration;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::plot::axis::{Axis, Kind};
use super::plot::style::{self, Entry, Mark, Sizes};
use super::summary::human;
use crate::stats::OpResult;
use crate::stats::record::OpRecord;
use crate::stats::server::{ServerFigures, WaitCounts};

const W: usize = 22;
/// Wait events named in the summary's line; the rest are `other`.
const EVENTS_SHOWN: usize = 5;
/// Statements named in the summary (JSON keeps more).
const STATEMENTS_SHOWN: usize = 3;
/// Wait events drawn in the band; the rest are one `other` layer.
const EVENTS_DRAWN: usize = 6;

fn line(w: &mut dyn Write, label: &str, value: impl std::fmt::Display) -> io::Result<()> {
    writeln!(w, "{label:<W$}: {value}")
}

/// `61% CPU, 22% Lock:transactionid, 17% other`: the largest `n` events
/// as shares of the backends seen, the rest together.
pub fn waits_text(w: &WaitCounts, n: usize) -> String {
    let shares = w.shares();
    let mut parts: Vec<String> = shares
        .iter()
        .take(n)
        .map(|(ev, s)| format!("{:.0}% {ev}", s * 100.0))
        .collect();
    let rest: f64 = shares.iter().skip(n).map(|(_, s)| s).sum();
    if rest > 0.0 {
        parts.push(format!("{:.0}% other", rest * 100.0));
    }
    parts.join(", ")
}

/// The groups the waits are read in: what the backends did, and what it
/// means when it is most of what they did. In the order of [`groups`].
const GROUPS: [(&str, &str); 4] = [
    (
        "waited for the client's next statement (Client:ClientRead, idle)",
        "the time goes to the client and the round trips, not to the server's work; the client (or the network) is the bottleneck",
    ),
    (
        "were executing (CPU: on YugabyteDB also waiting on the storage layer, which PostgreSQL does not instrument)",
        "the server sets the pace",
    ),
    (
        "waited on locks held by other transactions (Lock:*)",
        "contention sets the pace",
    ),
    (
        "waited on I/O (IO:*, LWLock:WALWrite)",
        "the disk, or its flushes, sets the pace",
    ),
];

/// The shares of the samples in each of [`GROUPS`]: waiting for the
/// client (`Client:ClientRead`, and the `idle` states without a wait
/// event: between sending a result and blocking on the next statement),
/// executing (`CPU`), waiting on locks (`Lock:*`) and on I/O (`IO:*`, and
/// `LWLock:WALWrite`: waiting for another backend to write the WAL).
fn groups(w: &WaitCounts) -> [f64; 4] {
    let mut g = [0.0; 4];
    for (ev, share) in w.shares() {
        let i = if ev == "Client:ClientRead" || ev.starts_with("idle") {
            0
        } else if ev == "CPU" {
            1
        } else if ev.starts_with("Lock:") {
            2
        } else if ev.starts_with("IO:") || ev == "LWLock:WALWrite" {
            3
        } else {
            continue;
        };
        g[i] += share;
    }
    g
}

/// The largest of `g`, by index, when any is above 0.
fn largest(g: &[f64; 4]) -> Option<(usize, f64)> {
    g.iter()
        .copied()
        .enumerate()
        .fold(None, |a: Option<(usize, f64)>, (i, x)| match a {
            Some((_, y)) if y >= x => a,
            _ if x > 0.0 => Some((i, x)),
            _ => a,
        })
}

/// How the tool itself held the workers back, to read the waits against:
/// a paced worker's backend is idle, waiting for the client, by design.
#[derive(Clone, Debug, PartialEq)]
pub struct Pacing {
    /// What the workers waited for ("their --rate schedule (2000/s)").
    pub what: String,
    /// The workload's pauses as it names them ("the keying and think
    /// times"); empty when it made none.
    pub pauses: String,
    /// The share of the workers' time spent waiting so, 0 to 1.
    pub share: f64,
    /// Whether the pacing is a schedule units can fall behind (`--rate`),
    /// not only a workload's pauses of fixed length.
    pub scheduled: bool,
    /// Why the units are said to have fallen behind their schedule, if
    /// they did: only then can the client be what holds the run back.
    pub behind: Option<String>,
}

/// The pacing of an operation: `--rate`, or the workload's pauses
/// (named by [`OpRecord::pauses`]); none when it ran as fast as it could.
/// The share is the workers' waits for it over all the workers' time.
pub fn pacing(r: &OpRecord) -> Option<Pacing> {
    let t = &r.figures;
    let paused = !t.pause_wait.is_zero();
    if r.rate_target.is_none() && !paused {
        return None;
    }
    // A record that names no pauses (none of today's workloads makes
    // such a one) still reads as a sentence.
    let (pauses, flag) = match &r.pauses {
        Some(p) if paused => (p.what.clone(), format!(" ({})", p.flag)),
        _ if paused => ("the workload's pauses".to_string(), String::new()),
        _ => (String::new(), String::new()),
    };
    let what = match (r.rate_target, paused) {
        (Some(rate), false) => format!("their --rate schedule ({rate}/s)"),
        (Some(rate), true) => format!("their --rate schedule ({rate}/s) and {pauses}{flag}"),
        (None, _) => format!("{pauses}{flag}"),
    };
    let worker_time = r.threads as f64 * r.wallclock_s;
    let waited = (t.schedule_wait + t.pause_wait).as_secs_f64();
    let share = if worker_time > 0.0 {
        (waited / worker_time).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let behind = if r.rate_target.is_none() {
        None
    } else if let Some(note) = super::summary::keep_up_note(r) {
        Some(note)
    } else if t.skipped > 0 {
        Some(format!(
            "{} {} were skipped, already later than --latency-limit when due",
            t.skipped,
            r.units()
        ))
    } else if t.late > 0 {
        Some(format!(
            "{} {} ended later than --latency-limit after their due time",
            t.late,
            r.units()
        ))
    } else {
        None
    };
    Some(Pacing {
        what,
        pauses,
        share,
        scheduled: r.rate_target.is_some(),
        behind,
    })
}

/// What the run's backends mostly did, when it says something clear: the
/// events grouped (see `groups`) and the largest group read out.
///
/// Under pacing (`--rate`, a workload's pauses) the workers are idle by design
/// for a share of their time, and their backends wait for the client all
/// that time: that much of the client waits is the pacing's, and is said
/// so. The client is only called the bottleneck when the units fell
/// behind their schedule and the waits the pacing does not explain are
/// still mostly the client's; while they keep to it, the pacing sets the
/// pace.
pub fn reading(w: &WaitCounts, pacing: Option<&Pacing>) -> Option<String> {
    let g = groups(w);
    let (top, share) = largest(&g)?;
    let Some(p) = pacing else {
        let (what, meaning) = GROUPS[top];
        return Some(format!(
            "in {:.0}% of the samples the run's backends {what}: {meaning}",
            share * 100.0
        ));
    };
    let client = g[0];
    let explained = client.min(p.share);
    let mut rest = g;
    rest[0] -= explained;
    let waited = format!(
        "the workers spent {:.0}% of their time waiting for {}",
        p.share * 100.0,
        p.what
    );
    let seen = if client > 0.0 {
        format!(
            "in {:.0}% of the samples the run's backends {}, and {waited}: the pacing explains {:.0} points of those waits",
            client * 100.0,
            GROUPS[0].0,
            explained * 100.0
        )
    } else {
        waited
    };
    let beyond = largest(&rest).filter(|(_, x)| *x >= 0.005);
    let text = match &p.behind {
        None => {
            let sets = if p.scheduled {
                "the units kept to their schedule, so the pacing sets the pace, not the client or the server".to_string()
            } else {
                format!("{} set the pace, not the client or the server", p.pauses)
            };
            match beyond {
                Some((0, x)) => format!(
                    "{seen}; {sets}; the rest of those waits ({:.0}% of the samples) is the client's own time in and between units: round trips, the driver, the tool's bookkeeping",
                    x * 100.0
                ),
                Some((i, x)) => format!(
                    "{seen}; {sets}; of the other samples, the most ({:.0}% of all) {}",
                    x * 100.0,
                    GROUPS[i].0
                ),
                None => format!("{seen}; {sets}"),
            }
        }
        Some(why) => match beyond {
            Some((i, x)) => format!(
                "{seen}; but {why}: beyond what the pacing explains, in {:.0}% of the samples the run's backends {}: {}",
                x * 100.0,
                GROUPS[i].0,
                GROUPS[i].1
            ),
            None => format!("{seen}; but {why}"),
        },
    };
    Some(text)
}

/// One line of a statement's text: whitespace folded, at most `max`
/// characters.
fn one_line(text: &str, max: usize) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= max {
        folded
    } else {
        let cut: String = folded.chars().take(max.saturating_sub(3)).collect();
        format!("{cut}...")
    }
}

/// The summary's server block, after the tool's own figures; nothing
/// when the server was not watched.
pub fn write_server(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    let Some(s) = &r.server else {
        return Ok(());
    };
    let nodes = if s.nodes.is_empty() {
        "no node could be read".to_string()
    } else {
        s.nodes.join(", ")
    };
    line(
        w,
        "server",
        format!(
            "{nodes}: its own counts over the operation, all sessions of the database (application_name {})",
            s.application_name
        ),
    )?;
    write_counts(w, r, s)?;
    write_statements(w, r, s)?;
    write_waits(w, r, s)?;
    for n in &s.notes {
        line(w, "server note", n)?;
    }
    Ok(())
}

fn write_counts(w: &mut dyn Write, r: &OpRecord, s: &ServerFigures) -> io::Result<()> {
    let (Some(d), Some((commits, rollbacks))) = (s.database, s.commits_without_own()) else {
        return Ok(());
    };
    let t = &r.figures;
    let units = r.units();
    line(
        w,
        "server commits",
        format!(
            "{commits}, rollbacks {rollbacks} (the tool's own {} statistics queries taken out)",
            s.own_commits + s.own_rollbacks
        ),
    )?;
    let diff = commits - t.ops as i64;
    let conns: u64 = r.hosts.iter().map(|h| h.connections).sum();
    let mut why = vec![format!(
        "the workers' {conns} connection{}, whose start and prepares commit too",
        if conns == 1 { "" } else { "s" }
    )];
    if r.warmup_s.is_some() {
        why.push("the warmup".to_string());
    }
    if r.pipeline_sync > 1 {
        // A batch is one transaction: the server counts one for K units.
        why.push(format!(
            "batches of {k} queries, each one transaction (--pipeline-sync {k}: about {} for these)",
            t.ops / r.pipeline_sync as u64,
            k = r.pipeline_sync
        ));
    }
    why.push("units of several transactions".to_string());
    why.push("other sessions".to_string());
    line(
        w,
        "tool's count",
        format!(
            "{} {units}, {} failed: difference {diff:+} ({})",
            t.ops,
            t.failed(),
            why.join(", ")
        ),
    )?;
    let blocks = d.blks_hit + d.blks_read;
    if blocks > 0 {
        line(
            w,
            "buffer cache hits",
            format!(
                "{:.2}% ({} blocks read, {} hit)",
                100.0 * d.blks_hit as f64 / blocks as f64,
                d.blks_read,
                d.blks_hit
            ),
        )?;
    }
    if t.ops > 0 {
        let per = |n: i64| n as f64 / t.ops as f64;
        line(
            w,
            &format!("tuples per {}", r.unit),
            format!(
                "{:.2} returned, {:.2} fetched, {:.2} inserted, {:.2} updated, {:.2} deleted",
                per(d.tup_returned),
                per(d.tup_fetched),
                per(d.tup_inserted),
                per(d.tup_updated),
                per(d.tup_deleted)
            ),
        )?;
    }
    let mut rare = Vec::new();
    if d.deadlocks > 0 {
        rare.push(format!("{} deadlocks", d.deadlocks));
    }
    if d.conflicts > 0 {
        rare.push(format!("{} recovery conflicts", d.conflicts));
    }
    if d.temp_files > 0 {
        rare.push(format!(
            "{} temporary files ({:.1} MB)",
            d.temp_files,
            d.temp_bytes as f64 / 1e6
        ));
    }
    if !rare.is_empty() {
        line(w, "server also", rare.join(", "))?;
    }
    for tf in &s.tables {
        let c = &tf.counts;
        line(
            w,
            &format!("table {}", tf.table),
            format!(
                "{} index scans, {} seq scans; {} inserted, {} updated ({} HOT), {} deleted",
                c.idx_scan, c.seq_scan, c.n_tup_ins, c.n_tup_upd, c.n_tup_hot_upd, c.n_tup_del
            ),
        )?;
    }
    Ok(())
}

fn write_statements(w: &mut dyn Write, r: &OpRecord, s: &ServerFigures) -> io::Result<()> {
    let Some(stmts) = &s.statements else {
        return Ok(());
    };
    let t = &r.figures;
    let client_mean = (t.ops > 0).then(|| t.busy / t.ops.min(u32::MAX as u64) as u32);
    for st in stmts.iter().take(STATEMENTS_SHOWN) {
        let mut text = format!(
            "{} calls, {} on the server on average",
            st.calls,
            human(Duration::from_secs_f64(st.mean_exec_us() / 1e6))
        );
        // One call per unit: the client's time per unit beside it.
        if let Some(m) = client_mean
            && st.calls as u64 == t.ops
        {
            text.push_str(&format!(" vs {} at the client", human(m)));
        }
        text.push_str(&format!(": {}", one_line(&st.query, 90)));
        line(w, "statement", text)?;
    }
    let calls: i64 = stmts.iter().map(|s| s.calls).sum();
    if let Some(exec_ms) = s.statements_exec_ms()
        && !stmts.is_empty()
        && !t.busy.is_zero()
    {
        let exec = Duration::from_secs_f64(exec_ms / 1e3);
        let text = if (calls as u64) < t.ops {
            // pg_stat_statements counts a utility statement (COPY) run
            // from a reused prepared statement only the first time.
            format!(
                "{} over {calls} calls, fewer than the tool's {} {}: not compared with the tool's db time",
                human(exec),
                t.ops,
                r.units()
            )
        } else {
            format!(
                "{} = {:.1}% of the tool's db time ({}): the rest is planning, the commit (its WAL flush), the network, the protocol and the client",
                human(exec),
                100.0 * exec.as_secs_f64() / t.busy.as_secs_f64(),
                human(t.busy)
            )
        };
        line(w, "server exec time", text)?;
    }
    Ok(())
}

fn write_waits(w: &mut dyn Write, r: &OpRecord, s: &ServerFigures) -> io::Result<()> {
    let Some(waits) = &s.waits else {
        return Ok(());
    };
    if waits.samples == 0 {
        line(w, "server waits", "no sample fell in the measured time")?;
        return Ok(());
    }
    if waits.seen == 0 {
        line(
            w,
            "server waits",
            format!(
                "none of the run's backends was seen in {} samples (through a pooler the server's backends are the pooler's)",
                waits.samples
            ),
        )?;
        return Ok(());
    }
    line(
        w,
        "server waits",
        format!(
            "{} ({} samples, {:.1} of the run's backends each)",
            waits_text(waits, EVENTS_SHOWN),
            waits.samples,
            waits.per_sample()
        ),
    )?;
    let per = waits.per_sample();
    let threads = r.threads as f64;
    let odd_count = r.connect.is_none() && (per > threads * 1.5 + 0.5 || per < threads * 0.5);
    if odd_count {
        line(
            w,
            "server note",
            format!(
                "{per:.1} backends of the run per sample for {} workers: through a pooler the server's backends are the pooler's, and their state is not the workers'",
                r.threads
            ),
        )?;
    }
    // Through a pooler, idle backends are the pooler's, not the client's:
    // no reading then.
    if !odd_count
        && s.left_open == 0
        && let Some(text) = reading(waits, pacing(r).as_ref())
    {
        line(w, "reading the waits", text)?;
    }
    if let Some(c) = &s.sampler {
        let share = if r.wallclock().is_zero() {
            0.0
        } else {
            c.samples as f64 * c.mean_us / 1e6 / r.wallclock_s * 100.0
        };
        line(
            w,
            "sampler",
            format!(
                "{} queries of pg_stat_activity, one every {:.0} ms per node on its own connection; round trip {} on average (max {}): that connection busy {share:.2}% of the time",
                c.samples,
                c.period_ms,
                human(Duration::from_secs_f64(c.mean_us / 1e6)),
                human(Duration::from_secs_f64(c.max_us / 1e6))
            ),
        )?;
    }
    Ok(())
}

/// The CSV columns of interval `i`: the server's commits and rollbacks
/// in it and its waits as `event=percent;...` (empty when unknown).
pub fn csv_columns(op: &OpRecord, i: usize) -> [String; 3] {
    let Some(iv) = op.server.as_ref().and_then(|s| s.intervals.get(i)) else {
        return Default::default();
    };
    let opt = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
    let waits = iv
        .waits
        .shares()
        .iter()
        .map(|(ev, s)| format!("{ev}={:.1}", s * 100.0))
        .collect::<Vec<_>>()
        .join(";");
    [opt(iv.commits), opt(iv.rollbacks), waits]
}

/// Whether the operation has waits per interval to draw.
pub fn has_wait_band(op: &OpResult) -> bool {
    op.server
        .as_ref()
        .is_some_and(|s| s.intervals.iter().any(|i| i.waits.seen > 0))
}

/// The wait events the band draws, in its stacking order (bottom first):
/// the largest overall, placed by name, not by share, so that a wait keeps
/// its colour and its place in every picture; the rest are `other`.
pub fn wait_band_names(op: &OpResult) -> Vec<String> {
    let mut total = WaitCounts::default();
    for iv in op.server.iter().flat_map(|s| &s.intervals) {
        total.add(&iv.waits);
    }
    let mut names: Vec<String> = total
        .shares()
        .iter()
        .take(EVENTS_DRAWN)
        .map(|(n, _)| n.to_string())
        .collect();
    names.sort_by(|a, b| style::wait_order(a, b));
    names
}

/// The stacked band of wait events per interval: each interval a column
/// from 0 to 100% split by the share of each event, the largest events
/// overall (see [`wait_band_names`]) each in its own colour by name, the
/// rest as `other`. Drawn on
/// the time axis of the charts above it, with their margins, so that the
/// columns line up with them; returns its legend's entries, which the
/// picture draws beside it. The colours are pale fills, apart from the
/// saturated lines of the series above.
pub fn draw_wait_band<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    op: &OpResult,
    x: &Axis,
    sizes: Sizes,
    family: &str,
) -> Result<Vec<Entry>, String> {
    let Some(s) = &op.server else {
        return Ok(Vec::new());
    };
    let e = |x: plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let names = wait_band_names(op);
    let y = Axis::linear(0.0, 100.0, Kind::Percent, 4);
    let mut chart = ChartBuilder::on(area)
        .margin(sizes.margin)
        .x_label_area_size(sizes.x_labels + sizes.text)
        .y_label_area_size(sizes.y_labels)
        .build_cartesian_2d(x.clone(), y.clone())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("seconds since start")
        .y_desc("server waits")
        .x_label_formatter(&|v| x.label(*v))
        .y_label_formatter(&|v| y.label(*v))
        .label_style((family, sizes.text))
        .axis_desc_style((family, sizes.text))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(e)?;
    let color = |k: usize| -> RGBAColor {
        style::wait_color(names.get(k).map_or("other", String::as_str)).to_rgba()
    };
    let mut entries = Vec::new();
    // Each layer: one event over every interval, stacked on the ones
    // before it; `other` (index names.len()) last.
    for k in 0..=names.len() {
        let mut rects = Vec::new();
        for (iv, f) in s.intervals.iter().zip(&op.intervals) {
            if iv.waits.seen == 0 {
                continue;
            }
            let seen = iv.waits.seen as f64;
            let share = |n: &str| *iv.waits.events.get(n).unwrap_or(&0) as f64 / seen * 100.0;
            let below: f64 = names.iter().take(k).map(|n| share(n)).sum();
            let this = match names.get(k) {
                Some(n) => share(n),
                None => 100.0 - below,
            };
            if this <= 0.0 {
                continue;
            }
            let x0 = x.clamp(f.end_s - f.seconds);
            rects.push(Rectangle::new(
                [(x0, below), (x.clamp(f.end_s), (below + this).min(100.0))],
                color(k).filled(),
            ));
        }
        if rects.is_empty() {
            continue;
        }
        let label = names.get(k).cloned().unwrap_or_else(|| "other".to_string());
        entries.push(Entry::new(Mark::Block(color(k)), label));
        chart.draw_series(rects).map_err(e)?;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::server::{DbCounters, ServerInterval, StatementFigures};
    use crate::stats::{Stats, Timing};
    use crate::workload::Outcome;

    fn waits(pairs: &[(&str, u64)]) -> WaitCounts {
        let mut w = WaitCounts::default();
        w.add_sample(pairs.iter().copied());
        w
    }

    fn rec(r: &OpResult) -> OpRecord {
        OpRecord::of(r)
    }

    fn select(ops: u64) -> OpResult {
        let mut r = OpResult::new(crate::workload::basic::select::SPEC.kind(), 2);
        let mut t = Stats::default();
        for _ in 0..ops {
            t.record(
                Timing::unscheduled(Duration::from_micros(40)),
                Outcome {
                    rows: 1,
                    missing: 0,
                },
            );
        }
        t.conns.opened(0, None);
        t.conns.opened(0, None);
        r.total = t;
        r.hosts = vec!["127.0.0.1:5432".into()];
        r.wallclock = Duration::from_secs(1);
        r
    }

    /// The band's legend (name and colour of each layer, bottom first) for
    /// one run whose waits are `pairs` in each of 3 intervals.
    fn band_of(pairs: &[(&str, u64)]) -> Vec<(String, (u8, u8, u8))> {
        let mut r = select(10);
        r.intervals = (0..3)
            .map(|i| crate::stats::IntervalFigures {
                index: i,
                end_s: (i + 1) as f64,
                seconds: 1.0,
                ..Default::default()
            })
            .collect();
        r.server = Some(ServerFigures {
            intervals: (0..3)
                .map(|i| ServerInterval {
                    index: i,
                    waits: waits(pairs),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        super::super::plot::register_font();
        let mut buf = vec![0u8; 400 * 200 * 3];
        let area = BitMapBackend::with_buffer(&mut buf, (400, 200)).into_drawing_area();
        let x = Axis::linear(0.0, 3.0, Kind::Seconds, 4);
        draw_wait_band(&area, &r, &x, Sizes::of(400, 200), "sans-serif")
            .unwrap()
            .into_iter()
            .map(|e| match e.mark {
                Mark::Block(c) => (e.text, c.rgb()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_wait_keeps_its_colour_and_place_whatever_its_rank() {
        // LWLock:WALWrite first in one run, fourth in another, absent in a
        // third; the same for IO:WALSync and idle.
        let runs = [
            band_of(&[
                ("LWLock:WALWrite", 9),
                ("IO:WALSync", 5),
                ("CPU", 3),
                ("Client:ClientRead", 1),
            ]),
            band_of(&[
                ("Client:ClientRead", 9),
                ("CPU", 7),
                ("idle", 5),
                ("LWLock:WALWrite", 3),
                ("IO:WALSync", 1),
            ]),
            band_of(&[
                ("IO:WALSync", 9),
                ("idle", 8),
                ("Lock:tuple", 4),
                ("Client:ClientRead", 2),
            ]),
            band_of(&[
                ("Timeout:VacuumDelay", 9),
                ("Client:ClientRead", 2),
                ("Extension:Foo", 1),
            ]),
        ];
        let mut seen: std::collections::BTreeMap<String, (u8, u8, u8)> = Default::default();
        for run in &runs {
            // Waiting for the client at the bottom of the stack.
            assert_eq!(run[0].0, "Client:ClientRead", "{run:?}");
            assert_eq!(run[0].1, (185, 185, 185));
            for (name, c) in run {
                let first = seen.entry(name.clone()).or_insert(*c);
                assert_eq!(first, c, "{name} changed colour: {runs:?}");
                // No layer looks like a series of the charts above it.
                for t in super::super::plot::TYPE_COLORS
                    .iter()
                    .chain([&super::super::plot::ALL_COLOR])
                {
                    assert_ne!(*c, t.rgb(), "{name}");
                }
            }
            // The layers in one order in every run.
            let mut sorted = run.clone();
            sorted.sort_by(|a, b| style::wait_order(&a.0, &b.0));
            assert_eq!(&sorted, run);
        }
        assert_eq!(seen["CPU"], (150, 205, 140));
        // Two waits in one run never share a colour among the common ones.
        assert_ne!(seen["LWLock:WALWrite"], seen["IO:WALSync"]);
        assert_ne!(seen["idle"], seen["Client:ClientRead"]);
    }

    #[test]
    fn waits_read_as_shares_with_the_rest_as_other() {
        let w = waits(&[
            ("CPU", 61),
            ("Lock:transactionid", 22),
            ("IO:WALSync", 9),
            ("Client:ClientRead", 8),
        ]);
        assert_eq!(
            waits_text(&w, 5),
            "61% CPU, 22% Lock:transactionid, 9% IO:WALSync, 8% Client:ClientRead"
        );
        assert_eq!(
            waits_text(&w, 2),
            "61% CPU, 22% Lock:transactionid, 17% other"
        );
        assert_eq!(waits_text(&WaitCounts::default(), 3), "");
    }

    #[test]
    fn client_read_on_top_says_the_client_is_the_bottleneck() {
        let r = reading(
            &waits(&[("Client:ClientRead", 5), ("CPU", 3), ("idle", 2)]),
            None,
        )
        .unwrap();
        assert!(
            r.contains("in 70% of the samples")
                && r.contains("the client (or the network) is the bottleneck"),
            "{r}"
        );
        let r = reading(
            &waits(&[("Lock:relation", 4), ("Lock:tuple", 4), ("CPU", 2)]),
            None,
        )
        .unwrap();
        assert!(r.contains("in 80%") && r.contains("locks"), "{r}");
        assert!(reading(&waits(&[("Activity:Whatever", 1)]), None).is_none());
        assert!(reading(&WaitCounts::default(), None).is_none());
    }

    /// Issue 22: ycsb-a at --rate 2000 showed 93% Client:ClientRead and
    /// was read as a slow client, when the tool's own pacing held the
    /// workers idle most of the time.
    #[test]
    fn paced_client_waits_are_read_as_the_pacings() {
        let w = waits(&[("Client:ClientRead", 93), ("CPU", 7)]);
        let kept = Pacing {
            what: "their --rate schedule (2000/s)".into(),
            pauses: String::new(),
            share: 0.9,
            scheduled: true,
            behind: None,
        };
        let r = reading(&w, Some(&kept)).unwrap();
        assert!(!r.contains("bottleneck"), "{r}");
        for want in [
            "in 93% of the samples the run's backends waited for the client's next statement",
            "the workers spent 90% of their time waiting for their --rate schedule (2000/s)",
            "the pacing explains 90 points of those waits",
            "the units kept to their schedule, so the pacing sets the pace, not the client or the server",
            "of the other samples, the most (7% of all) were executing",
        ] {
            assert!(r.contains(want), "{want}\nnot in\n{r}");
        }
        let r = reading(
            &waits(&[("Client:ClientRead", 98), ("CPU", 2)]),
            Some(&Pacing {
                share: 0.65,
                ..kept.clone()
            }),
        )
        .unwrap();
        assert!(
            r.contains("the pacing sets the pace")
                && r.contains(
                    "the rest of those waits (33% of the samples) is the client's own time"
                ),
            "{r}"
        );
        // Units that fell behind: what the pacing does not explain is read
        // as before, and here it is still the client's.
        let behind = Pacing {
            share: 0.1,
            behind: Some("the server (or client) did not keep up with the rate".into()),
            ..kept.clone()
        };
        let r = reading(&w, Some(&behind)).unwrap();
        assert!(
            r.contains("but the server (or client) did not keep up with the rate: beyond what the pacing explains, in 83% of the samples the run's backends waited for the client")
                && r.contains("the client (or the network) is the bottleneck"),
            "{r}"
        );
        let r = reading(
            &waits(&[("Client:ClientRead", 3), ("Lock:tuple", 7)]),
            Some(&behind),
        )
        .unwrap();
        assert!(
            r.contains("in 70% of the samples the run's backends waited on locks"),
            "{r}"
        );
        assert!(r.contains("contention sets the pace"), "{r}");
        // Keying and think times cannot be fallen behind.
        let tpcc = Pacing {
            what: "the keying and think times (--tpcc-wait)".into(),
            pauses: "the keying and think times".into(),
            share: 0.99,
            scheduled: false,
            behind: None,
        };
        let r = reading(&w, Some(&tpcc)).unwrap();
        assert!(r.contains("the keying and think times set the pace"), "{r}");
        assert!(!r.contains("bottleneck"), "{r}");
    }

    #[test]
    fn the_pacing_share_is_the_workers_waits_over_their_time() {
        let mut r = select(2000);
        assert_eq!(pacing(&rec(&r)), None);
        r.rate = Some(crate::stats::RateTarget { per_second: 2000.0 });
        // 2 workers over 1 s, 1.8 s of it waiting for their due times.
        r.total.schedule_wait = Duration::from_millis(1800);
        let p = pacing(&rec(&r)).unwrap();
        assert!((p.share - 0.9).abs() < 1e-9, "{p:?}");
        assert_eq!(p.what, "their --rate schedule (2000/s)");
        assert!(p.scheduled && p.behind.is_none(), "{p:?}");
        r.total.skipped = 3;
        let p = pacing(&rec(&r)).unwrap();
        assert!(p.behind.unwrap().contains("3 queries were skipped"));
        // Half the target achieved: behind, whatever else.
        let mut r = select(1000);
        r.rate = Some(crate::stats::RateTarget { per_second: 2000.0 });
        assert!(
            pacing(&rec(&r))
                .unwrap()
                .behind
                .unwrap()
                .contains("did not keep up")
        );
        // TPC-C's pauses alone.
        let mut r = select(10);
        r.total.pause_wait = Duration::from_millis(1000);
        let p = pacing(&rec(&r)).unwrap();
        assert!(!p.scheduled && p.behind.is_none() && (p.share - 0.5).abs() < 1e-9);
        // Named in the workload's words, which it put on the record.
        r.pauses = Some(crate::workload::tpcc::pause_words());
        let p = pacing(&rec(&r)).unwrap();
        assert_eq!(p.what, "the keying and think times (--tpcc-wait)");
        assert_eq!(p.pauses, "the keying and think times");
        r.rate = Some(crate::stats::RateTarget { per_second: 5.0 });
        assert_eq!(
            pacing(&rec(&r)).unwrap().what,
            "their --rate schedule (5/s) and the keying and think times (--tpcc-wait)"
        );
    }

    #[test]
    fn the_block_puts_the_servers_counts_beside_the_tools() {
        let mut r = select(1000);
        r.server = Some(ServerFigures {
            application_name: "ysql-bench-1-2-0".into(),
            nodes: vec!["127.0.0.1:5432".into()],
            database: Some(DbCounters {
                xact_commit: 1024,
                blks_hit: 999,
                blks_read: 1,
                tup_fetched: 1000,
                ..Default::default()
            }),
            own_commits: 20,
            statements: Some(vec![StatementFigures {
                query: "select f1, f2, f3, f4\n  from \"test_table\" where id = $1".into(),
                calls: 1000,
                rows: 1000,
                total_exec_ms: 10.0,
                max_exec_ms_since_reset: 0.5,
            }]),
            waits: Some(WaitCounts {
                samples: 2,
                ..waits(&[("Client:ClientRead", 3), ("CPU", 1)])
            }),
            sampler: Some(crate::stats::server::SamplerCost {
                samples: 10,
                period_ms: 100.0,
                mean_us: 200.0,
                max_us: 400.0,
            }),
            notes: vec!["a note".into()],
            ..Default::default()
        });
        let mut out = Vec::new();
        write_server(&mut out, &rec(&r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for want in [
            "server commits        : 1004, rollbacks 0 (the tool's own 20 statistics queries taken out)",
            "tool's count          : 1000 queries, 0 failed: difference +4 (the workers' 2 connections",
            "buffer cache hits     : 99.90%",
            "tuples per query      : 0.00 returned, 1.00 fetched",
            "statement             : 1000 calls, 10.000 us on the server on average vs 40.000 us at the client: select f1, f2, f3, f4 from \"test_table\" where id = $1",
            "server exec time      : 10.000 ms = 25.0% of the tool's db time (40.000 ms)",
            "server waits          : 75% Client:ClientRead, 25% CPU (2 samples, 2.0 of the run's backends each)",
            "reading the waits     : in 75% of the samples the run's backends waited for the client",
            "sampler               : 10 queries of pg_stat_activity, one every 100 ms",
            "busy 0.20% of the time",
            "server note           : a note",
        ] {
            assert!(text.contains(want), "{want}\nnot in\n{text}");
        }
        // No statements without the extension; nothing at all unwatched.
        r.server.as_mut().unwrap().statements = None;
        let mut out = Vec::new();
        write_server(&mut out, &rec(&r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("statement             :"), "{text}");
        assert!(!text.contains("server exec time"), "{text}");
        assert!(!text.contains("pooler"), "{text}");
        // Batches of several queries per Sync: one commit for each batch,
        // which the difference's reasons say with the count to expect.
        let mut out = Vec::new();
        let mut batched = rec(&r);
        batched.pipeline_sync = 8;
        write_server(&mut out, &batched).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("batches of 8 queries, each one transaction (--pipeline-sync 8: about 125 for these)"),
            "{text}"
        );
        r.server = None;
        let mut out = Vec::new();
        write_server(&mut out, &rec(&r)).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn csv_columns_hold_the_intervals_counts_and_waits() {
        let mut r = select(10);
        assert_eq!(
            csv_columns(&rec(&r), 0),
            [String::new(), String::new(), String::new()]
        );
        r.server = Some(ServerFigures {
            intervals: vec![ServerInterval {
                index: 0,
                waits: waits(&[("CPU", 3), ("Lock:relation", 1)]),
                commits: Some(12),
                rollbacks: Some(0),
            }],
            ..Default::default()
        });
        assert_eq!(
            csv_columns(&rec(&r), 0),
            [
                "12".to_string(),
                "0".to_string(),
                "CPU=75.0;Lock:relation=25.0".to_string()
            ]
        );
        assert_eq!(csv_columns(&rec(&r), 1)[0], "");
        assert!(has_wait_band(&r));
    }
}
