//! Units, rows and latency over time in bins as fine as the run's length
//! allows, for the pictures.
//!
//! The per-interval figures (`stats::interval`) have the length of `-P`, 1 s
//! without it: a load that lasts half a second is one interval, one dot in
//! a picture, and a run of ten seconds is ten. The pictures need their own
//! resolution, chosen from the run's length, which is not known in advance
//! for a load. So time is cut into bins of [`FIRST_BIN_NS`]; when a unit ends
//! past [`MAX_BINS`] bins, neighbours merge and the bins get twice as wide.
//! A run of any length thus ends with between `MAX_BINS / 2` and `MAX_BINS`
//! bins (fewer only when it is shorter than that many first bins), and the
//! picture groups them further where the units are too few for a rate.
//!
//! Merging must stay exact, so a bin keeps, per transaction type, its units,
//! rows, the exact min and max, and a [`LogHistogram`] of latency (eight
//! buckets per power of two, at most 3.1% off at the middle of a bucket)
//! instead of an HDR histogram of ~100 KB: the histograms add up exactly
//! under any merge, of bins or of threads. Like the scatter sample, one
//! timeline serves the workers of an OS thread; the runner adds the
//! threads' together at the end.

/// The width of a bin before any merge: 1 ms.
pub const FIRST_BIN_NS: u64 = 1_000_000;
/// Bins kept at most; neighbours merge beyond.
pub const MAX_BINS: usize = 256;
/// Buckets per power of two of a [`LogHistogram`] (a power of two).
const SUB: u32 = 8;
const SUB_BITS: u32 = SUB.trailing_zeros();

/// A latency histogram of logarithmic buckets (eight per power of two of
/// nanoseconds), kept as one dense run of counts from the lowest bucket
/// used to the highest: a bin's latencies span a few powers of two, so
/// that is a few dozen counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogHistogram {
    /// The bucket of `counts[0]`.
    lo: u32,
    counts: Vec<u32>,
}

/// The bucket of a value: exact below `SUB`, then `SUB` per power of two.
fn bucket(v: u64) -> u32 {
    let v = v.max(1);
    let e = 63 - v.leading_zeros();
    if e < SUB_BITS {
        return v as u32;
    }
    let m = ((v >> (e - SUB_BITS)) as u32) & (SUB - 1);
    (e - SUB_BITS + 1) * SUB + m
}

/// The lowest value of a bucket and the width of the bucket.
fn bucket_bounds(b: u32) -> (u64, u64) {
    if b < SUB {
        return (u64::from(b), 1);
    }
    let e = b / SUB - 1 + SUB_BITS;
    let m = u64::from(b % SUB);
    let width = 1u64 << (e - SUB_BITS);
    ((u64::from(SUB) + m) * width, width)
}

impl LogHistogram {
    pub fn record(&mut self, v: u64) {
        self.add_count(bucket(v), 1);
    }

    fn add_count(&mut self, b: u32, n: u32) {
        if self.counts.is_empty() {
            self.lo = b;
            self.counts.push(0);
        } else if b < self.lo {
            let more = (self.lo - b) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, more));
            self.lo = b;
        }
        let i = (b - self.lo) as usize;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] = self.counts[i].saturating_add(n);
    }

    pub fn add(&mut self, other: &LogHistogram) {
        for (i, &n) in other.counts.iter().enumerate() {
            if n > 0 {
                self.add_count(other.lo + i as u32, n);
            }
        }
    }

    pub fn len(&self) -> u64 {
        self.counts.iter().map(|&n| u64::from(n)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&n| n == 0)
    }

    /// The value at quantile `q` (0..=1): the middle of the bucket that
    /// holds the unit of rank ⌈q·n⌉, as HDR's value_at_quantile ranks them.
    /// None when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                let (low, width) = bucket_bounds(self.lo + i as u32);
                return Some(low + width / 2);
            }
        }
        None
    }
}

/// What the units of one transaction type that ended in one bin did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BinStats {
    pub units: u64,
    pub rows: u64,
    /// Exact, in nanoseconds (0 when no unit).
    pub min_ns: u64,
    pub max_ns: u64,
    pub latency: LogHistogram,
}

