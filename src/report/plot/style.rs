//! What the pictures look like beyond their data: one colour per series
//! wherever it appears, the titles, and legends drawn beside the charts.
//!
//! A legend inside the plotting area covers the data it names (plotters
//! puts it there), so every legend here is drawn in a column of its own to
//! the right of the charts, entry by entry. Colours come from one function
//! of the series, so `all` and each transaction type look the same in
//! every panel and both pictures.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::stats::OpResult;

/// The colour of `all`, the operation's own series.
pub const ALL_COLOR: RGBColor = RGBColor(0, 0, 255);
/// The colours of a mix's types, in the workload's order: apart from
/// `all`'s blue, none as pale as yellow, none red (which reads as alarm).
pub const TYPE_COLORS: [RGBColor; 8] = [
    RGBColor(0, 150, 0),
    RGBColor(200, 0, 200),
    RGBColor(230, 120, 0),
    RGBColor(0, 160, 160),
    RGBColor(120, 70, 20),
    RGBColor(128, 128, 0),
    RGBColor(110, 110, 110),
    RGBColor(150, 90, 200),
];

/// Which series of an operation: all its units, or one transaction type
/// (0-based, in the workload's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKey {
    All,
    Type(usize),
}

/// The colour of a series, the same in every panel and picture.
pub fn color_of(key: SeriesKey) -> RGBColor {
    match key {
        SeriesKey::All => ALL_COLOR,
        SeriesKey::Type(i) => TYPE_COLORS[i % TYPE_COLORS.len()],
    }
}

/// The colours of the server's wait events in the band, by name, so that a
/// wait looks the same in every picture whatever its share: pale fills,
/// none equal to a series' colour. In the band's stacking order, from the
/// bottom: waiting for the client, then idle, executing, locks, I/O.
const WAIT_COLORS: [(&str, RGBColor); 13] = [
    ("Client:ClientRead", RGBColor(185, 185, 185)),
    ("idle", RGBColor(215, 215, 200)),
    ("idle in transaction", RGBColor(225, 200, 160)),
    ("CPU", RGBColor(150, 205, 140)),
    ("Lock:transactionid", RGBColor(240, 140, 140)),
    ("Lock:tuple", RGBColor(245, 185, 120)),
    ("Lock:relation", RGBColor(230, 165, 200)),
    ("IO:WALSync", RGBColor(140, 175, 235)),
    ("IO:WALWrite", RGBColor(170, 200, 245)),
    ("LWLock:WALWrite", RGBColor(120, 205, 215)),
    ("IO:DataFileRead", RGBColor(200, 170, 230)),
    ("IO:DataFileWrite", RGBColor(215, 195, 240)),
    ("other", RGBColor(95, 95, 95)),
];

/// Pale colours for the waits not in [`WAIT_COLORS`], chosen by a hash of
/// the name.
const WAIT_PALE: [RGBColor; 8] = [
    RGBColor(250, 210, 150),
    RGBColor(190, 225, 170),
    RGBColor(170, 215, 200),
    RGBColor(205, 205, 130),
    RGBColor(225, 180, 160),
    RGBColor(180, 190, 225),
    RGBColor(235, 205, 225),
    RGBColor(200, 180, 150),
];

/// The colour of a wait event (or `other`), the same in every picture.
pub fn wait_color(name: &str) -> RGBColor {
    if let Some((_, c)) = WAIT_COLORS.iter().find(|(n, _)| *n == name) {
        return *c;
    }
    // FNV-1a: fixed, unlike the standard library's randomly seeded hasher.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    WAIT_PALE[(h % WAIT_PALE.len() as u64) as usize]
}

/// Where a wait event lies in the band's stack, lowest first: the named
/// ones in `WAIT_COLORS`' order, then the rest by name, `other` on top.
pub fn wait_order(a: &str, b: &str) -> std::cmp::Ordering {
    let rank = |n: &str| match n {
        "other" => WAIT_COLORS.len(),
        _ => WAIT_COLORS
            .iter()
            .position(|(w, _)| *w == n)
            .unwrap_or(WAIT_COLORS.len() - 1),
    };
    rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
}

/// Font sizes for a picture of `width` × `height` pixels.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub title: u32,
    pub text: u32,
    pub margin: u32,
    /// Left of each chart, for the tick labels and the axis' name.
    pub y_labels: u32,
    /// Under each chart, for the tick labels (and the axis' name).
    pub x_labels: u32,
}

impl Sizes {
    pub fn of(width: u32, height: u32) -> Sizes {
        let text = (height.min(width * 3 / 4) / 52).clamp(10, 16);
        Sizes {
            title: (text + 4).min(20),
            text,
            margin: 10,
            y_labels: text * 5,
            x_labels: text * 2 + 4,
        }
    }
}

