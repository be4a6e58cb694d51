//! The saved-report commands: `ysql-bench show`, `merge`, `report` and
//! `compare`.
//!
//! They take the flags of their subcommand, read the reports back
//! ([`crate::report::saved`]) and hand the records to the same report
//! code that a live run uses: the text printer, the JSON and CSV writer.
//! A report written before the record kept the workload's facts (the
//! unit's plural, whether it loads, whether it timed units, each
//! statement's query class, what its units that found rows missing are
//! called, its figures' text and the rules by which a merge makes them
//! again, --latency-limit per operation) gets them here from the
//! workload registry and the run's config, by its operation's name: only
//! this layer may ask the registry.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::cli::{Command, HistogramScaleArg};
use crate::error::{EXIT_OK, Error, Result};
use crate::report::files::{FileTargets, write_file, write_files};
use crate::report::histogram::Scale;
use crate::report::text::{TextOptions, write_show};
use crate::report::{compare, json, saved};
use crate::stats::outcome::{Metric, TypeFigures};
use crate::stats::record::{OpRecord, RunConfig, RunRecord, number};
use crate::stats::slo::{FailIf, Slo, judge_run};

/// Runs `merge`, `show` or `compare`, writing to `out`; returns the exit
/// code. Errors are printed here, once: bad input (a file that is not a
/// report, reports of different runs) is exit 2.
pub fn run_command(command: &Command, out: &mut dyn Write) -> i32 {
    match run_inner(command, out) {
        Ok(()) => EXIT_OK,
        // A closed pipe (`| head`) is the reader's choice.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            crate::say!("error: {e}");
            e.exit_code()
        }
    }
}

/// The text a saved report is shown with: the live run's defaults, with
/// the histograms if asked.
fn text_options(print_histogram: bool, scale: HistogramScaleArg) -> TextOptions {
    TextOptions {
        print_histogram,
        per_statement: false,
        histogram_buckets: 10,
        histogram_scale: match scale {
            HistogramScaleArg::Linear => Scale::Linear,
            HistogramScaleArg::Log => Scale::Log,
        },
    }
}

fn show_error(e: std::io::Error) -> Error {
    Error::io("cannot write the summary", e)
}

