//! The server's side of each operation: snapshots of its statistics
//! before and after the workers, and a sampler of what the run's backends
//! wait on while they work.
//!
//! Why it is shaped so:
//!
//! - **Its own connections.** One per node, named after the workers'
//!   `application_name` with `-stats`, opened once per run and used only
//!   here: a sample never runs on a worker's connection and never waits
//!   for one. The sampler is a task of the main runtime, on a timer of its
//!   own; the workers run on their own threads (see
//!   [`crate::runner::threads`]).
//! - **A window the tool can account for.** A backend publishes its
//!   statistics when it goes idle, at most once a second, and otherwise
//!   only when it exits (PostgreSQL 15; before 15 a collector process
//!   receives them as often). So a snapshot taken while the run's
//!   backends live may miss their last second. The window therefore
//!   starts after the operation's set-up, once the tool's other
//!   connections are closed and their backends gone, and ends once the
//!   workers' connections are closed and their backends gone: every
//!   transaction of the workers is inside, the set-up outside. The
//!   watcher's own queries inside the window are counted one by one and
//!   reported, so reports take them out; where the server offers
//!   `pg_stat_force_next_flush()` (PostgreSQL 15) they fall exactly
//!   inside it.
//! - **Found by name.** Every connection of the run carries
//!   `application_name` = the name asked for and a run id (see
//!   [`super::server_stats::run_application_name`]); the sampler counts
//!   only backends of that name. Through a pooler the server's backends
//!   are the pooler's: they carry the name of the last client they served
//!   and outlive the run's connections, which the watcher notices (they
//!   do not end) and says, rather than reporting their idleness as the
//!   client's.
//! - **Never a failure.** What this role may read is probed once per run:
//!   what it may not gets one warning and is left out; a node that cannot
//!   be reached, a query that times out or a reset of the statistics
//!   becomes a note in the report, and the operation's own result is
//!   never touched.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio_postgres::{Client, Row};

use super::connect::connect_timeout;
use super::endpoint::{Endpoint, connect_hosts};
use super::nodes::ConnSource;
use super::server_stats::{self as sql, StatementsView};
use super::tls::Tls;
use crate::error::{Error, Result};
use crate::stats::IntervalFigures;
use crate::stats::server::{
    DbCounters, SamplerCost, ServerFigures, ServerInterval, StatementFigures, TableCounters,
    TableFigures, WaitCounts,
};

/// How long the watcher waits for the run's backends to end before a
/// snapshot; backends that outlive it (a pooler's, or a frozen server's)
/// are noted.
const WAIT_GONE: Duration = Duration::from_secs(3);
/// Backends whose number has not changed for this long, none of them
/// active, are not closing: a pooler keeps them.
const NOT_CLOSING: Duration = Duration::from_millis(600);
/// The longest any one statistics query may take.
const MAX_QUERY_TIME: Duration = Duration::from_secs(5);
/// Samples per interval; the sampler's period is the interval divided by
/// this, within [`MIN_PERIOD`] and [`MAX_PERIOD`].
const SAMPLES_PER_INTERVAL: u32 = 10;
const MIN_PERIOD: Duration = Duration::from_millis(50);
const MAX_PERIOD: Duration = Duration::from_secs(1);
/// Statements shown per operation.
const STATEMENTS_KEPT: usize = 10;

/// What this role may read, found once per run.
#[derive(Clone, Debug, Default)]
struct Caps {
    database: bool,
    tables: bool,
    activity: bool,
    statements: Option<StatementsView>,
    force_flush: bool,
    /// Said in every operation's notes (e.g. track_counts off).
    notes: Vec<String>,
}

/// One statistics connection and the transactions it made since
/// [`NodeConn::reset_own`].
struct NodeConn {
    client: Client,
    label: String,
    commits: i64,
    rollbacks: i64,
    /// A query timed out or the connection closed: not used again.
    broken: bool,
    /// The sample statement, once prepared on this connection.
    sample: Option<tokio_postgres::Statement>,
}

/// A node of the run, as the watcher sees it.
enum Node {
    /// Not connected (yet, or any more).
    Down,
    /// The same server as node `i` under another name: counted once.
    Alias(usize),
    Up(Box<NodeConn>),
}

impl NodeConn {
    /// Runs one statement (one transaction) within the time limit,
    /// counting it as the watcher's own.
    async fn query(&mut self, text: &str, limit: Duration) -> Result<Vec<Row>> {
        self.check()?;
        let r = tokio::time::timeout(limit, self.client.query_typed(text, &[])).await;
        self.count(r, limit)
    }

