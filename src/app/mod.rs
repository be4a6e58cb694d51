//! One whole run: connect, check the server, settle where the workers go
//! and meet the other clients, have the runner prepare the tables and run
//! the operations in order, and write their summaries and reports. The
//! database work of the tables and of each operation's life is the
//! runner's ([`crate::runner::tables`], [`crate::runner::lifecycle`]).
//!
//! This is the library's entry point; `main` only parses flags, builds the
//! runtime, turns signals into a [`Control`] and maps the result to an exit
//! code. Tests call [`run`] in process against their own sandbox servers.
//! The reports are written by [`crate::report`] from the run's record,
//! which `record` fills from the plan and what ran; [`saved`] holds the
//! saved-report commands (`show`, `merge`, `compare`).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use deadpool_postgres::Pool;
use tokio_postgres::Config;

use crate::cluster::{ClusterPlan, ClusterRecord, Gate};
use crate::config::RunPlan;
use crate::db::connect::{self, ConnTarget};
use crate::db::dialect::Flavor;
use crate::db::endpoint::{self, Endpoint};
use crate::db::nodes::{self, Balance, ConnSource};
use crate::db::passfile::PassFile;
use crate::db::sandbox::{Sandbox, SandboxOptions};
use crate::db::schema::{self, ServerInfo};
use crate::db::server_stats;
use crate::db::server_watch::ServerWatch;
use crate::db::tls::Tls;
use crate::db::topology::Place;
use crate::error::{Error, Result};
use crate::report::files::FileTargets;
use crate::report::{self, Pictures, text};
use crate::runner::setup_race::{self, SETUP, SetUpConn};
use crate::runner::{self, AbortOnDrop, RunCtx, StartBarrier, latency_log};
use crate::stats::OpResult;
use crate::stats::record::{OpRecord, RowSize};
use crate::stats::slo::{SloRecord, judge_ops};
use crate::workload::Workload;

pub use crate::runner::never_started;

mod find_max;
mod live;
mod record;
pub mod saved;

/// How a run is told from outside to stop.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// Workers stop after their unit in flight.
    pub stop: Arc<AtomicBool>,
    /// Set with `stop` by an interrupt (Ctrl-C, SIGTERM).
    pub interrupted: Arc<AtomicBool>,
    /// Set when the first operation starts: before it, a stop has no
    /// units in flight to finish, only set-up queries to cancel.
    pub started: Arc<AtomicBool>,
}

impl Control {
    /// An error when the run was stopped before its first operation, so
    /// that nothing is created or written after Ctrl-C.
    fn check(&self, when: &'static str) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted(when));
        }
        Ok(())
    }

    /// Whether the first operation has started (see [`Control::started`]).
    pub fn has_started(&self) -> bool {
        self.started.load(Ordering::Relaxed)
    }

    /// Runs `query`, a set-up step before the first operation, unless
    /// the run is stopped first: a set-up query can wait on the server
    /// without limit (a lock another session holds), and a stop must not
    /// wait with it. On a stop the statement is cancelled on the server
    /// (`cancel`: the connection it runs on, if any), so that it does not
    /// stay queued behind the lock, and the run ends as interrupted.
    async fn or_stop<T>(
        &self,
        cancel: Option<(&Endpoint, &Tls, tokio_postgres::CancelToken)>,
        query: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        setup_race::or_stop(&self.stop, cancel, query).await
    }

    /// Asks the run to stop as after Ctrl-C.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a run did.
#[derive(Debug)]
pub struct RunReport {
    pub started_at: SystemTime,
    /// The application_name of the run's connections: the name asked for
    /// and the run id.
    pub application_name: String,
    pub server: ServerInfo,
    pub operations: Vec<OpResult>,
    pub interrupted: bool,
    /// `--clients`: this client's place in the run and when each
    /// operation started on the database's clock.
    pub cluster: Option<crate::cluster::ClusterRecord>,
    /// `--slo`: the verdict on the run.
    pub slo: Option<SloRecord>,
    /// `--slo` judges failed units (an `errors` criterion): then they do
    /// not fail the run by themselves.
    pub slo_judges_errors: bool,
    /// `--find-max`: the search and its steps.
    pub find_max: Option<crate::stats::find_max::FindMaxRecord>,
}

impl RunReport {
    /// Whether every operation ran to its end without a failed unit (or
    /// with failed units that an `--slo` criterion judges instead).
    pub fn succeeded(&self) -> bool {
        !self.interrupted
            && self.operations.iter().all(|o| {
                o.succeeded()
                    || (self.slo_judges_errors
                        && o.failure.is_none()
                        && o.checks.iter().all(|c| c.held))
            })
    }