fn run_inner(command: &Command, out: &mut dyn Write) -> Result<()> {
    match command {
        Command::Merge {
            reports,
            json,
            csv,
            print_histogram,
            histogram_scale,
            strict,
            html,
            slo,
        } => merge(
            reports,
            FileTargets {
                json: json.as_deref(),
                csv: csv.as_deref(),
                html: html.as_deref(),
                csv_figures: crate::workload::registry::INTERVAL_COLUMNS,
            },
            text_options(*print_histogram, *histogram_scale),
            *strict,
            slo.as_deref(),
            out,
        ),
        Command::Show {
            report,
            print_histogram,
            histogram_scale,
        } => {
            let record = load(report)?;
            let opts = text_options(*print_histogram, *histogram_scale);
            write_show(out, &opts, &record).map_err(show_error)
        }
        Command::Compare {
            base,
            new,
            html,
            fail_if,
        } => {
            if let Some(p) = html {
                check_page(p)?;
            }
            let rules = match fail_if {
                Some(text) => Some(FailIf::parse(text).map_err(Error::usage)?),
                None => None,
            };
            let (b, n) = (load(base)?, load(new)?);
            compare::write_compare(out, &b, &n)?;
            if let Some(p) = html {
                write_file(p, &|w| crate::report::html::write_compare(w, &b, &n))?;
            }
            match (rules, fail_if) {
                (Some(rules), Some(text)) => {
                    let verdicts = compare::judge_fail_if(&rules, &b, &n);
                    compare::write_fail_if(out, &verdicts, text)
                }
                _ => Ok(()),
            }
        }
        Command::Report { report, html } => {
            let page = html
                .clone()
                .unwrap_or_else(|| report.with_extension("html"));
            check_page(&page)?;
            let record = load(report)?;
            let to = FileTargets {
                html: Some(&page),
                ..FileTargets::default()
            };
            match write_files(&record, to, out).pop() {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
        Command::Completions { .. } | Command::Man => Ok(()),
    }
}

/// `merge`: the reports made one, its files written, and its text
/// unless the JSON went to stdout.
fn merge(
    reports: &[std::path::PathBuf],
    to: FileTargets,
    opts: TextOptions,
    strict: bool,
    slo: Option<&str>,
    out: &mut dyn Write,
) -> Result<()> {
    // The outputs are tried before the reports are read: a merge of many
    // large reports should not end in "cannot create".
    let json_file = to.json.filter(|p| *p != Path::new("-"));
    crate::config::check_distinct_outputs(&[
        ("--json", json_file),
        ("--csv", to.csv),
        ("--html", to.html),
    ])?;
    if let Some(p) = to.html {
        check_page(p)?;
    }
    if let Some(p) = json_file {
        crate::config::check_output_file(p, "--json", json::is_ours)?;
    }
    if let Some(p) = to.csv {
        crate::config::check_output_file(p, "--csv", saved::is_intervals_csv)?;
    }
    let mut loaded = Vec::with_capacity(reports.len());
    for p in reports {
        loaded.push(load(p)?);
    }
    // The criteria: merge's own, or those the clients ran with.
    let criteria = slo.map(str::to_string).or_else(|| {
        loaded
            .iter()
            .find_map(|r| r.slo.as_ref().map(|s| s.spec.clone()))
    });
    let mut merged = saved::merge_records(reports, loaded, strict)?;
    if let Some(text) = criteria {
        let parsed = Slo::parse(&text).map_err(Error::usage)?;
        merged.slo = Some(judge_run(&parsed, &merged, None));
    }
    let mut failed = write_files(&merged, to, out);
    if let Some(last) = failed.pop() {
        for e in failed {
            crate::say!("error: {e}");
        }
        return Err(last);
    }
    if to.json != Some(Path::new("-")) {
        write_show(out, &opts, &merged).map_err(show_error)?;
    }
    match &merged.slo {
        Some(r) if !r.met => Err(Error::Slo(crate::report::slo::missed_line(r))),
        _ => Ok(()),
    }
}

/// Refuses to overwrite a file that is not a page of ours (exit 2),
/// before any report is read.
fn check_page(p: &Path) -> Result<()> {
    crate::config::check_output_file(p, "--html", crate::report::html::is_ours)
}

/// A saved report, with what a report written before the record kept
/// the workload's facts lacks filled in from the registry.
fn load(path: &Path) -> Result<RunRecord> {
    let mut record = saved::load(path)?;
    for op in &mut record.operations {
        fill_from_registry(op, &record.config);
    }
    Ok(record)
}

/// Fills an operation of an older report (0.2.0, which kept none of
/// these) from its workload's registry entry and figure rules; also the
/// words for its pauses, which reports kept only later.
fn fill_from_registry(op: &mut OpRecord, config: &RunConfig) {
    for s in op.statements.iter_mut().filter(|s| s.class.is_empty()) {
        s.class = crate::workload::query_class(&s.name).to_string();
    }
    if op.pauses.is_none() && !op.figures.pause_wait.is_zero() {
        op.pauses = crate::workload::registry::pause_words(&op.operation);
    }
    if !op.unit_plural.is_empty() {
        return;
    }
    let spec = crate::workload::REGISTRY
        .iter()
        .find(|s| s.name == op.operation);
    if let Some(spec) = spec {
        op.unit_plural = spec.units.to_string();
        op.load = spec.is_load();
        // 0.2.0 kept --latency-limit in the run's config alone; a run
        // applies it to the operations that pace their units.
        if op.latency_limit_ms.is_none() && spec.paced {
            op.latency_limit_ms = config.latency_limit_ms;
        }
    }
    // A clean-up or a check ran no timed unit: what it found is all.
    // (0.2.0 kept one empty interval for them too, so the intervals do
    // not tell.)
    let nothing_timed = op.figures.ops == 0 && op.figures.failed() == 0;
    let found = !op.checks.is_empty() || !op.findings.is_empty();
    let drops = spec.is_some_and(|s| s.drops);
    let unmeasured = drops || (nothing_timed && found);
    op.measured = !unmeasured;
    if op.missing_label.is_empty()
        && let Some(label) = crate::workload::missing_label(&op.operation)
    {
        op.missing_label = label.to_string();
    }
    if op.metric_lines.is_empty() {
        op.metric_lines = metric_lines_again(op);
    }
}

/// The workload's figures of an old report as its summary showed them:
/// the text made again by the workload from the stored figures where it
/// can (not for a merged report, whose figures a merge made again by
/// their rules), else each by its key; the stored values kept.
fn metric_lines_again(op: &OpRecord) -> Vec<Metric> {
    let again = if op.clients.is_empty() {
        let types: Vec<TypeFigures> = op
            .types
            .iter()
            .map(|t| TypeFigures {
                units: t.figures.ops,
                missing: t.figures.missing,
                p90: Duration::from_nanos(t.figures.latency.value_at_quantile(0.90)),
            })
            .collect();
        crate::workload::figures_again(
            &op.operation,
            &op.workload,
            &types,
            op.wallclock(),
            &op.metrics,
        )
    } else {
        Vec::new()
    };
    let mut lines: Vec<Metric> = again
        .into_iter()
        .filter_map(|m| op.metrics.get(&m.key).map(|v| Metric { value: *v, ..m }))
        .collect();
    let rules = crate::workload::figure_rules(&op.operation);
    for (key, value) in &op.metrics {
        if lines.iter().any(|m| &m.key == key) {
            continue;
        }
        let rule = rules.iter().find(|r| &r.key == key);
        lines.push(Metric {
            label: rule.map_or(key.clone(), |r| r.label.clone()),
            merge: rule.and_then(|r| r.merge.clone()),
            per_interval: rule.and_then(|r| r.per_interval.clone()),
            ..Metric::new(key, key, *value, number(*value))
        });
    }
    lines
}
