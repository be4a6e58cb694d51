//! The report files of a record: the JSON, the CSV and the HTML page, for
//! a live run and for `merge` and `report` alike.
//!
//! Each is written whole under [`writing`] (as the pictures are), so that
//! quitting at once (a second Ctrl-C) waits for it rather than leave half
//! a JSON behind; each whatever became of the other, and flushed before it is said written: an error at the
//! flush (a full disk) would otherwise go unseen and leave a cut report.
//! `--json -` goes to stdout. A path that is no regular file (a FIFO,
//! `>(…)`, `/dev/stdout`, `/dev/null`) is opened to write without being
//! truncated: truncating /dev/stdout where stdout is a file would cut
//! what was written there before.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{csv, html, json};
use crate::error::{Error, Result};
use crate::stats::outcome::FigureColumn;
use crate::stats::record::RunRecord;

/// Held while a report file is written whole (the JSON, the CSV, a
/// picture), so that quitting at once waits for the file to be complete
/// instead of leaving half of it where the last report was.
static WRITING: Mutex<()> = Mutex::new(());

/// Runs `write`, which writes one report file from start to end, so that
/// [`hold_writes`] waits for it.
pub fn writing<T>(write: impl FnOnce() -> T) -> T {
    let _held = WRITING.lock().unwrap_or_else(|p| p.into_inner());
    write()
}

/// For a process about to exit at once: waits, at most `limit` (a disk
/// that hangs must not hold the exit for ever), for the report file being
/// written to be complete, and keeps any other from starting. Returns
/// whether no file is left half written.
pub fn hold_writes(limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        match WRITING.try_lock() {
            Ok(held) => {
                // Never released: the process is about to exit.
                std::mem::forget(held);
                return true;
            }
            Err(std::sync::TryLockError::Poisoned(p)) => {
                std::mem::forget(p.into_inner());
                return true;
            }
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::sync::TryLockError::WouldBlock) => return false,
        }
    }
}

/// Where the files go; None: not written.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileTargets<'a> {
    /// `-` is stdout.
    pub json: Option<&'a Path>,
    pub csv: Option<&'a Path>,
    /// The page ([`super::html`]).
    pub html: Option<&'a Path>,
    /// The workloads' figures per interval, the CSV's last columns (the
    /// workload layer's list, so that this layer names none).
    pub csv_figures: &'a [FigureColumn],
}

/// Writes the files `to` names; returns the failures.
pub fn write_files(record: &RunRecord, to: FileTargets, stdout: &mut dyn Write) -> Vec<Error> {
    let mut failed = Vec::new();
    if let Some(p) = to.json {
        let written = if p.as_os_str() == "-" {
            writing(|| {
                json::write_json(&mut *stdout, record)?;
                writeln!(stdout)
                    .and_then(|()| stdout.flush())
                    .map_err(|e| Error::io("cannot write the JSON to stdout", e))
            })
        } else {
            write_file(p, &|w| json::write_json(w, record))
        };
        failed.extend(written.err());
    }
    if let Some(p) = to.csv {
        failed.extend(
            write_file(p, &|w| {
                csv::write_csv(w, &record.operations, to.csv_figures)
            })
            .err(),
        );
        if let Some(slo) = &record.slo {
            let p = super::slo::csv_path(p);
            failed.extend(write_file(&p, &|w| super::slo::write_csv(w, slo)).err());
        }
        if let Some(f) = &record.find_max {
            let p = super::find_max::csv_path(p);
            failed.extend(write_file(&p, &|w| super::find_max::write_csv(w, f)).err());
        }
    }
    if let Some(p) = to.html {
        failed.extend(write_file(p, &|w| html::write_run(w, record)).err());
    }
    failed
}

/// Writes the file at `p` whole with `body`, and says so.
pub fn write_file(p: &Path, body: &dyn Fn(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    writing(|| {
        let stream = std::fs::metadata(p).is_ok_and(|m| !m.is_file());
        let opened = if stream {
            std::fs::OpenOptions::new().write(true).open(p)
        } else {
            File::create(p)
        };
        let mut w = opened
            .map(BufWriter::new)
            .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
        body(&mut w)?;
        w.flush()
            .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
    })
    .map(|()| crate::say!(">> wrote {}", p.display()))
}
