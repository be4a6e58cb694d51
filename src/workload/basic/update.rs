//! `update`: rewrites the four fields of a row chosen uniformly from
//! 0..rows, until the run time is up. New values are made in `stage`, and
//! their length (`--fields-length`) may differ from the load's. A missing
//! row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::db::wire::{Protocol, Sql, WireConn};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::kit::rowgen::{FIELDS, fill_alphanumeric};
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec};

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
    fn field(&self, i: usize) -> Result<&str> {
        std::str::from_utf8(&self.fields[i * self.field_len..(i + 1) * self.field_len])
            .map_err(|_| Error::run("generated fields are not UTF-8"))
    }
}

impl Update {
    fn sql(&self) -> String {
        format!(
            "update {} set f1 = $2, f2 = $3, f3 = $4, f4 = $5 where id = $1",
            self.table
        )
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
        let Some(sql) = &self.statement else {
            return Err(Error::run("the UPDATE ran before it was prepared"));
        };
        let (f1, f2, f3, f4) = (
            self.field(0)?,
            self.field(1)?,
            self.field(2)?,
            self.field(3)?,
        );
        let answer = sql
            .execute(
                conn,
                &[self.id.into(), f1.into(), f2.into(), f3.into(), f4.into()],
            )
            .await
            .map_err(|e| Error::wire("UPDATE failed", e))?;
        Ok(Outcome {
            rows: answer.affected,
            missing: u64::from(answer.affected == 0),
        })
    }
}
