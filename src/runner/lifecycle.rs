//! The life of one operation, from the runner's side: before it, a
//! warning when its tables' last load did not finish; then its set-up
//! (with the other clients' `prep:N` step, `prep:N.K` for step K of a
//! search), its workers, the server's
//! view of it and its consistency checks ([`run_operation`]); after its
//! summary, the load mark ([`mark_loaded`]: with several clients, once
//! every client's share is in); and at the end of the run
//! the row size (`--show-rowsize`).
//!
//! The app calls these steps in order and reports between them; the
//! database work of each is here.

use std::sync::atomic::Ordering;

use super::barrier::Notes;
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
        // Units that were tried until the end and never succeeded (see
        // `result.rs`): the operation ran, and failed.
        && result.total.left_out_retries == 0
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
/// others past. A mix's set-up only reads, and every client needs it; so
/// does a script's (the builtins' `:scale`, read from pgbench_branches:
/// a follower that skipped it drew from `-s`'s range).
async fn set_up(ctx: &RunCtx, workload: &dyn Workload, position: usize) -> Result<()> {
    let client = connect::get(&ctx.pool, &ctx.target).await?;
    let Some(barrier) = &ctx.barrier else {
        return workload.set_up(&client).await;
    };
    let step = match ctx.search_step {
        Some(k) => format!("prep:{position}.{k}"),
        None => format!("prep:{position}"),
    };
    barrier.meet(&step).await?;
    let writes_tables = workload.spec().is_load() || workload.spec().drops;
    if barrier.leads() {
        let done = workload.set_up(&client).await;
        if let Err(e) = &done {
            barrier.fail(&e.to_string()).await;
        }
        done?;
        barrier.release(&step, None).await
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
        pipeline_sync: ctx.settings.pipeline_sync_for(workload.facts().pipelines),
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
    match crate::rt::time::timeout(AFTER_RUN_LIMIT, read).await {
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
/// of the run.
///
/// With several clients each knows only its share: every client meets the
/// others after the load (step `done:N`, N its place in `-o`), saying
/// whether its share finished and how many rows it wrote, and the leader
/// marks the tables loaded with the whole count once every share is in.
/// A share that did not finish leaves them marked as being loaded (a later
/// run warns). A share stopped by `--time` lets the run go on, as for one
/// client; a share that failed or was interrupted calls the run off for
/// every client: returns why, so that this client too stops as after a
/// load that failed. None otherwise.
pub async fn mark_loaded(
    ctx: &RunCtx,
    workload: &dyn Workload,
    result: &OpResult,
    position: usize,
) -> Option<String> {
    if !workload.spec().is_load() {
        return None;
    }
    let share = Share::of(result);
    let Some(barrier) = &ctx.barrier else {
        if share == Share::Finished(result.total.rows) {
            say_unmarked(finish(ctx, workload, result.total.rows).await);
        }
        return None;
    };
    let step = format!("done:{position}");
    let notes = match barrier.gather(&step, &share.note()).await {
        Ok(notes) => notes,
        Err(e) => {
            let why = e.to_string();
            if !ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
                crate::say!("warning: the table is not marked loaded: {why}");
            }
            return Some(why);
        }
    };
    if !barrier.leads() {
        return None;
    }
    let whole = whole_load(&share, &notes);
    let marked = match whole {
        Whole::Rows(rows) => finish(ctx, workload, rows).await,
        Whole::Cut(ref why) => {
            crate::say!("warning: the table is not marked loaded: {why}");
            Ok(())
        }
        Whole::Failed(why) => {
            crate::say!("warning: the table is not marked loaded: {why}");
            let off = format!("{} did not load the table: {why}", workload.spec());
            barrier.fail(&off).await;
            return Some(why);
        }
    };
    let released = barrier.release(&step, None).await;
    say_unmarked(marked);
    released.err().map(|e| e.to_string())
}

async fn finish(ctx: &RunCtx, workload: &dyn Workload, rows: u64) -> Result<()> {
    let client = connect::get(&ctx.pool, &ctx.target).await?;
    workload.finish_load(&client, rows).await
}

fn say_unmarked(marked: Result<()>) {
    if let Err(e) = marked {
        crate::say!("warning: the table is loaded but could not be marked so: {e}");
    }
}

/// How one client's share of a load went, as it tells the leader at
/// `done:N`.
#[derive(Clone, Debug, PartialEq)]
enum Share {
    /// Ran to its end: this many rows.
    Finished(u64),
    /// Stopped by `--time`.
    Cut,
    /// Failed or interrupted.
    Failed,
}

impl Share {
    fn of(result: &OpResult) -> Share {
        if !result.succeeded() || result.interrupted {
            Share::Failed
        } else if result.timed_out {
            Share::Cut
        } else {
            Share::Finished(result.total.rows)
        }
    }

    fn note(&self) -> String {
        match self {
            Share::Finished(rows) => format!("finished {rows}"),
            Share::Cut => "cut".to_string(),
            Share::Failed => "failed".to_string(),
        }
    }

    fn read(note: Option<&str>) -> Share {
        match note {
            Some("cut") => Share::Cut,
            Some(n) => n
                .strip_prefix("finished ")
                .and_then(|r| r.parse().ok())
                .map_or(Share::Failed, Share::Finished),
            None => Share::Failed,
        }
    }
}

/// What the shares of every client make of the load.
#[derive(Debug, PartialEq)]
enum Whole {
    /// Every share finished: the rows of all.
    Rows(u64),
    /// Some share was stopped by `--time`: which.
    Cut(String),
    /// Some share failed: which.
    Failed(String),
}

/// The leader's share (`own`) and the others' notes together.
fn whole_load(own: &Share, notes: &Notes) -> Whole {
    let all = std::iter::once((0, own.clone()))
        .chain(notes.iter().map(|(c, n)| (*c, Share::read(n.as_deref()))));
    let (mut rows, mut cut) = (0, Vec::new());
    for (client, share) in all {
        match share {
            Share::Finished(n) => rows += n,
            Share::Cut => cut.push(client.to_string()),
            Share::Failed => {
                return Whole::Failed(format!("client {client}'s share did not finish"));
            }
        }
    }
    if cut.is_empty() {
        Whole::Rows(rows)
    } else {
        Whole::Cut(format!(
            "--time stopped the share of client(s) {}",
            cut.join(", ")
        ))
    }
}

/// The average row size of the workload's table, over a sample of
/// [`ROWSIZE_SAMPLE`] rows: None when it is empty.
pub async fn row_size(ctx: &RunCtx, workload: &dyn Workload) -> Result<Option<(f64, i64)>> {
    let client = connect::get(&ctx.pool, &ctx.target).await?;
    schema::average_row_size(&client, &workload.facts().table, ROWSIZE_SAMPLE).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_load_is_every_share_once_all_finished() {
        let note = |s: Share| Some(s.note());
        let notes: Notes = vec![
            (1, note(Share::Finished(3000))),
            (2, note(Share::Finished(6000))),
        ];
        assert_eq!(
            whole_load(&Share::Finished(1000), &notes),
            Whole::Rows(10_000)
        );
        assert_eq!(
            whole_load(&Share::Failed, &notes),
            Whole::Failed("client 0's share did not finish".to_string())
        );
        let cut: Notes = vec![(1, note(Share::Cut)), (2, note(Share::Finished(10)))];
        assert_eq!(
            whole_load(&Share::Finished(1), &cut),
            Whole::Cut("--time stopped the share of client(s) 1".to_string())
        );
        let failed: Notes = vec![(1, note(Share::Cut)), (2, note(Share::Failed))];
        assert_eq!(
            whole_load(&Share::Finished(1), &failed),
            Whole::Failed("client 2's share did not finish".to_string())
        );
        // A note that cannot be read is not taken for a finished share.
        assert!(matches!(
            whole_load(&Share::Finished(1), &vec![(1, None)]),
            Whole::Failed(_)
        ));
        assert_eq!(Share::read(Some("finished x")), Share::Failed);
    }
}
