//! Running one operation: the single worker loop, and the coordinator that
//! starts the workers together and merges what they measured.
//!
//! The files follow the ideas: [`run_operation`] here builds an
//! operation's result from what its workers measured; `coordinator.rs`
//! starts the workers and ends them (grace, cancel, abandon);
//! `worker.rs` is the one unit loop every workload runs through;
//! `recover.rs` retries units and replaces lost connections; `ending.rs`
//! says why units are being ended early and wakes waiting workers at a
//! stop; `recorder.rs` holds what the workers of one OS thread measure;
//! [`session`] holds a worker's connection; [`intervals`] turns the
//! threads' pieces into per-interval figures; [`schedule`] paces units
//! under `--rate`; [`threads`] puts the workers on per-core runtimes.
//!
//! The workers of each per-core runtime share its statistics (per
//! transaction type), its scatter sample and its interval recorder, with
//! no lock, so that memory follows the cores and not the connections; the
//! coordinator merges the runtimes' statistics with `add`, and a collector
//! task turns interval pieces into figures (and progress lines) while the
//! operation runs. Most units take milliseconds,
//! so a stop or the end of `--time` simply waits for the unit in flight. A
//! procedure CALL or a server-side COPY is one statement per thread that
//! may run for minutes: for those ([`crate::workload::Operation::long_unit`])
//! the loop watches the stop flag and the deadline while the unit runs,
//! cancels it on the server when either comes, and counts what it had
//! committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;

use crate::db::connect;
use crate::db::nodes::{ConnSource, Endpoint};
use crate::db::server_watch::{OpShape, ServerWatch};
use crate::error::Result;
use crate::stats::{OpResult, RateTarget, Stats, Timeline, TypeResult, TypedStats};
use crate::workload::{AnyOperation, StatementStats, Workload};

pub mod barrier;
mod coordinator;
mod ending;
pub mod intervals;
pub mod latency_log;
pub mod progress;
mod recorder;
mod recover;
pub mod schedule;
pub mod session;
pub mod settings;
pub mod threads;
mod worker;

pub use barrier::StartBarrier;
pub use settings::{OnError, RunSettings};

use coordinator::run_workers;
use latency_log::LogSink;
use recover::backoff;

/// How long workers may take to finish their unit in flight once told to
/// stop; after that the statements still running are cancelled on the
/// server and the workers end with what they measured.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// What a worker's connection is running, for the coordinator to cancel
/// after a stop. Set by the worker's [`Session`] whenever its connection
/// changes (not per unit).
#[derive(Default)]
pub struct InFlightSlot {
    /// The host index and how to cancel on the connection; None while the
    /// worker has no connection, or must not be interrupted (a long unit
    /// counting what it committed).
    pub conn: Option<(usize, crate::db::nodes::Canceller)>,
    /// The coordinator sent a cancel: a 57014 that follows is its doing,
    /// not a statement timeout.
    pub cancel_sent: bool,
}

/// A worker's [`InFlightSlot`], shared with the coordinator.
pub type InFlight = Arc<std::sync::Mutex<InFlightSlot>>;

/// What the operations of a run share.
#[derive(Clone)]
pub struct RunCtx {
    pub settings: Arc<RunSettings>,
    /// The tool's own connections (set-up, counts): to the whole host
    /// list, libpq's failover.
    pub pool: Pool,
    /// What `pool` connects to: named in its errors, its timeouts.
    pub target: Arc<Endpoint>,
    /// Set to make every worker stop after its current unit (an error in a
    /// load, or an interrupt).
    pub stop: Arc<AtomicBool>,
    /// Set (with `stop`) by Ctrl-C or SIGTERM.
    pub interrupted: Arc<AtomicBool>,
    pub latency_log: Option<LogSink>,
    /// Where the workers' connections come from (one pool per host when
    /// load balancing; see [`crate::db::nodes`]).
    pub conns: Arc<ConnSource>,
    /// The server's side of each operation, unless --no-server-stats
    /// (see [`crate::db::server_watch`]).
    pub server: Option<Arc<ServerWatch>>,
    /// `--clients`: where the clients meet around each operation's
    /// set-up and before its first unit, to start at one instant.
    pub barrier: Option<Arc<dyn StartBarrier>>,
}

