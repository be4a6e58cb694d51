//! The parts of an operation's section that the run page and the
//! comparison share: number formats, the charts made from an operation's
//! intervals and histograms, and the sortable tables.

use hdrhistogram::Histogram;
use maud::{Markup, html};

use super::chart::{
    Chart, Line, MAX_POINTS, PALETTE, Thin, XAxis, spectrum_quantiles, spectrum_x, thin,
};
use crate::report::plot::axis::Kind;
use crate::stats::IntervalFigures;
use crate::stats::record::OpRecord;

/// Which percentile of a set.
pub type Pick = fn(&crate::stats::Percentiles) -> u64;
/// Which count of an interval.
type Count = fn(&IntervalFigures) -> u64;

/// Nanoseconds as the page writes them ("1.234 ms").
pub fn ns(v: u64) -> String {
    crate::report::compare::ns(v)
}

/// A count with thousands separated: 12,345.
pub fn count(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with one decimal and thousands separated: 12,345.6.
pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let whole = v.trunc().abs() as u64;
    let tenth = ((v.abs() - v.abs().trunc()) * 10.0).round() as u64;
    let (whole, tenth) = if tenth == 10 {
        (whole + 1, 0)
    } else {
        (whole, tenth)
    };
    let sign = if v < 0.0 { "-" } else { "" };
    format!("{sign}{}.{tenth}", count(whole))
}

/// Whether the intervals hold percentiles (a merged report written
/// before interval histograms were kept has none: 0 beside a max).
fn percentiles_known(iv: &[IntervalFigures]) -> bool {
    iv.iter()
        .any(|f| f.ops > 0 && (f.latency.p50 > 0 || f.histograms.is_some()))
}

/// Points of `iv` by end time, `y` of each interval (NaN: none).
fn series(iv: &[IntervalFigures], y: impl Fn(&IntervalFigures) -> f64) -> Vec<(f64, f64)> {
    iv.iter().map(|f| (f.end_s, y(f))).collect()
}

/// Milliseconds of a percentile, NaN for an interval without units.
fn ms_or_gap(f: &IntervalFigures, ns: u64) -> f64 {
    if f.ops > 0 && ns > 0 {
        ns as f64 / 1e6
    } else {
        f64::NAN
    }
}

/// Whether latencies spanning `lines` want a log axis (a tail ten times
/// the typical value).
pub fn wants_log(lines: &[Line]) -> bool {
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && *y > 0.0)
        .collect();
    let lo = ys.iter().copied().fold(f64::MAX, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    ys.len() > 1 && hi / lo >= 20.0
}

/// The throughput over time: all units, and each type of a mix.
pub fn throughput(op: &OpRecord, label: &str) -> Chart {
    let what = if op.load { "rows" } else { op_units(op) };
    let mut c = Chart::new(
        format!("Throughput{label} ({what} per second)"),
        XAxis::Seconds,
        Kind::Rate,
    );
    let y = |f: &IntervalFigures| if op.load { f.rows_per_s } else { f.ops_per_s };
    c.lines.push(Line::new(
        "all",
        PALETTE[0],
        thin(&series(&op.intervals, y), MAX_POINTS, Thin::Mean),
    ));
    if op.is_mix() {
        for (i, t) in op.types.iter().enumerate() {
            c.lines.push(Line::new(
                t.name.clone(),
                PALETTE[(i + 1) % PALETTE.len()],
                thin(&series(&t.intervals, y), MAX_POINTS, Thin::Mean),
            ));
        }
    }
    c
}

/// The unit's plural.
fn op_units(op: &OpRecord) -> &str {
    if op.unit_plural.is_empty() {
        &op.unit
    } else {
        &op.unit_plural
    }
}

