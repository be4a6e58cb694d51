//! `--graph`: PNG pictures of an operation, made with plotters and a
//! bundled font (DejaVu Sans), so no system font library is needed.
//!
//! Two pictures per operation, both over the same bins of time (see
//! [`series`]: chosen from the run's length, or `-P`'s intervals):
//!
//! - latency: a uniform sample of the units as pale dots (coloured by
//!   transaction type in a mix), so that their density is true, and over
//!   them the p50, p99, p99.9 and max of each bin as lines. The sample
//!   alone would hide the tail, and each slice's extremes alone (what the
//!   scatter keeps besides its random picks) would make it look far
//!   heavier than it is; the lines say where the tail is and how rare.
//! - throughput: the rate (units per second, rows per second for a load)
//!   and the p99 of each bin, per transaction type beside `all`, on a log
//!   axis when the types differ tenfold (TPC-C's three small types would
//!   otherwise lie on one line at the bottom), with the server's wait
//!   events as a band under them.
//!
//! Every legend is drawn in a column beside the charts, never over data;
//! each series has one colour in every panel and picture ([`style`]);
//! each axis writes its ticks one way ([`axis`]). File names carry the
//! run's start time and the operation, and an existing file is never
//! overwritten: a number is added instead.

pub mod axis;
pub mod series;
pub mod style;

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};
use crate::stats::OpResult;
use axis::{Axis, Kind};
use series::{Bin, P99, RATE, Timeseries};
pub use style::{ALL_COLOR, SeriesKey, TYPE_COLORS, color_of};
use style::{Entry, Mark, Sizes, Stroke};

/// The PNG pictures: the report's own options, which the run plan builds
/// from `--graph*` and `-P`.
#[derive(Clone, Debug)]
pub struct GraphOptions {
    pub dir: PathBuf,
    pub width: u32,
    pub height: u32,
    pub log_y: bool,
    /// `-P` was given: the pictures draw its intervals, as the progress
    /// lines and the CSV have them, instead of choosing their own from the
    /// run's length.
    pub interval_given: bool,
}

const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";
/// How much of a dot's colour shows over white: pale, so that the lines
/// over the dots stay readable and where dots pile up it shows.
const DOT_ALPHA: f64 = 0.25;
/// The white edge each side of a latency line, in pixels: where the dots
/// pile up they are nearly the line's colour, and the line would vanish.
const HALO: u32 = 1;
/// `--rate`'s target: a dashed line of no series' colour.
const TARGET_COLOR: RGBColor = RGBColor(70, 70, 70);
/// Series with more points than this get no marker on each point.
const MARKERS_UP_TO: usize = 40;

pub(crate) fn register_font() {
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
    // Made here, with the first picture, not when the flags were checked
    // (see config's check_graph_dir): a run that draws nothing leaves no
    // directory behind.
    std::fs::create_dir_all(&opts.dir).map_err(|e| {
        Error::io(
            format!("cannot create --graph-dir {}", opts.dir.display()),
            e,
        )
    })?;
    let stem = format!("ysql-bench-{run_stamp}-{}", op.spec);
    let ts = series::of(op, opts.interval_given);
    let latency = free_path(&opts.dir, &format!("{stem}-latency"));
    draw_latency(op, &ts, opts, server, &latency)?;
    let throughput = free_path(&opts.dir, &format!("{stem}-throughput"));
    draw_throughput(op, &ts, opts, server, &throughput)?;
    Ok(vec![latency, throughput])
}

/// Whether values of several series that differ this much need a log
/// axis: the largest typical value over the smallest, of those above 0.
pub fn wants_log(typical: &[f64]) -> bool {
    let pos: Vec<f64> = typical.iter().copied().filter(|v| *v > 0.0).collect();
    let (lo, hi) = pos
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    pos.len() > 1 && hi / lo >= 10.0
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The title lines centred over `area`; returns the area under them. A
/// second line, when given, is put after the first when both fit.
fn titled<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    first: &str,
    second: Option<&str>,
    sizes: Sizes,
) -> std::result::Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let fits = |s: &str| (s.chars().count() as u32) * sizes.title * 55 / 100 < w.saturating_sub(20);
    let lines: Vec<String> = match second {
        Some(s) if fits(&format!("{first}, {s}")) => vec![format!("{first}, {s}")],
        Some(s) => vec![first.to_string(), s.to_string()],
        None => vec![first.to_string()],
    };
    let line_h = sizes.title as i32 * 3 / 2;
    let style = TextStyle::from((FAMILY, sizes.title).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, l) in lines.iter().enumerate() {
        area.draw(&Text::new(
            l.clone(),
            (w as i32 / 2, 6 + i as i32 * line_h),
            style.clone(),
        ))?;
    }
    let (_, below) = area.split_vertically(8 + lines.len() as i32 * line_h);
    Ok(below)
}

/// The time axis of a picture: from 0 to the end of the measurement.
fn time_axis(op: &OpResult, chart_width: u32, sizes: Sizes) -> Axis {
    let end = series::run_end(op).max(1e-3);
    let ticks = (chart_width / (sizes.text * 6)).clamp(4, 12) as usize;
    Axis::linear(0.0, end, Kind::Seconds, ticks)
}

