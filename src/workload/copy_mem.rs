//! `copy-mem`: each batch is one `COPY ... FROM STDIN` of rows made in
//! memory, timed from the COPY's start to its commit.
//!
//! The original tool timed only the client's buffer writes; here the timed
//! section is the whole round trip: start the COPY, send the batch, finish
//! it and wait for the server's CommandComplete (autocommit, so committed).
//! The rows are made in `stage`, before timing.

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::{Client, Statement};

use super::partition::{Batches, thread_range};
use super::rowgen::RowGen;
use super::{Operation, Outcome};
use crate::config::RunPlan;
use crate::error::{Error, Result};

pub struct CopyMem {
    sql: String,
    batches: Batches,
    rows: RowGen,
    prepared: bool,
    statement: Option<Statement>,
    /// The staged batch, shared with the connection while it is sent, so
    /// that a retry sends the same rows again.
    data: Bytes,
    staged: std::ops::Range<u64>,
}

impl CopyMem {
    pub fn new(plan: &RunPlan, thread: usize) -> Self {
        CopyMem {
            sql: format!(
                "copy {} (id, f1, f2, f3, f4) from stdin",
                plan.table.quoted()
            ),
            batches: Batches::new(
                thread_range(plan.rows, plan.threads, thread),
                plan.batch_size,
            ),
            rows: RowGen::new(plan.seed, plan.field_len),
            prepared: plan.prepared,
            statement: None,
            data: Bytes::new(),
            staged: 0..0,
        }
    }
}

impl Operation for CopyMem {
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        if self.prepared {
            self.statement = Some(
                client
                    .prepare(&self.sql)
                    .await
                    .map_err(|e| Error::db("cannot prepare the COPY", e))?,
            );
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let Some(batch) = self.batches.next() else {
            return false;
        };
        let mut buf = Vec::with_capacity(self.data.len().max(64));
        for id in batch.clone() {
            self.rows.copy_text_row(id, &mut buf);
        }
        self.data = Bytes::from(buf);
        self.staged = batch;
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!("ids {}..{}", self.staged.start, self.staged.end))
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let fail = |e| Error::db("COPY FROM STDIN failed", e);
        let sink = match &self.statement {
            Some(s) => client.copy_in(s).await,
            None => client.copy_in(self.sql.as_str()).await,
        }
        .map_err(fail)?;
        futures_util::pin_mut!(sink);
        sink.send(self.data.clone()).await.map_err(fail)?;
        let rows = sink.as_mut().finish().await.map_err(fail)?;
        let expected = self.staged.end - self.staged.start;
        if rows != expected {
            return Err(Error::run(format!(
                "COPY of {expected} rows reported {rows} rows copied"
            )));
        }
        Ok(Outcome { rows, missing: 0 })
    }
}
