//! Measurements: what each worker records, and how they are merged.
//!
//! Each worker owns a [`Stats`] and records into it without locks; the
//! runner merges them with [`Stats::add`] when the workers are done. Stats
//! are plain data: turning them into text, pictures or JSON is the
//! business of [`crate::report`].
//!
//! Latency is kept in an HDR histogram in nanoseconds with three
//! significant digits (at most 0.1% error on any percentile), from 1 ns to
//! one hour; slower units are clamped to one hour and still counted.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::workload::{OpKind, Outcome};

/// The highest latency the histograms hold: one hour, in nanoseconds.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;
/// Significant digits of the histograms.
pub const SIGFIG: u8 = 3;

/// A latency histogram in nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts (low >= 1,
    // high >= 2 * low, sigfig <= 5), so this cannot fail.
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, SIGFIG)
        .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
}

/// Nanoseconds of a duration, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What one worker (or, after merging, all workers) measured.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Units (batches, files, calls, queries) that succeeded.
    pub ops: u64,
    /// Rows written or read by the units that succeeded.
    pub rows: u64,
    /// Rows looked for and not found (select, update).
    pub missing: u64,
    /// Time spent in successful units: the "database time".
    pub busy: Duration,
    /// Latency of each successful unit.
    pub latency: Histogram<u64>,
    /// Latency per row of each successful unit (loads: batch time / rows).
    pub row_latency: Histogram<u64>,
    /// Failed units, by SQLSTATE or client-side class.
    pub errors: BTreeMap<String, u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            ops: 0,
            rows: 0,
            missing: 0,
            busy: Duration::ZERO,
            latency: new_histogram(),
            row_latency: new_histogram(),
            errors: BTreeMap::new(),
        }
    }
}

impl Stats {
    /// Records a successful unit.
    pub fn record(&mut self, latency: Duration, outcome: Outcome) {
        let ns = nanos(latency).clamp(1, MAX_LATENCY_NS);
        self.ops += 1;
        self.rows += outcome.rows;
        self.missing += outcome.missing;
        self.busy += latency;
        self.latency.saturating_record(ns);
        if let Some(per_row) = ns.checked_div(outcome.rows) {
            self.row_latency
                .saturating_record(per_row.clamp(1, MAX_LATENCY_NS));
        }
    }

    /// Counts a failed unit under its error class.
    pub fn record_error(&mut self, class: &str) {
        *self.errors.entry(class.to_string()).or_insert(0) += 1;
    }

    /// Failed units in all.
    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds another worker's measurements into these.
    pub fn add(&mut self, other: &Stats) {
        self.ops += other.ops;
        self.rows += other.rows;
        self.missing += other.missing;
        self.busy += other.busy;
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.row_latency.add(&other.row_latency);
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
    }
}

/// Everything measured about one operation of a run.
#[derive(Clone, Debug)]
pub struct OpResult {
    pub kind: OpKind,
    pub threads: usize,
    pub batch_size: usize,
    /// Rows the table was to hold (loads) or ids were drawn from (queries).
    pub table_rows: u64,
    pub nontransactional: bool,
    /// From the moment all workers were ready to the end of the last one.
    pub wallclock: Duration,
    /// All workers merged.
    pub total: Stats,
    /// Rows done by each thread, in thread order.
    pub thread_rows: Vec<u64>,
    /// Why the operation failed, if it did.
    pub failure: Option<String>,
}

impl OpResult {
    pub fn succeeded(&self) -> bool {
        self.failure.is_none() && self.total.failed() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(rows: u64) -> Outcome {
        Outcome { rows, missing: 0 }
    }

    #[test]
    fn merged_stats_equal_one_worker_that_did_everything() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        let mut all = Stats::default();
        for i in 1..=100u64 {
            let d = Duration::from_micros(i * 10);
            let s = if i % 2 == 0 { &mut a } else { &mut b };
            s.record(d, outcome(2));
            all.record(d, outcome(2));
        }
        b.record_error("40001");
        a.record_error("40001");
        a.record_error("57P01");
        a.add(&b);
        assert_eq!(a.ops, all.ops);
        assert_eq!(a.rows, 200);
        assert_eq!(a.busy, all.busy);
        assert_eq!(a.latency, all.latency);
        assert_eq!(a.errors.get("40001"), Some(&2));
        assert_eq!(a.failed(), 3);
    }

    #[test]
    fn percentiles_of_a_uniform_distribution_are_within_a_tenth_of_a_percent() {
        let mut s = Stats::default();
        for us in 1..=10_000u64 {
            s.record(Duration::from_micros(us), outcome(1));
        }
        for (q, expect_us) in [(50.0, 5_000.0), (99.0, 9_900.0), (99.9, 9_990.0)] {
            let got = s.latency.value_at_quantile(q / 100.0) as f64 / 1000.0;
            assert!(
                (got - expect_us).abs() / expect_us < 0.001,
                "p{q}: {got} vs {expect_us}"
            );
        }
        assert_eq!(s.latency.min(), 1_000);
        assert!((s.latency.max() as f64 - 10_000_000.0).abs() / 1e7 < 0.001);
    }

    #[test]
    fn row_latency_divides_the_batch_time_by_its_rows() {
        let mut s = Stats::default();
        s.record(Duration::from_millis(2), outcome(200));
        let per_row = s.row_latency.max();
        assert!((9_990..=10_010).contains(&per_row), "{per_row}");
    }

    #[test]
    fn an_hour_long_unit_is_clamped_not_lost() {
        let mut s = Stats::default();
        s.record(Duration::from_secs(7200), outcome(1));
        assert_eq!(s.latency.len(), 1);
        assert_eq!(s.ops, 1);
    }
}
