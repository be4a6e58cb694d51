//! `--find-max`: the steps of the search for the highest target rate (or
//! number of workers) at which the last operation of `-o` meets `--slo`.
//!
//! Each step is the operation run again by the runner, with the step's
//! target for `--rate` (or `-t`), `--warmup` as its unmeasured settle and
//! `--time` as its measured window, so that a step is measured exactly as
//! a run is: latency from the intended start, `--latency-limit` skipping,
//! progress lines. A step ends early when a criterion can no longer be
//! met (`--slo-abort`'s rule, always on for steps). A step whose figures
//! straddle a criterion within the run-to-run noise ([`noise`]) is run
//! again, up to `--find-max-repeats` times, and decided on all its runs
//! together. What comes next is the statistics layer's [`Search`]; the
//! words and pictures are the report's.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::runner::{self, RunCtx};
use crate::stats::OpResult;
use crate::stats::find_max::{FindMaxRecord, Next, Over, Search, SearchPlan, StepRecord};
use crate::stats::record::{OpRecord, Rates};
use crate::stats::slo::{Slo, SloRecord, judge_ops, noise};
use crate::stats::{Percentiles, nanos};
use crate::workload::Workload;

/// What a search ends with: its record, and the result of a step that
/// failed (set-up, connections), which ends the run as a failure.
pub(super) struct Found {
    pub record: FindMaxRecord,
    pub failed: Option<OpResult>,
    /// The verdict the run is judged by: the confirmed answer's, or the
    /// last step's when nothing held.
    pub slo: Option<SloRecord>,
}

/// The criteria that are about the searched operation (or one of its
/// types): a criterion scoped to another operation of `-o` judges that.
fn criteria_for(slo: &Slo, workload: &dyn Workload) -> Slo {
    let name = workload.spec().name;
    let types = &workload.facts().types;
    Slo {
        criteria: slo
            .criteria
            .iter()
            .filter(|c| {
                c.scope
                    .as_deref()
                    .is_none_or(|s| s == name || types.contains(&s))
            })
            .cloned()
            .collect(),
    }
}

/// Runs the search over `workload`, the `position`th of `-o`.
pub(super) async fn search(
    ctx: &RunCtx,
    interrupted: &std::sync::atomic::AtomicBool,
    workload: &dyn Workload,
    position: usize,
    plan: SearchPlan,
    clients: usize,
) -> Found {
    let began = Instant::now();
    let slo = ctx
        .settings
        .slo
        .as_deref()
        .map(|s| criteria_for(s, workload))
        .unwrap_or(Slo {
            criteria: Vec::new(),
        });
    let mut search = Search::new(plan);
    let mut steps: Vec<StepRecord> = Vec::new();
    let mut failed = None;
    let mut last_verdict = None;
    let mut answer_verdict = None;
    loop {
        let next = search.next();
        let target = match next {
            Next::Step(t) | Next::Confirm(t) => t,
            Next::Done => break,
        };
        let mut merged: Option<OpRecord> = None;
        let mut runs = 0;
        let (met, verdict) = loop {
            search.ran();
            runs += 1;
            let (result, stopped) =
                run_step(ctx, workload, position, plan.over, target, clients).await;
            if result.failure.is_some() || interrupted.load(Ordering::Relaxed) {
                failed = Some(result);
                break (false, None);
            }
            let rec = OpRecord::of(&result);
            let acc = match merged.as_mut() {
                Some(m) => {
                    add_run(m, &rec);
                    m
                }
                None => merged.insert(rec),
            };
            let verdict = judge_ops(&slo, std::slice::from_ref(acc), stopped.clone());
            let within = within_noise(&slo, acc, &verdict);
            let step = step_record(
                steps.len() as u32 + 1,
                target,
                acc,
                &verdict,
                within,
                stopped,
            );
            let step = StepRecord {
                repeat: runs > 1,
                confirm: matches!(next, Next::Confirm(_)),
                ..step
            };
            say_step(&step, plan.over, &slo);
            steps.push(step);
            let again = within && stopped_none(&verdict) && runs <= plan.repeats as usize;
            if !again || search.steps >= plan.max_steps {
                break (verdict.met, Some(verdict));
            }
        };
        if failed.is_some() {
            break;
        }
        search.record(next, met);
        if met && matches!(next, Next::Confirm(_)) {
            answer_verdict = verdict.clone();
        }
        last_verdict = verdict;
    }
    let answer = search.answer();
    let record = FindMaxRecord {
        slo: slo.to_string(),
        over: plan.over,
        operation: workload.spec().name.to_string(),
        units: workload.spec().units.to_string(),
        resolution: plan.resolution,
        settle_s: ctx.settings.warmup.map_or(0.0, |d| d.as_secs_f64()),
        window_s: ctx.settings.run_time.as_secs_f64(),
        answer,
        lowest_miss: search.missed(),
        steps,
        took_s: began.elapsed().as_secs_f64(),
        clients,
    };
    let slo_record = match (answer, answer_verdict) {
        (Some(_), Some(v)) => Some(v),
        _ => last_verdict.map(|v| SloRecord { met: false, ..v }),
    };
    Found {
        record,
        failed,
        slo: slo_record,
    }
}

