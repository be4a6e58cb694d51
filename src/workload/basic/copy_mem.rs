//! `copy-mem`: each batch is one `COPY ... FROM STDIN` of rows made in
//! memory, timed from the COPY's start to its commit.
//!
//! The original tool timed only the client's buffer writes; here the timed
//! section is the whole round trip: start the COPY, send the batch, finish
//! it and wait for the server's CommandComplete (autocommit, so committed;
//! with --no-prepared inside BEGIN/COMMIT, see [`copy_in`]).
//! The rows are made in `stage`, before timing.

use bytes::Bytes;
use tokio_postgres::{Client, Statement};

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::copy_in::copy_in;
use crate::workload::kit::limits::check_batch_bytes;
use crate::workload::kit::partition::Batches;
use crate::workload::kit::rowgen::RowGen;
use crate::workload::{Operation, Outcome, Role, Settings, Spec};

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

/// `-o copy-mem`.
pub static SPEC: Spec = Spec {
    name: "copy-mem",
    aliases: &["copy_mem"],
    about: "load: one COPY FROM STDIN of rows made in memory per batch",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: table::build::<CopyMem>,
};

impl TableOp for CopyMem {
    fn check(s: &Settings) -> Result<()> {
        check_batch_bytes(s)
    }

    fn new(plan: &Settings, table: &TableName, thread: usize) -> Self {
        CopyMem {
            sql: format!("copy {} (id, f1, f2, f3, f4) from stdin", table.quoted()),
            batches: Batches::new(plan.share(plan.rows, thread), plan.batch_size),
            rows: RowGen::new(plan.seed, plan.field_len),
            prepared: plan.prepared,
            statement: None,
            data: Bytes::new(),
            staged: 0..0,
        }
    }

    fn histogram_note(s: &Settings, unit: &str) -> String {
        format!("{unit} ({} rows)", s.batch_size)
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
        let data = self.data.clone();
        let rows = copy_in(
            client,
            self.statement.as_ref(),
            &self.sql,
            futures_util::stream::once(async { Ok::<_, Error>(data) }),
        )
        .await?;
        let expected = self.staged.end - self.staged.start;
        if rows != expected {
            return Err(Error::run(format!(
                "COPY of {expected} rows reported {rows} rows copied"
            )));
        }
        Ok(Outcome { rows, missing: 0 })
    }
}
