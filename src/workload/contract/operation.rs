//! One worker's share of a workload, and the trait object the runner's
//! one worker loop drives it through.
//!
//! A unit runs on the one data-plane connection ([`WireConn`]): every
//! workload writes its unit once, against one API, whatever the protocol
//! (`-M`), TLS or pooling; [`Operation::committed_rows`], a look at the
//! table after a unit failed, too, on a connection of its own.
//!
//! With `--pipeline`, a workload whose units are single statements
//! ([`super::Facts::pipelines`]) lets the runner keep several in flight:
//! [`Operation::queue`] writes the staged unit into the connection's write
//! buffer (its values copied there, so that the next unit can be staged at
//! once) and returns a [`Ticket`], all the operation needs to count the
//! unit's answer ([`Operation::answered`]) or name it in an error
//! ([`Operation::queued_label`]) after others were staged.
//!
//! The runner drives a worker's operation through `Box<dyn DynOperation>`:
//! one allocation per executed unit for the boxed future buys a registry
//! without a closed enum. It is not free (callgrind puts malloc and free
//! at about 130 instructions and 11 instruction-cache misses of a
//! one-connection select's ~6.5k and ~360, issue 24), but a generic worker
//! loop per workload would have to be reached from the registry without
//! the runner naming the workloads.

use std::future::Future;
use std::time::{Duration, Instant};

use super::{BoxFuture, Outcome, StatementTimes};
use crate::db::wire::{Answer, WireConn, WireError};
use crate::error::{Error, Result};

/// A unit queued in a pipeline, as its operation tells it apart once it
/// has staged others: its key, its kind of statement, packed as the
/// operation likes. Plain data, so that keeping N of them costs nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ticket(pub u64);

/// What a workload that cannot pipeline answers to `queue` (the run plan
/// refuses `--pipeline` for it before this can happen).
fn no_pipeline() -> Error {
    Error::run("this workload's units cannot be pipelined")
}

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

