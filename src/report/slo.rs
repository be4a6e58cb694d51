//! The words of an `--slo` judgement: the summary's block, the line that
//! says which criterion was missed with its value, the progress lines'
//! "so far", and the CSV of verdicts beside the interval CSV. The
//! judgement itself is plain data of the statistics layer
//! ([`crate::stats::slo`]); this module only says it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::stats::slo::{SloRecord, Verdict};

const W: usize = 22;

/// Where a verdict applies, as the summary says it: `select`,
/// `tpcc [new-order]`.
fn place(v: &Verdict) -> String {
    match (&v.transaction_type, v.operation.is_empty()) {
        (Some(t), false) => format!("{} [{t}]", v.operation),
        (Some(t), true) => format!("[{t}]"),
        (None, _) => v.operation.clone(),
    }
}

/// The summary's block: the whole verdict, then each criterion with its
/// measured value.
pub fn write_slo(out: &mut dyn Write, r: &SloRecord) -> io::Result<()> {
    let missed = r.missed().count();
    let head = if r.met {
        format!("met ({})", r.spec)
    } else if let Some(why) = &r.aborted {
        format!("missed: stopped by --slo-abort, {why}")
    } else {
        format!("missed ({missed} of {} verdicts)", r.verdicts.len())
    };
    writeln!(out, "{:<W$}: {head}", "slo")?;
    for v in &r.verdicts {
        writeln!(
            out,
            "  {:<20}: {} {} {}",
            v.criterion,
            place(v),
            v.measured_text,
            if v.met { "met" } else { "MISSED" }
        )?;
    }
    Ok(())
}

/// One line naming every criterion missed with its value, for stderr
/// and the error of `merge --slo`: "SLO missed: p99<10ms (select
/// 12.345 ms)".
pub fn missed_line(r: &SloRecord) -> String {
    let mut parts: Vec<String> = r
        .missed()
        .map(|v| format!("{} ({} {})", v.criterion, place(v), v.measured_text))
        .collect();
    if let Some(why) = &r.aborted {
        parts.insert(0, format!("stopped by --slo-abort: {why}"));
    }
    format!("SLO missed: {}", parts.join(", "))
}

/// The CSV of verdicts written beside `--csv FILE`: `FILE` with
/// `.slo.csv` for its extension.
pub fn csv_path(csv: &Path) -> PathBuf {
    csv.with_extension("slo.csv")
}

/// The header of the verdicts' CSV: how the tool knows its own file.
pub const CSV_COLUMNS: [&str; 7] = [
    "criterion",
    "operation",
    "type",
    "measured",
    "bound",
    "measured_text",
    "met",
];

/// Whether a file starting with `head` is a verdicts' CSV of the tool.
pub fn is_ours(head: &str) -> bool {
    head.starts_with(&CSV_COLUMNS.join(","))
}

/// Writes one row per verdict.
pub fn write_csv<W: Write>(w: W, r: &SloRecord) -> Result<()> {
    let fail = |e: csv::Error| Error::run(format!("cannot write the SLO CSV: {e}"));
    let mut out = csv::Writer::from_writer(w);
    out.write_record(CSV_COLUMNS).map_err(fail)?;
    for v in &r.verdicts {
        out.write_record([
            v.criterion.clone(),
            v.operation.clone(),
            v.transaction_type.clone().unwrap_or_default(),
            v.measured.map(|m| format!("{m}")).unwrap_or_default(),
            format!("{}", v.bound),
            v.measured_text.clone(),
            v.met.to_string(),
        ])
        .map_err(fail)?;
    }
    out.flush()
        .map_err(|e| Error::run(format!("cannot write the SLO CSV: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(met: bool) -> SloRecord {
        SloRecord {
            spec: "p99<10ms".into(),
            met,
            verdicts: vec![Verdict {
                criterion: "p99<10ms".into(),
                operation: "select".into(),
                transaction_type: None,
                measured: Some(12_345_000.0),
                bound: 1e7,
                measured_text: "12.345 ms".into(),
                met,
            }],
            aborted: None,
        }
    }

    #[test]
    fn a_missed_criterion_is_named_with_its_value() {
        let r = record(false);
        assert_eq!(missed_line(&r), "SLO missed: p99<10ms (select 12.345 ms)");
        let mut text = Vec::new();
        write_slo(&mut text, &r).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("missed (1 of 1 verdicts)"), "{text}");
        assert!(
            text.contains("p99<10ms") && text.contains("MISSED"),
            "{text}"
        );
        let mut csv = Vec::new();
        write_csv(&mut csv, &r).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert!(is_ours(&csv));
        assert!(
            csv.contains("p99<10ms,select,,12345000,10000000,12.345 ms,false"),
            "{csv}"
        );
        assert_eq!(csv_path(Path::new("run.csv")), PathBuf::from("run.slo.csv"));
    }
}
