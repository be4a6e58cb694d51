//! Why and when an operation's units are being ended early: the stop
//! (Ctrl-C, SIGTERM, another worker's failure) or the end of `--time`.
//! The coordinator starts its grace on it, a long unit cancels itself on
//! it, and a reconnecting worker gives up quietly on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