    /// Whether the run missed its `--slo` (exit 3 when it did not fail).
    pub fn slo_missed(&self) -> bool {
        self.slo.as_ref().is_some_and(|s| !s.met)
    }
}

/// Runs the plan with no outside control.
pub async fn run(plan: RunPlan, out: &mut (dyn Write + Send)) -> Result<RunReport> {
    run_with(plan, out, Control::default()).await
}

/// Runs the plan, writing each operation's summary to `out` as soon as it
/// ends, then the report files. Errors before the first operation are
/// returned as errors; an operation that fails ends the run and is in the
/// report, as is an interrupt.
pub async fn run_with(
    plan: RunPlan,
    out: &mut (dyn Write + Send),
    control: Control,
) -> Result<RunReport> {
    let workloads = plan.workloads()?;
    run_workloads(plan, workloads, out, control).await
}

/// Runs `workloads` (built from the plan, or any other [`Workload`], as
/// tests of the runner do with units that need no table) with the plan's
/// connection, pacing and reports. A client of several builds its
/// workloads again from the plan once the clients met (its share follows
/// every client's threads), so it runs the plan's workloads.
pub async fn run_workloads(
    mut plan: RunPlan,
    mut workloads: Vec<Box<dyn Workload>>,
    out: &mut (dyn Write + Send),
    control: Control,
) -> Result<RunReport> {
    let started_at = SystemTime::now();
    ensure_open_files(plan.run.threads)?;
    for w in plan.warnings() {
        crate::say!("{w}");
    }
    // Kept alive for the whole run; dropped (server stopped, directory
    // removed) when the run ends or its future is dropped.
    // Bound before anything is connected: an address in use is a usage
    // error at once.
    let run_id = server_stats::run_id(started_at);
    let live = live::start(&plan, &run_id).await?;
    let (config, passfile, _sandbox) = server_config(&plan, &control)?;
    let setup = connect_server(&plan, &control, config, passfile, &run_id).await?;
    let prepared = prepare_run(&mut plan, &control, &setup, &mut workloads).await?;
    let Setup {
        target,
        application_name,
        tls,
        whole,
        pool,
        server,
        client,
        passfile,
        ..
    } = setup;
    // The tool's own connection goes back to the pool: the operations'
    // set-ups and checks take theirs from it.
    drop(client);
    let Prepared {
        endpoints,
        gate,
        watch,
    } = prepared;
    let (conns, _refresher) = conn_source(&plan, endpoints, &tls, &whole, passfile)?;
    let (log_sink, log_thread) = open_latency_log(&plan)?;
    let plan = Arc::new(plan);
    let ctx = RunCtx {
        settings: Arc::new(plan.run.clone()),
        pool,
        target: Arc::new(whole),
        tls,
        stop: control.stop.clone(),
        interrupted: control.interrupted.clone(),
        latency_log: log_sink,
        conns,
        server: watch,
        barrier: gate.clone().map(|g| g as Arc<dyn StartBarrier>),
        slo_stopped: Arc::default(),
        search_step: None,
        live: live.as_ref().map(live::LiveRun::board),
    };
    let mut report = RunReport {
        started_at,
        application_name,
        server,
        operations: Vec::new(),
        interrupted: false,
        cluster: None,
        slo: None,
        find_max: None,
        slo_judges_errors: plan.run.slo.as_ref().is_some_and(|s| s.judges_errors()),
    };
    let titles = Titles::new(&report);
    // `--json -` puts the JSON on stdout, and the summary on stderr, so
    // that stdout holds the JSON alone (as `merge --json -`).
    let json_to_stdout = plan.output.json.as_deref() == Some(std::path::Path::new("-"));
    let mut stderr = std::io::stderr();
    let mut summary = if json_to_stdout {
        Summary::new(&mut stderr, "stderr")
    } else {
        Summary::new(&mut *out, "stdout")
    };
    // Nothing is emptied or loaded after Ctrl-C: an interrupt while the
    // tables were made ends the run here, one between two operations
    // before the next (its set-up may truncate).
    control.check("while the tables were prepared")?;
    let _ = text::write_run_header(&mut summary, plan.seed());
    let steps = Steps {
        ctx: &ctx,
        control: &control,
        plan: &plan,
        text_options: record::text_options(&plan),
        titles: &titles,
    };
    // Each operation's record, as its text was written: the JSON's.
    let records = run_operations(&steps, &workloads, &mut report, &mut summary).await?;
    judge_slo(&plan, &ctx, &records, &mut report, &mut summary);
    let row_size = if plan.show_rowsize && !report.interrupted && summary.failed.is_none() {
        write_row_size(&ctx, &workloads, &mut summary).await
    } else {
        None
    };
    if let Some(g) = &gate {
        report.cluster = Some(close_gate(g).await);
    }
    // The workers' log writers are gone; the sink in ctx is the last one.
    drop(ctx);
    // Each report is written whatever became of the others: a latency
    // log that filled the disk must not cost the JSON.
    let mut failed: Vec<Error> = log_thread
        .and_then(|t| close_latency_log(t, &plan).err())
        .into_iter()
        .collect();
    let _ = summary.flush();
    let stdout_failed = summary.finish();
    failed.extend(write_report_files(
        &plan, &target, &report, records, row_size, out,
    ));
    if let Some(l) = &live {
        l.linger(&control, &mut report).await;
    }
    end_of_run(report, failed, stdout_failed, json_to_stdout)
}

