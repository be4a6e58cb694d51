//! Running operations: the whole life of each (its tables, set-up,
//! workers, checks and load mark), the single worker loop, and the
//! coordinator that starts the workers together and merges what they
//! measured. The app calls the steps in order and reports between them;
//! the runner names no workload (it knows them through the workload
//! contract) and imports neither the flags nor the reports.
//!
//! The files follow the ideas: [`tables`] checks and creates the run's
//! tables before its first operation; [`lifecycle`] is one operation's
//! life ([`run_operation`]); `result.rs` builds its result from what its
//! workers measured; [`barrier`] is where the clients of a run of several
//! meet (a trait: [`crate::cluster`] implements it); [`setup_race`] lets a
//! stop cancel a set-up query; `coordinator.rs`
//! starts the workers and ends them (grace, cancel, abandon);
//! `worker.rs` is the one unit loop every workload runs through, and
//! `pipeline.rs` how it sends units (alone, or several in flight with
//! `--pipeline`);
//! `recover.rs` retries units and replaces lost connections; `ending.rs`
//! says why units are being ended early and wakes waiting workers at a
//! stop; `recorder.rs` holds what the workers of one OS thread measure;
//! [`session`] holds a worker's connection; [`intervals`] turns the
//! threads' pieces into per-interval figures; [`schedule`] paces units
//! under `--rate`; [`threads`] puts the workers on per-core runtimes;
//! `slo_watch.rs` judges `--slo` on the intervals so far (progress lines,
//! `--slo-abort`).
//!
//! The workers of each per-core runtime share its statistics (per
//! transaction type), its scatter sample and its interval recorder, with
//! no lock, so that memory follows the cores and not the connections; the
//! coordinator merges the runtimes' statistics with `add`, and a collector
//! task turns interval pieces into figures (and progress lines) while the
//! operation runs. Most units take milliseconds,
//! so a stop or the end of `--time` simply waits for the unit in flight. A
//! procedure CALL or a server-side COPY is one statement per thread that
//! may run for minutes: for those ([`crate::workload::Operation::long_unit`])
//! the loop watches the stop flag and the deadline while the unit runs,
//! cancels it on the server when either comes, and counts what it had
//! committed.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use deadpool_postgres::Pool;

use crate::db::endpoint::Endpoint;
use crate::db::nodes::ConnSource;
use crate::db::server_watch::ServerWatch;
use crate::db::tls::Tls;

pub mod barrier;
mod coordinator;
mod ending;
pub mod intervals;
pub mod latency_log;
pub mod lifecycle;
mod pipeline;
pub mod progress;
mod recorder;
mod recover;
mod result;
pub mod schedule;
pub mod session;
pub mod settings;
pub mod setup_race;
mod slo_watch;
pub mod tables;
pub mod threads;
mod worker;

pub use barrier::StartBarrier;
pub use lifecycle::{mark_loaded, never_started, row_size, run_operation, warn_about_load_state};
pub use settings::{OnError, RunSettings};

use latency_log::LogSink;
use recover::backoff;

/// How long workers may take to finish their unit in flight once told to
/// stop; after that the statements still running are cancelled on the
/// server and the workers end with what they measured.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// What a worker's connection is running, for the coordinator to cancel
/// after a stop. Set by the worker's [`session::Session`] whenever its connection
/// changes (not per unit).
#[derive(Default)]
pub struct InFlightSlot {
    /// The host index and how to cancel on the connection; None while the
    /// worker has no connection, or must not be interrupted (a long unit
    /// counting what it committed).
    pub conn: Option<(usize, crate::db::nodes::Canceller)>,
    /// The coordinator sent a cancel: a 57014 that follows is its doing,
    /// not a statement timeout.
    pub cancel_sent: bool,
    /// The worker has ended: it is in no unit, though its output waits
    /// for the other workers of its thread.
    pub ended: bool,
}

/// A worker's [`InFlightSlot`], shared with the coordinator.
pub type InFlight = Arc<std::sync::Mutex<InFlightSlot>>;

/// A background task that ends with what holds it (the run's node
/// refresher, an operation's housekeeping): aborted when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the operations of a run share.
#[derive(Clone)]
pub struct RunCtx {
    pub settings: Arc<RunSettings>,
    /// The tool's own connections (set-up, counts): to the whole host
    /// list, libpq's failover.
    pub pool: Pool,
    /// What `pool` connects to: named in its errors, its timeouts.
    pub target: Arc<Endpoint>,
    /// The TLS of the run's connections: a stop's cancel of a set-up
    /// query on `pool` goes through it.
    pub tls: Tls,
    /// Set to make every worker stop after its current unit (an error in a
    /// load, or an interrupt).
    pub stop: Arc<AtomicBool>,
    /// Set (with `stop`) by Ctrl-C or SIGTERM.
    pub interrupted: Arc<AtomicBool>,
    pub latency_log: Option<LogSink>,
    /// Where the workers' connections come from (one pool per host when
    /// load balancing; see [`crate::db::nodes`]).
    pub conns: Arc<ConnSource>,
    /// The server's side of each operation, unless --no-server-stats
    /// (see [`crate::db::server_watch`]).
    pub server: Option<Arc<ServerWatch>>,
    /// `--clients`: where the clients meet around each operation's
    /// set-up and before its first unit, to start at one instant.
    pub barrier: Option<Arc<dyn StartBarrier>>,
    /// Why `--slo-abort` stopped the run, once it has.
    pub slo_stopped: Arc<std::sync::Mutex<Option<String>>>,
    /// `--find-max`: the step of the search this run of the operation is
    /// (1 for the first), which names its barrier steps apart from the
    /// other steps' (`prep:N.K`): a step runs the same operation again.
    pub search_step: Option<u32>,
    /// `--metrics-addr`: the board the live metrics are read from; the
    /// interval collector adds what the workers hand over to it.
    pub live: Option<crate::stats::live::Live>,
}

/// Attempts at counting what a long unit committed on a spare connection
/// after its own was lost, half a second apart, within [`COUNT_BUDGET`].
const COUNT_TRIES: u32 = 20;
const COUNT_BUDGET: Duration = Duration::from_secs(10);