/// "copy-mem: 2 threads, batch 1000, 100000 rows, PostgreSQL 15.20", with
/// what the run was sized by in the workload's words (TPC-C's warehouses,
/// not the unused `-r`).
pub fn title(op: &OpResult, server: &str) -> String {
    let mut parts = vec![format!(
        "{} thread{}",
        op.threads,
        if op.threads == 1 { "" } else { "s" }
    )];
    if op.spec.is_load() && op.spec.paced && !op.batch_text.is_empty() {
        parts.push(format!("batch {}", op.batch_text));
    }
    let scale = if op.scale.is_empty() && op.table_rows > 0 {
        format!("{} rows", op.table_rows)
    } else {
        op.scale.clone()
    };
    if !scale.is_empty() {
        parts.push(scale);
    }
    if !server.is_empty() {
        parts.push(server.to_string());
    }
    format!("{}: {}", op.spec, parts.join(", "))
}

/// The workload's figures for the throughput picture's title (TPC-C:
/// tpmC with its efficiency), each as the workload titled it, in its
/// order; None when it titled none.
pub fn figure_text(op: &OpResult) -> Option<String> {
    let titles: Vec<&str> = op
        .metrics
        .iter()
        .filter_map(|m| m.title.as_deref())
        .collect();
    (!titles.is_empty()).then(|| titles.join(", "))
}

/// How a legend entry is marked.
#[derive(Clone, Copy, Debug)]
pub enum Mark {
    /// A series drawn as a line with dots.
    Series(RGBColor),
    /// Sampled points.
    Dot(RGBAColor),
    /// A line in a style: solid 2 px, dashed, dotted, or thin.
    Line(RGBColor, Stroke),
    /// A filled box (a layer of a stacked band).
    Block(RGBAColor),
    /// No mark: a line of text under the entries.
    Note,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
    Dotted,
    Thin,
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub mark: Mark,
    pub text: String,
}

impl Entry {
    pub fn new(mark: Mark, text: impl Into<String>) -> Entry {
        Entry {
            mark,
            text: text.into(),
        }
    }
}

/// Width of the legend column for these entries: the longest text at
/// about 0.6 of the font size a character, with the mark, within a third
/// of the picture: at 1024 pixels wide, room for 35 characters, enough for
/// PostgreSQL's longest wait names (`LWLock:SerializablePredicateList`).
pub fn legend_width(entries: &[Entry], sizes: Sizes, picture_width: u32) -> u32 {
    let chars = entries
        .iter()
        .map(|e| e.text.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let want = chars * sizes.text * 6 / 10 + sizes.text * 3 + 6;
    want.clamp(sizes.text * 6, (picture_width / 3).max(sizes.text * 6))
}

/// How many characters of an entry's text a legend column `width` pixels
/// wide shows before cutting it with an ellipsis.
pub fn legend_chars(width: u32, sizes: Sizes) -> usize {
    let mark_w = sizes.text as i32 * 2;
    ((width as i32 - LEGEND_X0 - mark_w - 6).max(0) * 10 / (sizes.text as i32 * 6)) as usize
}

/// Where a legend's marks begin, from the column's left edge.
const LEGEND_X0: i32 = 6;

/// Draws a straight stretch of a line in a stroke (the legend's sample
/// and the chart's lines share it).
pub fn stroke_style(color: RGBColor, stroke: Stroke) -> ShapeStyle {
    match stroke {
        Stroke::Thin => color.stroke_width(1),
        _ => color.stroke_width(2),
    }
}

/// Draws `entries` top-down in `area` between `top` and `bottom` pixels
/// down: closer together when they would not fit, and the last ones left
/// out (and counted) when even that is not enough; text longer than the
/// column is cut with an ellipsis.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    (top, bottom): (i32, i32),
    sizes: Sizes,
    family: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let room = (bottom - top).max(0);
    let tightest = sizes.text as i32 + 2;
    let line = ((sizes.text * 3 / 2) as i32)
        .min(room / entries.len().max(1) as i32)
        .max(tightest);
    let fit = (room / line).max(1) as usize;
    let mut entries = entries.to_vec();
    if entries.len() > fit {
        let left_out = entries.len() - (fit - 1);
        entries.truncate(fit - 1);
        entries.push(Entry::new(Mark::Note, format!("(and {left_out} more)")));
    }
    let mark_w = (sizes.text * 2) as i32;
    let x0 = LEGEND_X0;
    let font = (family, sizes.text).into_font().color(&BLACK);
    let max_chars = legend_chars(w, sizes);
    for (i, e) in entries.iter().enumerate() {
        let y = top + i as i32 * line + line / 2;
        let text_x = match e.mark {
            Mark::Note => x0,
            _ => x0 + mark_w + 6,
        };
        match e.mark {
            Mark::Series(c) => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + mark_w, y)],
                    c.stroke_width(2),
                ))?;
                area.draw(&Circle::new((x0 + mark_w / 2, y), 3, c.filled()))?;
            }
            Mark::Dot(c) => {
                for dx in [mark_w / 4, mark_w / 2, mark_w * 3 / 4] {
                    area.draw(&Circle::new((x0 + dx, y + (dx % 3) - 1), 2, c.filled()))?;
                }
            }
            Mark::Line(c, stroke) => draw_stroke(area, (x0, y), (x0 + mark_w, y), c, stroke)?,
            Mark::Block(c) => {
                let h = (sizes.text / 2) as i32;
                area.draw(&Rectangle::new(
                    [(x0 + 2, y - h), (x0 + mark_w - 2, y + h)],
                    c.filled(),
                ))?;
            }
            Mark::Note => {}
        }
        let max = match e.mark {
            Mark::Note => max_chars + mark_w as usize * 10 / (sizes.text as usize * 6),
            _ => max_chars,
        };
        let text = if e.text.chars().count() > max && max > 1 {
            let mut t: String = e.text.chars().take(max - 1).collect();
            t.push('…');
            t
        } else {
            e.text.clone()
        };
        area.draw(&Text::new(
            text,
            (text_x, y - sizes.text as i32 / 2 - 1),
            font.clone(),
        ))?;
    }
    Ok(())
}

