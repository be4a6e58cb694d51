//! What the pictures draw, as plain data built by pure functions: the
//! series over time (a rate and latency percentiles per point, for `all`
//! and each transaction type) and the uniform sample of units of the
//! latency picture.
//!
//! Without `-P` the points come from the operation's timeline
//! ([`crate::stats::timeline`]), its bins grouped into as few points as a
//! line needs units, within [`MAX_POINTS`]: a rate wants twenty units a
//! point (a rate of one or two units a point is noise), a p99 a hundred
//! and a p99.9 a thousand (below that they are the max). A rate keeps
//! [`MIN_POINTS`] points where there are as many bins: a load of half a
//! second is a line of a dozen points or more, not one dot. Each series
//! of the throughput picture is as fine as its own units allow, so
//! TPC-C's small types get smooth lines of fewer points beside the large
//! ones; the p99 lines of the throughput picture share one set of
//! points (those the type with the fewest units allows), and so do the
//! lines of the latency picture, so that percentiles never cross where
//! they cannot. With `-P` the points are its intervals, as the
//! progress lines and the CSV have them.
//!
//! The sample: each scatter slice keeps a few units chosen uniformly at
//! random, but as many in a quiet slice as in a busy one, and its fastest
//! and slowest unit besides. Drawing all of that makes the tail look far
//! heavier than it is. So the picture draws the random picks alone, and
//! thins each slice's to its share of the units, so that every dot
//! stands for as many units as any other and the density is true.

use crate::stats::scatter::Point;
use crate::stats::timeline::BinStats;
use crate::stats::{IntervalFigures, OpResult, Scatter};

use super::style::SeriesKey;

/// Points of a line at most.
pub const MAX_POINTS: usize = 200;
/// Points of a rate at least, when there are as many bins.
pub const MIN_POINTS: usize = 10;

/// How finely a line may be cut: the units a point should hold, and the
/// points to keep even when that leaves fewer units in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    pub need: u64,
    pub min_points: usize,
}

/// A rate, and a p50: twenty units a point (a count of twenty is
/// within about a fifth of its mean), keeping [`MIN_POINTS`].
pub const RATE: Resolution = Resolution {
    need: 20,
    min_points: MIN_POINTS,
};
/// A p99: a hundred units a point, keeping [`MIN_POINTS`].
pub const P99: Resolution = Resolution {
    need: 100,
    min_points: MIN_POINTS,
};
/// The lines of a latency picture: p50 and max, and p99 and p99.9 when
/// the run has the units for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyLines {
    pub p99: bool,
    pub p999: bool,
    /// The points they share: one set, so that in each of them
    /// p50 <= p99 <= p99.9 <= max, as lines of different points would not.
    pub res: Resolution,
}

/// The lines of a latency picture of `units` units: a p99.9 when there are
/// a thousand units for each of [`MIN_POINTS`] points, a p99 for a
/// hundred, and points that hold that many units (with `-P`'s intervals,
/// `fixed`, every line the intervals have).
pub fn latency_lines(units: u64, fixed: bool) -> LatencyLines {
    let enough = |need: u64| fixed || units >= need * MIN_POINTS as u64;
    let (p99, p999) = (enough(100), enough(1000));
    let need = if p999 {
        1000
    } else if p99 {
        100
    } else {
        RATE.need
    };
    LatencyLines {
        p99,
        p999,
        res: Resolution {
            need,
            min_points: MIN_POINTS,
        },
    }
}

