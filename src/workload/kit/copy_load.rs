//! A load by COPY of generated lines, in batches over the workers: the
//! operation of `ycsb-load` and `booking-load` (copy-mem has its own, for
//! test_table's shared row generator).
//!
//! What differs between those loads is only what line number `n` holds,
//! so that is the one thing a loader gives ([`Lines`]); the batching, the
//! prepared COPY and the sending are here. Lines are made in `stage`,
//! outside the timed section; a retry sends the same bytes again.

use std::ops::Range;

use bytes::Bytes;
use tokio_postgres::{Client, Statement};

use super::copy_in::copy_in;
use super::partition::Batches;
use crate::error::{Error, Result};
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
    prepared: bool,
    statement: Option<Statement>,
    data: Bytes,
    staged: Range<u64>,
}

impl<L: Lines> CopyLoad<L> {
    /// Loads `share` (line numbers) with `sql` (a `COPY … FROM STDIN`),
    /// `batch` lines per COPY.
    pub fn new(sql: String, share: Range<u64>, batch: usize, lines: L, prepared: bool) -> Self {
        CopyLoad {
            sql,
            batches: Batches::new(share, batch),
            lines,
            prepared,
            statement: None,
            data: Bytes::new(),
            staged: 0..0,
        }
    }
}

impl<L: Lines> Operation for CopyLoad<L> {
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        if self.prepared {
            self.statement = Some(
                client
                    .prepare(&self.sql)
                    .await
                    .map_err(|e| Error::db(format!("cannot prepare '{}'", self.sql), e))?,
            );
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let Some(batch) = self.batches.next() else {
            return false;
        };
        let mut buf =
            Vec::with_capacity((batch.end - batch.start) as usize * self.lines.line_bytes());
        for n in batch.clone() {
            self.lines.line(n, &mut buf);
        }
        self.data = Bytes::from(buf);
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

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let chunk = futures_util::stream::iter([Ok(self.data.clone())]);
        let rows = copy_in(client, self.statement.as_ref(), &self.sql, chunk).await?;
        Ok(Outcome { rows, missing: 0 })
    }
}
