//! The page's charts: lines and stacked bands drawn as inline SVG.
//!
//! Written here rather than through plotters' SVG backend because the page
//! needs what a drawing library does not give: each line's values in data
//! attributes (for the hover read-out of `page.js` and for tests that
//! compare the page with the JSON), CSS classes instead of baked-in
//! colours for the frame, and a size that follows the page. The ticks are
//! the pictures' own ([`crate::report::plot::axis`]), so a chart on the
//! page reads as the PNGs do.
//!
//! A chart is bounded whatever the run's length: a series longer than
//! [`MAX_POINTS`] is thinned for display by groups of neighbours (the
//! mean of a rate, the largest of a latency, so that a spike stays
//! visible); the figures in the tables are never thinned.

use std::fmt::Write as _;

use maud::{Markup, html};

use crate::report::plot::axis::{Axis, Kind};

/// The most points a line of a chart keeps.
pub const MAX_POINTS: usize = 500;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
/// Room under the frame for the tick labels and the axis' name.
const BOTTOM: f64 = 44.0;

/// Lines of at most this many points get a mark at each (a run of a
/// few intervals would otherwise be a bare segment, or nothing).
const MARKED: usize = 40;

/// Distinct colours, in the order lines take them.
pub const PALETTE: &[&str] = &[
    "#1f5fbf", "#e8710a", "#1a9e4b", "#c5221f", "#8e44ad", "#0f9d9a", "#7a5230", "#b0a000",
    "#d6338a", "#5f6368",
];

/// How a group of neighbouring points is thinned to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thin {
    /// Their mean (a rate).
    Mean,
    /// Their largest (a latency percentile, an error count).
    Max,
}

/// What the x axis measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// Seconds since the start of measurement.
    Seconds,
    /// A percentile, drawn at log10(1 / (1 - p)) as HdrHistogram's
    /// plotter draws the percentile spectrum: 90% at 1, 99% at 2, ...
    Spectrum,
}

/// One line: its name, colour and points (x, y); a NaN y is a gap.
#[derive(Clone, Debug)]
pub struct Line {
    pub name: String,
    /// A CSS colour (`#rrggbb`).
    pub color: String,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

impl Line {
    pub fn new(name: impl Into<String>, color: impl Into<String>, points: Vec<(f64, f64)>) -> Line {
        Line {
            name: name.into(),
            color: color.into(),
            dashed: false,
            points,
        }
    }

    pub fn dashed(mut self) -> Line {
        self.dashed = true;
        self
    }
}

/// A chart of lines (or, `stacked`, of bands that add up).
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x: XAxis,
    /// What the y values are: milliseconds, a rate, a percent.
    pub y: Kind,
    /// Log y axis (latency that spans decades).
    pub y_log: bool,
    pub lines: Vec<Line>,
    /// Bands stacked from the bottom, in the order of `lines`.
    pub stacked: bool,
    /// A sentence under the chart.
    pub note: Option<String>,
    /// The unit the hover read-out gives the values, when not the one
    /// `y` implies (a workload's figure per minute, backends per sample).
    pub unit: Option<&'static str>,
}

impl Chart {
    pub fn new(title: impl Into<String>, x: XAxis, y: Kind) -> Chart {
        Chart {
            title: title.into(),
            x,
            y,
            y_log: false,
            lines: Vec::new(),
            stacked: false,
            note: None,
            unit: None,
        }
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        self.lines
            .iter()
            .all(|l| l.points.iter().all(|p| !p.1.is_finite()))
    }
}

/// Thins `points` to at most `max` by groups of neighbours: each group's
/// last x and its `how` of the y values (gaps left out).
pub fn thin(points: &[(f64, f64)], max: usize, how: Thin) -> Vec<(f64, f64)> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let group = points.len().div_ceil(max);
    points
        .chunks(group)
        .map(|g| {
            let ys: Vec<f64> = g.iter().map(|p| p.1).filter(|y| y.is_finite()).collect();
            let y = if ys.is_empty() {
                f64::NAN
            } else {
                match how {
                    Thin::Mean => ys.iter().sum::<f64>() / ys.len() as f64,
                    Thin::Max => ys.iter().copied().fold(f64::MIN, f64::max),
                }
            };
            (g[g.len() - 1].0, y)
        })
        .collect()
}

