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
use crate::db::wire::{Answer, Param, Protocol, Sql, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyPicker;
use crate::workload::kit::rowgen::fill_alphanumeric;
use crate::workload::{Operation, Outcome, Ticket};

pub(super) const READ: usize = 0;
pub(super) const UPDATE: usize = 1;
pub(super) const INSERT: usize = 2;
pub(super) const SCAN: usize = 3;
pub(super) const RMW: usize = 4;

/// The statements of a mix worker, of the types it draws.
pub(super) struct Statements {
    pub(super) read: Option<Sql>,
    /// One per field: `update … set fieldK = $2 where ycsb_key = $1`.
    pub(super) update_one: Vec<Sql>,
    pub(super) update_all: Option<Sql>,
    pub(super) insert: Option<Sql>,
    pub(super) scan: Option<Sql>,
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
    pub(super) protocol: Protocol,
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

    /// The statements this mix draws: read, the update(s), insert, scan.
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

    /// The statement of the staged unit's kind.
    fn statement(&self, pick: impl Fn(&Statements) -> Option<&Sql>) -> Result<&Sql> {
        self.st
            .as_ref()
            .and_then(pick)
            .ok_or_else(|| Error::run("a YCSB unit ran before its statement was prepared"))
    }

    /// The key and every field's value: the parameters of an insert or
    /// of an update of all fields.
    fn key_and_values(&self) -> Result<Vec<Param<'_>>> {
        let mut params: Vec<Param<'_>> = Vec::with_capacity(self.fields + 1);
        params.push(self.staged.key.as_str().into());
        for i in 0..self.fields {
            params.push(self.value(i)?.into());
        }
        Ok(params)
    }

    /// Queues the staged read, update, insert or scan (`--pipeline`); the
    /// runner adds the Sync.
    fn queue_unit(&self, conn: &mut WireConn, kind: usize) -> Result<()> {
        let key = self.staged.key.as_str();
        let queued = match kind {
            READ => self
                .statement(|st| st.read.as_ref())?
                .queue(conn, &[key.into()]),
            UPDATE if self.write_all => self
                .statement(|st| st.update_all.as_ref())?
                .queue(conn, &self.key_and_values()?),
            UPDATE => self
                .statement(|st| st.update_one.get(self.staged.field))?
                .queue(conn, &[key.into(), self.value(0)?.into()]),
            INSERT => self
                .statement(|st| st.insert.as_ref())?
                .queue(conn, &self.key_and_values()?),
            SCAN => self
                .statement(|st| st.scan.as_ref())?
                .queue(conn, &[key.into(), self.staged.scan_len.into()]),
            _ => return Err(Error::run("a read-modify-write cannot be pipelined")),
        };
        queued.map_err(failed(kind))?;
        Ok(())
    }

    async fn read(&self, conn: &mut WireConn) -> Result<u64> {
        let read = self.statement(|st| st.read.as_ref())?;
        Ok(read
            .execute(conn, &[self.staged.key.as_str().into()])
            .await
            .map_err(|e| Error::wire("YCSB read failed", e))?
            .rows)
    }

    async fn update(&self, conn: &mut WireConn) -> Result<u64> {
        let fail = |e| Error::wire("YCSB update failed", e);
        let key = self.staged.key.as_str();
        let answer = if self.write_all {
            let all = self.statement(|st| st.update_all.as_ref())?;
            all.execute(conn, &self.key_and_values()?).await
        } else {
            let one = self.statement(|st| st.update_one.get(self.staged.field))?;
            one.execute(conn, &[key.into(), self.value(0)?.into()])
                .await
        };
        Ok(answer.map_err(fail)?.affected)
    }

    async fn insert(&self, conn: &mut WireConn) -> Result<u64> {
        let insert = self.statement(|st| st.insert.as_ref())?;
        Ok(insert
            .execute(conn, &self.key_and_values()?)
            .await
            .map_err(|e| Error::wire("YCSB insert failed", e))?
            .affected)
    }

    async fn scan(&self, conn: &mut WireConn) -> Result<u64> {
        let scan = self.statement(|st| st.scan.as_ref())?;
        Ok(scan
            .execute(
                conn,
                &[self.staged.key.as_str().into(), self.staged.scan_len.into()],
            )
            .await
            .map_err(|e| Error::wire("YCSB scan failed", e))?
            .rows)
    }

    async fn read_modify_write(&self, conn: &mut WireConn) -> Result<u64> {
        if !self.rmw_txn {
            let found = self.read(conn).await?;
            let _ = self.update(conn).await?;
            return Ok(found);
        }
        let fail = |e| Error::wire("YCSB read-modify-write transaction failed", e);
        conn.simple_query("begin").await.map_err(fail)?;
        let done = async {
            let found = self.read(conn).await?;
            self.update(conn).await?;
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

impl Operation for MixOp {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.st = None;
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
            let s = Sql::new(conn, sql.clone(), self.protocol)
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
            READ => self.read(conn).await?,
            UPDATE => self.update(conn).await?,
            INSERT => {
                let n = self.insert(conn).await?;
                if let Some(k) = self.pending_ack.take() {
                    self.acked.ack(k);
                }
                n
            }
            SCAN => self.scan(conn).await?,
            _ => self.read_modify_write(conn).await?,
        };
        Ok(outcome(kind, rows))
    }

    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        let kind = self.kind();
        self.queue_unit(conn, kind)?;
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
        let answer = answer.map_err(failed(kind))?;
        let rows = match kind {
            READ | SCAN => answer.rows,
            _ => answer.affected,
        };
        Ok(outcome(kind, rows))
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

/// How a failure of the YCSB statement `kind` is said.
fn failed(kind: usize) -> impl Fn(WireError) -> Error {
    move |e| Error::wire(format!("YCSB {} failed", TYPES[kind]), e)
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