/// `--latency-log`: the sink the workers write to and the thread that
/// writes the file.
fn open_latency_log(
    plan: &RunPlan,
) -> Result<(Option<latency_log::LogSink>, Option<latency_log::LogThread>)> {
    Ok(match &plan.output.latency_log {
        Some(p) => {
            let (s, t) = latency_log::create(p)?;
            (Some(s), Some(t))
        }
        None => (None, None),
    })
}

/// The JSON, CSV and HTML reports, written from the run's record; their
/// failures.
fn write_report_files(
    plan: &RunPlan,
    target: &str,
    report: &RunReport,
    records: Vec<OpRecord>,
    row_size: Option<RowSize>,
    out: &mut (dyn Write + Send),
) -> Vec<Error> {
    let mut run = record::run_record(plan, target, report, records, row_size);
    run.slo = report.slo.clone();
    run.find_max = report.find_max.clone();
    let to = FileTargets {
        json: plan.output.json.as_deref(),
        csv: plan.output.csv.as_deref(),
        html: plan.output.html.as_deref(),
        csv_figures: crate::workload::registry::INTERVAL_COLUMNS,
    };
    crate::report::files::write_files(&run, to, out)
}

/// `--slo`: the run's verdict on what was measured, in the summary (and
/// the missed criteria on stderr too), kept for the record and the exit
/// code. An interrupted run is not judged: it measured less than asked.
fn judge_slo(
    plan: &RunPlan,
    ctx: &RunCtx,
    records: &[OpRecord],
    report: &mut RunReport,
    summary: &mut Summary<'_>,
) {
    let Some(slo) = &plan.run.slo else {
        return;
    };
    // A search is judged by its answer (see `find_max`).
    if report.interrupted || report.find_max.is_some() {
        return;
    }
    let aborted = ctx.slo_stopped.lock().ok().and_then(|g| g.clone());
    let verdict = judge_ops(slo, records, aborted);
    let _ = report::slo::write_slo(summary, &verdict);
    if !verdict.met {
        crate::say!("{}", report::slo::missed_line(&verdict));
    }
    report.slo = Some(verdict);
}

/// The leader ends the run at the barrier; this client's part in the run,
/// for the report.
async fn close_gate(gate: &Gate) -> ClusterRecord {
    gate.close().await;
    ClusterRecord {
        plan: gate.plan.clone(),
        starts: gate.starts(),
    }
}

/// Says, once at the start, which `--topology-keys` entries match no node
/// `yb_servers()` lists: a misspelt zone otherwise only shows as workers
/// spread over the rest of the cluster (or, with `--topology-keys-only`,
/// as no node to connect to).
fn warn_unmatched_keys(plan: &RunPlan, endpoints: &[(Endpoint, Option<Place>)]) {
    let Some(keys) = plan.topology.as_ref().and_then(|t| t.keys.as_ref()) else {
        return;
    };
    let places = endpoints.iter().filter_map(|(_, p)| p.as_ref());
    let unmatched = keys.unmatched(places.clone());
    if unmatched.is_empty() {
        return;
    }
    let mut zones: Vec<String> = places.map(Place::zone_name).collect();
    zones.sort();
    zones.dedup();
    let what = match unmatched.len() {
        1 => format!("entry {} matches", unmatched[0]),
        _ => format!("entries {} match", unmatched.join(",")),
    };
    crate::say!(
        "warning: --topology-keys {what} no node yb_servers() lists (its zones: {}): check the spelling; until such a node is listed, connections go to the other entries' nodes or the rest of the cluster",
        zones.join(", ")
    );
}

