//! The command line, as clap sees it.
//!
//! These types describe flags and nothing else: they keep the original
//! tool's short flags so existing command lines work, parse numbers and
//! durations into typed values, and are turned into a validated
//! [`crate::config::RunPlan`] before any connection is made. Nothing past
//! `config` sees a clap type.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

use crate::workload::Misuse;
use crate::workload::kit::args::{NODES, WORKLOAD};
pub use crate::workload::kit::args::{parse_count, parse_positive};
use crate::workload::registry::{self, IMPLY_OPERATIONS, WorkloadArgs};
use crate::workload::{self, Spec};

/// One name of `-o`, spaces around it allowed (`-o 'copy-mem, select'`):
/// a workload of the registry, by its name or an alias (the original
/// tool's underscore spellings).
fn parse_operation(s: &str) -> Result<&'static Spec, String> {
    let name = s.trim();
    workload::lookup(name).ok_or_else(|| {
        format!(
            "'{name}' is not an operation: use {}",
            workload::names().join(", ")
        )
    })
}

/// `-o`'s parser: [`parse_operation`], and the workloads' names as its
/// possible values, so that the shell completions clap generates offer
/// them (a plain function parser has none, and completes file names).
#[derive(Clone, Copy)]
struct OperationParser;

impl clap::builder::TypedValueParser for OperationParser {
    type Value = &'static Spec;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        clap::builder::TypedValueParser::parse_ref(&parse_operation, cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(workload::REGISTRY.iter().map(|s| {
            clap::builder::PossibleValue::new(s.name)
                .help(s.about)
                .aliases(s.aliases.iter().copied())
        })))
    }
}

/// The long help of `-o`: every workload of the registry, one a line.
fn operations_help() -> String {
    let mut h = String::from("Operations (workloads) to run, in order, comma separated:");
    for s in workload::REGISTRY {
        h.push_str(&format!("\n  {:<10} {}", s.name, s.about));
    }
    h
}

/// Spacing of the `--rate` schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RateDistributionArg {
    /// Evenly spaced.
    Fixed,
    /// Exponentially distributed gaps with the same mean (Poisson arrivals).
    Poisson,
}

/// How query workloads pick keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeyDistributionArg {
    /// Every key equally likely (select and update's default).
    Uniform,
    /// YCSB's scrambled zipfian: a few keys, spread over the key space, take most operations (--zipf-theta).
    Zipfian,
    /// The most recently inserted keys are the most likely (YCSB D).
    Latest,
    /// --hotspot-fraction of the keys take --hotspot-ops of the operations.
    Hotspot,
    /// Each worker walks the keys in order from its own start.
    Sequential,
}

/// `-M`: how statements are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    Simple,
    Extended,
    Prepared,
}

/// How `--load-balance` spreads connections over the hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoadBalanceArg {
    /// Worker t on host t mod H (with -C, its n-th connection on host (t+n) mod H).
    RoundRobin,
    /// Every connection on a host drawn at random.
    Random,
    /// Round-robin; over yb_servers(), over every node, read replicas too (the smart drivers' true).
    #[value(alias = "true")]
    Any,
    /// YugabyteDB: round-robin over the primary nodes of yb_servers().
    OnlyPrimary,
    /// YugabyteDB: round-robin over the read replicas of yb_servers().
    OnlyRr,
    /// YugabyteDB: the primary nodes; the read replicas when no primary can be reached.
    PreferPrimary,
    /// YugabyteDB: the read replicas; the primary nodes when no read replica can be reached.
    PreferRr,
}

/// The version as `--version` says it: the package version and the commit
/// it was built from (`0.2.0 (abc1234)`; "unknown" without git).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("YSQLBENCH_COMMIT"),
    ")"
);

// The headings of --help, in the order a user meets the questions.
const CONNECTION: &str = "Connection";
const PACING: &str = "Pacing";
const REPORTS: &str = "Reports";
const SAFETY: &str = "Safety";
const CLIENTS: &str = "Several clients";
const SLO: &str = "SLO gates and the highest rate that meets them";

const ABOUT: &str = "Load, read and update a table in YugabyteDB YSQL or PostgreSQL, and report throughput and latency.";

const LONG_ABOUT: &str = "\
Load, read and update a table in YugabyteDB YSQL or PostgreSQL, and report throughput and latency.

The operations of -o run in order against the table test_table(id int primary key, f1..f4 text): \
insert, copy-mem, copy-file and procedure load ids 0..rows-1 into it; select and update look \
ids up in it, so a run that starts with them needs a loaded table. The summary goes to stdout; \
what the run is doing (>> lines), warnings and errors go to stderr.";

const AFTER_HELP: &str = "\
Exit codes: 0 ok, 1 the run failed, 2 bad usage, 3 an --slo missed, 130 interrupted. --help shows an example per group.";