    /// The sample, as a statement prepared once per connection: planning
    /// the views costs the server several times what running them does.
    /// Preparing is one transaction and each run one more, both counted;
    /// the statement is kept for the connection's life, so that closing it
    /// never falls in a window. Not when `prepare` is false (the run's
    /// --no-prepared, as through a pooler in transaction mode, where a
    /// named statement is left on whichever server connection it was made
    /// on): then it is parsed and planned on every run.
    async fn sample(&mut self, text: &str, prepare: bool, limit: Duration) -> Result<Vec<Row>> {
        if !prepare {
            return self.query(text, limit).await;
        }
        self.check()?;
        if self.sample.is_none() {
            let r = tokio::time::timeout(limit, self.client.prepare(text)).await;
            self.sample = Some(self.count(r, limit)?);
        }
        let Some(stmt) = &self.sample else {
            return Err(Error::run("the sample statement is missing"));
        };
        let r = tokio::time::timeout(limit, self.client.query(stmt, &[])).await;
        self.count(r, limit)
    }

    fn check(&self) -> Result<()> {
        if self.broken {
            return Err(Error::run(format!(
                "the statistics connection to {} is not usable",
                self.label
            )));
        }
        Ok(())
    }

    /// Counts what one round trip cost the server: a commit, or a
    /// rollback for a statement that failed; a connection that timed out
    /// or closed is not used again.
    fn count<T>(
        &mut self,
        r: std::result::Result<
            std::result::Result<T, tokio_postgres::Error>,
            tokio::time::error::Elapsed,
        >,
        limit: Duration,
    ) -> Result<T> {
        match r {
            Ok(Ok(v)) => {
                self.commits += 1;
                Ok(v)
            }
            Ok(Err(e)) => {
                self.broken |= e.is_closed();
                self.rollbacks += 1;
                Err(Error::db(format!("server statistics on {}", self.label), e))
            }
            Err(_) => {
                self.broken = true;
                Err(Error::run(format!(
                    "server statistics on {}: no answer within {} s",
                    self.label,
                    limit.as_secs_f64()
                )))
            }
        }
    }

    fn reset_own(&mut self) {
        self.commits = 0;
        self.rollbacks = 0;
    }
}

/// The watcher of one run: its capabilities, its connections, and what
/// the sampler saw since the last progress line.
pub struct ServerWatch {
    /// application_name of the workers.
    app: String,
    stats_app: String,
    endpoints: Vec<Endpoint>,
    tls: Tls,
    caps: Caps,
    period: Duration,
    limit: Duration,
    /// Whether the sample may be a prepared (named) statement.
    prepared: bool,
    nodes: tokio::sync::Mutex<Vec<Node>>,
    /// Waits sampled since the last progress line.
    live: Mutex<WaitCounts>,
    /// Waits sampled over the whole run (the live metrics' counters).
    total: Mutex<WaitCounts>,
}

impl ServerWatch {
    /// Probes on `client` (the run's set-up connection, before anything
    /// is measured) what this role may read. Says once what it may not;
    /// None when it may read nothing at all. `prepared` false (the run's
    /// --no-prepared) keeps every statement of the watcher unnamed.
    pub async fn start(
        client: &Client,
        endpoints: Vec<Endpoint>,
        tls: Tls,
        app: String,
        interval: Duration,
        prepared: bool,
    ) -> Option<Arc<ServerWatch>> {
        let limit = endpoints
            .first()
            .map_or(MAX_QUERY_TIME, |e| connect_timeout(&e.config))
            .min(MAX_QUERY_TIME);
        let (caps, refused) = probe(client, &app, limit).await;
        if !refused.is_empty() {
            crate::say!(
                "warning: server statistics: this role cannot read {}; the summary leaves them out (grant it pg_read_all_stats, or turn this off with --no-server-stats)",
                refused.join("; ")
            );
        }
        if !caps.database && !caps.tables && !caps.activity && caps.statements.is_none() {
            return None;
        }
        let period = (interval / SAMPLES_PER_INTERVAL).clamp(MIN_PERIOD, MAX_PERIOD);
        let nodes = endpoints.iter().map(|_| Node::Down).collect();
        Some(Arc::new(ServerWatch {
            stats_app: sql::stats_application_name(&app),
            app,
            endpoints,
            tls,
            caps,
            period,
            limit,
            prepared,
            nodes: tokio::sync::Mutex::new(nodes),
            live: Mutex::new(WaitCounts::default()),
            total: Mutex::new(WaitCounts::default()),
        }))
    }

    /// The application_name the sampler looks for.
    pub fn application_name(&self) -> &str {
        &self.app
    }

    /// The top wait of the run's backends since the last call, for a
    /// progress line: `, server: 61% CPU`, or nothing before a sample.
    pub fn progress_note(&self) -> String {
        let counts = std::mem::take(&mut *self.live.lock().unwrap_or_else(|p| p.into_inner()));
        match counts.shares().first() {
            Some((ev, share)) => format!(", server: {:.0}% {ev}", share * 100.0),
            None => String::new(),
        }
    }

