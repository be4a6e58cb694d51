//! `copy-mem`: each batch is one `COPY ... FROM STDIN` of rows made in
//! memory, timed from the COPY's start to its commit.
//!
//! The original tool timed only the client's buffer writes; here the timed
//! section is the whole round trip: start the COPY, send the batch, finish
//! it and wait for the server's CommandComplete (autocommit, so committed;
//! as one simple-protocol query, see [`copy_all`]).
//! The rows are made in `stage`, before timing.

use crate::db::wire::WireConn;

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::copy_in::copy_all;
use crate::workload::kit::limits::check_batch_bytes;
use crate::workload::kit::partition::Batches;
use crate::workload::kit::rowgen::RowGen;
use crate::workload::{Operation, Outcome, Role, Settings, Spec};

pub struct CopyMem {
    sql: String,
    batches: Batches,
    rows: RowGen,
    /// The staged batch (a retry sends the same rows again), reused from
    /// batch to batch.
    data: Vec<u8>,
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
            data: Vec::new(),
            staged: 0..0,
        }
    }

    fn histogram_note(s: &Settings, unit: &str) -> String {
        format!("{unit} ({} rows)", s.batch_size)
    }
}

impl Operation for CopyMem {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let Some(batch) = self.batches.next() else {
            return false;
        };
        self.data.clear();
        for id in batch.clone() {
            self.rows.copy_text_row(id, &mut self.data);
        }
        self.staged = batch;
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!("ids {}..{}", self.staged.start, self.staged.end))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let rows = copy_all(conn, &self.sql, &self.data).await?;
        let expected = self.staged.end - self.staged.start;
        if rows != expected {
            return Err(Error::run(format!(
                "COPY of {expected} rows reported {rows} rows copied"
            )));
        }
        Ok(Outcome { rows, missing: 0 })
    }
}
