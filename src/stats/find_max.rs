//! `--find-max`: the search for the highest target rate (or number of
//! workers) at which a workload meets its `--slo`, as plain data: the
//! search's next step from what the steps so far found ([`Search`]), and
//! the record of the search and of every step ([`FindMaxRecord`]) that the
//! summary, JSON, CSV and picture say.
//!
//! The search doubles from its start until a step misses, then bisects
//! between the highest target that held and the lowest that missed until
//! they are within the resolution; the answer is then run once more (a
//! confirmation), and only an answer held twice is given: a step at the
//! edge that held by chance would otherwise be the answer. A confirmation
//! that misses makes the target the lowest miss, and the bisection goes
//! on. The orchestration (running each step, repeating one whose figures
//! straddle a criterion within the noise) is the app's.

use serde::{Deserialize, Serialize};

use super::slo::Verdict;

/// What the search steps over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Over {
    /// `--rate`'s target, units per second (open loop).
    Rate,
    /// Workers, `-t` (closed loop).
    Threads,
}

impl Over {
    pub fn unit(self) -> &'static str {
        match self {
            Over::Rate => "/s",
            Over::Threads => " workers",
        }
    }
}

/// How the search runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchPlan {
    pub over: Over,
    /// The first target.
    pub start: f64,
    /// Bisection ends when the lowest miss is within this share above the
    /// highest hold.
    pub resolution: f64,
    /// How often a step within the noise of a criterion is run again.
    pub repeats: u32,
    /// The most steps in all, repeats and confirmation included.
    pub max_steps: u32,
}

/// What to run next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    Step(f64),
    /// The answer once more, before it is given.
    Confirm(f64),
    Done,
}

/// Where the search stands.
#[derive(Clone, Debug)]
pub struct Search {
    pub plan: SearchPlan,
    /// Targets that held, in the order run.
    held: Vec<f64>,
    /// The lowest target that missed.
    missed: Option<f64>,
    /// The answer was confirmed.
    confirmed: Option<f64>,
    /// Steps run, repeats included.
    pub steps: u32,
}

/// The highest target a search doubles to: far beyond any server.
const CEILING: f64 = 1e9;

impl Search {
    pub fn new(plan: SearchPlan) -> Search {
        Search {
            plan,
            held: Vec::new(),
            missed: None,
            confirmed: None,
            steps: 0,
        }
    }

    /// The highest target that held below the lowest miss.
    pub fn best(&self) -> Option<f64> {
        self.held
            .iter()
            .copied()
            .filter(|h| self.missed.is_none_or(|m| *h < m))
            .reduce(f64::max)
    }

    /// The answer: the highest held target, once confirmed.
    pub fn answer(&self) -> Option<f64> {
        self.confirmed.filter(|c| Some(*c) == self.best())
    }

    /// The lowest target that missed.
    pub fn missed(&self) -> Option<f64> {
        self.missed
    }

    fn round(&self, v: f64) -> f64 {
        match self.plan.over {
            Over::Threads => v.round().max(1.0),
            // Rates to 3 significant digits: a step says 41,200/s.
            Over::Rate => {
                if v <= 0.0 {
                    return v;
                }
                // Divided by a power of ten rather than multiplied by
                // its inverse, which is not exact (43.800000000000004).
                let digits = 2.0 - v.log10().floor();
                if digits > 0.0 {
                    let p = 10f64.powf(digits);
                    (v * p).round() / p
                } else {
                    let p = 10f64.powf(-digits);
                    (v / p).round() * p
                }
            }
        }
    }

    /// The next step, or Done.
    pub fn next(&self) -> Next {
        if self.steps >= self.plan.max_steps {
            return Next::Done;
        }
        let best = self.best();
        let Some(missed) = self.missed else {
            return match best {
                None => Next::Step(self.round(self.plan.start)),
                Some(b) if b * 2.0 > CEILING => Next::Done,
                Some(b) => Next::Step(self.round(b * 2.0)),
            };
        };
        let lo = best.unwrap_or(0.0);
        let close = match self.plan.over {
            Over::Threads => missed - lo <= 1.0,
            Over::Rate => missed - lo <= self.plan.resolution * lo,
        };
        if best.is_some() && close {
            return if self.answer().is_some() {
                Next::Done
            } else {
                Next::Confirm(lo)
            };
        }
        let mid = self.round((lo + missed) / 2.0);
        // Nothing held, down to a hundredth of the start: no answer.
        if best.is_none() && mid < self.plan.start / 100.0 {
            return Next::Done;
        }
        if mid <= lo || mid >= missed {
            return match best {
                Some(b) if self.answer().is_none() => Next::Confirm(b),
                _ => Next::Done,
            };
        }
        Next::Step(mid)
    }

