//! `--find-max`: the steps of the search for the highest target rate (or
//! number of workers) at which the last operation of `-o` meets `--slo`.
//!
//! Each step is the operation run again by the runner, with the step's
//! target for `--rate` (or `-t`), `--warmup` as its unmeasured settle and
//! `--time` as its measured window, so that a step is measured exactly as
//! a run is: latency from the intended start, `--latency-limit` skipping,
//! progress lines. A step of one client ends early when a criterion can
//! no longer be met (`--slo-abort`'s rule, always on for its steps). A
//! step whose figures straddle a criterion within the run-to-run noise
//! ([`noise`]) is run again, up to `--find-max-repeats` times, and decided
//! on all its runs together. What comes next is the statistics layer's
//! [`Search`] ([`Judge`] keeps it with the steps so far); the words and
//! pictures are the report's.
//!
//! With several clients (`--clients`) every step is a step of the whole
//! run, decided on every client's figures together. Client 0 leads: at
//! meeting `find-max:0` of the barrier it tells every client the first
//! target; each client runs the step with its share of the target (in
//! proportion to its threads, as `--rate` is shared), its start at the
//! barrier's common instant; at meeting `find-max:K` after step K each
//! other client hands over its record of the step (the HDR histograms
//! compressed, as the JSON keeps them), and client 0 merges them with its
//! own by the rule of `merge`, judges the merged step and releases the
//! meeting with its decision ([`Decision`]): the step as judged, the next
//! target, or the search's end and answer, which every client then prints
//! and writes alike. No client ends a step early on its own figures: the
//! decision is the merged figures'. A client whose step fails, or that
//! is interrupted, ends the search for all of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::runner::{self, RunCtx, StartBarrier};
use crate::stats::OpResult;
use crate::stats::find_max::{FindMaxRecord, Next, Over, Search, SearchPlan, StepRecord, share};
use crate::stats::merge::merge_operation;
use crate::stats::record::{OpRecord, Rates};
use crate::stats::slo::{Slo, SloRecord, judge_ops, noise};
use crate::stats::{Percentiles, nanos};
use crate::workload::Workload;

/// How a search ends.
pub(super) enum Found {
    /// The search ran to its end: its record, and the verdict the run is
    /// judged by (the confirmed answer's, or the last step's when
    /// nothing held).
    Ended {
        record: Box<FindMaxRecord>,
        slo: Option<SloRecord>,
    },
    /// A step failed (set-up, connections, another client's step) or the
    /// run was interrupted: the run ends as a failure with this result.
    Failed(Box<OpResult>),
}

/// A search of several clients: where they meet, and who is who.
pub(super) struct Team<'a> {
    pub barrier: &'a dyn StartBarrier,
    /// This client's index (0 leads).
    pub index: usize,
    /// Every client's threads in index order: each takes its share of a
    /// step's target in proportion.
    pub threads: &'a [usize],
}

/// What client 0 tells the others at a meeting of the search.
#[derive(Debug, Serialize, Deserialize)]
struct Decision {
    /// The step just judged, on every client's figures.
    judged: Option<StepRecord>,
    /// The next step; None when the search is over.
    run: Option<Planned>,
    /// The search's end: its record and verdict, every client's alike.
    end: Option<(FindMaxRecord, Option<SloRecord>)>,
}

/// A step to run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Planned {
    /// The whole run's target (each client runs its share).
    target: f64,
}

/// The name of meeting `k` of a search: 0 before the first step, K after
/// step K.
fn meeting(k: u32) -> String {
    format!("find-max:{k}")
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

/// Runs the search over `workload`, the `position`th of `-o`: alone, as
/// the leader of a team, or as one of its other clients.
pub(super) async fn search(
    ctx: &RunCtx,
    interrupted: &AtomicBool,
    workload: &dyn Workload,
    position: usize,
    plan: SearchPlan,
    team: Option<Team<'_>>,
) -> Found {
    let slo = ctx
        .settings
        .slo
        .as_deref()
        .map(|s| criteria_for(s, workload))
        .unwrap_or(Slo {
            criteria: Vec::new(),
        });
    let step = Stepper {
        ctx,
        workload,
        position,
        over: plan.over,
        team: team.as_ref(),
    };
    match &team {
        Some(t) if !t.barrier.leads() => follow(&step, t, &slo).await,
        _ => lead(&step, interrupted, plan, slo).await,
    }
}

/// What running a step needs: the operation, and the team if any.
struct Stepper<'a> {
    ctx: &'a RunCtx,
    workload: &'a dyn Workload,
    position: usize,
    over: Over,
    team: Option<&'a Team<'a>>,
}

