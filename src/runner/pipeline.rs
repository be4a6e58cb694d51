//! The units a worker has started and not yet counted ([`Lane`]), and how
//! they are sent: one at a time through the operation's `execute`, or with
//! `--pipeline N` up to N in flight on the connection.
//!
//! Pipelined, each unit is queued as its own Bind/Execute
//! ([`crate::workload::Operation::queue`]) and the runner ends each batch
//! of `--pipeline-sync K` units with a Sync; everything queued is written
//! at once, and the answers are read in order: the first one awaited, then
//! every other one that came in the same read without another syscall
//! ([`crate::db::wire::WireConn::buffered_answer`]). In a closed loop this
//! keeps N queries in flight and costs one read and one write per group of
//! answers; a worker refills only once a whole batch has room, so that
//! batches keep their size. Under `--rate` the next unit waits for its due
//! time while the answers of the earlier ones are read (a `select!`
//! between the two, which the answer's reading survives), and is queued
//! then, not when an answer frees a place; a batch then holds the units
//! that were due together.
//!
//! Why batches: with a Sync per unit (the default) each unit is its own
//! transaction and a failure costs the others nothing, but the server
//! flushes after every Sync, and the client reads and writes about once
//! per answer. A batch of K is what pgbench's `\startpipeline` …
//! `\endpipeline` sends: one flush for K answers, and K units that are one
//! transaction. So its units are counted when the batch ends: all of them
//! when it commits; when one fails, it with its error and the others with
//! [`Error::Batch`] (those before it were rolled back, those after it the
//! server skipped), and the retry policy judges all of them by the
//! failure's error, as does the end of the run: a failure it would have
//! tried again but for the end leaves the whole batch out, not counted
//! failed.
//!
//! Each unit keeps its own times: latency from its due time (or its send),
//! service time from its send to its answer. A unit whose failure the retry
//! policy names is queued again, as it was, once its backoff has passed. A
//! lost connection fails every unit in flight on it, each counted; the
//! first makes the worker reconnect ([`super::worker`]'s `unit_failed`).
//!
//! What follows the end of a unit (counting it, retries, errors,
//! reconnecting, the stop) is the one worker loop's, whichever way it was
//! sent.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::backoff;
use super::schedule;
use super::worker::{Finished, Held, Phase, Sent, Worker};
use crate::db::wire::{Answer, WireError};
use crate::error::{Error, Result};
use crate::workload::{Operation, Ticket};

/// The units a worker has started and not yet counted.
///
/// In declaration order (`repr(C)`): what a unit sent alone reads first
/// (see [`Worker`]).
#[repr(C)]
pub(super) struct Lane {
    /// Units in flight at most: 1 sends each unit alone, through the
    /// operation's `execute`.
    depth: usize,
    /// Units that may still start (`--transactions`; None: no limit).
    pub(super) left: Option<u64>,
    /// When the held unit is due: the wait for answers ends then.
    pub(super) wake: Option<Instant>,
    /// A unit to send alone (depth 1), its due time reached.
    pub(super) alone: Option<Held>,
    /// The next unit, staged and waiting for its due time.
    pub(super) held: Option<Held>,
    /// Units at their end, to be counted.
    pub(super) done: VecDeque<Finished>,
    /// What only pipelined units use, apart: a unit sent alone reads the
    /// lane's first two lines and no more.
    pipe: Box<Pipe>,
}

/// The part of a [`Lane`] that only pipelined units (`depth` above 1)
/// use.
struct Pipe {
    /// Units per Sync (`--pipeline-sync`): 1 makes each its own
    /// transaction.
    per_sync: usize,
    /// Pipelined units queued or sent, oldest first: their answers come
    /// in this order.
    flights: VecDeque<Flight>,
    /// Failed units waiting for their next try.
    retries: Vec<Flight>,
    /// The current batch's units answered so far, waiting for its end to
    /// be answered to the operation and counted (only with `per_sync`
    /// above 1).
    answered: Vec<Waiting>,
    /// How many of the last of `flights` are queued and not yet written.
    unsent: usize,
    /// Buffers of finished units' messages, for the next ones to keep.
    spare: Vec<Vec<u8>>,
}

