//! Running one operation: the single worker loop, and the coordinator that
//! starts the workers together and merges what they measured.
//!
//! Every operation runs through `worker_loop`: take a connection, prepare,
//! wait for the others at a barrier (so that connecting and preparing are
//! not in the wallclock), optionally warm up unmeasured, then stage and
//! execute units until the share is done, the time is up or the run is told
//! to stop. Only `execute` is timed; under `--rate` the wait for a unit's
//! slot is not service time but does count in its latency. Each worker owns
//! its [`Stats`], [`Scatter`] sample and interval recorder; the coordinator
//! merges them, and a collector task turns interval pieces into figures
//! (and progress lines) while the operation runs.
//!
//! Most units take milliseconds, so a stop or the end of `--time` simply
//! waits for the unit in flight. A procedure CALL or a server-side COPY is
//! one statement per thread that may run for minutes: for those
//! ([`Operation::long_unit`]) the loop watches the stop flag and the
//! deadline while the unit runs, cancels it on the server when either
//! comes, and counts what it had committed ([`Operation::committed_rows`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio::sync::{Barrier, mpsc};
use tokio::task::JoinSet;
use tokio_postgres::{Client, Config};

use crate::cli::OnError;
use crate::config::RunPlan;
use crate::db::nodes::ConnSource;
use crate::db::{connect, schema};
use crate::error::{Error, Result};
use crate::stats::{OpResult, RateTarget, Scatter, Stats, Timing, nanos};
use crate::workload::copy_file::CopyFile;
use crate::workload::copy_mem::CopyMem;
use crate::workload::insert::Insert;
use crate::workload::procedure::{self, Procedure};
use crate::workload::select::Select;
use crate::workload::update::Update;
use crate::workload::{OpKind, Operation, worker_seed};

pub mod intervals;
pub mod latency_log;
pub mod progress;
pub mod schedule;
pub mod session;
pub mod threads;

use intervals::{IntervalRecorder, OnInterval};
use latency_log::{LogRecord, LogSink, LogWriter};
use schedule::Schedule;
use session::Session;

/// How long workers may take to finish their unit in flight once told to
/// stop; after that the statements still running are cancelled on the
/// server and the workers end with what they measured.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long workers may take to end after their statements were
/// cancelled; after that (a server that does not answer at all) they are
/// abandoned and their measurements are lost.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// What a worker's connection is running, for the coordinator to cancel
/// after a stop. Set by the worker's [`Session`] whenever its connection
/// changes (not per unit).
#[derive(Default)]
pub struct InFlightSlot {
    /// The host index and the connection's cancel token; None while the
    /// worker has no connection, or must not be interrupted (a long unit
    /// counting what it committed).
    pub conn: Option<(usize, tokio_postgres::CancelToken)>,
    /// The coordinator sent a cancel: a 57014 that follows is its doing,
    /// not a statement timeout.
    pub cancel_sent: bool,
}

/// A worker's [`InFlightSlot`], shared with the coordinator.
pub type InFlight = Arc<std::sync::Mutex<InFlightSlot>>;

/// What the operations of a run share.
#[derive(Clone)]
pub struct RunCtx {
    pub plan: Arc<RunPlan>,
    pub pool: Pool,
    pub config: Arc<Config>,
    /// Set to make every worker stop after its current unit (an error in a
    /// load, or an interrupt).
    pub stop: Arc<AtomicBool>,
    /// Set (with `stop`) by Ctrl-C or SIGTERM.
    pub interrupted: Arc<AtomicBool>,
    pub latency_log: Option<LogSink>,
    /// Where the workers' connections come from (one pool per host when
    /// load balancing; see [`crate::db::nodes`]).
    pub conns: Arc<ConnSource>,
}