/// The percentiles the spectrum is drawn at, up to the one a sample of
/// `count` can tell (1 - 1/count), 20 per decade of 1 / (1 - p).
pub fn spectrum_quantiles(count: u64) -> Vec<f64> {
    let top = (count.max(2) as f64).log10().min(6.0);
    let steps = (top * 20.0).ceil() as usize;
    (0..=steps)
        .map(|i| (i as f64 / 20.0).min(top))
        .map(|x| 1.0 - 10f64.powf(-x))
        .collect()
}

/// The spectrum's x for quantile `q`.
pub fn spectrum_x(q: f64) -> f64 {
    (1.0 / (1.0 - q).max(1e-9)).log10()
}

/// A spectrum tick's text: 0%, 50%, 90%, 99%, 99.9%, ...
fn spectrum_label(x: f64) -> String {
    let p = (1.0 - 10f64.powf(-x)) * 100.0;
    let d = (x.round() as i64 - 2).clamp(0, 6) as usize;
    format!("{p:.d$}%")
}

/// A compact number for the data attributes: four significant digits.
fn num(v: f64) -> String {
    if !v.is_finite() {
        return "NaN".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let d = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.d$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The y axis of `c` over `lo..hi` of its values.
fn y_axis(c: &Chart, lo: f64, hi: f64) -> Axis {
    if c.y_log && lo > 0.0 {
        Axis::log(lo * 0.9, hi * 1.1, c.y)
    } else {
        let top = if hi > 0.0 { hi * 1.05 } else { 1.0 };
        Axis::linear(0.0, top, c.y, 6)
    }
}

/// Where a value goes on a pixel range.
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Scale {
    fn of(a: &Axis, from: f64, to: f64) -> Scale {
        Scale {
            lo: a.lo(),
            hi: a.hi(),
            log: a.is_log(),
            from,
            to,
        }
    }

    fn at(&self, v: f64) -> f64 {
        let f = |x: f64| if self.log { x.max(1e-12).log10() } else { x };
        let (lo, hi) = (f(self.lo), f(self.hi));
        let t = if hi > lo {
            (f(v.clamp(self.lo, self.hi)) - lo) / (hi - lo)
        } else {
            0.0
        };
        self.from + t * (self.to - self.from)
    }
}

/// The stacked tops of the bands: each line's y plus those below it.
fn stack(lines: &[Line]) -> Vec<Vec<(f64, f64)>> {
    let mut below: Vec<f64> = Vec::new();
    lines
        .iter()
        .map(|l| {
            below.resize(l.points.len(), 0.0);
            l.points
                .iter()
                .zip(below.iter_mut())
                .map(|(p, b)| {
                    *b += if p.1.is_finite() { p.1 } else { 0.0 };
                    (p.0, *b)
                })
                .collect()
        })
        .collect()
}

/// The x range of the chart's points.
fn x_range(c: &Chart) -> (f64, f64) {
    let xs = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    match c.x {
        XAxis::Spectrum => (0.0, hi.max(1.0)),
        XAxis::Seconds if lo <= hi => (lo.min(0.0), hi.max(lo + 1e-3)),
        XAxis::Seconds => (0.0, 1.0),
    }
}

/// The path of a line in pixels, gaps breaking it.
fn path_of(points: &[(f64, f64)], sx: &Scale, sy: &Scale) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for &(x, y) in points {
        if !y.is_finite() {
            pen_down = false;
            continue;
        }
        let cmd = if pen_down { 'L' } else { 'M' };
        let _ = write!(d, "{cmd}{:.1} {:.1}", sx.at(x), sy.at(y));
        pen_down = true;
    }
    d
}

/// The chart as an SVG figure with its title, legend and note.
pub fn render(c: &Chart) -> Markup {
    let tops = if c.stacked {
        stack(&c.lines)
    } else {
        c.lines.iter().map(|l| l.points.clone()).collect()
    };
    let ys = tops.iter().flatten().map(|p| p.1).filter(|y| y.is_finite());
    let (lo, hi) = ys.fold((f64::MAX, 0f64), |(a, b), y| {
        (if y > 0.0 { a.min(y) } else { a }, b.max(y))
    });
    let ya = y_axis(c, if lo == f64::MAX { 0.0 } else { lo }, hi);
    let (x0, x1) = x_range(c);
    let xa = match c.x {
        XAxis::Seconds => Axis::linear(x0, x1, Kind::Seconds, 8),
        XAxis::Spectrum => Axis::linear(x0, x1, Kind::Seconds, 8),
    };
    let sx = Scale::of(&xa, LEFT, WIDTH - RIGHT);
    let sy = Scale::of(&ya, HEIGHT - BOTTOM, TOP);
    let x_ticks: Vec<(f64, String)> = match c.x {
        XAxis::Seconds => xa.ticks().iter().map(|&t| (t, xa.label(t))).collect(),
        XAxis::Spectrum => {
            let mut t = vec![0.0, 2f64.log10()];
            t.extend((1..=(x1 + 1e-9) as i64).map(|k| k as f64));
            t.into_iter().map(|x| (x, spectrum_label(x))).collect()
        }
    };
    let y_unit = c.unit.unwrap_or(match c.y {
        Kind::Millis => "ms",
        Kind::Rate => "/s",
        Kind::Percent => "%",
        Kind::Seconds => "s",
    });
    let x_unit = match c.x {
        XAxis::Seconds => "s",
        XAxis::Spectrum => "pct",
    };
    let x_name = match c.x {
        XAxis::Seconds => "seconds since the start of measurement",
        XAxis::Spectrum => "percentile (log scale of 1 / (1 − p))",
    };
    html! {
        figure.chart {
            figcaption { (c.title) }
            svg viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img" aria-label=(c.title)
                data-x0=(num(sx.at(x0))) data-x1=(num(sx.at(x1))) data-lo=(x0) data-hi=(x1)
                data-xunit=(x_unit) data-yunit=(y_unit) {
                (grid(&ya, &sy, &x_ticks, &sx, x_name))
                @for (i, (l, top)) in c.lines.iter().zip(&tops).enumerate() {
                    @if c.stacked {
                        (band(top, tops.get(i.wrapping_sub(1)).filter(|_| i > 0), l, &sx, &sy))
                    } @else {
                        path.line d=(path_of(top, &sx, &sy)) stroke=(l.color)
                            stroke-dasharray=[l.dashed.then_some("5 3")]
                            data-name=(l.name)
                            data-x=(l.points.iter().map(|p| num(p.0)).collect::<Vec<_>>().join(" "))
                            data-y=(l.points.iter().map(|p| num(p.1)).collect::<Vec<_>>().join(" ")) {}
                        @if l.points.len() <= MARKED {
                            g.marks fill=(l.color) {
                                @for p in l.points.iter().filter(|p| p.1.is_finite()) {
                                    circle cx=(num(sx.at(p.0))) cy=(num(sy.at(p.1))) r="2.5" {}
                                }
                            }
                        }
                    }
                }
                line.cursor x1="0" x2="0" y1=(TOP) y2=(HEIGHT - BOTTOM) {}
            }
            div.legend {
                @for l in &c.lines {
                    span { i style=(legend_swatch(l)) {} (l.name) }
                }
            }
            @if let Some(n) = &c.note { p.note { (n) } }
        }
    }
}

/// A legend swatch in a line's colour (dashed for a dashed line).
fn legend_swatch(l: &Line) -> String {
    let style = if l.dashed { "dashed" } else { "solid" };
    format!("border-top: 3px {style} {}", l.color)
}

/// One stacked band: between the tops below and its own.
fn band(
    top: &[(f64, f64)],
    below: Option<&Vec<(f64, f64)>>,
    l: &Line,
    sx: &Scale,
    sy: &Scale,
) -> Markup {
    let mut d = String::new();
    for (i, &(x, y)) in top.iter().enumerate() {
        let cmd = if i == 0 { 'M' } else { 'L' };
        let _ = write!(d, "{cmd}{:.1} {:.1}", sx.at(x), sy.at(y));
    }
    for i in (0..top.len()).rev() {
        let (x, y) = below.map_or((top[i].0, 0.0), |b| b.get(i).copied().unwrap_or((0.0, 0.0)));
        let _ = write!(d, "L{:.1} {:.1}", sx.at(x), sy.at(y));
    }
    d.push('Z');
    html! {
        path.band d=(d) fill=(l.color) data-name=(l.name)
            data-x=(l.points.iter().map(|p| num(p.0)).collect::<Vec<_>>().join(" "))
            data-y=(l.points.iter().map(|p| num(p.1)).collect::<Vec<_>>().join(" ")) {}
    }
}

/// How an x tick's label is anchored at `px`: by its end near the
/// frame's right edge, so that no label runs off the picture (a
/// spectrum's last tick, 99.99%, sits on the edge); else centred.
fn tick_anchor(px: f64) -> &'static str {
    if px > WIDTH - RIGHT - 20.0 {
        "end"
    } else {
        "middle"
    }
}

