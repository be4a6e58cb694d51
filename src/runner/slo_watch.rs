//! `--slo` while an operation runs: each finished interval is added to
//! what was measured so far, the criteria are judged on it for the
//! progress line ("slo met so far", or which criterion is missed so far),
//! and under `--slo-abort` a criterion that can no longer be met stops
//! the operation (the reason is kept for the run's verdict).
//!
//! Judging is the statistics layer's ([`crate::stats::slo::Live`]); this
//! file only keeps the running sum and knows the runner's bound on the
//! units an operation can end, which makes a miss certain.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::schedule::Distribution;
use super::settings::RunSettings;
use crate::stats::interval::{IntervalSet, SetFigures};
use crate::stats::slo::{Live, LiveCounts, Slo, SoFar, latency_text};

/// The running sum of an operation's intervals and what to do with it.
pub(super) struct SloWatch {
    slo: Arc<Slo>,
    abort: bool,
    operation: &'static str,
    names: Arc<[&'static str]>,
    so_far: Option<IntervalSet>,
    target_per_s: Option<f64>,
    max_units: Option<u64>,
    run_s: Option<f64>,
    /// Set with the reason when `--slo-abort` stops the operation.
    stopped: Arc<Mutex<Option<String>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

/// The most units an operation can end in all, when the run bounds them:
/// `--transactions` per worker, or a fixed `--rate` schedule over the
/// warmup and `--time` (a unit due in the warmup may end in the measured
/// time), one more per worker for the slot at the start. None otherwise
/// (no rate, Poisson arrivals), when no miss of a share or percentile is
/// ever certain.
pub(super) fn max_units(plan: &RunSettings, paced: bool) -> Option<u64> {
    if let Some(n) = plan.transactions {
        return Some(n.saturating_mul(plan.threads as u64));
    }
    let rate = plan.rate.filter(|_| paced)?;
    if plan.rate_distribution != Distribution::Fixed {
        return None;
    }
    let secs = plan.run_time.as_secs_f64() + plan.warmup.map_or(0.0, |w| w.as_secs_f64());
    Some((rate * secs).ceil() as u64 + plan.threads as u64)
}

impl SloWatch {
    /// A watch for an operation of the run, or None without `--slo`.
    pub(super) fn new(
        plan: &RunSettings,
        spec: &'static crate::workload::Spec,
        names: Arc<[&'static str]>,
        stopped: Arc<Mutex<Option<String>>>,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> Option<SloWatch> {
        let slo = plan.slo.clone()?;
        Some(SloWatch {
            slo,
            abort: plan.slo_abort,
            operation: spec.name,
            names,
            so_far: None,
            target_per_s: plan.rate.filter(|_| spec.paced),
            max_units: max_units(plan, spec.paced),
            run_s: plan
                .transactions
                .is_none()
                .then_some(plan.run_time.as_secs_f64()),
            stopped,
            stop,
        })
    }

    /// Adds an interval; returns the progress line's words ("slo met so
    /// far", "slo p99<10ms missed so far (12.3 ms)"), and under
    /// `--slo-abort` stops the operation when a criterion cannot be met.
    pub(super) fn interval(&mut self, f: &SetFigures, pieces: &IntervalSet) -> String {
        match self.so_far.as_mut() {
            Some(s) => s.add(pieces),
            None => self.so_far = Some(pieces.clone()),
        }
        let Some(sum) = self.so_far.as_ref() else {
            return String::new();
        };
        let total = sum.total();
        let types: Vec<(&str, LiveCounts)> = self
            .names
            .iter()
            .zip(&sum.types)
            .map(|(n, s)| (*n, counts(s, 0)))
            .collect();
        let live = Live {
            types: &types,
            total: counts(&total, total.skipped),
            operation: self.operation,
            elapsed_s: f.total.end_s,
            target_per_s: self.target_per_s,
            max_units: self.max_units,
            run_s: self.run_s,
        };
        let mut missed = Vec::new();
        let mut unknown = 0;
        for c in self.slo.criteria.iter().filter(|c| live.applies(c)) {
            match live.so_far(c) {
                SoFar::Met => {}
                SoFar::Unknown => unknown += 1,
                SoFar::Missed => missed.push(format!(
                    "{} ({})",
                    c.text,
                    live.value(c).map_or_else(String::new, |v| value(c, v))
                )),
            }
            if self.abort
                && let Some(why) = live.certain_miss(c)
            {
                self.abort_with(why);
            }
        }
        let known = if unknown > 0 {
            format!(" ({unknown} known at the end)")
        } else {
            String::new()
        };
        if missed.is_empty() {
            format!(", slo met so far{known}")
        } else {
            format!(", slo missed so far: {}{known}", missed.join(", "))
        }
    }

    fn abort_with(&self, why: String) {
        let Ok(mut slot) = self.stopped.lock() else {
            return;
        };
        if slot.is_none() {
            crate::say!(">> {}: stopped by --slo-abort: {why}", self.operation);
            *slot = Some(why);
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The counts of a sum of intervals, as the judgement reads them.
fn counts(s: &crate::stats::interval::IntervalStats, skipped: u64) -> LiveCounts<'_> {
    LiveCounts {
        ops: s.ops,
        errors: s.errors,
        retries: s.retries,
        skipped,
        latency: &s.latency,
    }
}

/// A value in the criterion's unit, as the progress line says it.
fn value(c: &crate::stats::slo::Criterion, v: f64) -> String {
    match c.measure {
        crate::stats::slo::Measure::Latency(..) => latency_text(v),
        _ => crate::stats::slo::value_text(&c.measure, Some(v)),
    }
}
