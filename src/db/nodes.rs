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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio_postgres::{CancelToken, Client};

use super::connect::{connect_timeout, pool};
use super::endpoint::{ConnTask, Endpoint, cluster_node, connect_hosts};
use super::passfile::PassFile;
use super::tls::Tls;
use super::topology::{Candidate, NodeType, Place, Topology};
use super::unnamed;
use super::wire::{CancelKey, WireConn, WireError};
use crate::error::{Error, Result};

/// How long a node whose connection failed is passed over, as the smart
/// drivers' failed_host_reconnect_delay_secs (`--failed-host-delay`).
pub const DEFAULT_FAILED_DELAY: Duration = Duration::from_secs(5);

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

/// One row of `yb_servers()`: the columns discovery uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YbServer {
    pub host: String,
    pub port: i64,
    /// `primary` or `read_replica` (NULL on old versions: primary).
    pub node_type: Option<String>,
    pub cloud: Option<String>,
    pub region: Option<String>,
    pub zone: Option<String>,
}

/// The query discovery sends: the columns of YugabyteDB's `yb_servers()`
/// that say where a node is (it also has num_connections, public_ip and
/// uuid, which are not used).
pub const YB_SERVERS_SQL: &str = "select host::text, port::int8, node_type::text, cloud::text, region::text, zone::text from yb_servers()";

/// A node of the cluster: its address and its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    pub host: String,
    pub port: u16,
    pub place: Place,
}

impl Discovered {
    /// `host:port`, as the node's endpoint is labelled.
    pub fn label(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The nodes in `yb_servers()`'s rows, each once, in a stable order (by
/// address) so that round-robin is reproducible. Every node type is
/// kept: which ones a connection may go to is the topology's business.
pub fn parse_yb_servers(rows: &[YbServer]) -> Result<Vec<Discovered>> {
    let mut out: Vec<Discovered> = Vec::new();
    for r in rows {
        let host = r.host.trim();
        if host.is_empty() {
            return Err(Error::run("yb_servers() returned a node without a host"));
        }
        let port = u16::try_from(r.port)
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| {
                Error::run(format!(
                    "yb_servers() returned port {} for {host}, which is not a TCP port",
                    r.port
                ))
            })?;
        let text = |v: &Option<String>| v.as_deref().unwrap_or("").trim().to_string();
        let place = Place {
            node_type: NodeType::parse(r.node_type.as_deref()),
            cloud: text(&r.cloud),
            region: text(&r.region),
            zone: text(&r.zone),
        };
        if !out.iter().any(|d| d.host == host && d.port == port) {
            out.push(Discovered {
                host: host.to_string(),
                port,
                place,
            });
        }
    }
    out.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
    if out.is_empty() {
        return Err(Error::run("yb_servers() returned no node"));
    }
    Ok(out)
}

/// Asks the cluster for its nodes. A server without `yb_servers()`
/// (PostgreSQL) is a usage error: the flags that need it cannot work.
pub async fn list_nodes(client: &Client) -> Result<Vec<Discovered>> {
    let rows = unnamed::query(client, YB_SERVERS_SQL, &[])
        .await
        .map_err(|e| {
            if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_FUNCTION) {
                Error::usage(
                    "this server has no yb_servers() (PostgreSQL, not YugabyteDB): --yb-discover, --topology-keys, --yb-refresh and --load-balance only-primary|only-rr|prefer-primary|prefer-rr need YugabyteDB; give the hosts with -u and --load-balance round-robin instead",
                )
            } else {
                Error::db("cannot list the nodes with yb_servers()", e)
            }
        })?;
    let servers: Vec<YbServer> = rows
        .iter()
        .map(|r| YbServer {
            host: r.get::<_, Option<String>>(0).unwrap_or_default(),
            port: r.get::<_, Option<i64>>(1).unwrap_or(0),
            node_type: r.get(2),
            cloud: r.get(3),
            region: r.get(4),
            zone: r.get(5),
        })
        .collect();
    parse_yb_servers(&servers)
}