impl BinStats {
    fn record(&mut self, latency_ns: u64, rows: u64) {
        if self.units == 0 || latency_ns < self.min_ns {
            self.min_ns = latency_ns;
        }
        self.max_ns = self.max_ns.max(latency_ns);
        self.units += 1;
        self.rows += rows;
        self.latency.record(latency_ns);
    }

    pub fn add(&mut self, other: &BinStats) {
        if other.units == 0 {
            self.rows += other.rows;
            return;
        }
        if self.units == 0 || other.min_ns < self.min_ns {
            self.min_ns = other.min_ns;
        }
        self.max_ns = self.max_ns.max(other.max_ns);
        self.units += other.units;
        self.rows += other.rows;
        self.latency.add(&other.latency);
    }

    /// The value at quantile `q`, kept within the exact min and max (and
    /// those exactly at 0 and 1).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.units > 0 && q >= 1.0 {
            return Some(self.max_ns);
        }
        if self.units > 0 && q <= 0.0 {
            return Some(self.min_ns);
        }
        self.latency
            .quantile(q)
            .map(|v| v.clamp(self.min_ns, self.max_ns))
    }
}

/// The bins of one or more workers: per bin, one [`BinStats`] per
/// transaction type.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    bin_ns: u64,
    types: usize,
    bins: Vec<Vec<BinStats>>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(1)
    }
}

impl Timeline {
    /// The timeline of a workload of `types` transaction types.
    pub fn new(types: usize) -> Timeline {
        Timeline {
            bin_ns: FIRST_BIN_NS,
            types: types.max(1),
            bins: Vec::new(),
        }
    }

    /// A unit of type `ty` (the last type for one out of range) that ended
    /// `t_ns` after the operation started.
    pub fn record(&mut self, t_ns: u64, ty: usize, latency_ns: u64, rows: u64) {
        let idx = self.index_of(t_ns);
        let ty = ty.min(self.types - 1);
        self.bins[idx][ty].record(latency_ns, rows);
    }

    /// The bin of `t_ns`, made (and the bins widened) as needed.
    fn index_of(&mut self, t_ns: u64) -> usize {
        let mut idx = (t_ns / self.bin_ns) as usize;
        while idx >= MAX_BINS {
            self.coarsen();
            idx = (t_ns / self.bin_ns) as usize;
        }
        if self.bins.len() <= idx {
            self.bins
                .resize(idx + 1, vec![BinStats::default(); self.types]);
        }
        idx
    }