/// The size of the mark where the max runs above the latency axis, in
/// pixels.
const CLIP_MARK: u32 = 4;

/// Where a line runs above the axis: the middle of each bin whose value is
/// over its top.
fn clip_marks(bins: &[Bin], y: &Axis, value: impl Fn(&Bin) -> Option<f64>) -> Vec<f64> {
    bins.iter()
        .filter(|b| value(b).is_some_and(|v| v > y.hi()))
        .map(Bin::mid)
        .collect()
}

/// Lines of fewer points than this are drawn as steps.
const STEPS_BELOW: usize = 20;

/// The stretches of a line through one value of each bin: at the bins'
/// middles, or with few bins as steps, each bin's value across its time
/// (a rate or a p99 over ten seconds is one value over those seconds,
/// and a single bin is a stretch, not a dot). A bin without a value (no
/// unit of that type in it) breaks the line rather than being bridged.
/// Values are moved inside the axis.
fn line_segments(
    bins: &[Bin],
    y: &Axis,
    value: impl Fn(&Bin) -> Option<f64>,
) -> Vec<Vec<(f64, f64)>> {
    let steps = bins.iter().filter(|b| value(b).is_some()).count() < STEPS_BELOW;
    // Runs of bins with a value, each a stretch of the line; a run of
    // one bin is drawn across it.
    let mut runs: Vec<Vec<(&Bin, f64)>> = vec![Vec::new()];
    for b in bins {
        match value(b) {
            Some(v) => runs
                .last_mut()
                .into_iter()
                .for_each(|r| r.push((b, y.clamp(v)))),
            None => runs.push(Vec::new()),
        }
    }
    runs.into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| {
            if steps || r.len() == 1 {
                r.iter()
                    .flat_map(|(b, v)| [(b.t0, *v), (b.t1, *v)])
                    .collect()
            } else {
                r.iter().map(|(b, v)| (b.mid(), *v)).collect()
            }
        })
        .collect()
}

/// Draws the stretches of one line in a stroke.
fn draw_line<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
    segments: Vec<Vec<(f64, f64)>>,
    color: RGBColor,
    stroke: Stroke,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = style::stroke_style(color, stroke);
    draw_stretches(chart, segments, style, stroke)
}

/// Draws a line with a white edge of [`HALO`] pixels each side under it, so
/// that it stays visible where the dots under it are as dark as it is.
fn draw_haloed_line<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
    segments: Vec<Vec<(f64, f64)>>,
    color: RGBColor,
    stroke: Stroke,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let width = style::stroke_style(color, stroke).stroke_width;
    let halo = WHITE.stroke_width(width + 2 * HALO);
    draw_stretches(chart, segments.clone(), halo, stroke)?;
    draw_line(chart, segments, color, stroke)
}

fn draw_stretches<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
    segments: Vec<Vec<(f64, f64)>>,
    style: ShapeStyle,
    stroke: Stroke,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for pts in segments {
        match stroke {
            Stroke::Solid | Stroke::Thin => {
                chart.draw_series(LineSeries::new(pts, style))?;
            }
            Stroke::Dashed => {
                chart.draw_series(DashedLineSeries::new(pts, 7, 4, style))?;
            }
            Stroke::Dotted => {
                chart.draw_series(DashedLineSeries::new(pts, 2, 3, style))?;
            }
        }
    }
    Ok(())
}

fn mesh<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
    x: &Axis,
    y: &Axis,
    x_desc: Option<&str>,
    y_desc: &str,
    sizes: Sizes,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (fx, fy) = (|v: &f64| x.label(*v), |v: &f64| y.label(*v));
    let mut m = chart.configure_mesh();
    m.x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .y_desc(y_desc)
        .label_style((FAMILY, sizes.text))
        .axis_desc_style((FAMILY, sizes.text))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(240, 240, 240));
    if let Some(d) = x_desc {
        m.x_desc(d);
    }
    m.draw()
}

/// "0.078 s", "2 ms", "1 s": a bin's width as a legend says it.
fn width_text(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", trim(s, 2))
    } else {
        format!("{} ms", trim(s * 1e3, 1))
    }
}

fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn ms_text(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 1.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.3} ms")
    }
}

/// What a latency line reads from a bin.
type Value = fn(&Bin) -> Option<f64>;

/// A latency line: its name, its stroke, its bins and what it reads.
type Line<'a> = (&'static str, Stroke, &'a [Bin], Value);

/// The percentile lines of the latency picture on `points`: p50 and max
/// always, p99 and p99.9 when the run has the units for them (`chosen`),
/// each only if some bin has a value for it.
fn percentile_lines<'a>(points: &'a [Bin], chosen: &series::LatencyLines) -> Vec<Line<'a>> {
    let wanted: [(&'static str, Stroke, bool, Value); 4] = [
        ("p50", Stroke::Solid, true, |b| b.p50),
        ("p99", Stroke::Dashed, chosen.p99, |b| b.p99),
        ("p99.9", Stroke::Dotted, chosen.p999, |b| b.p999),
        ("max", Stroke::Thin, true, |b| b.max),
    ];
    wanted
        .iter()
        .filter(|(_, _, on, f)| *on && points.iter().any(|b| f(b).is_some()))
        .map(|(name, stroke, _, f)| (*name, *stroke, points, *f))
        .collect()
}

