//! A worker's connection, as the worker loop sees it.
//!
//! Normally a worker takes one pooled connection from its host before the
//! start barrier and keeps it for the whole operation. With `--reconnect`
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

use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::{CancelToken, Client};

use super::InFlight;
use super::recorder::StatsRef;
use crate::db::nodes::{Conn, ConnSource};
use crate::error::{Error, Result};
use crate::workload::{Operation, worker_seed};

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
    current: Option<(usize, Conn)>,
    /// The current connection's host and cancel token, for the coordinator
    /// to cancel a unit still running long after a stop.
    inflight: InFlight,
}

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
            inflight,
        }
    }

    /// Makes `conn` the current connection, and its cancel token known.
    fn set_current(&mut self, host: usize, conn: Conn) {
        self.slot().conn = Some((host, conn.cancel_token()));
        self.current = Some((host, conn));
    }

    /// Drops the current connection; nothing is left to cancel.
    fn clear_current(&mut self) {
        self.slot().conn = None;
        self.current = None;
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
            let conn = if self.reconnect {
                self.conns.fresh(host).await.map(|(c, _)| c)
            } else {
                self.conns.pooled(host).await
            };
            let conn = match conn {
                Ok(c) => c,
                Err(e) if tries < self.conns.len() => {
                    self.conns.warn_unreachable(host, &e);
                    self.made += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if !self.reconnect {
                self.made += 1;
                stats.common(|c| c.conns.opened(host, None));
            }
            self.set_up(op, &conn).await?;
            self.set_current(host, conn);
            return Ok(());
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
        // A broken pooled connection goes back to its pool, which discards it.
        self.clear_current();
        let host = self.conns.pick(self.worker, self.made, &mut self.rng);
        self.made += 1;
        let conn = if self.reconnect {
            let (conn, took) = self.conns.fresh(host).await?;
            stats.common(|c| c.conns.opened(host, Some(took)));
            conn
        } else {
            let conn = self.conns.pooled(host).await?;
            stats.common(|c| c.conns.opened(host, None));
            conn
        };
        self.set_up(op, &conn).await?;
        self.set_current(host, conn);
        Ok(())
    }

    /// The connection to run a unit on, if there is one.
    pub fn client(&self) -> Option<&Client> {
        self.current.as_ref().map(|(_, c)| &**c)
    }

    /// Cancels on the server what the current connection is running.
    pub async fn cancel(&self, token: &CancelToken) -> Result<()> {
        self.conns.cancel(self.host(), token).await
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
        self.current.as_ref().is_none_or(|(_, c)| c.is_closed())
    }

    async fn set_up<O: Operation>(&self, op: &mut O, client: &Client) -> Result<()> {
        for sql in &self.settings {
            client
                .batch_execute(sql)
                .await
                .map_err(|e| Error::db(format!("cannot run '{sql}'"), e))?;
        }
        op.prepare(client).await
    }
}