/// A pipelined unit, from its queueing to its answer.
struct Flight {
    ty: usize,
    due: Option<Instant>,
    ticket: Ticket,
    /// Its first send, and its last (a retry's).
    sent: Instant,
    attempt: Instant,
    /// Tries sent (or queued) so far.
    tries: u32,
    /// The connection it was queued on ([`super::session::Session::number`]).
    conn: u64,
    /// Its messages, to queue again after a failure the retry policy
    /// names; empty when no retry can be.
    replay: Vec<u8>,
    /// A failed unit waits for its next try until then.
    not_before: Instant,
    /// Why its last try failed, while it waits for the next.
    error: Option<Error>,
    /// A Sync follows it: its answer ends with the ReadyForQuery.
    last: bool,
}

/// A unit of a batch that the server answered with a success, waiting
/// for the batch's end: its answer, the time from its send to it, and
/// when it came.
struct Waiting {
    flight: Flight,
    answer: Answer,
    took: Duration,
    end: Instant,
}

impl Flight {
    fn finished(&self, end: Instant, res: Result<crate::workload::Outcome>) -> Finished {
        Finished {
            unit: Sent {
                ty: self.ty,
                due: self.due,
                sent: self.sent,
                attempt: self.attempt,
                end,
                tries: self.tries,
                ticket: Some(self.ticket),
                conn: self.conn,
            },
            res,
            cancelled: None,
        }
    }
}

impl Lane {
    pub(super) fn new(depth: usize, per_sync: usize, left: Option<u64>) -> Lane {
        let depth = depth.max(1);
        Lane {
            depth,
            left,
            wake: None,
            alone: None,
            held: None,
            done: VecDeque::new(),
            pipe: Box::new(Pipe {
                per_sync: per_sync.clamp(1, depth),
                flights: VecDeque::with_capacity(depth),
                retries: Vec::new(),
                answered: Vec::new(),
                unsent: 0,
                spare: Vec::new(),
            }),
        }
    }

    /// One more unit started, or skipped as late.
    pub(super) fn count_down(&mut self) {
        self.left = self.left.map(|n| n.saturating_sub(1));
    }

    fn pipelined(&self) -> bool {
        self.depth > 1
    }

    /// Whether units may start now, in a closed loop (no `--rate`): once
    /// a whole batch has room, or nothing is in flight. Under a rate each
    /// starts when due.
    pub(super) fn may_refill(&self, closed: bool) -> bool {
        !closed || !self.pipelined() || self.taken() + self.pipe.per_sync <= self.depth
    }

    /// Whether another unit may start now.
    pub(super) fn has_room(&self) -> bool {
        self.done.is_empty()
            && self.alone.is_none()
            && (!self.pipelined() || self.taken() < self.depth)
    }

    /// The places of the pipeline taken: units in flight, answered in a
    /// batch that has not ended (they are its until its Sync: counted
    /// free, a refill would start more than a batch, and the batches that
    /// follow would be cut at other places than K), or waiting for a
    /// retry.
    fn taken(&self) -> usize {
        self.pipe.flights.len() + self.pipe.answered.len() + self.pipe.retries.len()
    }

    /// Nothing started is left to send, answer or count (a held unit was
    /// only staged).
    pub(super) fn idle(&self) -> bool {
        self.alone.is_none() && self.done.is_empty() && self.none_pipelined()
    }

    /// No unit queued, answered in an open batch, or waiting for its
    /// retry: always so when each unit is sent alone, whose path reads
    /// only the lane's first lines (see its field order).
    fn none_pipelined(&self) -> bool {
        !self.pipelined()
            || self.pipe.flights.is_empty()
                && self.pipe.answered.is_empty()
                && self.pipe.retries.is_empty()
    }