/// One point of a series: what ended between `t0` and `t1` seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Bin {
    pub t0: f64,
    pub t1: f64,
    pub units: u64,
    pub rows: u64,
    /// Latency percentiles and the max, in milliseconds (None without a
    /// unit, or where the source keeps none: a merged report's intervals).
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl Bin {
    pub fn mid(&self) -> f64 {
        (self.t0 + self.t1) / 2.0
    }

    /// Units (or rows, for a load) per second.
    pub fn rate(&self, rows: bool) -> f64 {
        let n = if rows { self.rows } else { self.units };
        n as f64 / (self.t1 - self.t0).max(1e-9)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Source {
    /// The timeline's bins of `width` seconds, the last running to `end`.
    Timeline {
        width: f64,
        end: f64,
        bins: Vec<BinStats>,
    },
    /// `-P`'s intervals, as they are.
    Intervals(Vec<Bin>),
}

/// `all` or one type over time.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub key: SeriesKey,
    pub name: String,
    source: Source,
}

impl Series {
    /// All the units of the series.
    pub fn units(&self) -> u64 {
        match &self.source {
            Source::Timeline { bins, .. } => bins.iter().map(|b| b.units).sum(),
            Source::Intervals(bins) => bins.iter().map(|b| b.units).sum(),
        }
    }

    /// Whether the points are `-P`'s intervals.
    pub fn fixed(&self) -> bool {
        matches!(self.source, Source::Intervals(_))
    }

    /// The points of a line of resolution `res`.
    pub fn bins(&self, res: Resolution) -> Vec<Bin> {
        self.grouped(self.group_for(res))
    }

    /// How many timeline bins make a point of a line of resolution `res`
    /// (1 for `-P`'s intervals).
    fn group_for(&self, res: Resolution) -> usize {
        match &self.source {
            Source::Intervals(_) => 1,
            Source::Timeline { bins, .. } => {
                group_size(bins.len(), bins.iter().map(|b| b.units).sum(), res)
            }
        }
    }

    /// The points of `k` timeline bins each.
    fn grouped(&self, k: usize) -> Vec<Bin> {
        match &self.source {
            Source::Intervals(bins) => bins.clone(),
            Source::Timeline { width, end, bins } => group(bins, *width, *end, k),
        }
    }
}

/// The series of a picture: the types of a mix in the workload's order,
/// then `all`.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeseries {
    pub series: Vec<Series>,
}

impl Timeseries {
    pub fn all(&self) -> &Series {
        // `all` is always last; `of` never returns an empty list.
        &self.series[self.series.len() - 1]
    }

    /// The points of every series on one set of times, as fine as the
    /// series with the fewest units allows for `res`: percentiles of
    /// different times would cross where they cannot (on the same points
    /// `all`'s p99 lies between its types').
    pub fn common_bins(&self, res: Resolution) -> Vec<Vec<Bin>> {
        let k = self
            .series
            .iter()
            .map(|s| s.group_for(res))
            .max()
            .unwrap_or(1);
        self.series.iter().map(|s| s.grouped(k)).collect()
    }
}

/// How many of `n` timeline bins, holding `units` units in all, make one
/// point of a line of resolution `res`.
pub fn group_size(n: usize, units: u64, res: Resolution) -> usize {
    if n <= 1 {
        return 1;
    }
    let for_points = n.div_ceil(MAX_POINTS);
    let for_units = if units == 0 {
        n
    } else {
        (u128::from(res.need) * n as u128).div_ceil(u128::from(units)) as usize
    };
    let keep_points = (n / res.min_points.max(1)).max(1);
    for_units.min(keep_points).max(for_points).clamp(1, n)
}

fn ms(ns: Option<u64>) -> Option<f64> {
    ns.map(|v| v as f64 / 1e6)
}

fn bin_of(t0: f64, t1: f64, s: &BinStats) -> Bin {
    let q = |q: f64| {
        if s.units == 0 {
            None
        } else {
            ms(s.quantile_ns(q))
        }
    };
    Bin {
        t0,
        t1,
        units: s.units,
        rows: s.rows,
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        max: (s.units > 0).then(|| s.max_ns as f64 / 1e6),
    }
}

/// `bins` of `width` seconds in groups of `k`, the last group running to
/// `end`.
fn group(bins: &[BinStats], width: f64, end: f64, k: usize) -> Vec<Bin> {
    let k = k.max(1);
    let n_groups = bins.len().div_ceil(k);
    let mut groups: Vec<(f64, f64, BinStats)> = Vec::with_capacity(n_groups);
    for (g, chunk) in bins.chunks(k).enumerate() {
        let t0 = (g * k) as f64 * width;
        // The last group runs to the end of the run, units or not.
        let t1 = if g + 1 == n_groups {
            end
        } else {
            ((g * k + chunk.len()) as f64 * width).min(end)
        }
        .max(t0);
        let mut stats = BinStats::default();
        for b in chunk {
            stats.add(b);
        }
        groups.push((t0, t1, stats));
    }
    // Less than half a group's time left at the end would give a rate of
    // a few units over a sliver: it joins the group before.
    if let [.., (p0, _, _), (t0, t1, _)] = &groups[..]
        && t1 - t0 < width * k as f64 / 2.0
        && *t0 > *p0
        && let Some((_, t1, last)) = groups.pop()
        && let Some(prev) = groups.last_mut()
    {
        prev.1 = t1;
        prev.2.add(&last);
    }
    groups.iter().map(|(a, b, s)| bin_of(*a, *b, s)).collect()
}

