//! A load by COPY of generated lines, in batches over the workers: the
//! operation of `ycsb-load` and `booking-load` (copy-mem has its own, for
//! test_table's shared row generator).
//!
//! What differs between those loads is only what line number `n` holds,
//! so that is the one thing a loader gives ([`Lines`]); the batching, the
//! COPY and the sending are here. Lines are made in `stage`,
//! outside the timed section; a retry sends the same bytes again.

use std::ops::Range;

use crate::db::wire::WireConn;

use super::copy_in::copy_all;
use super::partition::Batches;
use crate::error::Result;
use crate::workload::{Operation, Outcome};

/// What a loader writes: line `n` of its table, in COPY text format.
pub trait Lines: Send + 'static {
    /// Appends line `n` (with its newline).
    fn line(&self, n: u64, out: &mut Vec<u8>);

    /// Bytes a line takes, about: for the buffer's first size.
    fn line_bytes(&self) -> usize {
        64
    }

    /// What the lines are, for error messages ("records 0..200").
    fn what(&self) -> &'static str {
        "rows"
    }
}

/// One worker's share of a COPY load.
pub struct CopyLoad<L> {
    sql: String,
    batches: Batches,
    lines: L,
    /// The staged batch's lines, reused from batch to batch.
    data: Vec<u8>,
    staged: Range<u64>,
}

impl<L: Lines> CopyLoad<L> {
    /// Loads `share` (line numbers) with `sql` (a `COPY … FROM STDIN`),
    /// `batch` lines per COPY.
    pub fn new(sql: String, share: Range<u64>, batch: usize, lines: L) -> Self {
        CopyLoad {
            sql,
            batches: Batches::new(share, batch),
            lines,
            data: Vec::new(),
            staged: 0..0,
        }
    }
}

impl<L: Lines> Operation for CopyLoad<L> {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let Some(batch) = self.batches.next() else {
            return false;
        };
        self.data.clear();
        self.data
            .reserve((batch.end - batch.start) as usize * self.lines.line_bytes());
        for n in batch.clone() {
            self.lines.line(n, &mut self.data);
        }
        self.staged = batch;
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!(
            "{} {}..{}",
            self.lines.what(),
            self.staged.start,
            self.staged.end
        ))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let rows = copy_all(conn, &self.sql, &self.data).await?;
        Ok(Outcome { rows, missing: 0 })
    }
}
