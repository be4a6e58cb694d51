//! The validated run plan: everything a run needs, checked once, before any
//! connection is made.
//!
//! `RunPlan::from_cli` is the only place where flags meet each other: limits
//! that depend on two flags (rows and operations, batch size and bind
//! parameters, field length and memory) are checked here, so a bad
//! combination is refused with one line and exit 2 instead of failing
//! mid-run. Workers see plain numbers and enums, never clap types.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{
    Cli, FindMaxOverArg, HistogramScaleArg, IsolationArg, KeyDistributionArg, LoadBalanceArg,
    OnErrorArg, ProtocolArg, RateDistributionArg,
};
use crate::db::connect::ConnTarget;
use crate::db::nodes::Balance;
use crate::db::sql::{Isolation, TableName};
use crate::db::tls::{TlsPlan, TlsSettings};
use crate::db::topology::{NodeTypes, Topology, TopologyKeys};
use crate::db::wire::Protocol;
use crate::error::{Error, Result};
use crate::report::histogram::Scale;
use crate::runner::schedule::Distribution;
use crate::runner::{OnError, RunSettings};
use crate::stats::find_max::{Over, SearchPlan};
use crate::stats::slo::{Measure, Slo};
use crate::workload::kit::keys::{KeyDistribution, ZIPF_THETA};
use crate::workload::kit::limits::check_table_shape;
use crate::workload::kit::partition::ClientShare;
use crate::workload::registry::{SharedFlags, WorkloadArgs};
use crate::workload::{RunContext, Settings, Spec, Workload};

mod agree;
mod command_line;

/// The most workers a run may have: each is a connection, a task and an
/// open file; far more than one client machine drives usefully.
pub const MAX_THREADS: usize = 10_000;

/// The most units a worker may keep in flight (`--pipeline`): the server
/// runs them one after another, so more gains nothing, and the queued
/// messages and answers of many more could fill both sockets' buffers.
pub const MAX_PIPELINE: usize = 256;

/// Rows in the table (records, rows per oltp table) unless -r says.
pub const DEFAULT_ROWS: u64 = 100_000;
/// The default run time of select and update.
pub const DEFAULT_RUN_TIME: Duration = Duration::from_secs(60);

/// Everything a run needs, validated. Each layer takes its own part:
/// the workloads [`Settings`], the runner [`RunSettings`], the reports
/// [`OutputOptions`]; the rest is about connecting.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub target: ConnTarget,
    /// The workloads of `-o`, in order.
    pub operations: Vec<&'static Spec>,
    pub workload: Settings,
    pub run: RunSettings,
    pub output: OutputOptions,
    pub show_rowsize: bool,
    /// Whether --seed was given (the seed itself is in the settings).
    pub seed_given: bool,
    /// Whether --zipf-theta, --hotspot-fraction or --hotspot-ops were
    /// given (for the warning when nothing reads them).
    pub zipf_theta_given: bool,
    pub hotspot_given: bool,
    /// The command line as given, passwords taken out (empty when the
    /// plan was not made from the program's own arguments).
    pub command_line: Vec<String>,
    /// How connections spread over several hosts.
    pub balance: Balance,
    /// YugabyteDB: which of the nodes `yb_servers()` lists a connection
    /// may go to; Some exactly when the nodes are discovered.
    pub topology: Option<Topology>,
    /// `--yb-refresh`: how often `yb_servers()` is asked again.
    pub yb_refresh: Option<Duration>,
    /// How long a node that could not be reached is passed over.
    pub failed_host_delay: Duration,
    /// Ask YugabyteDB's yb_servers() for the hosts.
    pub yb_discover: bool,
    pub tls: TlsPlan,
    /// Read the server's own statistics of each operation and sample what
    /// its backends wait on (off with --no-server-stats).
    pub server_stats: bool,
    /// `--clients` above 1: this client's place in a run of several.
    pub cluster: Option<crate::cluster::ClusterPlan>,
    /// Each family's flags, for the warnings about those the run leaves
    /// unread.
    pub workload_args: WorkloadArgs,
    /// `--find-max`: the search over the last operation of `-o`.
    pub find_max: Option<SearchPlan>,
}

/// What the run writes besides the summary.
#[derive(Clone, Debug)]
pub struct OutputOptions {
    pub print_histogram: bool,
    /// Latency per statement kind in the summary.
    pub per_statement: bool,
    pub histogram_buckets: usize,
    pub histogram_scale: Scale,
    pub graph: Option<GraphOptions>,
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub latency_log: Option<PathBuf>,
    /// `--metrics-addr`: the live metrics' listener.
    pub metrics: Option<MetricsPlan>,
}

/// `--metrics-addr` and `--metrics-linger`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsPlan {
    /// HOST:PORT, as given (bound, names resolved, before connecting).
    pub addr: String,
    /// How long the endpoint may stay up after the run for a last scrape.
    pub linger: Duration,
}

/// The longest `--metrics-linger`: a finished run should not hold its pod.
pub const MAX_METRICS_LINGER: Duration = Duration::from_secs(600);

/// Checks the shape of `--metrics-addr` (HOST:PORT with a numeric port)
/// and the bound of `--metrics-linger`; whether it can be bound is known
/// when the run binds it, before any connection.
fn metrics_plan(cli: &Cli) -> Result<Option<MetricsPlan>> {
    let Some(addr) = &cli.metrics_addr else {
        return Ok(None);
    };
    let port = addr.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
    if !matches!(port, Some(Ok(_))) {
        return Err(Error::usage(format!(
            "--metrics-addr {addr:?} is not HOST:PORT: write e.g. 0.0.0.0:9470 (all addresses) or 127.0.0.1:9470"
        )));
    }
    if cli.metrics_linger > MAX_METRICS_LINGER {
        return Err(Error::usage(format!(
            "--metrics-linger is at most {} s: a finished run should not wait longer for a scrape",
            MAX_METRICS_LINGER.as_secs()
        )));
    }
    Ok(Some(MetricsPlan {
        addr: addr.clone(),
        linger: cli.metrics_linger,
    }))
}

/// The PNG pictures: the report's own options.
pub use crate::report::plot::GraphOptions;

impl RunPlan {
    /// The seed actually used (drawn at random when not given), so that a
    /// run can be repeated from its report.
    pub fn seed(&self) -> u64 {
        self.workload.seed
    }

    /// Builds the workloads of `-o` for this run; each checks the flags
    /// it cares about.
    pub fn workloads(&self) -> Result<Vec<Box<dyn Workload>>> {
        self.operations
            .iter()
            .map(|s| (s.build)(s, &self.workload))
            .collect()
    }
}

/// Refuses an output file that exists and was not written by ysql-bench
/// (`ours` recognises the tool's own files by their first bytes), one
/// whose directory does not exist, and one that cannot be written
/// ([`check_writable`]). Nothing is overwritten that the tool did not
/// create, and a report that could not be written is known before the
/// run, not after an hour of it.
///
/// A path that exists and is neither a file nor a directory (a FIFO,
/// `>(cat > f)`, `/dev/stdout`, `/dev/null`) is a stream the user
/// points the report at: it holds nothing to overwrite, and reading or
/// opening it now would wait for a writer or a reader that comes only
/// with the run, so it is taken as it is.
pub fn check_output_file(path: &std::path::Path, flag: &str, ours: fn(&str) -> bool) -> Result<()> {
    let shown = path.display();
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    if path.is_dir() {
        return Err(Error::usage(format!(
            "{flag} {shown} is a directory: give a file name"
        )));
    }
    // A parent that exists but is no directory is the OS's to name
    // (check_writable, "Not a directory").
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        return Err(Error::usage(format!(
            "{flag} {shown}: the directory {} does not exist; create it first",
            parent.display()
        )));
    }
    if path.exists() {
        let mut head = vec![0u8; 4096];
        let n = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .unwrap_or(0);
        if !ours(&String::from_utf8_lossy(&head[..n])) {
            return Err(Error::usage(format!(
                "{flag} {shown} exists and was not written by ysql-bench: choose another file name, or move it away"
            )));
        }
    }
    check_writable(path, flag)
}

