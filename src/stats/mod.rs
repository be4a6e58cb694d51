//! Measurements: what each worker records, and how they are merged.
//!
//! The workers of each OS thread share one set of [`Stats`] and record into
//! it without locks (they never run at the same time; see the runner's
//! `recorder.rs`); the runner merges the threads' with [`Stats::add`] when
//! the workers are done. Stats are plain data: turning them into text,
//! pictures or JSON is the business of [`crate::report`]. The run's
//! record ([`record`]) is the same data as a saved report holds it,
//! [`saved`] how `Stats` are written and read back, and [`merge`] how
//! several clients' records become one.
//!
//! Latency is kept in HDR histograms in nanoseconds with three significant
//! digits (at most 0.1% error on any percentile). They grow with the
//! largest value recorded, so a run of fast queries keeps small histograms;
//! values are clamped at one hour and still counted.
//!
//! Two latencies are kept per unit. `latency` counts from when the unit
//! was *due*: under `--rate` that is its slot in the schedule, so a stalled
//! server shows in it even though the client sent nothing while it waited
//! (no coordinated omission). `service` counts from when the unit was
//! actually sent. Without a rate both are the same.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use outcome::Outcome;

pub mod conns;
pub mod exact_u64;
pub mod find_max;
pub mod interval;
pub mod live;
pub mod merge;
pub mod outcome;
pub mod record;
pub mod saved;
pub mod scatter;
pub mod server;
pub mod slo;
pub mod timeline;

pub use interval::IntervalFigures;
pub use scatter::{Point, Scatter};
pub use timeline::Timeline;

/// The highest latency the histograms hold: one hour, in nanoseconds.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;
/// Significant digits of the histograms.
pub const SIGFIG: u8 = 3;

/// A latency histogram in nanoseconds that grows as needed.
pub fn new_histogram() -> Histogram<u64> {
    // sigfig 3 is within hdrhistogram's 0..=5, so this cannot fail.
    Histogram::new(SIGFIG).unwrap_or_else(|_| unreachable!("3 significant digits are valid"))
}

/// Records a latency, clamped to 1 ns ..= one hour.
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    let v = ns.clamp(1, MAX_LATENCY_NS);
    // `record` grows the histogram (saturating_record would not); should
    // growing ever fail, count the value at the top rather than lose it.
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// Nanoseconds of a duration, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The timing of one executed unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// From when the unit was due to its result.
    pub latency: Duration,
    /// From when it was sent to its result.
    pub service: Duration,
}

impl Timing {
    /// A unit with no schedule: due when sent.
    pub fn unscheduled(d: Duration) -> Timing {
        Timing {
            latency: d,
            service: d,
        }
    }

    /// How late the unit was sent compared with its schedule.
    pub fn lag(&self) -> Duration {
        self.latency.saturating_sub(self.service)
    }
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
    /// Service time of successful units summed: the "database time".
    pub busy: Duration,
    /// Latency of each successful unit, from when it was due.
    pub latency: Histogram<u64>,
    /// Service time of each successful unit, from when it was sent.
    pub service: Histogram<u64>,
    /// Latency per row of each successful unit (loads: batch time / rows).
    pub row_latency: Histogram<u64>,
    /// Schedule lag summed and at most (under `--rate`).
    pub lag_total: Duration,
    pub lag_max: Duration,
    /// Units whose latency exceeded `--latency-limit`.
    pub late: u64,
    /// Units skipped because they were already later than the limit when due.
    pub skipped: u64,
    /// Failed units, by SQLSTATE or client-side class.
    pub errors: BTreeMap<String, u64>,
    /// Units that succeeded or failed only after at least one retry.
    pub retried: u64,
    /// Retries in all, of the units counted (done or failed): a unit's
    /// retries are counted with it, when it ends.
    pub retries: u64,
    /// Retries of the units the end of the run left out (cut short while
    /// being retried, or cancelled), which no other figure counts. Only
    /// the check that a run retried to its end without counting one unit
    /// reads them; reports do not keep them.
    pub left_out_retries: u64,
    /// Of the units that succeeded after retries: their service time (all
    /// tries and the pauses between) and their successful try alone. With
    /// them, [`Stats::attempt`] gives every unit's successful try.
    pub retried_service: Histogram<u64>,
    pub retried_attempt: Histogram<u64>,
    /// Reconnections after a lost connection.
    pub reconnects: u64,
    /// Which units failed (e.g. "ids 400..600"), the first [`FAILED_UNITS_KEPT`].
    pub failed_units: Vec<String>,
    /// Connections per host, and connect times under --reconnect.
    pub conns: conns::ConnStats,
    /// Time the workers spent waiting for their units' due times
    /// (`--rate`), summed over the workers: idle by design, which the
    /// server sees as backends waiting for the client.
    pub schedule_wait: Duration,
    /// Time the workers spent in the workload's pauses (TPC-C's keying
    /// and think times, `--tpcc-wait`), summed over the workers.
    pub pause_wait: Duration,
}

