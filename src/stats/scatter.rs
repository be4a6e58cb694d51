//! A bounded sample of (time, latency) points per worker, for scatterplots.
//!
//! Keeping every point of a long run would grow without bound, and a plain
//! random sample would lose exactly the outliers a plot is for. So time is
//! cut into slices; each slice keeps its fastest and its slowest unit and
//! a few more chosen uniformly at random (reservoir sampling). When there
//! are too many slices, neighbours are merged and the slices get twice as
//! wide, so memory stays at most [`MAX_SLICES`] slices whatever the run's
//! length, and every slice's extremes survive every merge.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// Slices kept at most per worker.
pub const MAX_SLICES: usize = 1024;
/// Random points kept per slice, besides its min and max.
pub const PICKS: usize = 4;
/// The width of a slice before any merge: 50 ms.
pub const FIRST_SLICE_NS: u64 = 50_000_000;

/// One sampled unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// When the unit ended, in nanoseconds since the operation started.
    pub t_ns: u64,
    pub latency_ns: u64,
}

#[derive(Clone, Debug, Default)]
struct Slice {
    min: Option<Point>,
    max: Option<Point>,
    picks: Vec<Point>,
    seen: u64,
}

impl Slice {
    fn add(&mut self, p: Point, rng: &mut SmallRng) {
        if self.min.is_none_or(|m| p.latency_ns < m.latency_ns) {
            self.min = Some(p);
        }
        if self.max.is_none_or(|m| p.latency_ns > m.latency_ns) {
            self.max = Some(p);
        }
        self.seen += 1;
        if self.picks.len() < PICKS {
            self.picks.push(p);
        } else {
            let j = rng.random_range(0..self.seen);
            if (j as usize) < PICKS {
                self.picks[j as usize] = p;
            }
        }
    }

    fn merge(mut self, other: Slice, rng: &mut SmallRng) -> Slice {
        for p in [other.min, other.max].into_iter().flatten() {
            if self.min.is_none_or(|m| p.latency_ns < m.latency_ns) {
                self.min = Some(p);
            }
            if self.max.is_none_or(|m| p.latency_ns > m.latency_ns) {
                self.max = Some(p);
            }
        }
        // Keep PICKS of the union, each side weighted by how many units
        // it stands for, so the merged picks stay a uniform sample.
        let total = self.seen + other.seen;
        let mut picks = Vec::with_capacity(PICKS);
        let (mut a, mut b) = (self.picks, other.picks);
        let (wa, wb) = (self.seen, other.seen);
        while picks.len() < PICKS && !(a.is_empty() && b.is_empty()) {
            let from_a = if a.is_empty() {
                false
            } else if b.is_empty() {
                true
            } else {
                rng.random_range(0..(wa + wb).max(1)) < wa
            };
            let side = if from_a { &mut a } else { &mut b };
            let i = rng.random_range(0..side.len());
            picks.push(side.swap_remove(i));
        }
        Slice {
            min: self.min,
            max: self.max,
            picks,
            seen: total,
        }
    }

    /// Min, max and picks, each point once.
    fn points(&self) -> Vec<Point> {
        let mut v: Vec<Point> = Vec::with_capacity(PICKS + 2);
        for p in self
            .min
            .iter()
            .chain(self.max.iter())
            .chain(self.picks.iter())
        {
            if !v.contains(p) {
                v.push(*p);
            }
        }
        v
    }
}

/// One worker's sample.
#[derive(Clone, Debug)]
pub struct Scatter {
    slice_ns: u64,
    slices: Vec<Slice>,
    rng: SmallRng,
}

impl Scatter {
    pub fn new(seed: u64) -> Scatter {
        Scatter {
            slice_ns: FIRST_SLICE_NS,
            slices: Vec::new(),
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Offers a unit that ended `t_ns` after the operation started.
    pub fn record(&mut self, t_ns: u64, latency_ns: u64) {
        let mut idx = (t_ns / self.slice_ns) as usize;
        while idx >= MAX_SLICES {
            self.coarsen();
            idx = (t_ns / self.slice_ns) as usize;
        }
        if self.slices.len() <= idx {
            self.slices.resize(idx + 1, Slice::default());
        }
        let p = Point { t_ns, latency_ns };
        self.slices[idx].add(p, &mut self.rng);
    }

    fn coarsen(&mut self) {
        self.slice_ns *= 2;
        let old = std::mem::take(&mut self.slices);
        let mut it = old.into_iter();
        while let Some(a) = it.next() {
            let merged = match it.next() {
                Some(b) => a.merge(b, &mut self.rng),
                None => a,
            };
            self.slices.push(merged);
        }
    }

    /// The kept points, in time-slice order.
    pub fn points(&self) -> Vec<Point> {
        self.slices.iter().flat_map(|s| s.points()).collect()
    }

    /// The current width of a slice.
    pub fn slice_ns(&self) -> u64 {
        self.slice_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_bounded_and_outliers_survive_a_long_run() {
        let mut s = Scatter::new(1);
        // One hour at 10,000 units per second, in 1 ms steps of 10 units,
        // with one 5-second outlier and one 1 ns floor somewhere.
        let hour_ns = 3_600_000_000_000u64;
        let mut t = 0;
        let mut n = 0u64;
        while t < hour_ns {
            for _ in 0..10 {
                n += 1;
                let lat = if n == 12_345_678 {
                    5_000_000_000
                } else if n == 777 {
                    1
                } else {
                    100_000 + (n % 1000)
                };
                s.record(t, lat);
            }
            t += 1_000_000;
        }
        assert!(s.slices.len() <= MAX_SLICES);
        let pts = s.points();
        assert!(pts.len() <= MAX_SLICES * (PICKS + 2));
        assert!(pts.len() > MAX_SLICES / 2 * PICKS);
        assert!(pts.iter().any(|p| p.latency_ns == 5_000_000_000));
        assert!(pts.iter().any(|p| p.latency_ns == 1));
    }

    #[test]
    fn a_short_run_keeps_all_its_points() {
        let mut s = Scatter::new(2);
        // Each in a slice of its own, and four more in one slice.
        for i in 0..5 {
            s.record(i * FIRST_SLICE_NS, 10 + i);
        }
        for i in 0..PICKS as u64 {
            s.record(7 * FIRST_SLICE_NS + i, 20 + i);
        }
        let mut lats: Vec<u64> = s.points().iter().map(|p| p.latency_ns).collect();
        lats.sort();
        assert_eq!(lats, vec![10, 11, 12, 13, 14, 20, 21, 22, 23]);
    }
}