/// Runs one operation to its end and returns what it measured. Failures of
/// the set-up (truncate, procedure) or of the workers are reported in
/// [`OpResult::failure`], with whatever was measured until then.
pub async fn run_operation(ctx: &RunCtx, kind: OpKind) -> OpResult {
    let plan = &ctx.plan;
    let mut result = OpResult::new(kind, plan.threads);
    result.batch_size = plan.batch_size;
    result.table_rows = plan.rows;
    result.nontransactional = plan.nontransactional;
    result.rate = plan
        .rate
        .filter(|_| kind.is_paced())
        .map(|r| RateTarget { per_second: r });
    // As --rate: one statement per thread is not a unit to count late.
    result.latency_limit = plan.latency_limit.filter(|_| kind.is_paced());
    if !kind.is_load() {
        result.warmup = plan.warmup;
    }
    result.hosts = ctx.conns.labels();
    if let Err(e) = set_up(ctx, kind).await {
        result.failure = Some(e.to_string());
        return result;
    }
    let outcome = match kind {
        OpKind::Insert => run_workers(ctx, kind, Insert::new).await,
        OpKind::CopyMem => run_workers(ctx, kind, CopyMem::new).await,
        OpKind::CopyFile => run_workers(ctx, kind, CopyFile::new).await,
        OpKind::Procedure => run_workers(ctx, kind, Procedure::new).await,
        OpKind::Select => run_workers(ctx, kind, Select::new).await,
        OpKind::Update => run_workers(ctx, kind, Update::new).await,
    };
    result.wallclock = outcome.wallclock;
    if let Some(ran) = outcome.warmup_cut {
        result.warmup = Some(ran);
        result.warmup_cut = true;
    }
    for (t, w) in outcome.workers.into_iter().enumerate() {
        result.thread_rows[t] = w.stats.rows;
        result.total.add(&w.stats);
        result.scatter.push(w.scatter);
        result.timed_out |= w.timed_out;
    }
    // A load that reached the end of its share as --time ran out did not
    // stop short.
    result.timed_out &= result.total.rows < result.table_rows;
    result.intervals = outcome.intervals;
    result.interrupted = ctx.interrupted.load(Ordering::Relaxed);
    result.failure = outcome.failure;
    result
}

/// What a load needs before its workers start: an empty table, and for
/// `procedure` the server-side generator.
async fn set_up(ctx: &RunCtx, kind: OpKind) -> Result<()> {
    if !kind.is_load() {
        return Ok(());
    }
    let client = connect::get(&ctx.pool, &ctx.config).await?;
    if kind == OpKind::CopyFile {
        crate::workload::copy_file::check_files(&ctx.plan, &client).await?;
    }
    schema::truncate(&client, &ctx.plan.table).await?;
    schema::mark_loading(&client, &ctx.plan.table).await?;
    if kind == OpKind::Procedure {
        procedure::install(&client).await?;
    }
    Ok(())
}

/// What one worker hands back.
struct WorkerOutput {
    stats: Stats,
    scatter: Scatter,
    /// `--time` ended the worker's share early.
    timed_out: bool,
    error: Option<Error>,
    /// When the last measured unit ended: after a stop, the wallclock runs
    /// to the stop or to the last unit counted, whichever is later.
    last_end: Option<Instant>,
}

impl WorkerOutput {
    fn new(scatter_seed: u64) -> Self {
        WorkerOutput {
            stats: Stats::default(),
            scatter: Scatter::new(scatter_seed),
            timed_out: false,
            error: None,
            last_end: None,
        }
    }
}

struct WorkersOutcome {
    wallclock: Duration,
    workers: Vec<WorkerOutput>,
    intervals: Vec<crate::stats::IntervalFigures>,
    failure: Option<String>,
    /// The workers ended during the warmup, which ran this long.
    warmup_cut: Option<Duration>,
}

