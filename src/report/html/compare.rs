//! The page comparing two runs: what differs in their set-up, then per
//! operation both runs' curves on the same axes and, per figure, the
//! change and whether it is beyond the run-to-run noise, by the text
//! comparison's test ([`crate::report::compare`]): Welch's, on the
//! interval rates for throughput and on each interval's percentile for a
//! percentile (which the intervals' histograms make known).

use maud::{Markup, html};

use super::chart::{Chart, Line, MAX_POINTS, PALETTE, Thin, XAxis, thin};
use super::sections::{self, Pick, count, ns, rate, table};
use crate::report::compare::{Verdict, change, setup_differences, verdict, verdict_of};
use crate::report::plot::axis::Kind;
use crate::stats::record::{OpRecord, Rates, RunRecord};
use crate::stats::{IntervalFigures, Percentiles, Stats};

/// The page's title.
pub fn title(base: &RunRecord, new: &RunRecord) -> String {
    format!(
        "ysql-bench comparison: {} against {}",
        new.started_at, base.started_at
    )
}

/// Everything under the page's head.
pub fn body(base: &RunRecord, new: &RunRecord) -> Markup {
    let diffs = setup_differences(base, new);
    html! {
        header {
            h1 { "ysql-bench comparison" }
            p.sub { "base: " (base.server.flavor) " " (base.server.version) ", started " (base.started_at)
                " · new: " (new.server.flavor) " " (new.server.version) ", started " (new.started_at) }
        }
        section #setup {
            h2 { "Set-up" }
            @if diffs.is_empty() { p { "The same configuration." } }
            @else {
                p { "What differs between the runs: a change below may come from these, not only from what was meant to change." }
                table.kv { tr { th {} th { "base" } th { "new" } }
                    @for (k, x, y) in &diffs { tr data-key=(k) { th { (k) } td { (x) } td { (y) } } } }
            }
        }
        @for b in &base.operations {
            @if let Some(n) = new.operations.iter().find(|n| n.operation == b.operation) { (operation(b, n)) }
            @else { section.op { h2 { (b.operation) } p { "Only in the base report." } } }
        }
        @for n in new.operations.iter().filter(|n| !base.operations.iter().any(|b| b.operation == n.operation)) {
            section.op { h2 { (n.operation) } p { "Only in the new report." } }
        }
    }
}

/// One operation in both runs.
fn operation(b: &OpRecord, n: &OpRecord) -> Markup {
    let mut rows = vec![(
        "all",
        (b.rates, &b.figures, &b.intervals),
        (n.rates, &n.figures, &n.intervals),
    )];
    if b.is_mix() {
        for t in &b.types {
            if let Some(u) = n.types.iter().find(|u| u.name == t.name) {
                rows.push((
                    t.name.as_str(),
                    (t.rates, &t.figures, &t.intervals),
                    (u.rates, &u.figures, &u.intervals),
                ));
            }
        }
    }
    let body = html! {
        @for (name, x, y) in &rows { (figure_rows(name, *x, *y)) }
    };
    html! {
        section.op data-operation=(b.operation) {
            h2 { (b.operation) " " span.workload { "(" (b.units()) ")" } }
            (table("compare", &["type", "figure", "base", "new", "change", "verdict"], body))
            p.note { "Verdict: the change is beyond noise when it exceeds twice the standard error of the difference of the two runs' means over their intervals (Welch's test, about 95% confidence): the interval rates for throughput, each interval's percentile for a percentile. Green: better (more throughput, less latency); red: worse." }
            (sections::charts(&charts(b, n)))
        }
    }
}

type Side<'a> = (Rates, &'a Stats, &'a Vec<IntervalFigures>);

/// The rows of one type: throughput, percentiles, failures.
fn figure_rows(name: &str, (rb, fb, ib): Side, (rn, fnew, inew): Side) -> Markup {
    let v = verdict((rb, ib), (rn, inew));
    let (pb, pn) = (Percentiles::of(&fb.latency), Percentiles::of(&fnew.latency));
    let per_interval = |iv: &[IntervalFigures], pick: Pick| -> Vec<f64> {
        iv.iter()
            .filter(|f| f.ops > 0 && pick(&f.latency) > 0)
            .map(|f| pick(&f.latency) as f64)
            .collect()
    };
    let picks: [(&str, Pick); 4] = [
        ("p50", |p| p.p50),
        ("p99", |p| p.p99),
        ("p99.9", |p| p.p999),
        ("max", |p| p.max),
    ];
    html! {
        (row(name, "per second", rb.units_per_s, rn.units_per_s, &rate(rb.units_per_s), &rate(rn.units_per_s), Some(v)))
        @for (label, pick) in picks {
            @let (x, y) = (pick(&pb), pick(&pn));
            @let verdict = (label != "max").then(|| verdict_of(x as f64, y as f64, &per_interval(ib, pick), &per_interval(inew, pick)));
            (row(name, label, x as f64, y as f64, &ns(x), &ns(y), verdict))
        }
        @if fb.failed() + fnew.failed() > 0 {
            (row(name, "failed", fb.failed() as f64, fnew.failed() as f64, &count(fb.failed()), &count(fnew.failed()), None))
        }
    }
}

