//! The one worker loop: take a connection, prepare, wait for the others
//! at the barrier, warm up if asked, then stage and execute units until
//! the share is done, the time is up or the run is told to stop. Only
//! `execute` is timed; under `--rate` the wait for a unit's slot counts in
//! its latency but not in its service time. Each worker owns its
//! [`TypedStats`], scatter sample and interval recorder.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Barrier, mpsc};
use tokio_postgres::Client;

use super::ending::{Ending, ending};
use super::intervals::{self, IntervalRecorder};
use super::latency_log::{LogRecord, LogSink, LogWriter};
use super::schedule::{self, Schedule};
use super::session::Session;
use super::settings::RetryPolicy;
use super::{InFlight, OnError, RunCtx, RunSettings, backoff};
use crate::error::{Error, Result};
use crate::stats::{Scatter, Stats, Timing, TypedStats, nanos};
use crate::workload::{Operation, Spec, StatementStats, worker_seed};

/// What one worker hands back.
pub(super) struct WorkerOutput {
    pub(super) stats: TypedStats,
    pub(super) scatter: Scatter,
    /// `--time` ended the worker's share early.
    pub(super) timed_out: bool,
    pub(super) error: Option<Error>,
    /// When the last measured unit ended: after a stop, the wallclock runs
    /// to the stop or to the last unit counted, whichever is later.
    pub(super) last_end: Option<Instant>,
    /// Per statement kind, as the operation kept them (transactions).
    pub(super) statements: Vec<StatementStats>,
}

impl WorkerOutput {
    pub(super) fn new(types: usize, scatter_seed: u64) -> Self {
        WorkerOutput {
            stats: TypedStats::new(types),
            scatter: Scatter::new(scatter_seed),
            timed_out: false,
            error: None,
            last_end: None,
            statements: Vec::new(),
        }
    }
}

