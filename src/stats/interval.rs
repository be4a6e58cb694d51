//! Figures per time interval (per second by default, or per
//! `--report-interval`): throughput and latency over time.
//!
//! Workers record each unit into an [`IntervalStats`] for the interval in
//! which the unit ended and hand it over when they move on to the next
//! interval; the runner merges the pieces of an interval and turns them
//! into [`IntervalFigures`], keeping the histograms in HdrHistogram's V2
//! compressed encoding (base64, as the whole run's are saved): a few
//! hundred bytes per interval rather than the tens of kilobytes of a live
//! histogram, and enough for a merged run's or a late piece's percentiles
//! to be exact. Service time gets a histogram of its own only once a unit
//! was sent after it was due (under `--rate`); until then it is the
//! latency's. Figures add up by one rule, `AddAssign`: a late piece into
//! a finished interval, the clients' intervals of a merge.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::outcome::Outcome;
use super::saved::{decode_histogram, encode_histogram};
use super::{Percentiles, Timing, nanos, new_histogram, record_ns};

/// What one or more workers measured in one interval.
#[derive(Clone, Debug)]
pub struct IntervalStats {
    pub ops: u64,
    pub rows: u64,
    pub errors: u64,
    /// Units skipped under --latency-limit (already too late when due).
    pub skipped: u64,
    /// Retries of the units counted in the interval (at their end).
    pub retries: u64,
    /// Of `ops`, those that found rows missing (TPC-C: New-Orders rolled
    /// back by rule), so that a workload's figure per interval can leave
    /// them out (tpmC counts committed New-Orders).
    pub missing: u64,
    pub latency: Histogram<u64>,
    /// Service time, once it differed from the latency (a unit sent after
    /// it was due); None while every unit's service time was its latency.
    pub service: Option<Histogram<u64>>,
    pub lag_total: Duration,
    pub lag_max: Duration,
    /// Units that succeeded per host index, when the run balances over
    /// several hosts (empty otherwise).
    pub host_ops: Vec<u64>,
    /// `errors` by SQLSTATE or client-side class, as the run's
    /// statistics count them (the live metrics' errors by class).
    pub error_classes: BTreeMap<String, u64>,
    /// Of `ops`, units whose latency exceeded `--latency-limit`.
    pub late: u64,
    /// Connections made again after one was lost.
    pub reconnects: u64,
}

impl Default for IntervalStats {
    fn default() -> Self {
        IntervalStats {
            ops: 0,
            rows: 0,
            errors: 0,
            skipped: 0,
            retries: 0,
            missing: 0,
            latency: new_histogram(),
            service: None,
            lag_total: Duration::ZERO,
            lag_max: Duration::ZERO,
            host_ops: Vec::new(),
            error_classes: BTreeMap::new(),
            late: 0,
            reconnects: 0,
        }
    }
}

/// Adds `other` into `v` element by element, growing it as needed.
fn add_counts(v: &mut Vec<u64>, other: &[u64]) {
    if v.len() < other.len() {
        v.resize(other.len(), 0);
    }
    for (a, b) in v.iter_mut().zip(other) {
        *a += b;
    }
}

impl IntervalStats {
    /// Counts a unit that succeeded on host `host`.
    pub fn on_host(&mut self, host: usize) {
        if self.host_ops.len() <= host {
            self.host_ops.resize(host + 1, 0);
        }
        self.host_ops[host] += 1;
    }

    pub fn record(&mut self, timing: Timing, outcome: Outcome) {
        self.ops += 1;
        self.rows += outcome.rows;
        self.missing += outcome.missing;
        let (latency, service) = (nanos(timing.latency), nanos(timing.service));
        if self.service.is_none() && latency != service {
            // Every unit before this one was served in its latency.
            self.service = Some(self.latency.clone());
        }
        record_ns(&mut self.latency, latency);
        if let Some(h) = self.service.as_mut() {
            record_ns(h, service);
        }
        let lag = timing.lag();
        self.lag_total += lag;
        self.lag_max = self.lag_max.max(lag);
    }

    /// Counts a failed unit under its error class.
    pub fn record_error(&mut self, class: &str) {
        self.errors += 1;
        match self.error_classes.get_mut(class) {
            Some(n) => *n += 1,
            None => {
                self.error_classes.insert(class.to_string(), 1);
            }
        }
    }

    pub fn add(&mut self, other: &IntervalStats) {
        self.ops += other.ops;
        self.rows += other.rows;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.retries += other.retries;
        self.missing += other.missing;
        // Service first: a side without its own served in its latency.
        match (self.service.as_mut(), &other.service) {
            (Some(mine), Some(theirs)) => {
                let _ = mine.add(theirs);
            }
            (Some(mine), None) => {
                let _ = mine.add(&other.latency);
            }
            (None, Some(theirs)) => {
                let mut s = self.latency.clone();
                let _ = s.add(theirs);
                self.service = Some(s);
            }
            (None, None) => {}
        }
        let _ = self.latency.add(&other.latency);
        self.lag_total += other.lag_total;
        self.lag_max = self.lag_max.max(other.lag_max);
        add_counts(&mut self.host_ops, &other.host_ops);
        for (k, v) in &other.error_classes {
            *self.error_classes.entry(k.clone()).or_insert(0) += v;
        }
        self.late += other.late;
        self.reconnects += other.reconnects;
    }

