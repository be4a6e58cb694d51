//! The one worker loop: take a connection, prepare, wait for the others
//! at the barrier, warm up if asked, then stage and execute units until
//! the share is done, the time is up, the worker has ended its
//! `--transactions` or the run is told to stop. Only
//! `execute` is timed; under `--rate` the wait for a unit's slot counts in
//! its latency but not in its service time, and so does, for a workload
//! of more users than connections (TPC-C's terminals), a ready user's
//! wait for a free connection. The wait for the next user to be ready (a
//! terminal's keying and think times) counts in neither: it is not work
//! for the server.
//!
//! The loop starts units into a [`Lane`] and counts what comes out of it:
//! one unit at a time through the operation's `execute`, or with
//! `--pipeline N` up to N queued on the connection at once (see
//! `pipeline.rs`). Either way a unit's end goes through the same code:
//! its retries, its failure and what follows it (stop, reconnect), its
//! statistics, intervals and latency log line. Once no unit may start
//! (the stop, the deadline, a failure that ends the worker), those in
//! flight are still read and counted.
//!
//! A worker records into the [`ThreadRecorder`] it shares with the other
//! workers of its OS thread (statistics per transaction type, interval
//! pieces, scatter sample, per-statement figures; see `recorder.rs`), and
//! owns only what is its own: its rows, its error, the end of its last
//! unit ([`WorkerOutput`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Barrier;

use super::ending::{Ending, ThreadStop, ending_for};
use super::latency_log::{LogRecord, LogWriter};
use super::pipeline::{FirstTry, Lane};
use super::recorder::{DoneUnit, StatsRef, ThreadRecorder, UnitDone};
use super::schedule::{self, Schedule};
use super::session::Session;
use super::settings::RetryPolicy;
use super::{InFlight, OnError, RunCtx, RunSettings, backoff};
use crate::error::{Error, Result};
use crate::stats::Timing;
use crate::workload::{Operation, Spec, worker_seed};

/// What one worker hands back; its measurements are in its thread's
/// recorder.
///
/// In declaration order (`repr(C)`): what every unit writes first (see
/// [`Worker`]).
#[derive(Default)]
#[repr(C)]
pub(super) struct WorkerOutput {
    /// Rows written or read by its units (the summary's rows per thread).
    pub(super) rows: u64,
    /// When the last measured unit ended: after a stop, the wallclock runs
    /// to the stop or to the last unit counted, whichever is later.
    pub(super) last_end: Option<Instant>,
    /// `--time` ended the worker's share early.
    pub(super) timed_out: bool,
    pub(super) error: Option<Error>,
}

/// How a worker runs, the same for all workers of an operation.
#[derive(Clone)]
pub(super) struct Pace {
    pub(super) spec: &'static Spec,
    /// The workload's transaction types, as its units report them.
    pub(super) types: Arc<[&'static str]>,
    /// Measurement ends this long after it starts.
    pub(super) run_time: Option<Duration>,
    /// `--transactions`: measurement ends when the worker has ended this
    /// many units (done, failed, or skipped as late), as pgbench's `-t`.
    pub(super) units: Option<u64>,
    pub(super) warmup: Option<Duration>,
    pub(super) rate: Option<f64>,
    pub(super) latency_limit: Option<Duration>,
    /// What to do after a failed unit.
    pub(super) on_error: OnError,
    /// `--on-error continue` was given: a script error, which stops the
    /// run all the same, says that it overrides it.
    pub(super) continue_given: bool,
    /// Which failed units are tried again, and how often.
    pub(super) retry: RetryPolicy,
    pub(super) interval: Duration,
    /// Units in flight per connection (`--pipeline`): 1 sends each alone.
    pub(super) pipeline: usize,
    /// Of those, how many share a Sync (`--pipeline-sync`).
    pub(super) pipeline_sync: usize,
    /// Units are due when their user is ready (TPC-C's terminals queued
    /// for the connections), so latency and service time differ. Only
    /// then does the loop ask the operation's `ready`.
    pub(super) queued: bool,
}

/// A path most units never take (a retry, a failure, a reconnect), or
/// one that waits anyway or is not the one-at-a-time path (a slot under
/// `--rate`, a TPC-C terminal's ready wait, the latency log's line, a
/// long unit's tries, a round of `finish_pipelined`), behind
/// a boxed `dyn` future: one allocation where it runs.
///
/// With fat LTO the whole worker loop compiled into one poll function of
/// 50 KB, more than the 32 KB first-level instruction cache. Polled
/// through a vtable, such a path's code stays out of it (12 KB left), and
/// less lies between the lines every unit runs. A plain `Box::pin` keeps
/// the concrete type, and its code is inlined all the same. Issue 24's
/// fourth session in bench/RESULTS.md has the figures. A box also keeps a
/// rare await's state (a connect is kilobytes) out of each of a thousand
/// workers' futures.
pub(super) fn cold<'a, T>(
    f: impl std::future::Future<Output = T> + Send + 'a,
) -> crate::workload::BoxFuture<'a, T> {
    Box::pin(f)
}

/// SQLSTATE of a statement cancelled on request.
const QUERY_CANCELED: &str = "57014";