/// One worker's share of a workload, on its own connection.
pub trait Operation: Send + 'static {
    /// Per-connection set-up, not timed: prepares statements.
    fn prepare(&mut self, conn: &mut WireConn) -> impl Future<Output = Result<()>> + Send;

    /// Makes the next unit ready, not timed. Returns false when this
    /// worker's share is done (loads); queries always have a next unit.
    fn stage(&mut self) -> bool;

    /// Sends the staged unit and waits for its result: the timed part.
    /// May be called again for the same unit to retry it.
    fn execute<'a>(
        &'a mut self,
        conn: &'a mut WireConn,
    ) -> impl Future<Output = Result<Outcome>> + Send + 'a;

    /// Which of the workload's types the staged unit is.
    fn unit_type(&self) -> usize {
        0
    }

    /// Which rows the staged unit holds, for error messages ("ids 0..200").
    fn unit_label(&self) -> Option<String> {
        None
    }

    /// For a workload whose units come from more emulated users than the
    /// run has connections (TPC-C's terminals): a future that waits until
    /// the next user's unit is due, takes that user for this worker, and
    /// gives when the unit was due. That is its intended start, from which
    /// its latency counts, so that a user's wait for a free connection
    /// (queueing) is in its latency and not in its service time. Called
    /// before [`Self::stage`], which stages the taken user's unit. What
    /// must happen before the wait (handing back the user of the last
    /// unit) happens in the call, not in the future, which the runner
    /// drops at the stop or the end of `--time`. None (the default): a
    /// unit is due when its worker is free, or when `--rate` says. The
    /// runner asks only a workload whose facts name its users
    /// ([`super::Facts::terminals`]).
    fn ready(&mut self) -> Option<BoxFuture<'_, Instant>> {
        None
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
    /// not). The operation records into them; when the runner counts a
    /// unit (done or failed) it moves what they hold into its thread's
    /// figures, and drops it for a unit it does not count (one the end of
    /// the run cut short) and during the warmup (see [`StatementTimes`]).
    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        None
    }

    /// Rows that a failed or cancelled unit left committed in the table,
    /// counted on `conn`, a connection of its own (the worker's may be
    /// lost). None for units that commit all or nothing.
    fn committed_rows(&mut self, _conn: &mut WireConn) -> impl Future<Output = Result<u64>> + Send {
        std::future::ready(Ok(0))
    }

    /// `--pipeline`: queues the staged unit on `conn` as one statement
    /// (its Bind and Execute, no Sync: the runner ends each group of
    /// units with one, see `--pipeline-sync`), without sending it, and
    /// says how to tell it apart. Only asked of workloads whose facts say
    /// `pipelines`.
    fn queue(&mut self, _conn: &mut WireConn) -> Result<Ticket> {
        Err(no_pipeline())
    }

    /// What the answer to a queued unit counts as; `took` is the time from
    /// its send to its answer, for the per-statement figures of an answer
    /// that succeeded (the runner keeps no time of a failed one). Asked
    /// once for each try of each queued unit; in a batch of several
    /// (`--pipeline-sync`) once the batch has ended, after its commit, and
    /// with [`WireError::BatchFailed`] for a unit another one's failure
    /// rolled back or kept from running.
    fn answered(
        &mut self,
        _ticket: Ticket,
        _answer: std::result::Result<Answer, WireError>,
        _took: Duration,
    ) -> Result<Outcome> {
        Err(no_pipeline())
    }

    /// Which rows a queued unit holds, for error messages, as
    /// [`Self::unit_label`] says it of the staged one.
    fn queued_label(&self, _ticket: Ticket) -> Option<String> {
        None
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
    fn ready_dyn(&mut self) -> Option<BoxFuture<'_, Instant>>;
    fn retryable_dyn(&self) -> bool;
    fn long_unit_dyn(&self) -> bool;
    fn committed_rows_dyn<'a>(&'a mut self, conn: &'a mut WireConn) -> BoxFuture<'a, Result<u64>>;
    fn statement_times_dyn(&mut self) -> Option<&mut StatementTimes>;
    fn queue_dyn(&mut self, conn: &mut WireConn) -> Result<Ticket>;
    fn answered_dyn(
        &mut self,
        ticket: Ticket,
        answer: std::result::Result<Answer, WireError>,
        took: Duration,
    ) -> Result<Outcome>;
    fn queued_label_dyn(&self, ticket: Ticket) -> Option<String>;
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
    fn ready_dyn(&mut self) -> Option<BoxFuture<'_, Instant>> {
        self.ready()
    }
    fn retryable_dyn(&self) -> bool {
        self.retryable()
    }
    fn long_unit_dyn(&self) -> bool {
        self.long_unit()
    }
    fn committed_rows_dyn<'a>(&'a mut self, conn: &'a mut WireConn) -> BoxFuture<'a, Result<u64>> {
        Box::pin(self.committed_rows(conn))
    }
    fn statement_times_dyn(&mut self) -> Option<&mut StatementTimes> {
        self.statement_times()
    }
    fn queue_dyn(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        self.queue(conn)
    }
    fn answered_dyn(
        &mut self,
        ticket: Ticket,
        answer: std::result::Result<Answer, WireError>,
        took: Duration,
    ) -> Result<Outcome> {
        self.answered(ticket, answer, took)
    }
    fn queued_label_dyn(&self, ticket: Ticket) -> Option<String> {
        self.queued_label(ticket)
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
    // The boxed future itself, not an `async` block awaiting it: one
    // state machine fewer between the worker loop and the unit, whose
    // state each unit reads on a line of its own (see the runner's `Worker`).
    fn execute<'a>(
        &'a mut self,
        conn: &'a mut WireConn,
    ) -> impl Future<Output = Result<Outcome>> + Send + 'a {
        self.0.execute_dyn(conn)
    }
    fn unit_type(&self) -> usize {
        self.0.unit_type_dyn()
    }
    fn unit_label(&self) -> Option<String> {
        self.0.unit_label_dyn()
    }
    fn ready(&mut self) -> Option<BoxFuture<'_, Instant>> {
        self.0.ready_dyn()
    }
    fn retryable(&self) -> bool {
        self.0.retryable_dyn()
    }
    fn long_unit(&self) -> bool {
        self.0.long_unit_dyn()
    }
    async fn committed_rows(&mut self, conn: &mut WireConn) -> Result<u64> {
        self.0.committed_rows_dyn(conn).await
    }
    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        self.0.statement_times_dyn()
    }
    fn queue(&mut self, conn: &mut WireConn) -> Result<Ticket> {
        self.0.queue_dyn(conn)
    }
    fn answered(
        &mut self,
        ticket: Ticket,
        answer: std::result::Result<Answer, WireError>,
        took: Duration,
    ) -> Result<Outcome> {
        self.0.answered_dyn(ticket, answer, took)
    }
    fn queued_label(&self, ticket: Ticket) -> Option<String> {
        self.0.queued_label_dyn(ticket)
    }
}
