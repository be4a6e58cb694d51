//! Saved reports read back: `ysql-bench show`, `merge` and `compare` load
//! `--json` files written by this version or an earlier one.
//!
//! A saved report is the run's record ([`RunRecord`]) as it was written,
//! so loading it gives the record the live run printed; keys added since
//! a report was written read as absent. `merge` checks that the reports
//! are of one run and that no client is given twice, then makes one
//! record of them ([`crate::stats::merge`]).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::stats::merge;
use crate::stats::record::RunRecord;

/// Reads a `--json` report; anything else is a usage error naming the file.
pub fn load(path: &Path) -> Result<RunRecord> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    let report: RunRecord = serde_json::from_str(&text).map_err(|e| {
        Error::usage(format!(
            "{} is not a ysql-bench --json report: {e}",
            path.display()
        ))
    })?;
    if report.tool != "ysql-bench" {
        return Err(Error::usage(format!(
            "{} is not a ysql-bench --json report (its tool is '{}')",
            path.display(),
            report.tool
        )));
    }
    Ok(report)
}

/// Merges the reports read from `paths` (in any order, each [`load`]ed)
/// into one; warnings (a client missing) go to stderr, or are refused
/// under `strict`.
pub fn merge_records(
    paths: &[std::path::PathBuf],
    records: Vec<RunRecord>,
    strict: bool,
) -> Result<RunRecord> {
    if records.is_empty() {
        return Err(Error::usage("merge needs at least one report"));
    }
    let mut reports: Vec<(std::path::PathBuf, RunRecord)> =
        paths.iter().cloned().zip(records).collect();
    for (p, r) in &reports[1..] {
        if let Some(why) = merge::difference(&reports[0].1, r) {
            return Err(Error::usage(format!(
                "{} and {} are not of one run: {why}",
                reports[0].0.display(),
                p.display()
            )));
        }
    }
    let mut seen: BTreeMap<usize, &Path> = BTreeMap::new();
    for (p, r) in &reports {
        if let Some(i) = r.cluster.as_ref().and_then(|c| c.client_index)
            && let Some(before) = seen.insert(i, p)
        {
            return Err(Error::usage(format!(
                "{} and {} are both client {i}: give each client's report once",
                before.display(),
                p.display()
            )));
        }
    }
    if let Some(c) = &reports[0].1.cluster {
        let missing: Vec<String> = (0..c.clients)
            .filter(|i| !seen.contains_key(i))
            .map(|i| i.to_string())
            .collect();
        if !missing.is_empty() {
            let msg = format!(
                "run {}: the report(s) of client(s) {} of {} are missing",
                c.run_id,
                missing.join(", "),
                c.clients
            );
            if strict {
                return Err(Error::usage(format!("{msg} (--strict)")));
            }
            crate::say!("warning: {msg}; the merged figures are of the others only");
        }
    }
    reports.sort_by_key(|(_, r)| r.cluster.as_ref().and_then(|c| c.client_index));
    let parts: Vec<RunRecord> = reports.into_iter().map(|(_, r)| r).collect();
    merge::merge(parts).ok_or_else(|| {
        Error::usage("the reports ran different numbers of operations: they are not of one run")
    })
}

/// Whether a file starting with `head` is a CSV the tool wrote, by a
/// run's `--csv` or `merge --csv` (of this version, or of one before it
/// had the run's columns): one `merge --csv` may overwrite.
pub fn is_intervals_csv(head: &str) -> bool {
    head.starts_with("operation,interval,end_s,") || super::csv::is_ours(head)
}