/// The class of a verdict's cell: a change beyond the noise is `better`
/// or `worse` by its direction (more throughput, less latency is
/// better), so that the colour says which at a glance.
fn verdict_class(figure: &str, x: f64, y: f64, v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::BeyondNoise) => {
            let higher_is_better = figure == "per second";
            if (y > x) == higher_is_better {
                "beyond better"
            } else {
                "beyond worse"
            }
        }
        Some(Verdict::WithinNoise) | Some(Verdict::NoChange) => "within",
        _ => "unknown",
    }
}

/// One figure's row.
fn row(name: &str, figure: &str, x: f64, y: f64, tx: &str, ty: &str, v: Option<Verdict>) -> Markup {
    let text = v.map_or("–", Verdict::text);
    let class = verdict_class(figure, x, y, v);
    html! {
        tr data-type=(name) data-figure=(figure) data-base=(x) data-new=(y) data-verdict=(text) {
            td { (name) } td { (figure) }
            td.num data-v=(x) { (tx) } td.num data-v=(y) { (ty) }
            td.num data-v=(if x != 0.0 { (y - x) / x } else { 0.0 }) { (change(x, y)) }
            td class=(class) { (text) }
        }
    }
}

/// Both runs' curves on the same axes: throughput, p99, the spectrum.
fn charts(b: &OpRecord, n: &OpRecord) -> Vec<Chart> {
    let (cb, cn) = (PALETTE[0], PALETTE[1]);
    let pts = |iv: &[IntervalFigures], y: fn(&IntervalFigures) -> f64, how| {
        thin(
            &iv.iter().map(|f| (f.end_s, y(f))).collect::<Vec<_>>(),
            MAX_POINTS,
            how,
        )
    };
    let mut t = Chart::new(
        format!("Throughput ({} per second)", b.units()),
        XAxis::Seconds,
        Kind::Rate,
    );
    t.lines.push(Line::new(
        "base",
        cb,
        pts(&b.intervals, |f| f.ops_per_s, Thin::Mean),
    ));
    t.lines.push(Line::new(
        "new",
        cn,
        pts(&n.intervals, |f| f.ops_per_s, Thin::Mean),
    ));
    let p99 = |f: &IntervalFigures| {
        if f.ops > 0 && f.latency.p99 > 0 {
            f.latency.p99 as f64 / 1e6
        } else {
            f64::NAN
        }
    };
    let mut l = Chart::new("p99 latency over time (ms)", XAxis::Seconds, Kind::Millis);
    l.lines
        .push(Line::new("base", cb, pts(&b.intervals, p99, Thin::Max)));
    l.lines
        .push(Line::new("new", cn, pts(&n.intervals, p99, Thin::Max)));
    // Two runs a decade apart: on a linear axis the faster one is a flat
    // line on zero.
    l.y_log = sections::wants_log(&l.lines);
    let mut s = Chart::new("Percentile spectrum (ms)", XAxis::Spectrum, Kind::Millis);
    s.y_log = true;
    s.lines.push(Line::new(
        "base",
        cb,
        sections::spectrum_points(&b.figures.latency),
    ));
    s.lines.push(Line::new(
        "new",
        cn,
        sections::spectrum_points(&n.figures.latency),
    ));
    vec![t, l, s]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_beyond_the_noise_is_coloured_by_its_direction() {
        let beyond = Some(Verdict::BeyondNoise);
        assert_eq!(
            verdict_class("per second", 100.0, 120.0, beyond),
            "beyond better"
        );
        assert_eq!(
            verdict_class("per second", 100.0, 80.0, beyond),
            "beyond worse"
        );
        assert_eq!(verdict_class("p99", 100.0, 80.0, beyond), "beyond better");
        assert_eq!(verdict_class("p99", 100.0, 120.0, beyond), "beyond worse");
        assert_eq!(
            verdict_class("p99", 100.0, 120.0, Some(Verdict::WithinNoise)),
            "within"
        );
    }
}