/// Whether no criterion stopped the step early: a step stopped by a
/// certain miss is decided, whatever the noise.
fn stopped_none(v: &SloRecord) -> bool {
    v.aborted.is_none()
}

/// One run of a step: the operation at `target`, ended early when a
/// criterion can no longer be met; the reason, if so.
async fn run_step(
    ctx: &RunCtx,
    workload: &dyn Workload,
    position: usize,
    over: Over,
    target: f64,
    clients: usize,
) -> (OpResult, Option<String>) {
    let mut settings = (*ctx.settings).clone();
    match over {
        // The target is the whole run's; each client takes its share.
        Over::Rate => settings.rate = Some(target / clients.max(1) as f64),
        Over::Threads => settings.threads = target.max(1.0) as usize,
    }
    settings.slo_abort = true;
    let stopped = Arc::default();
    let step_ctx = RunCtx {
        settings: Arc::new(settings),
        slo_stopped: Arc::clone(&stopped),
        ..ctx.clone()
    };
    let result = runner::run_operation(&step_ctx, workload, position).await;
    let why = stopped.lock().ok().and_then(|g| g.clone());
    // A step stopped by its own criteria leaves the run going; a stop
    // of Ctrl-C is the interrupt's, and stays.
    if why.is_some() && !result.interrupted {
        ctx.stop.store(false, Ordering::Relaxed);
    }
    (result, why)
}

/// Adds another run of the same step: the figures of both, over both
/// windows.
fn add_run(acc: &mut OpRecord, more: &OpRecord) {
    acc.figures.add(&more.figures);
    acc.wallclock_s += more.wallclock_s;
    acc.rates = Rates::of(&acc.figures, acc.wallclock());
    let wall = acc.wallclock();
    for (t, u) in acc.types.iter_mut().zip(&more.types) {
        t.figures.add(&u.figures);
        t.intervals.extend(u.intervals.iter().cloned());
        t.rates = Rates::of(&t.figures, wall);
    }
    acc.intervals.extend(more.intervals.iter().cloned());
}

/// Whether a criterion's measured value is within twice its standard
/// error of its bound: the step could have gone either way.
fn within_noise(slo: &Slo, op: &OpRecord, verdict: &SloRecord) -> bool {
    slo.criteria.iter().any(|c| {
        let measured = verdict
            .verdicts
            .iter()
            .find(|v| v.criterion == c.text)
            .and_then(|v| v.measured);
        match (measured, noise(c, op)) {
            (Some(m), Some(se)) => (m - c.bound).abs() < 2.0 * se,
            _ => false,
        }
    })
}

/// The record of a step from its (merged) runs.
fn step_record(
    step: u32,
    target: f64,
    op: &OpRecord,
    verdict: &SloRecord,
    within_noise: bool,
    stopped: Option<String>,
) -> StepRecord {
    let p = Percentiles::of(&op.figures.latency);
    StepRecord {
        step,
        target,
        repeat: false,
        confirm: false,
        achieved_per_s: op.rates.units_per_s,
        units: op.figures.ops,
        errors: op.figures.failed(),
        skipped: op.figures.skipped,
        p50_ns: p.p50,
        p99_ns: p.p99,
        p999_ns: p.p999,
        max_ns: p.max,
        seconds: op.wallclock_s,
        met: verdict.met,
        within_noise,
        stopped,
        verdicts: verdict.verdicts.clone(),
    }
}

/// The step's line on stderr, as it ends.
fn say_step(s: &StepRecord, over: Over, slo: &Slo) {
    let ms = |ns: u64| nanos(std::time::Duration::from_nanos(ns)) as f64 / 1e6;
    let what = if s.met { "held" } else { "missed" };
    let mut note = String::new();
    if s.confirm {
        note.push_str(", confirmation");
    }
    if s.repeat {
        note.push_str(", repeated within noise");
    }
    if let Some(why) = &s.stopped {
        note.push_str(&format!(", ended early: {why}"));
    }
    crate::say!(
        ">> find-max step {}: target {}{}: achieved {:.1}/s, p50 {:.3} p99 {:.3} p99.9 {:.3} ms, {} errors: {slo} {what}{note}",
        s.step,
        s.target,
        over.unit(),
        s.achieved_per_s,
        ms(s.p50_ns),
        ms(s.p99_ns),
        ms(s.p999_ns),
        s.errors,
    );
}
