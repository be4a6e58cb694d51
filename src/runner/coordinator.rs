//! The coordinator of one operation: starts one worker per thread on the
//! per-core runtimes, each runtime with the recorder its workers share,
//! releases them together at a barrier, runs the collector of interval
//! figures and the progress bar, and collects the workers' output and
//! each runtime's measurements. After a stop or the end of `--time` it
//! gives the units in flight a grace, then cancels them on the server,
//! then abandons the workers that still do not end, so that a frozen
//! server cannot hold the run for ever.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use tokio::sync::{Barrier, mpsc};
use tokio::task::JoinSet;

use super::ending::{Ending, ThreadStop, ending};
use super::intervals::{self, IntervalMsg, OnInterval};
use super::recorder::{IntervalPlan, ThreadOutput, ThreadRecorder, housekeeping};
use super::settings::{OnError, RetryPolicy, RunSettings};
use super::slo_watch::SloWatch;
use super::threads::AbortHandle;
use super::worker::{Pace, ThreadShare, WorkerItem, WorkerLinks, WorkerOutput, worker_loop};
use super::{AbortOnDrop, COUNT_BUDGET, InFlight, RunCtx, STOP_GRACE, progress, threads};
use crate::stats::Keep;
use crate::stats::interval::{IntervalSet, SetFigures};
use crate::workload::{Operation, Spec};

/// How long workers may take to end after their statements were
/// cancelled; after that (a server that does not answer at all) they are
/// abandoned and their measurements are lost.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// How long, once the stuck workers were dropped, the others of their
/// threads may take to hand over what they measured.
const HAND_OVER: Duration = Duration::from_secs(2);

/// How long the coordinator waits for a runtime's measurements once its
/// workers have ended or were dropped (it hands them over as soon as its
/// last worker is gone).
const THREAD_WAIT: Duration = Duration::from_secs(2);

pub(super) struct WorkersOutcome {
    pub(super) wallclock: Duration,
    /// When measurement started (after the barrier and any warmup).
    pub(super) start: Instant,
    pub(super) workers: Vec<WorkerOutput>,
    /// What the workers of each OS thread measured.
    pub(super) threads: Vec<ThreadOutput>,
    pub(super) intervals: Vec<SetFigures>,
    pub(super) failure: Option<String>,
    /// The workers ended during the warmup, which ran this long.
    pub(super) warmup_cut: Option<Duration>,
}