    /// The waits sampled over the run so far, every operation's, for the
    /// live metrics: counts that only grow.
    pub fn waits_so_far(&self) -> WaitCounts {
        self.total.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Before the workers: closes the tool's idle connections, waits for
    /// their backends to end, snapshots every node and starts the sampler.
    pub async fn begin(
        self: &Arc<Self>,
        pool: &Pool,
        conns: &ConnSource,
        tables: &[String],
    ) -> OpWatch {
        pool.retain(|_, _| false);
        conns.drop_idle();
        let mut nodes = std::mem::take(&mut *self.nodes.lock().await);
        let mut notes = self.caps.notes.clone();
        self.connect(&mut nodes, &mut notes).await;
        let starts = futures_util::future::join_all(nodes.iter_mut().map(|n| async {
            match n {
                Node::Up(c) => Some(self.snapshot(c, tables, true).await),
                _ => None,
            }
        }))
        .await;
        let base: Vec<Option<(i64, i64)>> = starts
            .iter()
            .map(|s| {
                s.as_ref()
                    .and_then(|s| s.db)
                    .map(|d| (d.xact_commit, d.xact_rollback))
            })
            .collect();
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = WaitCounts::default();
        let sampler = if self.caps.activity || self.caps.database {
            let (stop, stopped) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(sample_loop(self.clone(), nodes, stopped));
            Sampling::Running { stop, task }
        } else {
            Sampling::Off(nodes)
        };
        OpWatch {
            watch: self.clone(),
            tables: tables.to_vec(),
            starts,
            base,
            sampler,
            notes,
        }
    }

    /// Connects the nodes that have no statistics connection, and tells
    /// apart the endpoints that are one server under two names.
    async fn connect(&self, nodes: &mut [Node], notes: &mut Vec<String>) {
        let mut prints: Vec<Option<String>> = vec![None; nodes.len()];
        for (i, node) in nodes.iter_mut().enumerate() {
            if let Node::Up(c) = node
                && (c.broken || c.client.is_closed())
            {
                *node = Node::Down;
            }
            if !matches!(node, Node::Down) {
                continue;
            }
            let endpoint = &self.endpoints[i];
            let client = match open(endpoint, &self.tls, &self.stats_app).await {
                Ok(c) => c,
                Err(e) => {
                    notes.push(format!("{} not counted: {e}", endpoint.label));
                    continue;
                }
            };
            *node = Node::Up(Box::new(NodeConn {
                client,
                label: endpoint.label.clone(),
                commits: 0,
                rollbacks: 0,
                broken: false,
                sample: None,
            }));
        }
        for (i, node) in nodes.iter_mut().enumerate() {
            if let Node::Up(c) = node {
                prints[i] = c
                    .query(sql::FINGERPRINT_SQL, self.limit)
                    .await
                    .ok()
                    .and_then(|rows| rows.first().and_then(|r| r.try_get(0).ok()));
            }
        }
        for i in 0..nodes.len() {
            let same = (0..i).find(|&j| prints[j].is_some() && prints[j] == prints[i]);
            if let Some(j) = same {
                nodes[i] = Node::Alias(j);
            }
        }
    }

    /// Waits for the run's other backends to end, then reads the node's
    /// counters; `start` resets the count of the watcher's own queries
    /// first, and otherwise the snapshot ends the window.
    async fn snapshot(&self, c: &mut NodeConn, tables: &[String], start: bool) -> NodeSnap {
        let mut snap = NodeSnap {
            left_open: self.wait_gone(c).await,
            ..NodeSnap::default()
        };
        if self.caps.force_flush {
            // Publishes this connection's own statistics before they are
            // read: the watcher's queries then fall where they ran.
            let _ = c.query(sql::FORCE_FLUSH_SQL, self.limit).await;
        }
        if start {
            c.reset_own();
        } else {
            // The queries after this one are outside the window.
            snap.own = (c.commits, c.rollbacks);
        }
        if self.caps.database {
            snap.db = match c.query(&sql::database_sql(), self.limit).await {
                Ok(rows) => rows.first().and_then(|r| {
                    let v: Option<Vec<i64>> = (0..DbCounters::COLUMNS.len())
                        .map(|i| r.try_get::<_, i64>(i).ok())
                        .collect();
                    DbCounters::from_values(&v?)
                }),
                Err(e) => {
                    snap.errors.push(e.to_string());
                    None
                }
            };
        }
        if self.caps.tables && !tables.is_empty() {
            match c.query(&sql::tables_sql(tables), self.limit).await {
                Ok(rows) => {
                    for r in rows {
                        let name: Option<String> = r.try_get(0).ok();
                        let v: Option<Vec<i64>> = (0..TableCounters::COLUMNS.len())
                            .map(|i| r.try_get::<_, i64>(i + 1).ok())
                            .collect();
                        if let (Some(n), Some(t)) =
                            (name, v.and_then(|v| TableCounters::from_values(&v)))
                        {
                            snap.tables.insert(n, t);
                        }
                    }
                }
                Err(e) => snap.errors.push(e.to_string()),
            }
        }
        if let Some(view) = &self.caps.statements {
            match c
                .query(&sql::statements_sql(view, tables), self.limit)
                .await
            {
                Ok(rows) => {
                    let mut m = BTreeMap::new();
                    for r in rows {
                        let get_s = |i| r.try_get::<_, Option<String>>(i).ok().flatten();
                        let get_i = |i| r.try_get::<_, Option<i64>>(i).ok().flatten();
                        let get_f = |i| r.try_get::<_, Option<f64>>(i).ok().flatten();
                        if let (Some(key), Some(query)) = (get_s(0), get_s(1)) {
                            m.insert(
                                key,
                                StatementFigures {
                                    query,
                                    calls: get_i(2).unwrap_or(0),
                                    rows: get_i(3).unwrap_or(0),
                                    total_exec_ms: get_f(4).unwrap_or(0.0),
                                    max_exec_ms_since_reset: get_f(5).unwrap_or(0.0),
                                },
                            );
                        }
                    }
                    snap.statements = Some(m);
                }
                Err(e) => snap.errors.push(e.to_string()),
            }
        }
        snap
    }

    /// Waits until the run's backends on this node have ended (up to
    /// [`WAIT_GONE`], or until they are plainly not closing); returns how
    /// many are left.
    async fn wait_gone(&self, c: &mut NodeConn) -> i64 {
        let deadline = Instant::now() + WAIT_GONE;
        let text = sql::backends_sql(&self.app);
        let mut last = (-1, Instant::now());
        loop {
            let Ok(rows) = c.query(&text, self.limit).await else {
                return 0;
            };
            let (left, active) = rows.first().map_or((0, 0), |r| {
                (
                    r.try_get::<_, i64>(0).unwrap_or(0),
                    r.try_get::<_, i64>(1).unwrap_or(0),
                )
            });
            if left == 0 {
                return 0;
            }
            let now = Instant::now();
            if left != last.0 {
                last = (left, now);
            } else if active == 0 && now.duration_since(last.1) >= NOT_CLOSING {
                return left;
            }
            if now >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Opens a statistics connection to `endpoint`, within its connect timeout.
async fn open(endpoint: &Endpoint, tls: &Tls, app: &str) -> Result<Client> {
    let hosts: Vec<_> = endpoint
        .hosts
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.application_name(app);
            c
        })
        .collect();
    let limit = connect_timeout(&endpoint.config);
    let connect = async {
        connect_hosts(&hosts, tls).await.map(|(c, conn)| {
            tokio::spawn(conn);
            c
        })
    };
    match tokio::time::timeout(limit, connect).await {
        Ok(r) => r.map_err(|e| endpoint.connect_error(&endpoint.label, e)),
        Err(_) => Err(Error::run(format!(
            "cannot connect to {}: no answer within {} s",
            endpoint.label,
            limit.as_secs_f64()
        ))),
    }
}

/// Tries each view once; returns what may be read, and what may not with
/// the server's reason.
async fn probe(client: &Client, app: &str, limit: Duration) -> (Caps, Vec<String>) {
    let run = |text: String| async move {
        match tokio::time::timeout(limit, client.query_typed(&text, &[])).await {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string())),
            Err(_) => Err(format!("no answer within {} s", limit.as_secs_f64())),
        }
    };
    let mut caps = Caps::default();
    let mut refused = Vec::new();
    let mut check = |what: &str, r: std::result::Result<Vec<Row>, String>| match r {
        Ok(_) => true,
        Err(why) => {
            refused.push(format!("{what} ({why})"));
            false
        }
    };
    caps.database = check("pg_stat_database", run(sql::database_sql()).await);
    caps.tables = check(
        "pg_stat_user_tables",
        run("select relname from pg_stat_user_tables limit 1".to_string()).await,
    );
    caps.activity = check("pg_stat_activity", run(sql::sample_sql(app, false)).await);
    if let Ok(rows) = run(sql::STATEMENTS_SCHEMA_SQL.to_string()).await
        && let Some(r) = rows.first()
        && let (Ok(schema), Ok(version_num)) = (r.try_get::<_, String>(0), r.try_get::<_, i32>(1))
    {
        let view = StatementsView {
            schema: crate::db::sql::quote_ident(&schema),
            version_num,
        };
        match run(format!("select calls from {}.pg_stat_statements limit 1", view.schema)).await {
            Ok(_) => caps.statements = Some(view),
            // Installed in the database but not loaded by the server
            // (shared_preload_libraries): nothing to read, nothing wrong.
            Err(why) if why.contains("shared_preload_libraries") => caps.notes.push(
                "pg_stat_statements is installed but not loaded (shared_preload_libraries): no statement figures".to_string(),
            ),
            Err(why) => refused.push(format!("pg_stat_statements ({why})")),
        }
    }
    caps.force_flush = run(sql::HAS_FORCE_FLUSH_SQL.to_string())
        .await
        .ok()
        .and_then(|rows| rows.first().and_then(|r| r.try_get::<_, bool>(0).ok()))
        .unwrap_or(false);
    if let Ok(rows) = run(sql::TRACKING_SQL.to_string()).await
        && let Some(r) = rows.first()
    {
        let on = |i| r.try_get::<_, String>(i).is_ok_and(|v| v == "on");
        if !on(0) {
            caps.notes.push(
                "track_counts is off: the server counts no transactions, tuples or blocks"
                    .to_string(),
            );
        }
        if !on(1) {
            caps.notes
                .push("track_activities is off: the server shows no wait events".to_string());
        }
    }
    (caps, refused)
}