/// How many failed units are named in reports.
pub const FAILED_UNITS_KEPT: usize = 10;

impl Default for Stats {
    fn default() -> Self {
        Stats {
            ops: 0,
            rows: 0,
            missing: 0,
            busy: Duration::ZERO,
            latency: new_histogram(),
            service: new_histogram(),
            row_latency: new_histogram(),
            lag_total: Duration::ZERO,
            lag_max: Duration::ZERO,
            late: 0,
            skipped: 0,
            errors: BTreeMap::new(),
            retried: 0,
            retries: 0,
            left_out_retries: 0,
            retried_service: new_histogram(),
            retried_attempt: new_histogram(),
            reconnects: 0,
            failed_units: Vec::new(),
            conns: conns::ConnStats::default(),
            schedule_wait: Duration::ZERO,
            pause_wait: Duration::ZERO,
        }
    }
}

/// Which histograms a run fills as it goes. Without a schedule a unit's
/// service time is its latency, and only loads report latency per row; a
/// histogram not kept is filled from the others at the end
/// ([`TypedStats::complete`]), so reports are the same either way and the
/// hot path records two values instead of three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keep {
    /// Service time apart from latency (under `--rate`).
    pub service: bool,
    /// Latency per row (loads).
    pub per_row: bool,
    /// The scatter sample and the fine timeline, which only the pictures
    /// draw: two more records per unit, skipped without `--graph`.
    pub pictures: bool,
}

impl Keep {
    pub const ALL: Keep = Keep {
        service: true,
        per_row: true,
        pictures: true,
    };
}

impl Stats {
    /// Records a successful unit.
    pub fn record(&mut self, timing: Timing, outcome: Outcome) {
        self.record_kept(timing, outcome, Keep::ALL);
    }

    /// Records a successful unit into the histograms `keep` names.
    pub fn record_kept(&mut self, timing: Timing, outcome: Outcome, keep: Keep) {
        let ns = nanos(timing.latency);
        self.ops += 1;
        self.rows += outcome.rows;
        self.missing += outcome.missing;
        self.busy += timing.service;
        record_ns(&mut self.latency, ns);
        if keep.service {
            record_ns(&mut self.service, nanos(timing.service));
        }
        if keep.per_row
            && let Some(per_row) = ns.checked_div(outcome.rows)
        {
            record_ns(&mut self.row_latency, per_row);
        }
        let lag = timing.lag();
        self.lag_total += lag;
        self.lag_max = self.lag_max.max(lag);
    }

    /// Notes a unit that succeeded after retries: `service` with them,
    /// `attempt` its successful try alone.
    pub fn record_retried(&mut self, service: Duration, attempt: Duration) {
        record_ns(&mut self.retried_service, nanos(service));
        record_ns(&mut self.retried_attempt, nanos(attempt));
    }

    /// The time of every successful unit's successful try alone: the
    /// service times, with those of retried units replaced by their last
    /// try (as sysbench and the booking benchmark report beside the time
    /// with retries). Equal to `service` when nothing was retried.
    pub fn attempt(&self) -> Histogram<u64> {
        let mut h = self.service.clone();
        if !self.retried_service.is_empty() {
            // The retried units' service times are in `service`, so they
            // can be taken out.
            let _ = h.subtract(&self.retried_service);
            let _ = h.add(&self.retried_attempt);
        }
        h
    }

