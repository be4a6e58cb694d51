//! The life of one operation, from the runner's side: before it, a
//! warning when its tables' last load did not finish; then its set-up
//! (with the other clients' `prep:N` step), its workers, the server's
//! view of it and its consistency checks ([`run_operation`]); after its
//! summary, the load mark ([`mark_loaded`]); and at the end of the run
//! the row size (`--show-rowsize`).
//!
//! The app calls these steps in order and reports between them; the
//! database work of each is here.

use std::sync::atomic::Ordering;

use super::coordinator::{Sending, run_workers};
use super::setup_race::or_stop;
use super::{RunCtx, result};
use crate::db::connect;
use crate::db::schema;
use crate::db::server_watch::OpShape;
use crate::error::Result;
use crate::stats::OpResult;
use crate::workload::{AnyOperation, Workload};

/// How many rows `--show-rowsize` samples.
pub const ROWSIZE_SAMPLE: i64 = 10_000;

/// Runs one operation, the `position`th of `-o`, to its end and returns
/// what it measured, with its consistency checks once it ran. Failures of
/// the set-up (truncate, procedure), of the workers or of the checks are
/// reported in [`OpResult::failure`], with whatever was measured until
/// then.
pub async fn run_operation(ctx: &RunCtx, workload: &dyn Workload, position: usize) -> OpResult {
    let mut result = result::begin(ctx, workload);
    let done = set_up(ctx, workload, position).await;
    result.findings = workload.findings();
    if let Err(e) = done {
        result.failure = Some(e.to_string());
    } else {
        measure(ctx, workload, &mut result).await;
    }
    if !never_started(&result) && !result.interrupted {
        run_checks(ctx, workload, &mut result).await;
    }
    result
}

/// Whether an operation failed before its first unit was sent: its set-up
/// (the truncate, the procedure's install, copy-file's files) or every
/// worker's connection failed. It has nothing to summarise.
pub fn never_started(result: &OpResult) -> bool {
    result.failure.is_some()
        && result.total.ops == 0
        && result.total.failed() == 0
        && result.total.rows == 0
        && result.checks.is_empty()
        && result.findings.is_empty()
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
    let writes_tables = workload.spec().is_load() || !workload.facts().needs_tables;
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

/// The timed part: the server's view opened, the workers run, their
/// measurements merged into `result`, the server's view closed.
async fn measure(ctx: &RunCtx, workload: &dyn Workload, result: &mut OpResult) {
    // After the set-up, so that its statements stay out of the server's
    // counts of the operation.
    let watch = match &ctx.server {
        Some(w) => Some(
            w.begin(&ctx.pool, &ctx.conns, &workload.facts().stat_tables)
                .await,
        ),
        None => None,
    };
    let names = workload.facts().types.clone();
    let make = |t: usize| AnyOperation(workload.worker(t));
    let sending = Sending {
        retry: ctx.settings.retry_policy(
            workload.facts().retry_on,
            workload.facts().default_max_tries,
        ),
        pipeline: ctx.settings.pipeline_for(workload.facts().pipelines),
        queued: workload.facts().terminals.is_some(),
    };
    let per_interval = workload.interval_metrics();
    let outcome = run_workers(
        ctx,
        workload.spec(),
        &names,
        sending,
        result.table_rows,
        per_interval.clone(),
        make,
    )
    .await;
    let start = result::absorb(result, outcome, per_interval.as_ref());
    read_after_run(ctx, workload).await;
    result::conclude(result, ctx, workload);
    if let Some(w) = watch {
        let shape = OpShape {
            start,
            intervals: &result.intervals,
            opened: &result.total.conns.opened,
        };
        result.server = Some(w.end(&ctx.pool, &ctx.conns, shape).await);
    }
}

/// What the workload reads of the server after its units
/// ([`Workload::after_run`]), for its figures: skipped after an interrupt
/// and given up after [`AFTER_RUN_LIMIT`], since it is a figure beside
/// the run's, not worth a report held up by a server that stopped
/// answering.
async fn read_after_run(ctx: &RunCtx, workload: &dyn Workload) {
    if !workload.facts().reads_after_run || ctx.interrupted.load(Ordering::Relaxed) {
        return;
    }
    let read = async {
        let client = connect::get(&ctx.pool, &ctx.target).await?;
        workload.after_run(&client).await
    };
    match tokio::time::timeout(AFTER_RUN_LIMIT, read).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => crate::say!("warning: {e}"),
        Err(_) => crate::say!(
            "warning: the server did not answer the reading after the run within {} s: its figures are left out",
            AFTER_RUN_LIMIT.as_secs()
        ),
    }
}

/// How long [`read_after_run`] waits for the server.
const AFTER_RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The workload's consistency checks, after it ran, on a connection of
/// its own: a broken one, or one that cannot be made, fails the
/// operation.
async fn run_checks(ctx: &RunCtx, workload: &dyn Workload, result: &mut OpResult) {
    let checked = async {
        let client = connect::get(&ctx.pool, &ctx.target).await?;
        workload.checks(&client).await
    };
    match checked.await {
        Ok(checks) => {
            let broken: Vec<&str> = checks
                .iter()
                .filter(|c| !c.held)
                .map(|c| c.name.as_str())
                .collect();
            if !broken.is_empty() && result.failure.is_none() {
                result.failure = Some(format!("consistency check broken: {}", broken.join(", ")));
            }
            result.checks = checks;
        }
        Err(e) => {
            result
                .failure
                .get_or_insert(format!("the consistency checks could not run: {e}"));
        }
    }
}

/// Says on stderr when a query workload is about to run on tables whose
/// last load did not finish or holds fewer rows than it will look for.
/// Not knowing is no reason to stop the run. Nothing for a load.
/// A stop cancels the read (it waits behind a lock like any query).
pub async fn warn_about_load_state(ctx: &RunCtx, workload: &dyn Workload) {
    if workload.spec().is_load() {
        return;
    }
    let state = async {
        let client = or_stop(&ctx.stop, None, connect::get(&ctx.pool, &ctx.target)).await?;
        let on_stop = Some((&*ctx.target, &ctx.tls, client.cancel_token()));
        or_stop(&ctx.stop, on_stop, workload.check_loaded(&client)).await
    };
    if let Ok(Some(warning)) = state.await {
        crate::say!("warning: {warning}");
    }
}

/// After a load that ran to its end: marks the tables as completely
/// loaded. A failure only costs the mark, so it is a warning, not the end
/// of the run. A client of several knows only its share: the tables stay
/// marked as being loaded (a later run warns), rather than marked wrongly.
pub async fn mark_loaded(ctx: &RunCtx, workload: &dyn Workload, result: &OpResult) {
    let ran_to_the_end = result.succeeded() && !result.timed_out && !result.interrupted;
    if !workload.spec().is_load() || !ran_to_the_end || ctx.barrier.is_some() {
        return;
    }
    let marked = async {
        let client = connect::get(&ctx.pool, &ctx.target).await?;
        workload.finish_load(&client, result.total.rows).await
    };
    if let Err(e) = marked.await {
        crate::say!("warning: the table is loaded but could not be marked so: {e}");
    }
}

/// The average row size of the workload's table, over a sample of
/// [`ROWSIZE_SAMPLE`] rows: None when it is empty.
pub async fn row_size(ctx: &RunCtx, workload: &dyn Workload) -> Result<Option<(f64, i64)>> {
    let client = connect::get(&ctx.pool, &ctx.target).await?;
    schema::average_row_size(&client, &workload.facts().table, ROWSIZE_SAMPLE).await
}