/// How a worker runs, the same for all workers of an operation.
#[derive(Clone)]
struct Pace {
    kind: OpKind,
    /// Measurement ends this long after it starts.
    run_time: Option<Duration>,
    warmup: Option<Duration>,
    rate: Option<f64>,
    latency_limit: Option<Duration>,
    /// What to do after a failed unit.
    on_error: OnError,
    interval: Duration,
}

/// Starts one worker per thread, waits for all of them, and collects their
/// output in thread order. Once stopped, workers have [`STOP_GRACE`] to end
/// their unit; then what is still running is cancelled on the server, and
/// [`CANCEL_WAIT`] later the workers still not done are abandoned.
async fn run_workers<O, F>(ctx: &RunCtx, kind: OpKind, make: F) -> WorkersOutcome
where
    O: Operation,
    F: Fn(&RunPlan, usize) -> O,
{
    let plan = &ctx.plan;
    let threads = plan.threads;
    let pace = Pace {
        kind,
        run_time: if kind.is_load() {
            plan.load_time
        } else {
            Some(plan.run_time)
        },
        warmup: if kind.is_load() { None } else { plan.warmup },
        rate: plan.rate.filter(|_| kind.is_paced()),
        latency_limit: plan.latency_limit.filter(|_| kind.is_paced()),
        on_error: plan.on_error(kind),
        interval: plan.interval(),
    };
    // The coordinator waits at the barrier too, to note when work starts.
    let barrier = Arc::new(Barrier::new(threads + 1));
    let (tx, rx) = mpsc::unbounded_channel();
    let rows_done = Arc::new(AtomicU64::new(0));
    // Idle connections were opened on another runtime (this one, or the
    // threads of an earlier operation); workers open their own on their
    // threads (see `threads`).
    ctx.pool.retain(|_, _| false);
    ctx.conns.drop_idle();
    let inflight: Vec<InFlight> = (0..threads).map(|_| InFlight::default()).collect();
    let mut loops = Vec::with_capacity(threads);
    for (t, slot) in inflight.iter().enumerate() {
        let op = make(plan, t);
        let ctx = ctx.clone();
        let pace = pace.clone();
        let links = WorkerLinks {
            barrier: barrier.clone(),
            intervals: tx.clone(),
            rows_done: rows_done.clone(),
            inflight: slot.clone(),
        };
        loops.push(async move {
            let out = worker_loop(op, &ctx, t, &pace, links).await;
            (t, out)
        });
    }
    drop(tx);
    let mut set = JoinSet::new();
    let mut aborts = Vec::with_capacity(threads);
    for joined in threads::spawn_spread(loops) {
        aborts.push(joined.abort_handle());
        set.spawn(joined.join());
    }
    barrier.wait().await;
    let start = Instant::now() + pace.warmup.unwrap_or_default();
    if let Some(w) = pace.warmup {
        crate::say!(
            ">> {kind}: warming up for {}",
            humantime::format_duration(w)
        );
    }
    let on_interval: Option<OnInterval> = plan.report_interval.map(|_| {
        let rate_limited = plan.rate.is_some();
        Box::new(move |f: &crate::stats::IntervalFigures| {
            crate::say!("{}", progress::progress_line(kind, f, rate_limited));
        }) as OnInterval
    });
    let (end_tx, end_rx) = tokio::sync::oneshot::channel();
    let collector = tokio::spawn(intervals::collect(
        rx,
        threads,
        start,
        pace.interval,
        pace.run_time,
        on_interval,
        end_rx,
    ));
    let bar = (kind.is_load() && plan.report_interval.is_none())
        .then(|| progress::LoadBar::start(kind, plan.rows, rows_done.clone()))
        .flatten();

    let mut outputs: Vec<Option<WorkerOutput>> = (0..threads).map(|_| None).collect();
    let mut failures = Vec::new();
    // After a stop: Grace, then Cancelled, then the rest are abandoned.
    #[derive(PartialEq)]
    enum Stopping {
        Running,
        Grace,
        Cancelled,
    }
    let mut stopping = Stopping::Running;
    // A procedure CALL or server-side COPY cancels itself at the stop and
    // then counts what it committed (perhaps on a new connection): more
    // time than a query needs to notice its cancel.
    let cancel_wait = if kind.is_paced() {
        CANCEL_WAIT
    } else {
        CANCEL_WAIT + COUNT_BUDGET + crate::db::connect::connect_timeout(&ctx.config)
    };
    let mut stopped_at = None;
    let mut ended_by = Ending::Stop;
    // The end of --time is a stop for the units still in flight: a
    // frozen server must not hold the run past its time for ever.
    let seen = ending(&ctx.stop, pace.run_time.map(|d| start + d));
    tokio::pin!(seen);
    let timer = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(timer);
    loop {
        tokio::select! {
            joined = set.join_next() => match joined {
                None => break,
                Some(Ok(Ok((t, out)))) => outputs[t] = Some(out),
                Some(Ok(Err(e))) => failures.push(format!("a worker stopped: {e}")),
                Some(Err(e)) => failures.push(format!("a worker stopped: {e}")),
            },
            (why, at) = &mut seen, if stopping == Stopping::Running => {
                stopping = Stopping::Grace;
                stopped_at = Some(at);
                ended_by = why;
                timer.as_mut().reset((at + STOP_GRACE).into());
            }
            _ = &mut timer, if stopping != Stopping::Running => {
                if stopping == Stopping::Grace {
                    // Units still in flight (a lock wait, a stalled
                    // server): cancel them, so that their workers end
                    // with what they measured rather than being abandoned.
                    let running: Vec<usize> =
                        (0..threads).filter(|&t| outputs[t].is_none()).collect();
                    crate::say!(
                        ">> {kind}: {} worker(s) still in a unit {} s after {}: cancelling their statements",
                        running.len(),
                        STOP_GRACE.as_secs(),
                        ended_by.what()
                    );
                    cancel_in_flight(ctx, &inflight, &running);
                    stopping = Stopping::Cancelled;
                    timer.as_mut().reset((Instant::now() + cancel_wait).into());
                    continue;
                }
                let left = set.len();
                set.abort_all();
                for a in &aborts {
                    a.abort();
                }
                failures.push(format!(
                    "{left} worker(s) did not end within {} s of {}, even after their statements were cancelled (is the server frozen?); their measurements are not included",
                    (STOP_GRACE + cancel_wait).as_secs(),
                    ended_by.what()
                ));
                break;
            }
        }
    }
    let mut ended = Instant::now();
    // After a stop, measurement ends at the stop or at the last unit that
    // was counted, not when the last stuck worker gave up.
    if let Some(at) = stopped_at {
        let last = outputs.iter().flatten().filter_map(|o| o.last_end).max();
        ended = ended.min(last.map_or(at, |l| l.max(at)));
    }
    let wallclock = ended.saturating_duration_since(start);
    let warmup_cut = pace
        .warmup
        .filter(|_| ended < start)
        .map(|w| w.saturating_sub(start - ended));
    if let Some(b) = bar {
        b.finish();
    }
    let _ = end_tx.send(ended);
    let intervals = collector.await.unwrap_or_default();
    let mut workers = Vec::with_capacity(threads);
    for (t, out) in outputs.into_iter().enumerate() {
        let out = out.unwrap_or_else(|| WorkerOutput::new(0));
        if let Some(e) = &out.error {
            failures.push(format!("thread {}: {e}", t + 1));
        }
        workers.push(out);
    }
    let failure = match failures.len() {
        0 => None,
        1 => failures.pop(),
        n => Some(format!("{} (and {} more)", failures[0], n - 1)),
    };
    WorkersOutcome {
        wallclock,
        workers,
        intervals,
        failure,
        warmup_cut,
    }
}