/// One node's reading at either end of the window.
#[derive(Default)]
struct NodeSnap {
    db: Option<DbCounters>,
    tables: BTreeMap<String, TableCounters>,
    statements: Option<BTreeMap<String, StatementFigures>>,
    /// The run's backends still there when the snapshot was taken.
    left_open: i64,
    /// The watcher's own transactions in the window (the end snapshot).
    own: (i64, i64),
    errors: Vec<String>,
}

/// One tick of the sampler: what each node showed.
#[derive(Clone, Debug, Default)]
pub struct Tick {
    /// The middle of the sample's round trip.
    pub at: Option<Instant>,
    /// The run's backends over all nodes.
    pub waits: WaitCounts,
    /// Each node's commits and rollbacks so far (None: not read).
    pub counters: Vec<Option<(i64, i64)>>,
}

/// What the sampler hands back.
struct Sampled {
    nodes: Vec<Node>,
    ticks: Vec<Tick>,
    cost: SamplerCost,
}

enum Sampling {
    Running {
        stop: tokio::sync::oneshot::Sender<()>,
        task: tokio::task::JoinHandle<Sampled>,
    },
    Off(Vec<Node>),
}

/// Samples every node on the watcher's timer until told to stop.
async fn sample_loop(
    watch: Arc<ServerWatch>,
    mut nodes: Vec<Node>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> Sampled {
    let text = sql::sample_sql(&watch.app, watch.caps.database);
    let mut ticks = Vec::new();
    let mut cost = SamplerCost {
        period_ms: watch.period.as_secs_f64() * 1e3,
        ..SamplerCost::default()
    };
    let mut total = Duration::ZERO;
    let mut timer = tokio::time::interval(watch.period);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = timer.tick() => {}
        }
        let sent = Instant::now();
        let answers = futures_util::future::join_all(nodes.iter_mut().map(|n| async {
            let Node::Up(c) = n else { return None };
            let t0 = Instant::now();
            let rows = c.sample(&text, watch.prepared, watch.limit).await.ok()?;
            let took = t0.elapsed();
            let r = rows.first()?;
            let events: String = r.try_get(0).ok()?;
            let commits: Option<i64> = r.try_get(1).ok().flatten();
            let rollbacks: Option<i64> = r.try_get(2).ok().flatten();
            Some((events, commits.zip(rollbacks), took))
        }))
        .await;
        let mut tick = Tick {
            at: Some(sent + sent.elapsed() / 2),
            ..Tick::default()
        };
        for a in &answers {
            match a {
                Some((events, counters, took)) => {
                    tick.waits.add_sample(sql::parse_events(events));
                    tick.counters.push(*counters);
                    cost.samples += 1;
                    total += *took;
                    cost.max_us = cost.max_us.max(took.as_secs_f64() * 1e6);
                }
                None => tick.counters.push(None),
            }
        }
        watch
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(&tick.waits);
        watch
            .total
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(&tick.waits);
        ticks.push(tick);
    }
    if cost.samples > 0 {
        cost.mean_us = total.as_secs_f64() * 1e6 / cost.samples as f64;
    }
    Sampled { nodes, ticks, cost }
}

