//! The coordinator of one operation: starts one worker per thread on the
//! per-core runtimes, each runtime with the recorder its workers share,
//! releases them together at a barrier, runs the collector of interval
//! figures and the progress bar, and collects the workers' output and
//! each runtime's measurements. After a stop or the end of `--time` it
//! gives the units in flight a grace, then cancels them on the server,
//! then abandons the workers that still do not end, so that a frozen
//! server cannot hold the run for ever.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use tokio::sync::{Barrier, mpsc};
use tokio::task::JoinSet;

use super::ending::{Ending, ThreadStop, ending};
use super::intervals::{self, OnInterval};
use super::recorder::{IntervalPlan, ThreadOutput, ThreadRecorder, housekeeping};
use super::settings::{OnError, RetryPolicy};
use super::worker::{Pace, ThreadShare, WorkerLinks, WorkerOutput, worker_loop};
use super::{COUNT_BUDGET, InFlight, RunCtx, STOP_GRACE, progress, threads};
use crate::stats::Keep;
use crate::stats::interval::SetFigures;
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
    retry: RetryPolicy,
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
    let pace = Pace {
        spec,
        types: types.into(),
        run_time: if spec.is_load() {
            plan.load_time
        } else {
            Some(plan.run_time)
        },
        warmup: if spec.is_load() { None } else { plan.warmup },
        rate: plan.rate.filter(|_| spec.paced),
        latency_limit: plan.latency_limit.filter(|_| spec.paced),
        on_error: plan.on_error(spec),
        continue_given: plan.on_error == Some(OnError::Continue),
        retry,
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
    let mut items = Vec::with_capacity(threads);
    for (t, slot) in inflight.iter().enumerate() {
        items.push(WorkerItem {
            t,
            op: make(t),
            ctx: ctx.clone(),
            pace: pace.clone(),
            links: WorkerLinks {
                barrier: barrier.clone(),
                rows_done: rows_done.clone(),
                inflight: slot.clone(),
            },
        });
    }
    // Each runtime's recorder is made on its thread; see recorder.rs.
    let keep = Keep {
        service: pace.rate.is_some(),
        per_row: spec.is_load(),
    };
    let type_count = types.len();
    let (len, run_time, seed) = (pace.interval, pace.run_time, plan.seed);
    let stop_flag = ctx.stop.clone();
    let work = threads::Work {
        local: Box::new(move |slot: usize, workers: usize| {
            let plan = IntervalPlan {
                len,
                run_time,
                tx: tx.clone(),
            };
            let seed = crate::workload::worker_seed(seed, slot, 6);
            let rec = ThreadRecorder::new(slot, workers, type_count, keep, seed, plan);
            let stop = ThreadStop::new(stop_flag.clone());
            tokio::task::spawn_local(housekeeping(rec.clone(), stop.clone()));
            ThreadShare { rec, stop }
        }),
        run: Box::new(|item: WorkerItem<O>, share: &ThreadShare| {
            let share = share.clone();
            async move {
                let WorkerItem {
                    t,
                    op,
                    ctx,
                    pace,
                    links,
                } = item;
                let out = worker_loop(op, &ctx, t, &pace, links, share).await;
                (t, out)
            }
        }),
        finish: Box::new(|share: &ThreadShare| share.rec.finish()),
    };
    let spread = match threads::spawn_spread(items, work) {
        Ok(s) => s,
        Err(e) => {
            return WorkersOutcome {
                wallclock: Duration::ZERO,
                workers: (0..threads).map(|_| WorkerOutput::default()).collect(),
                threads: Vec::new(),
                intervals: Vec::new(),
                failure: Some(e),
                warmup_cut: None,
                start: Instant::now(),
            };
        }
    };
    let sources = spread.threads.len();
    let mut set = JoinSet::new();
    let mut aborts = Vec::with_capacity(threads);
    for joined in spread.items {
        aborts.push(joined.abort_handle());
        set.spawn(joined.join());
    }
    // Several clients (--clients): meet the others while the workers
    // connect, and start at the instant they share. A client missing is
    // the operation's failure; the workers stop before their first unit.
    let gate_failure = match &ctx.barrier {
        Some(barrier) => barrier.start(spec.name).await.err().map(|e| {
            ctx.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            e.to_string()
        }),
        None => None,
    };
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
        let names = pace.types.clone();
        let server = ctx.server.clone();
        Box::new(move |f: &SetFigures| {
            let mut line = progress::progress_line(kind, f, &names, rate_limited);
            if let Some(per) = &per_interval {
                let texts: Vec<String> = per(&f.types).into_iter().map(|m| m.text).collect();
                line.push_str(&format!(" | {}", texts.join(", ")));
            }
            let note = server
                .as_ref()
                .map(|w| w.progress_note())
                .unwrap_or_default();
            crate::say!("{line}{note}");
        }) as OnInterval
    });
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
    ));
    let bar = (spec.is_load() && plan.report_interval.is_none())
        .then(|| progress::LoadBar::start(kind, load_rows, rows_done.clone()))
        .flatten();

    let mut outputs: Vec<Option<WorkerOutput>> = (0..threads).map(|_| None).collect();
    let mut failures = Vec::new();
    // After a stop: Grace, then Cancelled, then the rest are abandoned.
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
    let seen = ending(&ctx.stop, pace.run_time.map(|d| start + d));
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
        let left = outputs.iter().filter(|o| o.is_none()).count();
        failures.push(format!(
            "{left} worker(s) did not end within {} s of {}, even after their statements were cancelled (is the server frozen?); their units in flight are not included",
            (STOP_GRACE + cancel_wait).as_secs(),
            ended_by.what()
        ));
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
    // Each runtime hands over its measurements once its workers have ended
    // (or were dropped, above).
    let mut measured = Vec::with_capacity(sources);
    for (g, rx) in spread.threads.into_iter().enumerate() {
        match tokio::time::timeout(THREAD_WAIT, rx).await {
            Ok(Ok(out)) => measured.push(out),
            _ => failures.push(format!(
                "worker thread {g} did not end; the measurements of its workers are lost"
            )),
        }
    }
    let _ = end_tx.send(ended);
    let intervals = collector.await.unwrap_or_default();
    let mut workers = Vec::with_capacity(threads);
    for (t, out) in outputs.into_iter().enumerate() {
        let out = out.unwrap_or_default();
        if let Some(e) = &out.error {
            failures.push(format!("thread {}: {e}", t + 1));
        }
        workers.push(out);
    }
    failures.extend(gate_failure);
    let failure = match failures.len() {
        0 => None,
        1 => failures.pop(),
        n => Some(format!("{} (and {} more)", failures[0], n - 1)),
    };
    WorkersOutcome {
        wallclock,
        start,
        workers,
        threads: measured,
        intervals,
        failure,
        warmup_cut,
    }
}

/// What one worker needs on its thread; all of it may move there.
struct WorkerItem<O> {
    t: usize,
    op: O,
    ctx: RunCtx,
    pace: Pace,
    links: WorkerLinks,
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
