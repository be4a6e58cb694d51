//! Running one operation: the single worker loop, and the coordinator that
//! starts the workers together and merges what they measured.
//!
//! Every operation runs through [`worker_loop`]: take a connection, prepare,
//! wait for the others at a barrier (so that connecting and preparing are
//! not in the wallclock), then stage and execute units until the share is
//! done, the time is up or the run is told to stop. Only `execute` is
//! timed. Each worker owns its [`Stats`]; the coordinator merges them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio::sync::Barrier;
use tokio_postgres::Config;

use crate::config::RunPlan;
use crate::db::{connect, schema};
use crate::error::{Error, Result};
use crate::stats::{OpResult, Stats};
use crate::workload::copy_file::CopyFile;
use crate::workload::copy_mem::CopyMem;
use crate::workload::insert::Insert;
use crate::workload::procedure::{self, Procedure};
use crate::workload::select::Select;
use crate::workload::update::Update;
use crate::workload::{OpKind, Operation};

/// What the operations of a run share.
#[derive(Clone)]
pub struct RunCtx {
    pub plan: Arc<RunPlan>,
    pub pool: Pool,
    pub config: Arc<Config>,
    /// Set to make every worker stop after its current unit (an error in a
    /// load, or an interrupt).
    pub stop: Arc<AtomicBool>,
}

/// Runs one operation to its end and returns what it measured. Failures of
/// the set-up (truncate, procedure) or of the workers are reported in
/// [`OpResult::failure`], with whatever was measured until then.
pub async fn run_operation(ctx: &RunCtx, kind: OpKind) -> OpResult {
    let plan = &ctx.plan;
    let mut result = OpResult {
        kind,
        threads: plan.threads,
        batch_size: plan.batch_size,
        table_rows: plan.rows,
        nontransactional: plan.nontransactional,
        wallclock: Duration::ZERO,
        total: Stats::default(),
        thread_rows: vec![0; plan.threads],
        failure: None,
    };
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
    for (t, stats) in outcome.workers.iter().enumerate() {
        result.thread_rows[t] = stats.rows;
        result.total.add(stats);
    }
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
    schema::truncate(&client, &ctx.plan.table).await?;
    if kind == OpKind::Procedure {
        procedure::install(&client).await?;
    }
    Ok(())
}

struct WorkersOutcome {
    wallclock: Duration,
    workers: Vec<Stats>,
    failure: Option<String>,
}

/// Starts one worker per thread, waits for all of them, and collects their
/// stats in thread order.
async fn run_workers<O, F>(ctx: &RunCtx, kind: OpKind, make: F) -> WorkersOutcome
where
    O: Operation,
    F: Fn(&RunPlan, usize) -> O,
{
    let threads = ctx.plan.threads;
    // The coordinator waits at the barrier too, to note when work starts.
    let barrier = Arc::new(Barrier::new(threads + 1));
    let run_time = (!kind.is_load()).then_some(ctx.plan.run_time);
    let stop_on_error = kind.is_load();
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let op = make(&ctx.plan, t);
        let ctx = ctx.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            worker_loop(op, &ctx, &barrier, run_time, stop_on_error).await
        }));
    }
    barrier.wait().await;
    let start = Instant::now();
    let mut workers = Vec::with_capacity(threads);
    let mut failures = Vec::new();
    for (t, h) in handles.into_iter().enumerate() {
        match h.await {
            Ok((stats, err)) => {
                if let Some(e) = err {
                    failures.push(format!("thread {}: {e}", t + 1));
                }
                workers.push(stats);
            }
            Err(e) => {
                failures.push(format!("thread {} stopped: {e}", t + 1));
                workers.push(Stats::default());
            }
        }
    }
    let wallclock = start.elapsed();
    let failure = match failures.len() {
        0 => None,
        1 => failures.pop(),
        n => Some(format!("{} (and {} more)", failures[0], n - 1)),
    };
    WorkersOutcome {
        wallclock,
        workers,
        failure,
    }
}

/// The one worker loop. Returns what the worker measured and, if it
/// stopped on an error, that error.
async fn worker_loop<O: Operation>(
    mut op: O,
    ctx: &RunCtx,
    barrier: &Barrier,
    run_time: Option<Duration>,
    stop_on_error: bool,
) -> (Stats, Option<Error>) {
    let mut stats = Stats::default();
    let ready = async {
        let client = connect::get(&ctx.pool, &ctx.config).await?;
        if ctx.plan.nontransactional {
            client
                .batch_execute(crate::db::dialect::nontransactional_setting())
                .await
                .map_err(|e| Error::db("cannot set yb_disable_transactional_writes", e))?;
        }
        op.prepare(&client).await?;
        Ok::<_, Error>(client)
    }
    .await;
    // Everyone reaches the barrier, also after a failure, so that no
    // worker waits for one that will never come.
    barrier.wait().await;
    let client = match ready {
        Ok(c) => c,
        Err(e) => {
            ctx.stop.store(true, Ordering::Relaxed);
            return (stats, Some(e));
        }
    };
    let deadline = run_time.map(|d| Instant::now() + d);
    loop {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if !op.stage() {
            break;
        }
        let t0 = Instant::now();
        let res = op.execute(&client).await;
        let latency = t0.elapsed();
        match res {
            Ok(outcome) => stats.record(latency, outcome),
            Err(e) => {
                stats.record_error(&error_class(&e));
                if stop_on_error || client.is_closed() {
                    if stop_on_error {
                        ctx.stop.store(true, Ordering::Relaxed);
                    }
                    return (stats, Some(e));
                }
            }
        }
    }
    (stats, None)
}

fn error_class(e: &Error) -> String {
    match e {
        Error::Db { source, .. } => crate::error::error_class(source),
        _ => "client".to_string(),
    }
}