    /// Whether nothing at all was counted (a piece with only rows left by
    /// a failed unit, or only retries, is not empty).
    pub fn is_empty(&self) -> bool {
        self.ops == 0
            && self.errors == 0
            && self.skipped == 0
            && self.rows == 0
            && self.retries == 0
            && self.reconnects == 0
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
            retries: self.retries,
            missing: self.missing,
            ops_per_s: self.ops as f64 / secs,
            rows_per_s: self.rows as f64 / secs,
            latency: Percentiles::of(&self.latency),
            service: self.service.as_ref().map(Percentiles::of),
            lag_avg_ns: nanos(self.lag_total).checked_div(self.ops).unwrap_or(0),
            lag_max_ns: nanos(self.lag_max),
            histograms: IntervalHistograms::of(&self.latency, self.service.as_ref()),
            host_units: self.host_ops.clone(),
            zone_units: Default::default(),
        }
    }
}

/// One interval's pieces of one or more workers: per transaction type,
/// and what belongs to no type (units skipped before they were staged).
#[derive(Clone, Debug)]
pub struct IntervalSet {
    pub types: Vec<IntervalStats>,
    pub common: IntervalStats,
}

impl IntervalSet {
    pub fn new(types: usize) -> Self {
        IntervalSet {
            types: (0..types.max(1))
                .map(|_| IntervalStats::default())
                .collect(),
            common: IntervalStats::default(),
        }
    }

    /// The piece of type `t` (the last for an index out of range).
    pub fn of(&mut self, t: usize) -> &mut IntervalStats {
        let last = self.types.len() - 1;
        &mut self.types[t.min(last)]
    }

    pub fn add(&mut self, other: &IntervalSet) {
        for (a, b) in self.types.iter_mut().zip(&other.types) {
            a.add(b);
        }
        self.common.add(&other.common);
    }

    pub fn is_empty(&self) -> bool {
        self.common.is_empty() && self.types.iter().all(IntervalStats::is_empty)
    }

    /// Every type and the common part merged.
    pub fn total(&self) -> IntervalStats {
        let mut t = self.common.clone();
        for s in &self.types {
            t.add(s);
        }
        t
    }

    /// The figures of interval `index` of length `len`, in all and per type.
    pub fn figures(&self, index: u64, len: Duration) -> SetFigures {
        SetFigures {
            total: self.total().figures(index, len),
            types: self.types.iter().map(|t| t.figures(index, len)).collect(),
        }
    }
}

/// The figures of one interval, in all and per transaction type.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetFigures {
    pub total: IntervalFigures,
    pub types: Vec<IntervalFigures>,
}

impl SetFigures {
    /// Every figure that depends on the interval's length, for a length
    /// that turned out other than planned (the last, partial interval).
    pub fn set_length(&mut self, seconds: f64, end_s: f64) {
        for f in std::iter::once(&mut self.total).chain(self.types.iter_mut()) {
            f.seconds = seconds;
            f.end_s = end_s;
            f.ops_per_s = f.ops as f64 / seconds;
            f.rows_per_s = f.rows as f64 / seconds;
        }
    }
}

/// The figures of one interval, all latencies in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Retries of the units counted in the interval (at their end).
    #[serde(default)]
    pub retries: u64,
    /// Of `ops`, those that found rows missing (TPC-C: the New-Orders
    /// rolled back by rule).
    #[serde(default)]
    pub missing: u64,
    pub ops_per_s: f64,
    pub rows_per_s: f64,
    pub latency: Percentiles,
    /// Service time (from when each unit was sent), when it differed from
    /// the latency in the interval (under `--rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<Percentiles>,
    pub lag_avg_ns: u64,
    pub lag_max_ns: u64,
    /// The interval's histograms, from which a merge or a late piece makes
    /// exact percentiles; absent in a report written before they were
    /// kept and in an interval without units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<IntervalHistograms>,
    /// Units that succeeded per host index of the run (live only: a
    /// record keeps them per zone, which means the same to every client).
    #[serde(skip)]
    pub host_units: Vec<u64>,
    /// Units that succeeded per YugabyteDB zone, when the nodes were
    /// discovered.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub zone_units: std::collections::BTreeMap<String, u64>,
}

/// An interval's HDR histograms in nanoseconds, base64 of the V2
/// compressed form (as [`super::saved`] keeps the whole run's).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IntervalHistograms {
    pub latency: String,
    /// Absent when service time was the latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// The histograms of one interval, decoded.
struct Decoded {
    latency: Histogram<u64>,
    service: Option<Histogram<u64>>,
}

impl IntervalHistograms {
    /// The encoded histograms; None when there is nothing in them (or,
    /// which a histogram of this crate's shape cannot be, they cannot be
    /// encoded).
    fn of(latency: &Histogram<u64>, service: Option<&Histogram<u64>>) -> Option<Self> {
        if latency.is_empty() {
            return None;
        }
        Some(IntervalHistograms {
            latency: encode_histogram(latency).ok()?,
            service: match service {
                Some(h) => Some(encode_histogram(h).ok()?),
                None => None,
            },
        })
    }