/// How a worker runs, the same for all workers of an operation.
#[derive(Clone)]
pub(super) struct Pace {
    pub(super) spec: &'static Spec,
    /// The workload's transaction types, as its units report them.
    pub(super) types: Arc<[&'static str]>,
    /// Measurement ends this long after it starts.
    pub(super) run_time: Option<Duration>,
    pub(super) warmup: Option<Duration>,
    pub(super) rate: Option<f64>,
    pub(super) latency_limit: Option<Duration>,
    /// What to do after a failed unit.
    pub(super) on_error: OnError,
    /// Which failed units are tried again, and how often.
    pub(super) retry: RetryPolicy,
    pub(super) interval: Duration,
}

/// SQLSTATE of a statement cancelled on request.
const QUERY_CANCELED: &str = "57014";

/// What ties a worker to the coordinator of its operation.
pub(super) struct WorkerLinks {
    /// All workers and the coordinator start measuring together.
    pub(super) barrier: Arc<Barrier>,
    /// Pieces of interval figures, to the collector.
    pub(super) intervals: mpsc::UnboundedSender<intervals::IntervalMsg>,
    /// Rows loaded so far by all workers (the progress bar).
    pub(super) rows_done: Arc<AtomicU64>,
    pub(super) inflight: InFlight,
}

/// The one worker loop.
pub(super) async fn worker_loop<O: Operation>(
    mut op: O,
    ctx: &RunCtx,
    thread: usize,
    pace: &Pace,
    links: WorkerLinks,
) -> WorkerOutput {
    let WorkerLinks {
        barrier,
        intervals: tx,
        rows_done,
        inflight,
    } = links;
    let rows_done = &*rows_done;
    let s = &ctx.settings;
    let seed = worker_seed(s.seed, thread, 2);
    let mut out = WorkerOutput::new(pace.types.len(), seed);
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
    let ready = session.start(&mut op, &mut out.stats.common).await;
    // A worker that could not connect stops the others before they start
    // (too many clients, a node down): no unit runs in a run that has
    // already failed.
    if ready.is_err() {
        ctx.stop.store(true, Ordering::Relaxed);
    }
    // Everyone reaches the barrier, also after a failure, so that no
    // worker waits for one that will never come.
    barrier.wait().await;
    if let Err(e) = ready {
        out.error = Some(e);
        return out;
    }
    let began = Instant::now();
    let mut schedule = pace
        .rate
        .map(|r| Schedule::new(began, r, s.threads, thread, s.rate_distribution, seed));
    let mut phase = Phase {
        ctx,
        pace,
        thread,
        session,
        rows_done,
        schedule: schedule.as_mut(),
        rng: rand::SeedableRng::seed_from_u64(seed ^ 0x5EED),
    };
    if let Some(w) = pace.warmup {
        let mut discard = WorkerOutput::new(pace.types.len(), seed);
        phase
            .units(&mut op, Some(began + w), None, &mut discard)
            .await;
        if discard.error.is_some() {
            out.error = discard.error;
            return out;
        }
        // What the statements did during the warmup is not measured.
        drop(op.take_statements());
    }
    let start = began + pace.warmup.unwrap_or_default();
    let recorder = IntervalRecorder::new(
        thread,
        start,
        pace.interval,
        pace.run_time,
        pace.types.len(),
        tx,
    );
    let deadline = pace.run_time.map(|d| start + d);
    let mut rec = Recording {
        start,
        intervals: recorder,
        log: ctx.latency_log.as_ref().map(LogSink::writer),
    };
    phase
        .units(&mut op, deadline, Some(&mut rec), &mut out)
        .await;
    if let Some(log) = rec.log.as_mut() {
        log.flush().await;
    }
    rec.intervals.finish();
    out.statements = op.take_statements();
    out
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

/// Where a measured phase records, besides the worker's [`Stats`].
struct Recording {
    start: Instant,
    intervals: IntervalRecorder,
    log: Option<LogWriter>,
}

/// The loop of one phase (warmup, or measurement) of one worker.
pub(super) struct Phase<'a> {
    pub(super) ctx: &'a RunCtx,
    pub(super) pace: &'a Pace,
    pub(super) thread: usize,
    /// The worker's connection: none while lost and not yet replaced.
    pub(super) session: Session,
    pub(super) rows_done: &'a AtomicU64,
    pub(super) schedule: Option<&'a mut Schedule>,
    /// For the jitter of retries and reconnections.
    pub(super) rng: rand::rngs::SmallRng,
}

impl Phase<'_> {
    /// Runs units until the deadline, the end of the share or a stop;
    /// `rec` is `None` during warmup, whose figures are thrown away.
    async fn units<O: Operation>(
        &mut self,
        op: &mut O,
        deadline: Option<Instant>,
        mut rec: Option<&mut Recording>,
        out: &mut WorkerOutput,
    ) {
        let skip_late = !self.pace.spec.is_load();
        loop {
            if self.ctx.stop.load(Ordering::Relaxed) {
                return;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                out.timed_out = self.pace.spec.is_load();
                return;
            }
            let due = match self.schedule.as_deref_mut() {
                Some(s) => {
                    if let Some(d) = deadline
                        && s.peek() >= d
                    {
                        // The next slot is past the end: wait for the end
                        // so the wallclock is the asked time, then stop.
                        // The slot stays in the schedule: after a warmup,
                        // measurement starts with it.
                        schedule::wait_until_or_stop(d, &self.ctx.stop).await;
                        continue;
                    }
                    let due = s.next_due();
                    if skip_late
                        && let Some(limit) = self.pace.latency_limit
                        && now > due + limit
                    {
                        out.stats.common.skipped += 1;
                        if let Some(rec) = rec.as_deref_mut() {
                            rec.intervals.record_skipped(now);
                        }
                        continue;
                    }
                    Some(due)
                }
                None => None,
            };
            if !op.stage() {
                return;
            }
            // With --reconnect: a new connection for this unit, its connect
            // timed apart, before the unit's slot and timing.
            let ty = op.unit_type();
            if let Err(e) = self.session.next_unit(op, &mut out.stats.common).await {
                out.stats
                    .of(ty)
                    .record_error(&error_class(&e), op.unit_label());
                if self.pace.on_error == OnError::Stop {
                    self.ctx.stop.store(true, Ordering::Relaxed);
                    out.error = Some(e);
                    return;
                }
                if !self.recover(op, out, deadline, e).await {
                    return;
                }
            }
            // No unit of this worker ends before this: the interval
            // before is complete and goes to the collector now.
            if let Some(rec) = rec.as_deref_mut() {
                rec.intervals.move_to(due.map_or(now, |d| d.max(now)));
            }
            if let Some(due) = due
                && !schedule::wait_until_or_stop(due, &self.ctx.stop).await
            {
                return;
            }
            let sent = Instant::now();
            let (res, tries, cancelled, attempt) = self
                .execute_with_retries(op, out.stats.of(ty), deadline)
                .await;
            let end = Instant::now();
            // A long unit the runner cancelled is neither a success nor a
            // failure: what it committed counts, and the worker stops.
            let res = match (res, cancelled) {
                (Err(_), Some(why)) => {
                    out.timed_out |= why == Ending::Deadline;
                    let rows = self.committed_rows(op).await;
                    if rows == 0 {
                        return;
                    }
                    Ok(crate::workload::Outcome { rows, missing: 0 })
                }
                // The coordinator cancelled a unit still running well after
                // the stop (see `run_workers`): not a failure of the
                // server's, and not a unit done. (Long units cancel
                // themselves, above; their other failures count what they
                // committed, below.)
                (Err(e), None)
                    if !op.long_unit()
                        && e.sqlstate() == Some(QUERY_CANCELED)
                        && self.session.cancel_was_sent() =>
                {
                    return;
                }
                // A unit the retry policy would have tried again, but the
                // stop or the end of --time came first: cut short by the
                // run's end, not failed (its retries still count).
                (Err(e), None)
                    if op.retryable()
                        && self.pace.retry.again(tries, e.sqlstate())
                        && (self.ctx.stop.load(Ordering::Relaxed)
                            || deadline.is_some_and(|d| end >= d)) =>
                {
                    if tries > 1
                        && let Some(rec) = rec.as_deref_mut()
                    {
                        rec.intervals.record_retries(end, ty, u64::from(tries - 1));
                    }
                    return;
                }
                (res, _) => res,
            };
            if rec.is_some() {
                out.last_end = Some(end);
            }
            let timing = Timing {
                latency: end - due.unwrap_or(sent).min(sent),
                service: end - sent,
            };
            if tries > 1 {
                out.stats.of(ty).retried += 1;
                if let Some(rec) = rec.as_deref_mut() {
                    rec.intervals.record_retries(end, ty, u64::from(tries - 1));
                }
                if res.is_ok() {
                    // The successful attempt alone, beside the unit's
                    // time with its retries.
                    out.stats
                        .of(ty)
                        .record_retried(end - sent, end.saturating_duration_since(attempt));
                }
            }
            match res {
                Ok(outcome) => {
                    self.rows_done.fetch_add(outcome.rows, Ordering::Relaxed);
                    if self.pace.latency_limit.is_some_and(|l| timing.latency > l) {
                        out.stats.of(ty).late += 1;
                    }
                    out.stats.of(ty).record(timing, outcome);
                    self.session.count_op(&mut out.stats.common);
                    if let Some(rec) = rec.as_deref_mut() {
                        let since = end.saturating_duration_since(rec.start);
                        out.scatter.record(nanos(since), nanos(timing.latency));
                        rec.intervals.record(end, ty, timing, outcome);
                        if let Some(log) = rec.log.as_mut() {
                            log.push(self.log_record(
                                rec.start,
                                end,
                                ty,
                                timing,
                                outcome.rows,
                                true,
                            ))
                            .await;
                        }
                    }
                    if cancelled.is_some() {
                        return;
                    }
                }
                Err(e) => {
                    let label = op.unit_label();
                    out.stats
                        .of(ty)
                        .record_error(&error_class(&e), label.clone());
                    if let Some(rec) = rec.as_deref_mut() {
                        rec.intervals.record_error(end, ty);
                        if let Some(log) = rec.log.as_mut() {
                            log.push(self.log_record(rec.start, end, ty, timing, 0, false))
                                .await;
                        }
                    }
                    // 26000 (a pooler lost the prepared statement) fails
                    // every later unit too: stop the operation at once.
                    let ends_run = e.ends_run();
                    let lost = e.lost_connection();
                    // A failed long unit may have committed part of its
                    // rows (the procedure): they are in the table, so they
                    // count, and the message says so.
                    let mut partly = String::new();
                    if op.long_unit() {
                        let rows = self.committed_rows(op).await;
                        if rows > 0 {
                            out.stats.of(ty).rows += rows;
                            self.rows_done.fetch_add(rows, Ordering::Relaxed);
                            // The per-interval rows add up to the summary's.
                            if let Some(rec) = rec.as_deref_mut() {
                                rec.intervals.record_rows(end, ty, rows);
                            }
                            partly = format!(" ({rows} of its rows were committed)");
                        }
                    }
                    let e = match label {
                        Some(l) => {
                            Error::run(format!("{} {l} failed{partly}: {e}", self.pace.spec.unit))
                        }
                        None => e,
                    };
                    if self.pace.on_error == OnError::Stop || ends_run {
                        self.ctx.stop.store(true, Ordering::Relaxed);
                        out.error = Some(e);
                        return;
                    }
                    if (lost || self.session.is_closed())
                        && !self.recover(op, out, deadline, e).await
                    {
                        return;
                    }
                }
            }
        }
    }