const AFTER_LONG_HELP: &str = "\
Examples:
  Connection: a throwaway local server, or a YugabyteDB node (the user and database default as in psql)
    ysql-bench --sandbox -o copy-mem,select -t 4 -r 100000 --time 10s
    ysql-bench -u 'host=yb1 port=5433 user=yugabyte dbname=yugabyte' -o copy-mem,select
  Workload: load 1M rows with 8 workers in batches of 1000, then update them
    ysql-bench -o copy-mem,update -r 1000000 -t 8 -b 1000 --seed 42
  Pacing: 2000 queries/s for 5 minutes after a warmup; count those over 50 ms
    ysql-bench -o select -r 1000000 --rate 2000 --time 5m --warmup 10s --latency-limit 50
  Reports: progress every 5 s, percentiles and histograms kept as JSON, pictures in plots/
    ysql-bench -o select -P 5 --json run.json --graph --graph-dir plots
  Several nodes: 12 workers spread over three nodes
    ysql-bench -u 'host=yb1,yb2,yb3 port=5433' --load-balance round-robin -o select -t 12
  Safety: replace a table ysql-bench did not create (its rows are lost); drop every table ysql-bench created, and no other
    ysql-bench -o copy-mem --drop --force --table-name bench_t
    ysql-bench -o cleanup
  Several clients: three machines as one run (client 0 shown), then their reports merged
    ysql-bench -u 'host=yb1 port=5433' --clients 3 --client-index 0 -o copy-mem,select --json c0.json
    ysql-bench merge c0.json c1.json c2.json --json run.json
  SLO gates: fail (exit 3) when p99 is 10 ms or more; then the highest rate that keeps it
    ysql-bench -o select --rate 2000 --time 1m --slo 'p99<10ms,errors<0.1%'
    ysql-bench -o select --find-max --slo 'p99<10ms' --time 10s --warmup 2s
  Shell completions and the man page (see the README for where to put them)
    ysql-bench completions bash > ~/.local/share/bash-completion/completions/ysql-bench
    ysql-bench man > ~/.local/share/man/man1/ysql-bench.1

Exit codes: 0 ok, 1 the run failed (the summary of what ran is still printed), 2 bad usage (nothing ran), 3 the run (or merge, or compare --fail-if) missed its --slo, 130 interrupted.";