/// Starts one worker per thread, waits for all of them, and collects their
/// output in thread order; a load's progress bar counts to `load_rows`. Once stopped, workers have [`STOP_GRACE`] to end
/// their unit; then what is still running is cancelled on the server, and
/// [`CANCEL_WAIT`] later the workers still not done are abandoned.
pub(super) async fn run_workers<O, F>(
    ctx: &RunCtx,
    spec: &'static Spec,
    types: &[&'static str],
    sending: Sending,
    load_rows: u64,
    per_interval: Option<crate::workload::IntervalMetrics>,
    make: F,
) -> WorkersOutcome
where
    O: Operation,
    F: Fn(usize) -> O,
{
    let plan = &ctx.settings;
    let threads = plan.threads;
    let kind = spec;
    // One for all the workers (see `WorkerItem::pace`).
    let pace = Arc::new(pace(plan, spec, types, sending));
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
    let items = (0..threads)
        .map(|t| WorkerItem {
            t,
            op: make(t),
            ctx: ctx.clone(),
            pace: pace.clone(),
            links: WorkerLinks {
                barrier: barrier.clone(),
                rows_done: rows_done.clone(),
                inflight: inflight[t].clone(),
            },
        })
        .collect();
    let kept: Kept = Arc::default();
    let spread = match threads::spawn_spread(items, work(ctx, &pace, tx, kept.clone())) {
        Ok(s) => s,
        Err(e) => return WorkersOutcome::not_started(threads, e),
    };
    let keeper = AbortOnDrop(tokio::spawn(housekeeping(kept)));
    let sources = spread.threads.len();
    let mut set = JoinSet::new();
    let mut aborts = Vec::with_capacity(threads);
    for joined in spread.items {
        aborts.push(joined.abort_handle());
        set.spawn(joined.join());
    }
    let gate_failure = meet_other_clients(ctx, spec).await;
    barrier.wait().await;
    let start = Instant::now() + pace.warmup.unwrap_or_default();
    if let Some(w) = pace.warmup {
        crate::say!(
            ">> {kind}: warming up for {}",
            humantime::format_duration(w)
        );
    }
    let live = live_feed(ctx, spec, &pace);
    let on_interval = both(
        progress_lines(ctx, spec, &pace, per_interval.clone()),
        live_intervals(ctx, live.as_ref(), per_interval, &inflight),
    );
    let (end_tx, end_rx) = tokio::sync::oneshot::channel();
    let collector = tokio::spawn(intervals::collect(
        rx,
        sources,
        types.len(),
        start,
        pace.interval,
        pace.run_time,
        on_interval,
        end_rx,
        live.clone(),
    ));
    let bar = (spec.is_load() && plan.report_interval.is_none())
        .then(|| progress::LoadBar::start(kind, load_rows, rows_done.clone()))
        .flatten();
    let deadline = pace.run_time.map(|d| start + d);
    let Collected {
        outputs,
        mut failures,
        stopped_at,
    } = collect_workers(ctx, spec, set, &aborts, &inflight, deadline).await;
    drop(keeper);
    let ended = measurement_end(&outputs, stopped_at);
    let wallclock = ended.saturating_duration_since(start);
    let warmup_cut = pace
        .warmup
        .filter(|_| ended < start)
        .map(|w| w.saturating_sub(start - ended));
    if let Some(b) = bar {
        b.finish();
    }
    let measured = thread_outputs(spread.threads, &mut failures).await;
    let _ = end_tx.send(ended);
    let intervals = collector.await.unwrap_or_default();
    if let Some(f) = &live {
        if let Some(w) = &ctx.server {
            f.live.set_waits(w.waits_so_far());
        }
        f.live.end_op(f.op);
    }
    let workers = worker_outputs(outputs, &mut failures);
    failures.extend(gate_failure);
    WorkersOutcome {
        wallclock,
        start,
        workers,
        threads: measured,
        intervals,
        failure: one_failure(failures),
        warmup_cut,
    }
}

impl WorkersOutcome {
    /// No worker could be started (not one thread): nothing measured.
    fn not_started(threads: usize, why: String) -> Self {
        WorkersOutcome {
            wallclock: Duration::ZERO,
            workers: (0..threads).map(|_| WorkerOutput::default()).collect(),
            threads: Vec::new(),
            intervals: Vec::new(),
            failure: Some(why),
            warmup_cut: None,
            start: Instant::now(),
        }
    }
}

/// When measurement ended: now, or after a stop at the stop or at the
/// last unit that was counted, not when the last stuck worker gave up.
fn measurement_end(outputs: &[Option<WorkerOutput>], stopped_at: Option<Instant>) -> Instant {
    let ended = Instant::now();
    match stopped_at {
        Some(at) => {
            let last = outputs.iter().flatten().filter_map(|o| o.last_end).max();
            ended.min(last.map_or(at, |l| l.max(at)))
        }
        None => ended,
    }
}

/// Each runtime's measurements, handed over once its workers have ended
/// (or were dropped); one that does not come is a failure.
async fn thread_outputs(
    threads: Vec<tokio::sync::oneshot::Receiver<ThreadOutput>>,
    failures: &mut Vec<String>,
) -> Vec<ThreadOutput> {
    let mut measured = Vec::with_capacity(threads.len());
    for (g, rx) in threads.into_iter().enumerate() {
        match tokio::time::timeout(THREAD_WAIT, rx).await {
            Ok(Ok(out)) => measured.push(out),
            _ => failures.push(format!(
                "worker thread {g} did not end; the measurements of its workers are lost"
            )),
        }
    }
    measured
}

/// Every worker's output in thread order (an empty one for a worker that
/// did not end); each worker's error is a failure.
fn worker_outputs(
    outputs: Vec<Option<WorkerOutput>>,
    failures: &mut Vec<String>,
) -> Vec<WorkerOutput> {
    let mut workers = Vec::with_capacity(outputs.len());
    for (t, out) in outputs.into_iter().enumerate() {
        let out = out.unwrap_or_default();
        if let Some(e) = &out.error {
            failures.push(format!("thread {}: {e}", t + 1));
        }
        workers.push(out);
    }
    workers
}

/// How an operation's units are sent: which failures are tried again, and
/// how many units a worker keeps in flight.
pub(super) struct Sending {
    pub(super) retry: RetryPolicy,
    pub(super) pipeline: usize,
    pub(super) pipeline_sync: usize,
    /// The workload's users are queued for the connections (TPC-C's
    /// terminals): a unit's latency counts from when its user was ready.
    pub(super) queued: bool,
}

/// How the workers of an operation run: the same for all of them.
fn pace(plan: &RunSettings, spec: &'static Spec, types: &[&'static str], sending: Sending) -> Pace {
    Pace {
        spec,
        types: types.into(),
        run_time: match (spec.is_load(), plan.transactions) {
            (true, _) => plan.load_time,
            (false, Some(_)) => None,
            (false, None) => Some(plan.run_time),
        },
        units: plan.transactions.filter(|_| !spec.is_load()),
        warmup: if spec.is_load() { None } else { plan.warmup },
        rate: plan.rate.filter(|_| spec.paced),
        latency_limit: plan.latency_limit.filter(|_| spec.paced),
        on_error: plan.on_error(spec),
        continue_given: plan.on_error == Some(OnError::Continue),
        retry: sending.retry,
        interval: plan.interval(),
        pipeline: sending.pipeline,
        pipeline_sync: sending.pipeline_sync,
        queued: sending.queued,
    }
}

