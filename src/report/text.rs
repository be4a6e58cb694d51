//! The text of a run, for a live run and for a saved one: one printer.
//!
//! A live run writes each operation's text as soon as the operation ends
//! ([`write_operation`], after [`write_run_header`]); `ysql-bench show`
//! and `merge` write the same text from a saved record ([`write_show`]),
//! so that showing a report prints what its run printed. What the live
//! run said on stderr (where, which server as it connected, each
//! operation's name as it started) `show` says on its own lines, and for
//! a run of several clients each operation's start skew and clients
//! after it.

use std::io::{self, Write};

use super::histogram::{Scale, write_histogram};
use super::summary::{write_statements, write_summary};
use crate::stats::record::{OpRecord, RowSize, RunRecord};

const W: usize = 22;

/// What the text holds beyond the summary.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// Each operation's latency histogram (and each type's of a mix).
    pub print_histogram: bool,
    /// Latency per statement kind.
    pub per_statement: bool,
    pub histogram_buckets: usize,
    pub histogram_scale: Scale,
}

/// The lines before the first operation's summary: what it takes to
/// repeat the run, the seed first (drawn at random unless --seed was
/// given, and otherwise known only from the JSON report).
pub fn write_run_header(out: &mut dyn Write, seed: u64) -> io::Result<()> {
    writeln!(out, "{:<W$}: {seed}", "seed")
}

/// The text of one operation: its summary, the latency per statement,
/// its histograms and the workload's figures that go with them. An
/// operation that never started has none: a block of zeros would only
/// hide its error, which goes to stderr.
pub fn write_operation(out: &mut dyn Write, opts: &TextOptions, op: &OpRecord) -> io::Result<()> {
    if op.never_started() {
        return Ok(());
    }
    write_summary(out, op)?;
    if opts.per_statement && !op.statements.is_empty() {
        writeln!(out, "latency per statement:")?;
        write_statements(out, op)?;
    }
    if !opts.print_histogram {
        return Ok(());
    }
    let histogram = |out: &mut dyn Write, h| {
        write_histogram(out, h, opts.histogram_buckets, opts.histogram_scale)
    };
    writeln!(out, "histogram is per {}", op.histogram_of())?;
    histogram(out, &op.figures.latency)?;
    // A mix: each type's own histogram after the operation's.
    for ty in op.types.iter().filter(|_| op.is_mix()) {
        if ty.figures.ops == 0 {
            continue;
        }
        writeln!(out, "histogram of [{}]", ty.name)?;
        histogram(out, &ty.figures.latency)?;
    }
    // The workload's figures (TPC-C: tpmC, efficiency, the p90 limits)
    // with the histograms they go with.
    for m in op.metric_lines() {
        writeln!(out, "{}: {}", m.label, m.text)?;
    }
    Ok(())
}

/// `--show-rowsize`: the line after the last operation's text.
pub fn write_row_size(out: &mut dyn Write, size: &RowSize) -> io::Result<()> {
    writeln!(out, "{:<W$}: {}", "row size", size.text)
}

/// `ysql-bench show` and `merge`: a saved run's text, as the run printed
/// it, after where and when it ran. The latency per statement is shown
/// when the run showed it (`opts.per_statement` or the record's own
/// `per_statement`).
pub fn write_show(out: &mut dyn Write, opts: &TextOptions, r: &RunRecord) -> io::Result<()> {
    let opts = &TextOptions {
        per_statement: opts.per_statement || r.per_statement,
        ..*opts
    };
    writeln!(out, "{:<W$}: {}", "report of", r.started_at)?;
    writeln!(out, "{:<W$}: {}", "target", r.config.target)?;
    writeln!(
        out,
        "{:<W$}: {} {}",
        "server", r.server.flavor, r.server.version
    )?;
    if let Some(c) = &r.cluster {
        let who = match c.client_index {
            Some(i) => format!("client {i} of {}", c.clients),
            None => format!("merged from clients {:?} of {}", c.merged, c.clients),
        };
        writeln!(out, "{:<W$}: {} ({who})", "run", c.run_id)?;
    }
    write_run_header(out, r.config.seed)?;
    for op in &r.operations {
        // A live run says it on stderr as the operation starts (`>> NAME`).
        writeln!(out, "{:<W$}: {}", "operation", op.operation)?;
        write_operation(out, opts, op)?;
        write_clients(out, op)?;
    }
    if let Some(size) = &r.row_size {
        write_row_size(out, size)?;
    }
    if let Some(f) = &r.find_max {
        super::find_max::write_find_max(out, f)?;
    }
    if let Some(slo) = &r.slo {
        super::slo::write_slo(out, slo)?;
    }
    Ok(())
}

/// A run of several clients: when the operation started against the
/// common instant, and, merged, each client's share.
fn write_clients(out: &mut dyn Write, op: &OpRecord) -> io::Result<()> {
    if let Some(s) = &op.start {
        writeln!(
            out,
            "{:<W$}: {:.3} ms from the common start",
            "start skew", s.skew_ms
        )?;
    }
    for c in &op.clients {
        writeln!(
            out,
            "{:<W$}: {}{} units ({:.1}/s) over {:.3} s, start skew {}",
            format!("client {}", c.client),
            match c.threads {
                0 => String::new(),
                1 => "1 thread, ".to_string(),
                n => format!("{n} threads, "),
            },
            c.units,
            c.units_per_s,
            c.wallclock_s,
            c.skew_ms
                .map_or("unknown".to_string(), |s| format!("{s:.3} ms"))
        )?;
    }
    Ok(())
}
