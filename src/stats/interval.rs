//! Figures per time interval (per second by default, or per
//! `--report-interval`): throughput and latency over time.
//!
//! Workers record each unit into an [`IntervalStats`] for the interval in
//! which the unit ended and hand it over when they move on to the next
//! interval; the runner merges the pieces of an interval and turns them
//! into [`IntervalFigures`], dropping the histogram. So the memory kept for
//! a long run is a few numbers per interval, not a histogram per interval.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::{Percentiles, Timing, nanos, new_histogram, record_ns};
use crate::workload::Outcome;

/// What one or more workers measured in one interval.
#[derive(Clone, Debug)]
pub struct IntervalStats {
    pub ops: u64,
    pub rows: u64,
    pub errors: u64,
    /// Units skipped under --latency-limit (already too late when due).
    pub skipped: u64,
    pub latency: Histogram<u64>,
    pub lag_total: Duration,
    pub lag_max: Duration,
}

impl Default for IntervalStats {
    fn default() -> Self {
        IntervalStats {
            ops: 0,
            rows: 0,
            errors: 0,
            skipped: 0,
            latency: new_histogram(),
            lag_total: Duration::ZERO,
            lag_max: Duration::ZERO,
        }
    }
}

impl IntervalStats {
    pub fn record(&mut self, timing: Timing, outcome: Outcome) {
        self.ops += 1;
        self.rows += outcome.rows;
        record_ns(&mut self.latency, nanos(timing.latency));
        let lag = timing.lag();
        self.lag_total += lag;
        self.lag_max = self.lag_max.max(lag);
    }

    pub fn add(&mut self, other: &IntervalStats) {
        self.ops += other.ops;
        self.rows += other.rows;
        self.errors += other.errors;
        self.skipped += other.skipped;
        let _ = self.latency.add(&other.latency);
        self.lag_total += other.lag_total;
        self.lag_max = self.lag_max.max(other.lag_max);
    }

    pub fn is_empty(&self) -> bool {
        self.ops == 0 && self.errors == 0 && self.skipped == 0
    }

    /// The figures of interval `index` of length `len`.
    pub fn figures(&self, index: u64, len: Duration) -> IntervalFigures {
        let secs = len.as_secs_f64();
        IntervalFigures {
            index,
            end_s: (index + 1) as f64 * secs,
            seconds: secs,
            ops: self.ops,
            rows: self.rows,
            errors: self.errors,
            skipped: self.skipped,
            ops_per_s: self.ops as f64 / secs,
            rows_per_s: self.rows as f64 / secs,
            latency: Percentiles::of(&self.latency),
            lag_avg_ns: nanos(self.lag_total).checked_div(self.ops).unwrap_or(0),
            lag_max_ns: nanos(self.lag_max),
        }
    }
}

/// The figures of one interval, all latencies in nanoseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IntervalFigures {
    /// 0 for the first interval.
    pub index: u64,
    /// Seconds from the start of measurement to the end of the interval.
    pub end_s: f64,
    /// The interval's length in seconds.
    pub seconds: f64,
    pub ops: u64,
    pub rows: u64,
    pub errors: u64,
    /// Units skipped under --latency-limit.
    #[serde(default)]
    pub skipped: u64,
    pub ops_per_s: f64,
    pub rows_per_s: f64,
    pub latency: Percentiles,
    pub lag_avg_ns: u64,
    pub lag_max_ns: u64,
}
