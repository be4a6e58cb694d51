//! Service-level objectives (`--slo`): the criteria a run is judged by,
//! and the judgement itself, as plain data.
//!
//! A criterion is `[SCOPE:]METRIC OP VALUE`: `p99<10ms`,
//! `new-order:p90<5s`, `service.p99.9<50ms`, `errors<0.1%`,
//! `throughput>=5000/s`, `throughput>=95%` (of `--rate`'s target),
//! `efficiency>=90%` (a workload's own figure). Parsing is here, so that
//! the flag, `merge --slo` and a saved report's own criteria read the
//! same words; judging is here too, over the run's record
//! ([`judge_run`]) or over what is known so far of a running operation
//! ([`Live`]), so that the summary, the progress lines, the JSON and CSV
//! and the exit code all say one verdict. Wording is the report's.
//!
//! `--slo-abort` needs a verdict that cannot change: [`Live::certain_miss`]
//! says a criterion is missed whatever the rest of the run does, only from
//! counts that can only grow and an upper bound on the units the run can
//! still end (`--rate` with a fixed schedule and `--time`, or
//! `--transactions`); see docs/slo.md for the rules.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::record::{OpRecord, RunRecord};
use super::{Percentiles, Stats};

/// How a measured value is compared with the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Cmp::Lt => value < bound,
            Cmp::Le => value <= bound,
            Cmp::Gt => value > bound,
            Cmp::Ge => value >= bound,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// Whether the criterion is an upper bound (the value must stay below).
    pub fn upper(self) -> bool {
        matches!(self, Cmp::Lt | Cmp::Le)
    }
}

/// Which latency a criterion reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// From when the unit was due (its slot under `--rate`).
    Intended,
    /// From when it was sent.
    Service,
}

/// A statistic of a latency histogram.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stat {
    /// A quantile, 0 < q < 1 (p99 is 0.99).
    Quantile(f64),
    Mean,
    Max,
}

/// What a criterion measures.
#[derive(Clone, Debug, PartialEq)]
pub enum Measure {
    Latency(Clock, Stat),
    /// Failed units: a share of the units ended (`%`) or a count.
    Errors {
        share: bool,
    },
    /// Retries: per unit ended (`%`) or a count.
    Retries {
        share: bool,
    },
    /// Units skipped under `--latency-limit`: a share or a count.
    Skipped {
        share: bool,
    },
    /// Units per second over the measured time; `of_target`: as a share
    /// of the `--rate` target.
    Throughput {
        of_target: bool,
    },
    /// A workload's own figure by its key in the record's `metrics`.
    Figure(String),
}

/// One criterion of `--slo`.
#[derive(Clone, Debug, PartialEq)]
pub struct Criterion {
    /// An operation of `-o` or a transaction type; None: every measured
    /// operation (see [`judge_run`]).
    pub scope: Option<String>,
    pub measure: Measure,
    pub cmp: Cmp,
    /// In nanoseconds for latencies, a fraction for shares, units per
    /// second for throughput, the figure's own unit otherwise.
    pub bound: f64,
    /// As the user wrote it, without spaces.
    pub text: String,
}

/// The criteria of one `--slo`, in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    pub criteria: Vec<Criterion>,
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t: Vec<&str> = self.criteria.iter().map(|c| c.text.as_str()).collect();
        f.write_str(&t.join(","))
    }
}

/// Why a criterion is written wrong, and how to write it.
const SYNTAX: &str = "write [SCOPE:]METRIC OP VALUE, e.g. p99<10ms, new-order:p90<5s, service.p99.9<50ms, errors<0.1%, throughput>=5000/s (see docs/slo.md)";

/// The items of a comma-separated list, each parsed by `one`; at least
/// one (`what` names an item, `syntax` the form, for the message).
fn comma_list<T>(
    list: &str,
    one: fn(&str) -> Result<T, String>,
    what: &str,
    syntax: &str,
) -> Result<Vec<T>, String> {
    let items = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(one)
        .collect::<Result<Vec<_>, _>>()?;
    if items.is_empty() {
        return Err(format!("'{list}' names no {what}: {syntax}"));
    }
    Ok(items)
}

impl Slo {
    /// Parses a comma-separated list of criteria.
    pub fn parse(list: &str) -> Result<Slo, String> {
        let criteria = comma_list(list, Criterion::parse, "criterion", SYNTAX)?;
        Ok(Slo { criteria })
    }

    /// Whether some criterion judges failed units (then failed units
    /// alone do not fail the run: the criterion does).
    pub fn judges_errors(&self) -> bool {
        self.criteria
            .iter()
            .any(|c| matches!(c.measure, Measure::Errors { .. }))
    }
}

