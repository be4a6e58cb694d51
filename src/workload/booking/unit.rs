//! One worker of `booking`: a seat, a payment and the audit row in one
//! transaction, a statement a round trip, each with its own figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::RngExt;
use rand::rngs::SmallRng;

use crate::db::wire::{Param, Protocol, Sql, WireConn};
use crate::error::{Error, Result};
use crate::workload::kit::keys::KeyPicker;
use crate::workload::{Operation, Outcome, StatementTimes};

pub(super) struct Statements {
    pub(super) seat: Sql,
    pub(super) payment: Sql,
    pub(super) audit: Sql,
}

pub(super) struct BookingOp {
    pub(super) rng: SmallRng,
    pub(super) keys: KeyPicker,
    pub(super) day_range: u32,
    pub(super) begin: String,
    pub(super) next_user: Arc<AtomicI64>,
    pub(super) protocol: Protocol,
    pub(super) st: Option<Statements>,
    /// user id, flight, day offset, amount.
    pub(super) staged: (i64, i32, i32, f64),
    /// Per statement of the transaction, in the order of STEPS.
    pub(super) stats: StatementTimes,
}

const SEAT: &str =
    "insert into seat (user_id, schedule_id, day) values ($1, $2, date '2027-01-01' + $3::int)";
const PAYMENT: &str = "insert into payment (user_id, schedule_id, day, amount) \
                       values ($1, $2, date '2027-01-01' + $3::int, $4::float8::numeric(10,2))";
const AUDIT: &str = "insert into audit (schedule_id, day, seats_occupied) \
                     values ($1, date '2027-01-01' + $2::int, 1) on conflict (schedule_id, day) \
                     do update set seats_occupied = audit.seats_occupied + 1";

impl BookingOp {
    /// Runs statement `k` of a booking (BEGIN, the seat, the payment,
    /// the audit counter, COMMIT), timing it into its figures.
    async fn step(&mut self, conn: &mut WireConn, k: usize) -> Result<()> {
        let (user, flight, day, amount) = self.staged;
        let began = std::time::Instant::now();
        let fail = |e| Error::wire(format!("booking: {} failed", STEPS[k]), e);
        let (u, f, d) = (Param::from(user), Param::from(flight), Param::from(day));
        let _ = match (&self.st, k) {
            (_, 0) => conn.simple_query(&self.begin).await,
            (_, 4) => conn.simple_query("commit").await,
            (Some(st), 1) => st.seat.execute(conn, &[u, f, d]).await,
            (Some(st), 2) => st.payment.execute(conn, &[u, f, d, amount.into()]).await,
            (Some(st), _) => st.audit.execute(conn, &[f, d]).await,
            (None, _) => {
                return Err(Error::run(
                    "booking ran before its statements were prepared",
                ));
            }
        }
        .map_err(fail)?;
        self.stats.record(k, began.elapsed());
        Ok(())
    }
}

/// The statements of a booking, as its per-statement figures name them.
pub(super) const STEPS: [&str; 5] = ["begin", "seat", "payment", "audit", "commit"];

impl Operation for BookingOp {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.st = None;
        let fail = |e| Error::wire("cannot prepare the booking statements", e);
        let seat = Sql::new(conn, SEAT.into(), self.protocol)
            .await
            .map_err(fail)?;
        let payment = Sql::new(conn, PAYMENT.into(), self.protocol)
            .await
            .map_err(fail)?;
        let audit = Sql::new(conn, AUDIT.into(), self.protocol)
            .await
            .map_err(fail)?;
        self.st = Some(Statements {
            seat,
            payment,
            audit,
        });
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let user = self.next_user.fetch_add(1, Ordering::Relaxed);
        let flight = (self.keys.next(&mut self.rng) + 1) as i32;
        let day = self.rng.random_range(0..self.day_range) as i32;
        let amount = f64::from(self.rng.random_range(4_900u32..=99_900)) / 100.0;
        self.staged = (user, flight, day, amount);
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!(
            "user {} on flight {} day {}",
            self.staged.0, self.staged.1, self.staged.2
        ))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        for k in 0..STEPS.len() {
            if let Err(e) = self.step(conn, k).await {
                // The error is the unit's; a failed rollback on a lost
                // connection adds nothing to it.
                if !conn.is_closed() {
                    let _ = conn.simple_query("rollback").await;
                }
                return Err(e);
            }
        }
        Ok(Outcome {
            rows: 1,
            missing: 0,
        })
    }

    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        Some(&mut self.stats)
    }
}
