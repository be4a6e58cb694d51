//! The words and the picture of a `--find-max` search: the answer in one
//! line ("sustains 41,200 queries/s with p99<10ms"), the curve of every
//! step (target, achieved rate, p50, p99, p99.9, errors, verdict), a CSV
//! of the steps beside `--csv`, and a PNG of latency against the achieved
//! rate with the criteria's bounds. The search itself is the statistics
//! layer's ([`crate::stats::find_max`]).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::stats::find_max::{FindMaxRecord, Over};

const W: usize = 22;

/// A number with thousands separated: 41,200.
pub fn grouped(v: f64) -> String {
    let whole = v.round() as i64;
    let digits = whole.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if whole < 0 { format!("-{out}") } else { out }
}

/// The answer as one line.
pub fn answer_line(r: &FindMaxRecord) -> String {
    match (r.answer, r.over) {
        (Some(a), Over::Rate) => format!(
            "sustains {} {}/s with {} (held at a target of {}/s; {} missed)",
            grouped(r.answer_achieved().unwrap_or(a)),
            r.units,
            r.slo,
            grouped(a),
            r.lowest_miss
                .map_or("no higher target".to_string(), |m| format!(
                    "{}/s",
                    grouped(m)
                ))
        ),
        (Some(a), Over::Threads) => format!(
            "sustains {} {}/s with {} at {} workers ({} missed)",
            grouped(r.answer_achieved().unwrap_or(0.0)),
            r.units,
            r.slo,
            a,
            r.lowest_miss
                .map_or("no more workers".to_string(), |m| format!("{m} workers"))
        ),
        (None, _) => format!(
            "no target met {}: the lowest tried, {}{}, missed",
            r.slo,
            r.lowest_miss.map_or("?".to_string(), grouped),
            r.over.unit()
        ),
    }
}

/// The summary's block: the answer, how long the search took, the curve.
pub fn write_find_max(out: &mut dyn Write, r: &FindMaxRecord) -> io::Result<()> {
    writeln!(out, "== find-max {} ==", r.operation)?;
    writeln!(out, "{:<W$}: {}", "find-max", answer_line(r))?;
    let repeats = r.steps.iter().filter(|s| s.repeat).count();
    writeln!(
        out,
        "{:<W$}: {} steps ({} repeated within noise) in {:.1} s; each {:.1} s settle + {:.1} s measured; resolution {:.1}%{}",
        "search",
        r.steps.len(),
        repeats,
        r.took_s,
        r.settle_s,
        r.window_s,
        r.resolution * 100.0,
        if r.clients > 1 {
            format!("; {} clients merged per step", r.clients)
        } else {
            String::new()
        }
    )?;
    let target = match r.over {
        Over::Rate => "target/s",
        Over::Threads => "workers",
    };
    writeln!(
        out,
        "  {:>4} {:>10} {:>11} {:>10} {:>10} {:>10} {:>7}  verdict",
        "step", target, "achieved/s", "p50 ms", "p99 ms", "p99.9 ms", "errors"
    )?;
    for s in &r.steps {
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut verdict = if s.met { "held" } else { "missed" }.to_string();
        if s.repeat {
            verdict.push_str(" (repeat)");
        }
        if s.confirm {
            verdict.push_str(" (confirmation)");
        }
        if s.stopped.is_some() {
            verdict.push_str(" (ended early)");
        }
        writeln!(
            out,
            "  {:>4} {:>10} {:>11.1} {:>10.3} {:>10.3} {:>10.3} {:>7}  {verdict}",
            s.step,
            s.target,
            s.achieved_per_s,
            ms(s.p50_ns),
            ms(s.p99_ns),
            ms(s.p999_ns),
            s.errors
        )?;
    }
    Ok(())
}

/// The steps' CSV beside `--csv FILE`: `FILE` with `.find-max.csv`.
pub fn csv_path(csv: &Path) -> PathBuf {
    csv.with_extension("find-max.csv")
}

/// The header of the steps' CSV, how the tool knows its own file.
pub const CSV_COLUMNS: [&str; 14] = [
    "step",
    "target",
    "achieved_per_s",
    "units",
    "errors",
    "skipped",
    "p50_us",
    "p99_us",
    "p999_us",
    "max_us",
    "seconds",
    "met",
    "repeat",
    "confirm",
];

pub fn is_ours(head: &str) -> bool {
    head.starts_with(&CSV_COLUMNS.join(","))
}

