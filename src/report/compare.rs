//! `ysql-bench compare BASE NEW`: two saved reports side by side, per
//! operation and transaction type: throughput and latency percentiles,
//! each with its change in percent.
//!
//! A throughput change is only worth a look when it is larger than the
//! run-to-run noise: each report's interval rates show how much throughput
//! wanders within a run, and the change is called beyond noise when it
//! exceeds twice the standard error of the difference of the two means
//! (Welch's), i.e. about a 95% confidence that it is not chance. With fewer
//! than two intervals on either side nothing can be said ("no intervals").
//!
//! `--fail-if 'p99>+10%,throughput<-5%'` turns the comparison into a
//! gate (exit 3): a rule fails when the change crosses its bound and is
//! beyond the noise, by the same test (Welch's over the interval rates,
//! and over the interval percentiles for a latency); a change whose noise
//! cannot be told (fewer than two intervals, service time, which the
//! intervals do not keep) is judged on its bound alone, and says so.
//!
//! A change is only a change of what was meant to change when the two runs
//! were set up alike: two runs that differ in sslmode or driver differ by
//! that alone. So the set-up comes first: every configuration key of the
//! reports that differs, the server, the tool's version and each
//! operation's driver and workload, before any figure.

use std::io::Write;

use crate::error::{Error, Result};
use crate::stats::record::{OpRecord, Rates, RunRecord, plural};
use crate::stats::slo::{ChangeRule, Clock, FailIf, Measure, Stat};
use crate::stats::{IntervalFigures, Percentiles};

/// Whether a throughput change is larger than the noise of the intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    NoChange,
    WithinNoise,
    BeyondNoise,
    NoIntervals,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::NoChange => "no change",
            Verdict::WithinNoise => "within noise",
            Verdict::BeyondNoise => "beyond noise",
            Verdict::NoIntervals => "noise unknown (fewer than 2 intervals)",
        }
    }
}

/// Mean and variance of the interval rates.
fn rate_stats(intervals: &[IntervalFigures]) -> Option<(f64, f64, usize)> {
    // A short last interval is noisier than the rest: left out.
    let full: Vec<f64> = intervals
        .iter()
        .filter(|f| f.seconds > 0.0)
        .map(|f| f.ops_per_s)
        .collect();
    mean_var(&full)
}

/// Mean, variance and count of `samples`; None for fewer than two.
fn mean_var(samples: &[f64]) -> Option<(f64, f64, usize)> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, var, n))
}

/// Whether `new` differs from `base` beyond what their intervals wander.
pub fn verdict(base: (Rates, &[IntervalFigures]), new: (Rates, &[IntervalFigures])) -> Verdict {
    if base.0.units_per_s == new.0.units_per_s {
        return Verdict::NoChange;
    }
    let (Some(b), Some(n)) = (rate_stats(base.1), rate_stats(new.1)) else {
        return Verdict::NoIntervals;
    };
    welch(base.0.units_per_s, new.0.units_per_s, b, n)
}

/// The same test for any figure with one sample per interval (a
/// percentile of each interval): whether the change from `base` to `new`
/// exceeds twice the standard error of the difference of the samples'
/// means.
pub fn verdict_of(base: f64, new: f64, base_samples: &[f64], new_samples: &[f64]) -> Verdict {
    if base == new {
        return Verdict::NoChange;
    }
    let (Some(b), Some(n)) = (mean_var(base_samples), mean_var(new_samples)) else {
        return Verdict::NoIntervals;
    };
    welch(base, new, b, n)
}

fn welch(
    base: f64,
    new: f64,
    (_, vb, nb): (f64, f64, usize),
    (_, vn, nn): (f64, f64, usize),
) -> Verdict {
    let se = (vb / nb as f64 + vn / nn as f64).sqrt();
    if (new - base).abs() > 2.0 * se {
        Verdict::BeyondNoise
    } else {
        Verdict::WithinNoise
    }
}

/// The change from `a` to `b` in percent, as text.
pub fn change(a: f64, b: f64) -> String {
    if a == b {
        "+0.0%".to_string()
    } else if a == 0.0 {
        "new".to_string()
    } else {
        format!("{:+.1}%", (b - a) / a * 100.0)
    }
}

