//! Presentation: turns the run's record into what people and tools read.
//!
//! Nothing here measures or talks to the server, and nothing here knows a
//! workload: the report reads the statistics layer alone, the record of a
//! run ([`crate::stats::record`]) and, for the pictures, the live run's
//! samples. One printer for a live run and a saved one: [`text`] writes
//! an operation's summary, statements and histograms as it ends, and the
//! same for `show` and `merge` from a saved record; [`files`] writes the
//! JSON and CSV of either. `saved` reads reports back, `compare` puts two
//! side by side. Text writers take any `Write`, so each format is tested
//! on a buffer; the pictures are tested by decoding the PNGs they write.
//! A report file is written whole under [`writing`], so that quitting at
//! once (a second Ctrl-C) waits for it rather than leave half a JSON
//! behind.

pub mod compare;
pub mod conns;
pub mod csv;
pub mod files;
pub mod histogram;
pub mod json;
pub mod plot;
pub mod saved;
pub mod server;
pub mod summary;
pub mod text;

use std::sync::Mutex;
use std::time::{Duration, Instant};

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