/// Tries now whether `path` can be written, changing nothing: a file that
/// exists is opened to append (not truncated, its time not touched); one
/// that does not is created and removed again, so that a run that fails
/// before it writes its reports leaves no empty file behind (which the
/// next run would refuse as not the tool's). A directory that may not be
/// written to, a read-only file system, a path through a file: one line,
/// exit 2.
pub fn check_writable(path: &std::path::Path, flag: &str) -> Result<()> {
    use std::fs::OpenOptions;
    let refuse = |e: std::io::Error| {
        Error::usage(format!(
            "{flag} {} cannot be written ({e}): give a path where you may create files",
            path.display()
        ))
    };
    match OpenOptions::new().append(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(refuse)?;
            // Removing what was just created needs only the right that
            // created it; should it fail all the same, an empty file is
            // left, and the run overwrites it.
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Err(e) => Err(refuse(e)),
    }
}

/// Whether `--graph-dir` could be made and written: it exists and takes
/// files, or its nearest existing ancestor is a directory that does
/// (where the missing ones would be created). Creates nothing.
fn check_graph_dir(dir: &std::path::Path) -> Result<()> {
    let refuse = |why: &str| {
        Error::usage(format!(
            "--graph-dir {} cannot be created ({why}): give a writable directory",
            dir.display()
        ))
    };
    let mut existing = dir;
    while !existing.as_os_str().is_empty() && std::fs::symlink_metadata(existing).is_err() {
        existing = existing.parent().unwrap_or(std::path::Path::new(""));
    }
    let existing = if existing.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        existing
    };
    if !existing.is_dir() {
        return Err(refuse(&format!(
            "{} is not a directory",
            existing.display()
        )));
    }
    check_writable_dir(existing, "--graph-dir")
}