/// Nanoseconds as the comparison shows them.
pub fn ns(v: u64) -> String {
    let v = v as f64;
    if v >= 1e9 {
        format!("{:.3} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.3} ms", v / 1e6)
    } else {
        format!("{:.3} us", v / 1e3)
    }
}

/// A configuration value as the comparison shows it: text unquoted,
/// lists comma separated, null as `none`.
fn shown(v: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match v {
        None | Some(Value::Null) => "none".to_string(),
        Some(Value::String(s)) if s.is_empty() => "\"\"".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| shown(Some(x)))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

/// What differs between the set-ups of the two runs, as (what, base, new):
/// the configuration keys in the reports' order, then the server, the
/// tool's version and, per operation in both, its driver, workload,
/// pipeline depth and queries per Sync.
pub fn setup_differences(base: &RunRecord, new: &RunRecord) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let (vb, vn) = (
        serde_json::to_value(&base.config).unwrap_or_default(),
        serde_json::to_value(&new.config).unwrap_or_default(),
    );
    if let (Some(mb), Some(mn)) = (vb.as_object(), vn.as_object()) {
        let mut keys: Vec<&String> = mb.keys().collect();
        keys.extend(mn.keys().filter(|k| !mb.contains_key(*k)));
        for k in keys {
            let (x, y) = (mb.get(k), mn.get(k));
            // Each --sandbox is a new server on a port of its own: the
            // same target for the comparison (its version is the server's).
            let sandboxes = k == "target"
                && [x, y].iter().all(|v| {
                    v.and_then(|v| v.as_str())
                        .is_some_and(|t| t.starts_with("sandbox ("))
                });
            if x != y && !sandboxes {
                out.push((k.clone(), shown(x), shown(y)));
            }
        }
    }
    let server = [
        ("server", &base.server.flavor, &new.server.flavor),
        ("server version", &base.server.version, &new.server.version),
        (
            "server encryption",
            &base.server.encryption,
            &new.server.encryption,
        ),
        ("ysql-bench version", &base.version, &new.version),
    ];
    for (what, x, y) in server {
        if x != y {
            out.push((what.to_string(), x.clone(), y.clone()));
        }
    }
    for b in &base.operations {
        let Some(n) = new.operations.iter().find(|n| n.operation == b.operation) else {
            continue;
        };
        for (what, x, y) in [
            ("driver", &b.driver, &n.driver),
            ("workload", &b.workload, &n.workload),
        ] {
            if x != y {
                let text = |s: &String| {
                    if s.is_empty() {
                        "unknown".to_string()
                    } else {
                        s.clone()
                    }
                };
                out.push((format!("{} {what}", b.operation), text(x), text(y)));
            }
        }
        if b.pipeline != n.pipeline {
            out.push((
                format!("{} pipeline", b.operation),
                b.pipeline.to_string(),
                n.pipeline.to_string(),
            ));
        }
        if b.pipeline_sync != n.pipeline_sync {
            out.push((
                format!("{} pipeline-sync", b.operation),
                b.pipeline_sync.to_string(),
                n.pipeline_sync.to_string(),
            ));
        }
    }
    out
}

/// The set-up block: what differs between the runs, or that nothing does.
/// The seed alone is said apart: each run draws its own unless --seed is
/// given, so it differs between most runs and changes only which ids and
/// values are drawn.
fn write_setup(w: &mut dyn Write, base: &RunRecord, new: &RunRecord) -> std::io::Result<()> {
    let diffs = setup_differences(base, new);
    let others: Vec<&(String, String, String)> =
        diffs.iter().filter(|(k, _, _)| k != "seed").collect();
    let seed_differs = others.len() < diffs.len();
    if others.is_empty() {
        let but = if seed_differs {
            " but for the seed (each run draws its own unless --seed is given)"
        } else {
            ""
        };
        return writeln!(w, "configuration: the same{but}");
    }
    // The count is of the points that matter; the seed, when it differs
    // too, is listed below, so the head says it is there apart.
    writeln!(
        w,
        "configuration differs in {} point{}{}: the changes below may come from {}, not only from what was meant to change",
        others.len(),
        if others.len() == 1 { "" } else { "s" },
        if seed_differs { " (and the seed)" } else { "" },
        if others.len() == 1 { "it" } else { "them" }
    )?;
    let width = diffs
        .iter()
        .map(|(k, _, _)| k.len())
        .max()
        .unwrap_or(0)
        .max(14);
    for (k, x, y) in &diffs {
        writeln!(w, "  {k:<width$} base {x}, new {y}")?;
    }
    Ok(())
}