/// The recorders and stop flags of the operation's worker threads, as
/// each thread makes them, for the run's housekeeping.
type Kept = Arc<std::sync::Mutex<Vec<(ThreadRecorder, ThreadStop)>>>;

/// What each per-core runtime makes of the workers it is given: its
/// recorder (made on its thread; see recorder.rs), handed to the run's
/// housekeeping through `kept`, and the worker loop for each.
fn work<O: Operation>(
    ctx: &RunCtx,
    pace: &Pace,
    tx: mpsc::UnboundedSender<IntervalMsg>,
    kept: Kept,
) -> threads::Work<
    ThreadShare,
    WorkerItem<O>,
    impl Future<Output = (usize, WorkerOutput)> + use<O>,
    ThreadOutput,
> {
    let plan = &ctx.settings;
    let keep = Keep {
        service: pace.rate.is_some() || pace.queued,
        per_row: pace.spec.is_load(),
        pictures: plan.pictures,
    };
    let type_count = pace.types.len();
    let (len, run_time, seed) = (pace.interval, pace.run_time, plan.seed);
    let stop_flag = ctx.stop.clone();
    threads::Work {
        local: Box::new(move |slot: usize, workers: usize| {
            let plan = IntervalPlan {
                len,
                run_time,
                tx: tx.clone(),
            };
            let seed = crate::workload::worker_seed(seed, slot, 6);
            let rec = ThreadRecorder::new(slot, workers, type_count, keep, seed, plan);
            let stop = ThreadStop::new(stop_flag.clone());
            kept.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((rec.clone(), stop.clone()));
            ThreadShare { rec, stop }
        }),
        run: Box::new(|item: WorkerItem<O>, share: &ThreadShare| worker_loop(item, share.clone())),
        finish: Box::new(|share: &ThreadShare| share.rec.finish()),
    }
}

/// Several clients (--clients): meets the others while the workers
/// connect, and starts at the instant they share. A client missing is
/// the operation's failure; the workers stop before their first unit.
async fn meet_other_clients(ctx: &RunCtx, spec: &'static Spec) -> Option<String> {
    let barrier = ctx.barrier.as_ref()?;
    barrier.start(spec.name).await.err().map(|e| {
        ctx.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        e.to_string()
    })
}