/// Asks the cluster for its nodes and makes one endpoint per node, with
/// the settings of `given` (the connection given on the command line;
/// see [`cluster_node`] for its password), each with its place.
pub async fn discover(
    client: &Client,
    given: &Endpoint,
    passfile: Option<&PassFile>,
) -> Result<Vec<(Endpoint, Option<Place>)>> {
    Ok(list_nodes(client)
        .await?
        .into_iter()
        .map(|d| {
            let e = cluster_node(given, d.host, d.port, passfile);
            (e, Some(d.place))
        })
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
    /// Where the node is (discovered nodes only).
    place: Option<Place>,
    /// Whether a worker already said this node could not be reached.
    warned: AtomicBool,
    /// When a connection to it last failed: milliseconds since the
    /// source's epoch, plus one (0: never, or it answered again since).
    failed_at: AtomicU64,
    /// Whether the last `yb_servers()` listed it (always, without one).
    listed: AtomicBool,
}

/// How the source finds the cluster again (`--yb-refresh`): the
/// connection given on the command line, whose settings new nodes take.
pub struct Rediscover {
    pub given: Endpoint,
    pub passfile: Option<PassFile>,
}

/// Where workers get their connections: one pool per endpoint, and the
/// rule that says which endpoint a worker's connection comes from.
///
/// The list of nodes only grows: a node that `yb_servers()` no longer
/// lists keeps its index (the per-host counts are by index) and is no
/// longer chosen. A node whose connection failed is not chosen again
/// within the failed-host delay.
pub struct ConnSource {
    nodes: RwLock<Vec<Arc<Node>>>,
    balance: Balance,
    /// Which nodes may be chosen (node types, zones by priority).
    topology: Topology,
    /// How long a node that failed is passed over.
    failed_delay: Duration,
    tls: Tls,
    /// How large each new node's pool is.
    workers: usize,
    epoch: Instant,
    /// Bumped when the choice of nodes may have changed (a refresh that
    /// found a change, a failed node answering again), so that workers
    /// look whether their node is still one to be on.
    generation: AtomicU64,
}

impl ConnSource {
    /// Pools for `endpoints`, each large enough for every worker.
    pub fn new(
        endpoints: Vec<(Endpoint, Option<Place>)>,
        balance: Balance,
        tls: Tls,
        workers: usize,
    ) -> Result<Self> {
        if endpoints.is_empty() {
            return Err(Error::run("no host to connect to"));
        }
        let mut source = ConnSource {
            nodes: RwLock::new(Vec::new()),
            balance,
            topology: Topology::default(),
            failed_delay: DEFAULT_FAILED_DELAY,
            tls,
            workers,
            epoch: Instant::now(),
            generation: AtomicU64::new(0),
        };
        let nodes = endpoints
            .into_iter()
            .map(|(endpoint, place)| source.node_of(endpoint, place))
            .collect::<Result<Vec<_>>>()?;
        source.nodes = RwLock::new(nodes);
        Ok(source)
    }

    /// The source with `topology` choosing its nodes and a failed node
    /// passed over for `failed_delay`.
    pub fn with_topology(mut self, topology: Topology, failed_delay: Duration) -> Self {
        self.topology = topology;
        self.failed_delay = failed_delay;
        self
    }

    fn node_of(&self, endpoint: Endpoint, place: Option<Place>) -> Result<Arc<Node>> {
        let pool = pool(&endpoint, self.workers, &self.tls)?;
        Ok(Arc::new(Node {
            endpoint,
            pool,
            place,
            warned: Default::default(),
            failed_at: AtomicU64::new(0),
            listed: AtomicBool::new(true),
        }))
    }

    fn all(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Node>>> {
        self.nodes.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The endpoints' labels, in index order.
    pub fn labels(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|n| n.endpoint.label.clone())
            .collect()
    }

    /// The nodes' zones (`cloud.region.zone`) and node types, in index
    /// order; empty strings for a host that has no place.
    pub fn places(&self) -> Vec<(String, String)> {
        self.all()
            .iter()
            .map(|n| match &n.place {
                Some(p) => (p.zone_name(), p.node_type.name().to_string()),
                None => (String::new(), String::new()),
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.all().len()
    }

    /// Endpoint `i` (the last one for an index past the end).
    fn node(&self, i: usize) -> Arc<Node> {
        let all = self.all();
        all[i.min(all.len() - 1)].clone()
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether node `n` failed within the failed-host delay.
    fn failed_lately(&self, n: &Node) -> bool {
        let at = n.failed_at.load(Ordering::Relaxed);
        let delay = u64::try_from(self.failed_delay.as_millis()).unwrap_or(u64::MAX);
        at != 0 && self.now_ms() < (at - 1).saturating_add(delay)
    }

    /// Says on stderr, once per node, that a worker could not connect to
    /// it, and passes it over for the failed-host delay.
    pub fn warn_unreachable(&self, i: usize, e: &Error) {
        self.mark_failed(i);
        let node = self.node(i);
        if !node.warned.swap(true, Ordering::Relaxed) {
            crate::say!("warning: {e}; its workers go to the next host");
        }
    }

    /// Passes node `i` over for the failed-host delay.
    pub fn mark_failed(&self, i: usize) {
        self.node(i)
            .failed_at
            .store(self.now_ms() + 1, Ordering::Relaxed);
    }

    /// Drops every idle pooled connection, so that the next ones are
    /// opened by (and on the thread of) whoever asks for them.
    pub fn drop_idle(&self) {
        for n in self.all().iter() {
            n.pool.retain(|_, _| false);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.all().is_empty()
    }

    /// The nodes a new connection may go to now (see [`Topology::choose`]):
    /// listed and not failed lately; when every one of them failed lately,
    /// those that failed too (better to try again than to give up).
    fn chosen(&self) -> Vec<usize> {
        let all = self.all();
        let pick = |usable: &dyn Fn(&Node) -> bool| {
            let c: Vec<Candidate<'_>> = all
                .iter()
                .map(|n| Candidate {
                    place: n.place.as_ref(),
                    usable: usable(n),
                })
                .collect();
            self.topology.choose(&c)
        };
        let listed = |n: &Node| n.listed.load(Ordering::Relaxed);
        let chosen = pick(&|n| listed(n) && !self.failed_lately(n));
        if chosen.is_empty() {
            pick(&listed)
        } else {
            chosen
        }
    }

    /// The endpoint of worker `worker`'s `n`-th connection; an error when
    /// no node may be chosen (`--topology-keys-only` and none of its
    /// zones listed).
    pub fn pick(&self, worker: usize, n: u64, rng: &mut impl rand::Rng) -> Result<usize> {
        let chosen = self.chosen();
        if chosen.is_empty() {
            return Err(Error::run(format!(
                "no node of the cluster may take a connection ({}): yb_servers() lists none that qualifies",
                self.topology.describe()
            )));
        }
        Ok(chosen[pick(self.balance, chosen.len(), worker, n, rng)])
    }

    /// Whether connections spread over several hosts (not one endpoint's
    /// failover): then units are counted per host and interval.
    pub fn balanced(&self) -> bool {
        self.balance != Balance::Failover
    }

    /// A number that changes when the nodes to be on may have changed.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Whether a connection on node `i` should move: the node is no longer
    /// one a new connection may go to (a node of a more preferred zone
    /// answers again, or `yb_servers()` no longer lists it).
    pub fn should_leave(&self, i: usize) -> bool {
        let chosen = self.chosen();
        !chosen.is_empty() && !chosen.contains(&i)
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
    /// connection task runs on the caller's tokio runtime: never call it on
    /// a worker thread's loop (`crate::rt`), where it would panic.
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

impl ConnSource {
    /// One refresh (`--yb-refresh`): the nodes that failed more than the
    /// failed-host delay ago are tried again (one connection each), then
    /// `yb_servers()` is asked, on a node that answers, for the cluster's
    /// nodes now: new ones are added, those no longer listed left.
    /// Workers learn of a change through [`ConnSource::generation`].
    pub async fn refresh(&self, how: &Rediscover) -> Result<()> {
        let mut changed = false;
        let count = self.len();
        for i in 0..count {
            let node = self.node(i);
            let at = node.failed_at.load(Ordering::Relaxed);
            if at == 0 || self.failed_lately(&node) {
                continue;
            }
            match self.fresh(i).await {
                Ok(_) => {
                    node.failed_at.store(0, Ordering::Relaxed);
                    node.warned.store(false, Ordering::Relaxed);
                    changed = true;
                }
                Err(_) => node.failed_at.store(self.now_ms() + 1, Ordering::Relaxed),
            }
        }
        let listed = self.ask_cluster().await?;
        for d in listed.iter() {
            let label = d.label();
            let label_known = self.all().iter().position(|n| n.endpoint.label == label);
            match label_known {
                Some(i) => {
                    let node = self.node(i);
                    if !node.listed.swap(true, Ordering::Relaxed) {
                        changed = true;
                    }
                }
                None => {
                    let e = cluster_node(&how.given, d.host.clone(), d.port, how.passfile.as_ref());
                    crate::say!(
                        ">> yb_servers(): a new node {} ({}, {})",
                        e.label,
                        d.place.zone_name(),
                        d.place.node_type.name()
                    );
                    let node = self.node_of(e, Some(d.place.clone()))?;
                    self.nodes
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(node);
                    changed = true;
                }
            }
        }
        for n in self.all().iter() {
            let still = listed.iter().any(|d| d.label() == n.endpoint.label);
            if !still && n.listed.swap(false, Ordering::Relaxed) {
                crate::say!(">> yb_servers(): {} is no longer listed", n.endpoint.label);
                changed = true;
            }
        }
        if changed {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `yb_servers()` on the first node that answers: the chosen ones
    /// first, then the others.
    async fn ask_cluster(&self) -> Result<Vec<Discovered>> {
        let chosen = self.chosen();
        let rest: Vec<usize> = (0..self.len()).filter(|i| !chosen.contains(i)).collect();
        let order = chosen.into_iter().chain(rest);
        let mut last = Error::run("no node to ask");
        for i in order {
            match self.fresh(i).await {
                Ok((conn, _)) => return list_nodes(&conn).await,
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// Refreshes `source` every `every` until the task is dropped; a refresh
/// that fails is said once (until one succeeds again) and the run goes on
/// with the nodes it knows.
pub async fn keep_fresh(source: Arc<ConnSource>, every: Duration, how: Rediscover) {
    let mut said = false;
    loop {
        tokio::time::sleep(every).await;
        match source.refresh(&how).await {
            Ok(()) => said = false,
            Err(e) if !said => {
                crate::say!("warning: --yb-refresh: {e}; the run goes on with the nodes it knows");
                said = true;
            }
            Err(_) => {}
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
            Canceller::Wire(key) => match crate::rt::time::timeout(limit, key.cancel()).await {
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
        let made = crate::rt::time::timeout(limit, connect).await;
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
            cloud: Some("aws".into()),
            region: Some("r1".into()),
            zone: Some("z1".into()),
        }
    }

    #[test]
    fn yb_servers_rows_become_sorted_unique_nodes_with_their_places() {
        let rows = [
            yb("10.0.0.3", 5433, Some("primary")),
            yb("10.0.0.1", 5433, Some("primary")),
            yb("10.0.0.9", 5433, Some("read_replica")),
            yb("10.0.0.1", 5433, Some("primary")),
            YbServer {
                cloud: None,
                ..yb("10.0.0.2", 5433, None)
            },
        ];
        let got = parse_yb_servers(&rows).unwrap();
        let labels: Vec<String> = got.iter().map(Discovered::label).collect();
        assert_eq!(
            labels,
            [
                "10.0.0.1:5433",
                "10.0.0.2:5433",
                "10.0.0.3:5433",
                "10.0.0.9:5433"
            ]
        );
        assert_eq!(got[0].place.zone_name(), "aws.r1.z1");
        assert_eq!(got[1].place.zone_name(), ".r1.z1");
        assert_eq!(got[1].place.node_type, NodeType::Primary);
        assert_eq!(got[3].place.node_type, NodeType::ReadReplica);
    }

    #[test]
    fn bad_yb_servers_rows_are_refused_with_a_reason() {
        let e = parse_yb_servers(&[yb("h", 70000, None)]).unwrap_err();
        assert!(e.to_string().contains("70000"));
        let e = parse_yb_servers(&[yb("", 5433, None)]).unwrap_err();
        assert!(e.to_string().contains("without a host"));
        let e = parse_yb_servers(&[]).unwrap_err();
        assert!(e.to_string().contains("no node"));
    }
}
