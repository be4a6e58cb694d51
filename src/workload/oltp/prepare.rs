//! `oltp-prepare`: every table's rows by COPY, split over the workers,
//! and each table's sequence moved past them.

use std::fmt::Write as _;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use crate::db::wire::WireConn;

use super::OltpSettings;
use super::schema::{C_GROUPS, PAD_GROUPS, SBTABLES, check_rows, digits_value, table};
use crate::db::schema;
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::copy_in::copy_all;
use crate::workload::{
    BoxFuture, DynOperation, Facts, Operation, Outcome, Settings, Spec, TableSet, Workload,
    worker_seed,
};

pub(super) fn build_prepare(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_rows(spec, s)?;
    Ok(Box::new(Prepare {
        spec,
        facts: Facts {
            batch_text: format!("{} rows per COPY", s.batch_size),
            histogram_note: format!("batch ({} rows)", s.batch_size),
            ..Facts::new(spec, table(1))
        },
        settings: s.clone(),
        oltp: s.family::<OltpSettings>().into_owned(),
    }))
}

struct Prepare {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    /// The sysbench flags it was built with.
    oltp: OltpSettings,
}

impl Workload for Prepare {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &SBTABLES
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let tables: Vec<TableName> = (1..=self.oltp.tables).map(table).collect();
            schema::require_privileges(client, &tables, &["INSERT"], self.spec.name).await?;
            // One statement: all of them emptied, or none.
            let list: Vec<String> = tables.iter().map(TableName::quoted).collect();
            client
                .batch_execute(&format!(
                    "truncate table {} restart identity",
                    list.join(", ")
                ))
                .await
                .map_err(|e| Error::db(format!("cannot truncate tables {}", list.join(", ")), e))?;
            for t in &tables {
                schema::mark_loading(client, t).await?;
            }
            Ok(())
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, _rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let rows = self.settings.rows;
            for i in 1..=self.oltp.tables {
                let t = table(i);
                // sysbench's own inserts (oltp_insert) take ids from the
                // sequence: past the loaded ones.
                client
                    .batch_execute(&format!(
                        "select setval(pg_get_serial_sequence('{0}', 'id'), {rows}); analyze {0}",
                        t.quoted()
                    ))
                    .await
                    .map_err(|e| Error::db(format!("cannot finish table {}", t.quoted()), e))?;
                schema::mark_loaded(client, &t, rows).await?;
            }
            Ok(())
        })
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let total = s.rows * self.oltp.tables as u64;
        Box::new(PrepareOp {
            share: s.share(total, thread),
            rows: s.rows,
            batch: s.batch_size as u64,
            seed: s.seed,
            data: String::new(),
            staged_table: 0,
            staged: 0..0,
        })
    }
}

/// A worker's share of all tables' rows, numbered 0..tables×rows: row g
/// is id g mod rows + 1 of table g / rows + 1. A batch never spans two
/// tables (one COPY goes to one table).
struct PrepareOp {
    share: std::ops::Range<u64>,
    rows: u64,
    batch: u64,
    seed: u64,
    /// The staged batch's lines, reused from batch to batch.
    data: String,
    staged_table: usize,
    staged: std::ops::Range<u64>,
}

impl PrepareOp {
    fn copy_sql(i: usize) -> String {
        format!("copy {} (id, k, c, pad) from stdin", table(i).quoted())
    }
}

impl Operation for PrepareOp {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        if self.share.start >= self.share.end {
            return false;
        }
        let g = self.share.start;
        let table_end = (g / self.rows + 1) * self.rows;
        let end = (g + self.batch).min(self.share.end).min(table_end);
        self.share.start = end;
        self.staged_table = (g / self.rows) as usize + 1;
        let mut buf = std::mem::take(&mut self.data);
        buf.clear();
        buf.reserve(((end - g) * 200) as usize);
        for row in g..end {
            let id = row % self.rows + 1;
            let mut rng = SmallRng::seed_from_u64(worker_seed(self.seed, row as usize, 13));
            let k = rng.random_range(1..=self.rows);
            let _ = write!(buf, "{id}\t{k}\t");
            digits_value(&mut rng, C_GROUPS, &mut buf);
            buf.push('\t');
            digits_value(&mut rng, PAD_GROUPS, &mut buf);
            buf.push('\n');
        }
        self.data = buf;
        self.staged = g % self.rows + 1..(end - 1) % self.rows + 2;
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!(
            "sbtest{} ids {}..{}",
            self.staged_table, self.staged.start, self.staged.end
        ))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let sql = Self::copy_sql(self.staged_table);
        let rows = copy_all(conn, &sql, self.data.as_bytes()).await?;
        Ok(Outcome { rows, missing: 0 })
    }
}
