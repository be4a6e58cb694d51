//! `select`: point reads by primary key of ids drawn uniformly from
//! 0..rows, until the run time is up. A missing row is counted, not fatal.

use tokio_postgres::{Client, SimpleQueryMessage, Statement};

use super::table::{self, TableOp};
use crate::db::sql::TableName;
use crate::db::wire::{Answer, Param};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyDistribution;
use crate::workload::{
    IdPicker, Operation, Outcome, Role, Settings, Spec, WireStatement, WireUnit,
};

pub struct Select {
    table: String,
    ids: IdPicker,
    prepared: bool,
    statement: Option<Statement>,
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
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        if self.prepared {
            let sql = self.sql();
            self.statement = Some(
                client
                    .prepare(&sql)
                    .await
                    .map_err(|e| Error::db("cannot prepare the SELECT", e))?,
            );
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.id = self.ids.next_id();
        true
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let found = match &self.statement {
            Some(s) => client
                .query(s, &[&self.id])
                .await
                .map_err(|e| Error::db("SELECT failed", e))?
                .len() as u64,
            None => {
                let sql = format!(
                    "select f1, f2, f3, f4 from {} where id = {}",
                    self.table, self.id
                );
                client
                    .simple_query(&sql)
                    .await
                    .map_err(|e| Error::db("SELECT failed", e))?
                    .iter()
                    .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
                    .count() as u64
            }
        };
        Ok(Outcome {
            rows: found,
            missing: u64::from(found == 0),
        })
    }

    fn wire(&mut self) -> Option<&mut dyn WireUnit> {
        if self.prepared { Some(self) } else { None }
    }
}

impl WireUnit for Select {
    fn statements(&self) -> Vec<WireStatement> {
        vec![WireStatement {
            sql: self.sql(),
            prepare_failed: "cannot prepare the SELECT".to_string(),
            failed: "SELECT failed",
        }]
    }

    fn param(&self, _i: usize) -> Param<'_> {
        Param::Int(i64::from(self.id))
    }

    fn outcome(&mut self, answer: Answer) -> Outcome {
        Outcome {
            rows: answer.rows,
            missing: u64::from(answer.rows == 0),
        }
    }
}