/// A criterion or a change rule taken apart: `[SCOPE:]METRIC CMP VALUE`.
struct Parts<'a> {
    scope: Option<String>,
    metric: &'a str,
    cmp: Cmp,
    value: &'a str,
}

/// Splits `compact` (`text` without its spaces) at its comparison and its
/// scope; `ops` names the comparisons for the message, `syntax` the form.
fn parts<'a>(text: &str, compact: &'a str, ops: &str, syntax: &str) -> Result<Parts<'a>, String> {
    let at = compact
        .find(['<', '>'])
        .ok_or_else(|| format!("'{text}' has no comparison ({ops}): {syntax}"))?;
    let (left, rest) = compact.split_at(at);
    let (cmp, value) = if let Some(v) = rest.strip_prefix("<=") {
        (Cmp::Le, v)
    } else if let Some(v) = rest.strip_prefix(">=") {
        (Cmp::Ge, v)
    } else if let Some(v) = rest.strip_prefix('<') {
        (Cmp::Lt, v)
    } else {
        (Cmp::Gt, &rest[1..])
    };
    let (scope, metric) = match left.rsplit_once(':') {
        Some((s, m)) if !s.is_empty() => (Some(s.to_string()), m),
        Some(_) => return Err(format!("'{text}' has an empty scope before ':': {syntax}")),
        None => (None, left),
    };
    Ok(Parts {
        scope,
        metric,
        cmp,
        value,
    })
}

impl Criterion {
    pub fn parse(text: &str) -> Result<Criterion, String> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let Parts {
            scope,
            metric,
            cmp,
            value,
        } = parts(text, &compact, "<, <=, >, >=", SYNTAX)?;
        if metric.is_empty() {
            return Err(format!("'{text}' names no metric: {SYNTAX}"));
        }
        if value.is_empty() {
            return Err(format!(
                "'{text}' has no value after {}: {SYNTAX}",
                cmp.text()
            ));
        }
        let (measure, bound) =
            measure_and_bound(metric, value).map_err(|why| format!("'{text}': {why}; {SYNTAX}"))?;
        Ok(Criterion {
            scope,
            measure,
            cmp,
            bound,
            text: compact,
        })
    }

    /// The criterion without its scope: how verdicts name what was judged.
    pub fn metric_text(&self) -> &str {
        match &self.scope {
            Some(s) => &self.text[s.len() + 1..],
            None => &self.text,
        }
    }
}

/// The measure of `metric` and the bound of `value` in its unit.
fn measure_and_bound(metric: &str, value: &str) -> Result<(Measure, f64), String> {
    let (clock, stat) = match metric.strip_prefix("service.") {
        Some(s) => (Some(Clock::Service), s),
        None => (None, metric),
    };
    if let Some(stat) = latency_stat(stat)? {
        let bound = parse_latency(value)?;
        return Ok((
            Measure::Latency(clock.unwrap_or(Clock::Intended), stat),
            bound,
        ));
    }
    if clock.is_some() {
        return Err(format!(
            "service. goes with a latency (service.p99, service.mean, service.max), not '{stat}'"
        ));
    }
    let (num, pct) = number_or_share(value).map_err(|e: String| match metric {
        "errors" | "retries" | "skipped" | "throughput" | "tps" | "rate" => e,
        // An unknown name is read as a workload's figure, which takes a
        // number: a latency after it means the name is what is wrong.
        _ => format!(
            "'{metric}' is no metric of ours (p99, p99.9, mean, max, service.p99, errors, retries, skipped, throughput), and as a workload's figure it would take a number ({metric}>=90%), not '{value}'"
        ),
    })?;
    let count_or_share = |make: fn(bool) -> Measure| -> Result<(Measure, f64), String> {
        if !pct && (num.fract() != 0.0 || num < 0.0) {
            return Err(format!(
                "'{value}' is neither a share (0.1%) nor a whole count (5) for {metric}"
            ));
        }
        Ok((make(pct), num))
    };
    match metric {
        "errors" => count_or_share(|share| Measure::Errors { share }),
        "retries" => count_or_share(|share| Measure::Retries { share }),
        "skipped" => count_or_share(|share| Measure::Skipped { share }),
        "throughput" | "tps" | "rate" => {
            if pct {
                Ok((Measure::Throughput { of_target: true }, num))
            } else if let Some(n) = value.strip_suffix("/s") {
                let n = parse_number(n)?;
                Ok((Measure::Throughput { of_target: false }, n))
            } else {
                Err(format!(
                    "throughput takes units per second (5000/s) or a share of --rate's target (95%), not '{value}'"
                ))
            }
        }
        name if name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) =>
        {
            Ok((Measure::Figure(name.to_string()), num))
        }
        _ => Err(format!("'{metric}' is not a metric")),
    }
}

