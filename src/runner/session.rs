//! A worker's connection, as the worker loop sees it.
//!
//! Normally a worker makes one connection to its host before the start
//! barrier and keeps it for the whole operation. With `--reconnect`
//! (pgbench -C) it makes a new connection before every unit instead, and
//! that connection's set-up (connect, the YugabyteDB session setting, the
//! operation's prepared statements) happens outside the unit's timing; the
//! connect itself is timed into [`crate::stats::conns::ConnStats`]. The
//! connection made before the barrier then only proves that connecting and
//! preparing work, and is not counted.
//!
//! After a lost connection the worker loop asks for a new one
//! ([`Session::reopen`]); with several hosts it goes to the next host in
//! the worker's rotation, so a worker moves off a node that went down.
//! Which host a connection goes to is [`ConnSource::pick`]'s business.
//!
//! The worker drives its connection's task itself instead of spawning it
//! ([`Session::drive`]): tokio-postgres reads and writes the socket in a
//! `Connection` future apart from the `Client` that sends the queries, and
//! spawned, that future is a second task with two wake-ups and two polls
//! by the scheduler for every query. Polled inside the worker's own await,
//! the socket's readiness wakes the worker directly. Between units nothing
//! polls the connection, which is fine: the server sends nothing unasked
//! but notices, which wait in the socket until the next query, and a
//! connection closed meanwhile shows as the next query's failure, as it
//! would anyway.
//!
//! For select and update the session may hold a lean connection instead
//! ([`crate::db::wire`], `--driver`): when the run allows it ([`Lean`]) and
//! the operation offers itself ([`Operation::wire`]), the session connects
//! with the lean driver, prepares the operation's statements itself and
//! runs each unit as one Bind+Execute+Sync ([`Session::execute`]). The
//! worker loop sees no difference: it asks the session to execute, to
//! reopen after a lost connection, and to close. A statement whose
//! parameter types the lean driver cannot encode puts the session back on
//! tokio-postgres (with `--driver auto`).

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::{CancelToken, Client};