/// The series of `op` from its timeline, for a measurement that ended
/// `end_s` seconds after its start.
pub fn from_timeline(op: &OpResult, end_s: f64) -> Timeseries {
    let tl = &op.timeline;
    let width = tl.bin_ns() as f64 / 1e9;
    let end = end_s.max(tl.bins().len().saturating_sub(1) as f64 * width);
    let source = |bins: Vec<BinStats>| Source::Timeline { width, end, bins };
    let mut series = Vec::new();
    if op.is_mix() {
        for (i, t) in op.types.iter().enumerate().take(tl.types()) {
            series.push(Series {
                key: SeriesKey::Type(i),
                name: t.name.to_string(),
                source: source(tl.bins().iter().map(|b| b[i].clone()).collect()),
            });
        }
    }
    let all = tl
        .bins()
        .iter()
        .map(|per| {
            let mut total = BinStats::default();
            for p in per {
                total.add(p);
            }
            total
        })
        .collect();
    series.push(Series {
        key: SeriesKey::All,
        name: "all".to_string(),
        source: source(all),
    });
    Timeseries { series }
}

fn bins_of_intervals(iv: &[IntervalFigures]) -> Vec<Bin> {
    iv.iter()
        .map(|f| {
            // A merged report written before interval histograms were
            // kept has no percentiles per interval (0).
            let l = &f.latency;
            let known = f.ops > 0 && l.max > 0;
            let v = |ns: u64| (known && ns > 0).then(|| ns as f64 / 1e6);
            Bin {
                t0: f.end_s - f.seconds,
                t1: f.end_s,
                units: f.ops,
                rows: f.rows,
                p50: v(l.p50),
                p99: v(l.p99),
                p999: v(l.p999),
                max: v(l.max),
            }
        })
        .collect()
}

/// The series of `op` from its intervals (`-P`).
pub fn from_intervals(op: &OpResult) -> Timeseries {
    let mut series = Vec::new();
    if op.is_mix() {
        for (i, t) in op.types.iter().enumerate() {
            series.push(Series {
                key: SeriesKey::Type(i),
                name: t.name.to_string(),
                source: Source::Intervals(bins_of_intervals(&t.intervals)),
            });
        }
    }
    series.push(Series {
        key: SeriesKey::All,
        name: "all".to_string(),
        source: Source::Intervals(bins_of_intervals(&op.intervals)),
    });
    Timeseries { series }
}

/// What the tail lines of the throughput picture show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    P99,
    /// Fewer units a point than a p99 needs: the p99 would be the max, so
    /// the max is drawn and named.
    Max,
}

/// The tail that the points of every series (on one set of times, see
/// [`Timeseries::common_bins`]) can tell: a p99 when each series with
/// units holds a hundred a point on average.
pub fn tail_of(series: &[Vec<Bin>]) -> Tail {
    let enough = series.iter().all(|bins| {
        let units: u64 = bins.iter().map(|b| b.units).sum();
        units == 0 || units >= P99.need * bins.len() as u64
    });
    if enough { Tail::P99 } else { Tail::Max }
}

/// Where the measurement ended, in seconds from its start: the end of the
/// last interval, which for a timed run is its time (units still in
/// flight then count at it), else the wallclock.
pub fn run_end(op: &OpResult) -> f64 {
    op.intervals
        .last()
        .map(|f| f.end_s)
        .filter(|e| *e > 0.0)
        .unwrap_or(op.wallclock.as_secs_f64())
}

/// The series a picture draws: the intervals with `-P` (or when the
/// timeline is empty), else the timeline's bins.
pub fn of(op: &OpResult, interval_given: bool) -> Timeseries {
    if interval_given || op.timeline.is_empty() {
        from_intervals(op)
    } else {
        from_timeline(op, run_end(op))
    }
}

/// A sample of units in which each one stands for as many units as any
/// other, and how many that is.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub points: Vec<Point>,
    /// Units each point stands for (1: every unit is drawn).
    pub one_in: f64,
}