    /// Notes the verdict of a step (after its repeats) at `target`.
    pub fn record(&mut self, step: Next, met: bool) {
        let (target, confirm) = match step {
            Next::Step(t) => (t, false),
            Next::Confirm(t) => (t, true),
            Next::Done => return,
        };
        if met {
            if confirm {
                self.confirmed = Some(target);
            } else {
                self.held.push(target);
            }
        } else {
            self.missed = Some(self.missed.map_or(target, |m| m.min(target)));
        }
    }

    /// Counts a step run (repeats too).
    pub fn ran(&mut self) {
        self.steps += 1;
    }
}

/// A client's part of a step's target in a search of several clients,
/// in proportion to its threads (`threads`: every client's, in index
/// order), as `--rate` is split: a share of the rate; or of the workers,
/// whole numbers of at least one each that add up to the target (when it
/// is at least one per client), the spares going to the largest
/// remainders.
pub fn share(over: Over, target: f64, threads: &[usize], index: usize) -> f64 {
    let all: usize = threads.iter().sum();
    let mine = threads.get(index).copied().unwrap_or(0);
    if all == 0 {
        return target;
    }
    match over {
        Over::Rate => target * mine as f64 / all as f64,
        Over::Threads => {
            let n = threads.len();
            let spare = (target.round().max(0.0) as usize).saturating_sub(n);
            let ideal: Vec<f64> = threads
                .iter()
                .map(|&t| spare as f64 * t as f64 / all as f64)
                .collect();
            let mut whole: Vec<usize> = ideal.iter().map(|x| x.floor() as usize).collect();
            let left = spare - whole.iter().sum::<usize>();
            let mut order: Vec<usize> = (0..n).collect();
            // Largest remainder first, the lower index on a tie.
            order.sort_by(|&a, &b| {
                let ra = ideal[a] - ideal[a].floor();
                let rb = ideal[b] - ideal[b].floor();
                rb.total_cmp(&ra).then(a.cmp(&b))
            });
            for &k in order.iter().take(left) {
                whole[k] += 1;
            }
            (1 + whole.get(index).copied().unwrap_or(0)) as f64
        }
    }
}

/// One step of a search as the reports say it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 1 for the first.
    pub step: u32,
    /// The target rate (units/s) or workers.
    pub target: f64,
    /// A repeat of the step before at the same target (its figures were
    /// within the noise of a criterion), or the answer's confirmation.
    #[serde(default)]
    pub repeat: bool,
    #[serde(default)]
    pub confirm: bool,
    /// Units per second the step achieved over its measured window.
    pub achieved_per_s: f64,
    pub units: u64,
    pub errors: u64,
    pub skipped: u64,
    /// Latency from the intended start, nanoseconds.
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// The measured window, seconds (shorter if `--slo-abort`'s rule
    /// stopped the step early).
    pub seconds: f64,
    /// Whether every criterion was met.
    pub met: bool,
    /// Whether a criterion's figure was within the noise of its bound.
    #[serde(default)]
    pub within_noise: bool,
    /// The step ended early: a criterion could no longer be met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub verdicts: Vec<Verdict>,
}

/// The whole search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindMaxRecord {
    pub slo: String,
    pub over: Over,
    /// The operation searched.
    pub operation: String,
    /// Its unit's plural ("queries").
    pub units: String,
    pub resolution: f64,
    pub settle_s: f64,
    pub window_s: f64,
    /// The highest target held (and confirmed); None: none held.
    pub answer: Option<f64>,
    /// The lowest target that missed, if one did.
    pub lowest_miss: Option<f64>,
    /// Every step in the order run.
    pub steps: Vec<StepRecord>,
    /// Wall time of the whole search, seconds.
    pub took_s: f64,
    /// Clients whose merged figures decided each step (1: this one).
    #[serde(default = "one")]
    pub clients: usize,
}