#[derive(Parser, Debug, Clone)]
#[command(
    name = "ysql-bench",
    version = VERSION,
    allow_negative_numbers = true,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP,
    // `ysql-bench completions bash` and `ysql-bench man` need no -o; any
    // run's command line has no word that is not a flag or its value, so
    // these names cannot change what an existing command line means.
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true,
    // What paces a run: the whole run's --rate or a client's own
    // --client-rate (one of them), which --rate-distribution spaces.
    group = clap::ArgGroup::new("pace").args(["rate", "client_rate"])
)]
pub struct Cli {
    /// Where to connect: a libpq key=value string or a postgres:// URI.
    ///
    /// sslmode (disable, prefer, require, verify-ca, verify-full), sslrootcert, sslcert, sslkey and
    /// passfile as in libpq. Without -u: $YSQLBENCH_URL. What the string leaves out comes, as in
    /// libpq, from PGHOST, PGHOSTADDR, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGOPTIONS, PGAPPNAME,
    /// PGCONNECT_TIMEOUT, PGTARGETSESSIONATTRS, PGSSLMODE, PGSSLROOTCERT, PGSSLCERT, PGSSLKEY, then
    /// psql's defaults: the user is the OS login name, the database the user's name. Without a
    /// password, each host's is looked up in the password file (passfile=, PGPASSFILE, else
    /// ~/.pgpass). Several nodes: a host list (host=a,b port=5433,5434) or -u given again; they
    /// mean failover (the first host that lets the run in; unlike libpq, past a refused login too)
    /// unless --load-balance is given.
    #[arg(
        short = 'u',
        long = "url",
        value_name = "URL",
        conflicts_with = "sandbox",
        action = ArgAction::Append,
        help_heading = CONNECTION
    )]
    pub url: Vec<String>,

    /// Run against a throwaway local PostgreSQL, removed afterwards.
    ///
    /// initdb in a temporary directory, a free port on 127.0.0.1; needs PostgreSQL's server
    /// binaries (set YSQLBENCH_PG_BINDIR to pick a version).
    #[arg(long, help_heading = CONNECTION)]
    pub sandbox: bool,

    /// Operations to run, in order, comma separated (see --help for the list).
    #[arg(
        short = 'o',
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = OperationParser,
        hide_possible_values = true,
        long_help = operations_help(),
        required_unless_present_any = IMPLY_OPERATIONS,
        help_heading = WORKLOAD
    )]
    pub operations: Vec<&'static Spec>,

    /// Concurrent workers, each on its own connection.
    #[arg(short = 't', long, value_name = "N", default_value = "1", value_parser = parse_positive::<usize>, help_heading = WORKLOAD)]
    pub threads: usize,

    /// Rows in the table (default 100000): loads write ids 0..N-1, queries look up ids in 0..N-1.
    ///
    /// A load splits the ids over the threads (the first N mod threads take one more).
    #[arg(short = 'r', long, value_name = "N", value_parser = parse_count::<u64>, help_heading = WORKLOAD)]
    pub rows: Option<u64>,

    /// Rows per INSERT statement, per COPY, or per commit of the procedure.
    #[arg(short = 'b', long = "batch-size", value_name = "N", default_value = "200", value_parser = parse_positive::<usize>, help_heading = WORKLOAD)]
    pub batch_size: usize,

    /// Characters in each of the four text fields.
    #[arg(short = 'f', long = "fields-length", value_name = "N", default_value = "24", value_parser = parse_positive::<usize>, help_heading = WORKLOAD)]
    pub fields_length: usize,

    /// YugabyteDB: writes not atomic per batch (yb_disable_transactional_writes).
    ///
    /// Set on every worker connection of loads and update; refused on PostgreSQL.
    #[arg(short = 'n', long, help_heading = WORKLOAD)]
    pub nontransactional: bool,

    /// YugabyteDB: create the table split into N tablets.
    ///
    /// Ignored with a warning on PostgreSQL.
    #[arg(long, value_name = "N", value_parser = parse_positive::<u32>, help_heading = WORKLOAD)]
    pub tablets: Option<u32>,

    /// How statements are sent, as pgbench's -M: prepared, extended or simple.
    ///
    /// prepared: each statement is parsed once per connection and then bound and run (the
    /// default). extended: the unnamed statement, parsed every time, parameters bound apart.
    /// simple: SQL text with the values written in as literals. extended and simple leave
    /// nothing prepared on a server connection, as PgBouncer in transaction mode needs.
    #[arg(short = 'M', long, value_enum, value_name = "PROTOCOL", help_heading = WORKLOAD)]
    pub protocol: Option<ProtocolArg>,

    /// The original tool's name for -M simple.
    #[arg(long, conflicts_with = "protocol", help_heading = WORKLOAD)]
    pub no_prepared: bool,

    /// The table to load and query (default test_table; usertable for YCSB), always quoted as an identifier.
    #[arg(long, value_name = "NAME", help_heading = WORKLOAD)]
    pub table_name: Option<String>,

    /// Seed of the generated data and of the ids looked up, to repeat a run.
    ///
    /// Drawn at random when not given; either way the summary's first line and the JSON report
    /// say which seed was used.
    #[arg(long, value_name = "N", value_parser = parse_count::<u64>, help_heading = WORKLOAD)]
    pub seed: Option<u64>,

    /// Directory of copy-file's CSV files, on the database server's host.
    ///
    /// csv_generator makes them; with --copy-file-client, on this machine.
    #[arg(long, value_name = "DIR", default_value = "/tmp", help_heading = WORKLOAD)]
    pub csv_dir: PathBuf,

    /// How long select and update run (default 60s), e.g. 30s or 5m.
    ///
    /// Also bounds a load, which then stops issuing batches and reports what it loaded.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "runtime_select", help_heading = PACING)]
    pub time: Option<Duration>,

    /// Each thread runs N units (transactions, queries) of each query workload, then stops (pgbench -t).
    ///
    /// Instead of --time: every unit a thread ends counts, failed or skipped by --latency-limit
    /// too, as pgbench counts them; a warmup runs first, by its time, outside the count. Loads
    /// are not counted: they write their rows.
    #[arg(long, value_name = "N", value_parser = parse_positive::<u64>, conflicts_with_all = ["time", "runtime_select"], help_heading = PACING)]
    pub transactions: Option<u64>,

    /// The original tool's run time of select and update, in minutes.
    ///
    /// As --time, but it never bounds a load.
    #[arg(long, value_name = "MINUTES", value_parser = parse_minutes, allow_hyphen_values = true, help_heading = PACING)]
    pub runtime_select: Option<Duration>,

    /// Run select and update this long first, unmeasured, e.g. 10s.
    #[arg(long, alias = "warmup-time", value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true, help_heading = PACING)]
    pub warmup: Option<Duration>,

    /// Target units per second over all threads (queries, or insert and copy-mem batches).
    ///
    /// Latency then counts from each unit's scheduled start, so a stall shows in it. procedure
    /// and copy-file send one statement per thread and are not paced. With --clients it is the
    /// whole run's target, split over the clients in proportion to their threads.
    #[arg(long, value_name = "N", value_parser = parse_rate, help_heading = PACING)]
    pub rate: Option<f64>,

    /// Spacing of the --rate schedule.
    #[arg(long, value_name = "KIND", default_value = "fixed", requires = "pace", help_heading = PACING)]
    pub rate_distribution: RateDistributionArg,

    /// Queries kept in flight per connection (pipelining); 1 sends each alone.
    ///
    /// For the workloads whose units are single statements: select, update, the YCSB mixes
    /// without read-modify-write, oltp-point-select. Each query keeps its own latency (from its
    /// scheduled start under --rate) and service time (from its send). Needs the extended protocol
    /// (-M prepared or extended, not simple) and one connection per worker (not --reconnect).
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_positive::<usize>, help_heading = PACING)]
    pub pipeline: usize,

    /// With --pipeline: queries per Sync, each batch of them one transaction (default 1).
    ///
    /// 1 gives each query its own Sync: its own transaction, so a failure costs the others nothing.
    /// K > 1 sends K queries and one Sync, as pgbench's \startpipeline … \endpipeline does: the
    /// server answers them in one flush while they fit its 8 kB send buffer (fewer reads, writes
    /// and wake-ups on both sides), and they commit together. An error in one fails the batch: the
    /// queries before it are rolled back, those after it are not run, and each is counted failed
    /// (its own error, or "pipeline-batch"), or tried again when the retry policy names the error
    /// that failed the batch. Latency is still kept per query. Must divide --pipeline; a worker
    /// refills a batch once it has room for a whole one (under --rate a batch holds the queries due
    /// together).
    #[arg(long, value_name = "K", default_value = "1", value_parser = parse_positive::<usize>, help_heading = PACING)]
    pub pipeline_sync: usize,

    /// Count queries and batches slower than this many milliseconds as late.
    ///
    /// Under --rate, select and update skip (and count) units already later than this when due,
    /// as pgbench does. procedure and copy-file are never counted late.
    #[arg(long, value_name = "MS", value_parser = parse_millis, help_heading = PACING)]
    pub latency_limit: Option<Duration>,

    /// Judge the run by these criteria, e.g. 'p99<10ms,errors<0.1%,throughput>=5000/s'; a miss exits 3.
    ///
    /// Each is [SCOPE:]METRIC OP VALUE with OP one of < <= > >=. METRIC: a latency percentile from
    /// the intended start (p50, p99, p99.9, mean, max; service.p99 for the time from sending),
    /// errors, retries or skipped (a share: 0.1%, or a count: 5), throughput (units per second:
    /// 5000/s, or a share of --rate's target: 95%), or a workload's own figure (efficiency>=90%).
    /// SCOPE: an operation of -o or a transaction type (new-order:p90<5s). Judged over the measured
    /// time; stated in the summary, -P lines, JSON and CSV. See docs/slo.md.
    #[arg(long, value_name = "LIST", value_parser = parse_slo, help_heading = SLO)]
    pub slo: Option<crate::stats::slo::Slo>,

    /// Stop the run as soon as an --slo criterion can no longer be met, whatever the rest does.
    ///
    /// Certain only from counts that can only grow against the most units the run can still end
    /// (a fixed --rate with --time, or --transactions): see docs/slo.md.
    #[arg(long, requires = "slo", help_heading = SLO)]
    pub slo_abort: bool,

    /// Find the highest --rate at which the last operation of -o meets --slo.
    ///
    /// Steps of a target rate: --warmup unmeasured (default 2s), then --time measured (default
    /// 10s); doubling from --rate (default 100) until a step misses, then bisecting down to
    /// --find-max-resolution. Prints the rate and the curve of every step.
    #[arg(long, requires = "slo", help_heading = SLO)]
    pub find_max: bool,

    /// What --find-max searches over: rate (open loop, --rate) or threads (closed loop, -t).
    #[arg(long, value_name = "WHAT", default_value = "rate", requires = "find_max", help_heading = SLO)]
    pub find_max_over: FindMaxOverArg,

    /// Stop bisecting when the last rate that held is within this share of the first that missed.
    #[arg(long, value_name = "PERCENT", default_value = "5", value_parser = parse_resolution, requires = "find_max", help_heading = SLO)]
    pub find_max_resolution: f64,

    /// How often a step whose figures straddle a criterion within the noise is run again.
    #[arg(long, value_name = "N", default_value = "2", value_parser = parse_count::<u32>, requires = "find_max", help_heading = SLO)]
    pub find_max_repeats: u32,

    /// The most steps a search runs (repeats included).
    #[arg(long, value_name = "N", default_value = "40", value_parser = parse_positive::<u32>, requires = "find_max", help_heading = SLO)]
    pub find_max_steps: u32,

    /// After the operations, print the average stored row size.
    ///
    /// pg_column_size over up to 10000 rows.
    #[arg(long, help_heading = REPORTS)]
    pub show_rowsize: bool,

    /// Print a progress line on stderr every SECONDS.
    ///
    /// Rate, latency percentiles, errors and, under --rate, the schedule lag; shown also with
    /// --quiet.
    #[arg(short = 'P', long, value_name = "SECONDS", value_parser = parse_duration, allow_hyphen_values = true, help_heading = REPORTS)]
    pub report_interval: Option<Duration>,

    /// Print an ASCII histogram of each operation's latency.
    #[arg(short = 'p', long, help_heading = REPORTS)]
    pub print_histogram: bool,

    /// Rows of the ASCII histogram.
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_positive::<usize>, help_heading = REPORTS)]
    pub histogram_buckets: usize,

    /// Row spacing of the ASCII histogram: log (rows growing by a constant factor) or linear.
    ///
    /// log, the default, shows the bulk of the units and the tail beside it; linear (the original
    /// tool's rows of equal width from min to max) puts nearly everything in its first row when a
    /// few units are much slower than the rest.
    #[arg(long, value_name = "SCALE", default_value = "log", help_heading = REPORTS)]
    pub histogram_scale: HistogramScaleArg,

    /// Write PNGs of latency over time, and of throughput and p99 over time per type.
    ///
    /// The points are as fine as the run's length allows (at most 200 a line), or -P's intervals
    /// when it is given; latency is a uniform sample of the units with p50, p99, p99.9 and max
    /// lines.
    #[arg(long, help_heading = REPORTS)]
    pub graph: bool,

    /// Size of the PNGs, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "1024x768", value_parser = parse_size, help_heading = REPORTS)]
    pub graph_size: (u32, u32),

    /// Logarithmic latency axis in the PNGs.
    #[arg(long, help_heading = REPORTS)]
    pub graph_log_y: bool,

    /// Directory of the PNGs, created if missing.
    #[arg(long, value_name = "DIR", default_value = ".", help_heading = REPORTS)]
    pub graph_dir: PathBuf,

    /// Write the whole run as JSON.
    ///
    /// Configuration (with the seed), server, and per operation the counts, errors by SQLSTATE,
    /// percentiles, intervals and HDR histograms. `-` writes it to stdout, and the summary to
    /// stderr.
    #[arg(long, value_name = "FILE", help_heading = REPORTS)]
    pub json: Option<PathBuf>,

    /// Write one CSV row per interval (1 s, or -P) per operation.
    #[arg(long, value_name = "FILE", help_heading = REPORTS)]
    pub csv: Option<PathBuf>,

    /// Write the run as one self-contained HTML page.
    ///
    /// Charts of throughput and latency over time, the percentile spectrum, errors, the
    /// server's side and the set-up; it fetches nothing when opened (see docs/report.md).
    #[arg(long, value_name = "FILE", help_heading = REPORTS)]
    pub html: Option<PathBuf>,

    /// Write every timed unit as a CSV row.
    ///
    /// operation, thread, start, latency, service time, rows, ok.
    #[arg(long, value_name = "FILE", help_heading = REPORTS)]
    pub latency_log: Option<PathBuf>,

    /// Serve live metrics (OpenMetrics text) at http://HOST:PORT/metrics while the run goes.
    ///
    /// Units, errors by SQLSTATE, latency and service-time histograms per transaction type,
    /// lag, in-flight units, connections per host, the server's waits, labelled with the run id
    /// and client index. Refused before connecting if the address cannot be bound. See
    /// docs/metrics.md.
    #[arg(long, value_name = "HOST:PORT", help_heading = REPORTS)]
    pub metrics_addr: Option<String>,

    /// After the run, keep serving --metrics-addr until scraped once more, at most this long.
    ///
    /// So that the last interval is scraped; Ctrl-C ends it at once. 0 ends at once.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration, requires = "metrics_addr", help_heading = REPORTS)]
    pub metrics_linger: Duration,

    /// Only the summary: no ">>" lines and no progress bar on stderr.
    ///
    /// Warnings, errors and the -P progress lines are still shown.
    #[arg(short = 'q', long, help_heading = REPORTS)]
    pub quiet: bool,

    /// Tries per unit (a whole transaction) after a failure --retry-on names; 0: no limit but the end of the run.
    ///
    /// Retried with jittered backoff; YugabyteDB's read-restart and conflict errors are 40001.
    /// Default: 1 for single statements, no limit for the transactions of oltp-* and booking
    /// (as sysbench and the booking benchmark retry). The procedure's CALL is never retried
    /// (it commits as it goes).
    #[arg(long, value_name = "N", value_parser = parse_count::<u32>, help_heading = PACING)]
    pub max_tries: Option<u32>,

    /// SQLSTATEs that make a unit be tried again, comma separated.
    ///
    /// Default: 40001,40P01 (serialization failure, deadlock), plus 23505 for oltp-* as
    /// sysbench's PostgreSQL driver does.
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_sqlstate, help_heading = PACING)]
    pub retry_on: Option<Vec<String>>,

    /// The isolation level of every transaction (default: the server's; booking: repeatable read).
    #[arg(long, value_name = "LEVEL", help_heading = PACING)]
    pub isolation: Option<IsolationArg>,

    /// After a failed unit: stop the operation, or count it and go on.
    ///
    /// Default: stop for loads (their data would be incomplete), continue for select and update.
    /// A script's own error (an undefined variable, a \gset without its row) stops the run even
    /// with continue: every unit would repeat it.
    #[arg(long, value_name = "WHAT", help_heading = PACING)]
    pub on_error: Option<OnErrorArg>,

    /// How long to wait for a connection (default 10s, or connect_timeout in the URL).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true, help_heading = CONNECTION)]
    pub connect_timeout: Option<Duration>,

    /// statement_timeout on every worker connection, e.g. 30s (default: the server's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true, help_heading = CONNECTION)]
    pub statement_timeout: Option<Duration>,

    /// Spread the workers over all the hosts of -u instead of libpq's failover.
    ///
    /// One pool per host. Failover uses only the first host that lets the run in.
    #[arg(long, value_name = "HOW", help_heading = NODES)]
    pub load_balance: Option<LoadBalanceArg>,

    /// YugabyteDB: balance over the nodes that yb_servers() lists.
    ///
    /// Round-robin over the primary nodes unless --load-balance says otherwise. Tested against
    /// PostgreSQL servers with a yb_servers() function of the tests' own, not a live cluster.
    #[arg(long, conflicts_with = "sandbox", help_heading = NODES)]
    pub yb_discover: bool,

    /// YugabyteDB: the zones to connect to, cloud.region.zone[:N],... (zone may be *).
    ///
    /// The nodes of priority 1 (:1 or none) while one answers, else those of priority 2, and
    /// so on up to 10; then the rest of the cluster unless --topology-keys-only. Implies
    /// --yb-discover.
    #[arg(long, value_name = "KEYS", conflicts_with = "sandbox", help_heading = NODES)]
    pub topology_keys: Option<String>,

    /// With --topology-keys: never fall back to nodes outside its zones.
    #[arg(long, requires = "topology_keys", help_heading = NODES)]
    pub topology_keys_only: bool,

    /// YugabyteDB: ask yb_servers() again every DURATION during the run, e.g. 5s.
    ///
    /// New connections (and workers reconnecting) go to nodes added since; a worker on a node
    /// no longer listed, or outside the most preferred zone that answers again, moves between
    /// two units. Implies --yb-discover.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "sandbox", help_heading = NODES)]
    pub yb_refresh: Option<Duration>,

    /// How long a node that could not be reached is passed over (default 5s).
    ///
    /// As the smart drivers' failed_host_reconnect_delay_secs; applies to every balanced host
    /// list.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = NODES)]
    pub failed_host_delay: Option<Duration>,

    /// A new connection for every batch or query, as pgbench -C.
    ///
    /// The connect time is measured apart (avg, p99), and throughput is shown with and without it.
    #[arg(short = 'C', long, help_heading = CONNECTION)]
    pub reconnect: bool,

    /// The CA certificate (PEM) that signed the server's, as sslrootcert.
    ///
    /// Without an sslmode it means sslmode=verify-full.
    #[arg(long, value_name = "FILE", help_heading = CONNECTION)]
    pub cacert: Option<PathBuf>,

    /// How select, update and the YCSB mixes pick keys (default: uniform for select and update, each YCSB mix its own).
    #[arg(long, value_name = "KIND", help_heading = WORKLOAD)]
    pub key_distribution: Option<KeyDistributionArg>,

    /// The zipfian exponent of --key-distribution zipfian and latest and of the YCSB mixes' own keys: any value above 0 but 1 (YCSB's 0.99 is the default).
    #[arg(long, value_name = "THETA", value_parser = parse_theta, help_heading = WORKLOAD)]
    pub zipf_theta: Option<f64>,

    /// --key-distribution hotspot: the share of the keys that is hot (0 to 1, default 0.2).
    #[arg(long, value_name = "SHARE", default_value = "0.2", value_parser = parse_share, help_heading = WORKLOAD)]
    pub hotspot_fraction: f64,

    /// --key-distribution hotspot: the share of the operations that go to the hot keys (0 to 1, default 0.8).
    #[arg(long, value_name = "SHARE", default_value = "0.8", value_parser = parse_share, help_heading = WORKLOAD)]
    pub hotspot_ops: f64,

    /// Print the latency of each statement kind inside a transaction (always in --json).
    #[arg(long, help_heading = REPORTS)]
    pub per_statement: bool,

    /// Drop the table first (only one ysql-bench created, unless --force).
    #[arg(long, help_heading = SAFETY)]
    pub drop: bool,

    /// Allow emptying, dropping or writing a table that ysql-bench did not create.
    ///
    /// A table with other columns than ysql-bench's is still refused; --drop --force replaces it.
    #[arg(long, help_heading = SAFETY)]
    pub force: bool,

    /// Leave out the server's side of the run: no snapshots of pg_stat_database, pg_stat_user_tables and pg_stat_statements around each operation, no sampling of what the run's backends wait on (pg_stat_activity), no statistics connection.
    #[arg(long, help_heading = REPORTS)]
    pub no_server_stats: bool,

    /// Clients (machines or pods) that run this one run together; each gives its --client-index.
    ///
    /// They meet at a barrier in the database (table ysql_bench_barrier); client 0 alone creates,
    /// drops and empties tables; all start each operation at one instant of the database's clock.
    /// Clients may differ in -t (and in their own --client-rate, connection and reports): loads
    /// split the ids over all clients' threads, --rate in proportion to threads, seeds differ per
    /// client. The other flags must agree: a difference is named by every client at once.
    #[arg(long, value_name = "W", default_value = "1", value_parser = parse_positive::<usize>, help_heading = CLIENTS)]
    pub clients: usize,

    /// This client's index, 0 to W-1 (default: $JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it).
    #[arg(long, value_name = "I", env = "JOB_COMPLETION_INDEX", value_parser = parse_count::<usize>, help_heading = CLIENTS)]
    pub client_index: Option<usize>,

    /// This client's own target units per second, in place of its share of --rate.
    ///
    /// For clients that should not pace in proportion to their threads: each gives its own (a
    /// client without it runs unpaced). Not with --rate, which is the whole run's.
    #[arg(long, value_name = "N", value_parser = parse_rate, conflicts_with = "rate", help_heading = CLIENTS)]
    pub client_rate: Option<f64>,

    /// The name of the run in the barrier and the reports (default: derived from -o and --table-name, which all clients share).
    #[arg(long, value_name = "NAME", value_parser = crate::cluster::check_run_id, help_heading = CLIENTS)]
    pub run_id: Option<String>,

    /// How long clients wait for each other at the barrier before giving up, e.g. 2m.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, help_heading = CLIENTS)]
    pub barrier_timeout: Duration,

    /// Each family's flags, under the headings above.
    #[command(flatten)]
    pub workloads: WorkloadArgs,

    /// Generated files instead of a run: shell completions, the man page.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The command line as given (set by the binary, not a flag): the
    /// record keeps it, passwords taken out, so a report can repeat the run.
    #[arg(skip)]
    pub command_line: Vec<String>,
}

