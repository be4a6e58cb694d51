//! One whole run: connect, check the server and the table, run the
//! operations in order, and write their summaries and reports.
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

use crate::cluster::{ClusterRecord, Gate};
use crate::config::RunPlan;
use crate::db::connect::{self, ConnTarget};
use crate::db::dialect::Flavor;
use crate::db::nodes::{self, Balance, ConnSource, Endpoint};
use crate::db::sandbox::{Sandbox, SandboxOptions};
use crate::db::schema::{self, Contents, ServerInfo};
use crate::db::server_stats;
use crate::db::server_watch::ServerWatch;
use crate::db::tls::{SslMode, Tls};
use crate::error::{Error, Result};
use crate::report::files::FileTargets;
use crate::report::{self, Pictures, text};
use crate::runner::settings::Lean;
use crate::runner::{self, RunCtx, StartBarrier, latency_log};
use crate::stats::OpResult;
use crate::stats::record::OpRecord;
use crate::workload::{TableSet, TableUse, Workload};

/// How often a set-up step looks whether the run was stopped.
const STOP_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The longest a stop during set-up waits for the server to take the
/// cancel of the set-up query.
const SETUP_CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What an interrupt during set-up says it interrupted.
const SETUP: &str = "during set-up";

mod record;
pub mod saved;

/// How many rows `--show-rowsize` samples.
pub const ROWSIZE_SAMPLE: i64 = 10_000;

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

    /// Resolves once the run is asked to stop.
    async fn stopped(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            tokio::time::sleep(STOP_POLL).await;
        }
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
        tokio::select! {
            r = query => r,
            () = self.stopped() => {
                if let Some((endpoint, tls, token)) = cancel {
                    let limit = connect::connect_timeout(&endpoint.config).min(SETUP_CANCEL_WAIT);
                    let _ = crate::db::cancel::cancel(&endpoint.config, tls, &token, limit).await;
                }
                Err(Error::Interrupted(SETUP))
            }
        }
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
}