/// Why an operation's units are being ended early: what makes the
/// coordinator start its grace, a long unit cancel itself, and a
/// reconnecting worker give up quietly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// The run was stopped (Ctrl-C, SIGTERM, another worker's failure).
    Stop,
    /// `--time` is up.
    Deadline,
}

impl Ending {
    /// As the messages say it.
    fn what(self) -> &'static str {
        match self {
            Ending::Stop => "the stop",
            Ending::Deadline => "the end of --time",
        }
    }
}

/// Resolves when `stop` is set (seen within 20 ms) or `deadline` passes:
/// which, and when.
async fn ending(stop: &AtomicBool, deadline: Option<Instant>) -> (Ending, Instant) {
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

/// Asks the server to cancel what the connections of `workers` are
/// running, all at once and in the background: a server that does not
/// answer must not hold up the coordinator (each cancel is bounded by the
/// connect timeout, and one that fails is said).
fn cancel_in_flight(ctx: &RunCtx, inflight: &[InFlight], workers: &[usize]) {
    for &t in workers {
        let token = {
            let mut slot = inflight[t].lock().unwrap_or_else(|p| p.into_inner());
            slot.cancel_sent |= slot.conn.is_some();
            slot.conn.clone()
        };
        if let Some((host, token)) = token {
            let conns = ctx.conns.clone();
            tokio::spawn(async move {
                if let Err(e) = conns.cancel(host, &token).await {
                    crate::say!("warning: {e}");
                }
            });
        }
    }
}

/// Attempts at counting what a long unit committed on a spare connection
/// after its own was lost, half a second apart, within [`COUNT_BUDGET`].
const COUNT_TRIES: u32 = 20;
const COUNT_BUDGET: Duration = Duration::from_secs(10);

/// SQLSTATE of a statement cancelled on request.
const QUERY_CANCELED: &str = "57014";

/// What ties a worker to the coordinator of its operation.
struct WorkerLinks {
    /// All workers and the coordinator start measuring together.
    barrier: Arc<Barrier>,
    /// Pieces of interval figures, to the collector.
    intervals: mpsc::UnboundedSender<intervals::IntervalMsg>,
    /// Rows loaded so far by all workers (the progress bar).
    rows_done: Arc<AtomicU64>,
    inflight: InFlight,
}

/// The one worker loop.
async fn worker_loop<O: Operation>(
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
    let seed = worker_seed(ctx.plan.seed, thread, 2);
    let mut out = WorkerOutput::new(seed);
    // The connection (or with --reconnect, the way to make one per unit),
    // and the per-connection set-up: see session.rs.
    let mut session = Session::new(
        ctx.conns.clone(),
        thread,
        ctx.plan.reconnect,
        session_settings(&ctx.plan),
        ctx.plan.seed,
        inflight,
    );
    let ready = session.start(&mut op, &mut out.stats).await;
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
    let mut schedule = pace.rate.map(|r| {
        Schedule::new(
            began,
            r,
            ctx.plan.threads,
            thread,
            ctx.plan.rate_distribution,
            seed,
        )
    });
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
        let mut discard = WorkerOutput::new(seed);
        phase
            .units(&mut op, Some(began + w), None, &mut discard)
            .await;
        if discard.error.is_some() {
            out.error = discard.error;
            return out;
        }
    }
    let start = began + pace.warmup.unwrap_or_default();
    let recorder = IntervalRecorder::new(thread, start, pace.interval, pace.run_time, tx);
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
    out
}