/// What `ysql-bench` prints instead of running, generated from these flags.
#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print the completion script for SHELL on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout.
    Man,
    /// Merge the --json reports of the clients of one run into one report.
    Merge {
        /// The clients' reports.
        #[arg(value_name = "REPORT", required = true)]
        reports: Vec<PathBuf>,
        /// Write the merged report as JSON (- for stdout).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Write one CSV row per merged interval per operation.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
        /// Print an ASCII histogram of each operation's latency.
        #[arg(short = 'p', long)]
        print_histogram: bool,
        /// Row spacing of the histogram: log or linear.
        #[arg(long, value_name = "SCALE", default_value = "log")]
        histogram_scale: HistogramScaleArg,
        /// Refuse (rather than warn about) a run with clients missing.
        #[arg(long)]
        strict: bool,
        /// Write the merged run as one self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Judge the merged figures by these criteria (as a run's --slo; default: the
        /// clients' own); a miss exits 3.
        #[arg(long, value_name = "LIST", value_parser = parse_slo_text)]
        slo: Option<String>,
    },
    /// Write the HTML page of a saved, merged or older --json report.
    Report {
        #[arg(value_name = "REPORT")]
        report: PathBuf,
        /// Where the page goes (default: the report's name with .html).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Print the summary of a saved --json report.
    Show {
        #[arg(value_name = "REPORT")]
        report: PathBuf,
        /// Print an ASCII histogram of each operation's latency.
        #[arg(short = 'p', long)]
        print_histogram: bool,
        /// Row spacing of the histogram: log or linear.
        #[arg(long, value_name = "SCALE", default_value = "log")]
        histogram_scale: HistogramScaleArg,
    },
    /// Compare two saved --json reports: throughput and percentiles with the change in %.
    Compare {
        #[arg(value_name = "BASE")]
        base: PathBuf,
        #[arg(value_name = "NEW")]
        new: PathBuf,
        /// Also write the comparison as one self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Exit 3 when a change from BASE to NEW beyond the run-to-run noise crosses one of
        /// these, e.g. 'p99>+10%,throughput<-5%' (see docs/slo.md).
        #[arg(long, value_name = "LIST", value_parser = parse_fail_if)]
        fail_if: Option<String>,
    },
}

