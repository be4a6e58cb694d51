//! `select`: point reads by primary key of ids drawn uniformly from
//! 0..rows, until the run time is up. A missing row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use std::time::Duration;

use crate::db::wire::{Answer, Stmt, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec, Ticket};

pub struct Select {
    table: String,
    ids: IdPicker,
    prepared: bool,
    statement: Option<Stmt>,
    id: i32,
}

/// `-o select`.
pub static SPEC: Spec = Spec {
    name: "select",
    aliases: &[],
    about: "query: point reads by primary key",
    role: Role::Query,
    paced: true,
    writes: false,
    drops: false,
    unit: "query",
    units: "queries",
    build: table::build::<Select>,
};

impl TableOp for Select {
    const PIPELINES: bool = true;

    fn new(plan: &Settings, table: &TableName, thread: usize) -> Self {
        Select {
            table: table.quoted(),
            ids: IdPicker::new(
                plan.seed,
                thread,
                plan.threads,
                plan.rows,
                plan.keys.unwrap_or(KeyDistribution::Uniform),
            ),
            prepared: plan.prepared,
            statement: None,
            id: 0,
        }
    }
}

impl Select {
    fn sql(&self) -> String {
        format!("select f1, f2, f3, f4 from {} where id = $1", self.table)
    }

    /// What an answer counts as: the row, or a missing one.
    fn outcome(answer: std::result::Result<Answer, WireError>) -> Result<Outcome> {
        let answer = answer.map_err(|e| Error::wire("SELECT failed", e))?;
        Ok(Outcome {
            rows: answer.rows,
            missing: u64::from(answer.rows == 0),
        })
    }
}

impl Operation for Select {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.statement = None;
        if self.prepared {
            let sql = self.sql();
            self.statement = Some(
                conn.prepare(&sql)
                    .await
                    .map_err(|e| Error::wire("cannot prepare the SELECT", e))?,
            );
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.id = self.ids.next_id();
        true
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let answer = match self.statement {
            Some(s) => conn.execute(s, &[self.id.into()]).await,
            None => {
                let sql = format!(
                    "select f1, f2, f3, f4 from {} where id = {}",
                    self.table, self.id
                );
                conn.simple_query(&sql).await
            }
        };
        Self::outcome(answer)
    }

    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        let st = self
            .statement
            .ok_or_else(|| Error::run("--pipeline needs the SELECT prepared"))?;
        conn.queue(st, &[self.id.into()])
            .map_err(|e| Error::wire("SELECT failed", e))?;
        conn.queue_sync();
        Ok(Ticket(self.id as u32 as u64))
    }

    fn answered(
        &mut self,
        _ticket: Ticket,
        answer: std::result::Result<Answer, WireError>,
        _took: Duration,
    ) -> Result<Outcome> {
        Self::outcome(answer)
    }
}
