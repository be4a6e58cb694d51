//! `select`: point reads by primary key of ids drawn uniformly from
//! 0..rows, until the run time is up. A missing row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use std::time::Duration;

use crate::db::wire::{Answer, Protocol, Sql, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec, Ticket};

pub struct Select {
    table: String,
    ids: IdPicker,
    protocol: Protocol,
    statement: Option<Sql>,
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
            protocol: plan.protocol,
            statement: None,
            id: 0,
        }
    }
}

impl Select {
    fn sql(&self) -> String {
        format!("select f1, f2, f3, f4 from {} where id = $1", self.table)
    }

    fn statement(&self) -> Result<&Sql> {
        self.statement
            .as_ref()
            .ok_or_else(|| Error::run("the SELECT ran before it was prepared"))
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
        let sql = Sql::new(conn, self.sql(), self.protocol)
            .await
            .map_err(|e| Error::wire("cannot prepare the SELECT", e))?;
        self.statement = Some(sql);
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.id = self.ids.next_id();
        true
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let answer = self.statement()?.execute(conn, &[self.id.into()]).await;
        Self::outcome(answer)
    }

    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        self.statement()?
            .queue(conn, &[self.id.into()])
            .map_err(|e| Error::wire("SELECT failed", e))?;
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