/// The frame, grid lines, tick labels and the x axis' name.
fn grid(ya: &Axis, sy: &Scale, x_ticks: &[(f64, String)], sx: &Scale, x_name: &str) -> Markup {
    let bottom = HEIGHT - BOTTOM;
    html! {
        g.grid {
            @for &t in ya.ticks() {
                line x1=(LEFT) x2=(WIDTH - RIGHT) y1=(num(sy.at(t))) y2=(num(sy.at(t))) {}
            }
            @for (t, _) in x_ticks {
                line x1=(num(sx.at(*t))) x2=(num(sx.at(*t))) y1=(TOP) y2=(bottom) {}
            }
        }
        g.axis {
            rect x=(LEFT) y=(TOP) width=(WIDTH - LEFT - RIGHT) height=(bottom - TOP) {}
            @for &t in ya.ticks() {
                text x=(LEFT - 5.0) y=(num(sy.at(t) + 4.0)) text-anchor="end" { (ya.label(t)) }
            }
            @for (t, label) in x_ticks {
                text x=(num(sx.at(*t))) y=(bottom + 15.0) text-anchor=(tick_anchor(sx.at(*t))) { (label) }
            }
            text.name x=(num((LEFT + WIDTH - RIGHT) / 2.0)) y=(bottom + 32.0) text-anchor="middle" { (x_name) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_series_is_thinned_and_a_spike_survives_as_its_groups_largest() {
        let mut pts: Vec<(f64, f64)> = (0..3000).map(|i| (i as f64, 1.0)).collect();
        pts[1234].1 = 50.0;
        let t = thin(&pts, MAX_POINTS, Thin::Max);
        assert!(t.len() <= MAX_POINTS);
        assert!(t.iter().any(|p| p.1 == 50.0));
        let m = thin(&pts, MAX_POINTS, Thin::Mean);
        assert!(m.iter().all(|p| p.1 < 50.0));
        assert_eq!(thin(&pts[..10], MAX_POINTS, Thin::Max).len(), 10);
    }

    #[test]
    fn the_spectrum_reaches_the_percentile_the_sample_can_tell() {
        let q = spectrum_quantiles(1000);
        assert_eq!(q[0], 0.0);
        assert!((q.last().unwrap() - 0.999).abs() < 1e-9);
        assert!((spectrum_x(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(spectrum_label(2.0), "99%");
        assert_eq!(spectrum_label(3.0), "99.9%");
        assert_eq!(spectrum_label(0.0), "0%");
    }

    #[test]
    fn the_last_spectrum_tick_stays_inside_the_picture_and_the_x_axis_is_named() {
        let mut c = Chart::new("s", XAxis::Spectrum, Kind::Millis);
        let pts = spectrum_quantiles(10_000)
            .into_iter()
            .map(|q| (spectrum_x(q), 1.0))
            .collect();
        c.lines.push(Line::new("latency", PALETTE[0], pts));
        let svg = render(&c).into_string();
        assert!(
            svg.contains("text-anchor=\"end\">99.99%</text>"),
            "the label on the right edge runs off it: {svg}"
        );
        assert!(svg.contains("percentile (log scale"));
        let mut t = Chart::new("t", XAxis::Seconds, Kind::Rate);
        t.lines
            .push(Line::new("all", PALETTE[0], vec![(1.0, 2.0), (2.0, 3.0)]));
        assert!(
            render(&t)
                .into_string()
                .contains("seconds since the start of measurement")
        );
    }

    #[test]
    fn a_chart_keeps_its_values_in_data_attributes() {
        let mut c = Chart::new("t", XAxis::Seconds, Kind::Millis);
        c.lines.push(Line::new(
            "p99",
            PALETTE[0],
            vec![(1.0, 2.5), (2.0, f64::NAN), (3.0, 4.0)],
        ));
        let svg = render(&c).into_string();
        assert!(svg.contains("data-y=\"2.5 NaN 4\""), "{svg}");
        assert!(svg.contains("<path class=\"line\""));
        assert!(!c.is_empty());
    }
}
