//! Why and when an operation's units are being ended early: the stop
//! (Ctrl-C, SIGTERM, another worker's failure) or the end of `--time`.
//! The coordinator starts its grace on it, a long unit cancels itself on
//! it, and a reconnecting worker gives up quietly on it.
//!
//! The stop is a flag that anyone may set (the signal handler, the app's
//! control, a failing worker). Workers look at it before every unit, a
//! load of one atomic. Waiting workers (a rate slot, a long unit, a
//! reconnection's pause, a TPC-C terminal's keying or think time) do not
//! poll it on a timer each: the run's housekeeping task looks at it every
//! [`STOP_LOOK`] for every OS thread and wakes their waiting workers at
//! once ([`ThreadStop`]), so a thousand idle workers cost one timer, not a
//! thousand, and no worker thread has a timer of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How often the flag is looked at while someone waits for it.
pub(super) const STOP_LOOK: Duration = Duration::from_millis(20);

/// Why an operation's units are being ended early: what makes the
/// coordinator start its grace, a long unit cancel itself, and a
/// reconnecting worker give up quietly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ending {
    /// The run was stopped (Ctrl-C, SIGTERM, another worker's failure).
    Stop,
    /// `--time` is up.
    Deadline,
}

impl Ending {
    /// As the messages say it.
    pub(super) fn what(self) -> &'static str {
        match self {
            Ending::Stop => "the stop",
            Ending::Deadline => "the end of --time",
        }
    }
}

/// Resolves when `stop` is set (seen within 20 ms) or `deadline` passes:
/// which, and when.
pub(super) async fn ending(stop: &AtomicBool, deadline: Option<Instant>) -> (Ending, Instant) {
    loop {
        let now = Instant::now();
        if stop.load(Ordering::Relaxed) {
            return (Ending::Stop, now);
        }
        if let Some(d) = deadline
            && now >= d
        {
            return (Ending::Deadline, d);
        }
        crate::rt::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The run's stop flag as the workers of one OS thread see it: they wait
/// on a notification that the run's housekeeping task sends when it
/// finds the flag set ([`ThreadStop::look`]), or that a worker of the
/// thread sends when it sets the flag itself.
#[derive(Clone)]
pub(super) struct ThreadStop {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl ThreadStop {
    pub(super) fn new(flag: Arc<AtomicBool>) -> Self {
        ThreadStop {
            flag,
            notify: Arc::new(Notify::new()),
        }
    }

    pub(super) fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Stops the run: every worker ends after its unit in flight; those of
    /// this thread that wait are woken at once, the others at the
    /// housekeeping's next look.
    pub(super) fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
        self.notify.notify_waiters();
    }

    /// Wakes the thread's waiting workers if the flag is set.
    pub(super) fn look(&self) {
        if self.is_set() {
            self.notify.notify_waiters();
        }
    }

    /// Resolves once the flag is set (seen within [`STOP_LOOK`]).
    pub(super) async fn stopped(&self) {
        loop {
            // Registered before the flag is read, so that a notification
            // between the two is not missed.
            let woken = self.notify.notified();
            if self.is_set() {
                return;
            }
            woken.await;
        }
    }
}

/// As [`ending`], for a worker: woken by its thread's [`ThreadStop`]
/// instead of polling, and by a timer at the deadline.
pub(super) async fn ending_for(stop: &ThreadStop, deadline: Option<Instant>) -> (Ending, Instant) {
    let at_deadline = async {
        match deadline {
            Some(d) => crate::rt::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = stop.stopped() => (Ending::Stop, Instant::now()),
        _ = at_deadline => match deadline {
            Some(d) => (Ending::Deadline, d),
            None => (Ending::Stop, Instant::now()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiting_worker_is_woken_by_the_look_after_the_flag_is_set() {
        let flag = Arc::new(AtomicBool::new(false));
        let stop = ThreadStop::new(flag.clone());
        // A current-thread runtime, as a worker thread's.
        let waiter = {
            let stop = stop.clone();
            tokio::spawn(async move { ending_for(&stop, None).await.0 })
        };
        tokio::task::yield_now().await;
        // Set from elsewhere (a signal handler): seen at the look.
        flag.store(true, Ordering::Relaxed);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        stop.look();
        assert_eq!(waiter.await.unwrap(), Ending::Stop);
    }

    #[tokio::test]
    async fn the_deadline_ends_the_wait_at_the_deadline() {
        let stop = ThreadStop::new(Arc::new(AtomicBool::new(false)));
        let d = Instant::now() + Duration::from_millis(30);
        let (why, at) = ending_for(&stop, Some(d)).await;
        assert_eq!((why, at), (Ending::Deadline, d));
        assert!(Instant::now() >= d);
    }
}