/// The y axis of the latency picture, and the highest value of the max
/// line: linear up to where the highest percentile line goes (the max
/// line, drawn thin, may go above it, and then its peak is in the
/// legend), or logarithmic over everything. `sampled`: the dots, in ms.
fn latency_axis(lines: &[Line], sampled: &[f64], log_y: bool) -> (Axis, f64) {
    let top_of = |name: &str| {
        lines
            .iter()
            .find(|l| l.0 == name)
            .map(|(_, _, bins, f)| bins.iter().filter_map(f).fold(0f64, f64::max))
    };
    let peak = top_of("max").unwrap_or(0.0);
    let top_pct = top_of("p99.9").or_else(|| top_of("p99")).unwrap_or(peak);
    let low = lines
        .iter()
        .flat_map(|(_, _, bins, f)| bins.iter().filter_map(f))
        .chain(sampled.iter().copied())
        .fold(f64::MAX, f64::min);
    let y = if log_y {
        let lo = if low < f64::MAX { low / 1.5 } else { 1e-3 };
        Axis::log(lo, peak.max(lo * 10.0) * 1.3, Kind::Millis)
    } else {
        let top = if peak <= top_pct * 1.5 { peak } else { top_pct };
        let top = if top > 0.0 {
            top
        } else {
            sampled.iter().copied().fold(1e-3, f64::max)
        };
        Axis::linear(0.0, top * 1.1, Kind::Millis, 8)
    };
    (y, peak)
}

/// The latency picture's legend: the dots (per type of a mix) and how
/// many units each is, the lines and the width of their bins (`first`
/// of them), and the max's peak when it runs above the axis (`clipped`).
fn latency_legend(
    op: &OpResult,
    one_in: f64,
    lines: &[Line],
    (first, fixed): (Option<&Bin>, bool),
    clipped: Option<f64>,
) -> Vec<Entry> {
    let mix = op.is_mix();
    let mut entries = Vec::new();
    if mix {
        for (i, t) in op.types.iter().enumerate() {
            let c = color_of(SeriesKey::Type(i)).mix(0.6);
            entries.push(Entry::new(Mark::Dot(c), t.name));
        }
    } else {
        entries.push(Entry::new(Mark::Dot(ALL_COLOR.mix(0.6)), op.spec.units));
    }
    let dots = if one_in <= 1.0 {
        format!("dots: every {}", op.spec.unit)
    } else if one_in < 10.0 {
        format!("dots: 1 {} in {}", op.spec.unit, trim(one_in, 1))
    } else {
        format!("dots: 1 {} in {}", op.spec.unit, trim(one_in, 0))
    };
    entries.push(Entry::new(Mark::Note, dots));
    for (name, stroke, _, _) in lines {
        let of_all = if mix { " of all" } else { "" };
        entries.push(Entry::new(
            Mark::Line(ALL_COLOR, *stroke),
            format!("{name}{of_all}"),
        ));
    }
    if let Some(b) = first {
        let fixed = if fixed { " (-P)" } else { "" };
        entries.push(Entry::new(
            Mark::Note,
            format!("lines: per {}{fixed}", width_text(b.t1 - b.t0)),
        ));
    }
    if let Some(peak) = clipped {
        entries.push(Entry::new(
            Mark::Note,
            format!("▲ max above, up to {}", ms_text(peak)),
        ));
    }
    entries
}