/// What ties a worker to the coordinator of its operation.
pub(super) struct WorkerLinks {
    /// All workers and the coordinator start measuring together.
    pub(super) barrier: Arc<Barrier>,
    /// Rows loaded so far by all workers (the progress bar).
    pub(super) rows_done: Arc<AtomicU64>,
    pub(super) inflight: InFlight,
}

/// What a worker shares with the other workers of its OS thread.
#[derive(Clone)]
pub(super) struct ThreadShare {
    pub(super) rec: ThreadRecorder,
    pub(super) stop: ThreadStop,
}

/// What one worker needs on its thread; all of it may move there.
pub(super) struct WorkerItem<O> {
    pub(super) t: usize,
    pub(super) op: O,
    pub(super) ctx: RunCtx,
    /// Shared by all the workers: what each unit reads of it stays on
    /// lines every worker reads, rather than on a copy in each worker's
    /// state, cold again by the time that worker's next unit comes when a
    /// thread has hundreds of them (see [`Worker`]).
    pub(super) pace: Arc<Pace>,
    pub(super) links: WorkerLinks,
}

/// The one worker loop, itself its thread's task (no future around it:
/// each is one more state a unit reads, see [`Worker`]): the worker's
/// number and output.
pub(super) async fn worker_loop<O: Operation>(
    item: WorkerItem<O>,
    share: ThreadShare,
) -> (usize, WorkerOutput) {
    let WorkerItem {
        t: thread,
        mut op,
        ctx,
        pace,
        links,
    } = item;
    let (ctx, pace) = (&ctx, &*pace);
    let WorkerLinks {
        barrier,
        rows_done,
        inflight,
    } = links;
    let slot = inflight.clone();
    let out = 'run: {
        let ThreadShare { rec, stop } = share;
        let rows_done = &*rows_done;
        let s = &ctx.settings;
        let seed = worker_seed(s.seed, thread, 2);
        // The connection (or with --reconnect, the way to make one per unit),
        // and the per-connection set-up: see session.rs.
        let mut session = Session::new(
            ctx.conns.clone(),
            thread,
            s.reconnect,
            session_settings(s),
            s.seed,
            inflight,
        );
        // Boxed, as every path below that runs seldom: see `cold`.
        let ready = cold(session.start(&mut op, rec.stats(true))).await;
        // A worker that could not connect stops the others before they start
        // (too many clients, a node down): no unit runs in a run that has
        // already failed.
        if ready.is_err() {
            stop.set();
        }
        // Everyone reaches the barrier, also after a failure, so that no
        // worker waits for one that will never come.
        barrier.wait().await;
        if let Err(e) = ready {
            break 'run WorkerOutput {
                error: Some(e),
                ..WorkerOutput::default()
            };
        }
        let began = Instant::now();
        let mut schedule = pace
            .rate
            .map(|r| Schedule::new(began, r, s.threads, thread, s.rate_distribution, seed));
        let start = began + pace.warmup.unwrap_or_default();
        let mut w = Worker {
            out: WorkerOutput::default(),
            lane: Lane::new(1, 1, None),
            phase: Phase {
                pace,
                thread,
                session,
                rows_done,
                schedule: schedule.as_mut(),
                rng: rand::SeedableRng::seed_from_u64(seed ^ 0x5EED),
                rec,
                stop,
                measured: false,
                start,
                log: None,
            },
        };
        if let Some(warmup) = pace.warmup {
            w.units(&mut op, Some(began + warmup)).await;
            // What the warmup did is thrown away, but for its failure.
            let warm = std::mem::take(&mut w.out);
            if warm.error.is_some() {
                break 'run WorkerOutput {
                    error: warm.error,
                    ..WorkerOutput::default()
                };
            }
        }
        let phase = &mut w.phase;
        phase.measured = true;
        phase.rec.begin(start);
        phase.rec.name_statements(op.statement_times());
        phase.log = ctx.latency_log.as_ref().map(|l| l.writer());
        let deadline = pace.run_time.map(|d| start + d);
        w.units(&mut op, deadline).await;
        if let Some(log) = w.phase.log.as_mut() {
            log.flush().await;
        }
        cold(w.phase.session.close()).await;
        w.out
    };
    // Its output reaches the coordinator with its thread's others: until
    // then, this says it is no longer in a unit.
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .ended = true;
    (thread, out)
}

/// The SQL every new connection runs before the operation prepares its
/// statements (at the start, after a reconnect, and per unit with -C).
fn session_settings(plan: &RunSettings) -> Vec<String> {
    let mut settings = Vec::new();
    if plan.nontransactional {
        settings.push(crate::db::dialect::nontransactional_setting().to_string());
    }
    if let Some(t) = plan.statement_timeout {
        settings.push(format!("set statement_timeout = {}", t.as_millis().max(1)));
    }
    if let Some(i) = plan.isolation {
        settings.push(format!("set default_transaction_isolation = '{}'", i.sql()));
    }
    settings
}

/// What a worker waited for when it was idle by design.
#[derive(Clone, Copy)]
enum Waited {
    /// Its next unit's due time (`--rate`).
    Schedule,
    /// The workload's next user to be ready (TPC-C's keying and think
    /// times).
    Pause,
}

