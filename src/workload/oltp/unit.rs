//! One worker of a script: the event it stages (a list of statements with
//! their ids) and how it sends it, a statement a round trip (as sysbench
//! sends them).

use std::time::{Duration, Instant};

use rand::RngExt;
use rand::rngs::SmallRng;

use super::schema::{C_GROUPS, PAD_GROUPS, digits_value, table};
use super::statements::{KINDS, Kind};
use crate::db::wire::{Answer, Param, Protocol, Sql, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyPicker;
use crate::workload::{Operation, Outcome, StatementTimes, Ticket};

/// One statement of a staged transaction.
pub(super) struct Step {
    pub(super) kind: Kind,
    pub(super) table: usize,
    pub(super) id: i32,
    /// The end of a range, or an insert's k.
    pub(super) other: i32,
    /// The new c of a non-index update or an insert.
    pub(super) c: String,
    pub(super) pad: String,
}

pub(super) struct OltpOp {
    /// Where each kind's times are in `stats` (as in KINDS).
    pub(super) stat_slots: [Option<usize>; KINDS.len()],
    pub(super) tables: usize,
    pub(super) rows: u64,
    pub(super) range: u64,
    pub(super) groups: Vec<(Kind, u32)>,
    pub(super) txn: bool,
    /// oltp-insert: the id comes from the table's sequence.
    pub(super) serial_insert: bool,
    pub(super) protocol: Protocol,
    pub(super) rng: SmallRng,
    pub(super) keys: KeyPicker,
    /// Prepared statements per table (index table-1) and kind (index in
    /// KINDS).
    pub(super) statements: Vec<Vec<Option<Sql>>>,
    /// The staged event.
    pub(super) steps: Vec<Step>,
    /// The step that failed last, for the failed unit's label.
    pub(super) failed_at: Option<usize>,
    pub(super) stats: StatementTimes,
}

impl OltpOp {
    fn id(&mut self) -> i32 {
        // Keys 1..rows, as sysbench's ids; rows fits an int (checked).
        (self.keys.next(&mut self.rng) + 1) as i32
    }

    pub(super) fn kind_index(k: Kind) -> usize {
        KINDS.iter().position(|x| *x == k).unwrap_or(0)
    }

    fn record(&mut self, kind: Kind, began: Instant) {
        self.record_took(kind, began.elapsed());
    }

    pub(super) fn record_took(&mut self, kind: Kind, took: Duration) {
        if let Some(i) = self.stat_slots[Self::kind_index(kind)] {
            self.stats.record(i, took);
        }
    }

    /// Runs one statement; returns the rows it read or wrote.
    async fn run(&mut self, conn: &mut WireConn, i: usize) -> Result<u64> {
        let kind = self.steps[i].kind;
        let began = Instant::now();
        let (st, params, n) = self.bound(i)?;
        let answer = st.execute(conn, &params[..n]).await.map_err(failed(kind))?;
        let n = rows_of(kind, answer);
        self.record(kind, began);
        Ok(n)
    }

    /// Step `i`'s statement and its parameters (the first `n` of the
    /// array).
    fn bound(&self, i: usize) -> Result<(&Sql, [Param<'_>; 4], usize)> {
        let step = &self.steps[i];
        let kind = step.kind;
        let st = self
            .statements
            .get(step.table - 1)
            .and_then(|t| t[Self::kind_index(kind)].as_ref())
            .ok_or_else(|| Error::run(format!("oltp {} was not prepared", kind.name())))?;
        let (id, other) = (Param::from(step.id), Param::from(step.other));
        let (c, pad) = (Param::Text(&step.c), Param::Text(&step.pad));
        let none = Param::Null;
        Ok(match kind {
            Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange => {
                (st, [id, other, none, none], 2)
            }
            Kind::NonIndexUpdate => (st, [id, c, none, none], 2),
            Kind::Insert if self.serial_insert => (st, [other, c, pad, none], 3),
            Kind::Insert => (st, [id, other, c, pad], 4),
            Kind::Begin | Kind::Commit => (st, [none; 4], 0),
            Kind::PointSelect | Kind::IndexUpdate | Kind::Delete => (st, [id, none, none, none], 1),
        })
    }

    fn step(&self, kind: Kind, table: usize, id: i32, other: i32) -> Step {
        Step {
            kind,
            table,
            id,
            other,
            c: String::new(),
            pad: String::new(),
        }
    }
}

impl Operation for OltpOp {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.statements.clear();
        for i in 1..=self.tables {
            let t = table(i).quoted();
            let mut per_kind = vec![None; KINDS.len()];
            for (k, slot) in KINDS.iter().zip(per_kind.iter_mut()) {
                let used = self
                    .stats
                    .names()
                    .iter()
                    .any(|s| s.name == k.name() && !matches!(k, Kind::Begin | Kind::Commit));
                if used {
                    let sql = k.sql(&t, self.serial_insert);
                    *slot = Some(
                        Sql::new(conn, sql.clone(), self.protocol)
                            .await
                            .map_err(|e| Error::wire(format!("cannot prepare '{sql}'"), e))?,
                    );
                }
            }
            if self.txn {
                for k in [Kind::Begin, Kind::Commit] {
                    per_kind[Self::kind_index(k)] = Some(
                        Sql::new(conn, k.sql("", false), self.protocol)
                            .await
                            .map_err(|e| Error::wire(format!("cannot prepare {}", k.name()), e))?,
                    );
                }
            }
            self.statements.push(per_kind);
        }
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.steps.clear();
        self.failed_at = None;
        if self.txn {
            let s = self.step(Kind::Begin, 1, 0, 0);
            self.steps.push(s);
        }
        let groups = self.groups.clone();
        for (kind, n) in groups {
            let t = self.rng.random_range(1..=self.tables);
            for _ in 0..n {
                let id = self.id();
                match kind {
                    Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange => {
                        let end = (id as u64 + self.range - 1).min(i32::MAX as u64) as i32;
                        let s = self.step(kind, t, id, end);
                        self.steps.push(s);
                    }
                    Kind::NonIndexUpdate => {
                        let mut s = self.step(kind, t, id, 0);
                        digits_value(&mut self.rng, C_GROUPS, &mut s.c);
                        self.steps.push(s);
                    }
                    Kind::Delete => {
                        self.steps.push(self.step(Kind::Delete, t, id, 0));
                        let k = self.id();
                        let mut s = self.step(Kind::Insert, t, id, k);
                        digits_value(&mut self.rng, C_GROUPS, &mut s.c);
                        digits_value(&mut self.rng, PAD_GROUPS, &mut s.pad);
                        self.steps.push(s);
                    }
                    Kind::Insert => {
                        let k = (self.rng.random_range(1..=self.rows)) as i32;
                        let mut s = self.step(Kind::Insert, t, 0, k);
                        digits_value(&mut self.rng, C_GROUPS, &mut s.c);
                        digits_value(&mut self.rng, PAD_GROUPS, &mut s.pad);
                        self.steps.push(s);
                    }
                    _ => {
                        let s = self.step(kind, t, id, 0);
                        self.steps.push(s);
                    }
                }
            }
        }
        if self.txn {
            let s = self.step(Kind::Commit, 1, 0, 0);
            self.steps.push(s);
        }
        true
    }

    fn unit_label(&self) -> Option<String> {
        let step = match self.failed_at {
            Some(i) => self.steps.get(i)?,
            None => self.steps.iter().find(|s| s.kind != Kind::Begin)?,
        };
        Some(format!("{} on sbtest{}", step.kind.name(), step.table))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let mut rows = 0;
        let mut missing = 0;
        for i in 0..self.steps.len() {
            match self.run(conn, i).await {
                Ok(n) => {
                    rows += n;
                    missing += u64::from(n == 0 && self.steps[i].kind == Kind::PointSelect);
                }
                Err(e) => {
                    self.failed_at = Some(i);
                    if self.txn {
                        // The error is the unit's; a failed rollback on a
                        // lost connection adds nothing to it.
                        if !conn.is_closed() {
                            let _ = conn.simple_query("ROLLBACK").await;
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(Outcome { rows, missing })
    }

    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        Some(&mut self.stats)
    }

    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        let [step] = &self.steps[..] else {
            return Err(Error::run("--pipeline needs events of one statement"));
        };
        let (st, params, n) = self.bound(0)?;
        st.queue(conn, &params[..n]).map_err(failed(step.kind))?;
        Ok(Ticket(
            (Self::kind_index(step.kind) as u64) << 32 | step.table as u64,
        ))
    }

    fn answered(
        &mut self,
        ticket: Ticket,
        answer: std::result::Result<Answer, WireError>,
        took: Duration,
    ) -> Result<Outcome> {
        let kind = KINDS[(ticket.0 >> 32) as usize % KINDS.len()];
        let rows = rows_of(kind, answer.map_err(failed(kind))?);
        self.record_took(kind, took);
        Ok(Outcome {
            rows,
            missing: u64::from(rows == 0 && kind == Kind::PointSelect),
        })
    }

    fn queued_label(&self, ticket: Ticket) -> Option<String> {
        let kind = KINDS.get((ticket.0 >> 32) as usize)?;
        Some(format!("{} on sbtest{}", kind.name(), ticket.0 as u32))
    }
}

/// How a failure of a statement of `kind` is said.
fn failed(kind: Kind) -> impl Fn(WireError) -> Error {
    move |e| Error::wire(format!("oltp {} failed", kind.name()), e)
}

/// The rows a statement of `kind` read or wrote.
fn rows_of(kind: Kind, answer: Answer) -> u64 {
    match kind {
        k if k.is_read() => answer.rows,
        Kind::Begin | Kind::Commit => 0,
        _ => answer.affected,
    }
}