/// What `--find-max` searches over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FindMaxOverArg {
    /// The target rate (--rate) of an open-loop workload.
    Rate,
    /// The workers (-t) of a closed-loop workload.
    Threads,
}

/// What a worker does after a failed unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnErrorArg {
    Stop,
    Continue,
}

/// Row spacing of the ASCII histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HistogramScaleArg {
    /// Rows of equal width from the min to the max, as the original tool.
    Linear,
    /// Rows growing by a constant factor from the min to the max.
    Log,
}

fn parse_theta(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t != 1.0 => Ok(t),
        _ => Err(format!(
            "'{s}' is not a zipfian exponent: give a number above 0 other than 1, e.g. 0.99"
        )),
    }
}

/// `--isolation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IsolationArg {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

/// A SQLSTATE: five digits or capital letters.
fn parse_sqlstate(s: &str) -> Result<String, String> {
    let c = s.trim().to_ascii_uppercase();
    if c.len() == 5
        && c.chars()
            .all(|ch| ch.is_ascii_digit() || ch.is_ascii_uppercase())
    {
        Ok(c)
    } else {
        Err(format!(
            "'{s}' is not a SQLSTATE: give five characters such as 40001 (serialization failure) or 40P01 (deadlock)"
        ))
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a share: give a number between 0 and 1 (exclusive), e.g. 0.2 for --hotspot-fraction or 0.8 for --hotspot-ops"
        )),
    }
}

