//! `procedure`: rows generated on the server by a plpgsql procedure that
//! commits every batch-size rows; one timed CALL per thread.
//!
//! The procedure and its random-text function are created (or replaced)
//! and marked as the tool's once before the workers start, by [`install`];
//! `table-cleanup` and `cleanup` drop them. The CALL goes over the
//! simple query protocol so that the procedure's COMMITs run at top level.

use tokio_postgres::Client;

use crate::db::wire::{Rows, WireConn};

use super::table::{self, TableOp, one_per_thread_note};
use crate::db::dialect::{procedure_call, procedure_ddl, procedure_marks};
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::{BoxFuture, Operation, Outcome, Role, Settings, Spec};

/// Creates or replaces the server-side generator, marked as the tool's
/// (so that a clean-up drops it, and nothing else of that name).
pub async fn install(client: &Client) -> Result<()> {
    for ddl in procedure_ddl().iter().chain(&procedure_marks()) {
        client
            .batch_execute(ddl)
            .await
            .map_err(|e| Error::db("cannot create the load procedure", e))?;
    }
    Ok(())
}

pub struct Procedure {
    table: TableName,
    first: u64,
    end: u64,
    batch: usize,
    field_len: usize,
    staged: bool,
}

/// `-o procedure`.
pub static SPEC: Spec = Spec {
    name: "procedure",
    aliases: &[],
    about: "load: one CALL per thread of a server-side generator that commits every batch",
    role: Role::Load,
    paced: false,
    writes: true,
    drops: false,
    unit: "call",
    units: "calls",
    build: table::build::<Procedure>,
};

impl TableOp for Procedure {
    fn new(plan: &Settings, table: &TableName, thread: usize) -> Self {
        let range = plan.share(plan.rows, thread);
        Procedure {
            table: table.clone(),
            first: range.start,
            end: range.end,
            batch: plan.batch_size,
            field_len: plan.field_len,
            staged: false,
        }
    }

    /// The generator is made before the table is emptied: a role that may
    /// not create it (no CREATE on the schema) costs no rows.
    fn before_truncate<'a>(
        client: &'a Client,
        _s: &'a Settings,
        _table: &'a TableName,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(install(client))
    }

    fn batch_text(s: &Settings) -> String {
        format!("{} (rows per commit)", s.batch_size)
    }

    fn histogram_note(s: &Settings, unit: &str) -> String {
        one_per_thread_note(s, unit)
    }
}

impl Operation for Procedure {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        // A thread with no rows has nothing to call.
        self.first < self.end && !std::mem::replace(&mut self.staged, true)
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!("ids {}..{}", self.first, self.end))
    }

    /// The procedure commits every batch: after a failure part of the
    /// range may be in the table, and sending it again would collide.
    fn retryable(&self) -> bool {
        false
    }

    fn long_unit(&self) -> bool {
        true
    }

    /// The procedure commits every batch: count what is in this thread's
    /// id range.
    async fn committed_rows(&mut self, conn: &mut WireConn) -> Result<u64> {
        let sql = format!(
            "select count(*) from {} where id >= {} and id < {}",
            self.table.quoted(),
            self.first,
            self.end
        );
        let what = "cannot count the rows the procedure committed";
        let mut rows = Rows::new();
        conn.simple_rows(&sql, &mut rows)
            .await
            .map_err(|e| Error::wire(what, e))?;
        let n: i64 = rows.get(0, 0).map_err(|e| Error::wire(what, e))?;
        Ok(n.max(0) as u64)
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let call = procedure_call(
            &self.table,
            self.first,
            self.end,
            self.batch,
            self.field_len,
        );
        conn.simple_query(&call)
            .await
            .map_err(|e| Error::wire("CALL of the load procedure failed", e))?;
        Ok(Outcome {
            rows: self.end - self.first,
            missing: 0,
        })
    }
}
