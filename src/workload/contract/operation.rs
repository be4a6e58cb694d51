//! One worker's share of a workload, and the trait object the runner's
//! one worker loop drives it through.
//!
//! A unit runs on the one data-plane connection ([`WireConn`]): every
//! workload writes its unit once, against one API, whatever the protocol
//! (`-M`), TLS or pooling. tokio-postgres's [`Client`] appears here only
//! for [`Operation::committed_rows`], a look at the table on a control
//! connection after a unit failed.
//!
//! The runner drives a worker's operation through `Box<dyn DynOperation>`:
//! one small allocation per executed unit for the boxed future, against
//! tens of microseconds for the round trip, buys a registry without a
//! closed enum.

use std::future::Future;

use tokio_postgres::Client;

use super::{BoxFuture, Outcome, StatementTimes};
use crate::db::wire::WireConn;
use crate::error::Result;

/// The worker of a workload whose work is all in its set-up or checks.
pub struct NoUnits;

impl Operation for NoUnits {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }
    fn stage(&mut self) -> bool {
        false
    }
    async fn execute(&mut self, _conn: &mut WireConn) -> Result<Outcome> {
        Ok(Outcome::default())
    }
}

/// Waits around a unit that are not work for the server: TPC-C's keying
/// time before a transaction and think time after it (clause 5.2.5). The
/// runner waits them outside the timed section, so they are in no
/// latency, and ends them at once on the stop or the end of `--time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pauses {
    pub before: std::time::Duration,
    pub after: std::time::Duration,
}

/// One worker's share of a workload, on its own connection.
pub trait Operation: Send + 'static {
    /// Per-connection set-up, not timed: prepares statements.
    fn prepare(&mut self, conn: &mut WireConn) -> impl Future<Output = Result<()>> + Send;

    /// Makes the next unit ready, not timed. Returns false when this
    /// worker's share is done (loads); queries always have a next unit.
    fn stage(&mut self) -> bool;

    /// Sends the staged unit and waits for its result: the timed part.
    /// May be called again for the same unit to retry it.
    fn execute(&mut self, conn: &mut WireConn) -> impl Future<Output = Result<Outcome>> + Send;

    /// Which of the workload's types the staged unit is.
    fn unit_type(&self) -> usize {
        0
    }

    /// Which rows the staged unit holds, for error messages ("ids 0..200").
    fn unit_label(&self) -> Option<String> {
        None
    }

    /// What the runner waits before and after the staged unit (none but
    /// for TPC-C's terminals with `--tpcc-wait`).
    fn pauses(&self) -> Pauses {
        Pauses::default()
    }

    /// Whether a failed unit may simply be sent again. False where a
    /// failure can leave part of the unit committed.
    fn retryable(&self) -> bool {
        true
    }

    /// Whether one unit may run for a long time (one CALL or one COPY of a
    /// whole share). Such a unit is cancelled on the server when the run is
    /// stopped or `--time` is up, instead of being waited for.
    fn long_unit(&self) -> bool {
        false
    }

    /// The times of the statements inside its units, for a workload that
    /// reports them per statement kind (transactions; None: it does
    /// not). The operation records into them; after every unit the
    /// runner moves what they hold into its thread's figures, or drops
    /// it during the warmup (see [`StatementTimes`]).
    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        None
    }

    /// Rows that a failed or cancelled unit left committed in the table.
    /// None for units that commit all or nothing.
    fn committed_rows(&mut self, _client: &Client) -> impl Future<Output = Result<u64>> + Send {
        std::future::ready(Ok(0))
    }
}

/// [`Operation`] as a trait object, so that the registry can hand any
/// workload's operations to the one worker loop. Every `Operation` is one.
pub trait DynOperation: Send + 'static {
    fn prepare_dyn<'a>(&'a mut self, conn: &'a mut WireConn) -> BoxFuture<'a, Result<()>>;
    fn stage_dyn(&mut self) -> bool;
    fn execute_dyn<'a>(&'a mut self, conn: &'a mut WireConn) -> BoxFuture<'a, Result<Outcome>>;
    fn unit_type_dyn(&self) -> usize;
    fn unit_label_dyn(&self) -> Option<String>;
    fn pauses_dyn(&self) -> Pauses;
    fn retryable_dyn(&self) -> bool;
    fn long_unit_dyn(&self) -> bool;
    fn committed_rows_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<u64>>;
    fn statement_times_dyn(&mut self) -> Option<&mut StatementTimes>;
}

impl<O: Operation> DynOperation for O {
    fn prepare_dyn<'a>(&'a mut self, conn: &'a mut WireConn) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.prepare(conn))
    }
    fn stage_dyn(&mut self) -> bool {
        self.stage()
    }
    fn execute_dyn<'a>(&'a mut self, conn: &'a mut WireConn) -> BoxFuture<'a, Result<Outcome>> {
        Box::pin(self.execute(conn))
    }
    fn unit_type_dyn(&self) -> usize {
        self.unit_type()
    }
    fn unit_label_dyn(&self) -> Option<String> {
        self.unit_label()
    }
    fn pauses_dyn(&self) -> Pauses {
        self.pauses()
    }
    fn retryable_dyn(&self) -> bool {
        self.retryable()
    }
    fn long_unit_dyn(&self) -> bool {
        self.long_unit()
    }
    fn committed_rows_dyn<'a>(&'a mut self, client: &'a Client) -> BoxFuture<'a, Result<u64>> {
        Box::pin(self.committed_rows(client))
    }
    fn statement_times_dyn(&mut self) -> Option<&mut StatementTimes> {
        self.statement_times()
    }
}

/// A worker's operation of any workload, as the runner drives it. A named
/// type rather than `Box<dyn DynOperation>` itself: the compiler's proof
/// that the worker loop's future is `Send` would otherwise stumble on the
/// trait object's lifetime (rust-lang/rust#64552).
pub struct AnyOperation(pub Box<dyn DynOperation>);

impl Operation for AnyOperation {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.0.prepare_dyn(conn).await
    }
    fn stage(&mut self) -> bool {
        self.0.stage_dyn()
    }
    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        self.0.execute_dyn(conn).await
    }
    fn unit_type(&self) -> usize {
        self.0.unit_type_dyn()
    }
    fn unit_label(&self) -> Option<String> {
        self.0.unit_label_dyn()
    }
    fn pauses(&self) -> Pauses {
        self.0.pauses_dyn()
    }
    fn retryable(&self) -> bool {
        self.0.retryable_dyn()
    }
    fn long_unit(&self) -> bool {
        self.0.long_unit_dyn()
    }
    async fn committed_rows(&mut self, client: &Client) -> Result<u64> {
        self.0.committed_rows_dyn(client).await
    }
    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        self.0.statement_times_dyn()
    }
}