    /// No unit starts any more: the held one is dropped, and the failed
    /// ones waiting for a try end with their last error.
    pub(super) fn close(&mut self) {
        self.held = None;
        self.wake = None;
        let now = Instant::now();
        for mut f in std::mem::take(&mut self.pipe.retries) {
            let e = f
                .error
                .take()
                .unwrap_or_else(|| Error::run("not tried again"));
            self.done.push_back(f.finished(now, Err(e)));
        }
    }

    /// When the wait for answers must end: the held unit's due time or the
    /// next retry's.
    fn next_wake(&self) -> Option<Instant> {
        let retry = self.pipe.retries.iter().map(|f| f.not_before).min();
        match (self.wake, retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The open batch: the units last queued on connection `number` with
    /// no Sync after them yet (what was open on a connection since
    /// replaced went with it).
    fn open(&self, number: u64) -> usize {
        self.pipe
            .flights
            .iter()
            .rev()
            .take_while(|f| !f.last && f.conn == number)
            .count()
    }

    /// A unit was queued on `conn`: the batch ends with a Sync once it
    /// holds `per_sync` units.
    fn queued(&mut self, conn: &mut crate::db::wire::WireConn, number: u64) {
        if self.open(number) >= self.pipe.per_sync {
            self.sync(conn, number);
        }
    }

    /// Ends the open batch with a Sync (before a write, a short one).
    fn sync(&mut self, conn: &mut crate::db::wire::WireConn, number: u64) {
        if self.open(number) == 0 {
            return;
        }
        conn.queue_sync();
        if let Some(f) = self.pipe.flights.back_mut() {
            f.last = true;
        }
    }

    fn keep(&mut self, messages: &[u8]) -> Vec<u8> {
        let mut v = self.pipe.spare.pop().unwrap_or_default();
        v.extend_from_slice(messages);
        v
    }

    fn recycle(&mut self, mut f: Flight) {
        if f.replay.capacity() > 0 {
            f.replay.clear();
            self.pipe.spare.push(std::mem::take(&mut f.replay));
        }
    }
}

/// What became of a unit sent alone once its first try was answered.
pub(super) enum FirstTry {
    /// A success, counted (see [`Worker::first_try`]).
    Counted,
    /// At its end, to be counted by the loop.
    Ended(Finished),
    /// Failed with an error the retry policy names: to be tried again.
    Again(Held),
}

impl Worker<'_> {
    /// The end of a short unit's first try, sent alone at `sent` on
    /// connection `conn` (the loop, `units`, sends it and awaits its
    /// answer itself: a future of its own between the two is one more
    /// state a unit reads and writes, see [`Worker`]).
    ///
    /// A success with no latency log and nothing waiting in `lane.done`
    /// (the common case) is counted here: a [`Finished`] kept in the
    /// loop's state across its awaits is 152 bytes written and read back
    /// per unit, on cache lines that, with hundreds of connections per
    /// thread, have left the cache since the connection's last unit
    /// (cachegrind, 256 connections: about three misses a unit). Anything
    /// else is returned, not put in `lane.done`: the loop counts it in the
    /// order units ended.
    pub(super) fn first_try<O: Operation>(
        &mut self,
        op: &mut O,
        h: Held,
        (sent, conn): (Instant, u64),
        res: Result<crate::workload::Outcome>,
        deadline: Option<Instant>,
    ) -> FirstTry {
        let Worker { out, lane, phase } = self;
        let end = Instant::now();
        match res {
            Err(e) if phase.may_retry(op, 1, &e, deadline, end) => FirstTry::Again(h),
            Ok(outcome) if phase.log.is_none() && lane.done.is_empty() => {
                let unit = h.sent(sent, sent, end, 1, conn);
                phase.count_success(op, &unit, outcome, out, true);
                FirstTry::Counted
            }
            res => FirstTry::Ended(Finished {
                unit: h.sent(sent, sent, end, 1, conn),
                res,
                cancelled: None,
            }),
        }
    }
}

impl Phase<'_> {
    /// Whether no unit may start before those in flight are counted: their
    /// connection is broken, and the first failure to count replaces it.
    pub(super) fn must_drain(&self, lane: &Lane) -> bool {
        lane.pipelined() && !lane.pipe.flights.is_empty() && self.session.is_closed()
    }