/// Where the next unit stands under `--rate`.
enum Slot {
    /// Send it when due (None: at once, no rate).
    Due(Option<Instant>),
    /// Look anew: no unit this round.
    Again,
    /// Units are in flight and the next slot lies past the deadline:
    /// start none, read their answers.
    Wait,
    /// The slot was already too late (`--latency-limit`): skipped, and
    /// counted as a unit ended, as pgbench counts it under `-t`.
    Skipped,
}

/// The next unit, staged, before it starts.
pub(super) struct Held {
    /// Its transaction type.
    pub(super) ty: usize,
    /// When `--rate` wants it sent, or its user was ready.
    pub(super) due: Option<Instant>,
}

impl Held {
    /// The unit sent alone at `sent` whose last try began at `attempt`,
    /// as it ended at `end`.
    pub(super) fn sent(
        &self,
        sent: Instant,
        attempt: Instant,
        end: Instant,
        tries: u32,
        conn: u64,
    ) -> Sent {
        Sent {
            ty: self.ty,
            due: self.due,
            sent,
            attempt,
            end,
            tries,
            ticket: None,
            conn,
        }
    }
}

/// What the wait for the next unit's due time came to.
enum Staged {
    /// Due then (None: at once).
    Due(Option<Instant>),
    /// Look anew (see [`Slot::Again`]).
    Again,
    /// Start none now (see [`Slot::Wait`]).
    Wait,
    /// The slot was skipped (see [`Slot::Skipped`]).
    Skipped,
    /// No unit starts any more.
    End,
}

/// One unit as it was sent.
pub(super) struct Sent {
    /// Its transaction type.
    pub(super) ty: usize,
    /// When `--rate` wanted it sent.
    pub(super) due: Option<Instant>,
    pub(super) sent: Instant,
    /// When its last try began.
    pub(super) attempt: Instant,
    pub(super) end: Instant,
    pub(super) tries: u32,
    /// A pipelined unit's ticket: the operation has staged others since,
    /// so its label comes from this.
    pub(super) ticket: Option<crate::workload::Ticket>,
    /// The connection it ran on ([`Session::number`]).
    pub(super) conn: u64,
}

/// A unit at its end, to be counted.
pub(super) struct Finished {
    pub(super) unit: Sent,
    pub(super) res: Result<crate::workload::Outcome>,
    /// Why a long unit was cancelled on the server, if it was.
    pub(super) cancelled: Option<Ending>,
}

impl Sent {
    /// Which rows it held, for error messages.
    fn label<O: Operation>(&self, op: &O) -> Option<String> {
        match self.ticket {
            Some(t) => op.queued_label(t),
            None => op.unit_label(),
        }
    }

    /// Its latency from when it should have started (no coordinated
    /// omission) and its service time from when it was sent.
    fn timing(&self) -> Timing {
        Timing {
            latency: self.end - self.due.unwrap_or(self.sent).min(self.sent),
            service: self.end - self.sent,
        }
    }
}

/// A worker's loop state: what it hands back, the units it has started,
/// and the phase it runs them in.
///
/// One block, in this order (`repr(C)`), each part with what a unit
/// touches first: with hundreds of connections a thread, a connection's
/// state has left the caches by its next unit, and each cache line a unit
/// touches is a miss (cachegrind's counts are in bench/RESULTS.md, issue
/// 24's fifteenth session). `units` and `start_units` take the whole and
/// lend its parts to the rest; `units` sends a short unit alone and
/// awaits its answer itself, as each `async fn` between the loop and the
/// socket is one more state that every unit reads and writes.
#[repr(C)]
pub(super) struct Worker<'a> {
    pub(super) out: WorkerOutput,
    pub(super) lane: Lane,
    pub(super) phase: Phase<'a>,
}

/// The loop of one phase (warmup, or measurement) of one worker.
///
/// In declaration order (`repr(C)`): the fields every unit reads, then the
/// session, whose connection's busy part comes first (see [`Session`] and
/// `WireConn`), then the rest; so that a unit touches a few adjacent cache
/// lines of the phase rather than lines spread over its 600 bytes (with
/// hundreds of connections a thread, each a miss; see [`Worker`]).
#[repr(C)]
pub(super) struct Phase<'a> {
    /// Measuring (false: warming up; what is recorded is thrown away).
    pub(super) measured: bool,
    pub(super) pace: &'a Pace,
    /// Where the worker's thread records.
    pub(super) rec: ThreadRecorder,
    /// The run's stop, as this thread's workers wait for it.
    pub(super) stop: ThreadStop,
    /// `--latency-log`, while measuring.
    pub(super) log: Option<LogWriter>,
    pub(super) schedule: Option<&'a mut Schedule>,
    pub(super) thread: usize,
    /// The worker's connection: none while lost and not yet replaced.
    pub(super) session: Session,
    pub(super) rows_done: &'a AtomicU64,
    /// For the jitter of retries and reconnections.
    pub(super) rng: rand::rngs::SmallRng,
    /// When measurement starts (after the warmup).
    pub(super) start: Instant,
}