/// A straight stretch from `a` to `b` in pixels, in a stroke.
fn draw_stroke<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    a: (i32, i32),
    b: (i32, i32),
    c: RGBColor,
    stroke: Stroke,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = stroke_style(c, stroke);
    let (on, off) = match stroke {
        Stroke::Solid | Stroke::Thin => {
            return area.draw(&PathElement::new(vec![a, b], style));
        }
        Stroke::Dashed => (7, 4),
        Stroke::Dotted => (2, 3),
    };
    let len = (b.0 - a.0).max(1);
    let mut x = 0;
    while x < len {
        let end = (x + on).min(len);
        area.draw(&PathElement::new(
            vec![(a.0 + x, a.1), (a.0 + end, b.1)],
            style,
        ))?;
        x += on + off;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Metric;

    #[test]
    fn every_series_keeps_one_colour_and_types_differ_from_all() {
        assert_eq!(color_of(SeriesKey::All), ALL_COLOR);
        for i in 0..TYPE_COLORS.len() {
            assert_ne!(color_of(SeriesKey::Type(i)), ALL_COLOR);
            assert_eq!(color_of(SeriesKey::Type(i)), color_of(SeriesKey::Type(i)));
            for j in 0..i {
                assert_ne!(color_of(SeriesKey::Type(i)), color_of(SeriesKey::Type(j)));
            }
        }
    }

    /// TPC-C's figure of `key` as its workload titles it.
    fn metric(key: &str, value: f64) -> Metric {
        let title = match key {
            "tpmc" => crate::workload::tpcc::tpmc_title(value),
            _ => crate::workload::tpcc::efficiency_title(value),
        };
        Metric::new(key, key, value, String::new()).titled(title)
    }

    #[test]
    fn a_tpcc_title_names_its_warehouses_not_the_rows_of_r() {
        let mut op = OpResult::new(crate::workload::tpcc::RUN.kind(), 4);
        op.table_rows = 100_000;
        op.scale = "2 warehouses".to_string();
        assert_eq!(
            title(&op, "PostgreSQL 15.20"),
            "tpcc: 4 threads, 2 warehouses, PostgreSQL 15.20"
        );
        // Without the workload's words, the rows.
        op.scale.clear();
        assert_eq!(title(&op, ""), "tpcc: 4 threads, 100000 rows");
    }

    #[test]
    fn the_title_gives_the_figures_the_workload_titled() {
        let mut op = OpResult::new(crate::workload::tpcc::RUN.kind(), 4);
        assert_eq!(figure_text(&op), None);
        op.metrics = vec![metric("tpmc", 56420.4), metric("efficiency", 2193.713)];
        assert_eq!(
            figure_text(&op).unwrap(),
            "tpmC 56420, 2194× the specification's maximum (no keying and think times)"
        );
        op.metrics = vec![metric("tpmc", 24.74), metric("efficiency", 0.962)];
        assert_eq!(figure_text(&op).unwrap(), "tpmC 24.7, efficiency 96.2%");
        // A figure without a title stays out of it.
        op.metrics
            .push(Metric::new("warehouses", "warehouses", 2.0, String::new()));
        assert_eq!(figure_text(&op).unwrap(), "tpmC 24.7, efficiency 96.2%");
    }
}
