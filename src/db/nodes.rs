//! Several nodes: which servers the workers' connections go to.
//!
//! A YugabyteDB cluster has a YSQL endpoint on every node, and a benchmark
//! that talks to one of them measures one node. A libpq host list
//! (`host=a,b,c port=p1,p2,p3`, or `-u` given several times) means
//! *failover* to libpq: try the hosts in order, use the first that
//! answers. That stays the meaning here (but a host that refuses the
//! login is passed over too, where libpq stops at any error but "starting
//! up") unless `--load-balance` is given, which gives every host its own
//! pool ([`ConnSource`]) and spreads the workers over them: round-robin (worker t on host t mod H, and with
//! `--reconnect` its n-th connection on host (t + n) mod H) or at random.
//! `--yb-discover` asks the cluster itself for its nodes ([`parse_yb_servers`]).
//!
//! Each worker keeps the connection it got for a whole operation (or takes
//! a new one per unit with `--reconnect`), so connections and units can be
//! counted per host: the summary shows whether the load really spread.
//!
//! Each host is an [`Endpoint`] ([`super::endpoint`]: its own password,
//! its own failover); the host list's parsing is [`super::conninfo`]'s.

use std::ops::Deref;
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio_postgres::{CancelToken, Client};

use super::connect::{connect_timeout, pool};
use super::endpoint::{ConnTask, Endpoint, cluster_node, connect_hosts};
use super::passfile::PassFile;
use super::tls::Tls;
use super::unnamed;
use super::wire::{CancelKey, WireConn, WireError};
use crate::error::{Error, Result};

/// How the workers' connections are spread over the hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Balance {
    /// libpq's meaning of a host list: every connection tries the hosts in
    /// order and uses the first that answers.
    #[default]
    Failover,
    /// Worker t on host t mod H (and its n-th new connection on (t+n) mod H).
    RoundRobin,
    /// Each connection on a host drawn at random.
    Random,
}

impl Balance {
    /// As `--load-balance` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Balance::Failover => "failover",
            Balance::RoundRobin => "round-robin",
            Balance::Random => "random",
        }
    }
}

/// One row of `yb_servers()`: the columns `--yb-discover` uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YbServer {
    pub host: String,
    pub port: i64,
    /// `primary` or `read_replica` (NULL on old versions: primary).
    pub node_type: Option<String>,
}

/// The query `--yb-discover` sends.
pub const YB_SERVERS_SQL: &str = "select host::text, port::int8, node_type::text from yb_servers()";

/// The hosts to balance over, from `yb_servers()`'s rows: primary nodes
/// only (read replicas refuse writes), each once, in a stable order so
/// that round-robin is reproducible.
pub fn parse_yb_servers(rows: &[YbServer]) -> Result<Vec<(String, u16)>> {
    let mut out: Vec<(String, u16)> = Vec::new();
    for r in rows {
        let primary = r
            .node_type
            .as_deref()
            .is_none_or(|t| t.eq_ignore_ascii_case("primary"));
        if !primary {
            continue;
        }
        let host = r.host.trim();
        if host.is_empty() {
            return Err(Error::run("yb_servers() returned a node without a host"));
        }
        let port = u16::try_from(r.port).map_err(|_| {
            Error::run(format!(
                "yb_servers() returned port {} for {host}, which is not a TCP port",
                r.port
            ))
        })?;
        if !out.iter().any(|(h, p)| h == host && *p == port) {
            out.push((host.to_string(), port));
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::run(
            "yb_servers() returned no primary node to balance over",
        ));
    }
    Ok(out)
}

/// Asks the cluster for its nodes and makes one endpoint per node, with
/// the settings of `given` (the connection given on the command line;
/// see [`cluster_node`] for its password).
pub async fn discover(
    client: &Client,
    given: &Endpoint,
    passfile: Option<&PassFile>,
) -> Result<Vec<Endpoint>> {
    let rows = unnamed::query(client, YB_SERVERS_SQL, &[])
        .await
        .map_err(|e| {
            Error::db(
                "--yb-discover: cannot list the nodes with yb_servers() (is this YugabyteDB?)",
                e,
            )
        })?;
    let servers: Vec<YbServer> = rows
        .iter()
        .map(|r| YbServer {
            host: r.get::<_, Option<String>>(0).unwrap_or_default(),
            port: r.get::<_, Option<i64>>(1).unwrap_or(0),
            node_type: r.get(2),
        })
        .collect();
    Ok(parse_yb_servers(&servers)?
        .into_iter()
        .map(|(host, port)| cluster_node(given, host, port, passfile))
        .collect())
}

/// A connection a worker uses: from a pool, or made for one unit.
pub enum Conn {
    Pooled(deadpool_postgres::Object),
    Fresh(Client),
}