    /// Sends the staged unit, trying it again after a failure the retry
    /// policy names (`--retry-on`, `--max-tries`); returns the result, the
    /// number of tries, whether (and why) a long unit was cancelled on the
    /// server, and when the last try began.
    async fn execute_with_retries<O: Operation>(
        &mut self,
        op: &mut O,
        stats: &mut Stats,
        deadline: Option<Instant>,
    ) -> (
        Result<crate::workload::Outcome>,
        u32,
        Option<Ending>,
        Instant,
    ) {
        let mut tries = 0;
        loop {
            tries += 1;
            let began = Instant::now();
            let Some(client) = self.session.client() else {
                return (Err(Error::run("no connection")), tries, None, began);
            };
            let (res, cancelled) = if op.long_unit() {
                self.execute_cancellable(op, client, deadline).await
            } else {
                (op.execute(client).await, None)
            };
            if cancelled.is_some() {
                return (res, tries, cancelled, began);
            }
            match res {
                Err(e)
                    if op.retryable()
                        && self.pace.retry.again(tries, e.sqlstate())
                        && !self.ctx.stop.load(Ordering::Relaxed)
                        && deadline.is_none_or(|d| Instant::now() < d) =>
                {
                    stats.retries += 1;
                    let pause = backoff(
                        tries,
                        Duration::from_millis(1),
                        Duration::from_millis(200),
                        &mut self.rng,
                    );
                    tokio::time::sleep(pause).await;
                }
                other => return (other, tries, None, began),
            }
        }
    }