/// p50, p99.9, mean, max; None for a name that is no latency statistic.
fn latency_stat(s: &str) -> Result<Option<Stat>, String> {
    match s {
        "mean" | "avg" => return Ok(Some(Stat::Mean)),
        "max" => return Ok(Some(Stat::Max)),
        _ => {}
    }
    let Some(p) = s.strip_prefix('p') else {
        return Ok(None);
    };
    if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Ok(None);
    }
    let q: f64 = p
        .parse()
        .map_err(|_| format!("'{s}' is not a percentile (p50, p99, p99.9)"))?;
    if !(q > 0.0 && q < 100.0) {
        return Err(format!(
            "'{s}' is not a percentile: give one between p0 and p100, e.g. p99.9"
        ));
    }
    Ok(Some(Stat::Quantile(q / 100.0)))
}

fn parse_number(s: &str) -> Result<f64, String> {
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    match clean.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number")),
    }
}

/// A number, or a percentage as a fraction (true).
fn number_or_share(s: &str) -> Result<(f64, bool), String> {
    match s.strip_suffix('%') {
        Some(p) => Ok((parse_number(p)? / 100.0, true)),
        None if s.ends_with("/s") => Ok((0.0, false)),
        None => Ok((parse_number(s)?, false)),
    }
}

/// A latency with its unit (ns, us, µs, ms, s) in nanoseconds.
fn parse_latency(s: &str) -> Result<f64, String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .ok_or_else(|| format!("'{s}' needs a unit: ns, us, ms or s (10ms)"))?;
    if split == 0 {
        return Err(format!(
            "'{s}' is not a latency: write a number and a unit, e.g. 10ms"
        ));
    }
    let (n, unit) = s.split_at(split);
    let n = parse_number(n)?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("'{unit}' is not a unit of time: ns, us, ms or s")),
    };
    Ok(n * scale)
}

/// The verdict of one criterion on one operation (or one of its types).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The criterion as given, scope included.
    pub criterion: String,
    pub operation: String,
    /// The transaction type judged, when the scope names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_type: Option<String>,
    /// The measured value in the bound's unit (nanoseconds, a fraction,
    /// units per second, a count); None when nothing was measured.
    pub measured: Option<f64>,
    /// The bound in the same unit.
    pub bound: f64,
    /// The measured value as the summary says it ("12.3 ms", "0.05%").
    pub measured_text: String,
    pub met: bool,
}

/// The judgement of a run: every verdict, and the whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloRecord {
    /// The criteria as given (`--slo`).
    pub spec: String,
    /// Every criterion met on every operation it applies to, and the run
    /// not stopped by `--slo-abort`.
    pub met: bool,
    pub verdicts: Vec<Verdict>,
    /// `--slo-abort` stopped the run: the criterion that could no longer
    /// be met, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
}

impl SloRecord {
    /// The verdicts that were missed.
    pub fn missed(&self) -> impl Iterator<Item = &Verdict> {
        self.verdicts.iter().filter(|v| !v.met)
    }
}

/// The operations a criterion without scope judges: every measured
/// operation that ran units, but loads when the run also has queries
/// (`-o copy-mem,select --slo p99<10ms` judges the select).
fn unscoped(ops: &[OpRecord]) -> Vec<&OpRecord> {
    let measured: Vec<&OpRecord> = ops.iter().filter(|o| o.measured).collect();
    let queries: Vec<&OpRecord> = measured.iter().copied().filter(|o| !o.load).collect();
    if queries.is_empty() {
        measured
    } else {
        queries
    }
}

/// Where a criterion applies in a run: (operation, type) pairs.
pub fn targets<'a>(c: &Criterion, ops: &'a [OpRecord]) -> Vec<(&'a OpRecord, Option<&'a str>)> {
    match &c.scope {
        None => unscoped(ops).into_iter().map(|o| (o, None)).collect(),
        Some(s) => {
            let by_op: Vec<_> = ops
                .iter()
                .filter(|o| &o.operation == s)
                .map(|o| (o, None))
                .collect();
            if !by_op.is_empty() {
                return by_op;
            }
            ops.iter()
                .filter_map(|o| {
                    o.types
                        .iter()
                        .find(|t| &t.name == s)
                        .map(|t| (o, Some(t.name.as_str())))
                })
                .collect()
        }
    }
}

/// Judges every criterion of `slo` on the run's operations. A scope that
/// names nothing of the run is a verdict missed, "not in the run" (the
/// flag's check refuses it before a live run starts).
pub fn judge_run(slo: &Slo, run: &RunRecord, aborted: Option<String>) -> SloRecord {
    judge_ops(slo, &run.operations, aborted)
}

