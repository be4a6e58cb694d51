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
//! (`Session::reopen`); with several hosts it goes to the next host in
//! the worker's rotation, so a worker moves off a node that went down.
//! Which host a connection goes to is [`ConnSource::pick`]'s business;
//! when the nodes to be on change during the run (`--yb-refresh`), a
//! worker whose node is no longer one of them moves between two units
//! ([`Session::should_move`]).
//!
//! The connection is the one data-plane driver's ([`crate::db::wire`]):
//! one struct the worker owns and awaits directly, with no task of its
//! own and no channel, for every workload. tokio-postgres serves only the
//! control connections (set-up, checks, the server's statistics, a look
//! at the table after a lost connection: [`Session::spare`]).

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::InFlight;
use super::recorder::StatsRef;
use crate::db::nodes::{Canceller, ConnSource};
use crate::db::wire::WireConn;
use crate::error::{Error, Result};
use crate::workload::{Operation, Outcome, worker_seed};

/// A worker's connection to the servers: the current one, and how to make
/// the next.
///
/// In declaration order (`repr(C)`): what every unit reads first (the
/// count of connections made, the generation of the nodes last seen, the
/// per-unit reconnect flag, the source of connections and the current
/// connection; see `Phase`), then the rest.
#[repr(C)]
pub struct Session {
    /// Connections this worker made so far (for round-robin's rotation).
    made: u64,
    /// The source's generation when this worker last looked at where it
    /// should be ([`Session::should_move`]).
    seen: u64,
    reconnect: bool,
    conns: Arc<ConnSource>,
    /// The current connection and its host.
    current: Option<(usize, WireConn)>,
    worker: usize,
    /// SQL run on every new connection before the operation prepares
    /// (yb_disable_transactional_writes, statement_timeout).
    settings: Vec<String>,
    rng: SmallRng,
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
    ) -> Self {
        Session {
            conns,
            worker,
            reconnect,
            settings,
            rng: SmallRng::seed_from_u64(worker_seed(seed, worker, 5)),
            made: 0,
            current: None,
            seen: 0,
            inflight,
        }
    }

    /// Makes `conn` the current connection, and its cancel key known.
    fn set_current(&mut self, host: usize, conn: WireConn) {
        self.slot().conn = Some((host, Canceller::Wire(conn.cancel_key())));
        self.current = Some((host, conn));
    }

    /// A new connection to `host`, made current; how long it took.
    async fn open(&mut self, host: usize) -> Result<Duration> {
        let (conn, took) = self.conns.wire(host).await?;
        self.set_current(host, conn);
        Ok(took)
    }

    /// Drops the current connection; nothing is left to cancel.
    fn clear_current(&mut self) {
        self.slot().conn = None;
        self.current = None;
    }

    /// Ends the connection politely (the server is told, rather than
    /// finding the socket closed), within `CLOSE_WAIT`.
    pub async fn close(mut self) {
        self.slot().conn = None;
        if let Some((_, conn)) = self.current.take() {
            let _ = crate::rt::time::timeout(CLOSE_WAIT, conn.close()).await;
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
        let (host, _) = self.open_somewhere().await?;
        if !self.reconnect {
            self.made += 1;
            stats.common(|c| c.conns.opened(host, None));
        }
        self.set_up(op).await
    }

    /// A new connection, made current, on the node the source picks for
    /// this worker's next connection; a node that cannot be reached is
    /// passed over (said once per node, and not picked again within the
    /// failed-host delay) and the next pick tried, up to once per node.
    /// Returns the node and how long the connection took.
    async fn open_somewhere(&mut self) -> Result<(usize, Duration)> {
        self.seen = self.conns.generation();
        let mut tries = 0;
        loop {
            tries += 1;
            let host = self.conns.pick(self.worker, self.made, &mut self.rng)?;
            match self.open(host).await {
                Ok(took) => return Ok((host, took)),
                Err(e) if tries < self.conns.len() => {
                    self.conns.warn_unreachable(host, &e);
                    // The failed node is now passed over, so the rotation
                    // over the nodes left stays where it is: every worker
                    // lands where it would had it seen the failure before
                    // its first pick, and the workers spread evenly over
                    // the fallback (advancing here sent those that picked
                    // the failed node onto the same node as those that had
                    // not). Only when the failed node is still among the
                    // nodes to pick (all failed lately) does it move on.
                    if !self.conns.should_leave(host) {
                        self.made += 1;
                    }
                }
                Err(e) => {
                    self.conns.mark_failed(host);
                    return Err(e);
                }
            }
        }
    }

    /// Whether each unit gets a new connection (--reconnect): then
    /// `Self::reopen` comes before each unit.
    pub fn reconnects_per_unit(&self) -> bool {
        self.reconnect
    }

    /// Whether the current connection should move to another node: the
    /// nodes to be on changed (`--yb-refresh` found a node of a more
    /// preferred zone answering again, or a node no longer listed) and
    /// this one is no longer among them. Cheap when nothing changed.
    pub fn should_move(&mut self) -> bool {
        let g = self.conns.generation();
        if g == self.seen {
            return false;
        }
        self.seen = g;
        self.current
            .as_ref()
            .is_some_and(|(host, _)| self.conns.should_leave(*host))
    }

    /// Drops the connection and opens another, on the next host of the
    /// worker's rotation: pooled, or made anew (and timed) with --reconnect.
    pub(super) async fn reopen<O: Operation>(
        &mut self,
        op: &mut O,
        stats: StatsRef<'_>,
    ) -> Result<()> {
        self.clear_current();
        let (host, took) = self.open_somewhere().await?;
        self.made += 1;
        let took = self.reconnect.then_some(took);
        stats.common(|c| c.conns.opened(host, took));
        self.set_up(op).await
    }

    /// The current connection, for units in flight (`--pipeline`): the
    /// loop queues them, writes them and reads their answers itself.
    pub fn conn(&mut self) -> Result<&mut WireConn> {
        match &mut self.current {
            Some((_, conn)) => Ok(conn),
            None => Err(Error::run("no connection")),
        }
    }

    /// Which connection of this worker's is the current one (its count of
    /// connections made): a unit in flight on a connection that was since
    /// replaced is not sent again, and does not replace it again.
    pub fn number(&self) -> u64 {
        self.made
    }

    /// Sends the staged unit of `op` and waits for its result.
    pub async fn execute<O: Operation>(&mut self, op: &mut O) -> Result<Outcome> {
        match &mut self.current {
            Some((_, conn)) => op.execute(conn).await,
            None => Err(Error::run("no connection")),
        }
    }

    /// What it takes to cancel on the server what the current connection
    /// runs, apart from the session (which the unit holds meanwhile).
    pub fn canceller(&self) -> Option<(Arc<ConnSource>, usize, Canceller)> {
        let (host, conn) = self.current.as_ref()?;
        Some((
            self.conns.clone(),
            *host,
            Canceller::Wire(conn.cancel_key()),
        ))
    }

    /// A new lean connection to the current host, outside the pool (whose
    /// places are all taken by the workers), bounded by the connect
    /// timeout: for a look at the table after the worker's own connection
    /// was lost. Closed when dropped.
    pub async fn spare(&self) -> Result<WireConn> {
        Ok(self.conns.wire(self.host()).await?.0)
    }

    /// The host of the current connection, none while there is none: a
    /// unit that succeeded is counted on it.
    pub(super) fn current_host(&self) -> Option<usize> {
        self.current.as_ref().map(|(h, _)| *h)
    }

    /// The host of the current connection, when units are counted per
    /// host and interval (the run balances over several hosts).
    pub fn host_counted(&self) -> Option<usize> {
        let (host, _) = self.current.as_ref()?;
        self.conns.balanced().then_some(*host)
    }

    /// Whether the connection was closed under the worker.
    pub fn is_closed(&self) -> bool {
        self.current.as_ref().is_none_or(|(_, c)| c.is_closed())
    }

    /// The per-connection set-up of the current connection: the session
    /// settings, then the operation's statements.
    async fn set_up<O: Operation>(&mut self, op: &mut O) -> Result<()> {
        let Some((_, conn)) = &mut self.current else {
            return Err(Error::run("no connection"));
        };
        for sql in &self.settings {
            conn.simple_query(sql)
                .await
                .map_err(|e| Error::wire(format!("cannot run '{sql}'"), e))?;
        }
        op.prepare(conn).await
    }
}