/// The SQL every new connection runs before the operation prepares its
/// statements (at the start, after a reconnect, and per unit with -C).
fn session_settings(plan: &RunPlan) -> Vec<String> {
    let mut settings = Vec::new();
    if plan.nontransactional {
        settings.push(crate::db::dialect::nontransactional_setting().to_string());
    }
    if let Some(t) = plan.statement_timeout {
        settings.push(format!("set statement_timeout = {}", t.as_millis().max(1)));
    }
    settings
}

/// Reconnection attempts after a lost connection, and the longest pause
/// between two of them: about half a minute in all, then the worker gives up.
const RECONNECT_TRIES: u32 = 15;
const RECONNECT_MAX_PAUSE: Duration = Duration::from_secs(2);

/// The pause before retry or reconnection number `n` (1-based): doubling
/// from `base`, capped, with full jitter so that workers do not retry in
/// lockstep.
fn backoff(n: u32, base: Duration, cap: Duration, rng: &mut rand::rngs::SmallRng) -> Duration {
    use rand::RngExt;
    let ceiling = base.saturating_mul(1u32 << n.min(16)).min(cap);
    ceiling.mul_f64(rng.random_range(0.5..=1.0))
}

/// Whether a failed unit may be retried: serialization failures and
/// deadlocks (YugabyteDB reports its read-restart and transaction
/// conflict errors as 40001 too).
pub fn is_retryable(e: &Error) -> bool {
    matches!(e.sqlstate(), Some("40001") | Some("40P01"))
}