/// Where the workers' connections come from, said on stderr unless to
/// the host list's failover; with `--yb-refresh`, the task that keeps
/// the nodes fresh, ended when the handle is dropped.
fn conn_source(
    plan: &RunPlan,
    endpoints: Vec<(Endpoint, Option<Place>)>,
    tls: &Tls,
    whole: &Endpoint,
    passfile: Option<PassFile>,
) -> Result<(Arc<ConnSource>, Option<AbortOnDrop>)> {
    if plan.balance != Balance::Failover {
        let labels: Vec<String> = endpoints
            .iter()
            .map(|(e, place)| match place {
                Some(p) => format!("{} ({}, {})", e.label, p.zone_name(), p.node_type.name()),
                None => e.label.clone(),
            })
            .collect();
        let how = match &plan.topology {
            Some(t) => format!("{}, {}", plan.balance.name(), t.describe()),
            None => plan.balance.name().to_string(),
        };
        crate::say!(
            ">> balance ({how}) over {} host(s): {}",
            labels.len(),
            labels.join(", ")
        );
        warn_unmatched_keys(plan, &endpoints);
    }
    // A search over workers takes up to the most a run may have.
    let workers = match plan.find_max {
        Some(s) if s.over == crate::stats::find_max::Over::Threads => crate::config::MAX_THREADS,
        _ => plan.run.threads,
    };
    let source = ConnSource::new(endpoints, plan.balance, tls.clone(), workers)?.with_topology(
        plan.topology.clone().unwrap_or_default(),
        plan.failed_host_delay,
    );
    let source = Arc::new(source);
    let refresher = plan.yb_refresh.map(|every| {
        let how = nodes::Rediscover {
            given: whole.clone(),
            passfile,
        };
        AbortOnDrop(tokio::spawn(nodes::keep_fresh(source.clone(), every, how)))
    });
    Ok((source, refresher))
}

/// `--show-rowsize`: the last operation's table's row size, after the
/// summaries; what the record keeps of it.
async fn write_row_size(
    ctx: &RunCtx,
    workloads: &[Box<dyn Workload>],
    summary: &mut Summary<'_>,
) -> Option<RowSize> {
    let last = workloads.last()?;
    let size = match runner::row_size(ctx, last.as_ref()).await {
        Ok(Some((avg, n))) => RowSize {
            avg_bytes: Some(avg),
            rows: u64::try_from(n).unwrap_or(0),
            text: format!("{avg:.1} bytes (average over {n} rows)"),
        },
        Ok(None) => RowSize {
            avg_bytes: None,
            rows: 0,
            text: "empty table".to_string(),
        },
        Err(e) => RowSize {
            avg_bytes: None,
            rows: 0,
            text: format!("not measured: {e}"),
        },
    };
    let _ = text::write_row_size(summary, &size);
    Some(size)
}

/// Ends the latency log's writer, which has the last of it to write.
fn close_latency_log(log: latency_log::LogThread, plan: &RunPlan) -> Result<()> {
    log.close()?;
    if let Some(p) = &plan.output.latency_log {
        crate::say!(">> wrote {}", p.display());
    }
    Ok(())
}

/// The run's result once every report was written: the report, or the
/// last failure as the run's error (printed by main), any before it
/// printed here, each once.
fn end_of_run(
    report: RunReport,
    mut failed: Vec<Error>,
    stdout_failed: Option<std::io::Error>,
    json_to_stdout: bool,
) -> Result<RunReport> {
    // The summary's stream broke last in the list: the reports are the
    // run's result, their failures come first. A reader gone at an
    // interrupt (Ctrl-C on `ysql-bench | tee`, `timeout` signalling the
    // whole group) went for the same reason the run stopped: the run
    // keeps its interrupted code (130), the line is still said.
    if let Some(e) = stdout_failed {
        if report.interrupted && e.kind() == std::io::ErrorKind::BrokenPipe && failed.is_empty() {
            crate::say!(
                "error: {}",
                stream_error(&e, summary_stream(json_to_stdout))
            );
        } else {
            failed.push(Error::run(stream_error(&e, summary_stream(json_to_stdout))));
        }
    }
    match failed.pop() {
        None => Ok(report),
        Some(last) => {
            for e in failed {
                crate::say!("error: {e}");
            }
            Err(last)
        }
    }
}

/// The server's address and password file: the plan's, or a sandbox
/// server's started here (returned, to live as long as the run).
fn server_config(
    plan: &RunPlan,
    control: &Control,
) -> Result<(Config, Option<PassFile>, Option<Sandbox>)> {
    let started = match &plan.target {
        ConnTarget::Server(s) => (s.config.clone(), s.passfile.clone(), None),
        ConnTarget::Sandbox => {
            crate::say!(">> start sandbox server");
            // Room for every worker, the tool's own connection and a few
            // to look on with psql.
            let max_conns = (plan.run.threads + 20).max(300);
            let sb = Sandbox::start(SandboxOptions {
                settings: vec![("max_connections".to_string(), max_conns.to_string())],
                ..SandboxOptions::default()
            })
            // A second Ctrl-C stops initdb under us: that is the
            // interrupt, not a failure of initdb's.
            .map_err(
                |e| match control.check("while the sandbox server started") {
                    Err(interrupted) => interrupted,
                    Ok(()) => e,
                },
            )?;
            (sb.config(), None, Some(sb))
        }
    };
    control.check("while the sandbox server started")?;
    Ok(started)
}