use super::InFlight;
use super::recorder::StatsRef;
use super::settings::Lean;
use crate::db::endpoint::ConnTask;
use crate::db::nodes::{Canceller, Conn, ConnSource};
use crate::db::wire::{Answer, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::{Operation, Outcome, worker_seed};

/// A worker's connection: tokio-postgres's client, or a lean one.
enum Link {
    Tokio(Conn),
    Wire {
        conn: WireConn,
        /// What a failed unit of each prepared statement is called.
        failed: Vec<&'static str>,
    },
}

pub struct Session {
    conns: Arc<ConnSource>,
    worker: usize,
    reconnect: bool,
    /// SQL run on every new connection before the operation prepares
    /// (yb_disable_transactional_writes, statement_timeout).
    settings: Vec<String>,
    rng: SmallRng,
    /// Connections this worker made so far (for round-robin's rotation).
    made: u64,
    /// Whether this worker's connections are lean ones (for operations
    /// that offer it).
    lean: Lean,
    current: Option<(usize, Link)>,
    /// The current connection's task, polled by [`Session::drive`]; None
    /// once it ended (the connection is closed).
    task: RefCell<Option<ConnTask>>,
    /// The current connection's host and cancel token, for the coordinator
    /// to cancel a unit still running long after a stop.
    inflight: InFlight,
}

/// How long a worker's connection may take to say goodbye to the server.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

impl Session {
    pub fn new(
        conns: Arc<ConnSource>,
        worker: usize,
        reconnect: bool,
        settings: Vec<String>,
        seed: u64,
        inflight: InFlight,
        lean: Lean,
    ) -> Self {
        Session {
            conns,
            worker,
            reconnect,
            settings,
            rng: SmallRng::seed_from_u64(worker_seed(seed, worker, 5)),
            made: 0,
            lean,
            current: None,
            task: RefCell::new(None),
            inflight,
        }
    }

    /// Makes `client` the current connection, and its cancel token known.
    fn set_current(&mut self, host: usize, client: Client, task: ConnTask) {
        self.slot().conn = Some((host, Canceller::Tokio(client.cancel_token())));
        self.current = Some((host, Link::Tokio(Conn::Fresh(client))));
        *self.task.get_mut() = Some(task);
    }

    /// Makes `conn` the current connection, and its cancel key known.
    fn set_current_wire(&mut self, host: usize, conn: WireConn) {
        self.slot().conn = Some((host, Canceller::Wire(conn.cancel_key())));
        self.current = Some((
            host,
            Link::Wire {
                conn,
                failed: Vec::new(),
            },
        ));
        *self.task.get_mut() = None;
    }

    /// Whether `op`'s connections are to be lean ones.
    fn wants_lean<O: Operation>(&self, op: &mut O) -> bool {
        self.lean != Lean::Never && op.wire().is_some()
    }

    /// Whether the current connection is a lean one (for the report).
    pub fn is_lean(&self) -> bool {
        matches!(self.current, Some((_, Link::Wire { .. })))
    }

    /// A new connection to `host`, lean or not as `op` and the run want,
    /// made current; how long it took.
    async fn open<O: Operation>(&mut self, host: usize, op: &mut O) -> Result<Duration> {
        if self.wants_lean(op) {
            let (conn, took) = self.conns.wire(host).await?;
            self.set_current_wire(host, conn);
            Ok(took)
        } else {
            let (client, task, took) = self.conns.driven(host).await?;
            self.set_current(host, client, task);
            Ok(took)
        }
    }

    /// Drops the current connection; nothing is left to cancel.
    fn clear_current(&mut self) {
        self.slot().conn = None;
        self.current = None;
        *self.task.get_mut() = None;
    }

    /// Runs `f`, a future of the current connection's client, while
    /// driving the connection's task: both are polled at each wake-up of
    /// the worker, `f` first (so that a new request is written at once)
    /// and again after the task (so that an answer just read is taken at
    /// once). A connection that ends (closed, lost) is dropped, and `f`
    /// then fails as a query on a closed connection does.
    pub async fn drive<F: Future>(&self, f: F) -> F::Output {
        let mut f = pin!(f);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = f.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            let mut task = self.task.borrow_mut();
            if let Some(t) = task.as_mut()
                && t.as_mut().poll(cx).is_ready()
            {
                *task = None;
            }
            drop(task);
            f.as_mut().poll(cx)
        })
        .await
    }

    /// Ends the connection politely (the server is told, rather than
    /// finding the socket closed), within [`CLOSE_WAIT`].
    pub async fn close(mut self) {
        self.slot().conn = None;
        if let Some((_, Link::Wire { conn, .. })) = self.current.take() {
            let _ = tokio::time::timeout(CLOSE_WAIT, conn.close()).await;
        }
        if let Some(task) = self.task.get_mut().take() {
            let _ = tokio::time::timeout(CLOSE_WAIT, task).await;
        }
    }

    /// The host of the current connection (the first while there is none).
    fn host(&self) -> usize {
        self.current.as_ref().map_or(0, |(h, _)| *h)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, super::InFlightSlot> {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps the coordinator from cancelling what this connection runs
    /// from now on (a long unit counting what it committed).
    pub fn forget_in_flight(&self) {
        self.slot().conn = None;
    }

    /// Whether the coordinator cancelled this worker's unit after a stop.
    pub fn cancel_was_sent(&self) -> bool {
        self.slot().cancel_sent
    }

    /// Before the barrier: connects and prepares. A pooled connection is
    /// counted on its host here; a --reconnect probe is not counted.
    /// With several hosts, a host that cannot be reached is skipped (said
    /// once per host) and the next one in the worker's rotation is tried,
    /// so that a node down at the start does not end the run.
    pub(super) async fn start<O: Operation>(
        &mut self,
        op: &mut O,
        stats: StatsRef<'_>,
    ) -> Result<()> {
        let mut tries = 0;
        loop {
            tries += 1;
            let host = self.conns.pick(self.worker, self.made, &mut self.rng);
            match self.open(host, op).await {
                Ok(_) => {}
                Err(e) if tries < self.conns.len() => {
                    self.conns.warn_unreachable(host, &e);
                    self.made += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
            if !self.reconnect {
                self.made += 1;
                stats.common(|c| c.conns.opened(host, None));
            }
            return self.set_up(op).await;
        }
    }

    /// Whether each unit gets a new connection (--reconnect): then
    /// [`Self::reopen`] comes before each unit.
    pub fn reconnects_per_unit(&self) -> bool {
        self.reconnect
    }

    /// Drops the connection and opens another, on the next host of the
    /// worker's rotation: pooled, or made anew (and timed) with --reconnect.
    pub(super) async fn reopen<O: Operation>(
        &mut self,
        op: &mut O,
        stats: StatsRef<'_>,
    ) -> Result<()> {
        self.clear_current();
        let host = self.conns.pick(self.worker, self.made, &mut self.rng);
        self.made += 1;
        let took = self.open(host, op).await?;
        let took = self.reconnect.then_some(took);
        stats.common(|c| c.conns.opened(host, took));
        self.set_up(op).await
    }

    /// The tokio-postgres connection to run a unit on, if there is one
    /// (none while the connection is a lean one).
    pub fn client(&self) -> Option<&Client> {
        match &self.current {
            Some((_, Link::Tokio(c))) => Some(c),
            _ => None,
        }
    }

    /// Sends the staged unit of `op` and waits for its result: on the lean
    /// connection as one Bind+Execute+Sync, or through tokio-postgres.
    pub async fn execute<O: Operation>(&mut self, op: &mut O) -> Result<Outcome> {
        if let Some((_, Link::Wire { conn, failed })) = &mut self.current {
            let Some(unit) = op.wire() else {
                return Err(Error::run("the operation cannot run on the lean driver"));
            };
            let Some(steps) = unit.steps() else {
                let st = unit.statement();
                let context = failed.get(st).copied().unwrap_or("query failed");
                return match conn.execute(st, |i| unit.param(i)).await {
                    Ok(answer) => Ok(unit.outcome(answer)),
                    Err(e) => Err(Error::wire(context, e)),
                };
            };
            // A transaction: its statements one after another, each its own
            // round trip (as sysbench and the tokio-postgres path send
            // them); a failure rolls back what was begun.
            let mut last = Answer::default();
            for step in 0..steps {
                let st = unit.step_statement(step);
                let sent = Instant::now();
                match conn.execute(st, |i| unit.step_param(step, i)).await {
                    Ok(answer) => {
                        unit.step_done(step, answer, sent.elapsed());
                        last = answer;
                    }
                    Err(e) => {
                        unit.step_failed(step);
                        if unit.rolls_back() && !conn.is_closed() {
                            // The error is the unit's; a failed rollback
                            // adds nothing to it.
                            let _ = conn.simple_query("ROLLBACK").await;
                        }
                        let context = failed.get(st).copied().unwrap_or("query failed");
                        return Err(Error::wire(context, e));
                    }
                }
            }
            return Ok(unit.outcome(last));
        }
        let Some(client) = self.client() else {
            return Err(Error::run("no connection"));
        };
        self.drive(op.execute(client)).await
    }

    /// Cancels on the server what the current connection is running.
    pub async fn cancel(&self, token: &CancelToken) -> Result<()> {
        self.conns
            .cancel(self.host(), &Canceller::Tokio(token.clone()))
            .await
    }

    /// A new connection to the current host, outside the pool (whose
    /// places are all taken by the workers), bounded by the connect
    /// timeout: for a look at the table after the worker's own connection
    /// was lost.
    pub async fn spare(&self) -> Result<Conn> {
        Ok(self.conns.fresh(self.host()).await?.0)
    }

    /// Counts a unit that succeeded on the current host.
    pub(super) fn count_op(&self, stats: StatsRef<'_>) {
        if let Some((host, _)) = &self.current {
            let host = *host;
            stats.common(|c| c.conns.op_on(host));
        }
    }

    /// Whether the connection was closed under the worker.
    pub fn is_closed(&self) -> bool {
        self.current.as_ref().is_none_or(|(_, c)| match c {
            Link::Tokio(c) => c.is_closed(),
            Link::Wire { conn, .. } => conn.is_closed(),
        })
    }

    /// The per-connection set-up of the current connection: the session
    /// settings, then the operation's statements. On a lean connection a
    /// statement the lean driver cannot run puts this worker on
    /// tokio-postgres for good (with `--driver auto`).
    async fn set_up<O: Operation>(&mut self, op: &mut O) -> Result<()> {
        if let Some((host, Link::Wire { conn, failed })) = &mut self.current {
            let host = *host;
            match set_up_wire(conn, failed, &self.settings, op).await {
                Err(Error::Wire {
                    failure: source, ..
                }) if self.lean == Lean::Auto && unsupported(source.as_ref()).is_some() => {
                    let why = unsupported(source.as_ref()).unwrap_or_default();
                    crate::say!(
                        "warning: worker {}: the lean driver cannot run this statement ({why}); it goes on with tokio-postgres",
                        self.worker + 1
                    );
                    self.lean = Lean::Never;
                    self.clear_current();
                    let (client, task, _) = self.conns.driven(host).await?;
                    self.set_current(host, client, task);
                }
                other => return other,
            }
        }
        let Some(client) = self.client() else {
            return Err(Error::run("no connection"));
        };
        for sql in &self.settings {
            self.drive(client.batch_execute(sql))
                .await
                .map_err(|e| Error::db(format!("cannot run '{sql}'"), e))?;
        }
        self.drive(op.prepare(client)).await
    }
}

/// The per-connection set-up of a lean connection: the session settings,
/// then the operation's statements, named as tokio-postgres would name
/// their failures.
async fn set_up_wire<O: Operation>(
    conn: &mut WireConn,
    failed: &mut Vec<&'static str>,
    settings: &[String],
    op: &mut O,
) -> Result<()> {
    for sql in settings {
        conn.simple_query(sql)
            .await
            .map_err(|e| Error::wire(format!("cannot run '{sql}'"), e))?;
    }
    let Some(unit) = op.wire() else {
        return Err(Error::run("the operation cannot run on the lean driver"));
    };
    failed.clear();
    for st in unit.statements() {
        conn.prepare(&st.sql)
            .await
            .map_err(|e| Error::wire(&st.prepare_failed, e))?;
        failed.push(st.failed);
    }
    Ok(())
}

/// What the lean driver cannot encode, when that is the failure.
fn unsupported(e: &dyn crate::error::DriverFailure) -> Option<&str> {
    match (e as &dyn std::any::Any).downcast_ref::<WireError>() {
        Some(WireError::Unsupported(why)) => Some(why),
        _ => None,
    }
}
