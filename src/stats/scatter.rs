//! A bounded sample of (time, latency) points, for scatterplots.
//!
//! Keeping every point of a long run would grow without bound. So time is
//! cut into slices; each slice keeps a few units chosen uniformly at
//! random (reservoir sampling), how many units it saw, and its fastest
//! and its slowest unit. When there are too many slices, neighbours are
//! merged and the slices get twice as wide, so memory stays at most
//! [`MAX_SLICES`] slices whatever the run's length; the merged picks stay
//! a uniform sample, and every slice's extremes survive every merge.
//!
//! The two serve different readers. The latency picture draws the random
//! picks alone, thinned to each slice's share of the units
//! ([`Scatter::uniform`]), because a sample in which every slice's
//! extremes stand beside a handful of ordinary units makes the tail look
//! far heavier than it is; the run's extremes reach the picture through
//! the timeline's max ([`super::timeline`]). [`Scatter::points`] keeps
//! them with the picks, so that no outlier is lost from the sample.
//!
//! One sample serves all the workers of an OS thread (see
//! `runner::recorder`), so that its memory follows the threads, not the
//! connections: each point keeps the worker it came from and its
//! transaction type, and a sample shared by more workers keeps more
//! random picks per slice ([`Scatter::for_workers`]), up to [`MAX_PICKS`].

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// Slices kept at most per worker.
pub const MAX_SLICES: usize = 1024;
/// Random points kept per slice and worker, besides its min and max.
pub const PICKS: usize = 4;
/// Random points kept per slice at most, however many workers share it.
pub const MAX_PICKS: usize = 32;
/// The width of a slice before any merge: 10 ms, so that a load of half a
/// second still has fifty slices of its own.
pub const FIRST_SLICE_NS: u64 = 10_000_000;

/// One sampled unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// When the unit ended, in nanoseconds since the operation started.
    pub t_ns: u64,
    pub latency_ns: u64,
    /// The worker (0-based) whose unit it was.
    pub worker: u32,
    /// The unit's transaction type (0-based, in the workload's order).
    pub ty: u16,
}

#[derive(Clone, Debug, Default)]
struct Slice {
    min: Option<Point>,
    max: Option<Point>,
    picks: Vec<Point>,
    seen: u64,
}

impl Slice {
    fn add(&mut self, p: Point, picks: usize, rng: &mut SmallRng) {
        if self.min.is_none_or(|m| p.latency_ns < m.latency_ns) {
            self.min = Some(p);
        }
        if self.max.is_none_or(|m| p.latency_ns > m.latency_ns) {
            self.max = Some(p);
        }
        self.seen += 1;
        if self.picks.len() < picks {
            self.picks.push(p);
        } else {
            let j = rng.random_range(0..self.seen);
            if (j as usize) < picks {
                self.picks[j as usize] = p;
            }
        }
    }

    fn merge(mut self, other: Slice, keep: usize, rng: &mut SmallRng) -> Slice {
        for p in [other.min, other.max].into_iter().flatten() {
            if self.min.is_none_or(|m| p.latency_ns < m.latency_ns) {
                self.min = Some(p);
            }
            if self.max.is_none_or(|m| p.latency_ns > m.latency_ns) {
                self.max = Some(p);
            }
        }
        // Keep `keep` of the union, each side weighted by how many units
        // it stands for, so the merged picks stay a uniform sample.
        let total = self.seen + other.seen;
        let mut picks = Vec::with_capacity(keep);
        let (mut a, mut b) = (self.picks, other.picks);
        let (wa, wb) = (self.seen, other.seen);
        while picks.len() < keep && !(a.is_empty() && b.is_empty()) {
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
        let mut v: Vec<Point> = Vec::with_capacity(self.picks.len() + 2);
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

/// The sample of one or more workers.
#[derive(Clone, Debug)]
pub struct Scatter {
    slice_ns: u64,
    slices: Vec<Slice>,
    /// Random points kept per slice.
    picks: usize,
    rng: SmallRng,
}

impl Scatter {
    /// The sample of one worker.
    pub fn new(seed: u64) -> Scatter {
        Scatter::for_workers(seed, 1)
    }

    /// A sample shared by `workers` workers: [`PICKS`] random points per
    /// slice for each, at most [`MAX_PICKS`].
    pub fn for_workers(seed: u64, workers: usize) -> Scatter {
        Scatter {
            slice_ns: FIRST_SLICE_NS,
            slices: Vec::new(),
            picks: PICKS.saturating_mul(workers).clamp(PICKS, MAX_PICKS),
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Offers a unit of `worker`, of transaction type `ty`, that ended
    /// `t_ns` after the operation started.
    pub fn record(&mut self, t_ns: u64, latency_ns: u64, worker: u32, ty: u16) {
        let mut idx = (t_ns / self.slice_ns) as usize;
        while idx >= MAX_SLICES {
            self.coarsen();
            idx = (t_ns / self.slice_ns) as usize;
        }
        if self.slices.len() <= idx {
            self.slices.resize(idx + 1, Slice::default());
        }
        let p = Point {
            t_ns,
            latency_ns,
            worker,
            ty,
        };
        self.slices[idx].add(p, self.picks, &mut self.rng);
    }

    fn coarsen(&mut self) {
        self.slice_ns *= 2;
        let old = std::mem::take(&mut self.slices);
        let mut it = old.into_iter();
        while let Some(a) = it.next() {
            let merged = match it.next() {
                Some(b) => a.merge(b, self.picks, &mut self.rng),
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

    /// Per slice, in time order: how many units ended in it and its random
    /// picks alone (a uniform sample of them, without the extremes that
    /// [`Scatter::points`] adds), for a picture whose density must be true.
    pub fn uniform(&self) -> impl Iterator<Item = (u64, &[Point])> {
        self.slices.iter().map(|s| (s.seen, &s.picks[..]))
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
                s.record(t, lat, 0, 0);
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
            s.record(i * FIRST_SLICE_NS, 10 + i, 0, 0);
        }
        for i in 0..PICKS as u64 {
            s.record(7 * FIRST_SLICE_NS + i, 20 + i, 0, 0);
        }
        let mut lats: Vec<u64> = s.points().iter().map(|p| p.latency_ns).collect();
        lats.sort();
        assert_eq!(lats, vec![10, 11, 12, 13, 14, 20, 21, 22, 23]);
    }

    #[test]
    fn a_shared_sample_keeps_more_picks_and_each_points_worker() {
        let mut s = Scatter::for_workers(3, 3);
        // Three workers, 20 units each, all in one slice.
        for i in 0..60u64 {
            s.record(i, 100 + i, (i % 3) as u32, 0);
        }
        let pts = s.points();
        // 12 picks (4 per worker), and min and max unless picked too.
        assert!(
            (3 * PICKS..=2 + 3 * PICKS).contains(&pts.len()),
            "{}",
            pts.len()
        );
        assert!(pts.iter().all(|p| p.worker == (p.t_ns % 3) as u32));
        assert_eq!(Scatter::for_workers(1, 1000).picks, MAX_PICKS);
    }
}