/// The tool's own connection to the server, before the first operation.
struct Setup {
    /// The server as the messages and reports name it.
    target: String,
    /// The application_name of every connection of the run.
    application_name: String,
    passfile: Option<PassFile>,
    config: Config,
    tls: Tls,
    /// The whole host list, libpq's failover.
    whole: Endpoint,
    pool: Pool,
    client: deadpool_postgres::Object,
    server: ServerInfo,
}

impl Setup {
    /// Set-up queries on the tool's connection race the stop.
    fn conn<'a>(&'a self, control: &'a Control) -> SetUpConn<'a> {
        SetUpConn {
            client: &self.client,
            endpoint: &self.whole,
            tls: &self.tls,
            stop: &control.stop,
        }
    }
}

/// Connects to the server and asks what it is; refuses what the server
/// cannot do (`-n` on PostgreSQL).
async fn connect_server(
    plan: &RunPlan,
    control: &Control,
    mut config: Config,
    passfile: Option<PassFile>,
    run_id: &str,
) -> Result<Setup> {
    config.ssl_mode(plan.tls.mode.tokio_mode());
    // Every connection of the run carries the run's own name, so that the
    // server's view of it (pg_stat_activity) can be told from any other.
    let application_name =
        server_stats::run_application_name(config.get_application_name(), run_id);
    config.application_name(&application_name);
    let tls = plan.tls.connector()?;
    let target = connect::describe(&config);
    crate::say!(">> connect {target} sslmode={}", plan.tls.mode.name());
    // The whole host list, libpq's failover, each host with its password.
    let whole = Endpoint::whole(&config, passfile.as_ref());
    let pool = connect::pool(&whole, plan.run.threads, &tls)?;
    let client = control.or_stop(None, connect::get(&pool, &whole)).await?;
    // Every set-up query races the stop, and is cancelled by it.
    let on_stop = Some((&whole, &tls, client.cancel_token()));
    let server = control.or_stop(on_stop, schema::detect(&client)).await?;
    crate::say!(">> server: {}", server.version);
    crate::say!(">> encryption: {}", server.encryption);
    if server.flavor == Flavor::Postgres {
        if plan.run.nontransactional {
            return Err(Error::usage(
                "--nontransactional (-n) sets yb_disable_transactional_writes, which only YugabyteDB has: leave it out on PostgreSQL (pgbench's -n, no vacuum, needs no equivalent: a ysql-bench run vacuums nothing)",
            ));
        }
        if plan.workload.tablets.is_some() {
            crate::say!("warning: --tablets applies to YugabyteDB only; ignored on PostgreSQL");
        }
    }
    control.check("while connecting")?;
    Ok(Setup {
        target,
        application_name,
        passfile,
        config,
        tls,
        whole,
        pool,
        client,
        server,
    })
}

/// What the run settled before its first operation.
struct Prepared {
    /// Where the workers go, and where each node is (discovered nodes).
    endpoints: Vec<(Endpoint, Option<Place>)>,
    /// `--clients`: this client's side of the barrier.
    gate: Option<Arc<Gate>>,
    /// The server's view of each operation, unless --no-server-stats.
    watch: Option<Arc<ServerWatch>>,
}

/// Before the first operation, on the tool's own connection: where the
/// workers go (settled before the table is touched, so that a
/// --yb-discover that cannot work changes nothing), the other clients
/// met, the tables checked and created, the server's view started.
async fn prepare_run(
    plan: &mut RunPlan,
    control: &Control,
    setup: &Setup,
    workloads: &mut Vec<Box<dyn Workload>>,
) -> Result<Prepared> {
    let conn = setup.conn(control);
    let endpoints = if plan.yb_discover {
        crate::say!(">> yb_servers(): the cluster's nodes");
        conn.or_stop(nodes::discover(
            &setup.client,
            &setup.whole,
            setup.passfile.as_ref(),
        ))
        .await?
    } else if plan.balance == Balance::Failover {
        vec![(setup.whole.clone(), None)]
    } else {
        endpoint::split_hosts(&setup.config, setup.passfile.as_ref())
            .into_iter()
            .map(|e| (e, None))
            .collect()
    };
    let gate = meet_clients(plan, control, setup, workloads).await?;
    let barrier = gate.as_deref().map(|g| g as &dyn StartBarrier);
    runner::tables::prepare(
        &conn,
        &plan.workload,
        &plan.run,
        workloads,
        setup.server.flavor,
        barrier,
    )
    .await?;
    let watch = if plan.server_stats {
        let started = ServerWatch::start(
            &setup.client,
            endpoints.iter().map(|(e, _)| e.clone()).collect(),
            setup.tls.clone(),
            setup.application_name.clone(),
            plan.run.interval(),
            plan.workload.prepared,
        );
        conn.or_stop(async { Ok(started.await) }).await?
    } else {
        None
    };
    Ok(Prepared {
        endpoints,
        gate,
        watch,
    })
}