fn draw_latency(
    op: &OpResult,
    ts: &Timeseries,
    opts: &GraphOptions,
    server: &str,
    path: &Path,
) -> Result<()> {
    let e = err(path);
    let sizes = Sizes::of(opts.width, opts.height);
    let sample = series::uniform_sample(&op.scatter);
    let all = ts.all();
    let mix = op.is_mix();
    // The lines of `all`, on one set of points, those the run has the
    // units for.
    let chosen = series::latency_lines(all.units(), all.fixed());
    let points = all.bins(chosen.res);
    let lines = percentile_lines(&points, &chosen);
    let sampled: Vec<f64> = sample
        .points
        .iter()
        .map(|p| p.latency_ns as f64 / 1e6)
        .collect();
    let (y, peak) = latency_axis(&lines, &sampled, opts.log_y);
    let clipped = (peak > y.hi()).then_some(peak);
    let entries = latency_legend(
        op,
        sample.one_in,
        &lines,
        (points.first(), all.fixed()),
        clipped,
    );

    let root = BitMapBackend::new(path, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = titled(
        &root,
        &format!("latency per {}: {}", op.spec.unit, style::title(op, server)),
        None,
        sizes,
    )
    .map_err(&e)?;
    let lw = style::legend_width(&entries, sizes, opts.width);
    let (charts, legend) = root.split_horizontally(opts.width.saturating_sub(lw));
    let x = time_axis(op, opts.width - lw, sizes);
    let mut chart = ChartBuilder::on(&charts)
        .margin(sizes.margin)
        .x_label_area_size(sizes.x_labels + sizes.text)
        .y_label_area_size(sizes.y_labels)
        .build_cartesian_2d(x.clone(), y.clone())
        .map_err(&e)?;
    let y_desc = if y.is_log() {
        "latency (ms, log scale)"
    } else {
        "latency (ms)"
    };
    mesh(
        &mut chart,
        &x,
        &y,
        Some("seconds since start"),
        y_desc,
        sizes,
    )
    .map_err(&e)?;
    let in_range = |v: f64| v >= y.lo() && v <= y.hi();
    chart
        .draw_series(
            sample
                .points
                .iter()
                .map(|p| (p, p.latency_ns as f64 / 1e6))
                .filter(|(_, v)| in_range(*v))
                .map(|(p, v)| {
                    let key = if mix {
                        SeriesKey::Type(usize::from(p.ty))
                    } else {
                        SeriesKey::All
                    };
                    let c = color_of(key).mix(DOT_ALPHA);
                    Circle::new((p.t_ns as f64 / 1e9, v), 2, c.filled())
                }),
        )
        .map_err(&e)?;
    // The lines over the dots, each with its white edge; p50 last, so
    // that where the lines meet the dots' middle stays readable.
    for (_, stroke, bins, f) in lines.iter().rev() {
        let segments = line_segments(bins, &y, f);
        draw_haloed_line(&mut chart, segments, ALL_COLOR, *stroke).map_err(&e)?;
    }
    // Where the max runs above the axis, a mark at the top edge: the line
    // lies flat along it there, and would read as if the max were the top.
    if let Some((_, _, bins, f)) = lines.iter().find(|l| l.0 == "max") {
        chart
            .draw_series(clip_marks(bins, &y, *f).into_iter().map(|t| {
                EmptyElement::at((t, y.hi()))
                    + TriangleMarker::new((0, CLIP_MARK as i32 + 2), CLIP_MARK, ALL_COLOR.filled())
            }))
            .map_err(&e)?;
    }
    let legend_h = legend.dim_in_pixel().1 as i32;
    let span = (sizes.margin as i32, legend_h);
    style::draw_legend(&legend, &entries, span, sizes, FAMILY).map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

/// The throughput picture's legend column: as wide as the wider of the
/// series' legend and the wait band's (the names of the waits it draws).
fn throughput_legend_width(op: &OpResult, entries: &[Entry], sizes: Sizes, width: u32) -> u32 {
    let series = style::legend_width(entries, sizes, width);
    if !super::server::has_wait_band(op) {
        return series;
    }
    let waits: Vec<Entry> = super::server::wait_band_names(op)
        .into_iter()
        .chain(["other".to_string()])
        .map(|n| Entry::new(Mark::Block(WHITE.to_rgba()), n))
        .collect();
    series.max(style::legend_width(&waits, sizes, width))
}

/// The throughput picture's legend: the series, `--rate`'s `target`,
/// and how wide the bins of the rates and of the tail (`tail_name`) are.
fn throughput_legend(
    op: &OpResult,
    ts: &Timeseries,
    (rates, tails): (&[Vec<Bin>], &[Vec<Bin>]),
    tail_name: &str,
    target: Option<f64>,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = ts
        .series
        .iter()
        .map(|s| Entry::new(Mark::Series(color_of(s.key)), s.name.clone()))
        .collect();
    if let Some(t) = target {
        entries.push(Entry::new(
            Mark::Line(TARGET_COLOR, Stroke::Dashed),
            format!("target {}/s", trim(t, 1)),
        ));
    }
    let units = op.spec.units;
    if ts.all().fixed() {
        if let Some(b) = rates.last().and_then(|b| b.first()) {
            entries.push(Entry::new(
                Mark::Note,
                format!("per {} (-P)", width_text(b.t1 - b.t0)),
            ));
        }
    } else {
        entries.push(Entry::new(
            Mark::Note,
            format!("rates: ≥{} {units}", RATE.need),
        ));
        if let Some(b) = tails.first().and_then(|b| b.first()) {
            entries.push(Entry::new(
                Mark::Note,
                format!("{tail_name}: per {}", width_text(b.t1 - b.t0)),
            ));
        }
    }
    entries
}

/// Whether the series' typical values (each one's median of `f`) lie so
/// far apart that a panel of them needs a log scale.
fn log_wanted(series: &[Vec<Bin>], f: &dyn Fn(&Bin) -> Option<f64>) -> bool {
    let typical: Vec<_> = series
        .iter()
        .map(|bins| median(bins.iter().filter_map(f).collect()))
        .collect();
    wants_log(&typical)
}

/// The rate panel's axis over the rates `vals` (and the target).
fn rate_axis(vals: impl Iterator<Item = f64> + Clone, log: bool) -> Axis {
    if log {
        let lo = vals.clone().filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
        let hi = vals.fold(0f64, f64::max);
        Axis::log(lo / 1.5, hi * 1.5, Kind::Rate)
    } else {
        Axis::linear(0.0, vals.fold(0f64, f64::max) * 1.1 + 1e-9, Kind::Rate, 6)
    }
}

/// The tail panel's axis over the p99s (or maxima) `vals`, in ms.
fn tail_axis(vals: impl Iterator<Item = f64> + Clone, log: bool) -> Axis {
    if log {
        let lo = vals.clone().filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
        let lo = if lo < f64::MAX { lo } else { 1e-3 };
        Axis::log(lo / 1.5, vals.fold(lo, f64::max) * 1.5, Kind::Millis)
    } else {
        Axis::linear(0.0, vals.fold(0f64, f64::max) * 1.1 + 1e-9, Kind::Millis, 6)
    }
}

/// One series' line on a panel of a picture `width` pixels wide, made of
/// `bins` bins.
fn draw_series_line<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<Axis, Axis>>,
    segments: Vec<Vec<(f64, f64)>>,
    bins: usize,
    color: RGBColor,
    width: u32,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    // More points than half the pixels across: plotters draws a wide line
    // as polygons whose joins spike at sharp turns, so a 1-pixel line then.
    let points = segments.iter().map(Vec::len).sum::<usize>();
    let dense = points as u64 > u64::from(width) / 2;
    let stroke = if dense { Stroke::Thin } else { Stroke::Solid };
    // Markers on a line of few points, not on steps (fewer than
    // STEPS_BELOW bins, whose corners are not points).
    if (STEPS_BELOW..=MARKERS_UP_TO).contains(&bins) {
        chart.draw_series(
            segments
                .iter()
                .flatten()
                .map(|p| Circle::new(*p, 3, color.filled())),
        )?;
    }
    draw_line(chart, segments, color, stroke)
}

fn draw_throughput(
    op: &OpResult,
    ts: &Timeseries,
    opts: &GraphOptions,
    server: &str,
    path: &Path,
) -> Result<()> {
    let e = err(path);
    let sizes = Sizes::of(opts.width, opts.height);
    let rows = op.spec.is_load();
    let rate_of = |b: &Bin| b.rate(rows);
    // Per series its rate; the tails on one set of points, that of the
    // type with the fewest units, as a p99 where every series has the
    // units for one, else as the max that it would be.
    let rates: Vec<Vec<Bin>> = ts.series.iter().map(|s| s.bins(RATE)).collect();
    let p99s: Vec<Vec<Bin>> = ts.common_bins(P99);
    let tail = series::tail_of(&p99s);
    let tail_of = move |b: &Bin| match tail {
        series::Tail::P99 => b.p99,
        series::Tail::Max => b.max,
    };
    let tail_name = match tail {
        series::Tail::P99 => "p99",
        series::Tail::Max => "max",
    };
    let rate_log = log_wanted(&rates, &|b| Some(rate_of(b)));
    let p99_log = opts.log_y || log_wanted(&p99s, &tail_of);

    // --rate's target, on the rate panel when it counts units (a load's
    // counts rows, its target batches).
    let target = op.rate.map(|r| r.per_second).filter(|_| !rows);
    let entries = throughput_legend(op, ts, (&rates, &p99s), tail_name, target);
    let band = super::server::has_wait_band(op);
    let root = BitMapBackend::new(path, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = titled(
        &root,
        &style::title(op, server),
        style::figure_text(op).as_deref(),
        sizes,
    )
    .map_err(&e)?;
    let lw = throughput_legend_width(op, &entries, sizes, opts.width);
    let (charts, legend) = root.split_horizontally(opts.width.saturating_sub(lw));
    let x = time_axis(op, opts.width - lw, sizes);
    let height = charts.dim_in_pixel().1 as i32;
    let (panels, band_area) = if band {
        let (c, b) = charts.split_vertically(height * 3 / 4);
        (c, Some(b))
    } else {
        (charts.clone(), None)
    };
    let half = panels.dim_in_pixel().1 as i32 / 2;
    let (top, bottom) = panels.split_vertically(half);

    let what = if rows {
        "rows per second".to_string()
    } else {
        format!("{} per second", op.spec.units)
    };
    let rate_axis = rate_axis(rates.iter().flatten().map(rate_of).chain(target), rate_log);
    let p99_axis = tail_axis(p99s.iter().flatten().filter_map(tail_of), p99_log);
    let log_note = |s: String, log: bool| if log { format!("{s}, log scale") } else { s };
    let panels_spec = [
        (&top, &rate_axis, log_note(what, rate_log), true),
        (
            &bottom,
            &p99_axis,
            log_note(format!("{tail_name} latency (ms)"), p99_log),
            false,
        ),
    ];
    for (area, y, desc, is_rate) in panels_spec {
        let mut chart = ChartBuilder::on(area)
            .margin(sizes.margin)
            .x_label_area_size(sizes.x_labels)
            .y_label_area_size(sizes.y_labels)
            .build_cartesian_2d(x.clone(), y.clone())
            .map_err(&e)?;
        let x_desc = (!band && !is_rate).then_some("seconds since start");
        mesh(&mut chart, &x, y, x_desc, &desc, sizes).map_err(&e)?;
        // The types first, `all` last so that it stays on top.
        for (i, s) in ts.series.iter().enumerate() {
            let color = color_of(s.key);
            let bins = if is_rate { &rates[i] } else { &p99s[i] };
            let segments = if is_rate {
                line_segments(bins, y, |b| Some(rate_of(b)))
            } else {
                line_segments(bins, y, tail_of)
            };
            draw_series_line(&mut chart, segments, bins.len(), color, opts.width).map_err(&e)?;
        }
        if let Some(t) = target.filter(|_| is_rate) {
            let line = vec![vec![(x.lo(), y.clamp(t)), (x.hi(), y.clamp(t))]];
            draw_line(&mut chart, line, TARGET_COLOR, Stroke::Dashed).map_err(&e)?;
        }
    }
    let top_y = sizes.margin as i32;
    let legend_h = legend.dim_in_pixel().1 as i32;
    let band_top = match &band_area {
        Some(b) => legend_h - b.dim_in_pixel().1 as i32,
        None => legend_h,
    };
    style::draw_legend(&legend, &entries, (top_y, band_top), sizes, FAMILY).map_err(&e)?;
    if let Some(band_area) = &band_area {
        let band_entries = super::server::draw_wait_band(band_area, op, &x, sizes, FAMILY)
            .map_err(|why| Error::run(format!("cannot draw {}: {why}", path.display())))?;
        let mut all = vec![Entry::new(Mark::Note, "server waits:")];
        all.extend(band_entries);
        let span = (band_top + top_y, legend_h);
        style::draw_legend(&legend, &all, span, sizes, FAMILY).map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::server::{ServerFigures, ServerInterval, WaitCounts};
    use crate::stats::{IntervalFigures, Percentiles, Scatter, TypeResult};
    use std::time::Duration;

    const EVENTS: [&str; 6] = [
        "Client:ClientRead",
        "CPU",
        "IO:WALSync",
        "LWLock:WALWrite",
        "Lock:transactionid",
        "IO:DataFileRead",
    ];

    /// A YCSB-A-like mix of 30 s: steady rates and latencies, the server's
    /// waits, a scatter sample and a timeline.
    fn mix_op() -> OpResult {
        let mut op = OpResult::new(crate::workload::ycsb::A.kind(), 4);
        op.wallclock = Duration::from_secs(30);
        op.scale = "100000 rows".to_string();
        let interval = |i: u64, ops: u64, p99_ms: u64| IntervalFigures {
            index: i,
            end_s: (i + 1) as f64,
            seconds: 1.0,
            ops,
            rows: ops,
            ops_per_s: ops as f64,
            rows_per_s: ops as f64,
            latency: Percentiles {
                min: 100_000,
                p50: 500_000,
                p99: p99_ms * 1_000_000,
                p999: p99_ms * 2_000_000,
                max: p99_ms * 3_000_000,
                ..Default::default()
            },
            ..Default::default()
        };
        op.intervals = (0..30).map(|i| interval(i, 1000, 4)).collect();
        op.types = ["read", "update"]
            .iter()
            .enumerate()
            .map(|(t, name)| TypeResult {
                name,
                stats: Default::default(),
                intervals: (0..30)
                    .map(|i| interval(i, 600 - 200 * t as u64, 2 + 2 * t as u64))
                    .collect(),
            })
            .collect();
        let server = ServerFigures {
            intervals: (0..30)
                .map(|i| {
                    let mut waits = WaitCounts::default();
                    waits.add_sample(EVENTS.iter().enumerate().map(|(k, e)| (*e, 10 - k as u64)));
                    ServerInterval {
                        index: i,
                        waits,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        };
        op.server = Some(server);
        let mut scatter = Scatter::for_workers(1, 4);
        op.timeline = crate::stats::Timeline::new(2);
        // 60% reads, from 1 ms on; the dots from 0.5 s on, so that none
        // touches an axis (which the tests find by its black lines).
        for i in 0..30_000u64 {
            let (t, ty) = (i * 1_000_000, u16::from(i % 5 >= 3));
            let lat = 1_000_000 + (i * 7919 % 1000) * 3_000;
            if i >= 500 {
                scatter.record(t, lat, (i % 4) as u32, ty);
            }
            op.timeline.record(t, usize::from(ty), lat, 1);
        }
        op.scatter = vec![scatter];
        op
    }

    fn options(dir: &Path, interval_given: bool) -> GraphOptions {
        GraphOptions {
            dir: dir.to_path_buf(),
            width: 1024,
            height: 768,
            log_y: false,
            interval_given,
        }
    }

    struct Png {
        w: usize,
        h: usize,
        px: Vec<u8>,
    }

    impl Png {
        fn read(path: &Path) -> Png {
            let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
            let mut reader = decoder.read_info().unwrap();
            let mut px = vec![0; reader.output_buffer_size()];
            let info = reader.next_frame(&mut px).unwrap();
            assert_eq!(info.color_type, png::ColorType::Rgb);
            Png {
                w: info.width as usize,
                h: info.height as usize,
                px,
            }
        }

        fn at(&self, x: usize, y: usize) -> [u8; 3] {
            let i = (y * self.w + x) * 3;
            [self.px[i], self.px[i + 1], self.px[i + 2]]
        }

        /// The plotting areas: inside each chart's axes, the black lines
        /// left of and under it (x from the left axis to the end of the
        /// bottom one, y from the top of the left one to the bottom one).
        fn plot_areas(&self) -> Vec<(usize, usize, usize, usize)> {
            const BLACK_PX: [u8; 3] = [0, 0, 0];
            let mut areas = Vec::new();
            for y in 1..self.h {
                // A bottom axis: a black run of at least a third of the
                // width, with a black column rising from its left end.
                let mut x = 0;
                while x < self.w {
                    if self.at(x, y) != BLACK_PX {
                        x += 1;
                        continue;
                    }
                    let x0 = x;
                    while x < self.w && self.at(x, y) == BLACK_PX {
                        x += 1;
                    }
                    if x - x0 < self.w / 3 {
                        continue;
                    }
                    // The left axis: the column near the run's start (the
                    // y axis may end a pixel left of it and above it, or
                    // the run begin with the y axis' bottom tick) that
                    // rises furthest.
                    let rise = |c: usize| {
                        let mut top = y;
                        while top > 0 && self.at(c, top - 1) == BLACK_PX {
                            top -= 1;
                        }
                        (y - top, c, top)
                    };
                    let (len, left, top) = (x0.saturating_sub(2)..(x0 + 12).min(x))
                        .map(rise)
                        .max()
                        .unwrap_or((0, x0, y));
                    if len > 40 {
                        areas.push((left + 1, x - 1, top, y - 1));
                    }
                }
            }
            areas
        }
    }

    #[test]
    fn legends_lie_outside_every_plotting_area() {
        let dir = tempfile::tempdir().unwrap();
        let op = mix_op();
        for given in [false, true] {
            let paths = draw(&op, &options(dir.path(), given), "t", "PostgreSQL 15").unwrap();
            for path in &paths {
                let png = Png::read(path);
                let areas = png.plot_areas();
                // The latency picture has one chart; the throughput picture
                // two panels and the band.
                let want = if path.to_string_lossy().contains("latency") {
                    1
                } else {
                    3
                };
                assert_eq!(areas.len(), want, "{}: {areas:?}", path.display());
                for &(x0, x1, y0, y1) in &areas {
                    // A legend's box and text are black; the data never is.
                    let black: Vec<(usize, usize)> = (y0..=y1)
                        .flat_map(|y| (x0..=x1).map(move |x| (x, y)))
                        .filter(|&(x, y)| png.at(x, y) == [0, 0, 0])
                        .collect();
                    assert!(
                        black.is_empty(),
                        "{}: {} black pixels in the plotting area {:?}, e.g. {:?}",
                        path.display(),
                        black.len(),
                        (x0, x1, y0, y1),
                        &black[..black.len().min(5)]
                    );
                }
                // The legend's text is there, right of the charts.
                let right = areas.iter().map(|a| a.1).max().unwrap();
                let dark = (0..png.h)
                    .flat_map(|y| (right + 1..png.w).map(move |x| (x, y)))
                    .filter(|&(x, y)| png.at(x, y).iter().all(|c| *c < 60))
                    .count();
                assert!(
                    dark > 200,
                    "{}: no legend right of the charts",
                    path.display()
                );
            }
        }
    }

    /// One operation of 30 s whose units take 1 to 4 ms, most near 1 ms:
    /// its dots pile up thickly around the p50, as in a real run.
    fn dense_op() -> OpResult {
        let mut op = mix_op();
        op.types.clear();
        let mut scatter = Scatter::for_workers(1, 4);
        op.timeline = crate::stats::Timeline::new(1);
        for i in 0..60_000u64 {
            let t = i * 500_000;
            let r = (i * 7919 % 1000) as f64 / 1000.0;
            let lat = 1_000_000 + (r.powi(4) * 3e6) as u64;
            if i >= 1000 {
                scatter.record(t, lat, (i % 4) as u32, 0);
            }
            op.timeline.record(t, 0, lat, 1);
        }
        op.scatter = vec![scatter];
        op
    }

    #[test]
    fn the_p50_line_stays_visible_where_the_dots_are_densest() {
        let dir = tempfile::tempdir().unwrap();
        let op = dense_op();
        assert!(!op.is_mix());
        let paths = draw(&op, &options(dir.path(), false), "t", "").unwrap();
        let png = Png::read(&paths[0]);
        let areas = png.plot_areas();
        assert_eq!(areas.len(), 1);
        let (x0, x1, y0, y1) = areas[0];
        let line = [ALL_COLOR.0, ALL_COLOR.1, ALL_COLOR.2];
        // In columns across the middle of the chart: the lowest pixel of
        // the lines' colour is the p50's (the dots, pale, never reach it),
        // and it has white right under it (its edge), not dots.
        let columns: Vec<usize> = (0..20).map(|k| x0 + (x1 - x0) * (4 + k) / 28).collect();
        let mut dark_under = Vec::new();
        for &x in &columns {
            let lowest = (y0..=y1).rev().find(|&y| png.at(x, y) == line);
            let Some(y) = lowest else {
                panic!("no line in column {x} of {:?}", areas[0]);
            };
            // The dots are thick there: the p50 lies in their middle.
            let dotted = (y + 5..(y + 40).min(y1))
                .filter(|&yy| png.at(x, yy) != [255, 255, 255])
                .count();
            assert!(dotted > 20, "few dots under the p50 in column {x}");
            if !(y + 1..=(y + 2).min(y1)).any(|yy| png.at(x, yy) == [255, 255, 255]) {
                dark_under.push((x, y, png.at(x, y + 1)));
            }
        }
        assert!(
            dark_under.len() <= 2,
            "the p50 line runs straight into the dots: {dark_under:?}"
        );
    }

    #[test]
    fn long_wait_names_are_not_cut_at_the_default_size() {
        let mut op = mix_op();
        let long = [
            "LWLock:WALBufMapping",
            "IPC:ParallelCreateIndexScan",
            "LWLock:SerializablePredicateList",
            "Client:ClientRead",
        ];
        for iv in &mut op.server.as_mut().unwrap().intervals {
            let mut waits = WaitCounts::default();
            waits.add_sample(long.iter().map(|n| (*n, 5)));
            iv.waits = waits;
        }
        let sizes = Sizes::of(1024, 768);
        let entries = [Entry::new(Mark::Series(ALL_COLOR), "all")];
        let lw = throughput_legend_width(&op, &entries, sizes, 1024);
        for name in long {
            assert!(
                style::legend_chars(lw, sizes) >= name.chars().count(),
                "{name} cut in a legend {lw} px wide"
            );
        }
        // And the picture is drawn with them.
        let dir = tempfile::tempdir().unwrap();
        draw(&op, &options(dir.path(), false), "t", "").unwrap();
    }

    #[test]
    fn a_max_above_the_axis_is_marked_where_it_is_cut() {
        let bin = |i: usize, v: f64| Bin {
            t0: i as f64,
            t1: i as f64 + 1.0,
            units: 1,
            rows: 0,
            p50: Some(1.0),
            p99: Some(2.0),
            p999: Some(3.0),
            max: Some(v),
        };
        let y = Axis::linear(0.0, 10.0, Kind::Millis, 5);
        let bins = [bin(0, 4.0), bin(1, 50.0), bin(2, 9.0), bin(3, 11.0)];
        assert_eq!(clip_marks(&bins, &y, |b| b.max), [1.5, 3.5]);
        // In a picture: one unit 20 times the p99.9, marked at the
        // top of the chart over that bin, with its peak in the legend.
        let mut op = dense_op();
        op.timeline.record(15_000_000_000, 0, 80_000_000, 1);
        let dir = tempfile::tempdir().unwrap();
        let paths = draw(&op, &options(dir.path(), false), "t", "").unwrap();
        let png = Png::read(&paths[0]);
        let (x0, x1, y0, _) = png.plot_areas()[0];
        let blue = [ALL_COLOR.0, ALL_COLOR.1, ALL_COLOR.2];
        // The mark hangs under the top edge, a filled triangle: rows 3 to 8
        // under it hold far more blue than the thin max line crossing them,
        // and only over the bin in the middle.
        let blue_in = |xs: std::ops::RangeInclusive<usize>| {
            xs.flat_map(|x| (y0 + 3..y0 + 9).map(move |y| (x, y)))
                .filter(|&(x, y)| png.at(x, y) == blue)
                .count()
        };
        let mid = (x0 + x1) / 2;
        let near = blue_in(mid - 20..=mid + 20);
        assert!(near >= 20, "no clip mark: {near} blue pixels under the top");
        assert_eq!(blue_in(x0..=mid - 25) + blue_in(mid + 25..=x1), 0);
    }

    #[test]
    fn lines_are_steps_when_short_and_break_where_a_bin_has_no_value() {
        let bin = |i: usize, v: Option<f64>| Bin {
            t0: i as f64,
            t1: i as f64 + 1.0,
            units: u64::from(v.is_some()),
            rows: 0,
            p50: v,
            p99: v,
            p999: v,
            max: v,
        };
        let y = Axis::linear(0.0, 10.0, Kind::Millis, 5);
        let few = [bin(0, Some(1.0)), bin(1, None), bin(2, Some(20.0))];
        assert_eq!(
            line_segments(&few, &y, |b| b.p99),
            [vec![(0.0, 1.0), (1.0, 1.0)], vec![(2.0, 10.0), (3.0, 10.0)]]
        );
        let mut many: Vec<Bin> = (0..30).map(|i| bin(i, Some(2.0))).collect();
        many[10] = bin(10, None);
        many[12] = bin(12, None);
        let segs = line_segments(&many, &y, |b| b.p99);
        let lens: Vec<usize> = segs.iter().map(Vec::len).collect();
        // 0..=9 through the middles, 11 alone across its bin, 13..=29.
        assert_eq!(lens, [10, 2, 17]);
        assert_eq!(segs[0][0], (0.5, 2.0));
        assert_eq!(segs[1], [(11.0, 2.0), (12.0, 2.0)]);
    }

    #[test]
    fn all_has_one_colour_in_every_panel_and_each_type_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let paths = draw(&mix_op(), &options(dir.path(), false), "t", "").unwrap();
        let png = Png::read(&paths[1]);
        let areas = png.plot_areas();
        assert_eq!(areas.len(), 3);
        let has = |area: (usize, usize, usize, usize), c: RGBColor| {
            let (x0, x1, y0, y1) = area;
            (y0..=y1).any(|y| (x0..=x1).any(|x| png.at(x, y) == [c.0, c.1, c.2]))
        };
        // The rate panel and the p99 panel: all, read and update each in
        // its own colour, the same in both.
        for &panel in &areas[..2] {
            for key in [SeriesKey::All, SeriesKey::Type(0), SeriesKey::Type(1)] {
                assert!(has(panel, color_of(key)), "{key:?} missing in {panel:?}");
            }
        }
    }
}