impl Stepper<'_> {
    /// One run of step `k`: the operation at this client's share of
    /// `target`; alone, ended early when a criterion can no longer be
    /// met, and the reason if so.
    async fn run(&self, target: f64, k: u32) -> (OpResult, Option<String>) {
        let mut settings = (*self.ctx.settings).clone();
        let mine = match self.team {
            Some(t) => share(self.over, target, t.threads, t.index),
            None => target,
        };
        match self.over {
            Over::Rate => settings.rate = Some(mine),
            Over::Threads => settings.threads = mine.max(1.0) as usize,
        }
        // A team's step is judged on every client's figures, once all are
        // in: none ends it on its own.
        settings.slo_abort = self.team.is_none();
        let stopped = Arc::default();
        let step_ctx = RunCtx {
            settings: Arc::new(settings),
            slo_stopped: Arc::clone(&stopped),
            search_step: Some(k),
            ..self.ctx.clone()
        };
        let result = runner::run_operation(&step_ctx, self.workload, self.position).await;
        let why = stopped.lock().ok().and_then(|g| g.clone());
        // A step stopped by its own criteria leaves the run going; a stop
        // of Ctrl-C is the interrupt's, and stays.
        if why.is_some() && !result.interrupted {
            self.ctx.stop.store(false, Ordering::Relaxed);
        }
        (result, why)
    }

    /// The search ended by a failure: `result` (or an empty one), its
    /// failure `why` unless it has its own.
    fn failed(&self, result: Option<OpResult>, why: String) -> Found {
        let mut r = result.unwrap_or_else(|| {
            OpResult::new(self.workload.spec().kind(), self.ctx.settings.threads)
        });
        if !r.interrupted {
            r.failure.get_or_insert(why);
        }
        Found::Failed(Box::new(r))
    }

    /// The record of the search as `judge` ends it.
    fn end(&self, judge: &Judge, began: Instant) -> (FindMaxRecord, Option<SloRecord>) {
        let plan = judge.search.plan;
        let answer = judge.search.answer();
        let s = &self.ctx.settings;
        let record = FindMaxRecord {
            slo: judge.slo.to_string(),
            over: plan.over,
            operation: self.workload.spec().name.to_string(),
            units: self.workload.spec().units.to_string(),
            resolution: plan.resolution,
            settle_s: s.warmup.map_or(0.0, |d| d.as_secs_f64()),
            window_s: s.run_time.as_secs_f64(),
            answer,
            lowest_miss: judge.search.missed(),
            steps: judge.steps.clone(),
            took_s: began.elapsed().as_secs_f64(),
            clients: self.team.map_or(1, |t| t.threads.len()),
        };
        let verdict = match (answer, &judge.answer_verdict) {
            (Some(_), Some(v)) => Some(v.clone()),
            _ => judge
                .last_verdict
                .clone()
                .map(|v| SloRecord { met: false, ..v }),
        };
        (record, verdict)
    }
}