/// With `--progress`: the line said at the end of each interval, with the
/// workload's own figures, the `--slo` so far and the server's note.
/// Without it, under `--slo-abort`, the criteria are still judged after
/// each interval, silently.
fn progress_lines(
    ctx: &RunCtx,
    kind: &'static Spec,
    pace: &Pace,
    per_interval: Option<crate::workload::IntervalMetrics>,
) -> Option<OnInterval> {
    let plan = &ctx.settings;
    let mut watch = SloWatch::new(
        plan,
        kind,
        pace.types.clone(),
        ctx.slo_stopped.clone(),
        ctx.stop.clone(),
    );
    let lines = plan.report_interval.is_some();
    if !(lines || plan.slo_abort && watch.is_some()) {
        return None;
    }
    let rate_limited = plan.rate.is_some();
    let names = pace.types.clone();
    let server = ctx.server.clone();
    Some(Box::new(move |f: &SetFigures, pieces: &IntervalSet| {
        let slo = watch
            .as_mut()
            .map(|w| w.interval(f, pieces))
            .unwrap_or_default();
        if !lines {
            return;
        }
        let mut line = progress::progress_line(kind, f, &names, rate_limited);
        if let Some(per) = &per_interval {
            let texts: Vec<String> = per(&f.types).into_iter().map(|m| m.text).collect();
            line.push_str(&format!(" | {}", texts.join(", ")));
        }
        let note = server
            .as_ref()
            .map(|w| w.progress_note())
            .unwrap_or_default();
        crate::say!("{line}{slo}{note}");
    }) as OnInterval)
}

/// With `--metrics-addr`: the operation's place on the run's board.
fn live_feed(ctx: &RunCtx, spec: &'static Spec, pace: &Pace) -> Option<intervals::LiveFeed> {
    let live = ctx.live.clone()?;
    let op = live.begin_op(spec.name, &pace.types, ctx.conns.labels());
    Some(intervals::LiveFeed { live, op })
}

/// With `--metrics-addr`: at each interval's end, its figures, the
/// workload's own, the workers' connections open per host (read from
/// the slots the coordinator already holds to cancel them) and the
/// server's waits so far go to the board.
fn live_intervals(
    ctx: &RunCtx,
    live: Option<&intervals::LiveFeed>,
    per_interval: Option<crate::workload::IntervalMetrics>,
    inflight: &[InFlight],
) -> Option<OnInterval> {
    let feed = live?.clone();
    let slots = inflight.to_vec();
    let hosts = ctx.conns.len();
    let server = ctx.server.clone();
    Some(Box::new(move |f: &SetFigures, _: &IntervalSet| {
        let figures = per_interval
            .as_ref()
            .map(|per| {
                per(&f.types)
                    .into_iter()
                    .map(|m| (m.key, m.value))
                    .collect()
            })
            .unwrap_or_default();
        let mut conns = vec![0u64; hosts];
        for slot in &slots {
            let s = slot.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((h, _)) = &s.conn
                && let Some(n) = conns.get_mut(*h)
            {
                *n += 1;
            }
        }
        feed.live.interval_done(feed.op, f, figures, Some(conns));
        if let Some(w) = &server {
            feed.live.set_waits(w.waits_so_far());
        }
    }))
}

/// Both callbacks, each when given.
fn both(a: Option<OnInterval>, b: Option<OnInterval>) -> Option<OnInterval> {
    match (a, b) {
        (Some(mut a), Some(mut b)) => Some(Box::new(move |f: &SetFigures, p: &IntervalSet| {
            a(f, p);
            b(f, p);
        })),
        (a, b) => a.or(b),
    }
}

/// The failures of an operation as one line: the first, and how many more.
fn one_failure(mut failures: Vec<String>) -> Option<String> {
    match failures.len() {
        0 => None,
        1 => failures.pop(),
        n => Some(format!("{} (and {} more)", failures[0], n - 1)),
    }
}