/// p50, p99 and p99.9 over time, from the intended start (solid) and, when
/// it differed, from the send (service time, dashed).
pub fn latency(op: &OpRecord, label: &str) -> Option<Chart> {
    let iv = &op.intervals;
    if !percentiles_known(iv) {
        return None;
    }
    let mut c = Chart::new(
        format!("Latency{label} over time (ms)"),
        XAxis::Seconds,
        Kind::Millis,
    );
    let picks: [(&str, Pick); 3] = [
        ("p50", |p| p.p50),
        ("p99", |p| p.p99),
        ("p99.9", |p| p.p999),
    ];
    let served = iv.iter().any(|f| f.service.is_some());
    for (i, (name, pick)) in picks.iter().enumerate() {
        let pts = series(iv, |f| ms_or_gap(f, pick(&f.latency)));
        c.lines.push(Line::new(
            *name,
            PALETTE[i],
            thin(&pts, MAX_POINTS, Thin::Max),
        ));
    }
    if served {
        for (i, (name, pick)) in picks.iter().enumerate() {
            let pts = series(iv, |f| ms_or_gap(f, pick(&f.service())));
            c.lines.push(
                Line::new(
                    format!("{name} service"),
                    PALETTE[i],
                    thin(&pts, MAX_POINTS, Thin::Max),
                )
                .dashed(),
            );
        }
        c.note = Some(
            "Solid: latency from when each unit was due (its slot under --rate); dashed: service \
             time from when it was sent. The gap between them is time spent waiting to be sent."
                .to_string(),
        );
    }
    c.y_log = wants_log(&c.lines);
    thinned_note(&mut c, iv.len());
    Some(c)
}

/// Says under a chart that its points were thinned.
fn thinned_note(c: &mut Chart, n: usize) {
    if n > MAX_POINTS {
        let group = n.div_ceil(MAX_POINTS);
        let add = format!(
            "Drawn by groups of {group} intervals (the largest percentile of each group); the tables hold every figure."
        );
        c.note = Some(match c.note.take() {
            Some(n) => format!("{n} {add}"),
            None => add,
        });
    }
}

/// p99 of each type of a mix over time.
pub fn type_p99(op: &OpRecord) -> Option<Chart> {
    if !op.is_mix() || !op.types.iter().any(|t| percentiles_known(&t.intervals)) {
        return None;
    }
    let mut c = Chart::new(
        "p99 latency per transaction type (ms)",
        XAxis::Seconds,
        Kind::Millis,
    );
    for (i, t) in op.types.iter().enumerate() {
        let pts = series(&t.intervals, |f| ms_or_gap(f, f.latency.p99));
        c.lines.push(Line::new(
            t.name.clone(),
            PALETTE[(i + 1) % PALETTE.len()],
            thin(&pts, MAX_POINTS, Thin::Max),
        ));
    }
    c.y_log = wants_log(&c.lines);
    Some(c)
}

/// The spectrum of one histogram: (x, ms) at the spectrum's quantiles.
pub fn spectrum_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    spectrum_quantiles(h.len())
        .into_iter()
        .map(|q| (spectrum_x(q), h.value_at_quantile(q) as f64 / 1e6))
        .collect()
}

/// The whole percentile spectrum of each type (or of all units), on a
/// log axis of 1 / (1 - p), latency and, when it differed, service time.
pub fn spectrum(op: &OpRecord) -> Option<Chart> {
    if op.figures.latency.is_empty() {
        return None;
    }
    let mut c = Chart::new("Percentile spectrum (ms)", XAxis::Spectrum, Kind::Millis);
    if op.is_mix() {
        for (i, t) in op.types.iter().enumerate() {
            let color = PALETTE[(i + 1) % PALETTE.len()];
            c.lines.push(Line::new(
                t.name.clone(),
                color,
                spectrum_points(&t.figures.latency),
            ));
        }
    } else {
        c.lines.push(Line::new(
            "latency",
            PALETTE[0],
            spectrum_points(&op.figures.latency),
        ));
    }
    if op.figures.service != op.figures.latency && !op.figures.service.is_empty() {
        c.lines.push(
            Line::new(
                "service time (all)",
                PALETTE[PALETTE.len() - 1],
                spectrum_points(&op.figures.service),
            )
            .dashed(),
        );
    }
    c.y_log = true;
    c.note = Some(
        "Each unit's latency at every percentile, from the run's HDR histograms: the right end \
         is the slowest units."
            .to_string(),
    );
    Some(c)
}