/// Where a measured phase records, besides the worker's [`Stats`].
struct Recording {
    start: Instant,
    intervals: IntervalRecorder,
    log: Option<LogWriter>,
}

/// The loop of one phase (warmup, or measurement) of one worker.
struct Phase<'a> {
    ctx: &'a RunCtx,
    pace: &'a Pace,
    thread: usize,
    /// The worker's connection: none while lost and not yet replaced.
    session: Session,
    rows_done: &'a AtomicU64,
    schedule: Option<&'a mut Schedule>,
    /// For the jitter of retries and reconnections.
    rng: rand::rngs::SmallRng,
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
        let skip_late = !self.pace.kind.is_load();
        loop {
            if self.ctx.stop.load(Ordering::Relaxed) {
                return;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                out.timed_out = self.pace.kind.is_load();
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
                        out.stats.skipped += 1;
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
            if let Err(e) = self.session.next_unit(op, &mut out.stats).await {
                out.stats.record_error(&error_class(&e), op.unit_label());
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
            let (res, tries, cancelled) = self
                .execute_with_retries(op, &mut out.stats, deadline)
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
                out.stats.retried += 1;
            }
            match res {
                Ok(outcome) => {
                    self.rows_done.fetch_add(outcome.rows, Ordering::Relaxed);
                    if self.pace.latency_limit.is_some_and(|l| timing.latency > l) {
                        out.stats.late += 1;
                    }
                    out.stats.record(timing, outcome);
                    self.session.count_op(&mut out.stats);
                    if let Some(rec) = rec.as_deref_mut() {
                        let since = end.saturating_duration_since(rec.start);
                        out.scatter.record(nanos(since), nanos(timing.latency));
                        rec.intervals.record(end, timing, outcome);
                        if let Some(log) = rec.log.as_mut() {
                            log.push(self.log_record(rec.start, end, timing, outcome.rows, true))
                                .await;
                        }
                    }
                    if cancelled.is_some() {
                        return;
                    }
                }
                Err(e) => {
                    let label = op.unit_label();
                    out.stats.record_error(&error_class(&e), label.clone());
                    if let Some(rec) = rec.as_deref_mut() {
                        rec.intervals.record_error(end);
                        if let Some(log) = rec.log.as_mut() {
                            log.push(self.log_record(rec.start, end, timing, 0, false))
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
                            out.stats.rows += rows;
                            self.rows_done.fetch_add(rows, Ordering::Relaxed);
                            // The per-interval rows add up to the summary's.
                            if let Some(rec) = rec.as_deref_mut() {
                                rec.intervals.record_rows(end, rows);
                            }
                            partly = format!(" ({rows} of its rows were committed)");
                        }
                    }
                    let e = match label {
                        Some(l) => {
                            Error::run(format!("{} {l} failed{partly}: {e}", self.pace.kind.unit()))
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

    /// Sends the staged unit, retrying retryable errors up to
    /// `--max-tries`; returns the result, the number of tries, and whether
    /// (and why) a long unit was cancelled on the server.
    async fn execute_with_retries<O: Operation>(
        &mut self,
        op: &mut O,
        stats: &mut Stats,
        deadline: Option<Instant>,
    ) -> (Result<crate::workload::Outcome>, u32, Option<Ending>) {
        let mut tries = 0;
        loop {
            tries += 1;
            let Some(client) = self.session.client() else {
                return (Err(Error::run("no connection")), tries, None);
            };
            let (res, cancelled) = if op.long_unit() {
                self.execute_cancellable(op, client, deadline).await
            } else {
                (op.execute(client).await, None)
            };
            if cancelled.is_some() {
                return (res, tries, cancelled);
            }
            match res {
                Err(e)
                    if tries < self.ctx.plan.max_tries
                        && op.retryable()
                        && is_retryable(&e)
                        && !self.ctx.stop.load(Ordering::Relaxed) =>
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
                other => return (other, tries, None),
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

    /// What a cancelled or failed long unit left in the table: counted on
    /// the worker's connection, or, when that was lost (a server restart
    /// in the middle of a procedure CALL), on another connection to the
    /// same host once the server answers again (for up to about 10 s). A
    /// count that cannot be made is said and taken as none.
    async fn committed_rows<O: Operation>(&self, op: &mut O) -> u64 {
        // The count must not be taken for a stuck unit and cancelled.
        self.session.forget_in_flight();
        let count = async {
            let mut last = None;
            if let Some(client) = self.session.client()
                && !self.session.is_closed()
            {
                match op.committed_rows(client).await {
                    Ok(n) => return Ok(n),
                    Err(e) => last = Some(e),
                }
            }
            for _ in 0..COUNT_TRIES {
                match self.session.spare().await {
                    Ok(conn) => match op.committed_rows(&conn).await {
                        Ok(n) => return Ok(n),
                        Err(e) => last = Some(e),
                    },
                    Err(e) => last = Some(e),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(last.unwrap_or_else(|| Error::run("no connection to count on")))
        };
        match tokio::time::timeout(COUNT_BUDGET, count).await {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => {
                crate::say!("warning: {e}; the rows it committed are not counted");
                0
            }
            Err(_) => {
                crate::say!(
                    "warning: the rows the {} committed could not be counted within {} s; they are not counted",
                    self.pace.kind.unit(),
                    COUNT_BUDGET.as_secs()
                );
                0
            }
        }
    }

    /// After a lost connection (`cause`): whether the worker goes on, on a
    /// new connection. It ends quietly at the stop or the end of `--time`,
    /// and with `cause` as its error when no connection can be made.
    async fn recover<O: Operation>(
        &mut self,
        op: &mut O,
        out: &mut WorkerOutput,
        deadline: Option<Instant>,
        cause: Error,
    ) -> bool {
        match self.reconnect(op, &mut out.stats, deadline).await {
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
        stats: &mut Stats,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let mut last = Error::run("no attempt was made");
        for n in 1..=RECONNECT_TRIES {
            let attempt = tokio::select! {
                r = self.session.reopen(op, stats) => r,
                _ = ending(&self.ctx.stop, deadline) => return Ok(false),
            };
            match attempt {
                Ok(()) => {
                    stats.reconnects += 1;
                    crate::say!(
                        ">> {} thread {}: the connection was lost and is made again (attempt {n})",
                        self.pace.kind,
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
                _ = tokio::time::sleep(pause) => {}
                _ = ending(&self.ctx.stop, deadline) => return Ok(false),
            }
        }
        Err(last)
    }

    fn log_record(
        &self,
        start: Instant,
        end: Instant,
        timing: Timing,
        rows: u64,
        ok: bool,
    ) -> LogRecord {
        let due = end - timing.latency;
        LogRecord {
            op: self.pace.kind.name(),
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