/// [`judge_run`] over a list of operations.
pub fn judge_ops(slo: &Slo, ops: &[OpRecord], aborted: Option<String>) -> SloRecord {
    let mut verdicts = Vec::new();
    for c in &slo.criteria {
        let at = targets(c, ops);
        if at.is_empty() {
            verdicts.push(Verdict {
                criterion: c.text.clone(),
                operation: String::new(),
                transaction_type: c.scope.clone(),
                measured: None,
                bound: c.bound,
                measured_text: "not in the run".to_string(),
                met: false,
            });
        }
        for (op, ty) in at {
            verdicts.push(judge_op(c, op, ty));
        }
    }
    let met = aborted.is_none() && verdicts.iter().all(|v| v.met);
    SloRecord {
        spec: slo.to_string(),
        met,
        verdicts,
        aborted,
    }
}

/// The figures a criterion reads, of an operation or of one type.
pub struct Figures<'a> {
    pub stats: &'a Stats,
    /// Units per second over the measured time.
    pub per_s: f64,
    pub target_per_s: Option<f64>,
    /// Units skipped under `--latency-limit` (the operation's: skipping
    /// happens before a unit has a type).
    pub skipped: u64,
    pub metrics: &'a BTreeMap<String, f64>,
}

impl<'a> Figures<'a> {
    pub fn of(op: &'a OpRecord, ty: Option<&str>) -> Figures<'a> {
        let t = ty.and_then(|n| op.types.iter().find(|t| t.name == n));
        Figures {
            stats: t.map_or(&op.figures, |t| &t.figures),
            per_s: t.map_or(op.rates.units_per_s, |t| t.rates.units_per_s),
            target_per_s: op.rate_target.filter(|_| t.is_none()),
            skipped: op.figures.skipped,
            metrics: &op.metrics,
        }
    }
}

/// The measured value of `c` over `f`; None when nothing was measured.
pub fn measure(c: &Criterion, f: &Figures) -> Option<f64> {
    let s = f.stats;
    let ended = s.ops + s.failed();
    let share = |n: u64, of: u64| (of > 0).then(|| n as f64 / of as f64);
    match &c.measure {
        Measure::Latency(clock, stat) => {
            let h = match clock {
                Clock::Intended => &s.latency,
                Clock::Service => &s.service,
            };
            if h.is_empty() {
                return None;
            }
            Some(match stat {
                Stat::Quantile(q) => h.value_at_quantile(*q) as f64,
                Stat::Mean => h.mean(),
                Stat::Max => h.max() as f64,
            })
        }
        Measure::Errors { share: true } => share(s.failed(), ended),
        Measure::Errors { share: false } => Some(s.failed() as f64),
        Measure::Retries { share: true } => share(s.retries, ended),
        Measure::Retries { share: false } => Some(s.retries as f64),
        Measure::Skipped { share: true } => share(f.skipped, ended + f.skipped),
        Measure::Skipped { share: false } => Some(f.skipped as f64),
        Measure::Throughput { of_target: false } => Some(f.per_s),
        Measure::Throughput { of_target: true } => {
            f.target_per_s.filter(|t| *t > 0.0).map(|t| f.per_s / t)
        }
        Measure::Figure(key) => f.metrics.get(key).copied(),
    }
}

/// One criterion's verdict on one operation or type.
pub fn judge_op(c: &Criterion, op: &OpRecord, ty: Option<&str>) -> Verdict {
    let measured = measure(c, &Figures::of(op, ty));
    Verdict {
        criterion: c.text.clone(),
        operation: op.operation.clone(),
        transaction_type: ty.map(str::to_string),
        measured,
        bound: c.bound,
        measured_text: value_text(c, measured),
        met: measured.is_some_and(|v| c.cmp.holds(v, c.bound)),
    }
}

/// A measured value in the criterion's words: "12.345 ms", "0.050%",
/// "4999.8/s", "7"; a workload figure whose bound was written as a share
/// (`efficiency>=90%`) as a share too ("95.0%", not "0.9500").
pub fn value_text(c: &Criterion, v: Option<f64>) -> String {
    let m = &c.measure;
    let Some(v) = v else {
        return match m {
            Measure::Throughput { of_target: true } => "no --rate target".to_string(),
            Measure::Figure(_) => "not a figure of this workload".to_string(),
            _ => "nothing measured".to_string(),
        };
    };
    match m {
        Measure::Latency(..) => latency_text(v),
        Measure::Errors { share: true }
        | Measure::Retries { share: true }
        | Measure::Skipped { share: true }
        | Measure::Throughput { of_target: true } => format!("{:.3}%", v * 100.0),
        Measure::Errors { .. } | Measure::Retries { .. } | Measure::Skipped { .. } => {
            format!("{v:.0}")
        }
        Measure::Throughput { of_target: false } => format!("{v:.1}/s"),
        Measure::Figure(_) if c.text.ends_with('%') => format!("{:.1}%", v * 100.0),
        Measure::Figure(_) => super::record::number(v),
    }
}

/// Nanoseconds as a latency with a readable unit.
pub fn latency_text(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.3} us", ns / 1e3)
    }
}