impl RunReport {
    /// Whether every operation ran to its end without a failed unit.
    pub fn succeeded(&self) -> bool {
        !self.interrupted && self.operations.iter().all(|o| o.succeeded())
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

/// Where the lean driver ([`crate::db::wire`]) may run, now that the
/// server was asked: it speaks plain text only, so the connection must be
/// unencrypted by the user's choice (sslmode=disable) or by the server's
/// (sslmode=prefer against a server that offers no TLS), and must need
/// nothing the lean driver lacks. `--driver lean` where it cannot run is
/// refused; `--driver auto` then uses tokio-postgres.
fn lean_use(plan: &RunPlan, encryption: &str, endpoints: &[Endpoint]) -> Result<Lean> {
    if plan.run.lean == Lean::Never {
        return Ok(Lean::Never);
    }
    let why_not = match plan.tls.mode {
        SslMode::Disable => None,
        SslMode::Prefer if encryption == "none" => None,
        SslMode::Prefer => Some("the server encrypts the connection (TLS)".to_string()),
        m => Some(format!("sslmode={} asks for TLS", m.name())),
    }
    .or_else(|| {
        endpoints
            .iter()
            .find_map(|e| crate::db::wire::supports(&e.config).err())
            .map(str::to_string)
    });
    match (why_not, plan.run.lean) {
        (None, lean) => Ok(lean),
        (Some(why), Lean::Always) => Err(Error::usage(format!(
            "--driver lean speaks plain text only and {why}: use --driver auto or tokio-postgres, or sslmode=disable"
        ))),
        (Some(_), _) => Ok(Lean::Never),
    }
}

/// Runs `workloads` (built from the plan, or any other [`Workload`], as
/// tests of the runner do with units that need no table) with the plan's
/// connection, pacing and reports.
pub async fn run_workloads(
    plan: RunPlan,
    workloads: Vec<Box<dyn Workload>>,
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
    let mut _sandbox = None;
    let (mut config, passfile) = match &plan.target {
        ConnTarget::Server(s) => (s.config.clone(), s.passfile.clone()),
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
            let c = sb.config();
            _sandbox = Some(sb);
            (c, None)
        }
    };
    control.check("while the sandbox server started")?;
    config.ssl_mode(plan.tls.mode.tokio_mode());
    // Every connection of the run carries the run's own name, so that the
    // server's view of it (pg_stat_activity) can be told from any other.
    let application_name = server_stats::run_application_name(
        config.get_application_name(),
        &server_stats::run_id(started_at),
    );
    config.application_name(&application_name);
    let tls = plan.tls.connector()?;
    let target = connect::describe(&config);
    crate::say!(">> connect {target} sslmode={}", plan.tls.mode.name());
    // The whole host list, libpq's failover, each host with its password.
    let whole = Endpoint::whole(&config, passfile.as_ref());
    let pool = connect::pool(&whole, plan.run.threads, &tls)?;
    let client = control.or_stop(None, connect::get(&pool, &whole)).await?;
    // Every set-up query races the stop, and is cancelled by it.
    let on_stop = || Some((&whole, &tls, client.cancel_token()));
    let server = control.or_stop(on_stop(), schema::detect(&client)).await?;
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
    // Where the workers go is settled before the table is touched, so
    // that a --yb-discover that cannot work changes nothing.
    let endpoints = if plan.yb_discover {
        crate::say!(">> yb_servers(): the cluster's nodes (--yb-discover)");
        control
            .or_stop(
                on_stop(),
                nodes::discover(&client, &whole, passfile.as_ref()),
            )
            .await?
    } else if plan.balance == Balance::Failover {
        vec![whole.clone()]
    } else {
        nodes::split_hosts(&config, passfile.as_ref())
    };
    // Several clients: everyone meets before any table is touched; the
    // leader alone creates or checks the tables, the others wait for it.
    let gate = match &plan.cluster {
        Some(c) => {
            crate::say!(
                ">> run {}: client {} of {}, waiting for the others (at most {})",
                c.run_id,
                c.index,
                c.clients,
                humantime::format_duration(c.barrier_timeout)
            );
            // A pool of its own: the run's holds one connection per
            // worker, and the tool's own connection is in use here.
            let gate_pool = connect::pool(&whole, 3, &tls)?;
            let gate = Arc::new(
                Gate::open(c.clone(), gate_pool, whole.clone(), control.stop.clone()).await?,
            );
            gate.meet("tables").await?;
            Some(gate)
        }
        None => None,
    };
    match &gate {
        Some(g) if !g.plan.leader() => {
            control
                .or_stop(on_stop(), check_query_tables(&client, &plan, &workloads))
                .await?
        }
        _ => {
            let prepared = async {
                check_query_tables(&client, &plan, &workloads).await?;
                prepare_tables(&client, &plan, &workloads, server.flavor).await
            };
            if let Err(e) = control.or_stop(on_stop(), prepared).await {
                if let Some(g) = &gate {
                    g.fail(&e.to_string()).await;
                }
                return Err(e);
            }
            if let Some(g) = &gate {
                g.release("tables", 0.0).await?;
                crate::say!(
                    ">> run {}: all {} clients are here",
                    g.plan.run_id,
                    g.plan.clients
                );
            }
        }
    }
    let watch = if plan.server_stats {
        let started = ServerWatch::start(
            &client,
            endpoints.clone(),
            tls.clone(),
            application_name.clone(),
            plan.run.interval(),
            plan.workload.prepared,
        );
        control
            .or_stop(on_stop(), async { Ok(started.await) })
            .await?
    } else {
        None
    };
    drop(client);
    if plan.balance != Balance::Failover {
        let labels: Vec<&str> = endpoints.iter().map(|e| e.label.as_str()).collect();
        crate::say!(
            ">> balance ({}) over {} host(s): {}",
            plan.balance.name(),
            labels.len(),
            labels.join(", ")
        );
    }
    let mut plan = plan;
    plan.run.lean = lean_use(&plan, &server.encryption, &endpoints)?;
    let setup_tls = tls.clone();
    let conns = Arc::new(ConnSource::new(
        endpoints,
        plan.balance,
        tls,
        plan.run.threads,
    )?);

    let (log_sink, log_thread) = match &plan.output.latency_log {
        Some(p) => {
            let (s, t) = latency_log::create(p)?;
            (Some(s), Some(t))
        }
        None => (None, None),
    };
    let plan = Arc::new(plan);
    let ctx = RunCtx {
        settings: Arc::new(plan.run.clone()),
        pool,
        target: Arc::new(whole),
        stop: control.stop.clone(),
        interrupted: control.interrupted.clone(),
        latency_log: log_sink,
        conns,
        server: watch,
        barrier: gate.clone().map(|g| g as Arc<dyn StartBarrier>),
    };
    let mut report = RunReport {
        started_at,
        application_name,
        server,
        operations: Vec::new(),
        interrupted: false,
        cluster: None,
    };
    let stamp = humantime::format_rfc3339_seconds(started_at)
        .to_string()
        .replace([':', '-'], "")
        .trim_end_matches('Z')
        .to_string();
    let server_name = format!(
        "{} {}",
        report.server.flavor.name(),
        short_version(&report.server.version)
    );
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
    let text_options = record::text_options(&plan);
    // Each operation's record, as its text was written: the JSON's.
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
            let rest: Vec<&str> = workloads
                .iter()
                .skip(report.operations.len())
                .map(|w| w.spec().name)
                .collect();
            crate::say!(
                ">> not started: {}: the summary can no longer be written to {}",
                rest.join(", "),
                summary.name
            );
            break;
        }
        crate::say!(">> {kind}");
        if !kind.is_load() {
            warn_about_load_state(&ctx, &control, &setup_tls, workload.as_ref()).await;
        }
        // A stop while the load state was read, before the first
        // operation: nothing ran, as for a stop during the other set-up.
        if report.operations.is_empty() {
            control.check(SETUP)?;
        }
        control.started.store(true, Ordering::Relaxed);
        let mut result = runner::run_operation(&ctx, workload.as_ref(), position).await;
        if !never_started(&result) && !result.interrupted {
            run_checks(&ctx, workload.as_ref(), &mut result).await;
        }
        // A failed write is kept in `out` and the rest skipped; the
        // pictures and the report files are written all the same.
        let mut record = OpRecord::of(&result);
        record.histogram_of = workload.histogram_note();
        let pictures = plan.output.graph.as_ref().map(|options| Pictures {
            options,
            stamp: &stamp,
            server: &server_name,
        });
        let _ = report::operation(&mut summary, &text_options, pictures, &record, &result);
        records.push(record);
        say_why_it_failed(&result);
        if kind.is_load() && result.succeeded() && !result.timed_out && !result.interrupted {
            mark_loaded(&ctx, workload.as_ref(), result.total.rows).await;
        }
        let ok = result.succeeded();
        let interrupted = result.interrupted;
        report.operations.push(result);
        if interrupted {
            report.interrupted = true;
            break;
        }
        // A load that failed leaves its tables short for what follows; a
        // clean-up that failed leaves only clean-ups after it, which go on.
        if !ok && kind.is_load() && !kind.drops {
            let rest: Vec<&str> = workloads
                .iter()
                .skip(report.operations.len())
                .map(|w| w.spec().name)
                .collect();
            if !rest.is_empty() {
                crate::say!(
                    ">> skipped {}: {kind} did not load the table",
                    rest.join(", ")
                );
            }
            break;
        }
    }
    if plan.show_rowsize
        && !report.interrupted
        && summary.failed.is_none()
        && let Some(last) = workloads.last()
    {
        let line = match row_size(&ctx, last.as_ref()).await {
            Ok(Some((avg, n))) => format!("{avg:.1} bytes (average over {n} rows)"),
            Ok(None) => "empty table".to_string(),
            Err(e) => format!("not measured: {e}"),
        };
        let _ = writeln!(summary, "{:<22}: {line}", "row size");
    }
    if let Some(g) = &gate {
        g.close().await;
        report.cluster = Some(ClusterRecord {
            plan: g.plan.clone(),
            starts: g.starts(),
        });
    }
    // The workers' log writers are gone; the sink in ctx is the last one.
    drop(ctx);
    // Each report is written whatever became of the others: a latency
    // log that filled the disk must not cost the JSON.
    let mut failed = Vec::new();
    if let Some(t) = log_thread {
        match t.close() {
            Ok(()) => {
                if let Some(p) = &plan.output.latency_log {
                    crate::say!(">> wrote {}", p.display());
                }
            }
            Err(e) => failed.push(e),
        }
    }
    let _ = summary.flush();
    let stdout_failed = summary.finish();
    let run = record::run_record(&plan, &target, &report, records);
    let to = FileTargets {
        json: plan.output.json.as_deref(),
        csv: plan.output.csv.as_deref(),
    };
    failed.extend(crate::report::files::write_files(&run, to, out));
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
    // The last failure is the run's error (printed by main), any before
    // it are printed here: each once.
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