    /// Counts a failed unit under its error class, naming it if known.
    pub fn record_error(&mut self, class: &str, unit: Option<String>) {
        *self.errors.entry(class.to_string()).or_insert(0) += 1;
        if let Some(u) = unit
            && self.failed_units.len() < FAILED_UNITS_KEPT
        {
            self.failed_units.push(u);
        }
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
        // Auto-resizing histograms of equal precision always add.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.row_latency.add(&other.row_latency);
        self.lag_total += other.lag_total;
        self.lag_max = self.lag_max.max(other.lag_max);
        self.late += other.late;
        self.skipped += other.skipped;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
        self.retried += other.retried;
        self.retries += other.retries;
        self.left_out_retries += other.left_out_retries;
        let _ = self.retried_service.add(&other.retried_service);
        let _ = self.retried_attempt.add(&other.retried_attempt);
        self.reconnects += other.reconnects;
        let room = FAILED_UNITS_KEPT.saturating_sub(self.failed_units.len());
        self.failed_units
            .extend(other.failed_units.iter().take(room).cloned());
        self.conns.add(&other.conns);
        self.schedule_wait += other.schedule_wait;
        self.pause_wait += other.pause_wait;
    }
}

/// What one worker measured, per transaction type of its workload, and
/// what belongs to no type (connections, reconnects, skipped units). Each
/// unit is recorded once, into its type; the total is the sum, made when
/// the workers are merged, so a workload with one type costs no more than
/// before types existed.
#[derive(Clone, Debug)]
pub struct TypedStats {
    pub types: Vec<Stats>,
    pub common: Stats,
}

impl TypedStats {
    pub fn new(types: usize) -> Self {
        TypedStats {
            types: (0..types.max(1)).map(|_| Stats::default()).collect(),
            common: Stats::default(),
        }
    }

    /// The stats of type `t` (the last type for an index out of range,
    /// which a workload should never report).
    pub fn of(&mut self, t: usize) -> &mut Stats {
        let last = self.types.len() - 1;
        &mut self.types[t.min(last)]
    }

    /// Adds another worker's measurements, type by type.
    pub fn add(&mut self, other: &TypedStats) {
        for (a, b) in self.types.iter_mut().zip(&other.types) {
            a.add(b);
        }
        self.common.add(&other.common);
    }

    /// Fills the histograms that recording left out (see [`Keep`]):
    /// service time as latency when units had no schedule. Latency per
    /// row is left empty where it was not kept; only loads report it.
    pub fn complete(&mut self, keep: Keep) {
        if !keep.service {
            for s in self
                .types
                .iter_mut()
                .chain(std::iter::once(&mut self.common))
            {
                s.service = s.latency.clone();
            }
        }
    }

    /// Every type and the common part merged.
    pub fn total(&self) -> Stats {
        let mut t = self.common.clone();
        for s in &self.types {
            t.add(s);
        }
        t
    }
}

/// Percentiles of a histogram in nanoseconds, as reports show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Percentiles {
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub stdev: f64,
}

impl Percentiles {
    /// The figures of `h`, each exactly as hdrhistogram's own methods give
    /// it, in three passes over the histogram instead of eight (five
    /// percentiles, the mean, and the mean again inside the standard
    /// deviation): every interval of every transaction type is summed up
    /// this way each second.
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let mut at = h.value_at_quantiles([0.50, 0.90, 0.95, 0.99, 0.999]);
        let mut next = || at.next().unwrap_or(0);
        let (p50, p90, p95, p99, p999) = (next(), next(), next(), next(), next());
        let mean = h.mean();
        Percentiles {
            // Every figure as the top of its HDR bucket, as
            // value_at_quantile gives them: one sample reads the same as
            // min, p50 and max, never min < max.
            min: h.highest_equivalent(h.min()),
            mean,
            p50,
            p90,
            p95,
            p99,
            p999,
            max: h.max(),
            stdev: stdev_around(h, mean),
        }
    }
}

/// The standard deviation of `h` around its `mean`, summed as
/// `Histogram::stdev` sums it (which first works the mean out again).
fn stdev_around(h: &Histogram<u64>, mean: f64) -> f64 {
    let total = h.iter_recorded().fold(0.0_f64, |sum, v| {
        let dev = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
        sum + (dev * dev) * v.count_since_last_iteration() as f64
    });
    (total / h.len() as f64).sqrt()
}

/// What a rate-limited operation aimed at.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RateTarget {
    /// Units per second over all threads.
    pub per_second: f64,
}