    /// Runs a long unit until it ends, or until the run is stopped or the
    /// deadline passes; then asks the server to cancel it and waits for
    /// its end (an error, or a success that beat the cancel).
    async fn execute_cancellable<O: Operation>(
        &self,
        op: &mut O,
        client: &Client,
        deadline: Option<Instant>,
    ) -> (Result<crate::workload::Outcome>, Option<Ending>) {
        let token = client.cancel_token();
        let exec = op.execute(client);
        tokio::pin!(exec);
        let why = tokio::select! {
            res = &mut exec => return (res, None),
            (why, _) = ending(&self.ctx.stop, deadline) => why,
        };
        if let Err(e) = self.session.cancel(&token).await {
            crate::say!("warning: {e}");
        }
        (exec.await, Some(why))
    }

    #[allow(clippy::too_many_arguments)]
    fn log_record(
        &self,
        start: Instant,
        end: Instant,
        ty: usize,
        timing: Timing,
        rows: u64,
        ok: bool,
    ) -> LogRecord {
        let due = end - timing.latency;
        LogRecord {
            op: self.pace.spec.name,
            ty: self.pace.types.get(ty).copied().unwrap_or(""),
            thread: self.thread as u32 + 1,
            start_us: due.saturating_duration_since(start).as_micros() as u64,
            latency_us: timing.latency.as_micros() as u64,
            service_us: timing.service.as_micros() as u64,
            rows,
            ok,
        }
    }
}

fn error_class(e: &Error) -> String {
    match e {
        Error::Db { source, .. } => crate::error::error_class(source),
        _ => "client".to_string(),
    }
}