/// Whether an operation failed before its first unit was sent: its set-up
/// (the truncate, the procedure's install, copy-file's files) or every
/// worker's connection failed. It has nothing to summarise.
pub fn never_started(result: &OpResult) -> bool {
    result.failure.is_some()
        && result.total.ops == 0
        && result.total.failed() == 0
        && result.total.rows == 0
        && result.checks.is_empty()
        && result.findings.is_empty()
}

/// A failed operation's reason on stderr too: with the summary sent to a
/// file (`> results.txt`), the terminal would otherwise show only the
/// exit code.
fn say_why_it_failed(result: &OpResult) {
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
        crate::say!(
            "error: {kind}: {failed} of its {} failed ({})",
            kind.units,
            by_code.join(", ")
        );
    }
}

/// Query workloads look rows up: before anything is created or written,
/// every table that a query reads, when no load of the run fills it
/// before, must exist and, unless a load leaves it empty, hold rows
/// ([`TableSet::reads`]). Otherwise every lookup would miss for the whole
/// run and the run still end "successfully". Refused as bad usage, naming
/// the first table that is missing or empty, with this run's `-o` with
/// the loaders it lacks put first and the flags they need.
async fn check_query_tables(
    client: &tokio_postgres::Client,
    plan: &RunPlan,
    workloads: &[Box<dyn Workload>],
) -> Result<()> {
    let settings = &plan.workload;
    let mut filled: Vec<&str> = Vec::new();
    let mut checked: Vec<&str> = Vec::new();
    // The first table found wanting, and the sets that lack their load.
    let mut first: Option<(String, &'static str, bool)> = None;
    let mut unloaded: Vec<&dyn TableSet> = Vec::new();
    let mut wanting = 0;
    for w in workloads {
        let set = w.tables();
        if w.spec().is_load() {
            if w.needs_tables() {
                filled.push(set.key());
            }
            continue;
        }
        if filled.contains(&set.key()) || checked.contains(&set.key()) {
            continue;
        }
        checked.push(set.key());
        for t in set.reads(settings)? {
            let what = match schema::contents(client, &t.name).await? {
                Contents::Missing => "does not exist",
                Contents::Empty if t.holds_rows => "is empty",
                _ => continue,
            };
            wanting += 1;
            if !unloaded.iter().any(|u| u.key() == set.key()) {
                unloaded.push(set);
            }
            first.get_or_insert((
                format!("table {} {what}", t.name.quoted()),
                w.spec().name,
                t.holds_rows,
            ));
        }
    }
    let Some((table, needed_by, holds_rows)) = first else {
        return Ok(());
    };
    let mut ops: Vec<&str> = unloaded.iter().map(|s| s.loader()).collect();
    ops.extend(workloads.iter().map(|w| w.spec().name));
    let mut line = format!("-o {}", ops.join(","));
    let mut flags: Vec<String> = Vec::new();
    for f in unloaded.iter().flat_map(|s| s.load_flags(settings)) {
        if !flags.contains(&f) {
            line.push(' ');
            line.push_str(&f);
            flags.push(f);
        }
    }
    let needs = if holds_rows {
        "needs its rows"
    } else {
        "needs it"
    };
    let (more, them) = match wanting - 1 {
        0 => (String::new(), "it"),
        1 => (
            " (one more table is missing or empty too)".to_string(),
            "them",
        ),
        n => (
            format!(" ({n} more tables are missing or empty too)"),
            "them",
        ),
    };
    let check = if settings.table_name.is_some() {
        "--table-name and the database"
    } else {
        "the database"
    };
    let bounded = if plan.run.load_time.is_some() {
        " (--time bounds the load too)"
    } else {
        ""
    };
    Err(Error::usage(format!(
        "{table}, and {needed_by} {needs}{more}: load {them} first in the same run, e.g. {line}{bounded}, or check {check}"
    )))
}

/// Marks the tables as completely loaded; a failure only costs the mark,
/// so it is a warning, not the end of the run. A client of several knows
/// only its share: the tables stay marked as being loaded (a later run
/// warns), rather than marked wrongly.
async fn mark_loaded(ctx: &RunCtx, workload: &dyn Workload, rows: u64) {
    if ctx.barrier.is_some() {
        return;
    }
    let marked = async {
        let client = connect::get(&ctx.pool, &ctx.target).await?;
        workload.finish_load(&client, rows).await
    };
    if let Err(e) = marked.await {
        crate::say!("warning: the table is loaded but could not be marked so: {e}");
    }
}

async fn row_size(ctx: &RunCtx, workload: &dyn Workload) -> Result<Option<(f64, i64)>> {
    let client = connect::get(&ctx.pool, &ctx.target).await?;
    schema::average_row_size(&client, workload.table(), ROWSIZE_SAMPLE).await
}

/// The workload's consistency checks, after it ran, on a connection of
/// its own: a broken one, or one that cannot be made, fails the
/// operation.
async fn run_checks(ctx: &RunCtx, workload: &dyn Workload, result: &mut OpResult) {
    let checked = async {
        let client = connect::get(&ctx.pool, &ctx.target).await?;
        workload.checks(&client).await
    };
    match checked.await {
        Ok(checks) => {
            let broken: Vec<&str> = checks
                .iter()
                .filter(|c| !c.held)
                .map(|c| c.name.as_str())
                .collect();
            if !broken.is_empty() && result.failure.is_none() {
                result.failure = Some(format!("consistency check broken: {}", broken.join(", ")));
            }
            result.checks = checks;
        }
        Err(e) => {
            result
                .failure
                .get_or_insert(format!("the consistency checks could not run: {e}"));
        }
    }
}

/// Creates or checks each set of tables the workloads use, once, before
/// any of them runs: refusing a table that is not the tool's before
/// anything is written. Only a set that a load of the run fills is
/// created (or dropped with `--drop`); one that queries alone read was
/// checked by [`check_query_tables`] and is left as it is.
async fn prepare_tables(
    client: &tokio_postgres::Client,
    plan: &RunPlan,
    workloads: &[Box<dyn Workload>],
    flavor: Flavor,
) -> Result<()> {
    let mut done: Vec<&str> = Vec::new();
    for w in workloads.iter().filter(|w| w.needs_tables()) {
        let set = w.tables();
        if done.contains(&set.key()) {
            continue;
        }
        done.push(set.key());
        let same = || workloads.iter().filter(|o| o.tables().key() == set.key());
        let how = TableUse {
            filled: same().any(|o| o.spec().is_load() && o.needs_tables()),
            written: same().any(|o| o.writes()),
        };
        set.prepare(client, &plan.workload, flavor, how).await?;
    }
    Ok(())
}

/// Says on stderr when a query workload is about to run on tables whose
/// last load did not finish or holds fewer rows than it will look for.
/// Not knowing is no reason to stop the run.
/// A stop cancels the read (it waits behind a lock like any query).
async fn warn_about_load_state(
    ctx: &RunCtx,
    control: &Control,
    tls: &Tls,
    workload: &dyn Workload,
) {
    let state = async {
        let client = control
            .or_stop(None, connect::get(&ctx.pool, &ctx.target))
            .await?;
        let on_stop = Some((&*ctx.target, tls, client.cancel_token()));
        control
            .or_stop(on_stop, workload.check_loaded(&client))
            .await
    };
    if let Ok(Some(warning)) = state.await {
        crate::say!("warning: {warning}");
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