/// One operation's watch, from [`ServerWatch::begin`] to [`OpWatch::end`].
pub struct OpWatch {
    watch: Arc<ServerWatch>,
    tables: Vec<String>,
    starts: Vec<Option<NodeSnap>>,
    /// Each node's commits and rollbacks at the start.
    base: Vec<Option<(i64, i64)>>,
    sampler: Sampling,
    notes: Vec<String>,
}

/// What [`OpWatch::end`] needs to know of the operation.
pub struct OpShape<'a> {
    /// When measurement started (after connecting, preparing and warmup).
    pub start: Instant,
    pub intervals: &'a [IntervalFigures],
    /// Connections the workers took per endpoint: the nodes the run used.
    pub opened: &'a [u64],
}

impl OpWatch {
    /// After the workers: stops the sampler, closes the workers' idle
    /// connections, waits for their backends to end, snapshots every node
    /// and makes the figures of the operation.
    pub async fn end(self, pool: &Pool, conns: &ConnSource, shape: OpShape<'_>) -> ServerFigures {
        let OpWatch {
            watch,
            tables,
            starts,
            base,
            sampler,
            mut notes,
        } = self;
        let (mut nodes, ticks, cost) = stop_sampler(&watch, sampler, &mut notes).await;
        pool.retain(|_, _| false);
        conns.drop_idle();
        let ends = futures_util::future::join_all(nodes.iter_mut().map(|n| async {
            match n {
                Node::Up(c) => Some(watch.snapshot(c, &tables, false).await),
                _ => None,
            }
        }))
        .await;
        let used = used_nodes(&nodes, shape.opened);
        let mut figures = ServerFigures {
            application_name: watch.app.clone(),
            ..ServerFigures::default()
        };
        let mut sums = Sums::default();
        for (i, (start, end)) in starts.iter().zip(&ends).enumerate() {
            let (Some(start), Some(end)) = (start, end) else {
                continue;
            };
            if !used[i] {
                continue;
            }
            let label = &watch.endpoints[i].label;
            figures.nodes.push(label.clone());
            sums.add_node(label, start, end, &mut figures, &mut notes);
        }
        sums.finish(&mut figures, &mut notes);
        if watch.caps.activity || watch.caps.database {
            add_sampled(&mut figures, &watch.caps, &ticks, &shape, &base, &used);
            figures.sampler = cost;
        }
        notes.dedup();
        figures.notes = notes;
        *watch.nodes.lock().await = nodes;
        figures
    }
}