/// One row per step.
pub fn write_csv<Wr: Write>(w: Wr, r: &FindMaxRecord) -> Result<()> {
    let fail = |e: csv::Error| Error::run(format!("cannot write the find-max CSV: {e}"));
    let mut out = csv::Writer::from_writer(w);
    out.write_record(CSV_COLUMNS).map_err(fail)?;
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    for s in &r.steps {
        out.write_record([
            s.step.to_string(),
            s.target.to_string(),
            format!("{:.1}", s.achieved_per_s),
            s.units.to_string(),
            s.errors.to_string(),
            s.skipped.to_string(),
            us(s.p50_ns),
            us(s.p99_ns),
            us(s.p999_ns),
            us(s.max_ns),
            format!("{:.3}", s.seconds),
            s.met.to_string(),
            s.repeat.to_string(),
            s.confirm.to_string(),
        ])
        .map_err(fail)?;
    }
    out.flush()
        .map_err(|e| Error::run(format!("cannot write the find-max CSV: {e}")))
}

/// Which latency of a step a line draws.
type Pick = fn(&crate::stats::find_max::StepRecord) -> u64;

/// Draws the curve: p50, p99 and p99.9 (log axis, ms) against each
/// step's target (what the search steps over; the achieved rate of a
/// saturated step is the same for every target above it, which would
/// fold the curve onto one abscissa), held steps filled and missed ones
/// hollow, the bounds dashed; to `path`, `size` pixels.
pub fn draw(r: &FindMaxRecord, path: &Path, size: (u32, u32)) -> Result<()> {
    super::plot::register_font();
    let err =
        |e: &dyn std::fmt::Display| Error::run(format!("cannot draw {}: {e}", path.display()));
    let mut steps: Vec<_> = r.steps.iter().filter(|s| s.units > 0).collect();
    if steps.is_empty() {
        return Err(Error::run("no step measured anything: nothing to draw"));
    }
    steps.sort_by(|a, b| a.target.total_cmp(&b.target));
    let ms = |ns: u64| (ns as f64 / 1e6).max(1e-3);
    let x_hi = steps.iter().map(|s| s.target).fold(0.0, f64::max) * 1.08;
    let y_lo = steps.iter().map(|s| ms(s.p50_ns)).fold(f64::MAX, f64::min) / 1.5;
    let y_hi = steps.iter().map(|s| ms(s.p999_ns)).fold(0.0, f64::max) * 1.5;
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let title = format!("{}: {}", r.operation, answer_line(r));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            0.0..x_hi.max(1.0),
            (y_lo..y_hi.max(y_lo * 10.0)).log_scale(),
        )
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(match r.over {
            Over::Rate => format!("target {}/s", r.units),
            Over::Threads => "workers".to_string(),
        })
        .y_desc("latency from intended start, ms")
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| err(&e))?;
    let lines: [(&str, RGBColor, Pick); 3] = [
        ("p50", RGBColor(31, 119, 180), |s| s.p50_ns),
        ("p99", RGBColor(214, 39, 40), |s| s.p99_ns),
        ("p99.9", RGBColor(148, 103, 189), |s| s.p999_ns),
    ];
    for (name, color, pick) in lines {
        // The line through each target's last step (repeats and
        // confirmations decide it); every step is a point.
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for s in &steps {
            let last = steps
                .iter()
                .filter(|o| o.target == s.target)
                .max_by_key(|o| o.step)
                .is_some_and(|o| o.step == s.step);
            if last {
                pts.push((s.target, ms(pick(s))));
            }
        }
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series(steps.iter().map(|s| {
                let style = if s.met {
                    color.filled()
                } else {
                    color.stroke_width(2)
                };
                Circle::new((s.target, ms(pick(s))), 4, style)
            }))
            .map_err(|e| err(&e))?;
    }
    for v in steps
        .first()
        .map(|s| s.verdicts.clone())
        .unwrap_or_default()
    {
        if v.criterion.contains("p") && v.bound > 0.0 && v.measured_text.ends_with('s') {
            let b = v.bound / 1e6;
            let gray = RGBColor(90, 90, 90);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, b), (x_hi, b)],
                    6,
                    4,
                    gray.stroke_width(1),
                ))
                .map_err(|e| err(&e))?
                .label(format!("bound {}", v.criterion))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], gray));
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(41200.0), "41,200");
        assert_eq!(grouped(999.6), "1,000");
        assert_eq!(grouped(12.0), "12");
        assert_eq!(grouped(1234567.0), "1,234,567");
    }
}