/// A bound in the criterion's words (the same units as [`value_text`]).
pub fn bound_text(c: &Criterion) -> String {
    value_text(c, Some(c.bound))
}

/// What an operation that is still running has measured so far: the
/// sum of its finished intervals (latency from the intended start only:
/// the intervals keep no service times).
pub struct Live<'a> {
    /// Per transaction type, in the workload's order, and their names.
    pub types: &'a [(&'a str, LiveCounts<'a>)],
    /// All types together.
    pub total: LiveCounts<'a>,
    /// The operation's name.
    pub operation: &'a str,
    /// Seconds measured so far.
    pub elapsed_s: f64,
    pub target_per_s: Option<f64>,
    /// The most units the operation can end in all, when the run bounds
    /// them (a fixed `--rate` schedule with `--time`, `--transactions`).
    pub max_units: Option<u64>,
    /// The measured time the operation runs in all, when known (`--time`).
    pub run_s: Option<f64>,
}

/// Counts and the latency histogram of the intervals so far.
#[derive(Clone, Copy)]
pub struct LiveCounts<'a> {
    pub ops: u64,
    pub errors: u64,
    pub retries: u64,
    pub skipped: u64,
    pub latency: &'a hdrhistogram::Histogram<u64>,
}

/// A criterion as judged so far.
#[derive(Clone, Debug, PartialEq)]
pub enum SoFar {
    Met,
    Missed,
    /// Not known while running (service time, a workload's figure).
    Unknown,
}

