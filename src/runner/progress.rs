//! What the user sees while an operation runs, on stderr.
//!
//! With `--report-interval` a line per interval in the manner of pgbench's
//! `-P` (plain text, no control characters, fit for a log file). Without
//! it, on a terminal, loads show a progress bar with rows done, rate and
//! ETA; when stderr is not a terminal (or under `--quiet`) nothing is drawn.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::stats::interval::SetFigures;
use crate::workload::Spec;

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// One progress line for a finished interval: the total, and for a mix
/// of several transaction types (`names`) each type's rate and p99.
pub fn progress_line(
    spec: &Spec,
    figures: &SetFigures,
    names: &[&str],
    rate_limited: bool,
) -> String {
    let f = &figures.total;
    let l = &f.latency;
    let mut s = format!(
        "progress: {spec} {:.1} s, {:.1} {}/s, {:.1} rows/s, lat p50 {:.3} p95 {:.3} p99 {:.3} max {:.3} ms, {} failed",
        f.end_s,
        f.ops_per_s,
        spec.units,
        f.rows_per_s,
        ms(l.p50),
        ms(l.p95),
        ms(l.p99),
        ms(l.max),
        f.errors
    );
    if rate_limited {
        s.push_str(&format!(
            ", lag avg {:.3} max {:.3} ms",
            ms(f.lag_avg_ns),
            ms(f.lag_max_ns)
        ));
        // Only --latency-limit skips, and only under --rate.
        if f.skipped > 0 {
            s.push_str(&format!(", {} skipped", f.skipped));
        }
    }
    if f.retries > 0 {
        s.push_str(&format!(", {} retries", f.retries));
    }
    if names.len() > 1 {
        let per: Vec<String> = names
            .iter()
            .zip(&figures.types)
            .map(|(n, t)| format!("{n} {:.1}/s p99 {:.3}", t.ops_per_s, ms(t.latency.p99)))
            .collect();
        s.push_str(&format!(" | {} ms", per.join(", ")));
    }
    s
}

/// A progress bar of rows loaded, drawn only on a terminal.
pub struct LoadBar {
    bar: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl LoadBar {
    /// Starts a bar for `total` rows that follows `done`; `None` when
    /// stderr is not a terminal, or under `--quiet` (see
    /// [`crate::output::bar_wanted`]).
    pub fn start(spec: &Spec, total: u64, done: Arc<AtomicU64>) -> Option<LoadBar> {
        if !crate::output::progress_bar_allowed() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {human_pos}/{human_len} rows, {msg}, ETA {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(spec.name);
        let b = bar.clone();
        let task = tokio::spawn(async move {
            let start = std::time::Instant::now();
            loop {
                let rows = done.load(Ordering::Relaxed);
                b.set_position(rows);
                let secs = start.elapsed().as_secs_f64().max(1e-3);
                b.set_message(format!("{:.0} rows/s", rows as f64 / secs));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Some(LoadBar { bar, task })
    }

    pub fn finish(self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Percentiles;

    #[test]
    fn a_progress_line_has_rate_latency_and_errors_without_control_characters() {
        let mut f = crate::stats::IntervalFigures {
            index: 4,
            end_s: 5.0,
            seconds: 1.0,
            ops: 1234,
            rows: 1234,
            errors: 2,
            skipped: 0,
            retries: 0,
            missing: 0,
            ops_per_s: 1234.0,
            rows_per_s: 1234.0,
            latency: Percentiles {
                p50: 810_000,
                p95: 1_200_000,
                p99: 2_500_000,
                max: 9_000_000,
                ..Default::default()
            },
            lag_avg_ns: 50_000,
            lag_max_ns: 300_000,
            ..Default::default()
        };
        let select = &crate::workload::basic::select::SPEC;
        let set = |f: &crate::stats::IntervalFigures| SetFigures {
            total: f.clone(),
            types: vec![f.clone()],
        };
        let line = progress_line(select, &set(&f), &["query"], true);
        assert_eq!(
            line,
            "progress: select 5.0 s, 1234.0 queries/s, 1234.0 rows/s, lat p50 0.810 p95 1.200 p99 2.500 max 9.000 ms, 2 failed, lag avg 0.050 max 0.300 ms"
        );
        assert!(!line.chars().any(|c| c.is_control()));
        assert!(!progress_line(select, &set(&f), &["query"], false).contains("lag"));
        f.skipped = 7;
        assert!(progress_line(select, &set(&f), &["query"], true).ends_with(", 7 skipped"));
        // A mix adds each type's rate and p99.
        let mut mix = set(&f);
        mix.types.push(crate::stats::IntervalFigures {
            ops_per_s: 10.0,
            latency: Percentiles {
                p99: 4_000_000,
                ..Default::default()
            },
            ..Default::default()
        });
        let line = progress_line(&crate::workload::ycsb::A, &mix, &["read", "update"], false);
        assert!(
            line.ends_with(" | read 1234.0/s p99 2.500, update 10.0/s p99 4.000 ms"),
            "{line}"
        );
    }
}