/// Tries now whether files can be created in the directory `dir` (which
/// exists), by creating one of its own name and removing it.
pub fn check_writable_dir(dir: &std::path::Path, flag: &str) -> Result<()> {
    let probe = dir.join(format!(".ysql-bench-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| {
            Error::usage(format!(
                "{flag} {}: cannot create files in it ({e}): give a directory you may write to",
                dir.display()
            ))
        })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

impl RunPlan {
    /// Validates the command line into a plan. Reads the environment for
    /// the connection when no URL is given.
    pub fn from_cli(cli: Cli) -> Result<Self> {
        let (target, url_tls) = connection(&cli)?;
        let operations = cli.workloads.operations(cli.operations.clone())?;
        // Checked here, so that a bad name is a usage error; each table
        // set applies its own default when none is given.
        let table_name = match &cli.table_name {
            Some(t) => Some(TableName::new(t)?.as_str().to_string()),
            None => None,
        };
        if cli.threads > MAX_THREADS {
            return Err(Error::usage(format!(
                "--threads {} is more than {MAX_THREADS}: each thread is a connection; use fewer, or spread the load over several client machines",
                cli.threads
            )));
        }
        let rows = cli
            .workloads
            .rows(&operations, cli.rows)?
            .unwrap_or(DEFAULT_ROWS);
        check_operations(&operations, rows)?;
        // The id range of test_table is its workloads' business (YCSB
        // records and sbtest ids have their own); the field length is
        // everyone's.
        check_table_shape(0, cli.fields_length)?;
        let run_seed = cli.seed.unwrap_or_else(rand::random::<u64>);
        let cluster = cluster_plan(&cli, run_seed, rows)?;
        // Each client of several draws its own keys and data, reproducibly
        // from the run's seed.
        let (seed, client) = match &cluster {
            Some(c) => (
                crate::workload::worker_seed(run_seed, c.index, 29),
                ClientShare {
                    index: c.index,
                    clients: c.clients,
                    layout: None,
                },
            ),
            None => (run_seed, ClientShare::default()),
        };
        let (balance, topology) = balance_plan(&cli)?;
        let tls = tls_plan(&cli, url_tls)?;
        if let ConnTarget::Server(s) = &target {
            tls.check_channel_binding(&s.config)?;
        }
        let output = output_options(&cli)?;
        let families = cli.workloads.settings(&RunContext {
            operations: &operations,
            run_seed,
            seed_given: cli.seed.is_some(),
            rate_given: cli.rate.is_some() || cli.client_rate.is_some(),
            clients: cluster.as_ref().map(|_| client),
        })?;
        let protocol = match (cli.protocol, cli.no_prepared) {
            (Some(ProtocolArg::Simple), _) | (None, true) => Protocol::Simple,
            (Some(ProtocolArg::Extended), _) => Protocol::Extended,
            (Some(ProtocolArg::Prepared), _) | (None, false) => Protocol::Prepared,
        };
        let workload = Settings {
            threads: cli.threads,
            rows,
            batch_size: cli.batch_size,
            field_len: cli.fields_length,
            prepared: protocol == Protocol::Prepared,
            protocol,
            table_name,
            tablets: cli.tablets,
            drop: cli.drop,
            force: cli.force,
            seed,
            csv_dir: cli.csv_dir.clone(),
            keys: key_distribution(&cli)?,
            zipf_theta: cli.zipf_theta,
            isolation: cli.isolation.map(isolation),
            client,
            families,
        };
        let mut run = run_settings(&cli, &workload)?;
        let find_max = find_max_plan(&cli, &operations, &mut run)?;
        let mut plan = RunPlan {
            target,
            operations,
            workload,
            run,
            output,
            show_rowsize: cli.show_rowsize,
            command_line: command_line::without_passwords(&cli.command_line),
            seed_given: cli.seed.is_some(),
            zipf_theta_given: cli.zipf_theta.is_some(),
            hotspot_given: cli.hotspot_fraction != 0.2 || cli.hotspot_ops != 0.8,
            balance,
            yb_discover: topology.is_some(),
            topology,
            yb_refresh: cli.yb_refresh,
            failed_host_delay: cli
                .failed_host_delay
                .unwrap_or(crate::db::nodes::DEFAULT_FAILED_DELAY),
            tls,
            server_stats: !cli.no_server_stats,
            cluster,
            workload_args: cli.workloads,
            find_max,
        };
        plan.check_workloads()?;
        Ok(plan)
    }

    /// Builds the workloads of the run, so that each checks the flags it
    /// cares about now, before any connection is made; then what needs
    /// them all: `--drop` before a query.
    fn check_workloads(&mut self) -> Result<()> {
        let workloads = self.workloads()?;
        self.run.slo_judges_loads = !workloads
            .iter()
            .any(|w| !w.spec().is_load() && w.facts().has_units);
        if let Some(n) = self.run.transactions
            && !workloads
                .iter()
                .any(|w| !w.spec().is_load() && w.facts().has_units)
        {
            // As pgbench refuses -t with -i: a load writes its rows.
            return Err(Error::usage(format!(
                "--transactions {n} counts the units of query workloads (select, update, script, the YCSB and TPC-C mixes, ...); this run has none: a load writes all its rows (bound it with --time)"
            )));
        }
        if self.workload.drop {
            check_drop(&workloads, &self.workload)?;
        }
        if let Some(slo) = &self.run.slo {
            let rated = self.run.rate.is_some() || self.find_max.is_some();
            check_slo(slo, &workloads, rated)?;
        }
        check_pipeline(&workloads, self.run.pipeline)
    }
}

/// The default measured window and settle of a `--find-max` step.
pub const FIND_MAX_WINDOW: Duration = Duration::from_secs(10);
pub const FIND_MAX_SETTLE: Duration = Duration::from_secs(2);

/// `--find-max`: what it searches over the last operation of `-o`, which
/// must be a query workload that `--rate` paces (over rate) or any query
/// workload (over threads); `--time` and `--warmup` become each step's
/// window and settle (10 s and 2 s unless given), `--rate` or `-t` the
/// start.
fn find_max_plan(
    cli: &Cli,
    operations: &[&'static Spec],
    run: &mut RunSettings,
) -> Result<Option<SearchPlan>> {
    if !cli.find_max {
        return Ok(None);
    }
    let Some(last) = operations.last() else {
        return Ok(None);
    };
    if last.is_load() || last.drops {
        return Err(Error::usage(format!(
            "--find-max searches over the last operation of -o, and {} is not a query workload: end -o with the workload to search (select, script, ycsb-a, ...)",
            last.name
        )));
    }
    if cli.transactions.is_some() {
        return Err(Error::usage(
            "--find-max runs steps of a time (--time, default 10s), not of --transactions: leave --transactions out",
        ));
    }
    let over = match cli.find_max_over {
        FindMaxOverArg::Rate => Over::Rate,
        FindMaxOverArg::Threads => Over::Threads,
    };
    if over == Over::Rate && !last.paced {
        return Err(Error::usage(format!(
            "--find-max over rate needs a workload that --rate paces, and {} sends one statement per thread: search over workers instead (--find-max-over threads)",
            last.name
        )));
    }
    if let Some(r) = cli.client_rate {
        return Err(Error::usage(format!(
            "--find-max sets every client's pace from the step's target (shared by threads): leave --client-rate {r} out"
        )));
    }
    if over == Over::Threads && cli.rate.is_some() {
        return Err(Error::usage(
            "--find-max-over threads searches a closed loop: leave --rate out (or search over rate)",
        ));
    }
    run.run_time = cli.time.unwrap_or(FIND_MAX_WINDOW);
    run.warmup = Some(cli.warmup.unwrap_or(FIND_MAX_SETTLE)).filter(|d| !d.is_zero());
    Ok(Some(SearchPlan {
        over,
        // --rate is the whole run's (each client takes its share).
        start: match over {
            Over::Rate => cli.rate.unwrap_or(100.0),
            Over::Threads => cli.threads as f64,
        },
        resolution: cli.find_max_resolution,
        repeats: cli.find_max_repeats,
        max_steps: cli.find_max_steps,
    }))
}

/// `--slo`: every scope names an operation of `-o` or a transaction type
/// of its workloads, every workload figure is one of theirs, and a
/// throughput against the target has a `--rate` to be against; refused
/// before any connection, as every usage error.
fn check_slo(slo: &Slo, workloads: &[Box<dyn Workload>], rated: bool) -> Result<()> {
    let ops: Vec<&str> = workloads.iter().map(|w| w.spec().name).collect();
    let types: Vec<&str> = workloads
        .iter()
        .flat_map(|w| w.facts().types.clone())
        .collect();
    let figures: Vec<String> = ops
        .iter()
        .flat_map(|o| crate::workload::registry::figure_rules(o))
        .map(|m| m.key)
        .collect();
    for c in &slo.criteria {
        if let Some(scope) = &c.scope
            && !ops.contains(&scope.as_str())
            && !types.contains(&scope.as_str())
        {
            return Err(Error::usage(format!(
                "--slo '{}': '{scope}' is neither an operation of -o ({}) nor a transaction type of its workloads ({})",
                c.text,
                ops.join(", "),
                types.join(", ")
            )));
        }
        match &c.measure {
            Measure::Figure(key)
                if c.scope.as_ref().is_some_and(|s| !ops.contains(&s.as_str())) =>
            {
                return Err(Error::usage(format!(
                    "--slo '{}': '{key}' is a figure of the whole operation, not of one transaction type: write it without the type ({}) or with the operation's name",
                    c.text,
                    c.metric_text()
                )));
            }
            Measure::Figure(key) if !figures.contains(key) => {
                let known = if figures.is_empty() {
                    "the workloads of this run keep none".to_string()
                } else {
                    format!("this run's are {}", figures.join(", "))
                };
                return Err(Error::usage(format!(
                    "--slo '{}': '{key}' is not a metric (p99, service.p99, mean, max, errors, retries, skipped, throughput) nor a workload figure ({known})",
                    c.text
                )));
            }
            Measure::Throughput { of_target: true } if !rated => {
                return Err(Error::usage(format!(
                    "--slo '{}': a throughput in % is a share of --rate's target, and the run has no --rate: give units per second instead (throughput>=5000/s)",
                    c.text
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `--pipeline` above 1: every query workload of the run must be able to
/// keep several units in flight (its facts say so); loads and clean-ups
/// send theirs one at a time (a warning says so).
fn check_pipeline(workloads: &[Box<dyn Workload>], depth: usize) -> Result<()> {
    if depth <= 1 {
        return Ok(());
    }
    let cannot: Vec<&str> = workloads
        .iter()
        .filter(|w| !w.spec().is_load() && w.facts().has_units && !w.facts().pipelines)
        .map(|w| w.spec().name)
        .collect();
    if cannot.is_empty() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "--pipeline {depth}: {} cannot keep several units in flight (a unit is more than one statement, or a transaction); pipelining applies to select, update, the YCSB mixes without read-modify-write and oltp-point-select",
        cannot.join(", ")
    )))
}

/// `--pipeline`: how deep, and what it cannot go with.
fn pipeline_depth(cli: &Cli, protocol: Protocol) -> Result<usize> {
    let n = cli.pipeline;
    if n > MAX_PIPELINE {
        return Err(Error::usage(format!(
            "--pipeline {n} is more than {MAX_PIPELINE}: the server runs a connection's queries one after another, so a deeper pipeline only queues them; give at most {MAX_PIPELINE}"
        )));
    }
    if n > 1 && cli.reconnect {
        return Err(Error::usage(format!(
            "--pipeline {n} keeps queries in flight on one connection, and --reconnect makes a new connection for each: give one of them"
        )));
    }
    if n > 1 && protocol == Protocol::Simple {
        let flag = if cli.no_prepared {
            "--no-prepared"
        } else {
            "-M simple"
        };
        return Err(Error::usage(format!(
            "--pipeline {n} needs the extended protocol (-M prepared, the default, or -M extended): the simple query protocol of {flag} has no pipeline"
        )));
    }
    Ok(n)
}

/// `--pipeline-sync`: queries per Sync, a whole number of batches in
/// the pipeline.
fn pipeline_sync(cli: &Cli) -> Result<usize> {
    let (k, n) = (cli.pipeline_sync, cli.pipeline);
    if k > 1 && n == 1 {
        return Err(Error::usage(format!(
            "--pipeline-sync {k} groups pipelined queries, and there is no pipeline: give --pipeline N as well (a multiple of {k}, e.g. --pipeline {k})"
        )));
    }
    if n % k != 0 {
        // The next depth that holds whole batches, where there is one.
        let deeper = Some(n.div_ceil(k) * k)
            .filter(|&d| d <= MAX_PIPELINE)
            .map_or(String::new(), |d| format!(", or --pipeline {d}"));
        return Err(Error::usage(format!(
            "--pipeline-sync {k} must divide --pipeline {n}, so that the pipeline holds whole batches: give e.g. --pipeline-sync {n}{deeper}"
        )));
    }
    Ok(k)
}

/// Where to connect, and the TLS settings of the URL: a sandbox, or the
/// server(s) of `-u` (or the environment), with `--connect-timeout`.
fn connection(cli: &Cli) -> Result<(ConnTarget, TlsSettings)> {
    if cli.connect_timeout.is_some_and(|d| d.is_zero()) {
        return Err(Error::usage(
            "--connect-timeout 0 would wait for nothing: give a duration such as 10s",
        ));
    }
    if cli.sandbox {
        return Ok((ConnTarget::Sandbox, TlsSettings::default()));
    }
    let (mut t, tls) = ConnTarget::resolve(&cli.url)?;
    if let (ConnTarget::Server(s), Some(d)) = (&mut t, cli.connect_timeout) {
        s.config.connect_timeout(d);
    }
    Ok((t, tls))
}

/// The TLS plan: the URL's settings with `--cacert`. Reads the CA and
/// client certificate now, so that a bad file is a usage error.
fn tls_plan(cli: &Cli, url_tls: TlsSettings) -> Result<TlsPlan> {
    let mut t = url_tls;
    if let Some(ca) = &cli.cacert {
        t.root_cert = Some(ca.clone());
    }
    let plan = TlsPlan::new(t, cli.cacert.is_some())?;
    plan.connector()?;
    Ok(plan)
}

/// The reports besides the summary, each file tried now: one that could
/// not be written is known before the run, not after it.
fn output_options(cli: &Cli) -> Result<OutputOptions> {
    if cli
        .report_interval
        .is_some_and(|d| d < Duration::from_millis(10))
    {
        return Err(Error::usage(
            "--report-interval must be at least 0.01 s: write e.g. -P 5 for every 5 seconds",
        ));
    }
    check_distinct_outputs(&[
        ("--json", cli.json.as_deref()),
        ("--csv", cli.csv.as_deref()),
        ("--html", cli.html.as_deref()),
        ("--latency-log", cli.latency_log.as_deref()),
    ])?;
    // `--json -` is stdout, as for merge.
    if let Some(p) = cli.json.as_deref().filter(|p| p.as_os_str() != "-") {
        check_output_file(p, "--json", crate::report::json::is_ours)?;
    }
    if let Some(p) = &cli.csv {
        check_output_file(p, "--csv", crate::report::csv::is_ours)?;
        // --slo writes its verdicts beside it.
        if cli.slo.is_some() {
            let beside = crate::report::slo::csv_path(p);
            check_output_file(&beside, "--csv (its .slo.csv)", crate::report::slo::is_ours)?;
        }
    }
    if let Some(p) = &cli.html {
        check_output_file(p, "--html", crate::report::html::is_ours)?;
    }
    if let Some(p) = &cli.latency_log {
        check_output_file(p, "--latency-log", |head: &str| {
            // Also a log of a version before the `type` column.
            head.starts_with(crate::runner::latency_log::OLD_HEADER)
        })?;
    }
    Ok(OutputOptions {
        print_histogram: cli.print_histogram,
        per_statement: cli.per_statement,
        histogram_buckets: cli.histogram_buckets,
        histogram_scale: match cli.histogram_scale {
            HistogramScaleArg::Linear => Scale::Linear,
            HistogramScaleArg::Log => Scale::Log,
        },
        graph: graph_options(cli)?,
        json: cli.json.clone(),
        csv: cli.csv.clone(),
        html: cli.html.clone(),
        latency_log: cli.latency_log.clone(),
        metrics: metrics_plan(cli)?,
    })
}

/// `--graph`: the pictures' directory, tried, not made: it is created
/// with the first picture, so that a run that draws none leaves none.
fn graph_options(cli: &Cli) -> Result<Option<GraphOptions>> {
    if !cli.graph {
        return Ok(None);
    }
    if cli.graph_dir.exists() && !cli.graph_dir.is_dir() {
        return Err(Error::usage(format!(
            "--graph-dir {} is a file: give a directory (it is created if missing)",
            cli.graph_dir.display()
        )));
    }
    check_graph_dir(&cli.graph_dir)?;
    Ok(Some(GraphOptions {
        dir: cli.graph_dir.clone(),
        width: cli.graph_size.0,
        height: cli.graph_size.1,
        log_y: cli.graph_log_y,
        interval_given: cli.report_interval.is_some(),
    }))
}

/// `--key-distribution`, with `--zipf-theta` and the hotspot's shares.
fn key_distribution(cli: &Cli) -> Result<Option<KeyDistribution>> {
    let theta = cli.zipf_theta.unwrap_or(ZIPF_THETA);
    let keys = cli.key_distribution.map(|k| match k {
        KeyDistributionArg::Uniform => KeyDistribution::Uniform,
        KeyDistributionArg::Zipfian => KeyDistribution::Zipfian { theta },
        KeyDistributionArg::Latest => KeyDistribution::Latest { theta },
        KeyDistributionArg::Hotspot => KeyDistribution::Hotspot {
            fraction: cli.hotspot_fraction,
            ops: cli.hotspot_ops,
        },
        KeyDistributionArg::Sequential => KeyDistribution::Sequential,
    });
    if let Some(k) = &keys {
        k.validate().map_err(Error::usage)?;
    }
    Ok(keys)
}

fn isolation(i: IsolationArg) -> Isolation {
    match i {
        IsolationArg::ReadCommitted => Isolation::ReadCommitted,
        IsolationArg::RepeatableRead => Isolation::RepeatableRead,
        IsolationArg::Serializable => Isolation::Serializable,
    }
}

/// The runner's part: how long, how fast, what to retry, which driver.
fn run_settings(cli: &Cli, w: &Settings) -> Result<RunSettings> {
    let run_time = cli.time.or(cli.runtime_select).unwrap_or(DEFAULT_RUN_TIME);
    if run_time.is_zero() {
        return Err(Error::usage(
            "--time 0 would run nothing: give a duration such as 10s or 5m",
        ));
    }
    if let (Some(n), Some(0)) = (cli.transactions, cli.max_tries) {
        // As pgbench: tries without limit need a time to end them.
        return Err(Error::usage(format!(
            "--max-tries 0 tries a unit again until the end of --time, and --transactions {n} gives the run no end by time: give --max-tries a number"
        )));
    }
    Ok(RunSettings {
        threads: cli.threads,
        rows: w.rows,
        seed: w.seed,
        run_time,
        // The original tool's --runtime-select is about select and
        // update only: an old command line must still load every row.
        load_time: cli.time,
        transactions: cli.transactions,
        warmup: cli.warmup.filter(|d| !d.is_zero()),
        // --rate is the whole run's: each client takes its share, in
        // proportion to its threads once the clients met (`settle`);
        // --client-rate is this client's own.
        rate: cli
            .client_rate
            .or(cli.rate.map(|r| r / w.client.clients as f64)),
        rate_distribution: match cli.rate_distribution {
            RateDistributionArg::Fixed => Distribution::Fixed,
            RateDistributionArg::Poisson => Distribution::Poisson,
        },
        latency_limit: cli.latency_limit,
        report_interval: cli.report_interval,
        max_tries: cli.max_tries,
        retry_on: cli.retry_on.clone(),
        isolation: w.isolation,
        on_error: cli.on_error.map(|o| match o {
            OnErrorArg::Stop => OnError::Stop,
            OnErrorArg::Continue => OnError::Continue,
        }),
        statement_timeout: cli.statement_timeout.filter(|d| !d.is_zero()),
        nontransactional: cli.nontransactional,
        reconnect: cli.reconnect,
        pictures: cli.graph,
        pipeline: pipeline_depth(cli, w.protocol)?,
        pipeline_sync: pipeline_sync(cli)?,
        slo: cli.slo.clone().map(std::sync::Arc::new),
        slo_abort: cli.slo_abort,
        // Set once the workloads are known (`check_workloads`).
        slo_judges_loads: true,
    })
}

impl RunPlan {
    /// Flags given that do not apply to any operation of the run, each as
    /// a warning line: the run goes on, but the user is not left to think
    /// they took effect.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.run.warmup.is_some() && self.operations.iter().all(|o| o.is_load()) {
            w.push(
                "warning: --warmup applies to query workloads (select, update, the YCSB mixes); the loads of this run ignore it"
                    .to_string(),
            );
        }
        let unpaced: Vec<&str> = self
            .operations
            .iter()
            .filter(|o| !o.paced)
            .map(|o| o.name)
            .collect();
        let unpaced = unpaced.join(" and ");
        if self.run.rate.is_some() && !unpaced.is_empty() {
            w.push(format!(
                "warning: --rate paces queries and the batches of insert and copy-mem; it does not apply to {unpaced} (one statement per thread)"
            ));
        }
        w.extend(self.workload_args.warnings(
            &self.operations,
            &self.workload,
            SharedFlags {
                zipf_theta_given: self.zipf_theta_given,
                hotspot_given: self.hotspot_given,
            },
        ));
        if let ConnTarget::Server(s) = &self.target {
            w.extend(s.warnings());
        }
        let loads: Vec<&str> = self
            .operations
            .iter()
            .filter(|o| o.is_load())
            .map(|o| o.name)
            .collect();
        if self.run.pipeline > 1 && !loads.is_empty() {
            let verb = if loads.len() == 1 { "sends" } else { "send" };
            w.push(format!(
                "warning: --pipeline keeps queries in flight; {} {verb} one batch at a time",
                loads.join(" and ")
            ));
        }
        let cleanups_only = self.operations.iter().all(|o| o.drops);
        if cleanups_only && self.workload.drop {
            w.push(
                "warning: --drop applies to loads; a clean-up drops what ysql-bench created without it"
                    .to_string(),
            );
        }
        if self.show_rowsize && self.operations.last().is_some_and(|o| o.drops) {
            w.push(format!(
                "warning: --show-rowsize measures the last operation's table, and {} drops it",
                self.operations.last().map_or("", |o| o.name)
            ));
        }
        if self.run.latency_limit.is_some() && !unpaced.is_empty() {
            w.push(format!(
                "warning: --latency-limit counts late queries and batches of insert and copy-mem; it does not apply to {unpaced} (one statement per thread), which are never counted late"
            ));
        }
        w
    }
}

/// `--clients`, `--client-index`, `--run-id`: None for a run of one
/// client. The default run id hashes the operations and the table name,
/// which every client must give alike, and nothing else: clients whose
/// other flags differ still meet, and the barrier names the difference
/// (the terms of [`agree::terms`]) instead of each waiting alone.
fn cluster_plan(
    cli: &Cli,
    run_seed: u64,
    rows: u64,
) -> Result<Option<crate::cluster::ClusterPlan>> {
    if cli.clients <= 1 {
        if cli.client_index.is_some_and(|i| i > 0) {
            return Err(Error::usage(format!(
                "--client-index {} needs --clients above it: give --clients W with W the number of clients",
                cli.client_index.unwrap_or(0)
            )));
        }
        if let Some(r) = cli.client_rate {
            return Err(Error::usage(format!(
                "--client-rate {r} is one client's pace in a run of several (--clients): for a run of one give --rate {r}"
            )));
        }
        return Ok(None);
    }
    let Some(index) = cli.client_index else {
        return Err(Error::usage(format!(
            "--clients {} needs --client-index (0 to {}) on each client, or $JOB_COMPLETION_INDEX as a Kubernetes Indexed Job sets it",
            cli.clients,
            cli.clients - 1
        )));
    };
    if index >= cli.clients {
        return Err(Error::usage(format!(
            "--client-index {index} is not below --clients {}: give 0 to {}",
            cli.clients,
            cli.clients - 1
        )));
    }
    if cli.sandbox {
        return Err(Error::usage(
            "--clients runs several clients against one server; --sandbox gives each its own: connect them with -u to a shared server",
        ));
    }
    if cli.clients > 10_000 {
        return Err(Error::usage("--clients above 10000 is not supported"));
    }
    let run_id = match &cli.run_id {
        Some(r) => r.clone(),
        None => {
            let ops: Vec<&str> = cli.operations.iter().map(|o| o.name).collect();
            crate::cluster::default_run_id(&format!("{}|{:?}", ops.join(","), cli.table_name))
        }
    };
    Ok(Some(crate::cluster::ClusterPlan {
        clients: cli.clients,
        index,
        run_id,
        barrier_timeout: cli.barrier_timeout,
        run_seed,
        me: crate::cluster::Member {
            index,
            threads: cli.threads,
            client_rate: cli.client_rate,
            host: host_name(),
            version: crate::cli::VERSION.to_string(),
        },
        terms: agree::terms(cli, rows),
        whole_rate: cli.rate,
        threads_of: Vec::new(),
    }))
}

/// This machine's name, for the other clients' messages.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "an unnamed host".to_string())
}

impl RunPlan {
    /// Several clients, once they met: this client's share of the ids
    /// follows the threads every client brought, and so does its share of
    /// `--rate` (unless it paces at its own `--client-rate`). The
    /// workloads must be built again from the plan afterwards.
    pub fn settle(&mut self, members: &[crate::cluster::Member]) {
        let Some(c) = self.cluster.as_mut() else {
            return;
        };
        let threads: Vec<usize> = members.iter().map(|m| m.threads).collect();
        c.threads_of = threads.clone();
        self.workload.client = ClientShare::of_threads(c.index, &threads);
        if c.me.client_rate.is_none()
            && let Some(whole) = c.whole_rate
        {
            let all: usize = threads.iter().sum();
            self.run.rate = Some(whole * c.me.threads as f64 / all.max(1) as f64);
        }
    }
}

/// What the operations need of `--rows`: rows to load or to look up (a
/// load of 0 rows would end "successfully" with a summary of zeros), and
/// tables that no clean-up dropped before.
fn check_operations(operations: &[&'static Spec], rows: u64) -> Result<()> {
    if operations.is_empty() {
        return Err(Error::usage(
            "no operation to run: give some with -o, e.g. -o copy-mem,select",
        ));
    }
    if rows == 0 {
        let first = operations[0];
        let what = if first.is_load() {
            format!("gives {first} nothing to load")
        } else {
            format!("leaves {first} nothing to read")
        };
        return Err(Error::usage(format!(
            "--rows 0 {what}: give the number of rows in the table, e.g. -r 100000"
        )));
    }
    if let Some(i) = operations.iter().position(|o| o.drops)
        && let Some(after) = operations[i..].iter().find(|o| !o.drops)
    {
        return Err(Error::usage(format!(
            "{after} comes after {}, which drops tables: put the clean-ups last (--drop makes a load start on new tables)",
            operations[i]
        )));
    }
    Ok(())
}

/// `--drop` drops the tables that the run's loads fill, before the first
/// operation: a query that reads them before any load of the run would
/// read nothing. So would a query at the start on tables the run does
/// not load (it would need them dropped and refilled to mean anything).
/// Scripts of the user's read tables the tool does not know: not checked.
fn check_drop(workloads: &[Box<dyn Workload>], settings: &Settings) -> Result<()> {
    for (i, w) in workloads.iter().enumerate() {
        let set = w.tables();
        // A load that fills this query's tables.
        let fills = |o: &dyn Workload| {
            o.spec().is_load() && o.facts().needs_tables && o.tables().key() == set.key()
        };
        if w.spec().is_load()
            || set.reads(settings)?.is_empty()
            || workloads[..i].iter().any(|o| fills(o.as_ref()))
            || (i > 0 && !workloads[i + 1..].iter().any(|o| fills(o.as_ref())))
        {
            continue;
        }
        let mut ops: Vec<&str> = workloads.iter().map(|o| o.spec().name).collect();
        ops.insert(i, set.loader());
        let q = w.spec();
        return Err(Error::usage(format!(
            "--drop empties the tables before {q}, which reads them: put a load first (e.g. -o {}) or leave --drop out",
            ops.join(",")
        )));
    }
    Ok(())
}

/// Two reports written to one file would leave only the last: refused.
/// The same file under two spellings (`./a.json`, `a.json`) counts too.
pub fn check_distinct_outputs(outputs: &[(&str, Option<&std::path::Path>)]) -> Result<()> {
    let key = |p: &std::path::Path| {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        abs.components().collect::<PathBuf>()
    };
    let given: Vec<(&str, PathBuf)> = outputs
        .iter()
        .filter_map(|(flag, p)| p.map(|p| (*flag, key(p))))
        .collect();
    for (i, (a, pa)) in given.iter().enumerate() {
        if let Some((b, _)) = given[i + 1..].iter().find(|(_, pb)| pb == pa) {
            return Err(Error::usage(format!(
                "{a} and {b} name the same file {}: give each report its own file",
                pa.display()
            )));
        }
    }
    Ok(())
}

/// `--load-balance`, `--yb-discover` and the YugabyteDB topology flags:
/// how connections spread, and over which discovered nodes. The smart
/// drivers' node-type modes, `--topology-keys` and `--yb-refresh` need
/// `yb_servers()`, so they imply discovery; `any` over a plain host
/// list is round-robin.
fn balance_plan(cli: &Cli) -> Result<(Balance, Option<Topology>)> {
    use LoadBalanceArg as L;
    let types = match cli.load_balance {
        Some(L::OnlyPrimary) => Some(NodeTypes::OnlyPrimary),
        Some(L::OnlyRr) => Some(NodeTypes::OnlyRr),
        Some(L::PreferPrimary) => Some(NodeTypes::PreferPrimary),
        Some(L::PreferRr) => Some(NodeTypes::PreferRr),
        _ => None,
    };
    let keys = cli
        .topology_keys
        .as_deref()
        .map(TopologyKeys::parse)
        .transpose()
        .map_err(Error::usage)?;
    if cli
        .yb_refresh
        .is_some_and(|d| d < Duration::from_millis(100))
    {
        return Err(Error::usage(
            "--yb-refresh must be at least 100ms (e.g. 5s): yb_servers() is asked once per interval",
        ));
    }
    let discover = cli.yb_discover || types.is_some() || keys.is_some() || cli.yb_refresh.is_some();
    let balance = match cli.load_balance {
        Some(L::Random) => Balance::Random,
        Some(_) => Balance::RoundRobin,
        None if discover => Balance::RoundRobin,
        None => Balance::Failover,
    };
    let topology = discover.then(|| Topology {
        types: match cli.load_balance {
            Some(L::Any) => NodeTypes::Any,
            _ => types.unwrap_or_default(),
        },
        keys,
        keys_only: cli.topology_keys_only,
    });
    Ok((balance, topology))
}

/// The run plan of a command line, for unit tests of the flags' checks
/// here and in the workload families.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use clap::Parser;

    /// The plan of `ysql-bench --sandbox ARGS`.
    pub fn plan(args: &[&str]) -> Result<RunPlan> {
        let mut all = vec!["ysql-bench", "--sandbox"];
        all.extend_from_slice(args);
        RunPlan::from_cli(Cli::try_parse_from(all).expect("clap accepts the flags"))
    }

    /// The usage error of `ysql-bench --sandbox ARGS`; panics on anything else.
    pub fn usage_message(args: &[&str]) -> String {
        match plan(args) {
            Err(Error::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {

    fn balance_of(args: &[&str]) -> Result<(Balance, Option<Topology>)> {
        use clap::Parser;
        let mut all = vec!["ysql-bench", "-u", "host=db", "-o", "select"];
        all.extend_from_slice(args);
        balance_plan(&Cli::try_parse_from(all).expect("clap accepts the flags"))
    }

    #[test]
    fn topology_flags_imply_discovery_and_any_over_a_host_list_is_round_robin() {
        assert_eq!(balance_of(&[]).unwrap(), (Balance::Failover, None));
        assert_eq!(
            balance_of(&["--load-balance", "any"]).unwrap(),
            (Balance::RoundRobin, None)
        );
        assert_eq!(
            balance_of(&["--load-balance", "true"]).unwrap(),
            (Balance::RoundRobin, None)
        );
        let (b, t) = balance_of(&["--topology-keys", "aws.r1.*:2,aws.r2.z"]).unwrap();
        assert_eq!(b, Balance::RoundRobin);
        let t = t.expect("discovery");
        assert_eq!(t.types, NodeTypes::OnlyPrimary);
        assert_eq!(t.describe(), "only-primary, topology aws.r2.z:1,aws.r1.*:2");
        let (b, t) = balance_of(&["--load-balance", "random", "--yb-refresh", "1s"]).unwrap();
        assert_eq!(
            (b, t.map(|t| t.types)),
            (Balance::Random, Some(NodeTypes::OnlyPrimary))
        );
        let (_, t) = balance_of(&["--yb-discover", "--load-balance", "any"]).unwrap();
        assert_eq!(t.map(|t| t.types), Some(NodeTypes::Any));
        let (_, t) = balance_of(&["--load-balance", "prefer-rr"]).unwrap();
        assert_eq!(t.map(|t| t.types), Some(NodeTypes::PreferRr));
        let e = balance_of(&["--yb-refresh", "10ms"]).unwrap_err();
        assert!(e.to_string().contains("at least 100ms"), "{e}");
        let e = balance_of(&["--topology-keys", "aws"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
    use super::testing::{plan, usage_message};
    use super::*;
    use clap::Parser;

    /// Client `index` of a run of several with `args`, settled with
    /// clients of `threads` threads.
    fn settled(index: usize, threads: &[usize], args: &[&str]) -> RunPlan {
        let i = index.to_string();
        let w = threads.len().to_string();
        let t = threads[index].to_string();
        let mut all = vec!["ysql-bench", "-u", "host=127.0.0.1", "--clients", &w];
        all.extend(["--client-index", &i, "-t", &t, "-o", "copy-mem,select"]);
        all.extend_from_slice(args);
        let mut p = RunPlan::from_cli(Cli::try_parse_from(all).expect("clap accepts the flags"))
            .expect("a plan");
        let members: Vec<crate::cluster::Member> = threads
            .iter()
            .enumerate()
            .map(|(k, &t)| crate::cluster::Member {
                index: k,
                threads: t,
                client_rate: None,
                host: "h".to_string(),
                version: "v".to_string(),
            })
            .collect();
        p.settle(&members);
        p
    }

    #[test]
    fn rate_is_split_by_threads_unless_a_client_gives_its_own() {
        let threads = [1, 3, 6];
        let rates: Vec<Option<f64>> = (0..3)
            .map(|i| settled(i, &threads, &["--rate", "1000"]).run.rate)
            .collect();
        assert_eq!(rates, [Some(100.0), Some(300.0), Some(600.0)]);
        let own = settled(1, &threads, &["--client-rate", "42"]);
        assert_eq!(own.run.rate, Some(42.0));
        assert_eq!(settled(2, &threads, &[]).run.rate, None);
        // Kept for the shares of a search's targets.
        let third = settled(2, &threads, &[]);
        assert_eq!(third.cluster.map(|c| c.threads_of), Some(vec![1, 3, 6]));
        let search = Cli::try_parse_from([
            "ysql-bench",
            "-u",
            "host=127.0.0.1",
            "--clients",
            "2",
            "--client-index",
            "0",
            "-o",
            "select",
            "--find-max",
            "--slo",
            "p99<1s",
            "--client-rate",
            "5",
        ])
        .expect("clap accepts the flags");
        match RunPlan::from_cli(search) {
            Err(Error::Usage(m)) => assert!(m.contains("leave --client-rate 5 out"), "{m}"),
            other => panic!("expected a usage error, got {other:?}"),
        }
        // The share of the ids follows the threads too.
        let third = settled(2, &threads, &["-r", "1000"]);
        assert_eq!(third.workload.share(1000, 0).start, 400);
        assert_eq!(third.workload.share(1000, 5).end, 1000);
        let m = usage_message(&["-o", "select", "--client-rate", "5"]);
        assert!(m.contains("for a run of one give --rate 5"), "{m}");
    }

    #[test]
    fn pipeline_is_refused_where_units_cannot_be_in_flight_together() {
        let m = usage_message(&["-o", "ycsb-f,oltp-read-write,select", "--pipeline", "8"]);
        assert!(
            m.contains("--pipeline 8: ycsb-f, oltp-read-write cannot keep several units in flight"),
            "{m}"
        );
        for (args, expect) in [
            (
                &["-o", "select", "--pipeline", "8", "-C"][..],
                "--reconnect",
            ),
            (
                &["-o", "select", "--pipeline", "8", "--no-prepared"][..],
                "--no-prepared has no pipeline",
            ),
            (
                &["-o", "update", "--pipeline", "2", "-M", "simple"][..],
                "-M simple has no pipeline",
            ),
            (&["-o", "select", "--pipeline", "257"][..], "more than 256"),
            (&["-o", "tpcc", "--pipeline", "2"][..], "tpcc cannot"),
        ] {
            let m = usage_message(args);
            assert!(m.contains(expect), "{args:?}: {m}");
        }
        // --pipeline-sync: the depth it suggests is one --pipeline takes.
        let m = usage_message(&["-o", "select", "--pipeline", "8", "--pipeline-sync", "3"]);
        assert!(
            m.ends_with("give e.g. --pipeline-sync 8, or --pipeline 9"),
            "{m}"
        );
        for args in [
            &["-o", "select", "--pipeline", "4", "--pipeline-sync", "300"][..],
            &["-o", "select", "--pipeline", "256", "--pipeline-sync", "3"][..],
        ] {
            let m = usage_message(args);
            assert!(m.contains("give e.g. --pipeline-sync"), "{args:?}: {m}");
            assert!(!m.contains("or --pipeline"), "{args:?}: {m}");
        }
        // 1 is sending each unit alone: fine for every workload.
        assert!(plan(&["-o", "ycsb-f", "--pipeline", "1", "-C"]).is_ok());
        for ok in [
            &["-o", "select,update", "--pipeline", "8", "-M", "extended"][..],
            &[
                "-o",
                "ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e",
                "--pipeline",
                "8",
            ],
            &["-o", "oltp-point-select", "--pipeline", "8"],
            &["-o", "oltp-update-index", "--skip-trx", "--pipeline", "8"],
        ] {
            let p = plan(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
            assert_eq!(p.run.pipeline, 8, "{ok:?}");
        }
        // A load before the queries sends its batches one at a time, and
        // says so.
        let w = plan(&["-o", "copy-mem,select", "--pipeline", "8"])
            .unwrap()
            .warnings()
            .join("\n");
        assert!(
            w.contains("--pipeline keeps queries in flight; copy-mem sends one batch at a time"),
            "{w}"
        );
    }

    #[test]
    fn clean_ups_go_last() {
        assert!(
            usage_message(&["-o", "cleanup,copy-mem"]).contains(
                "copy-mem comes after cleanup, which drops tables: put the clean-ups last"
            )
        );
        assert!(usage_message(&["-o", "tpcc-load,tpcc-cleanup,tpcc"]).contains("tpcc comes after"));
        assert!(plan(&["-o", "copy-mem,select,ycsb-cleanup,table-cleanup,cleanup"]).is_ok());
    }

    #[test]
    fn flags_a_clean_up_does_not_read_are_warned_about() {
        let w = plan(&["-o", "cleanup", "--force", "--drop", "--show-rowsize"])
            .unwrap()
            .warnings()
            .join("\n");
        assert!(w.contains("--force does not make cleanup drop"), "{w}");
        assert!(w.contains("--drop applies to loads"), "{w}");
        assert!(
            w.contains("--show-rowsize measures the last operation's table, and cleanup drops it"),
            "{w}"
        );
        // A family's clean-up does read --force.
        let w = plan(&["-o", "pgbench-cleanup", "--force"])
            .unwrap()
            .warnings();
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn bad_table_names_are_refused() {
        assert!(usage_message(&["-o", "insert", "--table-name", ""]).contains("empty"));
        let long = "x".repeat(64);
        assert!(usage_message(&["-o", "insert", "--table-name", &long]).contains("63"));
    }

    #[test]
    fn combinations_are_checked_before_running() {
        assert!(usage_message(&["-o", "select", "-r", "0"]).contains("--rows 0"));
        assert!(usage_message(&["-o", "insert", "-b", "20000"]).contains("13107"));
        assert!(plan(&["-o", "insert", "-b", "20000", "--no-prepared"]).is_ok());
        assert!(plan(&["-o", "copy-mem", "-b", "20000"]).is_ok());
        assert!(usage_message(&["-o", "select", "--time", "0"]).contains("--time 0"));
        assert!(usage_message(&["-o", "insert", "-r", "3000000000"]).contains("int"));
        assert!(usage_message(&["-o", "insert", "-f", "100000000"]).contains("too large"));
        assert!(usage_message(&["-o", "insert", "-f", "1000000", "-b", "1000"]).contains("MiB"));
    }

    #[test]
    fn run_time_comes_from_time_or_minutes() {
        assert_eq!(
            plan(&["-o", "select"]).unwrap().run.run_time,
            DEFAULT_RUN_TIME
        );
        assert_eq!(
            plan(&["-o", "select", "--time", "5s"])
                .unwrap()
                .run
                .run_time,
            Duration::from_secs(5)
        );
        assert_eq!(
            plan(&["-o", "select", "--runtime-select", "2"])
                .unwrap()
                .run
                .run_time,
            Duration::from_secs(120)
        );
        // Only --time bounds a load; the original tool's flag never did.
        let p = plan(&["-o", "copy-mem,select", "--runtime-select", "1"]).unwrap();
        assert_eq!(p.run.load_time, None);
        let p = plan(&["-o", "copy-mem,select", "--time", "1m"]).unwrap();
        assert_eq!(p.run.load_time, Some(Duration::from_secs(60)));
    }

    #[test]
    fn flags_that_apply_to_no_operation_are_warned_about() {
        let w = plan(&["-o", "copy-mem", "--warmup", "5s"])
            .unwrap()
            .warnings();
        assert!(w[0].contains("--warmup"), "{w:?}");
        assert!(
            plan(&["-o", "copy-mem,select", "--warmup", "5s"])
                .unwrap()
                .warnings()
                .is_empty()
        );
        let w = plan(&["-o", "procedure,copy-file,select", "--rate", "5"])
            .unwrap()
            .warnings();
        assert!(w[0].contains("procedure and copy-file"), "{w:?}");
        assert!(
            w[0].contains(
                "it does not apply to procedure and copy-file (one statement per thread)"
            ),
            "{w:?}"
        );
        assert!(
            plan(&["-o", "insert,update", "--rate", "5"])
                .unwrap()
                .warnings()
                .is_empty()
        );
    }

    /// Issue 17: `-r 0` with a load ran, loaded nothing and exited 0 with
    /// a summary of zeros.
    #[test]
    fn rows_0_with_a_load_is_refused() {
        for ops in [
            "insert",
            "copy-mem",
            "copy-file",
            "procedure",
            "copy-mem,select",
        ] {
            let e = usage_message(&["-o", ops, "-r", "0"]);
            assert!(e.contains("--rows 0 gives"), "{ops}: {e}");
            assert!(e.contains("nothing to load"), "{ops}: {e}");
        }
        assert!(plan(&["-o", "insert", "-r", "1"]).is_ok());
    }

    /// `--drop` before a query would empty the table the query reads.
    #[test]
    fn drop_before_a_query_is_refused() {
        let e = usage_message(&["-o", "select,copy-mem", "--drop"]);
        assert!(e.contains("-o copy-mem,select"), "{e}");
        assert!(plan(&["-o", "copy-mem,select", "--drop"]).is_ok());
        // Issue 22: per set of tables, not only for the first operation.
        let e = usage_message(&["-o", "copy-mem,oltp-point-select,oltp-prepare", "--drop"]);
        assert!(
            e.contains("before oltp-point-select, which reads them"),
            "{e}"
        );
        assert!(
            e.contains("-o copy-mem,oltp-prepare,oltp-point-select,oltp-prepare"),
            "{e}"
        );
        let e = usage_message(&["-o", "tpcc-check", "--drop"]);
        assert!(e.contains("-o tpcc-load,tpcc-check"), "{e}");
        // Tables no load of the run fills are not dropped: nothing to
        // refuse.
        let p = plan(&["-o", "copy-mem,oltp-point-select", "--drop"]).unwrap();
        assert!(p.warnings().is_empty(), "{:?}", p.warnings());
        // A script of the user's reads what the tool does not know.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s.sql");
        std::fs::write(&script, "select 1;\n").unwrap();
        let p = plan(&["--script", script.to_str().unwrap(), "--drop"]).unwrap();
        let w = p.warnings();
        assert!(
            w.iter()
                .any(|w| w.starts_with("warning: --drop applies to")),
            "{w:?}"
        );
    }

    /// Issue 17: --latency-limit counted procedure's and copy-file's one
    /// statement per thread as late ("late: 2 of 2 calls") without a word.
    #[test]
    fn latency_limit_on_one_statement_per_thread_is_warned_about() {
        let w = plan(&["-o", "procedure,select", "--latency-limit", "5"])
            .unwrap()
            .warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("warning: --latency-limit"), "{w:?}");
        assert!(
            w[0].contains("it does not apply to procedure (one statement per thread)"),
            "{w:?}"
        );
        assert!(
            plan(&["-o", "insert,update", "--latency-limit", "5"])
                .unwrap()
                .warnings()
                .is_empty()
        );
    }

    #[test]
    fn two_reports_may_not_share_a_file() {
        let e = usage_message(&["-o", "select", "--json", "r.out", "--csv", "./r.out"]);
        assert!(e.contains("--json and --csv"), "{e}");
        let e = usage_message(&["-o", "select", "--csv", "r.out", "--latency-log", "r.out"]);
        assert!(e.contains("same file"), "{e}");
    }

    #[test]
    fn output_files_not_written_by_the_tool_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("notes.json");
        std::fs::write(&precious, "my own notes").unwrap();
        let p = precious.to_str().unwrap();
        assert!(
            usage_message(&["-o", "insert", "--json", p]).contains("not written by ysql-bench")
        );
        let ours = dir.path().join("run.json");
        std::fs::write(&ours, "{\n  \"tool\": \"ysql-bench\",\n").unwrap();
        assert!(plan(&["-o", "insert", "--json", ours.to_str().unwrap()]).is_ok());
        let nodir = dir.path().join("missing/run.csv");
        assert!(
            usage_message(&["-o", "insert", "--csv", nodir.to_str().unwrap()])
                .contains("does not exist")
        );
        let fresh = dir.path().join("new.csv");
        assert!(plan(&["-o", "insert", "--csv", fresh.to_str().unwrap()]).is_ok());
    }

    /// Issue 22: an output that could not be written was found only
    /// after the run. The probe changes nothing: an existing report keeps
    /// its bytes and its time, a new one is not left behind empty.
    #[test]
    fn outputs_are_tried_for_writing_without_changing_anything() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("run.json");
        let body = "{\n  \"tool\": \"ysql-bench\",\n  \"runs\": 1\n}\n";
        std::fs::write(&ours, body).unwrap();
        let before = std::fs::metadata(&ours).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(plan(&["-o", "insert", "--json", ours.to_str().unwrap()]).is_ok());
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), body);
        assert_eq!(
            std::fs::metadata(&ours).unwrap().modified().unwrap(),
            before
        );

        let fresh = dir.path().join("new.csv");
        let log = dir.path().join("units.log");
        let graphs = dir.path().join("graphs");
        assert!(
            plan(&[
                "-o",
                "insert",
                "--csv",
                fresh.to_str().unwrap(),
                "--latency-log",
                log.to_str().unwrap(),
                "--graph",
                "--graph-dir",
                graphs.to_str().unwrap(),
            ])
            .is_ok()
        );
        assert!(!fresh.exists() && !log.exists());
        // Not even the directory: it is made with the first picture.
        assert!(!graphs.exists());

        // A path through a regular file: the OS's own word for it.
        let afile = dir.path().join("afile");
        std::fs::write(&afile, "").unwrap();
        for flag in ["--json", "--csv", "--latency-log"] {
            let p = afile.join("x.out");
            let e = usage_message(&["-o", "insert", flag, p.to_str().unwrap()]);
            assert!(
                e.starts_with(&format!("{flag} {} cannot be written (", p.display()))
                    && e.contains("os error 20"),
                "{e}"
            );
        }
        assert!(!afile.join("x.out").exists());
        assert_eq!(std::fs::read(&afile).unwrap(), b"");
    }

    #[test]
    fn a_given_seed_is_kept() {
        let p = plan(&["-o", "insert", "--seed", "42"]).unwrap();
        assert_eq!(p.seed(), 42);
        assert!(p.seed_given);
    }

    /// An `--slo` without scope judges the queries of a run that has
    /// them, not its loads: while a copy runs, its progress lines do not
    /// say the SLO missed, nor does `--slo-abort` stop it (a copy-mem
    /// before a select was stopped by the select's p99 bound).
    #[test]
    fn an_unscoped_slo_judges_the_loads_only_of_a_run_without_queries() {
        let both = plan(&["-o", "copy-mem,select", "--slo", "p99<10ms"]).unwrap();
        assert!(!both.run.slo_judges_loads);
        let load = plan(&["-o", "copy-mem", "--slo", "p99<10ms"]).unwrap();
        assert!(load.run.slo_judges_loads);
    }

    #[test]
    fn a_workload_figure_is_not_scoped_to_a_transaction_type() {
        let m = usage_message(&["-o", "tpcc", "--slo", "new-order:efficiency>=90%"]);
        assert!(m.contains("a figure of the whole operation"), "{m}");
        assert!(plan(&["-o", "tpcc", "--slo", "tpcc:efficiency>=90%"]).is_ok());
    }
}
