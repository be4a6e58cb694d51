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
    buf: Vec<u8>,
    staged_rows: u64,
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
            buf: Vec::new(),
            staged_rows: 0,
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
        self.staged_rows = batch.end - batch.start;
        self.buf.clear();
        for id in batch {
            self.rows.copy_text_row(id, &mut self.buf);
        }
        true
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let capacity = data.len();
        let fail = |e| Error::db("COPY FROM STDIN failed", e);
        let sink = match &self.statement {
            Some(s) => client.copy_in(s).await,
            None => client.copy_in(self.sql.as_str()).await,
        }
        .map_err(fail)?;
        futures_util::pin_mut!(sink);
        sink.send(data).await.map_err(fail)?;
        let rows = sink.as_mut().finish().await.map_err(fail)?;
        // The buffer went to the connection; start the next one at the
        // same size so that staging does not grow it again row by row.
        self.buf = Vec::with_capacity(capacity);
        if rows != self.staged_rows {
            return Err(Error::run(format!(
                "COPY of {} rows reported {rows} rows copied",
                self.staged_rows
            )));
        }
        Ok(Outcome { rows, missing: 0 })
    }
}
