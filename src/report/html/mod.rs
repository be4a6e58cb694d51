//! `--html FILE`, `ysql-bench report RUN.json --html FILE` and
//! `ysql-bench compare A.json B.json --html FILE`: one self-contained page
//! for a run, a merge of several clients, or a comparison of two runs.
//!
//! The page is made from the run's record alone ([`RunRecord`]), so a live
//! run, a saved report, a merged one and a report of an older version are
//! drawn by the same code. It fetches nothing when opened: the styles and
//! the little script (sortable tables, the charts' hover read-out) are
//! inline, the charts inline SVG ([`chart`]), the fonts the reader's own;
//! so it reads offline and attached to a ticket. Its size is bounded:
//! long time series are thinned for display ([`chart::MAX_POINTS`]), the
//! figures never.
//!
//! The HTML is written with maud, a macro that checks the markup at
//! compile time and escapes every value (a table name or an error text
//! cannot break the page); it is pure Rust and needs no system library.
//! Each figure a test or a script may want to read carries it as a data
//! attribute (`data-units`, `data-p99-ns`, `data-metric`, `data-verdict`)
//! beside the text a person reads. Parts of the record the page has no
//! section for (a figure added later) are shown as they are, in a generic
//! table at the end of their operation or of the page, so nothing the
//! record holds is hidden.

pub mod chart;
mod compare;
mod extra;
mod run;
mod sections;

use std::io::Write;

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::error::{Error, Result};
use crate::stats::record::RunRecord;

/// The generator the page names in its head: how the tool recognises its
/// own page before overwriting a file.
const GENERATOR: &str = "ysql-bench report page";

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Whether a file starting with `head` is a page this module wrote.
pub fn is_ours(head: &str) -> bool {
    head.contains(&format!("<meta name=\"generator\" content=\"{GENERATOR}"))
}

/// Writes the page of a run (live, saved or merged).
pub fn write_run(w: &mut dyn Write, record: &RunRecord) -> Result<()> {
    let page = page(&run::title(record), "run", run::body(record));
    w.write_all(page.into_string().as_bytes())
        .map_err(|e| Error::io("cannot write the HTML page", e))
}

/// Writes the page comparing `base` and `new`; an error, as the text
/// comparison, when they have no operation in common.
pub fn write_compare(w: &mut dyn Write, base: &RunRecord, new: &RunRecord) -> Result<()> {
    if base
        .operations
        .iter()
        .all(|b| new.operations.iter().all(|n| n.operation != b.operation))
    {
        return Err(Error::usage(
            "the two reports have no operation in common: nothing to compare",
        ));
    }
    let page = page(
        &compare::title(base, new),
        "compare",
        compare::body(base, new),
    );
    w.write_all(page.into_string().as_bytes())
        .map_err(|e| Error::io("cannot write the HTML page", e))
}

/// The whole document around `body`.
fn page(title: &str, kind: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content=(format!("{GENERATOR} {}", env!("CARGO_PKG_VERSION")));
                // Nothing may be fetched: no network, no inline frames.
                meta http-equiv="Content-Security-Policy"
                    content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body data-page=(kind) {
                (body)
                div #tip hidden {}
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}