/// Writes the comparison of `base` and `new`.
pub fn write_compare(w: &mut dyn Write, base: &RunRecord, new: &RunRecord) -> Result<()> {
    let io = |e| Error::io("cannot write the comparison", e);
    if base
        .operations
        .iter()
        .all(|b| new.operations.iter().all(|n| n.operation != b.operation))
    {
        return Err(Error::usage(
            "the two reports have no operation in common: nothing to compare",
        ));
    }
    write_setup(w, base, new).map_err(io)?;
    for b in &base.operations {
        let Some(n) = new.operations.iter().find(|n| n.operation == b.operation) else {
            writeln!(w, "{}: only in the base report", b.operation).map_err(io)?;
            continue;
        };
        writeln!(w, "{} ({})", b.operation, plural(&b.unit)).map_err(io)?;
        writeln!(
            w,
            "  {:<14} {:>14} {:>14} {:>9}",
            "", "base", "new", "change"
        )
        .map_err(io)?;
        let mut rows = vec![(
            "all",
            (b.rates, &b.figures),
            &b.intervals,
            (n.rates, &n.figures),
            &n.intervals,
        )];
        if b.types.len() > 1 {
            for t in &b.types {
                if let Some(u) = n.types.iter().find(|u| u.name == t.name) {
                    rows.push((
                        t.name.as_str(),
                        (t.rates, &t.figures),
                        &t.intervals,
                        (u.rates, &u.figures),
                        &u.intervals,
                    ));
                }
            }
        }
        for (name, (rb, fb), ib, (rn, fnew), inew) in rows {
            if name != "all" {
                writeln!(w, "  [{name}]").map_err(io)?;
            }
            let v = verdict((rb, ib), (rn, inew));
            let (pb, pn) = (Percentiles::of(&fb.latency), Percentiles::of(&fnew.latency));
            writeln!(
                w,
                "  {:<14} {:>14.1} {:>14.1} {:>9}  {}",
                "per second",
                rb.units_per_s,
                rn.units_per_s,
                change(rb.units_per_s, rn.units_per_s),
                v.text()
            )
            .map_err(io)?;
            for (label, x, y) in [
                ("p50", pb.p50, pn.p50),
                ("p95", pb.p95, pn.p95),
                ("p99", pb.p99, pn.p99),
                ("p99.9", pb.p999, pn.p999),
                ("max", pb.max, pn.max),
            ] {
                writeln!(
                    w,
                    "  {:<14} {:>14} {:>14} {:>9}",
                    format!("latency {label}"),
                    ns(x),
                    ns(y),
                    change(x as f64, y as f64)
                )
                .map_err(io)?;
            }
            let (xb, xn) = (fb.failed(), fnew.failed());
            if xb != 0 || xn != 0 {
                writeln!(w, "  {:<14} {:>14} {:>14}", "failed", xb, xn).map_err(io)?;
            }
        }
    }
    for n in &new.operations {
        if !base.operations.iter().any(|b| b.operation == n.operation) {
            writeln!(w, "{}: only in the new report", n.operation).map_err(io)?;
        }
    }
    Ok(())
}

/// One rule of `--fail-if` on one operation or type.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeVerdict {
    pub rule: String,
    /// `select`, `tpcc [new-order]`.
    pub place: String,
    pub base: f64,
    pub new: f64,
    /// The change as a fraction of the base.
    pub change: f64,
    /// Whether the change crosses the rule's bound.
    pub crosses: bool,
    /// Whether the change is beyond the run-to-run noise; None when the
    /// noise cannot be told (fewer than two intervals, service time).
    pub beyond_noise: Option<bool>,
}