/// Parses the command line of `P`. Help and version go to stdout as clap
/// prints them (`Err(0)`); any other error is one line on stderr, clap's
/// first, with what `hint` adds to it and a pointer to --help (`Err(2)`),
/// as every usage error of the tool is one line.
pub fn parse_command_line<P: Parser>(
    hint: fn(&clap::Error, &[String]) -> Option<String>,
) -> Result<P, i32> {
    let e = match P::try_parse() {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if !e.use_stderr() {
        // `-h HOST` of pgbench's and psql's would print the help and exit 0,
        // and a script would take that for a run: the hint refuses it.
        if e.kind() == clap::error::ErrorKind::DisplayHelp
            && let Some(h) = hint(&e, &args)
        {
            crate::say!("error: {h}");
            return Err(crate::error::EXIT_USAGE);
        }
        let _ = e.print();
        return Err(crate::error::EXIT_OK);
    }
    let name = P::command().get_name().to_string();
    crate::say!("{} (see {name} --help)", usage_line(&e, hint(&e, &args)));
    Err(crate::error::EXIT_USAGE)
}

/// The flag of clap's `--rows <N>`, as the registry is asked about it.
fn long_name(arg: &str) -> &str {
    arg.split(' ').next().unwrap_or(arg)
}

/// clap's first paragraph on one line ("error: the following required
/// arguments were not provided: --operations \<LIST>"), and the hint.
pub fn usage_line(e: &clap::Error, hint: Option<String>) -> String {
    let rendered = e.render().to_string();
    let first: Vec<&str> = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let line = if first.is_empty() {
        "error: bad usage".to_string()
    } else {
        first.join(" ")
    };
    match hint {
        Some(h) => format!("{line}; {h}"),
        None => line,
    }
}

/// What to write instead, when the error is a habit of another tool's:
/// an unknown flag, or a value a flag refuses, that a workload family
/// knows from the tool it stands in for (asked of the registry, which
/// asks each family), a port after `-p`, a host after `-h` (which is the
/// help here) or a database name taken for a subcommand, as psql and
/// others take them. `args` is the command line, the program first.
/// Nothing for the subcommands' own errors (`ysql-bench show -T`).
pub fn usage_hint(e: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |k: ContextKind| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let subcommands = ["completions", "man", "merge", "show", "compare"];
    if args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .is_some_and(|a| subcommands.contains(&a.as_str()))
        && e.kind() != ErrorKind::ArgumentConflict
    {
        return None;
    }
    let not_a_number = |v: &str| v.trim().replace('_', "").parse::<u64>().is_err();
    match e.kind() {
        // `-h HOST`: -h is the help (alone or before another flag it stays
        // so); a value after it is a host of pgbench's or psql's.
        ErrorKind::DisplayHelp => {
            let flags = args
                .iter()
                .skip(1)
                .take_while(|a| a.as_str() != "--")
                .collect::<Vec<_>>();
            let at = flags.iter().position(|a| a.as_str() == "-h")?;
            let host = flags.get(at + 1).filter(|v| !v.starts_with('-'))?;
            Some(format!(
                "-h is the help here; the host goes in -u 'host={host} ...' (or PGHOST)"
            ))
        }
        // The other tools' habits are their families' to know: the flag as
        // the workload layer is asked about it, `--client=4` as `--client`,
        // clap's `--rows <N>` as `--rows`.
        ErrorKind::UnknownArgument => {
            let arg = text(ContextKind::InvalidArg)?;
            let flag = arg.split('=').next().unwrap_or(arg);
            registry::usage_hint(Misuse::Unknown(flag))
        }
        ErrorKind::InvalidValue => {
            let arg = text(ContextKind::InvalidArg)?;
            registry::usage_hint(Misuse::Invalid(long_name(arg)))
        }
        ErrorKind::ValueValidation => {
            let arg = text(ContextKind::InvalidArg)?;
            let value = text(ContextKind::InvalidValue)?;
            registry::usage_hint(Misuse::Rejected {
                flag: long_name(arg),
                value,
            })
        }
        ErrorKind::ArgumentConflict | ErrorKind::InvalidSubcommand => {
            let word = text(ContextKind::InvalidSubcommand)?;
            // A subcommand mistyped: clap's own tip names the right one.
            if subcommands.contains(&word) || e.get(ContextKind::SuggestedSubcommand).is_some() {
                return None;
            }
            let before = args
                .iter()
                .position(|a| a == word)
                .and_then(|i| i.checked_sub(1))
                .map(|i| args[i].as_str());
            if before == Some("-p") && !not_a_number(word) {
                Some(format!(
                    "-p is --print-histogram here; a port goes in -u, e.g. -u 'host=HOST port={word}'"
                ))
            } else if word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                Some(format!(
                    "a database name? ysql-bench takes it in -u, e.g. -u 'dbname={word}'"
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn parse_slo(s: &str) -> Result<crate::stats::slo::Slo, String> {
    crate::stats::slo::Slo::parse(s)
}

/// A subcommand's `--slo`, checked, kept as written.
fn parse_slo_text(s: &str) -> Result<String, String> {
    crate::stats::slo::Slo::parse(s).map(|_| s.to_string())
}

/// `compare --fail-if`, checked, kept as written.
fn parse_fail_if(s: &str) -> Result<String, String> {
    crate::stats::slo::FailIf::parse(s).map(|_| s.to_string())
}

/// `--find-max-resolution`: a percentage, as a fraction.
fn parse_resolution(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(p) if p.is_finite() && (0.1..=100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "'{s}' is not a resolution: give a percentage between 0.1 and 100, e.g. 5"
        )),
    }
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is not a positive rate (write operations per second, e.g. 2000)"
        )),
    }
}

fn parse_millis(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms > 0.0 && ms < 3.6e6 => Ok(Duration::from_secs_f64(ms / 1e3)),
        _ => Err(format!(
            "'{s}' is not a positive number of milliseconds (e.g. 50)"
        )),
    }
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad =
        || format!("'{s}' is not a size: write WIDTHxHEIGHT, e.g. 1024x768 (each 100 to 10000)");
    let (w, h) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if !(100..=10_000).contains(&w) || !(100..=10_000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

/// A duration such as `30s`, `5m`, `1h30m` or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.starts_with('-') && !t[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "'{s}' is a flag, not a duration: give a value such as 30s, 5m, 1h or 90"
        ));
    }
    if t.starts_with('-') {
        return Err(format!(
            "'{s}' is negative: write a duration of 0 or more, e.g. 30s, 5m, 1h or 90"
        ));
    }
    if let Ok(secs) = t.parse::<f64>() {
        return seconds(secs).ok_or_else(|| format!("'{s}' is not a valid number of seconds"));
    }
    humantime::parse_duration(t)
        .map_err(|_| format!("'{s}' is not a duration (write e.g. 30s, 5m, 1h or 90)"))
}