impl Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        match self {
            Conn::Pooled(o) => o,
            Conn::Fresh(c) => c,
        }
    }
}

struct Node {
    endpoint: Endpoint,
    pool: Pool,
    /// Whether a worker already said this node could not be reached.
    warned: std::sync::atomic::AtomicBool,
}

/// Where workers get their connections: one pool per endpoint, and the
/// rule that says which endpoint a worker's connection comes from.
pub struct ConnSource {
    nodes: Vec<Node>,
    balance: Balance,
    tls: Tls,
}

impl ConnSource {
    /// Pools for `endpoints`, each large enough for every worker.
    pub fn new(
        endpoints: Vec<Endpoint>,
        balance: Balance,
        tls: Tls,
        workers: usize,
    ) -> Result<Self> {
        if endpoints.is_empty() {
            return Err(Error::run("no host to connect to"));
        }
        let nodes = endpoints
            .into_iter()
            .map(|endpoint| {
                let pool = pool(&endpoint, workers, &tls)?;
                Ok(Node {
                    endpoint,
                    pool,
                    warned: Default::default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ConnSource {
            nodes,
            balance,
            tls,
        })
    }

    /// The endpoints' labels, in index order.
    pub fn labels(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| n.endpoint.label.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Endpoint `i` (the last one for an index past the end).
    fn node(&self, i: usize) -> &Node {
        &self.nodes[i.min(self.nodes.len() - 1)]
    }

    /// Says on stderr, once per node, that a worker skipped it.
    pub fn warn_unreachable(&self, i: usize, e: &Error) {
        let node = self.node(i);
        if !node.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            crate::say!("warning: {e}; its workers go to the next host");
        }
    }

    /// Drops every idle pooled connection, so that the next ones are
    /// opened by (and on the thread of) whoever asks for them.
    pub fn drop_idle(&self) {
        for n in &self.nodes {
            n.pool.retain(|_, _| false);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The endpoint of worker `worker`'s `n`-th connection.
    pub fn pick(&self, worker: usize, n: u64, rng: &mut impl rand::Rng) -> usize {
        pick(self.balance, self.nodes.len(), worker, n, rng)
    }

    /// A pooled connection to endpoint `i`, kept until dropped.
    pub async fn pooled(&self, i: usize) -> Result<Conn> {
        let node = self.node(i);
        node.pool
            .get()
            .await
            .map(Conn::Pooled)
            .map_err(|e| match e {
                deadpool_postgres::PoolError::Backend(pg) => {
                    node.endpoint.connect_error(&node.endpoint.label, pg)
                }
                other => Error::run(format!(
                    "cannot connect to {}: {other}",
                    node.endpoint.label
                )),
            })
    }

    /// A new connection to endpoint `i`, closed when dropped, and how long
    /// it took to make it (TCP, TLS, authentication, session start). Its
    /// connection task runs on the caller's runtime.
    pub async fn fresh(&self, i: usize) -> Result<(Conn, Duration)> {
        let (client, task, took) = self.driven(i).await?;
        tokio::spawn(task);
        Ok((Conn::Fresh(client), took))
    }

    /// A new connection to endpoint `i` whose connection task the caller
    /// drives itself (see `runner::session`), and how long it took to make.
    pub async fn driven(&self, i: usize) -> Result<(Client, ConnTask, Duration)> {
        let node = self.node(i);
        // As the pools do: the whole handshake is bounded, not only the
        // TCP connect, so that a server that never answers cannot hold a
        // worker forever.
        let limit = connect_timeout(&node.endpoint.config);
        let t0 = Instant::now();
        let connect = connect_hosts(&node.endpoint.hosts, &self.tls);
        let made = tokio::time::timeout(limit, connect).await;
        let took = t0.elapsed();
        let label = &node.endpoint.label;
        match made {
            Ok(r) => {
                let (client, task) = r.map_err(|e| node.endpoint.connect_error(label, e))?;
                Ok((client, task, took))
            }
            Err(_) => Err(Error::run(format!(
                "cannot connect to {label}: no answer within {} s (--connect-timeout)",
                limit.as_secs_f64()
            ))),
        }
    }
}

/// How to cancel what a worker's connection runs: tokio-postgres's token,
/// or a lean connection's backend key and server.
#[derive(Clone)]
pub enum Canceller {
    Tokio(CancelToken),
    Wire(CancelKey),
}

impl ConnSource {
    /// Asks endpoint `i` to cancel what `token`'s connection is running,
    /// over the same TLS as the run's connections (see [`super::cancel`]);
    /// a lean connection's cancel goes to the server it is connected to.
    /// Bounded by the connect timeout (`--connect-timeout`); a cancel that
    /// cannot be delivered is reported, not waited for.
    pub async fn cancel(&self, i: usize, token: &Canceller) -> Result<()> {
        let node = self.node(i);
        let config = &node.endpoint.config;
        let limit = connect_timeout(config);
        match token {
            Canceller::Tokio(token) => super::cancel::cancel(config, &self.tls, token, limit).await,
            Canceller::Wire(key) => match tokio::time::timeout(limit, key.cancel()).await {
                Ok(r) => {
                    r.map_err(|e| Error::run(format!("cannot cancel the statement in flight: {e}")))
                }
                Err(_) => Err(Error::run(format!(
                    "cannot cancel the statement in flight: no answer within {} s",
                    limit.as_secs_f64()
                ))),
            },
        }
    }

    /// A new lean connection ([`super::wire`]) to endpoint `i`, and how
    /// long it took to make; bounded by the connect timeout as
    /// [`ConnSource::driven`] is.
    pub async fn wire(&self, i: usize) -> Result<(WireConn, Duration)> {
        let node = self.node(i);
        let limit = connect_timeout(&node.endpoint.config);
        let t0 = Instant::now();
        // Failover over the hosts, each with its own password, as
        // connect_hosts does for tokio-postgres.
        let connect = async {
            let mut last = None;
            for config in &node.endpoint.hosts {
                match WireConn::connect(config, &self.tls).await {
                    Ok(c) => return Ok(c),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| {
                WireError::Connect(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "no host to connect to",
                ))
            }))
        };
        let made = tokio::time::timeout(limit, connect).await;
        let took = t0.elapsed();
        let label = &node.endpoint.label;
        match made {
            Ok(r) => r
                .map(|c| (c, took))
                .map_err(|e| node.endpoint.wire_connect_error(label, e)),
            Err(_) => Err(Error::run(format!(
                "cannot connect to {label}: no answer within {} s (--connect-timeout)",
                limit.as_secs_f64()
            ))),
        }
    }
}

/// The balancing rule, apart from the pools so that it can be tested.
pub fn pick(
    balance: Balance,
    hosts: usize,
    worker: usize,
    n: u64,
    rng: &mut impl rand::Rng,
) -> usize {
    if hosts <= 1 {
        return 0;
    }
    match balance {
        Balance::Failover => 0,
        Balance::RoundRobin => ((worker as u64).wrapping_add(n) % hosts as u64) as usize,
        Balance::Random => rand::RngExt::random_range(rng, 0..hosts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::SmallRng {
        rand::rngs::SmallRng::seed_from_u64(7)
    }

    #[test]
    fn round_robin_spreads_workers_and_their_reconnections() {
        let mut r = rng();
        let first: Vec<usize> = (0..6)
            .map(|t| pick(Balance::RoundRobin, 3, t, 0, &mut r))
            .collect();
        assert_eq!(first, [0, 1, 2, 0, 1, 2]);
        let worker1: Vec<usize> = (0..4)
            .map(|n| pick(Balance::RoundRobin, 3, 1, n, &mut r))
            .collect();
        assert_eq!(worker1, [1, 2, 0, 1]);
        assert_eq!(pick(Balance::Failover, 3, 2, 5, &mut r), 0);
        assert_eq!(pick(Balance::RoundRobin, 1, 2, 5, &mut r), 0);
    }

    #[test]
    fn random_reaches_every_host() {
        let mut r = rng();
        let mut seen = [0u32; 3];
        for n in 0..300 {
            seen[pick(Balance::Random, 3, 0, n, &mut r)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
    }

    fn yb(host: &str, port: i64, t: Option<&str>) -> YbServer {
        YbServer {
            host: host.into(),
            port,
            node_type: t.map(String::from),
        }
    }

    #[test]
    fn yb_servers_rows_become_sorted_unique_primary_hosts() {
        let rows = [
            yb("10.0.0.3", 5433, Some("primary")),
            yb("10.0.0.1", 5433, Some("primary")),
            yb("10.0.0.9", 5433, Some("read_replica")),
            yb("10.0.0.1", 5433, Some("primary")),
            yb("10.0.0.2", 5433, None),
        ];
        assert_eq!(
            parse_yb_servers(&rows).unwrap(),
            vec![
                ("10.0.0.1".to_string(), 5433),
                ("10.0.0.2".to_string(), 5433),
                ("10.0.0.3".to_string(), 5433)
            ]
        );
    }

    #[test]
    fn bad_yb_servers_rows_are_refused_with_a_reason() {
        let e = parse_yb_servers(&[yb("h", 70000, None)]).unwrap_err();
        assert!(e.to_string().contains("70000"));
        let e = parse_yb_servers(&[yb("", 5433, None)]).unwrap_err();
        assert!(e.to_string().contains("without a host"));
        let e = parse_yb_servers(&[yb("r", 5433, Some("read_replica"))]).unwrap_err();
        assert!(e.to_string().contains("no primary"));
    }
}