/// Stops the sampler and takes back its connections and what it
/// sampled; a sampler that does not stop in time (a server that does not
/// answer) costs its samples and connections, with a note.
async fn stop_sampler(
    watch: &ServerWatch,
    sampler: Sampling,
    notes: &mut Vec<String>,
) -> (Vec<Node>, Vec<Tick>, Option<SamplerCost>) {
    match sampler {
        Sampling::Off(nodes) => (nodes, Vec::new(), None),
        Sampling::Running { stop, mut task } => {
            let _ = stop.send(());
            // A sample in flight ends within the query limit.
            match tokio::time::timeout(watch.limit + Duration::from_secs(1), &mut task).await {
                Ok(Ok(s)) => (s.nodes, s.ticks, Some(s.cost)),
                _ => {
                    task.abort();
                    notes.push(
                        "the sampler did not stop in time (the server does not answer): its samples are lost".to_string(),
                    );
                    let down = watch.endpoints.iter().map(|_| Node::Down).collect();
                    (down, Vec::new(), None)
                }
            }
        }
    }
}

/// Which nodes the run used: those the workers opened connections to
/// (an alias counts for the node it names); all when that is not known.
fn used_nodes(nodes: &[Node], opened: &[u64]) -> Vec<bool> {
    let canonical = |i: usize| match nodes.get(i) {
        Some(Node::Alias(j)) => *j,
        _ => i,
    };
    let mut used = vec![opened.is_empty(); nodes.len()];
    for (i, n) in opened.iter().enumerate() {
        if *n > 0
            && let Some(u) = used.get_mut(canonical(i))
        {
            *u = true;
        }
    }
    used
}

/// The nodes' differences between the two snapshots, added up.
#[derive(Default)]
struct Sums {
    db: Option<DbCounters>,
    /// A node's database counters could not be read.
    db_missing: bool,
    tables: BTreeMap<String, TableCounters>,
    statements: Option<BTreeMap<String, StatementFigures>>,
}

impl Sums {
    /// Adds what node `label` did between `start` and `end`; its errors,
    /// backends left open and a reset of its statistics become notes.
    fn add_node(
        &mut self,
        label: &str,
        start: &NodeSnap,
        end: &NodeSnap,
        figures: &mut ServerFigures,
        notes: &mut Vec<String>,
    ) {
        for e in start.errors.iter().chain(&end.errors) {
            notes.push(e.clone());
        }
        if end.left_open > 0 {
            figures.left_open += end.left_open;
            notes.push(format!(
                "{label}: {} backend(s) with the run's name were still there after its connections closed (a pooler's server connections, or a server that does not answer): what they had not yet published is missing (a backend publishes its counts at most once a second, an idle one within 10 s on PostgreSQL 15)",
                end.left_open
            ));
        }
        match (start.db, end.db) {
            (Some(a), Some(b)) => {
                let (d, reset) = b.since(&a);
                if reset {
                    notes.push(format!(
                        "{label}: the statistics were reset during the operation: its counts start at the reset"
                    ));
                }
                self.db.get_or_insert_with(DbCounters::default).add(&d);
                figures.own_commits += end.own.0;
                figures.own_rollbacks += end.own.1;
            }
            _ => self.db_missing = true,
        }
        for (name, after) in &end.tables {
            let before = start.tables.get(name).copied().unwrap_or_default();
            self.tables
                .entry(name.clone())
                .or_default()
                .add(&after.since(&before).0);
        }
        if let (Some(a), Some(b)) = (&start.statements, &end.statements) {
            add_statements(self.statements.get_or_insert_with(BTreeMap::new), a, b);
        }
    }

