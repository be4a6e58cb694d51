//! `select`: point reads by primary key of ids drawn uniformly from
//! 0..rows, until the run time is up. A missing row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::db::wire::{Protocol, Sql, WireConn};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec};

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
        let Some(sql) = &self.statement else {
            return Err(Error::run("the SELECT ran before it was prepared"));
        };
        let answer = sql
            .execute(conn, &[self.id.into()])
            .await
            .map_err(|e| Error::wire("SELECT failed", e))?;
        Ok(Outcome {
            rows: answer.rows,
            missing: u64::from(answer.rows == 0),
        })
    }
}
