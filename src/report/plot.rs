//! `--graph`: PNG pictures of an operation, made with plotters and a
//! bundled font (DejaVu Sans), so no system font library is needed.
//!
//! Two pictures per operation: a scatterplot of latency over time, one
//! colour per thread (worker; the points are a bounded sample per OS
//! thread that keeps each point's worker: every time slice's fastest and
//! slowest unit and a few random ones per worker, see
//! [`crate::stats::scatter`]); and throughput and p99 latency per interval.
//! File names carry the run's start time and the operation, and an
//! existing file is never overwritten: a number is added instead.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::config::GraphOptions;
use crate::error::{Error, Result};
use crate::stats::OpResult;

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";
/// The colours of a mix's types in the throughput picture: apart from
/// the total's blue and red, and none as pale as yellow.
pub const TYPE_COLORS: [RGBColor; 5] = [
    RGBColor(0, 150, 0),
    RGBColor(200, 0, 200),
    RGBColor(230, 120, 0),
    RGBColor(0, 160, 160),
    RGBColor(120, 70, 20),
];
/// Threads named in the legend; more would hide the picture.
const LEGEND_MAX: usize = 16;

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bundled font is valid; if it were not, text would be missing
        // from the pictures, which the tests would show.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

fn err<E: std::fmt::Display>(what: &Path) -> impl Fn(E) -> Error + '_ {
    move |e| Error::run(format!("cannot draw {}: {e}", what.display()))
}