    /// Starts `held`, its due time reached: kept to be sent alone, or
    /// queued on the connection (a unit that cannot be queued ends at
    /// once, failed).
    pub(super) fn start<O: Operation>(&mut self, op: &mut O, lane: &mut Lane, held: Held) {
        lane.count_down();
        self.rec.unit_started();
        if !lane.pipelined() {
            lane.alone = Some(held);
            return;
        }
        let now = Instant::now();
        let conn_number = self.session.number();
        // The messages are kept only when a failure may be tried again.
        let keep = self.pace.retry.max_tries != 1 && op.retryable();
        let queued = self.session.conn().and_then(|conn| {
            let mark = conn.queued_len();
            let ticket = op.queue(conn)?;
            let replay = if keep {
                lane.keep(conn.queued_since(mark))
            } else {
                Vec::new()
            };
            Ok((ticket, replay))
        });
        match queued {
            Ok((ticket, replay)) => {
                lane.pipe.flights.push_back(Flight {
                    ty: held.ty,
                    due: held.due,
                    ticket,
                    sent: now,
                    attempt: now,
                    tries: 1,
                    conn: conn_number,
                    replay,
                    not_before: now,
                    error: None,
                    last: false,
                });
                lane.pipe.unsent += 1;
                if let Ok(conn) = self.session.conn() {
                    lane.queued(conn, conn_number);
                }
            }
            Err(e) => lane.done.push_back(Finished {
                unit: held.sent(now, now, now, 1, conn_number),
                res: Err(e),
                cancelled: None,
            }),
        }
    }

    /// Queues again the first failed unit whose backoff has passed, on the
    /// connection it failed on; one whose connection was since replaced
    /// ends with its error. False when none was due.
    pub(super) fn start_retry(&mut self, lane: &mut Lane) -> bool {
        if !lane.pipelined() || lane.pipe.retries.is_empty() {
            return false;
        }
        let now = Instant::now();
        let Some(i) = lane.pipe.retries.iter().position(|f| f.not_before <= now) else {
            return false;
        };
        let mut f = lane.pipe.retries.swap_remove(i);
        let same = f.conn == self.session.number();
        let queued = same
            && self
                .session
                .conn()
                .is_ok_and(|c| c.queue_again(&f.replay).is_ok());
        if queued {
            f.tries += 1;
            f.error = None;
            f.last = false;
            lane.pipe.flights.push_back(f);
            lane.pipe.unsent += 1;
            let number = self.session.number();
            if let Ok(conn) = self.session.conn() {
                lane.queued(conn, number);
            }
        } else {
            let e = f
                .error
                .take()
                .unwrap_or_else(|| Error::run("not tried again"));
            lane.done.push_back(f.finished(now, Err(e)));
            lane.recycle(f);
        }
        true
    }