fn parse_minutes(s: &str) -> Result<Duration, String> {
    let minutes: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of minutes (write e.g. 1 or 0.5)"))?;
    seconds(minutes * 60.0).ok_or_else(|| format!("'{s}' is not a valid number of minutes"))
}

fn seconds(secs: f64) -> Option<Duration> {
    if secs.is_finite() && (0.0..1e9).contains(&secs) {
        Some(Duration::from_secs_f64(secs))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").unwrap_err().contains("negative"));
        assert!(parse_duration("-o").unwrap_err().contains("a flag"));
        assert!(parse_duration("--rate").unwrap_err().contains("a flag"));
        assert_eq!(parse_minutes("0.5"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_millis("2.5"), Ok(Duration::from_micros(2500)));
        assert!(parse_millis("0").is_err());
        assert_eq!(parse_rate("2000"), Ok(2000.0));
        assert!(parse_rate("-1").is_err());
        assert_eq!(parse_size("800x600"), Ok((800, 600)));
        assert!(parse_size("800").is_err());
        assert!(parse_size("10x10").is_err());
    }

    #[test]
    fn operations_accept_original_spellings() {
        let cli = Cli::try_parse_from(["ysql-bench", "-o", "copy_mem,copy-file,select"]).unwrap();
        let names: Vec<&str> = cli.operations.iter().map(|s| s.name).collect();
        assert_eq!(names, ["copy-mem", "copy-file", "select"]);
        let e = Cli::try_parse_from(["ysql-bench", "-o", "insert,delete"]).unwrap_err();
        assert!(e.to_string().contains("ycsb-a"), "{e}");
    }

    #[test]
    fn help_lists_every_workload() {
        let help = operations_help();
        for s in workload::REGISTRY {
            assert!(help.contains(s.name), "{} missing in {help}", s.name);
        }
    }
}
