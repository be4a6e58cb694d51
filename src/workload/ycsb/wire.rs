//! A mix worker's units as the lean driver sends them (all but
//! read-modify-write).

use super::unit::{INSERT, MixOp, READ, SCAN, UPDATE};
use crate::db::wire::{Answer, Param};
use crate::workload::{Outcome, WireStatement, WireUnit};

impl WireUnit for MixOp {
    fn statements(&self) -> Vec<WireStatement> {
        self.statement_sqls()
            .into_iter()
            .map(|(kind, sql)| WireStatement {
                prepare_failed: format!("cannot prepare '{sql}'"),
                sql,
                failed: match kind {
                    READ => "YCSB read failed",
                    UPDATE => "YCSB update failed",
                    INSERT => "YCSB insert failed",
                    _ => "YCSB scan failed",
                },
            })
            .collect()
    }

    /// The index in [`MixOp::statement_sqls`] of the staged unit's.
    fn statement(&self) -> usize {
        let has = |t: usize| self.active.contains(&t);
        let reads = usize::from(has(READ));
        let updates = match (has(UPDATE), self.write_all) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => self.fields,
        };
        let inserts = usize::from(has(INSERT));
        match self.kind() {
            READ => 0,
            UPDATE if self.write_all => reads,
            UPDATE => reads + self.staged.field,
            INSERT => reads + updates,
            _ => reads + updates + inserts,
        }
    }

    /// $1 the key; then the values (update, insert) or the scan's length.
    fn param(&self, i: usize) -> Param<'_> {
        match (i, self.kind()) {
            (0, _) => Param::Text(&self.staged.key),
            (_, SCAN) => Param::Int(self.staged.scan_len),
            (i, _) => {
                let v = &self.values[(i - 1) * self.field_len..i * self.field_len];
                Param::Text(std::str::from_utf8(v).unwrap_or_default())
            }
        }
    }

    fn outcome(&mut self, answer: Answer) -> Outcome {
        let kind = self.kind();
        let rows = match kind {
            READ | SCAN => answer.rows,
            _ => answer.affected,
        };
        if kind == INSERT
            && let Some(k) = self.pending_ack.take()
        {
            self.acked.ack(k);
        }
        Outcome {
            rows,
            missing: u64::from(rows == 0 && kind != SCAN),
        }
    }
}
