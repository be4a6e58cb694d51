//! `update`: rewrites the four fields of a row chosen uniformly from
//! 0..rows, until the run time is up. New values are made in `stage`, and
//! their length (`--fields-length`) may differ from the load's. A missing
//! row is counted, not fatal.

use tokio_postgres::{Client, Statement};

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::db::wire::{Answer, Param};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::kit::rowgen::{FIELDS, fill_alphanumeric};
use crate::workload::kit::simple_query::command_rows;
use crate::workload::{
    IdPicker, Operation, Outcome, Role, Settings, Spec, WireStatement, WireUnit,
};

pub struct Update {
    table: String,
    ids: IdPicker,
    field_len: usize,
    prepared: bool,
    statement: Option<Statement>,
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
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        if self.prepared {
            let sql = self.sql();
            self.statement = Some(
                client
                    .prepare(&sql)
                    .await
                    .map_err(|e| Error::db("cannot prepare the UPDATE", e))?,
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

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let (f1, f2, f3, f4) = (
            self.field(0)?,
            self.field(1)?,
            self.field(2)?,
            self.field(3)?,
        );
        let affected = match &self.statement {
            Some(s) => client
                .execute(s, &[&self.id, &f1, &f2, &f3, &f4])
                .await
                .map_err(|e| Error::db("UPDATE failed", e))?,
            None => {
                let sql = format!(
                    "update {} set f1 = '{f1}', f2 = '{f2}', f3 = '{f3}', f4 = '{f4}' where id = {}",
                    self.table, self.id
                );
                command_rows(
                    &client
                        .simple_query(&sql)
                        .await
                        .map_err(|e| Error::db("UPDATE failed", e))?,
                )
            }
        };
        Ok(Outcome {
            rows: affected,
            missing: u64::from(affected == 0),
        })
    }

    fn wire(&mut self) -> Option<&mut dyn WireUnit> {
        if self.prepared { Some(self) } else { None }
    }
}

impl WireUnit for Update {
    fn statements(&self) -> Vec<WireStatement> {
        vec![WireStatement {
            sql: self.sql(),
            prepare_failed: "cannot prepare the UPDATE".to_string(),
            failed: "UPDATE failed",
        }]
    }

    /// $1 the id, $2..$5 the four fields (ASCII, as `stage` makes them).
    fn param(&self, i: usize) -> Param<'_> {
        match i {
            0 => Param::Int(i64::from(self.id)),
            i => {
                let f = &self.fields[(i - 1) * self.field_len..i * self.field_len];
                Param::Text(std::str::from_utf8(f).unwrap_or_default())
            }
        }
    }

    fn outcome(&mut self, answer: Answer) -> Outcome {
        Outcome {
            rows: answer.affected,
            missing: u64::from(answer.affected == 0),
        }
    }
}
