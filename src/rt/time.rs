//! Sleeps and timeouts on the thread's loop or, off one, on tokio's timer.
//! Both wake up late by up to a millisecond (the loop's park, like tokio's
//! timer wheel, counts in whole milliseconds, rounded up), plus the
//! kernel's timer slack, plus, on a busy loop, the tasks polled before the
//! timers are looked at again; `runner::schedule` adds the precise last
//! stretch where a unit's due time needs it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::exec::{on_loop, with_core};

/// A wait until an instant.
pub struct Sleep(Inner);

enum Inner {
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Own { at: Instant, timer: Option<u64> },
}

/// Waits until `at`.
pub fn sleep_until(at: Instant) -> Sleep {
    if on_loop() {
        Sleep(Inner::Own { at, timer: None })
    } else {
        Sleep(Inner::Tokio(Box::pin(tokio::time::sleep_until(at.into()))))
    }
}

/// Waits for `d` (a span too long to add to the clock waits for ever, in
/// effect: about 30 years).
pub fn sleep(d: Duration) -> Sleep {
    let now = Instant::now();
    let at = now
        .checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
    sleep_until(at)
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.get_mut().0 {
            Inner::Tokio(s) => s.as_mut().poll(cx),
            Inner::Own { at, timer } => {
                let at = *at;
                let fired = with_core(|core| match *timer {
                    Some(seq) => !core.update_timer(at, seq, cx.waker()),
                    None => {
                        if Instant::now() >= at {
                            return true;
                        }
                        *timer = Some(core.add_timer(at, cx.waker().clone()));
                        false
                    }
                });
                match fired {
                    Some(false) => Poll::Pending,
                    Some(true) => {
                        *timer = None;
                        Poll::Ready(())
                    }
                    // Moved off its loop (not done here): the clock decides.
                    None if Instant::now() >= at => Poll::Ready(()),
                    None => {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                }
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Inner::Own {
            at,
            timer: Some(seq),
        } = self.0
        {
            let _ = with_core(|core| core.remove_timer(at, seq));
        }
    }
}

/// A timeout's end before its future's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// `fut`'s output, or [`Elapsed`] if `d` passes first.
pub async fn timeout<F: Future>(d: Duration, fut: F) -> Result<F::Output, Elapsed> {
    let limit = sleep(d);
    tokio::select! {
        biased;
        out = fut => Ok(out),
        _ = limit => Err(Elapsed),
    }
}
