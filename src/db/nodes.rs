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
//! An [`Endpoint`] holds one configuration per host, each with the
//! password for that host, and makes its failover itself
//! ([`connect_hosts`]) instead of leaving it to tokio-postgres: libpq
//! looks a password up in the password file per host and port, and
//! tokio-postgres's `Config` has one password for the whole list.

use std::net::IpAddr;
use std::ops::Deref;
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::{CancelToken, Client, Config, NoTls};

use super::connect::{connect_timeout, pool};
use super::passfile::{PassFile, host_key};
use super::tls::Tls;
use super::unnamed;
use super::wire::{CancelKey, WireConn, WireError};
use crate::error::{Error, NO_PASSWORD, Result, is_password_missing};

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

/// One place to connect to: one host, or a host list that libpq's
/// failover goes through in order.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// As shown in the summary: `host:port`, or the whole host list for a
    /// failover endpoint.
    pub label: String,
    /// The settings and the whole host list: what is shown, the timeouts.
    /// Connections are made with `hosts`, never with this one: for a host
    /// list it has no password from the password file, only one given
    /// for every host.
    pub config: Config,
    /// One configuration per host, in failover order, each with the
    /// password for that host.
    pub hosts: Vec<Config>,
    notes: PasswordNotes,
}

/// What a connection error adds about the password: where it came from
/// when the server refuses it, where it was looked for when missing.
#[derive(Clone, Debug, Default)]
struct PasswordNotes {
    refused: Option<String>,
    missing: Option<String>,
}

impl Endpoint {
    /// The whole configuration as one endpoint (failover over its hosts),
    /// each host with its password from `passfile` when the configuration
    /// has none.
    pub fn whole(config: &Config, passfile: Option<&PassFile>) -> Endpoint {
        let split = split_hosts(config, passfile);
        let labels: Vec<&str> = split.iter().map(|e| e.label.as_str()).collect();
        let label = if labels.len() > 1 {
            format!("{} (failover)", labels.join(","))
        } else {
            labels.join(",")
        };
        let hosts = split.iter().flat_map(|e| e.hosts.iter().cloned()).collect();
        Endpoint {
            label,
            config: config.clone(),
            hosts,
            notes: PasswordNotes::of(passfile, &split),
        }
    }

    /// The connection error of this endpoint: `target` is how the endpoint
    /// is named. A missing password says how to give one (and which file
    /// had none for which host); a password from the file that the server
    /// refuses says so.
    pub fn connect_error(&self, target: &str, e: tokio_postgres::Error) -> Error {
        if is_password_missing(&e) {
            return self.no_password(target);
        }
        match (&self.notes.refused, e.code()) {
            (Some(note), Some(&SqlState::INVALID_PASSWORD)) => {
                Error::db(format!("cannot connect to {target} ({note})"), e)
            }
            _ => Error::db(format!("cannot connect to {target}"), e),
        }
    }

    /// [`Endpoint::connect_error`] of the lean driver.
    pub fn wire_connect_error(&self, target: &str, e: WireError) -> Error {
        if matches!(e, WireError::NoPassword) {
            return self.no_password(target);
        }
        match (&self.notes.refused, e.code()) {
            (Some(note), Some(code)) if code == SqlState::INVALID_PASSWORD.code() => {
                Error::wire(format!("cannot connect to {target} ({note})"), e)
            }
            _ => Error::wire(format!("cannot connect to {target}"), e),
        }
    }

    fn no_password(&self, target: &str) -> Error {
        let note = self
            .notes
            .missing
            .as_ref()
            .map(|m| format!("; {m}"))
            .unwrap_or_default();
        Error::run(format!("cannot connect to {target}: {NO_PASSWORD}{note}"))
    }
}

impl PasswordNotes {
    /// The notes of endpoints `split` (one per host) made with `passfile`.
    fn of(passfile: Option<&PassFile>, split: &[Endpoint]) -> PasswordNotes {
        let Some(file) = passfile else {
            return PasswordNotes::default();
        };
        let refused = split
            .iter()
            .any(|e| e.notes.refused.is_some())
            .then(|| format!("password from password file \"{}\"", file.path().display()));
        let unmatched: Vec<&str> = split
            .iter()
            .filter(|e| e.notes.missing.is_some())
            .map(|e| e.label.as_str())
            .collect();
        let missing = (!unmatched.is_empty()).then(|| file.why_none(&unmatched.join(", ")));
        PasswordNotes { refused, missing }
    }
}