impl Worker<'_> {
    /// Runs units until the deadline, the end of the share or a stop:
    /// starts them (see `start_units`), sends them and reads their ends
    /// (one at a time or pipelined), and counts each.
    /// Once no unit may start any more, those already started are still
    /// waited for and counted.
    async fn units<O: Operation>(&mut self, op: &mut O, deadline: Option<Instant>) {
        // The units this phase may still start (--transactions counts the
        // measured ones; a warmup runs by its time).
        let pace = self.phase.pace;
        let left = pace.units.filter(|_| self.phase.measured);
        self.lane = Lane::new(pace.pipeline, pace.pipeline_sync, left);
        let mut ending = false;
        loop {
            if !ending {
                ending = !self.start_units(op, deadline).await;
            }
            if ending {
                self.lane.close();
            }
            if self.lane.idle() {
                if ending {
                    return;
                }
                continue;
            }
            // Sends what was started and waits for what comes next: the
            // unit sent alone runs to its end (with its retries), and is
            // counted (see `first_try`) or returned; pipelined, the queued
            // units are written and at least one answer is read into
            // `lane.done`, unless the held unit's due time or a retry's
            // comes first.
            let mut alone = match self.lane.alone.take() {
                Some(h) => {
                    let at = (Instant::now(), self.phase.session.number());
                    if op.long_unit() {
                        // All its tries there: it may be cancelled.
                        Some(cold(self.phase.tries(op, h, at, deadline, 0)).await)
                    } else {
                        // Awaited here, not through `Session::execute` nor
                        // an `async fn` of the runner's: see `first_try`.
                        let res = match self.phase.session.conn() {
                            Ok(conn) => op.execute(conn).await,
                            Err(e) => Err(e),
                        };
                        match self.first_try(op, h, at, res, deadline) {
                            FirstTry::Counted => None,
                            FirstTry::Ended(f) => Some(f),
                            FirstTry::Again(h) => {
                                Some(cold(self.phase.tries(op, h, at, deadline, 1)).await)
                            }
                        }
                    }
                }
                None if self.lane.done.is_empty() => {
                    let Worker { lane, phase, .. } = self;
                    cold(phase.finish_pipelined(op, lane, deadline, ending)).await;
                    None
                }
                None => None,
            };
            let Worker { out, lane, phase } = self;
            // In the order they ended: a unit already waiting first.
            if let Some(f) = alone.take_if(|_| !lane.done.is_empty()) {
                lane.done.push_back(f);
            }
            while let Some(f) = alone.take().or_else(|| lane.done.pop_front()) {
                // A success without a latency log is counted here, with no
                // await; anything else in `count_unit`, [`cold`].
                let go = match (&f.res, &phase.log) {
                    (Ok(outcome), None) => {
                        let outcome = *outcome;
                        phase.count_success(op, &f.unit, outcome, out, true);
                        f.cancelled.is_none()
                    }
                    _ => cold(phase.count_unit(op, f, deadline, out, ending)).await,
                };
                if !go {
                    ending = true;
                }
            }
        }
    }

    /// Starts units while the lane has room: stages each at its slot,
    /// waits its due time (or, with units in flight, leaves
    /// it held until then), and starts it. False when no unit may start
    /// any more: the stop, the end of `--time`, or the end of the share
    /// once nothing started is left to end (a pipelined unit in flight or
    /// waiting for its retry is still tried again as the policy says).
    async fn start_units<O: Operation>(&mut self, op: &mut O, deadline: Option<Instant>) -> bool {
        let Worker { out, lane, phase } = self;
        lane.wake = None;
        if phase.must_drain(lane) {
            return true;
        }
        // A failed unit's next try takes the place it had.
        while phase.start_retry(lane) {}
        if !lane.may_refill(phase.schedule.is_none()) {
            return true;
        }
        while lane.has_room() {
            if phase.stop.is_set() {
                return false;
            }
            // The share is started: what is in flight, or waits for a
            // retry, still ends (and is tried again) as the policy says.
            if lane.left == Some(0) {
                return !lane.idle();
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                out.timed_out = phase.pace.spec.is_load();
                return false;
            }
            let held = match lane.held.take() {
                Some(h) => h,
                None => {
                    // No rate and no users: nothing to wait for before the
                    // unit, and no `next_due` future (its arguments written
                    // into this one's state are lines of their own, cold
                    // with hundreds of connections a thread).
                    let due = if phase.schedule.is_none() && !phase.pace.queued {
                        None
                    } else {
                        match phase.next_due(op, lane.idle(), now, deadline).await {
                            Staged::Due(due) => due,
                            Staged::Again => continue,
                            Staged::Skipped => {
                                lane.count_down();
                                continue;
                            }
                            Staged::Wait => return true,
                            Staged::End => return false,
                        }
                    };
                    if !op.stage() {
                        return false;
                    }
                    let ty = op.unit_type();
                    // Its connection made first: with --reconnect, or to
                    // move to another node.
                    if (phase.session.reconnects_per_unit()
                        || lane.idle() && phase.session.should_move())
                        && !cold(phase.reopen_for_unit(op, ty, out, deadline)).await
                    {
                        return false;
                    }
                    Held { ty, due }
                }
            };
            if let Some(due) = held.due.filter(|&d| d > now) {
                if !lane.idle() {
                    lane.held = Some(held);
                    lane.wake = Some(due);
                    return true;
                }
                if !cold(phase.wait_due(due)).await {
                    return false;
                }
            }
            phase.start(op, lane, held);
        }
        true
    }
}