/// The search alone, or as the team's leader: runs each step, merges the
/// team's figures of it, judges, and tells the team what comes next.
async fn lead(step: &Stepper<'_>, interrupted: &AtomicBool, plan: SearchPlan, slo: Slo) -> Found {
    let began = Instant::now();
    let team = step.team;
    let plan = match team {
        // Every client's -t together is the first number of workers.
        Some(t) if plan.over == Over::Threads => SearchPlan {
            start: t.threads.iter().sum::<usize>() as f64,
            ..plan
        },
        _ => plan,
    };
    let mut judge = Judge::new(plan, slo);
    let mut planned = judge.next_run();
    if let Some(t) = team {
        let end = planned.is_none().then(|| step.end(&judge, began));
        let first = Decision {
            judged: None,
            run: planned,
            end,
        };
        let told = match t.barrier.gather(&meeting(0), "").await {
            Ok(_) => tell(t, 0, &first).await,
            Err(e) => Err(e.to_string()),
        };
        if let Err(why) = told {
            return step.failed(None, why);
        }
    }
    let mut k = 0;
    while let Some(run) = planned {
        k += 1;
        let (result, stopped) = step.run(run.target, k).await;
        let stop = result.interrupted || interrupted.load(Ordering::Relaxed);
        let figures = match team {
            None if stop || result.failure.is_some() => return Found::Failed(Box::new(result)),
            None => OpRecord::of(&result),
            Some(t) if stop => {
                t.barrier.fail("client 0 was interrupted").await;
                return Found::Failed(Box::new(result));
            }
            Some(t) => match merged(t, k, &result).await {
                Ok(m) => m,
                Err(why) => {
                    t.barrier.fail(&why).await;
                    return step.failed(Some(result), why);
                }
            },
        };
        let Some(judged) = judge.judge(figures, stopped) else {
            break;
        };
        say_step(&judged, plan.over, &judge.slo);
        planned = judge.next_run();
        if let Some(t) = team {
            let end = planned.is_none().then(|| step.end(&judge, began));
            let decision = Decision {
                judged: Some(judged),
                run: planned,
                end,
            };
            if let Err(why) = tell(t, k, &decision).await {
                return step.failed(Some(result), why);
            }
            if let Some((record, slo)) = decision.end {
                return Found::Ended {
                    record: Box::new(record),
                    slo,
                };
            }
        }
    }
    let (record, slo) = step.end(&judge, began);
    Found::Ended {
        record: Box::new(record),
        slo,
    }
}

/// Another client of the team: runs each step client 0 names and hands
/// it its figures, until client 0 ends the search.
async fn follow(step: &Stepper<'_>, t: &Team<'_>, slo: &Slo) -> Found {
    let mut note = String::new();
    let mut last: Option<OpResult> = None;
    let mut k = 0;
    loop {
        let decision = match hear(t, k, &note).await {
            Ok(d) => d,
            Err(why) => return step.failed(last, why),
        };
        if let Some(s) = &decision.judged {
            say_step(s, step.over, slo);
        }
        if let Some((record, slo)) = decision.end {
            return Found::Ended {
                record: Box::new(record),
                slo,
            };
        }
        let Some(run) = decision.run else {
            return step.failed(last, "client 0 ended the search without its record".into());
        };
        k += 1;
        let (result, _) = step.run(run.target, k).await;
        // An unreadable note is refused by client 0, for everyone.
        note = serde_json::to_string(&OpRecord::of(&result)).unwrap_or_default();
        last = Some(result);
    }
}

/// The leader at meeting `k`: every other client's record of step `k`,
/// merged with its own by the rule of `merge`; why not, when a client's
/// step failed or its figures cannot be read.
async fn merged(t: &Team<'_>, k: u32, result: &OpResult) -> Result<OpRecord, String> {
    if let Some(f) = &result.failure {
        return Err(format!("client 0's step {k} of the search failed: {f}"));
    }
    let notes = t
        .barrier
        .gather(&meeting(k), "")
        .await
        .map_err(|e| e.to_string())?;
    let mut records = vec![OpRecord::of(result)];
    let mut indexes = vec![t.index];
    for (i, note) in notes {
        let rec: OpRecord = note
            .as_deref()
            .and_then(|n| serde_json::from_str(n).ok())
            .ok_or_else(|| {
                format!(
                    "client {i}'s figures of step {k} of the search cannot be read: run the same ysql-bench on every client"
                )
            })?;
        if rec.interrupted {
            return Err(format!("client {i} was interrupted"));
        }
        if let Some(f) = &rec.failure {
            return Err(format!("client {i}'s step {k} of the search failed: {f}"));
        }
        records.push(rec);
        indexes.push(i);
    }
    let all: Vec<&OpRecord> = records.iter().collect();
    Ok(merge_operation(&all, &indexes))
}

