//! `update`: rewrites the four fields of a row chosen uniformly from
//! 0..rows, until the run time is up. New values are made in `stage`, and
//! their length (`--fields-length`) may differ from the load's. A missing
//! row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use std::time::Duration;

use crate::db::wire::{Answer, Param, Protocol, Sql, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::kit::rowgen::{FIELDS, fill_alphanumeric};
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec, Ticket};

pub struct Update {
    table: String,
    ids: IdPicker,
    field_len: usize,
    protocol: Protocol,
    statement: Option<Sql>,
    id: i32,
    fields: Vec<u8>,
}

/// `-o update`.
pub static SPEC: Spec = Spec {
    name: "update",
    aliases: &[],
    about: "query: rewrites the four fields of a row by primary key",
    role: Role::Query,
    paced: true,
    writes: true,
    drops: false,
    unit: "query",
    units: "queries",
    build: table::build::<Update>,
};

impl TableOp for Update {
    const PIPELINES: bool = true;

    fn new(plan: &Settings, table: &TableName, thread: usize) -> Self {
        Update {
            table: table.quoted(),
            ids: IdPicker::new(
                plan.seed,
                thread,
                plan.threads,
                plan.rows,
                plan.keys.unwrap_or(KeyDistribution::Uniform),
            ),
            field_len: plan.field_len,
            protocol: plan.protocol,
            statement: None,
            id: 0,
            fields: Vec::with_capacity(plan.field_len * FIELDS),
        }
    }
}

impl Update {
    fn sql(&self) -> String {
        format!(
            "update {} set f1 = $2, f2 = $3, f3 = $4, f4 = $5 where id = $1",
            self.table
        )
    }

    fn statement(&self) -> Result<&Sql> {
        self.statement
            .as_ref()
            .ok_or_else(|| Error::run("the UPDATE ran before it was prepared"))
    }

    /// The staged unit's parameters: the id, then the four fields.
    fn params(&self) -> Result<[Param<'_>; 5]> {
        // Checked as text once for the four (short strings cost the check
        // most per byte), then cut.
        let all = std::str::from_utf8(&self.fields)
            .map_err(|_| Error::run("generated fields are not UTF-8"))?;
        let n = self.field_len;
        let field = |i: usize| {
            all.get(i * n..(i + 1) * n)
                .ok_or_else(|| Error::run("generated fields are shorter than four"))
        };
        Ok([
            self.id.into(),
            field(0)?.into(),
            field(1)?.into(),
            field(2)?.into(),
            field(3)?.into(),
        ])
    }

    /// What an answer counts as: the row rewritten, or a missing one.
    fn outcome(answer: std::result::Result<Answer, WireError>) -> Result<Outcome> {
        let answer = answer.map_err(|e| Error::wire("UPDATE failed", e))?;
        Ok(Outcome {
            rows: answer.affected,
            missing: u64::from(answer.affected == 0),
        })
    }
}

impl Operation for Update {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        let sql = Sql::new(conn, self.sql(), self.protocol)
            .await
            .map_err(|e| Error::wire("cannot prepare the UPDATE", e))?;
        self.statement = Some(sql);
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.id = self.ids.next_id();
        self.fields.clear();
        fill_alphanumeric(self.ids.rng(), &mut self.fields, self.field_len * FIELDS);
        true
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let answer = self.statement()?.execute(conn, &self.params()?).await;
        Self::outcome(answer)
    }

    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        self.statement()?
            .queue(conn, &self.params()?)
            .map_err(|e| Error::wire("UPDATE failed", e))?;
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