impl Phase<'_> {
    /// The statistics this phase records into.
    pub(super) fn stats(&self) -> StatsRef<'_> {
        self.rec.stats(self.measured)
    }

    /// An idle worker waits for its next unit's due time under `--rate`,
    /// counted as waited by design. False when the stop came first.
    async fn wait_due(&self, due: Instant) -> bool {
        let from = Instant::now();
        let reached = schedule::wait_until_or(due, self.stop.stopped()).await;
        self.waited(from, Waited::Schedule);
        reached && !self.stop.is_set()
    }

    /// When the next unit is due: its slot under `--rate`, and its user's
    /// keying time waited (TPC-C's terminals); staged by the caller.
    ///
    /// Every wait here is taken only when there is one, and [`cold`].
    async fn next_due<O: Operation>(
        &mut self,
        op: &mut O,
        idle: bool,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Staged {
        let due = if self.schedule.is_none() {
            None
        } else {
            match cold(self.slot(now, deadline, idle)).await {
                Slot::Due(due) => due,
                Slot::Again => return Staged::Again,
                Slot::Skipped => return Staged::Skipped,
                Slot::Wait => return Staged::Wait,
            }
        };
        // A workload of more users than connections (TPC-C's terminals):
        // the next user's unit is due when that user is ready; under
        // --rate, not before its slot either. Only such a workload is
        // asked (`Pace::queued`), with a rate as without one.
        let ready = if self.pace.queued { op.ready() } else { None };
        match ready {
            None => Staged::Due(due),
            Some(ready) => match cold(self.user_ready(ready, deadline)).await {
                Some(ready) => Staged::Due(due.max(Some(ready))),
                None => Staged::End,
            },
        }
    }

    /// Counts a unit at its end; false when the worker is to start no
    /// more units (see `settle` and `unit_failed`). Run through [`cold`]:
    /// `units` counts a success itself when there is no latency log.
    async fn count_unit<O: Operation>(
        &mut self,
        op: &mut O,
        f: Finished,
        deadline: Option<Instant>,
        out: &mut WorkerOutput,
        ending: bool,
    ) -> bool {
        let Finished {
            unit,
            res,
            cancelled,
        } = f;
        self.rec.unit_ended();
        // A success is what it is; only a failure needs a look.
        let res = match res {
            Ok(outcome) => Ok(outcome),
            Err(e) => {
                match self
                    .settle(op, Err(e), cancelled, &unit, deadline, out)
                    .await
                {
                    Some(res) => res,
                    None => {
                        // Not a unit of the report's: neither are its
                        // statements nor its retries.
                        self.keep_statements(op, false);
                        if unit.tries > 1 {
                            let retries = u64::from(unit.tries - 1);
                            self.stats().common(|c| c.left_out_retries += retries);
                        }
                        return false;
                    }
                }
            }
        };
        match res {
            Ok(outcome) => {
                self.count_success(op, &unit, outcome, out, false);
                if let Some(r) = self.log_record(&unit, outcome.rows, true) {
                    self.log_push(r).await;
                }
                cancelled.is_none()
            }
            Err(e) => {
                self.count_ended(op, &unit, false, out);
                self.unit_failed(op, e, &unit, out, deadline, ending).await
            }
        }
    }

    /// Counts a unit that succeeded, its retries and its statements with
    /// it (its latency log line apart).
    pub(super) fn count_success<O: Operation>(
        &mut self,
        op: &mut O,
        unit: &Sent,
        outcome: crate::workload::Outcome,
        out: &mut WorkerOutput,
        ended: bool,
    ) {
        self.count_end(unit, true, out);
        self.unit_done(op, unit, outcome, out, ended);
    }

    /// What every counted unit, done (`ok`) or failed, adds: its end, its
    /// statements' times and its retries.
    fn count_ended<O: Operation>(&self, op: &mut O, unit: &Sent, ok: bool, out: &mut WorkerOutput) {
        self.keep_statements(op, true);
        self.count_end(unit, ok, out);
    }

    /// What [`Self::count_ended`] adds but the statements' times (a
    /// success moves those in `unit_done`, with the rest of its figures).
    fn count_end(&self, unit: &Sent, ok: bool, out: &mut WorkerOutput) {
        if self.measured {
            out.last_end = Some(unit.end);
        }
        self.count_retries(unit, ok);
    }

    /// The times of the statements the operation ran since the last unit
    /// was counted: into the thread's figures when the unit they belong
    /// to is `counted` (done or failed) while measuring, else dropped.
    /// They are moved when the unit is counted, not when it ends: the end
    /// of the run leaves some units out (see `settle`), and a statement's
    /// times must come from the units the report counts. Nothing awaits
    /// between this and the unit's own figures, so a worker abandoned at
    /// the end cannot keep one without the other.
    pub(super) fn keep_statements<O: Operation>(&self, op: &mut O, counted: bool) {
        self.rec
            .statements_done(self.measured && counted, op.statement_times());
    }

    /// The next unit's slot under `--rate`: when it is due (None without
    /// a rate), [`Slot::Again`] when the loop must look anew as the next
    /// slot lies past the deadline (waited for, when no unit is in flight:
    /// `idle`; else [`Slot::Wait`]), or [`Slot::Skipped`] when the slot
    /// was already too late (`--latency-limit`).
    async fn slot(&mut self, now: Instant, deadline: Option<Instant>, idle: bool) -> Slot {
        let skip_late = !self.pace.spec.is_load();
        let measured = self.measured;
        let Some(s) = self.schedule.as_deref_mut() else {
            return Slot::Due(None);
        };
        if let Some(d) = deadline
            && s.peek() >= d
        {
            if !idle {
                return Slot::Wait;
            }
            // The next slot is past the end: wait for the end so the
            // wallclock is the asked time, then stop. The slot stays in
            // the schedule: after a warmup, measurement starts with it.
            let from = Instant::now();
            schedule::wait_until_or(d, self.stop.stopped()).await;
            self.waited(from, Waited::Schedule);
            return Slot::Again;
        }
        let due = s.next_due();
        if skip_late
            && let Some(limit) = self.pace.latency_limit
            && now > due + limit
        {
            self.rec.stats(measured).common(|c| c.skipped += 1);
            if measured {
                self.rec.interval(|iv| iv.record_skipped(now));
            }
            return Slot::Skipped;
        }
        Slot::Due(Some(due))
    }

    /// With --reconnect: a new connection for this unit, its connect
    /// timed apart, before the unit's slot and timing. Without it, a move
    /// to another node when the nodes to be on changed (`--yb-refresh`),
    /// when no unit is in flight (the caller decides which). A connect
    /// that fails is the unit's failure. False when the worker is to stop.
    async fn reopen_for_unit<O: Operation>(
        &mut self,
        op: &mut O,
        ty: usize,
        out: &mut WorkerOutput,
        deadline: Option<Instant>,
    ) -> bool {
        let reopened = self.session.reopen(op, self.rec.stats(self.measured)).await;
        let Err(e) = reopened else {
            return true;
        };
        let class = error_class(&e);
        let label = op.unit_label();
        self.stats().with(|s| s.of(ty).record_error(&class, label));
        // Counted in its interval too, so that the intervals' failures
        // (and the live metrics') add up to the summary's.
        if self.measured {
            let now = Instant::now();
            self.rec.interval(|iv| iv.record_error(now, ty, &class));
        }
        if self.pace.on_error == OnError::Stop {
            self.stop.set();
            out.error = Some(e);
            return false;
        }
        cold(self.recover(op, out, deadline, e)).await
    }

    /// What a sent unit's result counts as: None when the worker is to
    /// stop without counting it as a unit (a cancelled long unit that
    /// committed nothing, a unit the coordinator cancelled after the
    /// stop, a retry cut short by the run's end).
    async fn settle<O: Operation>(
        &mut self,
        op: &mut O,
        res: Result<crate::workload::Outcome>,
        cancelled: Option<Ending>,
        unit: &Sent,
        deadline: Option<Instant>,
        out: &mut WorkerOutput,
    ) -> Option<Result<crate::workload::Outcome>> {
        match (res, cancelled) {
            // A long unit the runner cancelled is neither a success nor a
            // failure: what it committed counts, and the worker stops.
            (Err(_), Some(why)) => {
                out.timed_out |= why == Ending::Deadline;
                let rows = cold(self.committed_rows(op)).await;
                if rows == 0 {
                    return None;
                }
                Some(Ok(crate::workload::Outcome { rows, missing: 0 }))
            }
            // The coordinator cancelled a unit still running well after
            // the stop (see `run_workers`): not a failure of the
            // server's, and not a unit done. (Long units cancel
            // themselves, above; their other failures count what they
            // committed, in `unit_failed`.)
            (Err(e), None)
                if !op.long_unit()
                    && e.sqlstate() == Some(QUERY_CANCELED)
                    && self.session.cancel_was_sent() =>
            {
                None
            }
            // A unit the retry policy would have tried again, but the
            // stop or the end of --time came first: cut short by the
            // run's end, not failed, and left out with its retries.
            (Err(e), None)
                if op.retryable()
                    && self.pace.retry.again(unit.tries, e.sqlstate())
                    && (self.stop.is_set() || deadline.is_some_and(|d| unit.end >= d)) =>
            {
                None
            }
            (res, _) => Some(res),
        }
    }

    /// A unit tried more than once: its retries, and for a success the
    /// successful attempt alone beside the unit's time with its retries.
    /// Counted here, with the unit, not as each retry is made: the end of
    /// the run leaves some units out (see `settle`), and the retries the
    /// summary shows, as its intervals', must be those of the units it
    /// counts.
    fn count_retries(&self, unit: &Sent, ok: bool) {
        if unit.tries <= 1 {
            return;
        }
        let retries = u64::from(unit.tries - 1);
        let (end, ty) = (unit.end, unit.ty);
        self.stats().with(|s| {
            let s = s.of(ty);
            s.retried += 1;
            s.retries += retries;
            if ok {
                s.record_retried(end - unit.sent, end.saturating_duration_since(unit.attempt));
            }
        });
        if self.measured {
            self.rec.interval(|iv| iv.record_retries(end, ty, retries));
        }
    }

    /// Counts a unit that succeeded (its latency log line apart).
    /// `ended`: it is back only now (else [`ThreadRecorder::unit_ended`]
    /// was told before). Its statements' times go with it (see
    /// `keep_statements`).
    fn unit_done<O: Operation>(
        &mut self,
        op: &mut O,
        unit: &Sent,
        outcome: crate::workload::Outcome,
        out: &mut WorkerOutput,
        ended: bool,
    ) {
        let (ty, end, timing) = (unit.ty, unit.end, unit.timing());
        // Only a load's progress bar reads the shared count: for queries it
        // would be one cache line written by every thread per unit.
        if self.pace.spec.is_load() {
            self.rows_done.fetch_add(outcome.rows, Ordering::Relaxed);
        }
        out.rows += outcome.rows;
        self.rec.unit_done(UnitDone {
            unit: DoneUnit {
                measured: self.measured,
                worker: self.thread as u32,
                ty,
                end,
                timing,
                outcome,
                late: self.pace.latency_limit.is_some_and(|l| timing.latency > l),
            },
            ended,
            statements: op.statement_times(),
            host: self.session.current_host(),
        });
        if self.measured
            && let Some(host) = self.session.host_counted()
        {
            self.rec.interval(|iv| iv.record_host(end, host));
        }
    }

    /// The latency log's line for `unit`, when there is a log.
    fn log_record(&self, unit: &Sent, rows: u64, ok: bool) -> Option<LogRecord> {
        self.log.as_ref()?;
        Some(log_record(
            self.pace,
            self.thread,
            self.start,
            unit.end,
            unit.ty,
            unit.timing(),
            rows,
            ok,
        ))
    }

    /// Writes a line to the latency log ([`cold`] where a success calls it).
    async fn log_push(&mut self, r: LogRecord) {
        if let Some(log) = self.log.as_mut() {
            log.push(r).await;
        }
    }

    /// Counts a unit that failed and decides what follows: false when
    /// the worker is to stop (`--on-error stop`, an error that ends the
    /// run, a connection that could not be replaced, or lost while
    /// `ending`: no unit starts any more, so none needs it).
    async fn unit_failed<O: Operation>(
        &mut self,
        op: &mut O,
        e: Error,
        unit: &Sent,
        out: &mut WorkerOutput,
        deadline: Option<Instant>,
        ending: bool,
    ) -> bool {
        let (ty, end) = (unit.ty, unit.end);
        let measured = self.measured;
        let label = unit.label(op);
        let class = error_class(&e);
        let label_kept = label.clone();
        self.stats()
            .with(|s| s.of(ty).record_error(&class, label_kept));
        if measured {
            self.rec.interval(|iv| iv.record_error(end, ty, &class));
        }
        if let Some(r) = self.log_record(unit, 0, false) {
            self.log_push(r).await;
        }
        // 26000 (a pooler lost the prepared statement) fails every later
        // unit too, and a script's own error is a bug of the script that
        // every client repeats: stop the operation at once.
        let ends_run = e.ends_run();
        let script_error = matches!(e, Error::Script(_));
        // Units in flight on a connection that is lost all fail: the first
        // of them replaces it, the others only count.
        let lost = e.lost_connection() && unit.conn == self.session.number();
        // A failed long unit may have committed part of its rows (the
        // procedure): they are in the table, so they count, and the
        // message says so.
        let mut partly = String::new();
        if op.long_unit() {
            let rows = cold(self.committed_rows(op)).await;
            if rows > 0 {
                self.stats().with(|s| s.of(ty).rows += rows);
                out.rows += rows;
                self.rows_done.fetch_add(rows, Ordering::Relaxed);
                // The per-interval rows add up to the summary's.
                if measured {
                    self.rec.interval(|iv| iv.record_rows(end, ty, rows));
                }
                partly = format!(" ({rows} of its rows were committed)");
            }
        }
        let e = match label {
            Some(l) => Error::run(format!("{} {l} failed{partly}: {e}", self.pace.spec.unit)),
            None => e,
        };
        let e = if script_error && self.pace.continue_given {
            Error::run(format!(
                "{e}; --on-error continue does not go on after a script error, which every unit would repeat"
            ))
        } else {
            e
        };
        if self.pace.on_error == OnError::Stop || ends_run {
            self.stop.set();
            // The first failure is the worker's error; units still in
            // flight may fail after it.
            out.error.get_or_insert(e);
            return false;
        }
        if lost || self.session.is_closed() {
            if ending {
                return false;
            }
            return cold(self.recover(op, out, deadline, e)).await;
        }
        true
    }

    /// Waits for the operation's next user to be ready (`ready`, from
    /// [`Operation::ready`]), cut short by the stop or the deadline: None
    /// then, else when that user's unit was due. The wait is idle by
    /// design, as a pause.
    async fn user_ready(
        &self,
        ready: crate::workload::BoxFuture<'_, Instant>,
        deadline: Option<Instant>,
    ) -> Option<Instant> {
        let from = Instant::now();
        let until_deadline = async {
            match deadline {
                Some(d) => crate::rt::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let due = tokio::select! {
            biased;
            _ = self.stop.stopped() => None,
            _ = until_deadline => None,
            due = ready => Some(due),
        };
        // The pause is the wait for the user's due time: none for a user
        // already due when asked for, and the wake-up's lateness after it
        // is no pause either.
        let paused = match due {
            Some(at) => at.saturating_duration_since(from).min(from.elapsed()),
            None => from.elapsed(),
        };
        self.count_wait(paused, Waited::Pause);
        due
    }

    /// Counts the time since `from` as waited by design: for a unit's due
    /// time or in a pause. The server sees the worker's backend idle then,
    /// and its report reads that against these sums.
    fn waited(&self, from: Instant, what: Waited) {
        self.count_wait(from.elapsed(), what);
    }

    /// Counts `d` as waited by design (see [`Self::waited`]).
    fn count_wait(&self, d: Duration, what: Waited) {
        self.stats().common(|c| match what {
            Waited::Schedule => c.schedule_wait += d,
            Waited::Pause => c.pause_wait += d,
        });
    }

    /// Sends `h`, staged and sent alone at `sent` on connection `conn`,
    /// trying it again after a failure the retry policy names
    /// (`--retry-on`, `--max-tries`), after the `done` tries already made
    /// (the loop, `Worker::units`, makes a short unit's first try itself);
    /// returns it at its end, with whether (and why) a long unit was
    /// cancelled on the server. Its statements' times (its retries' and
    /// failures' included) stay with the operation until the unit is
    /// counted: the end of the run may leave it out (see `count_unit`).
    /// Run through [`cold`].
    pub(super) async fn tries<O: Operation>(
        &mut self,
        op: &mut O,
        h: Held,
        (sent, conn): (Instant, u64),
        deadline: Option<Instant>,
        done: u32,
    ) -> Finished {
        let ended = |res, tries, cancelled, attempt| Finished {
            unit: h.sent(sent, attempt, Instant::now(), tries, conn),
            res,
            cancelled,
        };
        let mut tries = done;
        loop {
            if tries > 0 {
                // The last try failed with an error the policy retries
                // (counted with the unit, in `count_retries`).
                let pause = backoff(
                    tries,
                    Duration::from_millis(1),
                    Duration::from_millis(200),
                    &mut self.rng,
                );
                crate::rt::time::sleep(pause).await;
            }
            tries += 1;
            // The first try begins as the unit is sent (one clock reading
            // fewer per unit); a retry's after its backoff.
            let began = if tries == 1 { sent } else { Instant::now() };
            let (res, cancelled) = if op.long_unit() {
                cold(self.execute_cancellable(op, deadline)).await
            } else {
                (self.session.execute(op).await, None)
            };
            if cancelled.is_some() {
                return ended(res, tries, cancelled, began);
            }
            match res {
                // The unit's end is read after this, in `ended`.
                Err(e) if self.may_retry(op, tries, &e, deadline, Instant::now()) => continue,
                other => return ended(other, tries, None, began),
            }
        }
    }

    /// Whether a unit that failed with `e` on try number `tries` at `end`
    /// is tried again: the retry policy names its error, and neither the
    /// stop nor the deadline had come by `end`. `end` is the time the
    /// unit, if not tried again, ends at (or earlier): `settle` leaves a
    /// unit out when its end is past the deadline, and a unit judged at
    /// a later clock reading than its end could be refused its retry and
    /// then not be left out, counted failed.
    pub(super) fn may_retry<O: Operation>(
        &self,
        op: &O,
        tries: u32,
        e: &Error,
        deadline: Option<Instant>,
        end: Instant,
    ) -> bool {
        op.retryable()
            && self.pace.retry.again(tries, e.sqlstate())
            && !self.stop.is_set()
            && deadline.is_none_or(|d| end < d)
    }

    /// Runs a long unit until it ends, or until the run is stopped or the
    /// deadline passes; then asks the server to cancel it and waits for
    /// its end (an error, or a success that beat the cancel).
    async fn execute_cancellable<O: Operation>(
        &mut self,
        op: &mut O,
        deadline: Option<Instant>,
    ) -> (Result<crate::workload::Outcome>, Option<Ending>) {
        let Some((conns, host, canceller)) = self.session.canceller() else {
            return (Err(Error::run("no connection")), None);
        };
        let stop = &self.stop;
        let exec = self.session.execute(op);
        tokio::pin!(exec);
        let why = tokio::select! {
            res = &mut exec => return (res, None),
            (why, _) = ending_for(stop, deadline) => why,
        };
        if let Err(e) = conns.cancel(host, &canceller).await {
            crate::say!("warning: {e}");
        }
        (exec.await, Some(why))
    }
}

/// The latency log's line for a unit of worker `thread` that ended at `end`.
#[allow(clippy::too_many_arguments)]
fn log_record(
    pace: &Pace,
    thread: usize,
    start: Instant,
    end: Instant,
    ty: usize,
    timing: Timing,
    rows: u64,
    ok: bool,
) -> LogRecord {
    let due = end - timing.latency;
    LogRecord {
        op: pace.spec.name,
        ty: pace.types.get(ty).copied().unwrap_or(""),
        thread: thread as u32 + 1,
        start_us: due.saturating_duration_since(start).as_micros() as u64,
        latency_us: timing.latency.as_micros() as u64,
        service_us: timing.service.as_micros() as u64,
        rows,
        ok,
    }
}

fn error_class(e: &Error) -> String {
    match e {
        Error::Db { source, .. } => crate::error::error_class(source),
        Error::Wire {
            failure: source, ..
        } => crate::error::wire_error_class(source.as_ref()),
        Error::Batch(_) => "pipeline-batch".to_string(),
        _ => "client".to_string(),
    }
}