    /// Puts the sums into `figures`: the busiest statements first, at
    /// most [`STATEMENTS_KEPT`].
    fn finish(self, figures: &mut ServerFigures, notes: &mut Vec<String>) {
        if self.db_missing && self.db.is_some() {
            notes.push(
                "some nodes' database counters could not be read: the counts are of the others"
                    .to_string(),
            );
        }
        figures.database = self.db;
        figures.tables = self
            .tables
            .into_iter()
            .map(|(table, counts)| TableFigures { table, counts })
            .collect();
        figures.statements = self.statements.map(|m| {
            let mut v: Vec<StatementFigures> = m.into_values().collect();
            v.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.query.cmp(&b.query)));
            v.truncate(STATEMENTS_KEPT);
            v
        });
    }
}

/// Adds one node's statements between two readings to `all`, by text:
/// the same text on several nodes is added up.
fn add_statements(
    all: &mut BTreeMap<String, StatementFigures>,
    before: &BTreeMap<String, StatementFigures>,
    after: &BTreeMap<String, StatementFigures>,
) {
    for (key, now) in after {
        let d = statement_delta(before.get(key), now);
        if d.calls <= 0 {
            continue;
        }
        let e = all.entry(now.query.clone()).or_insert(StatementFigures {
            query: now.query.clone(),
            calls: 0,
            rows: 0,
            total_exec_ms: 0.0,
            max_exec_ms_since_reset: 0.0,
        });
        e.calls += d.calls;
        e.rows += d.rows;
        e.total_exec_ms += d.total_exec_ms;
        e.max_exec_ms_since_reset = e.max_exec_ms_since_reset.max(d.max_exec_ms_since_reset);
    }
}

/// What the sampler saw, per interval of the operation and in all: the
/// commits of the nodes used, and the waits where this role may see the
/// run's backends.
fn add_sampled(
    figures: &mut ServerFigures,
    caps: &Caps,
    ticks: &[Tick],
    shape: &OpShape<'_>,
    base: &[Option<(i64, i64)>],
    used: &[bool],
) {
    let base: Vec<Option<(i64, i64)>> = base
        .iter()
        .enumerate()
        .map(|(i, b)| b.filter(|_| used.get(i).copied().unwrap_or(false)))
        .collect();
    figures.intervals = per_interval(ticks, shape.start, shape.intervals, &base, used);
    if !caps.activity {
        for iv in &mut figures.intervals {
            iv.waits = WaitCounts::default();
        }
    }
    if caps.activity {
        let mut total = WaitCounts::default();
        for iv in &figures.intervals {
            total.add(&iv.waits);
        }
        figures.waits = Some(total);
    }
}

/// What one statement did between two readings (a statement new since
/// the first counts whole).
fn statement_delta(
    before: Option<&StatementFigures>,
    after: &StatementFigures,
) -> StatementFigures {
    let (calls, rows, total) = before.map_or((0, 0, 0.0), |b| (b.calls, b.rows, b.total_exec_ms));
    StatementFigures {
        query: after.query.clone(),
        calls: after.calls - calls,
        rows: after.rows - rows,
        total_exec_ms: (after.total_exec_ms - total).max(0.0),
        max_exec_ms_since_reset: after.max_exec_ms_since_reset,
    }
}

