//! How the run answers SIGINT and SIGTERM: which signal stops it with
//! every report written, and which quits at once.
//!
//! A stop costs the units in flight a few seconds; quitting at once costs
//! the summary and the reports, which are what the run was for. So only a
//! person who asks twice, on purpose, quits at once, and what only looks
//! like asking twice does not:
//!
//! - coreutils' `timeout` sends its signal to the child and then to the
//!   child's process group, so one expiry reaches the tool twice within
//!   microseconds; a terminal's Ctrl-C reaches every process of the
//!   foreground group the same way. A repeat within [`REPEAT_WINDOW`] of
//!   the first signal, of either kind, is the same request.
//! - SIGTERM is what machines send (Kubernetes, systemd, `docker stop`,
//!   `timeout`), and each of them follows it, if at all, with SIGKILL
//!   after a grace period: they want the reports, and a repeated SIGTERM
//!   (a second `kubectl delete`, a script's retry) asks for nothing the
//!   first did not. A SIGTERM never quits at once.
//! - A SIGINT a second or more after the first signal is a person's
//!   second Ctrl-C: quit at once.
//!
//! The policy is plain data over the time of each signal, so it is tested
//! here without signals; `main` receives them and acts on the answer.

use std::time::{Duration, Instant};

/// How long after the first signal a second one counts as the same
/// request: far longer than `timeout`'s or a process group's repeat
/// (microseconds), and shorter than a person takes to decide that the
/// stop takes too long.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(1);

/// The signals that end a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: Ctrl-C, `timeout -s INT`.
    Interrupt,
    /// SIGTERM: `kill`, `timeout`, Kubernetes, systemd, `docker stop`.
    Terminate,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }
}

/// What to do about a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The first: stop the run as Ctrl-C does, writing the summary and
    /// every report.
    Stop,
    /// The first signal again, within [`REPEAT_WINDOW`]: nothing to do
    /// and nothing to say.
    Repeat,
    /// A later SIGTERM: the stop goes on and the reports will be written;
    /// say so.
    StillStopping,
    /// A later SIGINT: quit at once, without the reports not yet written.
    Quit,
}

/// The signals seen so far, as far as the answer to the next depends on
/// them.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// When the first signal came.
    first: Option<Instant>,
}

impl Signals {
    /// The answer to `signal`, received at `now`.
    pub fn answer(&mut self, signal: Signal, now: Instant) -> Answer {
        let Some(first) = self.first else {
            self.first = Some(now);
            return Answer::Stop;
        };
        if now.saturating_duration_since(first) < REPEAT_WINDOW {
            return Answer::Repeat;
        }
        match signal {
            Signal::Terminate => Answer::StillStopping,
            Signal::Interrupt => Answer::Quit,
        }
    }
}

/// The line said when the run starts to stop; `started`: whether the
/// first operation had started. Before it there are no units in flight
/// and no reports to write, only set-up queries to cancel.
pub fn stopping_line(signal: Signal, started: bool) -> String {
    let what = match signal {
        Signal::Interrupt => "interrupted",
        Signal::Terminate => "interrupted by SIGTERM",
    };
    if !started {
        return format!("{what} during set-up: cancelling it; nothing has run yet");
    }
    format!(
        "{what}: finishing the units in flight, then writing the summary and the reports (Ctrl-C again, a second from now or later, quits at once without them)"
    )
}

/// The line said for a later SIGTERM, which changes nothing.
pub fn still_stopping_line(signal: Signal, started: bool) -> String {
    if !started {
        return format!("{} again: still stopping the set-up", signal.name());
    }
    format!(
        "{} again: still stopping; the summary and the reports follow (Ctrl-C quits at once without them)",
        signal.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn the_first_signal_of_either_kind_stops() {
        let t = Instant::now();
        assert_eq!(
            Signals::default().answer(Signal::Interrupt, t),
            Answer::Stop
        );
        assert_eq!(
            Signals::default().answer(Signal::Terminate, t),
            Answer::Stop
        );
    }

    /// Issue 22: `timeout` signals the child, then its process group; the
    /// second arrival quit the run without its reports.
    #[test]
    fn a_repeat_within_the_window_is_the_same_request() {
        for (first, second) in [
            (Signal::Terminate, Signal::Terminate),
            (Signal::Interrupt, Signal::Interrupt),
            (Signal::Terminate, Signal::Interrupt),
            (Signal::Interrupt, Signal::Terminate),
        ] {
            let t = Instant::now();
            let mut s = Signals::default();
            assert_eq!(s.answer(first, t), Answer::Stop);
            assert_eq!(s.answer(second, t), Answer::Repeat);
            assert_eq!(s.answer(second, after(t, 999)), Answer::Repeat);
        }
    }

    #[test]
    fn a_later_sigint_quits_and_a_later_sigterm_never_does() {
        for first in [Signal::Interrupt, Signal::Terminate] {
            let t = Instant::now();
            let mut s = Signals::default();
            s.answer(first, t);
            assert_eq!(
                s.answer(Signal::Terminate, after(t, 1000)),
                Answer::StillStopping
            );
            assert_eq!(
                s.answer(Signal::Terminate, after(t, 30_000)),
                Answer::StillStopping
            );
            assert_eq!(s.answer(Signal::Interrupt, after(t, 1000)), Answer::Quit);
        }
    }

    /// The window counts from the first signal: repeats inside it do not
    /// stretch it, so a person's later Ctrl-C is never taken for one.
    /// A stop before the first operation has no units in flight: its
    /// line must not say it finishes them (the audit after issue 22).
    #[test]
    fn a_stop_during_set_up_speaks_of_no_units_in_flight() {
        for sig in [Signal::Interrupt, Signal::Terminate] {
            assert!(!stopping_line(sig, false).contains("in flight"));
            assert!(stopping_line(sig, false).contains("during set-up"));
            assert!(stopping_line(sig, true).contains("in flight"));
            assert!(!still_stopping_line(sig, false).contains("reports follow"));
        }
    }

    #[test]
    fn repeats_do_not_move_the_window() {
        let t = Instant::now();
        let mut s = Signals::default();
        s.answer(Signal::Interrupt, t);
        assert_eq!(s.answer(Signal::Interrupt, after(t, 900)), Answer::Repeat);
        assert_eq!(s.answer(Signal::Interrupt, after(t, 1100)), Answer::Quit);
    }
}