/// Connects to the first of `hosts` that lets us in, in order; the last
/// failure when none does. Unlike libpq, which goes past a host that
/// answers with an error only when it is starting up (57P03), any failure,
/// a refused login too, moves on to the next host.
pub async fn connect_hosts(
    hosts: &[Config],
    tls: &Tls,
) -> std::result::Result<(Client, ConnTask), tokio_postgres::Error> {
    let mut last = None;
    for config in hosts {
        match connect_one(config, tls).await {
            Ok(made) => return Ok(made),
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) => Err(e),
        // No host at all: tokio-postgres's own error says so.
        None => connect_one(&Config::new(), tls).await,
    }
}

async fn connect_one(
    config: &Config,
    tls: &Tls,
) -> std::result::Result<(Client, ConnTask), tokio_postgres::Error> {
    match tls {
        Tls::Plain => config
            .connect(NoTls)
            .await
            .map(|(c, conn)| (c, Box::pin(conn) as ConnTask)),
        Tls::Rustls(m) => config
            .connect(m.clone())
            .await
            .map(|(c, conn)| (c, Box::pin(conn) as ConnTask)),
    }
}

/// The pools' way to connect: an endpoint's hosts in failover order, each
/// with its own password (see [`connect_hosts`]).
pub struct FailoverConnect {
    pub hosts: Vec<Config>,
    pub tls: Tls,
}

