//! A script worker's events as the lean driver sends them, a statement a
//! round trip.

use std::time::Duration;

use super::schema::table;
use super::statements::Kind;
use super::unit::OltpOp;
use crate::db::wire::{Answer, Param};
use crate::workload::{Outcome, WireStatement, WireUnit};

impl WireUnit for OltpOp {
    fn statements(&self) -> Vec<WireStatement> {
        self.wire
            .iter()
            .map(|&(t, k)| {
                let sql = k.sql(&table(t).quoted(), self.serial_insert);
                WireStatement {
                    prepare_failed: match k {
                        Kind::Begin | Kind::Commit => format!("cannot prepare {}", k.name()),
                        _ => format!("cannot prepare '{sql}'"),
                    },
                    sql,
                    failed: k.failed_text(),
                }
            })
            .collect()
    }

    fn param(&self, i: usize) -> Param<'_> {
        self.step_param(0, i)
    }

    fn outcome(&mut self, _last: Answer) -> Outcome {
        self.done
    }

    fn steps(&self) -> Option<usize> {
        Some(self.steps.len())
    }

    fn step_statement(&self, step: usize) -> usize {
        let s = &self.steps[step];
        // Every staged kind was prepared (both come from the same groups).
        self.wire_slots
            .get(s.table - 1)
            .and_then(|t| t[Self::kind_index(s.kind)])
            .unwrap_or(0)
    }

    fn step_param(&self, step: usize, i: usize) -> Param<'_> {
        let s = &self.steps[step];
        let id = Param::Int(i64::from(s.id));
        let other = Param::Int(i64::from(s.other));
        match (s.kind, i) {
            (Kind::Insert, _) if self.serial_insert => {
                [other, Param::Text(&s.c), Param::Text(&s.pad)][i.min(2)]
            }
            (Kind::Insert, _) => [id, other, Param::Text(&s.c), Param::Text(&s.pad)][i.min(3)],
            (Kind::NonIndexUpdate, 1) => Param::Text(&s.c),
            (Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange, 1) => {
                other
            }
            _ => id,
        }
    }

    fn step_done(&mut self, step: usize, answer: Answer, took: Duration) {
        if step == 0 {
            // A new try of the unit: a retried one starts again.
            self.done = Outcome::default();
        }
        let kind = self.steps[step].kind;
        let n = match kind {
            k if k.is_read() => answer.rows,
            Kind::Begin | Kind::Commit => 0,
            _ => answer.affected,
        };
        self.done.rows += n;
        self.done.missing += u64::from(n == 0 && kind == Kind::PointSelect);
        self.record_took(kind, took);
    }

    fn step_failed(&mut self, step: usize) {
        self.failed_at = Some(step);
    }

    fn rolls_back(&self) -> bool {
        self.txn
    }
}
