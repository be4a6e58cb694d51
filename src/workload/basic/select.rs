//! `select`: point reads by primary key of ids drawn uniformly from
//! 0..rows, until the run time is up. A missing row is counted, not fatal.

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::db::wire::{Stmt, WireConn};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::{IdPicker, Operation, Outcome, Role, Settings, Spec};

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
        }
        .map_err(|e| Error::wire("SELECT failed", e))?;
        Ok(Outcome {
            rows: answer.rows,
            missing: u64::from(answer.rows == 0),
        })
    }
}