/// Several clients: the barrier opened and the first meeting, where the
/// clients say what each brings (a difference in the flags that must
/// agree stops them all here); this client's share of the ids and of
/// `--rate` then follows every client's threads, and its workloads are
/// built again with it. None for a run of one client.
async fn meet_clients(
    plan: &mut RunPlan,
    control: &Control,
    setup: &Setup,
    workloads: &mut Vec<Box<dyn Workload>>,
) -> Result<Option<Arc<Gate>>> {
    let Some(c) = plan.cluster.clone() else {
        return Ok(None);
    };
    let gate = open_gate(&c, control, setup).await?;
    let members = gate.exchange().await?;
    for line in crate::cluster::describe_members(&c.run_id, &members) {
        crate::say!("{line}");
    }
    plan.settle(&members);
    if let (Some(whole), Some(own)) = (c.whole_rate, plan.run.rate) {
        crate::say!(
            ">> run {}: this client paces at {own:.1}/s, its threads' share of --rate {whole}",
            c.run_id
        );
    }
    *workloads = plan.workloads()?;
    Ok(Some(gate))
}

/// Several clients: this one's side of the barrier, opened before any
/// table is touched (the runner's tables step meets the others first).
async fn open_gate(plan: &ClusterPlan, control: &Control, setup: &Setup) -> Result<Arc<Gate>> {
    crate::say!(
        ">> run {}: client {} of {}, waiting for the others (at most {})",
        plan.run_id,
        plan.index,
        plan.clients,
        humantime::format_duration(plan.barrier_timeout)
    );
    // A pool of its own: the run's holds one connection per worker, and
    // the tool's own connection is in use here.
    let gate_pool = connect::pool(&setup.whole, 3, &setup.tls)?;
    let gate = Gate::open(
        plan.clone(),
        gate_pool,
        setup.whole.clone(),
        control.stop.clone(),
    )
    .await?;
    Ok(Arc::new(gate))
}

/// The names the pictures carry: the run's start and the server.
struct Titles {
    stamp: String,
    server_name: String,
}

impl Titles {
    fn new(report: &RunReport) -> Self {
        let stamp = humantime::format_rfc3339_seconds(report.started_at)
            .to_string()
            .replace([':', '-'], "")
            .trim_end_matches('Z')
            .to_string();
        let server_name = format!(
            "{} {}",
            report.server.flavor.name(),
            short_version(&report.server.version)
        );
        Titles { stamp, server_name }
    }
}

/// What each step of the operations' loop needs.
struct Steps<'a> {
    ctx: &'a RunCtx,
    control: &'a Control,
    plan: &'a RunPlan,
    /// How the summaries are written, from the plan.
    text_options: report::text::TextOptions,
    titles: &'a Titles,
}

