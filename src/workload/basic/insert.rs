//! `insert`: each batch is one multi-row INSERT, autocommitted.
//!
//! Prepared (the default): one statement for the full batch size and, when
//! the thread's share does not divide evenly, one for its shorter last
//! batch, both prepared before timing starts. `-M extended`: the same
//! statements unnamed. `-M simple` (`--no-prepared`): the batch is sent as
//! SQL text with literal values, which has no bind-parameter limit.

use std::fmt::Write as _;

use crate::db::wire::{Param, Protocol, Sql, WireConn};

use super::table::{self, TableOp};
use crate::db::sql::{MAX_BIND_PARAMS, TableName};
use crate::error::{Error, Result};
use crate::workload::kit::limits::{INSERT_COLUMNS, MAX_INSERT_BATCH, check_batch_bytes};
use crate::workload::kit::partition::Batches;
use crate::workload::kit::rowgen::{FIELDS, RowGen};
use crate::workload::{Operation, Outcome, Role, Settings, Spec};

pub struct Insert {
    table: String,
    batches: Batches,
    batch_size: usize,
    /// Rows in this thread's last batch when shorter than `batch_size`.
    last_size: Option<usize>,
    /// Whether this thread has any batch of `batch_size` rows.
    has_full: bool,
    rows: RowGen,
    protocol: Protocol,
    full: Option<Sql>,
    short: Option<Sql>,
    ids: Vec<i32>,
    fields: Vec<u8>,
}

/// `-o insert`.
pub static SPEC: Spec = Spec {
    name: "insert",
    aliases: &[],
    about: "load: one multi-row INSERT per batch",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: table::build::<Insert>,
};

impl TableOp for Insert {
    fn check(s: &Settings) -> Result<()> {
        check_batch_bytes(s)?;
        if s.protocol != Protocol::Simple && s.batch_size > MAX_INSERT_BATCH {
            return Err(Error::usage(format!(
                "--batch-size {} is too large for insert: one prepared INSERT binds at most {MAX_BIND_PARAMS} parameters ({MAX_INSERT_BATCH} rows of {INSERT_COLUMNS} columns); use --batch-size {MAX_INSERT_BATCH} or less, -M simple, or copy-mem",
                s.batch_size
            )));
        }
        Ok(())
    }

    fn new(plan: &Settings, table: &TableName, thread: usize) -> Self {
        let range = plan.share(plan.rows, thread);
        let len = (range.end - range.start) as usize;
        let rem = len % plan.batch_size;
        Insert {
            table: table.quoted(),
            batches: Batches::new(range, plan.batch_size),
            batch_size: plan.batch_size,
            last_size: (rem != 0 && len > 0).then_some(rem),
            has_full: len >= plan.batch_size,
            rows: RowGen::new(plan.seed, plan.field_len),
            protocol: plan.protocol,
            full: None,
            short: None,
            ids: Vec::new(),
            fields: Vec::new(),
        }
    }

    fn histogram_note(s: &Settings, unit: &str) -> String {
        format!("{unit} ({} rows)", s.batch_size)
    }
}

/// The prepared multi-row INSERT for `rows` rows: `($1,$2,$3,$4,$5),($6,...`.
pub fn insert_sql(table: &str, rows: usize) -> String {
    let mut sql = format!("insert into {table} (id, f1, f2, f3, f4) values ");
    for r in 0..rows {
        let p = r * 5;
        if r > 0 {
            sql.push(',');
        }
        let _ = write!(
            sql,
            "(${},${},${},${},${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5
        );
    }
    sql
}

impl Operation for Insert {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.full = None;
        self.short = None;
        // Per connection: with --reconnect this runs again on every new
        // connection, so it must not depend on how far the batches went.
        let mut sizes = Vec::new();
        if self.has_full {
            sizes.push(self.batch_size);
        }
        sizes.extend(self.last_size);
        for n in sizes {
            let sql = Sql::new(conn, insert_sql(&self.table, n), self.protocol)
                .await
                .map_err(|e| Error::wire(format!("cannot prepare the INSERT of {n} rows"), e))?;
            if n == self.batch_size && self.has_full {
                self.full = Some(sql);
            } else {
                self.short = Some(sql);
            }
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let Some(batch) = self.batches.next() else {
            return false;
        };
        self.ids.clear();
        self.fields.clear();
        for id in batch {
            self.ids.push(id as i32);
            self.rows.fields(id, &mut self.fields);
        }
        true
    }

    fn unit_label(&self) -> Option<String> {
        let first = self.ids.first()?;
        // i64: the last batch of a 2^31-row table ends at 2^31.
        Some(format!(
            "ids {first}..{}",
            i64::from(*first) + self.ids.len() as i64
        ))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let n = self.ids.len();
        let sql = if n == self.batch_size {
            self.full.as_ref()
        } else {
            self.short.as_ref()
        };
        let sql = sql.ok_or_else(|| Error::run(format!("no INSERT prepared for {n} rows")))?;
        let text = std::str::from_utf8(&self.fields)
            .map_err(|_| Error::run("generated fields are not UTF-8"))?;
        let len = self.rows.field_len();
        let mut params: Vec<Param<'_>> = Vec::with_capacity(n * (FIELDS + 1));
        for (i, id) in self.ids.iter().enumerate() {
            params.push((*id).into());
            for k in i * FIELDS..(i + 1) * FIELDS {
                params.push(text[k * len..(k + 1) * len].into());
            }
        }
        let affected = sql
            .execute(conn, &params)
            .await
            .map_err(|e| Error::wire("INSERT failed", e))?
            .affected;
        if affected != n as u64 {
            return Err(Error::run(format!(
                "INSERT of {n} rows reported {affected} rows inserted"
            )));
        }
        Ok(Outcome {
            rows: affected,
            missing: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_insert_binds_five_parameters_per_row() {
        assert_eq!(
            insert_sql("\"t\"", 2),
            "insert into \"t\" (id, f1, f2, f3, f4) values ($1,$2,$3,$4,$5),($6,$7,$8,$9,$10)"
        );
        assert!(insert_sql("\"t\"", 13107).ends_with("$65535)"));
    }
}