/// Runs one operation, the `position`th of `-o`, to its end and returns
/// what it measured. Failures of the set-up (truncate, procedure) or of
/// the workers are reported in [`OpResult::failure`], with whatever was
/// measured until then.
pub async fn run_operation(ctx: &RunCtx, workload: &dyn Workload, position: usize) -> OpResult {
    let spec = workload.spec();
    let s = &ctx.settings;
    let mut result = OpResult::new(spec.kind(), s.threads);
    result.batch_text = workload.batch_text();
    result.table = workload.table().as_str().to_string();
    result.workload = workload.describe();
    result.measured = workload.has_units();
    result.missing_label = workload.missing_label();
    // A load's own count of what it writes (TPC-C's warehouses), else -r.
    result.table_rows = match workload.load_rows() {
        Some(rows) if spec.is_load() => rows,
        _ => s.rows,
    };
    result.nontransactional = s.nontransactional;
    result.rate = s
        .rate
        .filter(|_| spec.paced)
        .map(|r| RateTarget { per_second: r });
    // As --rate: one statement per thread is not a unit to count late.
    result.latency_limit = s.latency_limit.filter(|_| spec.paced);
    if !spec.is_load() {
        result.warmup = s.warmup;
    }
    result.hosts = ctx.conns.labels();
    let names = workload.types();
    let mut merged = TypedStats::new(names.len());
    result.types = names
        .iter()
        .map(|&name| TypeResult {
            name,
            stats: Stats::default(),
            intervals: Vec::new(),
        })
        .collect();
    let done = set_up(ctx, workload, position).await;
    result.findings = workload.findings();
    if let Err(e) = done {
        result.failure = Some(e.to_string());
        return result;
    }
    // After the set-up, so that its statements stay out of the server's
    // counts of the operation.
    let watch = match &ctx.server {
        Some(w) => Some(
            w.begin(&ctx.pool, &ctx.conns, &workload.stat_tables())
                .await,
        ),
        None => None,
    };
    let make = |t: usize| AnyOperation(workload.worker(t));
    let retry = s.retry_policy(workload.retry_on(), workload.default_max_tries());
    let per_interval = workload.interval_metrics();
    let outcome = run_workers(
        ctx,
        spec,
        &names,
        retry,
        result.table_rows,
        per_interval.clone(),
        make,
    )
    .await;
    result.wallclock = outcome.wallclock;
    if let Some(ran) = outcome.warmup_cut {
        result.warmup = Some(ran);
        result.warmup_cut = true;
    }
    let lean = outcome.workers.iter().filter(|w| w.lean).count();
    result.driver = driver_text(lean, outcome.workers.len());
    for (t, w) in outcome.workers.into_iter().enumerate() {
        result.thread_rows[t] = w.rows;
        merge_statements(&mut result.statements, w.statements);
        result.timed_out |= w.timed_out;
    }
    result.timeline = Timeline::new(result.types.len());
    for th in outcome.threads {
        merged.add(&th.stats);
        result.scatter.push(th.scatter);
        result.timeline.add(&th.timeline);
    }
    result.total = merged.total();
    // A load that reached the end of its share as --time ran out did not
    // stop short.
    result.timed_out &= result.total.rows < result.table_rows;
    for (i, (ty, stats)) in result.types.iter_mut().zip(merged.types).enumerate() {
        ty.stats = stats;
        ty.intervals = outcome
            .intervals
            .iter()
            .filter_map(|f| f.types.get(i).cloned())
            .collect();
    }
    if let Some(f) = &per_interval {
        for set in &outcome.intervals {
            for m in f(&set.types) {
                result
                    .interval_metrics
                    .entry(m.key)
                    .or_default()
                    .push(m.value);
            }
        }
    }
    result.intervals = outcome.intervals.into_iter().map(|f| f.total).collect();
    let counts: Vec<crate::workload::TypeFigures> = result
        .types
        .iter()
        .map(|t| crate::workload::TypeFigures {
            units: t.stats.ops,
            missing: t.stats.missing,
            p90: Duration::from_nanos(t.stats.latency.value_at_quantile(0.90)),
        })
        .collect();
    result.metrics = workload.metrics(&counts, result.wallclock);
    // After the run: a script's :scale is known once its set-up read it.
    result.scale = workload
        .scale()
        .unwrap_or_else(|| format!("{} rows", result.table_rows));
    result.interrupted = ctx.interrupted.load(Ordering::Relaxed);
    result.failure = outcome.failure;
    // Retried until the end without one success (a conflict that never
    // resolves): nothing was measured, and that is a failure, not a run.
    let t = &result.total;
    if result.failure.is_none() && t.ops == 0 && t.failed() == 0 && t.retries > 0 {
        result.failure = Some(format!(
            "no {} succeeded: {} retries until the end of the run (a conflict that never resolves?)",
            spec.unit, t.retries
        ));
    }
    if let Some(w) = watch {
        let shape = OpShape {
            start: outcome.start,
            intervals: &result.intervals,
            opened: &result.total.conns.opened,
        };
        result.server = Some(w.end(&ctx.pool, &ctx.conns, shape).await);
    }
    result
}

/// Which driver ran an operation's units, with `lean` of `workers` on
/// the lean one.
fn driver_text(lean: usize, workers: usize) -> String {
    match lean {
        0 => "tokio-postgres".to_string(),
        n if n == workers => "lean".to_string(),
        n => format!("lean ({n} of {workers} workers; tokio-postgres for the others)"),
    }
}

/// Adds a worker's per-statement figures to the operation's, by name, in
/// the order they were first seen.
fn merge_statements(all: &mut Vec<StatementStats>, worker: Vec<StatementStats>) {
    for st in worker {
        match all.iter_mut().find(|a| a.name == st.name) {
            Some(a) => a.add(&st),
            None => all.push(st),
        }
    }
}

/// The workload's own set-up (a load empties its tables), on one
/// connection before the workers start.
///
/// With several clients, every client meets the others first (step
/// `prep:N`), so that nobody reads the tables (a mix's first free key)
/// while another still writes them. A load empties its tables and a
/// clean-up drops them: the leader's part alone, after which it lets the
/// others past. A mix's set-up only reads, and every client needs it.
async fn set_up(ctx: &RunCtx, workload: &dyn Workload, position: usize) -> Result<()> {
    let client = connect::get(&ctx.pool, &ctx.target).await?;
    let Some(barrier) = &ctx.barrier else {
        return workload.set_up(&client).await;
    };
    let step = format!("prep:{position}");
    barrier.meet(&step).await?;
    let writes_tables = workload.spec().is_load() || !workload.needs_tables();
    if barrier.leads() {
        let done = workload.set_up(&client).await;
        if let Err(e) = &done {
            barrier.fail(&e.to_string()).await;
        }
        done?;
        barrier.release(&step).await
    } else if writes_tables {
        Ok(())
    } else {
        workload.set_up(&client).await
    }
}

/// Attempts at counting what a long unit committed on a spare connection
/// after its own was lost, half a second apart, within [`COUNT_BUDGET`].
const COUNT_TRIES: u32 = 20;
const COUNT_BUDGET: Duration = Duration::from_secs(10);
