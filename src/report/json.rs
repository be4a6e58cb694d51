//! `--json FILE`: the whole run, for other tools and for later comparison.
//!
//! What is written is the run's record ([`RunRecord`]) as it is: the
//! configuration (never the password), the server, and per operation the
//! counts, errors, throughput, percentiles, per-interval figures and the
//! HDR histograms themselves (see [`crate::stats::saved`]), so that runs
//! can be merged, shown and compared later, and re-plotted with any
//! HdrHistogram library. Field meanings are documented in the README.

use std::io::Write;

use crate::error::{Error, Result};
use crate::stats::record::RunRecord;

/// Whether a file starting with `head` was written by this module.
pub fn is_ours(head: &str) -> bool {
    head.trim_start().starts_with('{') && head.contains("\"tool\": \"ysql-bench\"")
}

/// Writes the report, pretty-printed.
pub fn write_json<W: Write>(w: W, report: &RunRecord) -> Result<()> {
    serde_json::to_writer_pretty(w, report)
        .map_err(|e| Error::run(format!("cannot write the JSON report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_recognises_its_own_json() {
        assert!(is_ours("{\n  \"tool\": \"ysql-bench\",\n  \"version\""));
        assert!(!is_ours("{\"tool\": \"other\"}"));
        assert!(!is_ours("hello"));
    }
}
