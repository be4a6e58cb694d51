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
//! behind. [`operation`] is a live run's entry point.

pub mod compare;
pub mod conns;
pub mod csv;
pub mod files;
pub mod find_max;
pub mod histogram;
pub mod html;
pub mod json;
pub mod plot;
pub mod saved;
pub mod server;
pub mod slo;
pub mod summary;
pub mod text;

pub use files::{hold_writes, writing};

use crate::stats::OpResult;
use crate::stats::record::OpRecord;
use plot::GraphOptions;
use text::TextOptions;

/// The pictures of a run: where they go, and what their titles say of
/// the run (its start, as a stamp in the file names, and the server).
#[derive(Clone, Copy, Debug)]
pub struct Pictures<'a> {
    pub options: &'a GraphOptions,
    pub stamp: &'a str,
    pub server: &'a str,
}

/// The reports of one operation of a live run, as it ends: its text to
/// `out` ([`text::write_operation`], which `show` and `merge` use for a
/// saved record) and its pictures, drawn from the live result (a saved
/// record keeps no samples), whatever became of the text. The run's
/// files follow at its end ([`files::write_files`], which `merge` uses
/// too).
pub fn operation(
    out: &mut dyn std::io::Write,
    text: &TextOptions,
    pictures: Option<Pictures>,
    record: &OpRecord,
    result: &OpResult,
) -> std::io::Result<()> {
    let written = text::write_operation(out, text, record);
    if let Some(p) = pictures {
        draw(result, p);
    }
    written
}

/// The pictures of an operation, each file written whole.
fn draw(result: &OpResult, p: Pictures) {
    if result.total.ops == 0 {
        // Empty axes would only puzzle whoever opens them.
        crate::say!(">> no graph for {}: nothing was measured", result.spec);
        return;
    }
    match writing(|| plot::draw(result, p.options, p.stamp, p.server)) {
        Ok(paths) => {
            for path in paths {
                crate::say!(">> wrote {}", path.display());
            }
        }
        Err(e) => crate::say!("warning: {e}"),
    }
}