fn one() -> usize {
    1
}

impl FindMaxRecord {
    /// The achieved rate of the answer's steps (held, at the answer).
    pub fn answer_achieved(&self) -> Option<f64> {
        let a = self.answer?;
        self.steps
            .iter()
            .filter(|s| s.met && s.target == a)
            .map(|s| s.achieved_per_s)
            .reduce(f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> SearchPlan {
        SearchPlan {
            over: Over::Rate,
            start: 100.0,
            resolution: 0.05,
            repeats: 2,
            max_steps: 40,
        }
    }

    /// Runs a search against a server that holds every rate up to `cap`.
    fn search(cap: f64, plan: SearchPlan) -> (Search, Vec<Next>) {
        let mut s = Search::new(plan);
        let mut steps = Vec::new();
        loop {
            let n = s.next();
            if n == Next::Done {
                break;
            }
            steps.push(n);
            s.ran();
            let t = match n {
                Next::Step(t) | Next::Confirm(t) => t,
                Next::Done => unreachable!(),
            };
            s.record(n, t <= cap);
        }
        (s, steps)
    }

    #[test]
    fn the_search_doubles_then_bisects_to_its_resolution_and_confirms() {
        let (s, steps) = search(4120.0, plan());
        let a = s.answer().unwrap();
        assert!((4120.0 / 1.05 - 1.0..=4120.0).contains(&a), "{a} {steps:?}");
        assert_eq!(
            &steps[..3],
            &[Next::Step(100.0), Next::Step(200.0), Next::Step(400.0)]
        );
        assert_eq!(steps.last(), Some(&Next::Confirm(a)));
        assert!(steps.len() < 20, "{steps:?}");
        let odd = Search::new(SearchPlan {
            start: 43.8,
            ..plan()
        });
        assert_eq!(format!("{:?}", odd.next()), "Step(43.8)");
    }

    #[test]
    fn nothing_held_gives_no_answer() {
        let (s, steps) = search(0.5, plan());
        assert_eq!(s.answer(), None);
        assert!(steps.len() < 12, "{steps:?}");
    }

    #[test]
    fn a_failed_confirmation_bisects_on() {
        let mut s = Search::new(plan());
        for (t, met) in [(100.0, true), (200.0, false)] {
            s.ran();
            s.record(Next::Step(t), met);
        }
        // Bisect until close, then the confirmation misses.
        loop {
            match s.next() {
                Next::Confirm(t) => {
                    s.ran();
                    s.record(Next::Confirm(t), false);
                    break;
                }
                Next::Step(t) => {
                    s.ran();
                    s.record(Next::Step(t), true);
                }
                Next::Done => panic!("done before a confirmation"),
            }
        }
        assert_eq!(s.answer(), None);
        assert!(matches!(s.next(), Next::Step(_) | Next::Confirm(_)));
    }

    #[test]
    fn a_steps_target_is_shared_by_threads() {
        let threads = [1, 3, 6];
        let rates: Vec<f64> = (0..3)
            .map(|i| share(Over::Rate, 1000.0, &threads, i))
            .collect();
        assert_eq!(rates, [100.0, 300.0, 600.0]);
        for target in [3.0, 4.0, 10.0, 13.0, 101.0] {
            let workers: Vec<f64> = (0..3)
                .map(|i| share(Over::Threads, target, &threads, i))
                .collect();
            assert_eq!(workers.iter().sum::<f64>(), target, "{target}: {workers:?}");
            assert!(workers.iter().all(|w| *w >= 1.0 && w.fract() == 0.0));
            assert!(workers[0] <= workers[1] && workers[1] <= workers[2]);
        }
        // Fewer workers than clients: one each all the same.
        assert_eq!(share(Over::Threads, 2.0, &threads, 2), 1.0);
        assert_eq!(share(Over::Threads, 13.0, &[2, 2], 0), 7.0);
        assert_eq!(share(Over::Threads, 13.0, &[2, 2], 1), 6.0);
    }

    #[test]
    fn workers_are_searched_in_whole_numbers() {
        let p = SearchPlan {
            over: Over::Threads,
            start: 1.0,
            ..plan()
        };
        let (s, steps) = search(13.0, p);
        assert_eq!(s.answer(), Some(13.0), "{steps:?}");
    }
}