/// Errors, retries and skipped units per second over time, when any.
pub fn trouble(op: &OpRecord) -> Option<Chart> {
    let iv = &op.intervals;
    if iv
        .iter()
        .all(|f| f.errors == 0 && f.retries == 0 && f.skipped == 0)
    {
        return None;
    }
    let mut c = Chart::new(
        "Errors, retries and skipped units (per second)",
        XAxis::Seconds,
        Kind::Rate,
    );
    let per_s = |n: u64, f: &IntervalFigures| {
        if f.seconds > 0.0 {
            n as f64 / f.seconds
        } else {
            0.0
        }
    };
    let lines: [(&str, &'static str, Count); 3] = [
        ("failed", PALETTE[3], |f| f.errors),
        ("retries", PALETTE[1], |f| f.retries),
        ("skipped", PALETTE[9], |f| f.skipped),
    ];
    for (name, color, pick) in lines {
        if iv.iter().any(|f| pick(f) > 0) {
            let pts = series(iv, |f| per_s(pick(f), f));
            c.lines
                .push(Line::new(name, color, thin(&pts, MAX_POINTS, Thin::Max)));
        }
    }
    Some(c)
}

/// The workload's own figures over time (TPC-C's tpmC), one chart each.
pub fn workload_figures(op: &OpRecord) -> Vec<Chart> {
    let lines = op.metric_lines();
    op.interval_metrics
        .iter()
        .map(|(key, values)| {
            let line = lines.iter().find(|m| &m.key == key);
            let label = line.map_or(key.as_str(), |m| m.label.as_str());
            let percent = line.is_some_and(|m| written_in_percent(&m.text, m.value));
            let (title, scale) = if percent {
                (format!("{label} over time (%)"), 100.0)
            } else {
                (format!("{label} over time"), 1.0)
            };
            let mut c = Chart::new(title, XAxis::Seconds, Kind::Rate);
            c.unit = Some(if percent { "%" } else { "" });
            let pts: Vec<(f64, f64)> = op
                .intervals
                .iter()
                .zip(values)
                .map(|(f, v)| (f.end_s, *v * scale))
                .collect();
            c.lines.push(Line::new(
                key.clone(),
                PALETTE[2],
                thin(&pts, MAX_POINTS, Thin::Mean),
            ));
            c
        })
        .collect()
}

/// Whether the summary writes a figure kept as a fraction in percent
/// (TPC-C's efficiency: 3.92 kept, "392.0% of ..." written), so that its
/// chart is drawn in the summary's unit, not in one the reader never saw.
pub fn written_in_percent(text: &str, value: f64) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    match first.strip_suffix('%').map(str::parse::<f64>) {
        Some(Ok(shown)) if value != 0.0 => (shown / (value * 100.0) - 1.0).abs() < 1e-3,
        _ => false,
    }
}

/// A sortable table: `head` the column titles (numeric columns sort by
/// each cell's `data-v`), `rows` already made.
pub fn table(class: &str, head: &[&str], rows: Markup) -> Markup {
    html! {
        div.scroll {
            table class=(format!("sortable {class}")) {
                thead { tr { @for h in head { th { (h) } } } }
                tbody { (rows) }
            }
        }
    }
}

/// A cell that sorts by `v` and shows `text`.
pub fn num_cell(v: f64, text: impl Into<String>) -> Markup {
    html! { td.num data-v=(v) { (text.into()) } }
}

/// The charts of a list, in a grid.
pub fn charts(list: &[Chart]) -> Markup {
    html! {
        div.charts {
            @for c in list.iter().filter(|c| !c.is_empty()) {
                (super::chart::render(c))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(rate(12345.67), "12,345.7");
        assert_eq!(rate(9.96), "10.0");
        assert_eq!(rate(f64::NAN), "–");
    }

    #[test]
    fn a_fraction_the_summary_writes_in_percent_is_drawn_in_percent() {
        assert!(written_in_percent("39197.1% of 12.86 tpmC", 391.971));
        assert!(written_in_percent("96.2% of 12.86 tpmC", 0.962));
        assert!(!written_in_percent("5040.8 (all New-Orders)", 5040.8));
        assert!(!written_in_percent("391.9715", 391.9715));
        assert!(!written_in_percent("50.0%", 0.0));
    }
}