    /// Decoded into histograms of the run's own shape, so that they add.
    fn decode(&self) -> Option<Decoded> {
        let widen = |text: &str| -> Option<Histogram<u64>> {
            let mut h = new_histogram();
            h.add(decode_histogram(text).ok()?).ok()?;
            Some(h)
        };
        Some(Decoded {
            latency: widen(&self.latency)?,
            service: match &self.service {
                Some(s) => Some(widen(s)?),
                None => None,
            },
        })
    }
}

impl IntervalFigures {
    /// The latency histogram of the interval, when it was kept.
    pub fn latency_histogram(&self) -> Option<Histogram<u64>> {
        self.histograms.as_ref()?.decode().map(|d| d.latency)
    }

    /// The service-time histogram: its own, or the latency's when service
    /// time was the latency.
    pub fn service_histogram(&self) -> Option<Histogram<u64>> {
        let d = self.histograms.as_ref()?.decode()?;
        Some(d.service.unwrap_or(d.latency))
    }

    /// Service time's percentiles: its own, or the latency's.
    pub fn service(&self) -> Percentiles {
        self.service.unwrap_or(self.latency)
    }
}

impl IntervalFigures {
    /// Interval `index` of `seconds`, ending `end_s` after the start of
    /// measurement, with nothing in it yet: what a sum starts from.
    pub fn empty(index: u64, end_s: f64, seconds: f64) -> IntervalFigures {
        IntervalFigures {
            index,
            end_s,
            seconds,
            ..IntervalFigures::default()
        }
    }
}

/// The one rule by which interval figures add up: a late piece into an
/// interval already finished (the runner's collector), the clients'
/// intervals of one bin of the common clock (`merge`). Counts are summed
/// and the rates made again over `self`'s length; latency min, mean and
/// max and the schedule lag's average and max are exact. Percentiles come
/// from the sum of the two sides' histograms, so they are exact too; when
/// a side with units has none (a report written before they were kept)
/// they cannot be made from the parts' percentiles, and `self`'s stay as
/// they were (a sum started from [`IntervalFigures::empty`] has none, 0).
impl std::ops::AddAssign<&IntervalFigures> for IntervalFigures {
    fn add_assign(&mut self, other: &IntervalFigures) {
        let before = self.ops;
        self.add_histograms(other);
        self.ops += other.ops;
        self.rows += other.rows;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.retries += other.retries;
        self.missing += other.missing;
        if other.ops > 0 {
            let l = &mut self.latency;
            l.min = if before == 0 {
                other.latency.min
            } else {
                l.min.min(other.latency.min)
            };
            l.max = l.max.max(other.latency.max);
            let weigh =
                |a: f64, b: f64| (a * before as f64 + b * other.ops as f64) / self.ops as f64;
            l.mean = weigh(l.mean, other.latency.mean);
            self.lag_avg_ns = weigh(self.lag_avg_ns as f64, other.lag_avg_ns as f64) as u64;
        }
        self.lag_max_ns = self.lag_max_ns.max(other.lag_max_ns);
        add_counts(&mut self.host_units, &other.host_units);
        for (zone, n) in &other.zone_units {
            *self.zone_units.entry(zone.clone()).or_default() += n;
        }
        if self.seconds > 0.0 {
            self.ops_per_s = self.ops as f64 / self.seconds;
            self.rows_per_s = self.rows as f64 / self.seconds;
        }
    }
}

impl IntervalFigures {
    /// The histograms of `self` and `other` added and the percentiles made
    /// from the sum (min, mean and max are left to `AddAssign`); with a
    /// side's histograms missing, none are kept.
    fn add_histograms(&mut self, other: &IntervalFigures) {
        let side = |f: &IntervalFigures| -> Option<Option<Decoded>> {
            match &f.histograms {
                Some(h) => h.decode().map(Some),
                // Nothing measured: nothing to add.
                None if f.ops == 0 => Some(None),
                None => None,
            }
        };
        let (Some(mine), Some(theirs)) = (side(self), side(other)) else {
            self.histograms = None;
            self.service = None;
            return;
        };
        let sum = match (mine, theirs) {
            (_, None) => return,
            (None, Some(t)) => t,
            (Some(m), Some(t)) => {
                let served = |d: &Decoded| d.service.clone().unwrap_or_else(|| d.latency.clone());
                let service = (m.service.is_some() || t.service.is_some()).then(|| {
                    let mut s = served(&m);
                    let _ = s.add(served(&t));
                    s
                });
                let mut latency = m.latency;
                let _ = latency.add(&t.latency);
                Decoded { latency, service }
            }
        };
        let keep = (self.latency.min, self.latency.mean, self.latency.max);
        self.latency = Percentiles {
            min: keep.0,
            mean: keep.1,
            max: keep.2,
            ..Percentiles::of(&sum.latency)
        };
        self.service = sum.service.as_ref().map(Percentiles::of);
        self.histograms = IntervalHistograms::of(&sum.latency, sum.service.as_ref());
    }
}
