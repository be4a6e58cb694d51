//! The schedule of a rate-limited operation, and waiting for it precisely.
//!
//! `--rate N` is shared out over the workers; each worker's units are due
//! at times that follow from the schedule alone (fixed spacing, or Poisson
//! arrivals), never from when its last unit ended, so the schedule cannot
//! drift and a slow server makes units late rather than rarer. Latency is
//! then measured from the due time.
//!
//! The worker threads' timer (`crate::rt::time`, like tokio's) has a
//! resolution of one millisecond, which would add up to
//! a millisecond of made-up lag to every unit of a sub-millisecond query.
//! So the last stretch of every wait goes through a small timer thread that
//! sleeps with the operating system's own precision (tens of microseconds on
//! Linux) and wakes the waiting tasks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// How arrivals are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Evenly spaced.
    Fixed,
    /// Exponentially distributed gaps with the same mean (Poisson arrivals).
    Poisson,
}

/// One worker's due times.
#[derive(Debug)]
pub struct Schedule {
    next: Instant,
    mean_gap: f64,
    distribution: Distribution,
    rng: SmallRng,
}

impl Schedule {
    /// The schedule of worker `thread` of `threads` for `rate` units per
    /// second over all of them. Workers are offset so that with fixed
    /// spacing their arrivals interleave evenly.
    pub fn new(
        start: Instant,
        rate: f64,
        threads: usize,
        thread: usize,
        distribution: Distribution,
        seed: u64,
    ) -> Schedule {
        let mean_gap = threads as f64 / rate;
        let offset = mean_gap * thread as f64 / threads as f64;
        Schedule {
            next: start + Duration::from_secs_f64(offset),
            mean_gap,
            distribution,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// The due time of the next unit, without taking it.
    pub fn peek(&self) -> Instant {
        self.next
    }

    /// The due time of the next unit; advances the schedule.
    pub fn next_due(&mut self) -> Instant {
        let due = self.next;
        let gap = match self.distribution {
            Distribution::Fixed => self.mean_gap,
            Distribution::Poisson => {
                let u: f64 = self.rng.random();
                -(1.0 - u).ln() * self.mean_gap
            }
        };
        self.next += Duration::from_secs_f64(gap);
        due
    }
}

/// Waits until `due`, or until `stopped` resolves; returns whether `due`
/// was reached (false: stopped), so that Ctrl-C during a long rate wait
/// ends the worker at once rather than at its next slot. The stop comes
/// as a notification (see `ending.rs`), not from a poll per waiting worker.
pub async fn wait_until_or(due: Instant, stopped: impl Future<Output = ()>) -> bool {
    tokio::select! {
        biased;
        _ = stopped => false,
        _ = wait_until(due) => true,
    }
}

/// Waits until `due` with sub-millisecond precision.
pub async fn wait_until(due: Instant) {
    // The loop's (or tokio's) timer for the bulk of a long wait (it may
    // wake up a millisecond or more late, hence the margin), the precise
    // timer for the rest.
    const MARGIN: Duration = Duration::from_micros(1500);
    let now = Instant::now();
    if due <= now {
        return;
    }
    if due - now > MARGIN * 2 {
        crate::rt::time::sleep_until(due - MARGIN).await;
    }
    PreciseSleep { due, id: None }.await
}

struct TimerShared {
    /// Due time, registration id, waker.
    heap: Mutex<BinaryHeap<Reverse<(Instant, u64, WakerSlot)>>>,
    next_id: std::sync::atomic::AtomicU64,
    thread: Thread,
}

struct WakerSlot(Waker);

impl PartialEq for WakerSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for WakerSlot {}
impl PartialOrd for WakerSlot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for WakerSlot {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

fn timer() -> &'static Arc<TimerShared> {
    static TIMER: OnceLock<Arc<TimerShared>> = OnceLock::new();
    TIMER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Arc<TimerShared>>();
        let handle = std::thread::Builder::new()
            .name("ysql-bench-timer".into())
            .spawn(move || {
                let Ok(shared) = rx.recv() else { return };
                timer_thread(&shared)
            });
        let thread = match &handle {
            Ok(h) => h.thread().clone(),
            // Without the thread, waiters are woken by their own polls
            // below (they fall back to yielding), never stuck.
            Err(_) => std::thread::current(),
        };
        let shared = Arc::new(TimerShared {
            heap: Mutex::new(BinaryHeap::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
            thread,
        });
        let _ = tx.send(shared.clone());
        shared
    })
}

fn timer_thread(shared: &TimerShared) {
    loop {
        let mut wake = Vec::new();
        let next = {
            let Ok(mut heap) = shared.heap.lock() else {
                return;
            };
            let now = Instant::now();
            while let Some(Reverse((due, _, _))) = heap.peek() {
                if *due > now {
                    break;
                }
                if let Some(Reverse((_, _, slot))) = heap.pop() {
                    wake.push(slot.0);
                }
            }
            heap.peek().map(|Reverse((due, _, _))| *due)
        };
        for w in wake {
            w.wake();
        }
        match next {
            Some(due) => std::thread::park_timeout(due.saturating_duration_since(Instant::now())),
            None => std::thread::park(),
        }
    }
}

struct PreciseSleep {
    due: Instant,
    id: Option<u64>,
}

impl Future for PreciseSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.due {
            return Poll::Ready(());
        }
        let t = timer();
        if self.id.is_none() {
            self.id = Some(t.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        }
        let registered = match t.heap.lock() {
            Ok(mut heap) => {
                heap.push(Reverse((
                    self.due,
                    self.id.unwrap_or(0),
                    WakerSlot(cx.waker().clone()),
                )));
                true
            }
            Err(_) => false,
        };
        if registered {
            t.thread.unpark();
        } else {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_spacing_interleaves_workers_and_never_drifts() {
        let start = Instant::now();
        let mut a = Schedule::new(start, 1000.0, 2, 0, Distribution::Fixed, 1);
        let mut b = Schedule::new(start, 1000.0, 2, 1, Distribution::Fixed, 1);
        let a_due: Vec<Duration> = (0..1000).map(|_| a.next_due() - start).collect();
        let b_first = b.next_due() - start;
        assert_eq!(a_due[1], Duration::from_millis(2));
        assert_eq!(b_first, Duration::from_millis(1));
        // After 1000 units at 500/s each, the 1000th is due at 1.998 s.
        let last = a_due[999].as_secs_f64();
        assert!((last - 1.998).abs() < 1e-6, "{last}");
    }

    #[test]
    fn poisson_gaps_have_the_asked_mean_and_vary() {
        let start = Instant::now();
        let mut s = Schedule::new(start, 100.0, 1, 0, Distribution::Poisson, 7);
        let dues: Vec<Instant> = (0..20_001).map(|_| s.next_due()).collect();
        let gaps: Vec<f64> = dues
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.01).abs() < 0.0005, "{mean}");
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // An exponential distribution's standard deviation equals its mean.
        assert!((var.sqrt() - 0.01).abs() < 0.001, "{}", var.sqrt());
    }

    #[tokio::test]
    async fn precise_waits_never_end_early() {
        for i in 0..50u64 {
            let due = Instant::now() + Duration::from_micros(300 + i * 97);
            wait_until(due).await;
            assert!(Instant::now() >= due);
        }
    }
}