/// What the statistics know of the operation a result is of: its name and
/// how its units are called, whether it loads and whether `--rate` paces
/// it. The workload layer's registry entry gives it
/// (`workload::Spec::kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpKind {
    /// The name in `-o` and in reports.
    pub name: &'static str,
    /// What one timed unit is, singular and plural.
    pub unit: &'static str,
    pub units: &'static str,
    /// Whether it writes keys `0..rows` into emptied tables.
    pub load: bool,
    /// Whether `--rate` paces its units.
    pub paced: bool,
}

impl OpKind {
    pub fn is_load(&self) -> bool {
        self.load
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// What was measured of one transaction type of an operation.
#[derive(Clone, Debug)]
pub struct TypeResult {
    pub name: &'static str,
    pub stats: Stats,
    /// Per-interval figures of this type alone.
    pub intervals: Vec<IntervalFigures>,
}

/// Everything measured about one operation of a run.
#[derive(Clone, Debug)]
pub struct OpResult {
    pub spec: OpKind,
    pub threads: usize,
    /// Rows the table was to hold (loads) or ids were drawn from (queries).
    pub table_rows: u64,
    /// What the run was sized by, as a title says it ("100000 rows",
    /// "2 warehouses"): the workload's own words, or `table_rows`.
    pub scale: String,
    pub nontransactional: bool,
    /// Which client library ran the units: "lean", "tokio-postgres", or
    /// both with how many workers each ([`crate::db::wire`]).
    pub driver: String,
    /// From the start of measurement (after connecting, preparing and any
    /// warmup) to the end of the last worker.
    pub wallclock: Duration,
    /// The warmup that ran before measurement, if any (how long it ran).
    pub warmup: Option<Duration>,
    /// The run was stopped during the warmup: nothing was measured.
    pub warmup_cut: bool,
    /// `--transactions`: the units each thread was to end.
    pub transactions: Option<u64>,
    /// The target rate, if the operation was rate-limited.
    pub rate: Option<RateTarget>,
    /// Units each worker kept in flight on its connection (`--pipeline`;
    /// 1: one at a time).
    pub pipeline: usize,
    /// Of those, how many shared a Sync, one transaction
    /// (`--pipeline-sync`; 1: a Sync each).
    pub pipeline_sync: usize,
    /// `--latency-limit`, if given.
    pub latency_limit: Option<Duration>,
    /// What one unit holds, as the summary's `batch` line says it.
    pub batch_text: String,
    /// The table the operation worked on.
    pub table: String,
    /// Whether the operation runs timed units (not a cleanup or a check).
    pub measured: bool,
    /// What the run of the workload was beyond its name (a mix's shares,
    /// its keys), or empty.
    pub workload: String,
    /// All workers and types merged.
    pub total: Stats,
    /// All workers merged, per transaction type, in the workload's order.
    pub types: Vec<TypeResult>,
    /// Per statement kind inside the units (transactions), when the
    /// workload keeps them.
    pub statements: Vec<outcome::StatementStats>,
    /// Consistency checks run after the operation.
    pub checks: Vec<outcome::Check>,
    /// What an operation without units did (a clean-up's dropped and
    /// left tables).
    pub findings: Vec<outcome::Finding>,
    /// The workload's own figures (TPC-C's tpmC).
    pub metrics: Vec<outcome::Metric>,
    /// What the units that found rows missing are, in the summary (the
    /// workload's `missing_label`).
    pub missing_label: &'static str,
    /// Rows done by each thread, in thread order.
    pub thread_rows: Vec<u64>,
    /// The bounded latency samples of the OS threads that ran the workers
    /// (each point names its worker), for the scatterplot.
    pub scatter: Vec<Scatter>,
    /// Units, rows and latency per type in bins as fine as the run's
    /// length allows (all threads added), for the pictures.
    pub timeline: Timeline,
    /// Per-interval figures, in time order.
    pub intervals: Vec<IntervalFigures>,
    /// The workload's own figures per interval by key (TPC-C: tpmc,
    /// efficiency), one value per entry of `intervals`.
    pub interval_metrics: std::collections::BTreeMap<String, Vec<f64>>,
    /// How the workload names its pauses between units, if it made any.
    pub pauses: Option<outcome::PauseWords>,
    /// The users (TPC-C's terminals) the workers' connections served,
    /// when the workload queues them for the connections: their wait for
    /// one (queueing) is the latency beyond the service time.
    pub terminals: Option<u64>,
    /// Whether the run was interrupted during this operation.
    pub interrupted: bool,
    /// Whether `--time` ended a load before all its rows were written.
    pub timed_out: bool,
    /// Why the operation failed, if it did.
    pub failure: Option<String>,
    /// The hosts connections went to, in the index order of `total.conns`.
    pub hosts: Vec<String>,
    /// Each host's YugabyteDB zone (`cloud.region.zone`) and node type, in
    /// the order of `hosts`; empty strings for a host without a place.
    pub host_places: Vec<(String, String)>,
    /// What the server saw of the operation (None with --no-server-stats).
    pub server: Option<server::ServerFigures>,
}

impl OpResult {
    /// An operation that has not run yet.
    pub fn new(spec: OpKind, threads: usize) -> OpResult {
        OpResult {
            spec,
            batch_text: String::new(),
            table: String::new(),
            measured: true,
            workload: String::new(),
            types: Vec::new(),
            statements: Vec::new(),
            checks: Vec::new(),
            findings: Vec::new(),
            metrics: Vec::new(),
            missing_label: "missing",
            threads,
            table_rows: 0,
            scale: String::new(),
            nontransactional: false,
            driver: String::new(),
            wallclock: Duration::ZERO,
            warmup: None,
            warmup_cut: false,
            transactions: None,
            rate: None,
            pipeline: 1,
            pipeline_sync: 1,
            latency_limit: None,
            total: Stats::default(),
            thread_rows: vec![0; threads],
            scatter: Vec::new(),
            timeline: Timeline::default(),
            intervals: Vec::new(),
            interval_metrics: Default::default(),
            pauses: None,
            terminals: None,
            interrupted: false,
            timed_out: false,
            failure: None,
            hosts: Vec::new(),
            host_places: Vec::new(),
            server: None,
        }
    }

    pub fn succeeded(&self) -> bool {
        self.failure.is_none() && self.total.failed() == 0 && self.checks.iter().all(|c| c.held)
    }

    /// Whether the operation is a mix of several transaction types, whose
    /// figures reports then show per type too.
    pub fn is_mix(&self) -> bool {
        self.types.len() > 1
    }

    /// Rows (loads) or units (queries) per second over the wallclock.
    pub fn items(&self) -> u64 {
        if self.spec.is_load() {
            self.total.rows
        } else {
            self.total.ops
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(rows: u64) -> Outcome {
        Outcome { rows, missing: 0 }
    }

    fn t(d: Duration) -> Timing {
        Timing::unscheduled(d)
    }

    /// The one-pass figures are exactly hdrhistogram's own, for spread,
    /// narrow and single-valued histograms.
    #[test]
    fn percentiles_equal_the_histograms_own_methods() {
        let mut spread = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            spread.record(1_000 + (x >> 40) % 5_000_000).unwrap();
        }
        let mut narrow = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 100_000..100_050u64 {
            narrow.record_n(v, v % 7 + 1).unwrap();
        }
        let mut one = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        one.record(42_000).unwrap();
        for h in [&spread, &narrow, &one] {
            let p = Percentiles::of(h);
            assert_eq!(p.p50, h.value_at_quantile(0.50));
            assert_eq!(p.p90, h.value_at_quantile(0.90));
            assert_eq!(p.p95, h.value_at_quantile(0.95));
            assert_eq!(p.p99, h.value_at_quantile(0.99));
            assert_eq!(p.p999, h.value_at_quantile(0.999));
            assert_eq!(p.mean.to_bits(), h.mean().to_bits());
            assert_eq!(p.stdev.to_bits(), h.stdev().to_bits());
            assert_eq!(p.max, h.max());
        }
    }

    #[test]
    fn merged_stats_equal_one_worker_that_did_everything() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        let mut all = Stats::default();
        for i in 1..=100u64 {
            let d = Duration::from_micros(i * 10);
            let s = if i % 2 == 0 { &mut a } else { &mut b };
            s.record(t(d), outcome(2));
            all.record(t(d), outcome(2));
        }
        b.record_error("40001", Some("ids 0..2".into()));
        a.record_error("40001", None);
        a.record_error("57P01", None);
        a.add(&b);
        assert_eq!(a.ops, all.ops);
        assert_eq!(a.rows, 200);
        assert_eq!(a.busy, all.busy);
        assert_eq!(Percentiles::of(&a.latency), Percentiles::of(&all.latency));
        assert_eq!(a.latency.len(), all.latency.len());
        assert_eq!(a.errors.get("40001"), Some(&2));
        assert_eq!(a.failed(), 3);
        assert_eq!(a.failed_units, vec!["ids 0..2".to_string()]);
    }

    #[test]
    fn percentiles_of_a_uniform_distribution_are_within_a_tenth_of_a_percent() {
        let mut s = Stats::default();
        for us in 1..=10_000u64 {
            s.record(t(Duration::from_micros(us)), outcome(1));
        }
        let p = Percentiles::of(&s.latency);
        for (got, expect_us) in [
            (p.p50, 5_000.0),
            (p.p90, 9_000.0),
            (p.p99, 9_900.0),
            (p.p999, 9_990.0),
        ] {
            let got = got as f64 / 1000.0;
            assert!(
                (got - expect_us).abs() / expect_us < 0.001,
                "{got} vs {expect_us}"
            );
        }
        assert_eq!(p.min, 1_000);
        assert!((p.max as f64 - 1e7).abs() / 1e7 < 0.001);
        assert!((p.mean / 1000.0 - 5_000.5).abs() < 5.0);
    }

    #[test]
    fn percentiles_of_a_bimodal_distribution_find_the_tail() {
        let mut s = Stats::default();
        for _ in 0..980 {
            s.record(t(Duration::from_micros(100)), outcome(1));
        }
        for _ in 0..20 {
            s.record(t(Duration::from_millis(50)), outcome(1));
        }
        let p = Percentiles::of(&s.latency);
        assert!((p.p95 as f64 - 100_000.0).abs() < 100.0);
        assert!((p.p99 as f64 - 50_000_000.0).abs() / 5e7 < 0.001);
    }

    #[test]
    fn row_latency_divides_the_batch_time_by_its_rows() {
        let mut s = Stats::default();
        s.record(t(Duration::from_millis(2)), outcome(200));
        let per_row = s.row_latency.max();
        assert!((9_990..=10_010).contains(&per_row), "{per_row}");
    }

    #[test]
    fn lag_is_latency_minus_service() {
        let mut s = Stats::default();
        s.record(
            Timing {
                latency: Duration::from_millis(30),
                service: Duration::from_millis(1),
            },
            outcome(1),
        );
        assert_eq!(s.lag_max, Duration::from_millis(29));
        assert_eq!(s.busy, Duration::from_millis(1));
        assert!(s.latency.max() > 29_000_000);
        assert!(s.service.max() < 1_100_000);
    }

    #[test]
    fn the_attempt_of_a_retried_unit_replaces_its_service_time() {
        let mut s = Stats::default();
        for _ in 0..9 {
            s.record(t(Duration::from_millis(1)), outcome(1));
        }
        // One unit took 50 ms with its retries, its last try 2 ms.
        s.record(t(Duration::from_millis(50)), outcome(1));
        s.record_retried(Duration::from_millis(50), Duration::from_millis(2));
        let a = s.attempt();
        assert_eq!(a.len(), 10);
        assert!(a.max() < 2_100_000, "{}", a.max());
        assert!(s.service.max() > 49_000_000);
        let mut other = Stats::default();
        other.add(&s);
        assert_eq!(other.attempt().max(), a.max());
    }

    #[test]
    fn an_hour_long_unit_is_clamped_not_lost() {
        let mut s = Stats::default();
        s.record(t(Duration::from_secs(7200)), outcome(1));
        assert_eq!(s.latency.len(), 1);
        assert_eq!(s.ops, 1);
    }

    #[test]
    fn service_not_kept_is_completed_as_latency() {
        let mut kept = TypedStats::new(1);
        let mut lean = TypedStats::new(1);
        let keep = Keep {
            service: false,
            per_row: false,
            pictures: false,
        };
        for us in [3u64, 50, 700, 9_000] {
            let d = Duration::from_micros(us);
            kept.of(0).record(t(d), outcome(1));
            lean.of(0).record_kept(t(d), outcome(1), keep);
        }
        assert!(lean.types[0].service.is_empty());
        assert!(lean.types[0].row_latency.is_empty());
        lean.complete(keep);
        let (a, b) = (kept.total(), lean.total());
        assert_eq!(Percentiles::of(&a.service), Percentiles::of(&b.service));
        assert_eq!(a.service.len(), b.service.len());
        assert_eq!(a.busy, b.busy);
        assert_eq!(a.lag_max, b.lag_max);
    }
}