/// The scatter samples' random picks, each slice's thinned to its share
/// of the units: a slice keeps round(seen / w) of its picks, where w is
/// the most units any kept pick stands for.
pub fn uniform_sample(scatters: &[Scatter]) -> Sample {
    let w = scatters
        .iter()
        .flat_map(|s| s.uniform())
        .filter(|(_, picks)| !picks.is_empty())
        .map(|(seen, picks)| seen as f64 / picks.len() as f64)
        .fold(1.0f64, f64::max);
    let mut points = Vec::new();
    for (seen, picks) in scatters.iter().flat_map(|s| s.uniform()) {
        let keep = ((seen as f64 / w).round() as usize).min(picks.len());
        // Evenly spread over the picks (which are in no useful order).
        points.extend((0..keep).map(|i| picks[i * picks.len() / keep.max(1)]));
    }
    Sample { points, one_in: w }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Timeline;
    use std::time::Duration;

    #[test]
    fn group_size_keeps_the_points_between_the_bounds() {
        // Few bins: each its own point.
        assert_eq!(group_size(1, 5, RATE), 1);
        assert_eq!(group_size(8, 1000, RATE), 1);
        // Many units: no more than MAX_POINTS points.
        assert_eq!(group_size(256, 1_000_000, RATE), 2);
        assert_eq!(group_size(150, 1_000_000, RATE), 1);
        // Few units: about twenty per point, but MIN_POINTS points kept.
        assert_eq!(group_size(150, 600, RATE), 5);
        assert_eq!(group_size(150, 20, RATE), 15);
        assert_eq!(group_size(150, 0, RATE), 15);
        // A p99 wants a hundred units a point, but MIN_POINTS points.
        assert_eq!(group_size(150, 3000, P99), 5);
        assert_eq!(group_size(150, 120, P99), 15);
    }

    #[test]
    fn the_latency_lines_are_those_the_units_can_tell() {
        let lines = |units| {
            let l = latency_lines(units, false);
            (l.p99, l.p999, l.res.need)
        };
        // 219 batches: p50 and max alone (their p99 is their second
        // slowest), over twenty units a point.
        assert_eq!(lines(219), (false, false, 20));
        assert_eq!(lines(1_000), (true, false, 100));
        assert_eq!(lines(30_000), (true, true, 1000));
        // -P's intervals: every line, as the intervals have them.
        assert!(latency_lines(5, true).p999);
    }

    fn load_op(ms: u64, batch_every_us: u64) -> OpResult {
        let mut op = OpResult::new(crate::workload::basic::copy_mem::SPEC.kind(), 2);
        op.wallclock = Duration::from_millis(ms);
        op.timeline = Timeline::new(1);
        for t in (batch_every_us..ms * 1000).step_by(batch_every_us as usize) {
            op.timeline.record(t * 1000, 0, 4_000_000, 1000);
        }
        op.types = vec![crate::stats::TypeResult {
            name: "batch",
            stats: Default::default(),
            intervals: Vec::new(),
        }];
        // One interval, as long as the run: what the picture drew before.
        op.intervals = vec![IntervalFigures {
            end_s: ms as f64 / 1000.0,
            seconds: ms as f64 / 1000.0,
            ops: 1,
            ..Default::default()
        }];
        op
    }

    #[test]
    fn a_sub_second_load_is_a_line_of_many_points() {
        // 550 ms, a batch every 2.5 ms (219 batches).
        let op = load_op(550, 2500);
        let ts = of(&op, false);
        let all = ts.all();
        assert_eq!(all.key, SeriesKey::All);
        let bins = all.bins(RATE);
        assert!(bins.len() >= MIN_POINTS, "{} points", bins.len());
        assert!(bins.len() <= MAX_POINTS);
        // Every unit and row counted once, over the run's whole length.
        assert_eq!(bins.iter().map(|b| b.units).sum::<u64>(), 219);
        assert_eq!(bins.iter().map(|b| b.rows).sum::<u64>(), 219_000);
        assert_eq!(bins[0].t0, 0.0);
        assert!(
            (bins.last().unwrap().t1 - 0.55).abs() < 1e-9,
            "{:?}",
            bins.last()
        );
        // Steady batches: every point's rate near 400 000 rows/s.
        for b in &bins {
            let r = b.rate(true);
            assert!((300_000.0..=500_000.0).contains(&r), "{b:?}: {r}");
            let p50 = b.p50.unwrap();
            assert!((p50 - 4.0).abs() < 0.25, "{b:?}");
        }
        // A p99 over a hundred units a point, but ten points.
        assert!(all.bins(P99).len() >= MIN_POINTS);
        // With -P, the intervals as given.
        assert_eq!(of(&op, true).all().bins(RATE).len(), 1);
    }

    #[test]
    fn a_long_run_has_at_most_max_points() {
        let mut op = load_op(0, 1);
        op.wallclock = Duration::from_secs(600);
        op.timeline = Timeline::new(1);
        for ms in 0..600_000u64 {
            op.timeline.record(ms * 1_000_000, 0, 1_000_000, 1);
        }
        let bins = of(&op, false).all().bins(RATE);
        let n = bins.len();
        assert!((MAX_POINTS / 2..=MAX_POINTS).contains(&n), "{n}");
        assert_eq!(bins.iter().map(|b| b.units).sum::<u64>(), 600_000);
        let width = bins[0].t1 - bins[0].t0;
        assert!((width - 600.0 / n as f64).abs() / width < 0.5, "{width}");
    }

    #[test]
    fn a_mix_has_a_series_per_type_then_all_each_as_fine_as_its_units() {
        let mut op = load_op(1000, 1000);
        op.spec = crate::workload::ycsb::B.kind();
        op.types = ["read", "update"]
            .iter()
            .map(|n| crate::stats::TypeResult {
                name: n,
                stats: Default::default(),
                intervals: Vec::new(),
            })
            .collect();
        op.timeline = Timeline::new(2);
        // 95% reads, 5% updates over a second.
        for i in 0..10_000u64 {
            let ty = usize::from(i % 20 == 0);
            op.timeline.record(i * 100_000, ty, 100_000 + i, 1);
        }
        let ts = of(&op, false);
        let keys: Vec<SeriesKey> = ts.series.iter().map(|s| s.key).collect();
        assert_eq!(
            keys,
            [SeriesKey::Type(0), SeriesKey::Type(1), SeriesKey::All]
        );
        let (read, update, all) = (
            ts.series[0].bins(RATE),
            ts.series[1].bins(RATE),
            ts.all().bins(RATE),
        );
        assert_eq!(read.len(), all.len());
        // 500 updates: about twenty a point, so fewer points than the reads.
        assert!(
            update.len() < read.len() / 2,
            "{} {}",
            update.len(),
            read.len()
        );
        assert!(update.iter().all(|b| b.units >= 18), "{update:?}");
        let sum = |v: &[Bin]| v.iter().map(|b| b.units).sum::<u64>();
        assert_eq!((sum(&read), sum(&update), sum(&all)), (9500, 500, 10_000));
        // The p99s on one set of points, as the updates allow: on each,
        // all's p99 lies between its types'. 500 updates make ten points
        // of 50: their p99 would be their max, and is named so.
        let p99 = ts.common_bins(P99);
        assert_eq!(tail_of(&p99), Tail::Max);
        assert_eq!(tail_of(&[p99[0].clone(), p99[2].clone()]), Tail::P99);
        assert!(p99.iter().all(|s| s.len() == p99[0].len()));
        assert!(p99[0].len() >= MIN_POINTS && p99[0].len() < read.len());
        for ((r, u), a) in p99[0].iter().zip(&p99[1]).zip(&p99[2]) {
            let (r, u, a) = (r.p99, u.p99, a.p99);
            let (r, u, a) = (r.unwrap(), u.unwrap(), a.unwrap());
            assert!(r.min(u) <= a && a <= r.max(u), "{r} {u} {a}");
        }
    }

    #[test]
    fn the_sample_thins_quiet_slices_so_that_density_is_true() {
        use crate::stats::scatter::{FIRST_SLICE_NS, PICKS};
        let mut s = Scatter::new(7);
        // Slice 0: 4000 units of 100 µs; slice 1: 40 units; slice 2: 4.
        for (slice, n) in [(0u64, 4000u64), (1, 40), (2, 4)] {
            for i in 0..n {
                s.record(slice * FIRST_SLICE_NS + i, 100_000 + i, 0, 0);
            }
        }
        // A slow outlier in slice 0 is one of 4001 units: not drawn unless
        // picked at random.
        s.record(5, 9_000_000_000, 0, 0);
        let sample = uniform_sample(&[s]);
        assert_eq!(sample.one_in, 4001.0 / PICKS as f64);
        let per_slice = |k: u64| {
            sample
                .points
                .iter()
                .filter(|p| p.t_ns / FIRST_SLICE_NS == k)
                .count()
        };
        assert_eq!((per_slice(0), per_slice(1), per_slice(2)), (PICKS, 0, 0));
        // Every unit drawn when every unit was kept.
        let mut few = Scatter::new(1);
        for i in 0..3u64 {
            few.record(i * FIRST_SLICE_NS, 1000, 0, 0);
        }
        let all = uniform_sample(&[few]);
        assert_eq!((all.points.len(), all.one_in), (3, 1.0));
    }
}
