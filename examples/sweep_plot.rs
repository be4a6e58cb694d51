//! Draws the connection sweep of `bench/compare.sh` as one PNG: for each
//! operation, units per second and client CPU per unit against the number
//! of connections, one line per tool. A unit is what the operation counts:
//! a query for select and update by key, a transaction for pgbench's
//! built-in scripts.
//!
//! An example rather than a subcommand: it is a tool of the benchmark
//! script, not of the benchmark, and it needs nothing the project does not
//! already build (plotters with its bitmap backend and the bundled font),
//! so no system library enters the build.
//!
//!   cargo run --release --example sweep_plot -- SWEEP.tsv OUT.png [TITLE]
//!
//! SWEEP.tsv has a header line, then one line per point, tab-separated:
//! `op  tool  connections  units_per_s  cpu_us_per_unit  rss_mb`.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::FontStyle;

const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// One measured point: connections, units/s, CPU µs per unit.
type Point = (u32, f64, f64);

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (input, output) = match (args.get(1), args.get(2)) {
        (Some(i), Some(o)) => (i, o),
        _ => return Err("usage: sweep_plot SWEEP.tsv OUT.png [TITLE]".into()),
    };
    let title = args.get(3).map_or("connection sweep", String::as_str);
    let text = std::fs::read_to_string(input).map_err(|e| format!("cannot read {input}: {e}"))?;
    let series = parse(&text).map_err(|e| format!("{input}: {e}"))?;
    if series.is_empty() {
        return Err(format!("{input}: no points").into());
    }
    draw(&series, Path::new(output), title).map_err(|e| format!("cannot draw {output}: {e}"))?;
    Ok(())
}

/// Points per operation, then per tool, in connection order.
type Series = BTreeMap<String, BTreeMap<String, Vec<Point>>>;

fn parse(text: &str) -> Result<Series, String> {
    let mut series = Series::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 5 {
            return Err(format!("line {}: expected 5 or more fields", n + 1));
        }
        let num = |i: usize| -> Result<f64, String> {
            f[i].trim()
                .parse::<f64>()
                .map_err(|_| format!("line {}: '{}' is not a number", n + 1, f[i]))
        };
        let conns = num(2)? as u32;
        series
            .entry(f[0].to_string())
            .or_default()
            .entry(f[1].to_string())
            .or_default()
            .push((conns, num(3)?, num(4)?));
    }
    for tools in series.values_mut() {
        for pts in tools.values_mut() {
            pts.sort_by_key(|p| p.0);
        }
    }
    Ok(series)
}

fn draw(series: &Series, path: &Path, title: &str) -> Result<(), Box<dyn Error>> {
    let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    let ops = series.len();
    let root = BitMapBackend::new(path, (1200, 420 * ops as u32 + 40)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, (FAMILY, 22))?;
    let rows = root.split_evenly((ops, 2));
    let all = series.values().flat_map(|t| t.values()).flatten();
    let max_conns = all.clone().map(|p| p.0).max().unwrap_or(1).max(2);
    let x_hi = (max_conns as f64).log2() + 0.3;
    let colors = [
        RGBColor(30, 90, 200),
        RGBColor(200, 60, 30),
        RGBColor(0, 140, 0),
    ];
    for (row, (op, tools)) in series.iter().enumerate() {
        for (col, (what, pick)) in [
            ("units/s", (|p: &Point| p.1) as fn(&Point) -> f64),
            ("client CPU µs per unit", |p: &Point| p.2),
        ]
        .into_iter()
        .enumerate()
        {
            let area = &rows[row * 2 + col];
            let y_hi = tools.values().flatten().map(pick).fold(0f64, f64::max) * 1.15 + 1e-9;
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{op}: {what}"), (FAMILY, 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(-0.3f64..x_hi, 0f64..y_hi)?;
            chart
                .configure_mesh()
                .x_desc("connections (log scale)")
                .x_labels(12)
                .x_label_formatter(&|v: &f64| {
                    let c = 2f64.powf(*v).round();
                    if (c.log2() - v).abs() < 0.01 {
                        format!("{c:.0}")
                    } else {
                        String::new()
                    }
                })
                .y_label_formatter(&|v: &f64| {
                    if *v >= 1000.0 {
                        format!("{:.0}k", v / 1000.0)
                    } else {
                        format!("{v:.0}")
                    }
                })
                .label_style((FAMILY, 13))
                .draw()?;
            for (i, (tool, pts)) in tools.iter().enumerate() {
                let color = colors[i % colors.len()];
                let line: Vec<(f64, f64)> = pts
                    .iter()
                    .map(|p| ((p.0.max(1) as f64).log2(), pick(p)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
                    .label(tool.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart.draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FAMILY, 14))
                .position(SeriesLabelPosition::UpperRight)
                .draw()?;
        }
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_grouped_by_operation_and_tool_in_connection_order() {
        let text = "op\ttool\tconnections\tqps\tcpu\trss\n\
                    select\tpgbench\t4\t70000\t8.5\t9.5\n\
                    select\tpgbench\t1\t11000\t33\t9.4\n\
                    select\tysql-bench\t1\t10500\t34\t10\n";
        let s = parse(text).unwrap();
        assert_eq!(
            s["select"]["pgbench"],
            vec![(1, 11000.0, 33.0), (4, 70000.0, 8.5)]
        );
        assert_eq!(s["select"]["ysql-bench"].len(), 1);
        assert!(
            parse("h\nselect\tx\t1\tfast\t2\n")
                .unwrap_err()
                .contains("line 2")
        );
    }
}