    /// The loop's wait with units queued on the connection: they are
    /// written, and at least one answer is read into `lane.done`.
    pub(super) async fn finish_pipelined<O: Operation>(
        &mut self,
        op: &mut O,
        lane: &mut Lane,
        deadline: Option<Instant>,
        ending: bool,
    ) {
        // Units queued on a connection since replaced get no answer.
        while lane
            .pipe
            .flights
            .front()
            .is_some_and(|f| f.conn != self.session.number())
        {
            self.answered(op, lane, Err(WireError::Closed(None)), deadline, ending);
        }
        self.send_queued(lane).await;
        let wake = lane.next_wake();
        if lane.pipe.flights.is_empty() {
            if let Some(w) = wake {
                schedule::wait_until_or(w, self.stop.stopped()).await;
            }
            return;
        }
        let Ok(conn) = self.session.conn() else {
            self.all_lost(op, lane, deadline, ending);
            return;
        };
        let stop = &self.stop;
        let through = lane.pipe.flights.front().is_none_or(|f| f.last);
        let first = tokio::select! {
            biased;
            a = conn.answer(through) => Some(a),
            _ = sleep_until(wake) => None,
            _ = stop.stopped(), if wake.is_some() => None,
        };
        let Some(first) = first else {
            return;
        };
        self.answered(op, lane, first, deadline, ending);
        while let Some(through) = lane.pipe.flights.front().map(|f| f.last) {
            let Some(next) = self
                .session
                .conn()
                .ok()
                .and_then(|c| c.buffered_answer(through))
            else {
                break;
            };
            self.answered(op, lane, next, deadline, ending);
        }
    }

    /// Writes the queued units, all in one write; their sends are now.
    async fn send_queued(&mut self, lane: &mut Lane) {
        if lane.pipe.unsent == 0 {
            return;
        }
        let now = Instant::now();
        for f in lane.pipe.flights.iter_mut().rev().take(lane.pipe.unsent) {
            f.attempt = now;
            if f.tries == 1 {
                f.sent = now;
            }
        }
        lane.pipe.unsent = 0;
        let number = self.session.number();
        // A failed write breaks the connection: the answers say so.
        if let Ok(conn) = self.session.conn() {
            lane.sync(conn, number);
            let _ = conn.send().await;
        }
    }

    /// The worker has no connection: every unit in flight fails.
    fn all_lost<O: Operation>(
        &mut self,
        op: &mut O,
        lane: &mut Lane,
        deadline: Option<Instant>,
        ending: bool,
    ) {
        while !lane.pipe.flights.is_empty() {
            self.answered(op, lane, Err(WireError::Closed(None)), deadline, ending);
        }
    }

    /// The oldest unit in flight got `answer`: it ends, or waits to be
    /// tried again; in a batch of several (`--pipeline-sync`), once the
    /// batch ends.
    fn answered<O: Operation>(
        &mut self,
        op: &mut O,
        lane: &mut Lane,
        answer: std::result::Result<Answer, WireError>,
        deadline: Option<Instant>,
        ending: bool,
    ) {
        let now = Instant::now();
        let Some(f) = lane.pipe.flights.pop_front() else {
            return;
        };
        let took = now - f.attempt;
        if lane.pipe.per_sync > 1 {
            self.answered_in_batch(op, lane, f, answer, took, now, deadline, ending);
            return;
        }
        let res = op.answered(f.ticket, answer, took);
        // A pipelined unit is one statement, timed when it succeeded: a
        // success is counted whatever follows, so its time goes in now,
        // while the next answers' times are not yet recorded beside it. A
        // failure has no time to keep (see `Operation::answered`).
        self.keep_statements(op, res.is_ok());
        self.ended(op, lane, f, now, res, deadline, ending);
    }

