//! One worker of a mix: its statements, the unit it stages (a type and a
//! record) and how it sends it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::RngExt;
use rand::rngs::SmallRng;

use super::MAX_SCAN;
use super::mix::TYPES;
use super::run::Acknowledged;
use super::schema::{field_list, key_of};
use crate::db::sql::quote_literal;
use crate::db::wire::{Answer, Param, Stmt, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyPicker;
use crate::workload::kit::rowgen::fill_alphanumeric;
use crate::workload::{Operation, Outcome, Ticket};

pub(super) const READ: usize = 0;
pub(super) const UPDATE: usize = 1;
pub(super) const INSERT: usize = 2;
pub(super) const SCAN: usize = 3;
pub(super) const RMW: usize = 4;

/// The prepared statements of a mix worker.
pub(super) struct Statements {
    pub(super) read: Option<Stmt>,
    /// One per field: `update … set fieldK = $2 where ycsb_key = $1`.
    pub(super) update_one: Vec<Stmt>,
    pub(super) update_all: Option<Stmt>,
    pub(super) insert: Option<Stmt>,
    pub(super) scan: Option<Stmt>,
}

#[derive(Default)]
pub(super) struct Staged {
    /// Index into `active`.
    pub(super) slot: usize,
    pub(super) key: String,
    /// The field an update writes (when not all).
    pub(super) field: usize,
    pub(super) scan_len: i64,
    /// The record's number (the key is made from it).
    pub(super) number: u64,
}

pub(super) struct MixOp {
    pub(super) table: String,
    pub(super) rng: SmallRng,
    pub(super) keys: KeyPicker,
    pub(super) latest: bool,
    /// Inserts done without a gap: `latest` draws below it.
    pub(super) acked: Arc<Acknowledged>,
    /// An insert staged and not yet acknowledged (a failed one is
    /// acknowledged when the next unit is staged, so that the count does
    /// not wait for it for ever).
    pub(super) pending_ack: Option<u64>,
    pub(super) active: Vec<usize>,
    pub(super) cumulative: Vec<f64>,
    pub(super) fields: usize,
    pub(super) field_len: usize,
    pub(super) write_all: bool,
    pub(super) rmw_txn: bool,
    pub(super) prepared: bool,
    pub(super) next_insert: Arc<AtomicU64>,
    /// Where this mix's inserts began; the client's record numbers are
    /// interleaved with the other clients' from there.
    pub(super) insert_base: u64,
    pub(super) client: crate::workload::kit::partition::ClientShare,
    pub(super) st: Option<Statements>,
    pub(super) staged: Staged,
    /// The staged values: every field's for an insert or a full update,
    /// one field's otherwise, each `field_len` bytes.
    pub(super) values: Vec<u8>,
}

impl MixOp {
    pub(super) fn kind(&self) -> usize {
        self.active[self.staged.slot]
    }

    fn value(&self, i: usize) -> Result<&str> {
        std::str::from_utf8(&self.values[i * self.field_len..(i + 1) * self.field_len])
            .map_err(|_| Error::run("generated fields are not UTF-8"))
    }

    fn read_sql(&self) -> String {
        format!(
            "select ycsb_key, {} from {} where ycsb_key = $1",
            field_list(self.fields),
            self.table
        )
    }

    fn insert_sql(&self) -> String {
        let params: Vec<String> = (1..=self.fields + 1).map(|i| format!("${i}")).collect();
        format!(
            "insert into {} (ycsb_key, {}) values ({})",
            self.table,
            field_list(self.fields),
            params.join(", ")
        )
    }

    fn scan_sql(&self) -> String {
        format!(
            "select ycsb_key, {} from {} where ycsb_key >= $1 order by ycsb_key limit $2",
            field_list(self.fields),
            self.table
        )
    }

    /// The statements this mix draws, in the order both drivers prepare
    /// them: read, the update(s), insert, scan.
    pub(super) fn statement_sqls(&self) -> Vec<(usize, String)> {
        let has = |t: usize| self.active.contains(&t);
        let mut out = Vec::new();
        if has(READ) || has(RMW) {
            out.push((READ, self.read_sql()));
        }
        if has(UPDATE) || has(RMW) {
            if self.write_all {
                out.push((UPDATE, self.update_sql_all()));
            } else {
                out.extend((0..self.fields).map(|f| (UPDATE, self.update_sql_one(f))));
            }
        }
        if has(INSERT) {
            out.push((INSERT, self.insert_sql()));
        }
        if has(SCAN) {
            out.push((SCAN, self.scan_sql()));
        }
        out
    }

    fn update_sql_one(&self, field: usize) -> String {
        format!(
            "update {} set field{field} = $2 where ycsb_key = $1",
            self.table
        )
    }

    fn update_sql_all(&self) -> String {
        let sets: Vec<String> = (0..self.fields)
            .map(|i| format!("field{i} = ${}", i + 2))
            .collect();
        format!(
            "update {} set {} where ycsb_key = $1",
            self.table,
            sets.join(", ")
        )
    }

    /// Queues the staged read, update, insert or scan on its prepared
    /// statement, with its Sync; false when nothing is prepared
    /// (`--no-prepared`).
    fn queue_prepared(&self, conn: &mut WireConn, kind: usize) -> Result<bool> {
        let Some(st) = self.st.as_ref() else {
            return Ok(false);
        };
        let key = self.staged.key.as_str();
        let missing = || {
            Error::run(format!(
                "no statement prepared for the YCSB {}",
                TYPES[kind]
            ))
        };
        let queued = match kind {
            READ => conn.queue(st.read.ok_or_else(missing)?, &[key.into()]),
            UPDATE => match st.update_all {
                Some(all) => {
                    let mut params: Vec<Param<'_>> = Vec::with_capacity(self.fields + 1);
                    params.push(key.into());
                    for i in 0..self.fields {
                        params.push(self.value(i)?.into());
                    }
                    conn.queue(all, &params)
                }
                None => {
                    let one = st.update_one.get(self.staged.field).copied();
                    conn.queue(
                        one.ok_or_else(missing)?,
                        &[key.into(), self.value(0)?.into()],
                    )
                }
            },
            INSERT => {
                let mut params: Vec<Param<'_>> = Vec::with_capacity(self.fields + 1);
                params.push(key.into());
                for i in 0..self.fields {
                    params.push(self.value(i)?.into());
                }
                conn.queue(st.insert.ok_or_else(missing)?, &params)
            }
            SCAN => conn.queue(
                st.scan.ok_or_else(missing)?,
                &[key.into(), self.staged.scan_len.into()],
            ),
            _ => return Err(Error::run("a read-modify-write is not one statement")),
        };
        queued.map_err(failed(kind))?;
        conn.queue_sync();
        Ok(true)
    }

    /// The staged read, update, insert or scan with its values written
    /// into the text (`--no-prepared`).
    fn literal_sql(&self, kind: usize) -> Result<String> {
        let key = quote_literal(&self.staged.key);
        let (fields, table) = (field_list(self.fields), &self.table);
        Ok(match kind {
            READ => format!("select ycsb_key, {fields} from {table} where ycsb_key = {key}"),
            UPDATE => {
                let sets: Vec<String> = if self.write_all {
                    (0..self.fields)
                        .map(|i| Ok(format!("field{i} = {}", quote_literal(self.value(i)?))))
                        .collect::<Result<_>>()?
                } else {
                    vec![format!(
                        "field{} = {}",
                        self.staged.field,
                        quote_literal(self.value(0)?)
                    )]
                };
                format!(
                    "update {table} set {} where ycsb_key = {key}",
                    sets.join(", ")
                )
            }
            INSERT => {
                let lits: Vec<String> = (0..self.fields)
                    .map(|i| Ok(quote_literal(self.value(i)?)))
                    .collect::<Result<_>>()?;
                format!(
                    "insert into {table} (ycsb_key, {fields}) values ({key}, {})",
                    lits.join(", ")
                )
            }
            _ => format!(
                "select ycsb_key, {fields} from {table} where ycsb_key >= {key} order by ycsb_key limit {}",
                self.staged.scan_len
            ),
        })
    }

    /// Runs the staged read, update, insert or scan alone: the rows it
    /// read, or wrote.
    async fn one(&self, conn: &mut WireConn, kind: usize) -> Result<u64> {
        let answer = if self.queue_prepared(conn, kind)? {
            match conn.send().await {
                Ok(()) => conn.answer().await,
                Err(e) => Err(e),
            }
        } else {
            let sql = self.literal_sql(kind)?;
            conn.simple_query(&sql).await
        };
        Ok(rows_of(kind, answer.map_err(failed(kind))?))
    }

    async fn read_modify_write(&self, conn: &mut WireConn) -> Result<u64> {
        if !self.rmw_txn {
            let found = self.one(conn, READ).await?;
            let _ = self.one(conn, UPDATE).await?;
            return Ok(found);
        }
        let fail = |e| Error::wire("YCSB read-modify-write transaction failed", e);
        conn.simple_query("begin").await.map_err(fail)?;
        let done = async {
            let found = self.one(conn, READ).await?;
            self.one(conn, UPDATE).await?;
            Ok::<_, Error>(found)
        }
        .await;
        match done {
            Ok(found) => {
                conn.simple_query("commit").await.map_err(fail)?;
                Ok(found)
            }
            Err(e) => {
                // The error is the unit's; a failed rollback on a lost
                // connection adds nothing to it.
                if !conn.is_closed() {
                    let _ = conn.simple_query("rollback").await;
                }
                Err(e)
            }
        }
    }
}

/// How a failure of the YCSB statement `kind` is said.
fn failed(kind: usize) -> impl Fn(WireError) -> Error {
    move |e| Error::wire(format!("YCSB {} failed", TYPES[kind]), e)
}

/// The rows a statement of `kind` read or wrote.
fn rows_of(kind: usize, answer: Answer) -> u64 {
    match kind {
        READ | SCAN => answer.rows,
        _ => answer.affected,
    }
}

/// A unit of `kind` that read or wrote `rows`: a read, update or
/// read-modify-write that found no record is missing one; a scan past the
/// last key may rightly find none.
fn outcome(kind: usize, rows: u64) -> Outcome {
    Outcome {
        rows,
        missing: u64::from(rows == 0 && kind != SCAN),
    }
}

impl Operation for MixOp {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.st = None;
        if !self.prepared {
            return Ok(());
        }
        let mut st = Statements {
            read: None,
            update_one: Vec::new(),
            update_all: None,
            insert: None,
            scan: None,
        };
        // Only the statements of the types this mix draws: with -C they
        // are made again on every connection.
        for (kind, sql) in self.statement_sqls() {
            let s = conn
                .prepare(&sql)
                .await
                .map_err(|e| Error::wire(format!("cannot prepare '{sql}'"), e))?;
            match kind {
                READ => st.read = Some(s),
                UPDATE if self.write_all => st.update_all = Some(s),
                UPDATE => st.update_one.push(s),
                INSERT => st.insert = Some(s),
                _ => st.scan = Some(s),
            }
        }
        self.st = Some(st);
        Ok(())
    }
    fn stage(&mut self) -> bool {
        if let Some(n) = self.pending_ack.take() {
            self.acked.ack(n);
        }
        let u: f64 = self.rng.random();
        let slot = self
            .cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.cumulative.len() - 1);
        self.staged.slot = slot;
        let kind = self.active[slot];
        let n = if kind == INSERT {
            // The client's own count, from the common base; the record
            // number is interleaved with the other clients' (--clients).
            let local = self.next_insert.fetch_add(1, Ordering::Relaxed);
            let n = self.client.interleave(self.insert_base, local);
            self.pending_ack = Some(local);
            n
        } else if self.latest {
            self.keys.next_latest(
                &mut self.rng,
                self.client.spread(self.insert_base, self.acked.upto()),
            )
        } else {
            self.keys.next(&mut self.rng)
        };
        self.staged.number = n;
        self.staged.key = key_of(n);
        self.values.clear();
        match kind {
            INSERT => fill_alphanumeric(
                &mut self.rng,
                &mut self.values,
                self.fields * self.field_len,
            ),
            UPDATE | RMW if self.write_all => fill_alphanumeric(
                &mut self.rng,
                &mut self.values,
                self.fields * self.field_len,
            ),
            UPDATE | RMW => {
                self.staged.field = self.rng.random_range(0..self.fields);
                fill_alphanumeric(&mut self.rng, &mut self.values, self.field_len);
            }
            SCAN => self.staged.scan_len = self.rng.random_range(1..=MAX_SCAN),
            _ => {}
        }
        true
    }

    fn unit_type(&self) -> usize {
        self.staged.slot
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!("{} of {}", TYPES[self.kind()], self.staged.key))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let kind = self.kind();
        let rows = match kind {
            RMW => self.read_modify_write(conn).await?,
            _ => {
                let n = self.one(conn, kind).await?;
                if kind == INSERT
                    && let Some(k) = self.pending_ack.take()
                {
                    self.acked.ack(k);
                }
                n
            }
        };
        Ok(outcome(kind, rows))
    }

    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        let kind = self.kind();
        self.queue_prepared(conn, kind)?
            .then_some(())
            .ok_or_else(|| Error::run("--pipeline needs the statements prepared"))?;
        // A queued insert is acknowledged when its answer comes (or its
        // failure), not when the next unit is staged.
        let number = match (kind, self.pending_ack.take()) {
            (INSERT, Some(local)) => local,
            _ => self.staged.number,
        };
        Ok(Ticket(number << 3 | kind as u64))
    }

    fn answered(
        &mut self,
        ticket: Ticket,
        answer: std::result::Result<Answer, WireError>,
        _took: Duration,
    ) -> Result<Outcome> {
        let kind = (ticket.0 & 7) as usize;
        if kind == INSERT {
            self.acked.ack(ticket.0 >> 3);
        }
        Ok(outcome(kind, rows_of(kind, answer.map_err(failed(kind))?)))
    }

    fn queued_label(&self, ticket: Ticket) -> Option<String> {
        let kind = (ticket.0 & 7) as usize;
        let number = match kind {
            INSERT => self.client.interleave(self.insert_base, ticket.0 >> 3),
            _ => ticket.0 >> 3,
        };
        Some(format!("{} of {}", TYPES.get(kind)?, key_of(number)))
    }
}