impl ChangeVerdict {
    /// Crosses the bound, and not within the noise.
    pub fn fails(&self) -> bool {
        self.crosses && self.beyond_noise != Some(false)
    }
}

/// The value of a latency statistic of a histogram.
fn stat_of(h: &hdrhistogram::Histogram<u64>, stat: Stat) -> f64 {
    match stat {
        Stat::Quantile(q) => h.value_at_quantile(q) as f64,
        Stat::Mean => h.mean(),
        Stat::Max => h.max() as f64,
    }
}

/// The value of a statistic in each full interval, for its noise: the
/// nearest percentile the intervals keep.
fn interval_values(intervals: &[IntervalFigures], stat: Stat) -> Vec<f64> {
    intervals
        .iter()
        .filter(|f| f.seconds > 0.0 && f.ops > 0)
        .map(|f| {
            let p = &f.latency;
            match stat {
                Stat::Mean => p.mean,
                Stat::Max => p.max as f64,
                Stat::Quantile(q) => [
                    (0.50, p.p50),
                    (0.90, p.p90),
                    (0.95, p.p95),
                    (0.99, p.p99),
                    (0.999, p.p999),
                ]
                .iter()
                .min_by(|a, b| (a.0 - q).abs().total_cmp(&(b.0 - q).abs()))
                .map_or(0.0, |k| k.1 as f64),
            }
        })
        .collect()
}

/// The squared standard error of the mean of `xs`; None under two.
fn se2(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(var / n as f64)
}

/// What one side of the comparison holds of an operation or type.
struct Side<'a> {
    rates: Rates,
    figures: &'a crate::stats::Stats,
    intervals: &'a [IntervalFigures],
}

/// The sides a rule's scope names in an operation: the whole, or a type.
fn sides<'a>(op: &'a OpRecord, scope: Option<&str>) -> Option<Side<'a>> {
    match scope {
        None => Some(Side {
            rates: op.rates,
            figures: &op.figures,
            intervals: &op.intervals,
        }),
        Some(s) if s == op.operation => sides(op, None),
        Some(s) => op.types.iter().find(|t| t.name == s).map(|t| Side {
            rates: t.rates,
            figures: &t.figures,
            intervals: &t.intervals,
        }),
    }
}

/// One rule on one pair of sides.
fn judge_change(rule: &ChangeRule, place: String, b: &Side, n: &Side) -> ChangeVerdict {
    let (base, new, beyond) = match &rule.measure {
        Measure::Latency(clock, stat) => {
            let pick = |s: &Side| match clock {
                Clock::Intended => stat_of(&s.figures.latency, *stat),
                Clock::Service => stat_of(&s.figures.service, *stat),
            };
            let (x, y) = (pick(b), pick(n));
            let noise = match clock {
                Clock::Service => None,
                Clock::Intended => se2(&interval_values(b.intervals, *stat))
                    .zip(se2(&interval_values(n.intervals, *stat)))
                    .map(|(vb, vn)| (y - x).abs() > 2.0 * (vb + vn).sqrt()),
            };
            (x, y, noise)
        }
        _ => {
            let v = verdict((b.rates, b.intervals), (n.rates, n.intervals));
            let beyond = match v {
                Verdict::NoChange | Verdict::WithinNoise => Some(false),
                Verdict::BeyondNoise => Some(true),
                Verdict::NoIntervals => None,
            };
            (b.rates.units_per_s, n.rates.units_per_s, beyond)
        }
    };
    let change = if base == new {
        0.0
    } else if base == 0.0 {
        f64::INFINITY
    } else {
        (new - base) / base
    };
    ChangeVerdict {
        rule: rule.text.clone(),
        place,
        base,
        new,
        change,
        crosses: rule.cmp.holds(change, rule.change),
        beyond_noise: if base == new { Some(false) } else { beyond },
    }
}