    /// `answered` in a batch of several units, one transaction: a success
    /// waits for the batch's end; the batch's last success counts them
    /// all; a failure fails them all (see the module's doc).
    ///
    /// The server's answer decides, and the operation hears of each unit
    /// only at the batch's end: until the Sync commits, a statement that
    /// succeeded may still be rolled back, so its time must not go into
    /// the figures (a unit counted in between would move it there: see
    /// `keep_statements`), nor may a YCSB insert be acknowledged to the
    /// readers; and a unit the server skipped is still answered, failed,
    /// so that every queued unit is answered once per try.
    #[allow(clippy::too_many_arguments)]
    fn answered_in_batch<O: Operation>(
        &mut self,
        op: &mut O,
        lane: &mut Lane,
        f: Flight,
        answer: std::result::Result<Answer, WireError>,
        took: Duration,
        now: Instant,
        deadline: Option<Instant>,
        ending: bool,
    ) {
        let failure = match answer {
            Ok(answer) if !f.last => {
                lane.pipe.answered.push(Waiting {
                    flight: f,
                    answer,
                    took,
                    end: now,
                });
                return;
            }
            Ok(answer) => {
                let mut batch = std::mem::take(&mut lane.pipe.answered);
                for w in batch.drain(..) {
                    let res = op.answered(w.flight.ticket, Ok(w.answer), w.took);
                    self.ended(op, lane, w.flight, w.end, res, deadline, ending);
                }
                lane.pipe.answered = batch;
                let res = op.answered(f.ticket, Ok(answer), took);
                self.keep_statements(op, true);
                self.ended(op, lane, f, now, res, deadline, ending);
                return;
            }
            Err(failure) => failure,
        };
        // The batch's transaction is gone: the statements that succeeded
        // in it count for nothing, and the server skipped the rest of it,
        // which therefore has no answer to read.
        let e = match op.answered(f.ticket, Err(failure), took) {
            Err(e) => e,
            // Not what an operation makes of a failed answer; the server
            // failed the statement all the same.
            Ok(_) => Error::run("the server failed the query"),
        };
        // The others of the batch, each with its failure: those answered
        // were rolled back; the rest, up to the Sync (queued on the same
        // connection), were not run. The failed unit is counted first, so
        // that its error, with its own label, is the one `--on-error stop`
        // reports.
        let mut others = Vec::new();
        for w in lane.pipe.answered.drain(..) {
            let _ = op.answered(w.flight.ticket, Err(WireError::BatchFailed), w.took);
            let why = Error::batch(
                "rolled back with its pipeline batch (--pipeline-sync), whose later query failed",
                &e,
            );
            others.push((w.flight, why));
        }
        let mut more = !f.last;
        while more && lane.pipe.flights.front().is_some_and(|g| g.conn == f.conn) {
            let Some(g) = lane.pipe.flights.pop_front() else {
                break;
            };
            more = !g.last;
            let _ = op.answered(g.ticket, Err(WireError::BatchFailed), Duration::ZERO);
            let why = Error::batch(
                "not run: an earlier query of its pipeline batch (--pipeline-sync) failed",
                &e,
            );
            others.push((g, why));
        }
        // A failed answer has no time (see `Operation::answered`).
        self.keep_statements(op, false);
        self.ended(op, lane, f, now, Err(e), deadline, ending);
        for (g, why) in others {
            self.ended(op, lane, g, now, Err(why), deadline, ending);
        }
    }

    /// A unit's end: tried again if it failed with an error the retry
    /// policy names (for a unit failed with its batch, the batch's
    /// failure: see [`Error::batch`]), else done.
    #[allow(clippy::too_many_arguments)]
    fn ended<O: Operation>(
        &mut self,
        op: &mut O,
        lane: &mut Lane,
        mut f: Flight,
        now: Instant,
        res: Result<crate::workload::Outcome>,
        deadline: Option<Instant>,
        ending: bool,
    ) {
        match res {
            Err(e)
                if !ending
                    && !f.replay.is_empty()
                    && f.conn == self.session.number()
                    && self.may_retry(op, f.tries, &e, deadline, now) =>
            {
                f.not_before = now
                    + backoff(
                        f.tries,
                        Duration::from_millis(1),
                        Duration::from_millis(200),
                        &mut self.rng,
                    );
                f.error = Some(e);
                lane.pipe.retries.push(f);
            }
            res => {
                lane.done.push_back(f.finished(now, res));
                lane.recycle(f);
            }
        }
    }
}

/// Sleeps until `t`; for ever without one.
async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => crate::rt::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