/// A path in `dir` named `stem.png` that does not exist yet.
pub fn free_path(dir: &Path, stem: &str) -> PathBuf {
    let first = dir.join(format!("{stem}.png"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| dir.join(format!("{stem}-{n}.png")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Draws both pictures of `op`; returns their paths.
pub fn draw(
    op: &OpResult,
    opts: &GraphOptions,
    run_stamp: &str,
    server: &str,
) -> Result<Vec<PathBuf>> {
    register_font();
    let stem = format!("ysql-bench-{run_stamp}-{}", op.spec);
    let latency = free_path(&opts.dir, &format!("{stem}-latency"));
    draw_scatter(op, opts, server, &latency)?;
    let throughput = free_path(&opts.dir, &format!("{stem}-throughput"));
    draw_throughput(op, opts, server, &throughput)?;
    Ok(vec![latency, throughput])
}

fn title(op: &OpResult, server: &str) -> String {
    let mut t = format!(
        "{}: {} thread{}",
        op.spec,
        op.threads,
        if op.threads == 1 { "" } else { "s" }
    );
    if op.spec.is_load() && op.spec.paced {
        t.push_str(&format!(", batch {}", op.batch_text));
    }
    t.push_str(&format!(", {} rows, {server}", op.table_rows));
    t
}

fn draw_scatter(op: &OpResult, opts: &GraphOptions, server: &str, path: &Path) -> Result<()> {
    let e = err(path);
    let root = BitMapBackend::new(path, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    // The samples are kept per OS thread; each point knows its worker.
    let mut threads: Vec<Vec<(f64, f64)>> = vec![Vec::new(); op.threads.max(1)];
    for p in op.scatter.iter().flat_map(|s| s.points()) {
        let w = (p.worker as usize).min(threads.len() - 1);
        threads[w].push((p.t_ns as f64 / 1e9, p.latency_ns as f64 / 1e3));
    }
    let all = threads.iter().flatten();
    let x_max = all
        .clone()
        .map(|p| p.0)
        .fold(op.wallclock.as_secs_f64(), f64::max)
        .max(1e-3);
    let (lo, hi) = all.fold((f64::MAX, 0f64), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    let (lo, hi) = if lo > hi { (1.0, 10.0) } else { (lo, hi) };
    // A log axis is drawn as log10 of the value with labels put back.
    let f = |v: f64| if opts.log_y { v.max(1e-3).log10() } else { v };
    let (y_lo, y_hi) = if opts.log_y {
        (f(lo) - 0.1, f(hi) + 0.1)
    } else {
        (0.0, hi * 1.05 + 1e-3)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("latency per {}: {}", op.spec.unit, title(op, server)),
            (FAMILY, 20),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max * 1.01, y_lo..y_hi)
        .map_err(&e)?;
    let log_y = opts.log_y;
    chart
        .configure_mesh()
        .x_desc("seconds since start")
        .y_desc(if log_y {
            "latency (us, log scale)"
        } else {
            "latency (us)"
        })
        .y_label_formatter(&move |v: &f64| {
            if log_y {
                // Ticks fall on half decades (31.6, 316, 3162): two
                // significant digits read better and are as exact as the eye.
                let us = 10f64.powf(*v);
                let digits = (us.log10().floor() as i32 - 1).max(0) as u32;
                let step = 10f64.powi(digits as i32);
                format!("{:.0}", (us / step).round() * step)
            } else if *v >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        })
        .label_style((FAMILY, 14))
        .draw()
        .map_err(&e)?;
    for (t, pts) in threads.iter().enumerate() {
        let color = Palette99::pick(t).to_rgba();
        let series = chart
            .draw_series(
                pts.iter()
                    .map(|(x, y)| Circle::new((*x, f(*y)), 2, color.filled())),
            )
            .map_err(&e)?;
        if t < LEGEND_MAX {
            series
                .label(format!("thread {}", t + 1))
                .legend(move |(x, y)| Circle::new((x, y), 4, color.filled()));
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FAMILY, 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

fn draw_throughput(op: &OpResult, opts: &GraphOptions, server: &str, path: &Path) -> Result<()> {
    let e = err(path);
    let root = BitMapBackend::new(path, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    // The workload's throughput figure (TPC-C: tpmC and efficiency over
    // the run), beside the units per second the chart draws.
    let mut caption = title(op, server);
    let figure = |k: &str| op.metrics.iter().find(|m| m.key == k).map(|m| m.value);
    if let Some(tpmc) = figure("tpmc") {
        caption.push_str(&format!(", tpmC {tpmc:.1}"));
        if let Some(eff) = figure("efficiency") {
            caption.push_str(&format!(" (efficiency {:.1}%)", eff * 100.0));
        }
    }
    let root = root.titled(&caption, (FAMILY, 20)).map_err(&e)?;
    // With the server's waits, a band of a quarter of the height under
    // the two charts.
    let (charts, band) = if super::server::has_wait_band(op) {
        let (c, b) = root.split_vertically(opts.height as i32 * 3 / 4 - 15);
        (c, Some(b))
    } else {
        (root.clone(), None)
    };
    let half = charts.dim_in_pixel().1 as i32 / 2;
    let (top, bottom) = charts.split_vertically(half);
    let x_max = op
        .intervals
        .last()
        .map(|f| f.end_s)
        .unwrap_or(1.0)
        .max(1e-3);
    // Each interval is drawn at its middle.
    let mid = |f: &crate::stats::IntervalFigures| f.end_s - f.seconds / 2.0;
    // For a mix one series per type, then the operation's own, drawn last
    // so that it stays on top.
    let mut series: Vec<(String, &[crate::stats::IntervalFigures])> = Vec::new();
    if op.is_mix() {
        series.extend(
            op.types
                .iter()
                .map(|t| (t.name.to_string(), &t.intervals[..])),
        );
    }
    series.push(("all".to_string(), &op.intervals[..]));
    let rate: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(n, iv)| {
            (
                n.clone(),
                iv.iter().map(|f| (mid(f), f.ops_per_s)).collect(),
            )
        })
        .collect();
    let p99: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(n, iv)| {
            let pts = iv
                .iter()
                .filter(|f| f.ops > 0)
                .map(|f| (mid(f), f.latency.p99 as f64 / 1e6))
                .collect();
            (n.clone(), pts)
        })
        .collect();
    for (area, lines, what) in [
        (&top, &rate, format!("{} per second", op.spec.units)),
        (&bottom, &p99, "p99 latency (ms)".to_string()),
    ] {
        let y_hi = lines
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
            .fold(0f64, f64::max)
            * 1.1
            + 1e-3;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max * 1.01, 0f64..y_hi)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_desc("seconds since start")
            .y_desc(what.as_str())
            .y_label_formatter(&|v: &f64| {
                if *v >= 10.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            })
            .label_style((FAMILY, 14))
            .draw()
            .map_err(&e)?;
        let total = lines.len() - 1;
        for (i, (name, points)) in lines.iter().enumerate() {
            // The operation's own line in the colours of a one-type
            // picture (blue rate, red p99); each type in a colour of its
            // own, far from those two and readable on white.
            let color = match i {
                _ if i == total && what.starts_with("p99") => RED.to_rgba(),
                _ if i == total => BLUE.to_rgba(),
                n => TYPE_COLORS[n % TYPE_COLORS.len()].to_rgba(),
            };
            // More points than half the pixels across: plotters draws a
            // wide line as polygons whose joins spike far out of the chart
            // at sharp turns, and the markers would hide the line; a
            // 1-pixel line then.
            let dense = points.len() as u64 > u64::from(opts.width) / 2;
            let drawn = chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(if dense { 1 } else { 2 }),
                ))
                .map_err(&e)?;
            if lines.len() > 1 {
                drawn
                    .label(name.as_str())
                    .legend(move |(x, y)| Circle::new((x, y), 4, color.filled()));
            }
            if !dense {
                chart
                    .draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                    .map_err(&e)?;
            }
        }
        if lines.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FAMILY, 14))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(&e)?;
        }
    }
    if let Some(band) = &band {
        super::server::draw_wait_band(band, op, x_max, FAMILY)
            .map_err(|why| Error::run(format!("cannot draw {}: {why}", path.display())))?;
    }
    root.present().map_err(&e)?;
    Ok(())
}