    /// Bins twice as wide: each pair of neighbours merged.
    fn coarsen(&mut self) {
        self.bin_ns = self.bin_ns.saturating_mul(2);
        let old = std::mem::take(&mut self.bins);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                for (x, y) in a.iter_mut().zip(&b) {
                    x.add(y);
                }
            }
            self.bins.push(a);
        }
    }

    /// Adds another timeline of the same workload (another thread's):
    /// the finer of the two is widened to the other's bins first.
    pub fn add(&mut self, other: &Timeline) {
        let mut other = other.clone();
        while self.bin_ns < other.bin_ns {
            self.coarsen();
        }
        while other.bin_ns < self.bin_ns {
            other.coarsen();
        }
        self.types = self.types.max(other.types);
        for bin in &mut self.bins {
            bin.resize(self.types, BinStats::default());
        }
        if self.bins.len() < other.bins.len() {
            self.bins
                .resize(other.bins.len(), vec![BinStats::default(); self.types]);
        }
        for (mine, theirs) in self.bins.iter_mut().zip(&other.bins) {
            for (x, y) in mine.iter_mut().zip(theirs) {
                x.add(y);
            }
        }
    }

    /// The width of a bin, in nanoseconds.
    pub fn bin_ns(&self) -> u64 {
        self.bin_ns
    }

    /// Transaction types per bin.
    pub fn types(&self) -> usize {
        self.types
    }

    /// The bins from the start, each with one entry per type.
    pub fn bins(&self) -> &[Vec<BinStats>] {
        &self.bins
    }

    pub fn is_empty(&self) -> bool {
        self.bins.iter().flatten().all(|b| b.units == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_and_are_at_most_an_eighth_wide() {
        let mut prev = None;
        for v in (1..5000u64).chain([1 << 20, (1 << 20) + 1, u64::MAX / 2, u64::MAX]) {
            let b = bucket(v);
            let (low, width) = bucket_bounds(b);
            assert!(
                low <= v && v - low < width,
                "{v}: bucket {b} = {low}+{width}"
            );
            assert!(
                width == 1 || width * u64::from(SUB) <= low,
                "{v}: {low}+{width}"
            );
            if let Some(p) = prev {
                assert!(b >= p, "{v}");
            }
            if v < 5000 {
                prev = Some(b);
            }
        }
    }

    #[test]
    fn quantiles_are_within_a_bucket_of_the_exact_ones() {
        let mut h = LogHistogram::default();
        let mut bin = BinStats::default();
        // 1..=10000 µs (1 µs to 10 ms), in a shuffled order (low values recorded after
        // high ones, so the counts grow downward too).
        let values: Vec<u64> = (1..=10_000u64)
            .map(|i| (i * 7919 % 10_000 + 1) * 1000)
            .collect();
        for &v in &values {
            h.record(v);
            bin.record(v, 1);
        }
        assert_eq!(h.len(), 10_000);
        for (q, exact) in [(0.5, 5_000_000u64), (0.99, 9_900_000), (0.999, 9_990_000)] {
            let got = h.quantile(q).unwrap();
            let err = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(err < 0.0625, "q {q}: {got} against {exact}");
        }
        assert_eq!(bin.quantile_ns(1.0), Some(10_000_000));
        assert_eq!(bin.quantile_ns(0.0), Some(1_000));
        assert_eq!(
            (bin.min_ns, bin.max_ns, bin.units),
            (1_000, 10_000_000, 10_000)
        );
        assert_eq!(LogHistogram::default().quantile(0.5), None);
    }

    #[test]
    fn a_long_run_keeps_a_bounded_number_of_bins_and_every_unit() {
        let mut t = Timeline::new(2);
        // An hour, a unit of each type every 10 ms.
        let mut n = 0;
        for ms in (0..3_600_000u64).step_by(10) {
            t.record(ms * 1_000_000, 0, 1000 + ms % 7, 1);
            t.record(ms * 1_000_000, 1, 5000, 3);
            n += 1;
        }
        assert!(
            (MAX_BINS / 2..=MAX_BINS).contains(&t.bins().len()),
            "{}",
            t.bins().len()
        );
        let units: u64 = t.bins().iter().map(|b| b[0].units).sum();
        let rows: u64 = t.bins().iter().map(|b| b[1].rows).sum();
        assert_eq!((units, rows), (n, 3 * n));
        assert!(t.bin_ns() >= 3_600_000_000_000 / MAX_BINS as u64);
    }

    #[test]
    fn a_short_run_keeps_millisecond_bins() {
        let mut t = Timeline::new(1);
        for us in (0..300_000u64).step_by(100) {
            t.record(us * 1000, 0, 200_000, 1);
        }
        // 300 ms: 300 bins of 1 ms would be over MAX_BINS, so 2 ms.
        assert_eq!(t.bin_ns(), 2 * FIRST_BIN_NS);
        assert_eq!(t.bins().len(), 150);
        assert!(t.bins().iter().all(|b| b[0].units == 20));
    }

    #[test]
    fn threads_add_up_exactly_whatever_their_bins() {
        let (mut a, mut b, mut both) = (Timeline::new(1), Timeline::new(1), Timeline::new(1));
        // `a` runs 10 s (wide bins), `b` 100 ms (fine bins).
        for i in 0..10_000u64 {
            let (t, lat) = (i * 1_000_000, 100 + i % 50);
            a.record(t, 0, lat, 1);
            both.record(t, 0, lat, 1);
        }
        for i in 0..1000u64 {
            let (t, lat) = (i * 100_000, 7 + i);
            b.record(t, 0, lat, 2);
            both.record(t, 0, lat, 2);
        }
        assert!(b.bin_ns() < a.bin_ns());
        b.add(&a);
        assert_eq!(b, both);
    }
}