/// The operations in order, each reported as soon as it ends, until the
/// last, an interrupt, a summary nobody reads any more, or a load that
/// failed; returns each operation's record, as its text was written.
/// Errs only on a stop before the first operation started.
async fn run_operations(
    steps: &Steps<'_>,
    workloads: &[Box<dyn Workload>],
    report: &mut RunReport,
    summary: &mut Summary<'_>,
) -> Result<Vec<OpRecord>> {
    let Steps {
        ctx,
        control,
        plan,
        ref text_options,
        titles,
    } = *steps;
    let mut records: Vec<OpRecord> = Vec::new();
    for (position, workload) in workloads.iter().enumerate() {
        let kind = workload.spec();
        if control.interrupted.load(Ordering::Relaxed) {
            report.interrupted = true;
            crate::say!(">> {kind} not started: interrupted");
            break;
        }
        // Nobody sees the summary any more (the reader of the pipe is
        // gone): nothing more is started, what ran goes to the files.
        if summary.failed.is_some() {
            crate::say!(
                ">> not started: {}: the summary can no longer be written to {}",
                not_run(workloads, report).join(", "),
                summary.name
            );
            break;
        }
        crate::say!(">> {kind}");
        runner::warn_about_load_state(ctx, workload.as_ref()).await;
        // A stop while the load state was read, before the first
        // operation: nothing ran, as for a stop during the other set-up.
        if report.operations.is_empty() {
            control.check(SETUP)?;
        }
        control.started.store(true, Ordering::Relaxed);
        if let Some(search) = plan.find_max.filter(|_| position + 1 == workloads.len()) {
            let team = ctx
                .barrier
                .as_deref()
                .zip(plan.cluster.as_ref())
                .map(|(barrier, c)| find_max::Team {
                    barrier,
                    index: c.index,
                    threads: &c.threads_of,
                });
            let found = find_max::search(
                ctx,
                &control.interrupted,
                workload.as_ref(),
                position,
                search,
                team,
            )
            .await;
            end_search(steps, found, report, summary);
            if let Some(failed) = report
                .operations
                .last()
                .filter(|_| report.find_max.is_none())
            {
                records.push(OpRecord::of(failed));
            }
            break;
        }
        let mut result = runner::run_operation(ctx, workload.as_ref(), position).await;
        // A failed write is kept in `out` and the rest skipped; the
        // pictures and the report files are written all the same.
        let mut record = OpRecord::of(&result);
        record.histogram_of = workload.facts().histogram_note.clone();
        let pictures = plan.output.graph.as_ref().map(|options| Pictures {
            options,
            stamp: &titles.stamp,
            server: &titles.server_name,
        });
        let _ = report::operation(summary, text_options, pictures, &record, &result);
        records.push(record);
        say_why_it_failed(&result, report.slo_judges_errors);
        // Several clients: another's share of a load that did not finish
        // ends the run here too.
        let shares = runner::mark_loaded(ctx, workload.as_ref(), &result, position).await;
        if let Some(why) = shares {
            result.failure.get_or_insert(why);
        }
        let ok = result.succeeded();
        let interrupted = result.interrupted;
        report.operations.push(result);
        if interrupted {
            report.interrupted = true;
            break;
        }
        if ctx.slo_stopped.lock().is_ok_and(|s| s.is_some()) {
            let rest = not_run(workloads, report);
            if !rest.is_empty() {
                crate::say!(
                    ">> not started: {}: --slo-abort stopped the run",
                    rest.join(", ")
                );
            }
            break;
        }
        // A load that failed leaves its tables short for what follows; a
        // clean-up that failed leaves only clean-ups after it, which go on.
        if !ok && kind.is_load() && !kind.drops {
            let rest = not_run(workloads, report);
            if !rest.is_empty() {
                crate::say!(
                    ">> skipped {}: {kind} did not load the table",
                    rest.join(", ")
                );
            }
            break;
        }
    }
    Ok(records)
}

/// A search's end: its block in the summary, its picture, its verdict on
/// the run; a step that failed is the run's failed operation.
fn end_search(
    steps: &Steps<'_>,
    found: find_max::Found,
    report: &mut RunReport,
    summary: &mut Summary<'_>,
) {
    let (record, slo) = match found {
        find_max::Found::Ended { record, slo } => (*record, slo),
        find_max::Found::Failed(failed) => {
            say_why_it_failed(&failed, report.slo_judges_errors);
            report.interrupted |= failed.interrupted;
            report.operations.push(*failed);
            return;
        }
    };
    let _ = report::find_max::write_find_max(summary, &record);
    crate::say!(">> find-max: {}", report::find_max::answer_line(&record));
    if let Some(g) = &steps.plan.output.graph {
        let stem = format!(
            "ysql-bench-{}-{}-find-max",
            steps.titles.stamp, record.operation
        );
        let path = report::plot::free_path(&g.dir, &stem);
        let drawn = std::fs::create_dir_all(&g.dir)
            .map_err(|e| Error::io(format!("cannot create --graph-dir {}", g.dir.display()), e))
            .and_then(|()| {
                report::writing(|| report::find_max::draw(&record, &path, (g.width, g.height)))
            });
        match drawn {
            Ok(()) => crate::say!(">> wrote {}", path.display()),
            Err(e) => crate::say!("warning: {e}"),
        }
    }
    if let Some(slo) = &slo {
        let _ = report::slo::write_slo(summary, slo);
        if !slo.met {
            crate::say!("{}", report::slo::missed_line(slo));
        }
    }
    report.slo = slo;
    report.find_max = Some(record);
}

/// The names of the operations not run yet.
fn not_run(workloads: &[Box<dyn Workload>], report: &RunReport) -> Vec<&'static str> {
    workloads
        .iter()
        .skip(report.operations.len())
        .map(|w| w.spec().name)
        .collect()
}