impl deadpool_postgres::Connect for FailoverConnect {
    fn connect(
        &self,
        _whole: &Config,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = std::result::Result<
                        (Client, tokio::task::JoinHandle<()>),
                        tokio_postgres::Error,
                    >,
                > + Send
                + '_,
        >,
    > {
        Box::pin(async move {
            let (client, conn) = connect_hosts(&self.hosts, &self.tls).await?;
            // The connection's end shows to its client (is_closed, the
            // next query's error); nothing else waits for it.
            let task = tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok((client, task))
        })
    }
}

/// The port of host `i` by libpq's rule: one port for all hosts, or one
/// port per host; 5432 when none is given.
fn port_of(config: &Config, i: usize) -> u16 {
    let ports = config.get_ports();
    ports
        .get(i)
        .or_else(|| ports.first())
        .copied()
        .unwrap_or(5432)
}

/// Checks that a host list is well formed: one port, or one per host.
pub fn check_hosts(config: &Config, source: &str) -> Result<()> {
    let hosts = config.get_hosts().len().max(config.get_hostaddrs().len());
    let ports = config.get_ports().len();
    if ports > 1 && ports != hosts {
        return Err(Error::usage(format!(
            "{source} gives {hosts} hosts and {ports} ports: give one port for all hosts, or one port per host (host=a,b port=5433,5434)"
        )));
    }
    if !config.get_hostaddrs().is_empty()
        && !config.get_hosts().is_empty()
        && config.get_hosts().len() != config.get_hostaddrs().len()
    {
        return Err(Error::usage(format!(
            "{source} gives {} hosts and {} hostaddrs: give one hostaddr per host",
            config.get_hosts().len(),
            config.get_hostaddrs().len()
        )));
    }
    Ok(())
}

/// A copy of `base`'s settings (user, password, database, timeouts, TLS)
/// for one host only; without a password in `base`, the one `passfile`
/// has for this host, port, database and user. Also says whether the
/// password came from the file (`Some(true)`) or none was found there
/// (`Some(false)`).
fn for_one_host(
    base: &Config,
    host: Option<&Host>,
    hostaddr: Option<IpAddr>,
    port: u16,
    passfile: Option<&PassFile>,
) -> (Config, Option<bool>) {
    let mut c = settings_of(base);
    add_host(&mut c, host, hostaddr, port);
    let from_file = match passfile {
        Some(file) if base.get_password().is_none() => {
            let found = file.lookup(
                &host_key(host, hostaddr),
                port,
                base.get_dbname().unwrap_or_default(),
                base.get_user().unwrap_or_default(),
            );
            if let Some(pw) = found.filter(|p| !p.is_empty()) {
                c.password(pw);
                Some(true)
            } else {
                Some(false)
            }
        }
        _ => None,
    };
    (c, from_file)
}

/// The endpoint of one host.
fn one_host_endpoint(
    base: &Config,
    host: Option<&Host>,
    hostaddr: Option<IpAddr>,
    port: u16,
    passfile: Option<&PassFile>,
) -> Endpoint {
    let label = label_of(host, hostaddr, port);
    let (config, from_file) = for_one_host(base, host, hostaddr, port, passfile);
    let notes = match (passfile, from_file) {
        (Some(f), Some(true)) => PasswordNotes {
            refused: Some(format!(
                "password from password file \"{}\"",
                f.path().display()
            )),
            missing: None,
        },
        (Some(f), Some(false)) => PasswordNotes {
            refused: None,
            missing: Some(f.why_none(&label)),
        },
        _ => PasswordNotes::default(),
    };
    Endpoint {
        label,
        config: config.clone(),
        hosts: vec![config],
        notes,
    }
}

fn add_host(c: &mut Config, host: Option<&Host>, hostaddr: Option<IpAddr>, port: u16) {
    add_host_only(c, host, hostaddr);
    c.port(port);
}

/// [`add_host`] without a port.
fn add_host_only(c: &mut Config, host: Option<&Host>, hostaddr: Option<IpAddr>) {
    match host {
        Some(Host::Tcp(h)) => {
            c.host(h);
        }
        Some(Host::Unix(p)) => {
            c.host_path(p);
        }
        None => {}
    }
    if let Some(a) = hostaddr {
        c.hostaddr(a);
    }
}

fn label_of(host: Option<&Host>, hostaddr: Option<IpAddr>, port: u16) -> String {
    let name = match (host, hostaddr) {
        (Some(Host::Tcp(h)), _) => h.clone(),
        (Some(Host::Unix(p)), _) => p.display().to_string(),
        (None, Some(a)) => a.to_string(),
        (None, None) => "?".to_string(),
    };
    format!("{name}:{port}")
}

/// One endpoint per host of the configuration, each with the others'
/// settings and its own password (see [`Endpoint::whole`]).
pub fn split_hosts(config: &Config, passfile: Option<&PassFile>) -> Vec<Endpoint> {
    let n = config.get_hosts().len().max(config.get_hostaddrs().len());
    (0..n)
        .map(|i| {
            let host = config.get_hosts().get(i);
            let hostaddr = config.get_hostaddrs().get(i).copied();
            one_host_endpoint(config, host, hostaddr, port_of(config, i), passfile)
        })
        .collect()
}

/// `c` without its ports (tokio-postgres's Config cannot unset them).
pub fn without_ports(c: &Config) -> Config {
    let mut fresh = settings_of(c);
    let n = c.get_hosts().len().max(c.get_hostaddrs().len());
    for i in 0..n {
        let hostaddr = c.get_hostaddrs().get(i).copied();
        add_host_only(&mut fresh, c.get_hosts().get(i), hostaddr);
    }
    fresh
}

/// `c` without its password (tokio-postgres's Config cannot unset one).
pub fn without_password(c: &Config) -> Config {
    let mut fresh = settings_without_password(c);
    let n = c.get_hosts().len().max(c.get_hostaddrs().len());
    for i in 0..n {
        let hostaddr = c.get_hostaddrs().get(i).copied();
        add_host(&mut fresh, c.get_hosts().get(i), hostaddr, port_of(c, i));
    }
    fresh
}

/// Joins the configurations of repeated `-u` into one host list. They must
/// agree on everything but hosts and ports, so that one run means one
/// user on one database.
pub fn merge(configs: &[Config]) -> Result<Config> {
    let Some(first) = configs.first() else {
        return Err(Error::usage("no connection given"));
    };
    if configs.len() == 1 {
        return Ok(first.clone());
    }
    let same = |c: &Config| {
        c.get_user() == first.get_user()
            && c.get_dbname() == first.get_dbname()
            && c.get_password() == first.get_password()
    };
    if configs
        .iter()
        .any(|c| c.get_hosts().is_empty() && c.get_hostaddrs().is_empty())
    {
        return Err(Error::usage(
            "repeated -u: each one must name its host (host=...), since together they are the host list",
        ));
    }
    if !configs.iter().all(same) {
        return Err(Error::usage(
            "repeated -u must name the same user, password and database; only host and port may differ",
        ));
    }
    let with_addr = configs
        .iter()
        .filter(|c| !c.get_hostaddrs().is_empty())
        .count();
    if with_addr != 0 && with_addr != configs.len() {
        return Err(Error::usage(
            "repeated -u: give hostaddr in all of them or in none",
        ));
    }
    let mut merged = settings_of(first);
    for c in configs {
        let n = c.get_hosts().len().max(c.get_hostaddrs().len());
        for i in 0..n {
            let hostaddr = c.get_hostaddrs().get(i).copied();
            add_host(&mut merged, c.get_hosts().get(i), hostaddr, port_of(c, i));
        }
    }
    Ok(merged)
}

/// A configuration with `c`'s settings and no host or port yet
/// (tokio-postgres's Config cannot clear its host and port lists).
fn settings_of(c: &Config) -> Config {
    let mut fresh = settings_without_password(c);
    if let Some(p) = c.get_password() {
        fresh.password(p);
    }
    fresh
}

/// [`settings_of`] but the password.
fn settings_without_password(c: &Config) -> Config {
    let mut fresh = Config::new();
    if let Some(u) = c.get_user() {
        fresh.user(u);
    }
    if let Some(d) = c.get_dbname() {
        fresh.dbname(d);
    }
    if let Some(o) = c.get_options() {
        fresh.options(o);
    }
    if let Some(a) = c.get_application_name() {
        fresh.application_name(a);
    }
    fresh.ssl_mode(c.get_ssl_mode());
    fresh.ssl_negotiation(c.get_ssl_negotiation());
    if let Some(t) = c.get_connect_timeout() {
        fresh.connect_timeout(*t);
    }
    if let Some(t) = c.get_tcp_user_timeout() {
        fresh.tcp_user_timeout(*t);
    }
    fresh.keepalives(c.get_keepalives());
    fresh.keepalives_idle(c.get_keepalives_idle());
    if let Some(i) = c.get_keepalives_interval() {
        fresh.keepalives_interval(i);
    }
    if let Some(r) = c.get_keepalives_retries() {
        fresh.keepalives_retries(r);
    }
    fresh.target_session_attrs(c.get_target_session_attrs());
    fresh.channel_binding(c.get_channel_binding());
    fresh
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
/// the settings of `given` (the connection given on the command line).
/// Without a password given, a node's is the password file's line for it,
/// else the one the given hosts got from the file: the nodes of one
/// cluster share their roles.
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
    let base = &given.config;
    let cluster_password = given.hosts.iter().find_map(|c| c.get_password());
    Ok(parse_yb_servers(&servers)?
        .into_iter()
        .map(|(h, port)| {
            let host = Host::Tcp(h);
            let mut e = one_host_endpoint(base, Some(&host), None, port, passfile);
            if let (Some(c), Some(pw)) = (e.hosts.first_mut(), cluster_password)
                && c.get_password().is_none()
            {
                c.password(pw);
                e.config.password(pw);
                e.notes = given.notes.clone();
            }
            e
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

/// A connection's own task (tokio-postgres' `Connection`): it reads and
/// writes the socket for its [`Client`], and must be polled for any query
/// of that client to progress.
pub type ConnTask = std::pin::Pin<
    Box<dyn std::future::Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send>,
>;

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
                match WireConn::connect(config).await {
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
    use crate::db::connect::parse_url;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::SmallRng {
        rand::rngs::SmallRng::seed_from_u64(7)
    }

    #[test]
    fn a_host_list_splits_into_one_endpoint_per_host() {
        let c = parse_url(
            "host=a,b,c port=5433,5434,5435 user=yugabyte password=pw dbname=db connect_timeout=3",
            "--url",
        )
        .unwrap();
        let e = split_hosts(&c, None);
        let labels: Vec<&str> = e.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["a:5433", "b:5434", "c:5435"]);
        assert_eq!(e[1].config.get_hosts(), &[Host::Tcp("b".into())]);
        assert_eq!(e[1].config.get_ports(), &[5434]);
        assert_eq!(e[1].config.get_user(), Some("yugabyte"));
        assert_eq!(e[1].config.get_password(), Some(&b"pw"[..]));
        assert_eq!(e[1].config.get_dbname(), Some("db"));
        assert_eq!(
            e[1].config.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        let one_port = parse_url("host=a,b port=5433", "--url").unwrap();
        let ports: Vec<u16> = split_hosts(&one_port, None)
            .iter()
            .map(|e| e.config.get_ports()[0])
            .collect();
        assert_eq!(ports, [5433, 5433]);
    }

    /// libpq looks each host of a list up in the password file: each gets
    /// its own line's password, and none the others'.
    #[test]
    fn each_host_gets_its_own_password_from_the_file() {
        let file = PassFile::from_text("/home/u/.pgpass", "a:5433:*:u:pw-a\nb:5434:*:u:pw-b\n");
        let c = parse_url("host=a,b,c port=5433,5434,5435 user=u dbname=d", "--url").unwrap();
        let pw = |e: &Config| {
            e.get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
        };
        let split = split_hosts(&c, Some(&file));
        let got: Vec<Option<String>> = split.iter().map(|e| pw(&e.hosts[0])).collect();
        assert_eq!(got, [Some("pw-a".into()), Some("pw-b".into()), None]);
        let whole = Endpoint::whole(&c, Some(&file));
        assert_eq!(whole.label, "a:5433,b:5434,c:5435 (failover)");
        let got: Vec<Option<String>> = whole.hosts.iter().map(pw).collect();
        assert_eq!(got, [Some("pw-a".into()), Some("pw-b".into()), None]);
        assert_eq!(whole.hosts[2].get_ports(), &[5435]);
        assert!(
            whole.notes.missing.as_deref().unwrap().contains("c:5435"),
            "{:?}",
            whole.notes
        );
        // A password given serves every host; the file is not read.
        let given = parse_url(
            "host=a,b port=5433,5434 user=u password=pw dbname=d",
            "--url",
        )
        .unwrap();
        let whole = Endpoint::whole(&given, Some(&file));
        let got: Vec<Option<String>> = whole.hosts.iter().map(pw).collect();
        assert_eq!(got, [Some("pw".into()), Some("pw".into())]);
        assert!(whole.notes.refused.is_none() && whole.notes.missing.is_none());
    }

    #[test]
    fn repeated_urls_merge_into_one_host_list() {
        let a = parse_url("host=a port=5433 user=u dbname=d", "--url").unwrap();
        let b = parse_url("host=b,c port=5434 user=u dbname=d", "--url").unwrap();
        let m = merge(&[a.clone(), b]).unwrap();
        assert_eq!(m.get_hosts().len(), 3);
        assert_eq!(m.get_ports(), &[5433, 5434, 5434]);
        assert_eq!(m.get_user(), Some("u"));
        let other_user = parse_url("host=b user=v dbname=d", "--url").unwrap();
        let err = merge(&[a.clone(), other_user]).unwrap_err();
        assert!(err.to_string().contains("only host and port"));
        let no_host = parse_url("user=u dbname=d", "--url").unwrap();
        let err = merge(&[a, no_host]).unwrap_err();
        assert!(err.to_string().contains("name its host"));
    }

    #[test]
    fn ports_must_match_the_hosts() {
        let c = parse_url("host=a,b,c port=1,2", "--url").unwrap();
        assert!(
            check_hosts(&c, "--url")
                .unwrap_err()
                .to_string()
                .contains("3 hosts and 2 ports")
        );
        assert!(check_hosts(&parse_url("host=a,b port=1", "--url").unwrap(), "--url").is_ok());
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
