//! An operation's result, from what its workers measured: the facts of
//! the operation first (what ran, against what, paced how), then the
//! workers' and threads' measurements merged, per type and per interval,
//! and the workload's own figures read from them.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::RunCtx;
use super::coordinator::WorkersOutcome;
use crate::stats::outcome::merge_statements;
use crate::stats::{OpResult, RateTarget, Stats, Timeline, TypeResult, TypedStats};
use crate::workload::{IntervalMetrics, TypeFigures, Workload};

/// The result of an operation before it runs: what it is, with one empty
/// entry per transaction type.
pub(super) fn begin(ctx: &RunCtx, workload: &dyn Workload) -> OpResult {
    let spec = workload.spec();
    let s = &ctx.settings;
    let mut result = OpResult::new(spec.kind(), s.threads);
    result.batch_text = workload.facts().batch_text.clone();
    result.table = workload.facts().table.as_str().to_string();
    result.workload = workload.facts().description.clone();
    result.measured = workload.facts().has_units;
    result.missing_label = workload.facts().missing_label;
    result.pauses = workload.facts().pauses.clone();
    result.terminals = workload.facts().terminals;
    // A load's own count of what it writes (TPC-C's warehouses), else -r.
    result.table_rows = match workload.load_rows() {
        Some(rows) if spec.is_load() => rows,
        _ => s.rows,
    };
    result.nontransactional = s.nontransactional;
    result.rate = s
        .rate
        .filter(|_| spec.paced)
        .map(|r| RateTarget { per_second: r });
    result.pipeline = s.pipeline_for(workload.facts().pipelines);
    result.pipeline_sync = s.pipeline_sync_for(workload.facts().pipelines);
    // As --rate: one statement per thread is not a unit to count late.
    result.latency_limit = s.latency_limit.filter(|_| spec.paced);
    if !spec.is_load() {
        result.warmup = s.warmup;
        result.transactions = s.transactions;
    }
    result.hosts = ctx.conns.labels();
    result.host_places = ctx.conns.places();
    result.types = workload
        .facts()
        .types
        .iter()
        .map(|&name| TypeResult {
            name,
            stats: Stats::default(),
            intervals: Vec::new(),
        })
        .collect();
    result
}

/// Merges what the workers and their threads measured into `result`;
/// returns when measurement started.
pub(super) fn absorb(
    result: &mut OpResult,
    outcome: WorkersOutcome,
    per_interval: Option<&IntervalMetrics>,
) -> Instant {
    result.wallclock = outcome.wallclock;
    if let Some(ran) = outcome.warmup_cut {
        result.warmup = Some(ran);
        result.warmup_cut = true;
    }
    // Every unit runs on the one data-plane driver; the name stays in
    // the record so that `compare` can tell these runs from older ones.
    if !outcome.workers.is_empty() {
        result.driver = "lean".to_string();
    }
    for (t, w) in outcome.workers.into_iter().enumerate() {
        result.thread_rows[t] = w.rows;
        result.timed_out |= w.timed_out;
    }
    let mut merged = TypedStats::new(result.types.len());
    result.timeline = Timeline::new(result.types.len());
    for th in outcome.threads {
        merged.add(&th.stats);
        result.scatter.push(th.scatter);
        result.timeline.add(&th.timeline);
        merge_statements(&mut result.statements, th.statements);
    }
    result.total = merged.total();
    // A load that reached the end of its share as --time ran out did not
    // stop short.
    result.timed_out &= result.total.rows < result.table_rows;
    for (i, (ty, stats)) in result.types.iter_mut().zip(merged.types).enumerate() {
        ty.stats = stats;
        ty.intervals = outcome
            .intervals
            .iter()
            .filter_map(|f| f.types.get(i).cloned())
            .collect();
    }
    if let Some(f) = per_interval {
        for set in &outcome.intervals {
            for m in f(&set.types) {
                result
                    .interval_metrics
                    .entry(m.key)
                    .or_default()
                    .push(m.value);
            }
        }
    }
    result.intervals = outcome.intervals.into_iter().map(|f| f.total).collect();
    result.failure = outcome.failure;
    outcome.start
}

/// What follows from the measurements: the hosts as the operation ended
/// (with their zones), the workload's figures, its scale,
/// whether the run was interrupted, and a failure when nothing ever
/// succeeded.
pub(super) fn conclude(result: &mut OpResult, ctx: &RunCtx, workload: &dyn Workload) {
    // Nodes found during the operation (`--yb-refresh`) have their
    // indexes after those known at its start.
    result.hosts = ctx.conns.labels();
    result.host_places = ctx.conns.places();
    let counts: Vec<TypeFigures> = result
        .types
        .iter()
        .map(|t| TypeFigures {
            units: t.stats.ops,
            missing: t.stats.missing,
            p90: Duration::from_nanos(t.stats.latency.value_at_quantile(0.90)),
        })
        .collect();
    result.metrics = workload.metrics(&counts, result.wallclock);
    // After the run: a script's :scale is known once its set-up read it.
    result.scale = workload
        .scale()
        .unwrap_or_else(|| format!("{} rows", result.table_rows));
    result.interrupted = ctx.interrupted.load(Ordering::Relaxed);
    // Retried until the end without one success (a conflict that never
    // resolves): nothing was measured, and that is a failure, not a run.
    // Those retries are of units the end left out, which `retries` does
    // not count.
    let t = &result.total;
    if result.failure.is_none() && t.ops == 0 && t.failed() == 0 && t.left_out_retries > 0 {
        result.failure = Some(format!(
            "no {} succeeded: {} retries until the end of the run (a conflict that never resolves?)",
            workload.spec().unit,
            t.left_out_retries
        ));
    }
}