/// Where the coordinator stands after a stop: Grace, then Cancelled,
/// then the rest are abandoned.
#[derive(PartialEq)]
enum Stopping {
    Running,
    Grace,
    Cancelled,
    /// The stuck workers' futures were dropped; the others of their
    /// threads hand over their output now (a thread hands over its
    /// workers' output when all of them have ended).
    Abandoning,
}

/// What came back from the workers.
struct Collected {
    /// Each worker's output; None for one that did not end.
    outputs: Vec<Option<WorkerOutput>>,
    failures: Vec<String>,
    /// When the stop (or the end of `--time`) came, if it did.
    stopped_at: Option<Instant>,
}

/// Waits for every worker to end. After a stop or the `deadline`, the
/// units in flight have [`STOP_GRACE`], then are cancelled on the server,
/// then their workers are abandoned.
async fn collect_workers(
    ctx: &RunCtx,
    spec: &'static Spec,
    mut set: JoinSet<Result<(usize, WorkerOutput), String>>,
    aborts: &[AbortHandle],
    inflight: &[InFlight],
    deadline: Option<Instant>,
) -> Collected {
    let kind = spec;
    let threads = inflight.len();
    let mut outputs: Vec<Option<WorkerOutput>> = (0..threads).map(|_| None).collect();
    let mut failures = Vec::new();
    let mut stopping = Stopping::Running;
    // A procedure CALL or server-side COPY cancels itself at the stop and
    // then counts what it committed (perhaps on a new connection): more
    // time than a query needs to notice its cancel.
    let cancel_wait = if spec.paced {
        CANCEL_WAIT
    } else {
        CANCEL_WAIT + COUNT_BUDGET + crate::db::connect::connect_timeout(&ctx.target.config)
    };
    let mut stopped_at = None;
    let mut ended_by = Ending::Stop;
    // The end of --time is a stop for the units still in flight: a
    // frozen server must not hold the run past its time for ever.
    let seen = ending(&ctx.stop, deadline);
    tokio::pin!(seen);
    let timer = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(timer);
    loop {
        tokio::select! {
            joined = set.join_next() => match joined {
                None => break,
                Some(Ok(Ok((t, out)))) => outputs[t] = Some(out),
                // An abandoned worker: counted below with the others
                // that did not end.
                Some(Ok(Err(_))) if stopping == Stopping::Abandoning => {}
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
                    let running: Vec<usize> = not_ended(&outputs, inflight).collect();
                    crate::say!(
                        ">> {kind}: {} worker(s) still in a unit {} s after {}: cancelling their statements",
                        running.len(),
                        STOP_GRACE.as_secs(),
                        ended_by.what()
                    );
                    cancel_in_flight(ctx, inflight, &running);
                    stopping = Stopping::Cancelled;
                    timer.as_mut().reset((Instant::now() + cancel_wait).into());
                    continue;
                }
                if stopping == Stopping::Cancelled {
                    // Drop the stuck workers' futures; the workers that
                    // ended but share a thread with one are handed over
                    // once it is gone.
                    for (t, a) in aborts.iter().enumerate() {
                        if outputs[t].is_none() {
                            a.abort();
                        }
                    }
                    stopping = Stopping::Abandoning;
                    timer.as_mut().reset((Instant::now() + HAND_OVER).into());
                    continue;
                }
                set.abort_all();
                break;
            }
        }
    }
    if stopping == Stopping::Abandoning {
        let left = not_ended(&outputs, inflight).count();
        failures.push(format!(
            "{left} worker(s) did not end within {} s of {}, even after their statements were cancelled (is the server frozen?); their units in flight are not included",
            (STOP_GRACE + cancel_wait).as_secs(),
            ended_by.what()
        ));
    }
    Collected {
        outputs,
        failures,
        stopped_at,
    }
}

/// The workers that have not ended: no output, and not marked ended in
/// their slot (an ended worker's output may still wait for the other
/// workers of its thread).
fn not_ended<'a>(
    outputs: &'a [Option<WorkerOutput>],
    inflight: &'a [InFlight],
) -> impl Iterator<Item = usize> + 'a {
    (0..outputs.len()).filter(|&t| {
        outputs[t].is_none()
            && !inflight[t]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .ended
    })
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