impl<'a> Live<'a> {
    /// The counts a criterion reads; None when it is not about this
    /// operation.
    fn counts(&self, c: &Criterion) -> Option<LiveCounts<'a>> {
        match &c.scope {
            None => Some(self.total),
            Some(s) if s == self.operation => Some(self.total),
            Some(s) => self.types.iter().find(|(n, _)| n == s).map(|(_, c)| *c),
        }
    }

    /// Whether the criterion is about this operation (its scope names it
    /// or one of its types, or it has none).
    pub fn applies(&self, c: &Criterion) -> bool {
        self.counts(c).is_some()
    }

    /// The value of `c` so far, or None when it cannot be known yet.
    pub fn value(&self, c: &Criterion) -> Option<f64> {
        let k = self.counts(c)?;
        let ended = k.ops + k.errors;
        let share = |n: u64, of: u64| (of > 0).then(|| n as f64 / of as f64);
        match &c.measure {
            Measure::Latency(Clock::Intended, stat) if !k.latency.is_empty() => Some(match stat {
                Stat::Quantile(q) => k.latency.value_at_quantile(*q) as f64,
                Stat::Mean => k.latency.mean(),
                Stat::Max => k.latency.max() as f64,
            }),
            Measure::Errors { share: true } => share(k.errors, ended),
            Measure::Errors { share: false } => Some(k.errors as f64),
            Measure::Retries { share: true } => share(k.retries, ended),
            Measure::Retries { share: false } => Some(k.retries as f64),
            Measure::Skipped { share: true } => share(k.skipped, ended + k.skipped),
            Measure::Skipped { share: false } => Some(k.skipped as f64),
            Measure::Throughput { of_target } if self.elapsed_s > 0.0 => {
                let per_s = k.ops as f64 / self.elapsed_s;
                match (of_target, self.target_per_s) {
                    (false, _) => Some(per_s),
                    (true, Some(t)) if t > 0.0 => Some(per_s / t),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The criterion as judged on what was measured so far.
    pub fn so_far(&self, c: &Criterion) -> SoFar {
        match self.value(c) {
            Some(v) if c.cmp.holds(v, c.bound) => SoFar::Met,
            Some(_) => SoFar::Missed,
            None => SoFar::Unknown,
        }
    }

    /// Why `c` can no longer be met whatever the rest of the run does,
    /// or None. Only from what can only grow: counts of failed, retried
    /// and skipped units, units over a latency bound, against the most
    /// units the run can end ([`Live::max_units`]).
    pub fn certain_miss(&self, c: &Criterion) -> Option<String> {
        let k = self.counts(c)?;
        let upper = c.cmp.upper();
        let over = |n: u64| {
            if c.cmp == Cmp::Lt {
                n as f64 >= c.bound
            } else {
                n as f64 > c.bound
            }
        };
        // A count over its bound only grows.
        let count = match &c.measure {
            Measure::Errors { share: false } => Some(k.errors),
            Measure::Retries { share: false } => Some(k.retries),
            Measure::Skipped { share: false } => Some(k.skipped),
            _ => None,
        };
        if let Some(n) = count {
            return (upper && over(n)).then(|| format!("{} reached {n}", c.text));
        }
        let max_units = self.max_units?;
        match &c.measure {
            // Failed units can only grow; the share is lowest if every
            // unit still to come succeeds.
            Measure::Errors { share: true } | Measure::Retries { share: true } if upper => {
                let n = if matches!(c.measure, Measure::Errors { .. }) {
                    k.errors
                } else {
                    k.retries
                };
                let least = n as f64 / max_units.max(1) as f64;
                (!c.cmp.holds(least, c.bound)).then(|| {
                    format!(
                        "{}: {n} already, at least {:.3}% of the at most {max_units} units the run can end",
                        c.text,
                        least * 100.0
                    )
                })
            }
            Measure::Latency(Clock::Intended, stat) if upper => {
                // Units at or over the bound stay there.
                // Counted from the bucket above the bound's, whose every
                // value is over it: fewer slow units than there may be,
                // never more.
                let bound = c.bound.max(0.0) as u64;
                let above = k.latency.next_non_equivalent(bound);
                let slow = k.latency.count_between(above, u64::MAX);
                let allowed = match stat {
                    Stat::Max => 0.0,
                    // The quantile of n units is the value of rank
                    // ceil(q n) or above; it stays under the bound while
                    // the slow units are at most n - ceil(q n), which
                    // floor counts generously (float error in q n), and
                    // which grows with n: the most units is the worst.
                    Stat::Quantile(q) => {
                        let n = max_units as f64;
                        n - (q * n).floor()
                    }
                    Stat::Mean => return None,
                };
                (slow as f64 > allowed).then(|| {
                    format!(
                        "{}: {slow} units already took over {}, and of the at most {max_units} units the run can end no more than {:.0} may",
                        c.text,
                        latency_text(c.bound),
                        allowed.floor()
                    )
                })
            }
            Measure::Throughput { of_target } if !upper => {
                let run_s = self.run_s?;
                let remaining = max_units.saturating_sub(k.ops + k.errors);
                let best = (k.ops + remaining) as f64 / run_s.max(1e-9);
                let best = match (of_target, self.target_per_s) {
                    (false, _) => best,
                    (true, Some(t)) if t > 0.0 => best / t,
                    _ => return None,
                };
                (!c.cmp.holds(best, c.bound)).then(|| {
                    format!(
                        "{}: at most {} even if every unit still due succeeds",
                        c.text,
                        value_text(c, Some(best))
                    )
                })
            }
            _ => None,
        }
    }
}

/// The percentiles a saved operation keeps per interval, for the noise
/// of a latency criterion ([`noise`]): the nearest kept quantile.
fn interval_value(p: &Percentiles, stat: Stat) -> f64 {
    match stat {
        Stat::Mean => p.mean,
        Stat::Max => p.max as f64,
        Stat::Quantile(q) => {
            let kept = [
                (0.50, p.p50),
                (0.90, p.p90),
                (0.95, p.p95),
                (0.99, p.p99),
                (0.999, p.p999),
            ];
            kept.iter()
                .min_by(|a, b| (a.0 - q).abs().total_cmp(&(b.0 - q).abs()))
                .map_or(0.0, |k| k.1 as f64)
        }
    }
}

/// The standard error of a criterion's measured value over an operation,
/// from how it wanders between the operation's intervals (latency,
/// throughput) or from the binomial spread of a share; None when it
/// cannot be told (fewer than two intervals, a count, a figure).
pub fn noise(c: &Criterion, op: &OpRecord) -> Option<f64> {
    let spread = |xs: Vec<f64>| -> Option<f64> {
        let n = xs.len();
        if n < 2 {
            return None;
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Some((var / n as f64).sqrt())
    };
    let full = op.intervals.iter().filter(|i| i.seconds > 0.0 && i.ops > 0);
    match &c.measure {
        Measure::Latency(Clock::Intended, stat) if c.scope.is_none() => {
            spread(full.map(|i| interval_value(&i.latency, *stat)).collect())
        }
        Measure::Throughput { of_target } if c.scope.is_none() => {
            let t = if *of_target { op.rate_target? } else { 1.0 };
            spread(full.map(|i| i.ops_per_s / t).collect())
        }
        Measure::Errors { share: true } => {
            let n = (op.figures.ops + op.figures.failed()) as f64;
            let p = op.figures.failed() as f64 / n.max(1.0);
            (n > 0.0).then(|| (p * (1.0 - p) / n).sqrt())
        }
        _ => None,
    }
}

/// One rule of `compare --fail-if`: a change from the base run to the
/// new one, in percent of the base, that fails the comparison when it is
/// also beyond the run-to-run noise.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeRule {
    /// An operation or transaction type; None: every operation in both.
    pub scope: Option<String>,
    /// A latency statistic or throughput (the others are refused).
    pub measure: Measure,
    pub cmp: Cmp,
    /// The change as a signed fraction of the base (+10% is 0.1).
    pub change: f64,
    pub text: String,
}

/// The rules of `compare --fail-if`.
#[derive(Clone, Debug, PartialEq)]
pub struct FailIf {
    pub rules: Vec<ChangeRule>,
}

const CHANGE_SYNTAX: &str = "write [SCOPE:]METRIC OP CHANGE%, e.g. p99>+10%, throughput<-5%, service.p99.9>+20% (see docs/slo.md)";

impl FailIf {
    pub fn parse(list: &str) -> Result<FailIf, String> {
        let rules = comma_list(list, ChangeRule::parse, "rule", CHANGE_SYNTAX)?;
        Ok(FailIf { rules })
    }
}

impl ChangeRule {
    pub fn parse(text: &str) -> Result<ChangeRule, String> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let Parts {
            scope,
            metric,
            cmp,
            value,
        } = parts(text, &compact, "< or >", CHANGE_SYNTAX)?;
        let (clock, stat) = match metric.strip_prefix("service.") {
            Some(s) => (Clock::Service, s),
            None => (Clock::Intended, metric),
        };
        let measure = match latency_stat(stat).map_err(|e| format!("'{text}': {e}"))? {
            Some(st) => Measure::Latency(clock, st),
            None if metric == "throughput" || metric == "tps" => {
                Measure::Throughput { of_target: false }
            }
            None => {
                return Err(format!(
                    "'{text}': compare weighs changes of latency (p99, mean, max, service.p99) and throughput only; {CHANGE_SYNTAX}"
                ));
            }
        };
        let pct = value.strip_suffix('%').ok_or_else(|| {
            format!("'{text}': the change is a percentage of the base (+10%); {CHANGE_SYNTAX}")
        })?;
        let change: f64 = match pct.parse::<f64>() {
            Ok(v) if v.is_finite() => v / 100.0,
            _ => {
                return Err(format!(
                    "'{text}': '{pct}' is not a number; {CHANGE_SYNTAX}"
                ));
            }
        };
        Ok(ChangeRule {
            scope,
            measure,
            cmp,
            change,
            text: compact,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_parse_with_their_units() {
        let s = Slo::parse("p99<10ms, p99.9 < 50ms,errors<0.1%,throughput>=5000/s").unwrap();
        assert_eq!(s.criteria.len(), 4);
        assert_eq!(
            s.criteria[0].measure,
            Measure::Latency(Clock::Intended, Stat::Quantile(0.99))
        );
        assert_eq!(s.criteria[0].bound, 10e6);
        assert_eq!(s.criteria[1].text, "p99.9<50ms");
        assert!((s.criteria[2].bound - 0.001).abs() < 1e-12);
        assert_eq!(s.criteria[2].measure, Measure::Errors { share: true });
        assert_eq!(s.criteria[3].cmp, Cmp::Ge);
        assert_eq!(s.criteria[3].bound, 5000.0);
        let c = Criterion::parse("new-order:p90<5s").unwrap();
        assert_eq!(c.scope.as_deref(), Some("new-order"));
        assert_eq!(c.metric_text(), "p90<5s");
        assert_eq!(c.bound, 5e9);
        let c = Criterion::parse("service.p99<250us").unwrap();
        assert_eq!(
            c.measure,
            Measure::Latency(Clock::Service, Stat::Quantile(0.99))
        );
        assert_eq!(c.bound, 250e3);
        let c = Criterion::parse("throughput>=95%").unwrap();
        assert_eq!(c.measure, Measure::Throughput { of_target: true });
        let c = Criterion::parse("efficiency>=90%").unwrap();
        assert_eq!(c.measure, Measure::Figure("efficiency".into()));
        assert!((c.bound - 0.9).abs() < 1e-12);
        assert_eq!(Criterion::parse("errors<=5").unwrap().bound, 5.0);
    }

    #[test]
    fn a_figure_bound_as_a_share_is_measured_as_a_share() {
        let pct = Criterion::parse("efficiency>=90%").unwrap();
        assert_eq!(value_text(&pct, Some(6.1025)), "610.2%");
        assert_eq!(bound_text(&pct), "90.0%");
        let plain = Criterion::parse("tpmc>=1000").unwrap();
        assert_eq!(value_text(&plain, Some(7847.8377)), "7847.8377");
    }

    #[test]
    fn change_rules_parse_as_signed_shares() {
        let f = FailIf::parse("p99>+10%, throughput<-5%").unwrap();
        assert_eq!(f.rules[0].cmp, Cmp::Gt);
        assert!((f.rules[0].change - 0.10).abs() < 1e-12);
        assert_eq!(f.rules[1].measure, Measure::Throughput { of_target: false });
        assert!((f.rules[1].change + 0.05).abs() < 1e-12);
        for bad in ["p99>10ms", "errors>+1%", "p99", "p99>+x%"] {
            assert!(FailIf::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_criteria_say_what_is_wrong() {
        for (bad, says) in [
            ("p99", "no comparison"),
            ("p99<10", "needs a unit"),
            ("p99<10 parsecs", "not a unit"),
            ("p100<1ms", "not a percentile"),
            ("throughput>5000", "units per second"),
            ("errors<1.5", "whole count"),
            ("service.errors<1", "service. goes with"),
            (":p99<1ms", "empty scope"),
            ("<1ms", "no metric"),
            ("p99<", "no value"),
            ("", "names no criterion"),
            ("p99<abc", "not a latency"),
            // A misspelt metric is named, not the latency after it.
            ("P99<10ms", "'P99' is no metric of ours"),
            ("latency<10ms", "'latency' is no metric of ours"),
        ] {
            let e = Slo::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    fn live<'a>(h: &'a hdrhistogram::Histogram<u64>, ops: u64, errors: u64) -> LiveCounts<'a> {
        LiveCounts {
            ops,
            errors,
            retries: 0,
            skipped: 0,
            latency: h,
        }
    }

    #[test]
    fn a_miss_is_certain_only_past_the_most_units_the_run_can_end() {
        let mut h = super::super::new_histogram();
        for _ in 0..90 {
            h.record(1_000_000).unwrap();
        }
        for _ in 0..10 {
            h.record(20_000_000).unwrap();
        }
        let total = live(&h, 100, 0);
        let mut l = Live {
            types: &[],
            total,
            operation: "select",
            elapsed_s: 1.0,
            target_per_s: Some(100.0),
            max_units: Some(1000),
            run_s: Some(10.0),
        };
        let p99 = Criterion::parse("p99<10ms").unwrap();
        // 10 slow units of at most 1000: p99 can still come back.
        assert_eq!(l.so_far(&p99), SoFar::Missed);
        assert_eq!(l.certain_miss(&p99), None);
        // Of at most 500, 10 slow ones are more than 1%: certain.
        l.max_units = Some(500);
        assert!(l.certain_miss(&p99).unwrap().contains("10 units"));
        // Without a bound on the units, nothing is certain.
        l.max_units = None;
        assert_eq!(l.certain_miss(&p99), None);
        // A count over its bound is certain with or without one.
        let e = Criterion::parse("errors<=2").unwrap();
        l.total = live(&h, 100, 3);
        assert!(l.certain_miss(&e).is_some());
        l.total = live(&h, 100, 2);
        assert!(l.certain_miss(&e).is_none());
        // Throughput: 100 units in 1 s of a 10 s run paced at 100/s can
        // reach at most 1000 / 10 s.
        l.max_units = Some(1000);
        let t = Criterion::parse("throughput>=101/s").unwrap();
        assert!(l.certain_miss(&t).is_some());
        let t = Criterion::parse("throughput>=99/s").unwrap();
        assert!(l.certain_miss(&t).is_none());
        // A service time is not known while running.
        let s = Criterion::parse("service.p99<1ms").unwrap();
        assert_eq!(l.so_far(&s), SoFar::Unknown);
        assert_eq!(l.certain_miss(&s), None);
    }

    #[test]
    fn a_percentile_certain_miss_never_comes_back_below() {
        // Exhaustively over small runs: whenever certain_miss says so,
        // every completion of the run with fast units still misses.
        let p = Criterion::parse("p90<10ms").unwrap();
        for max_units in 1..40u64 {
            for slow in 0..=max_units {
                let mut h = super::super::new_histogram();
                for _ in 0..slow {
                    h.record(50_000_000).unwrap();
                }
                let l = Live {
                    types: &[],
                    total: live(&h, slow, 0),
                    operation: "x",
                    elapsed_s: 1.0,
                    target_per_s: None,
                    max_units: Some(max_units),
                    run_s: None,
                };
                if l.certain_miss(&p).is_some() {
                    let mut best = h.clone();
                    for _ in slow..max_units {
                        best.record(1_000).unwrap();
                    }
                    assert!(
                        best.value_at_quantile(0.9) as f64 >= 10e6,
                        "{slow} of {max_units}"
                    );
                }
            }
        }
    }
}
