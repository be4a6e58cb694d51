//! `update`: rewrites the four fields of a row chosen uniformly from
//! 0..rows, until the run time is up. New values are made in `stage`, and
//! their length (`--fields-length`) may differ from the load's. A missing
//! row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::db::wire::{Stmt, WireConn};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::kit::rowgen::{FIELDS, fill_alphanumeric};
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec};

pub struct Update {
    table: String,
    ids: IdPicker,
    field_len: usize,
    prepared: bool,
    statement: Option<Stmt>,
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
            prepared: plan.prepared,
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
        self.statement = None;
        if self.prepared {
            let sql = self.sql();
            self.statement = Some(
                conn.prepare(&sql)
                    .await
                    .map_err(|e| Error::wire("cannot prepare the UPDATE", e))?,
            );
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.id = self.ids.next_id();
        self.fields.clear();
        fill_alphanumeric(self.ids.rng(), &mut self.fields, self.field_len * FIELDS);
        true
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let (f1, f2, f3, f4) = (
            self.field(0)?,
            self.field(1)?,
            self.field(2)?,
            self.field(3)?,
        );
        let answer = match self.statement {
            Some(s) => {
                conn.execute(
                    s,
                    &[self.id.into(), f1.into(), f2.into(), f3.into(), f4.into()],
                )
                .await
            }
            None => {
                let sql = format!(
                    "update {} set f1 = '{f1}', f2 = '{f2}', f3 = '{f3}', f4 = '{f4}' where id = {}",
                    self.table, self.id
                );
                conn.simple_query(&sql).await
            }
        }
        .map_err(|e| Error::wire("UPDATE failed", e))?;
        Ok(Outcome {
            rows: answer.affected,
            missing: u64::from(answer.affected == 0),
        })
    }
}