/// The ticks in the operation's intervals: each tick counts in the
/// interval its time falls in (ticks before the start, during connecting
/// and warmup, or after the end count nowhere). Commits and rollbacks of
/// an interval are the nodes' counters at its last tick less those at the
/// last tick before it (or at the start), summed over the nodes used, less
/// the sampler's own queries in between.
pub fn per_interval(
    ticks: &[Tick],
    start: Instant,
    intervals: &[IntervalFigures],
    base: &[Option<(i64, i64)>],
    used: &[bool],
) -> Vec<ServerInterval> {
    let offset = |t: &Tick| -> Option<f64> {
        let at = t.at?;
        Some(if at >= start {
            at.duration_since(start).as_secs_f64()
        } else {
            -start.duration_since(at).as_secs_f64()
        })
    };
    let nodes_used = used.iter().filter(|u| **u).count() as i64;
    // The counters of a tick summed over the nodes used; None if one of
    // them was not read.
    let sum = |c: &[Option<(i64, i64)>]| -> Option<(i64, i64)> {
        let mut s = (0, 0);
        for (i, u) in used.iter().enumerate() {
            if *u {
                let (a, b) = c.get(i).copied().flatten()?;
                s = (s.0 + a, s.1 + b);
            }
        }
        Some(s)
    };
    let base_sum = sum(base);
    let mut out = Vec::with_capacity(intervals.len());
    for f in intervals {
        let (begin, end) = (f.end_s - f.seconds, f.end_s);
        let mut iv = ServerInterval {
            index: f.index,
            ..ServerInterval::default()
        };
        let mut last_in = None;
        let mut last_before = None;
        for (k, t) in ticks.iter().enumerate() {
            let Some(at) = offset(t) else { continue };
            if at < begin {
                last_before = Some(k);
            } else if at < end {
                iv.waits.add(&t.waits);
                last_in = Some(k);
            }
        }
        if let Some(k) = last_in {
            let from = match last_before {
                Some(j) => sum(&ticks[j].counters),
                None => base_sum,
            };
            let queries = (k as i64 - last_before.map_or(-1, |j| j as i64)) * nodes_used;
            if let (Some(a), Some(b)) = (from, sum(&ticks[k].counters)) {
                iv.commits = Some((b.0 - a.0 - queries).max(0));
                iv.rollbacks = Some((b.1 - a.1).max(0));
            }
        }
        out.push(iv);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(index: u64, seconds: f64) -> IntervalFigures {
        IntervalFigures {
            index,
            end_s: (index + 1) as f64 * seconds,
            seconds,
            ..IntervalFigures::default()
        }
    }

    fn tick(start: Instant, ms: i64, ev: &str, commits: i64) -> Tick {
        let at = if ms >= 0 {
            start + Duration::from_millis(ms as u64)
        } else {
            start - Duration::from_millis((-ms) as u64)
        };
        let mut waits = WaitCounts::default();
        waits.add_sample([(ev, 2)]);
        Tick {
            at: Some(at),
            waits,
            counters: vec![Some((commits, 0))],
        }
    }

    #[test]
    fn samples_count_in_the_interval_their_time_falls_in() {
        // Far enough from the clock's origin to go back in time.
        let start = Instant::now() + Duration::from_secs(10);
        let ticks = vec![
            tick(start, -300, "Client:ClientRead", 10), // warmup: nowhere
            tick(start, 100, "CPU", 110),
            tick(start, 600, "CPU", 210),
            tick(start, 1100, "Lock:relation", 215),
            tick(start, 1900, "Lock:relation", 216),
            tick(start, 2500, "CPU", 400), // after the end: nowhere
        ];
        let ivs = [interval(0, 1.0), interval(1, 1.0)];
        let out = per_interval(&ticks, start, &ivs, &[Some((0, 0))], &[true]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].index, 0);
        assert_eq!(out[0].waits.samples, 2);
        assert_eq!(out[0].waits.events.get("CPU"), Some(&4));
        assert_eq!(out[1].waits.shares()[0], ("Lock:relation", 1.0));
        // Interval 0: from the warmup tick's 10 to 210, less the two
        // sampler queries; interval 1: 210 to 216, less two.
        assert_eq!(out[0].commits, Some(198));
        assert_eq!(out[1].commits, Some(4));
    }

    #[test]
    fn an_interval_without_a_sample_has_no_commits_and_no_waits() {
        let start = Instant::now();
        let ticks = vec![tick(start, 1500, "CPU", 5)];
        let ivs = [interval(0, 1.0), interval(1, 1.0)];
        let out = per_interval(&ticks, start, &ivs, &[Some((0, 0))], &[true]);
        assert_eq!(out[0].commits, None);
        assert_eq!(out[0].waits.samples, 0);
        assert_eq!(out[1].commits, Some(4));
        // A node used but not read: no counts rather than wrong ones.
        let out = per_interval(&ticks, start, &ivs, &[None], &[true]);
        assert_eq!(out[1].commits, None);
    }

    #[test]
    fn a_statement_new_in_the_window_counts_whole() {
        let s = |calls, total| StatementFigures {
            query: "select 1".into(),
            calls,
            rows: calls,
            total_exec_ms: total,
            max_exec_ms_since_reset: 1.0,
        };
        let d = statement_delta(None, &s(10, 5.0));
        assert_eq!((d.calls, d.total_exec_ms), (10, 5.0));
        let d = statement_delta(Some(&s(4, 2.0)), &s(10, 5.0));
        assert_eq!((d.calls, d.rows, d.total_exec_ms), (6, 6, 3.0));
        assert!((d.mean_exec_us() - 500.0).abs() < 1e-9);
    }
}
