//! What a worker does after a failure: retry the unit with jittered
//! backoff (serialization failures and deadlocks), replace a lost
//! connection, and count what a failed or cancelled long unit left
//! committed.

use std::time::{Duration, Instant};

use super::ending::ending_for;
use super::worker::{Phase, WorkerOutput};
use super::{COUNT_BUDGET, COUNT_TRIES};
use crate::error::{Error, Result};
use crate::workload::Operation;

/// Reconnection attempts after a lost connection, and the longest pause
/// between two of them: about half a minute in all, then the worker gives up.
const RECONNECT_TRIES: u32 = 15;
const RECONNECT_MAX_PAUSE: Duration = Duration::from_secs(2);

/// The pause before retry or reconnection number `n` (1-based): doubling
/// from `base`, capped, with full jitter so that workers do not retry in
/// lockstep.
pub(super) fn backoff(
    n: u32,
    base: Duration,
    cap: Duration,
    rng: &mut rand::rngs::SmallRng,
) -> Duration {
    use rand::RngExt;
    let ceiling = base.saturating_mul(1u32 << n.min(16)).min(cap);
    ceiling.mul_f64(rng.random_range(0.5..=1.0))
}

impl Phase<'_> {
    /// What a cancelled or failed long unit left in the table: counted on
    /// a new lean connection to the same host (the worker's may be lost: a
    /// server restart in the middle of a procedure CALL), once the server
    /// answers again (for up to about 10 s). A count that cannot be made
    /// is said and taken as none.
    pub(super) async fn committed_rows<O: Operation>(&self, op: &mut O) -> u64 {
        // The count must not be taken for a stuck unit and cancelled.
        self.session.forget_in_flight();
        let count = async {
            let mut last = None;
            for _ in 0..COUNT_TRIES {
                match self.session.spare().await {
                    Ok(mut conn) => match op.committed_rows(&mut conn).await {
                        Ok(n) => return Ok(n),
                        Err(e) => last = Some(e),
                    },
                    Err(e) => last = Some(e),
                }
                crate::rt::time::sleep(Duration::from_millis(500)).await;
            }
            Err(last.unwrap_or_else(|| Error::run("no connection to count on")))
        };
        match crate::rt::time::timeout(COUNT_BUDGET, count).await {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => {
                crate::say!("warning: {e}; the rows it committed are not counted");
                0
            }
            Err(_) => {
                crate::say!(
                    "warning: the rows the {} committed could not be counted within {} s; they are not counted",
                    self.pace.spec.unit,
                    COUNT_BUDGET.as_secs()
                );
                0
            }
        }
    }

    /// After a lost connection (`cause`): whether the worker goes on, on a
    /// new connection. It ends quietly at the stop or the end of `--time`,
    /// and with `cause` as its error when no connection can be made.
    pub(super) async fn recover<O: Operation>(
        &mut self,
        op: &mut O,
        out: &mut WorkerOutput,
        deadline: Option<Instant>,
        cause: Error,
    ) -> bool {
        match self.reconnect(op, deadline).await {
            Ok(reconnected) => reconnected,
            Err(re) => {
                out.error = Some(Error::run(format!(
                    "{cause}; then the connection could not be made again: {re}"
                )));
                false
            }
        }
    }

    /// Replaces a lost connection: bounded attempts with backoff, then
    /// the session is set up and statements prepared again. Returns
    /// Ok(false), not an error, when the stop or the end of `--time` comes
    /// first: the worker then simply ends, with what it measured, well
    /// within the coordinator's patience.
    async fn reconnect<O: Operation>(
        &mut self,
        op: &mut O,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let mut last = Error::run("no attempt was made");
        for n in 1..=RECONNECT_TRIES {
            let stats = self.rec.stats(self.measured);
            let attempt = tokio::select! {
                r = self.session.reopen(op, stats) => r,
                _ = ending_for(&self.stop, deadline) => return Ok(false),
            };
            match attempt {
                Ok(()) => {
                    stats.common(|c| c.reconnects += 1);
                    if self.measured {
                        let now = Instant::now();
                        self.rec.interval(|iv| iv.record_reconnect(now));
                    }
                    crate::say!(
                        ">> {} thread {}: the connection was lost and is made again (attempt {n})",
                        self.pace.spec,
                        self.thread + 1
                    );
                    return Ok(true);
                }
                Err(e) => last = e,
            }
            let pause = backoff(
                n,
                Duration::from_millis(100),
                RECONNECT_MAX_PAUSE,
                &mut self.rng,
            );
            tokio::select! {
                _ = crate::rt::time::sleep(pause) => {}
                _ = ending_for(&self.stop, deadline) => return Ok(false),
            }
        }
        Err(last)
    }
}