/// The leader: releases meeting `k` with `decision`.
async fn tell(t: &Team<'_>, k: u32, decision: &Decision) -> Result<(), String> {
    let note = serde_json::to_string(decision)
        .map_err(|e| format!("cannot write the search's decision: {e}"))?;
    t.barrier
        .release(&meeting(k), Some(&note))
        .await
        .map_err(|e| e.to_string())
}

/// Another client: brings `note` to meeting `k` and hears client 0's
/// decision.
async fn hear(t: &Team<'_>, k: u32, note: &str) -> Result<Decision, String> {
    let notes = t
        .barrier
        .gather(&meeting(k), note)
        .await
        .map_err(|e| e.to_string())?;
    notes
        .into_iter()
        .find_map(|(_, n)| n)
        .and_then(|n| serde_json::from_str(&n).ok())
        .ok_or_else(|| {
            format!(
                "client 0's decision at step {k} of the search cannot be read: run the same ysql-bench on every client"
            )
        })
}

/// Where the search stands, with the steps so far: what to run next,
/// and the judgement of each run of a step on its (merged) figures.
struct Judge {
    search: Search,
    slo: Slo,
    steps: Vec<StepRecord>,
    /// The step being run, if one is.
    current: Option<Current>,
    last_verdict: Option<SloRecord>,
    answer_verdict: Option<SloRecord>,
}

/// A step and its runs so far.
struct Current {
    next: Next,
    /// Its runs' figures added up.
    merged: Option<OpRecord>,
    runs: usize,
    /// Within the noise: it runs once more.
    again: bool,
}

impl Judge {
    fn new(plan: SearchPlan, slo: Slo) -> Judge {
        Judge {
            search: Search::new(plan),
            slo,
            steps: Vec::new(),
            current: None,
            last_verdict: None,
            answer_verdict: None,
        }
    }

    /// The next run: the step again (within the noise) or the search's
    /// next; None when the search is over.
    fn next_run(&mut self) -> Option<Planned> {
        let next = match self.current.as_mut() {
            Some(c) if c.again => {
                c.again = false;
                c.runs += 1;
                c.next
            }
            _ => {
                let next = self.search.next();
                self.current = Some(Current {
                    next,
                    merged: None,
                    runs: 1,
                    again: false,
                });
                next
            }
        };
        let (Next::Step(target) | Next::Confirm(target)) = next else {
            self.current = None;
            return None;
        };
        self.search.ran();
        Some(Planned { target })
    }

    /// Judges a run of the current step on `figures`; its record.
    fn judge(&mut self, figures: OpRecord, stopped: Option<String>) -> Option<StepRecord> {
        let plan = self.search.plan;
        let cur = self.current.as_mut()?;
        let (Next::Step(target) | Next::Confirm(target)) = cur.next else {
            return None;
        };
        let acc = match cur.merged.as_mut() {
            Some(m) => {
                add_run(m, &figures);
                m
            }
            None => cur.merged.insert(figures),
        };
        let verdict = judge_ops(&self.slo, std::slice::from_ref(acc), stopped.clone());
        let within = within_noise(&self.slo, acc, &verdict);
        let step = StepRecord {
            repeat: cur.runs > 1,
            confirm: matches!(cur.next, Next::Confirm(_)),
            ..step_record(
                self.steps.len() as u32 + 1,
                target,
                acc,
                &verdict,
                within,
                stopped,
            )
        };
        self.steps.push(step.clone());
        let again = within
            && stopped_none(&verdict)
            && cur.runs <= plan.repeats as usize
            && self.search.steps < plan.max_steps;
        if again {
            cur.again = true;
        } else {
            let next = cur.next;
            self.current = None;
            self.search.record(next, verdict.met);
            if verdict.met && matches!(next, Next::Confirm(_)) {
                self.answer_verdict = Some(verdict.clone());
            }
            self.last_verdict = Some(verdict);
        }
        Some(step)
    }
}

/// Whether no criterion stopped the step early: a step stopped by a
/// certain miss is decided, whatever the noise.
fn stopped_none(v: &SloRecord) -> bool {
    v.aborted.is_none()
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