/// Where the summary goes.
fn summary_stream(json_to_stdout: bool) -> &'static str {
    if json_to_stdout { "stderr" } else { "stdout" }
}

/// "cannot write the summary to stdout: Broken pipe": the OS's words
/// without its error number.
fn stream_error(e: &std::io::Error, stream: &str) -> String {
    let text = e.to_string();
    let plain = text.split(" (os error").next().unwrap_or(&text);
    format!("cannot write the summary to {stream}: {plain}")
}

/// The stream the summary goes to, as the run writes it: the first
/// failed write is kept and every later one skipped, so that a reader
/// gone away (`| head`, `| tee` killed by the same Ctrl-C) costs the
/// summary only, never the report files written after it.
struct Summary<'a> {
    inner: &'a mut (dyn Write + Send),
    name: &'static str,
    failed: Option<std::io::Error>,
}

impl<'a> Summary<'a> {
    fn new(inner: &'a mut (dyn Write + Send), name: &'static str) -> Self {
        Summary {
            inner,
            name,
            failed: None,
        }
    }

    /// The first failure, if any.
    fn finish(self) -> Option<std::io::Error> {
        self.failed
    }

    fn keep(&mut self, e: std::io::Error) -> std::io::Result<()> {
        self.failed.get_or_insert(e);
        Err(std::io::Error::other("the summary stream failed"))
    }
}

impl Write for Summary<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failed.is_some() {
            return Err(std::io::Error::other("the summary stream failed"));
        }
        match self.inner.write(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Err(e),
            Err(e) => self.keep(e).map(|()| 0),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        match self.inner.flush() {
            Ok(()) => Ok(()),
            Err(e) => self.keep(e),
        }
    }
}

/// Room for the open files a run needs: a connection per worker, and at
/// a stop as many cancel connections again, besides the runtime's own.
/// Raises the soft limit towards the hard one when it is short, and
/// refuses up front a run whose connections alone cannot fit, rather than
/// failing workers one by one with "too many open files".
// rlim_t is u64 on 64-bit Linux, and may be narrower elsewhere.
#[allow(clippy::unnecessary_cast)]
fn ensure_open_files(threads: usize) -> Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let least = threads as u64 + 64;
    let want = 2 * threads as u64 + 3 * cores + 64;
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Ok(());
    }
    let (soft, hard) = (rl.rlim_cur as u64, rl.rlim_max as u64);
    let mut limit = soft;
    if soft < want {
        rl.rlim_cur = want.min(hard) as libc::rlim_t;
        // SAFETY: setrlimit reads the struct given; raising the soft limit
        // up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) } == 0 {
            limit = want.min(hard);
        }
    }
    if limit < least {
        return Err(Error::usage(format!(
            "-t {threads} needs at least {least} open files (a connection each) but the limit is {limit}: raise it (ulimit -n {want}) or use fewer threads"
        )));
    }
    Ok(())
}

/// A failed operation's reason on stderr too: with the summary sent to a
/// file (`> results.txt`), the terminal would otherwise show only the
/// exit code. Failed units that an `--slo` errors criterion judges do
/// not fail the run (its verdict says whether they were too many): then
/// their count is a note, not an error.
fn say_why_it_failed(result: &OpResult, slo_judges_errors: bool) {
    let kind = result.spec;
    if let Some(why) = &result.failure {
        if never_started(result)
            && let (true, Some(ran)) = (result.warmup_cut, result.warmup)
        {
            // The units of the warmup ran, and are thrown away: the
            // operation started, and failed before measuring.
            let ran = crate::report::summary::human(ran);
            crate::say!("error: {kind} failed during the warmup (after {ran}): {why}");
        } else if never_started(result) {
            crate::say!("error: {kind} did not start: {why}");
        } else {
            crate::say!("error: {kind} failed: {why}");
        }
        return;
    }
    let failed = result.total.failed();
    if failed > 0 {
        let by_code: Vec<String> = result
            .total
            .errors
            .iter()
            .map(|(code, n)| format!("{code}: {n}"))
            .collect();
        let level = if slo_judges_errors { "note" } else { "error" };
        crate::say!(
            "{level}: {kind}: {failed} of its {} failed ({})",
            kind.units,
            by_code.join(", ")
        );
    }
}

/// "15.19" out of "PostgreSQL 15.19 (Debian ...) on x86_64 ...", or
/// "2.20.1.0" out of a YugabyteDB version string.
pub fn short_version(version: &str) -> String {
    if let Some(yb) = version.split("-YB-").nth(1) {
        return yb.split(['-', ' ']).next().unwrap_or(yb).to_string();
    }
    version
        .split_whitespace()
        .nth(1)
        .unwrap_or(version)
        .to_string()
}