/// Every rule of `--fail-if` on every operation (or type) of both
/// reports it applies to.
pub fn judge_fail_if(f: &FailIf, base: &RunRecord, new: &RunRecord) -> Vec<ChangeVerdict> {
    let mut out = Vec::new();
    for rule in &f.rules {
        for b in base
            .operations
            .iter()
            .filter(|o| o.measured && o.figures.ops > 0)
        {
            let Some(n) = new.operations.iter().find(|n| n.operation == b.operation) else {
                continue;
            };
            let scope = rule.scope.as_deref();
            let (Some(sb), Some(sn)) = (sides(b, scope), sides(n, scope)) else {
                continue;
            };
            let place = match scope {
                Some(t) if t != b.operation => format!("{} [{t}]", b.operation),
                _ => b.operation.clone(),
            };
            out.push(judge_change(rule, place, &sb, &sn));
        }
    }
    out
}

/// The value of a rule's measure as text.
fn rule_value(rule: &str, v: f64) -> String {
    if rule.contains("throughput") || rule.contains("tps") {
        format!("{v:.1}/s")
    } else {
        crate::stats::slo::latency_text(v)
    }
}

/// The verdicts of `--fail-if`, one line each; the error (exit 3) when
/// one fails, naming it with its values.
pub fn write_fail_if(w: &mut dyn Write, verdicts: &[ChangeVerdict], rules: &str) -> Result<()> {
    let io = |e| Error::io("cannot write the comparison", e);
    if verdicts.is_empty() {
        return Err(Error::usage(format!(
            "--fail-if '{rules}' applies to nothing both reports measured: check the operation or type before ':'"
        )));
    }
    for v in verdicts {
        let noise = match v.beyond_noise {
            Some(true) => "beyond noise",
            Some(false) => "within noise",
            None => "noise unknown",
        };
        let what = if v.fails() { "FAILS" } else { "passes" };
        writeln!(
            w,
            "fail-if {}: {} {} -> {} ({}), {noise}: {what}",
            v.rule,
            v.place,
            rule_value(&v.rule, v.base),
            rule_value(&v.rule, v.new),
            change(v.base, v.new)
        )
        .map_err(io)?;
    }
    let failed: Vec<String> = verdicts
        .iter()
        .filter(|v| v.fails())
        .map(|v| format!("{} ({} {})", v.rule, v.place, change(v.base, v.new)))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Slo(format!(
            "compare --fail-if: {}",
            failed.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(ops_per_s: f64) -> IntervalFigures {
        IntervalFigures {
            index: 0,
            end_s: 1.0,
            seconds: 1.0,
            ops: ops_per_s as u64,
            rows: 0,
            errors: 0,
            skipped: 0,
            retries: 0,
            missing: 0,
            ops_per_s,
            rows_per_s: 0.0,
            latency: Default::default(),
            lag_avg_ns: 0,
            lag_max_ns: 0,
            ..Default::default()
        }
    }

    #[test]
    fn changes_are_weighed_against_the_interval_noise() {
        assert_eq!(change(100.0, 110.0), "+10.0%");
        assert_eq!(change(100.0, 100.0), "+0.0%");
        let steady: Vec<_> = [100.0, 101.0, 99.0, 100.0].map(interval).into();
        let faster: Vec<_> = [120.0, 121.0, 119.0, 120.0].map(interval).into();
        let noisy: Vec<_> = [60.0, 140.0, 70.0, 130.0].map(interval).into();
        assert_eq!(rate_stats(&steady).map(|s| s.2), Some(4));
        assert_eq!(rate_stats(&[interval(1.0)]), None);
        // The verdict needs the figures only for their rates.
        let se_b = rate_stats(&steady).unwrap();
        let se_f = rate_stats(&faster).unwrap();
        let se_n = rate_stats(&noisy).unwrap();
        let beyond = |a: (f64, f64, usize), b: (f64, f64, usize)| {
            (b.0 - a.0).abs() > 2.0 * (a.1 / a.2 as f64 + b.1 / b.2 as f64).sqrt()
        };
        assert!(beyond(se_b, se_f));
        assert!(!beyond(se_b, se_n) || (se_n.0 - se_b.0).abs() < 1e-9);
    }
}
