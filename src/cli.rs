//! The command line, as clap sees it.
//!
//! These types describe flags and nothing else: they keep the original
//! tool's short flags so existing command lines work, parse numbers and
//! durations into typed values, and are turned into a validated
//! [`crate::config::RunPlan`] before any connection is made. Nothing past
//! `config` sees a clap type.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser, ValueEnum};

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

/// How `--load-balance` spreads connections over the hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoadBalanceArg {
    /// Worker t on host t mod H (with -C, its n-th connection on host (t+n) mod H).
    RoundRobin,
    /// Every connection on a host drawn at random.
    Random,
}

#[derive(Parser, Debug, Clone)]
#[command(
    name = "ysql-bench",
    version,
    allow_negative_numbers = true,
    about = "Load, read and update a table in YugabyteDB YSQL or PostgreSQL, and report throughput and latency.",
    after_help = "Examples:\n  ysql-bench --sandbox -o insert,select -t 4 -r 100000 --time 10s\n  ysql-bench -u 'host=yb1 port=5433 user=yugabyte dbname=yugabyte' -o copy-mem,update -t 8 --tablets 6\n\nExit codes: 0 ok, 1 the run failed, 2 bad usage, 130 interrupted."
)]
pub struct Cli {
    /// Connection: libpq key=value string or postgres:// URI, with sslmode (disable, prefer, require, verify-ca, verify-full) and sslrootcert as in libpq. Default: $YSQLBENCH_URL, then the PG* variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT) with psql's defaults. Several nodes: a host list (host=a,b port=5433,5434) or -u given again; as in libpq they mean failover (the first host that answers) unless --load-balance is given.
    #[arg(
        short = 'u',
        long = "url",
        value_name = "URL",
        conflicts_with = "sandbox",
        action = ArgAction::Append
    )]
    pub url: Vec<String>,

    /// Start a throwaway local PostgreSQL for this run (initdb in a temp dir, a free port on 127.0.0.1), removed afterwards.
    #[arg(long)]
    pub sandbox: bool,

    /// Operations to run, in order, comma separated (see --help for the list).
    #[arg(
        short = 'o',
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = parse_operation,
        long_help = operations_help(),
        required = true
    )]
    pub operations: Vec<&'static Spec>,

    /// Concurrent workers, each on its own connection.
    #[arg(short = 't', long, value_name = "N", default_value = "1", value_parser = parse_positive::<usize>)]
    pub threads: usize,

    /// Rows in the table: loads write ids 0..N-1 split across the threads; select and update pick ids from 0..N-1.
    #[arg(short = 'r', long, value_name = "N", default_value = "100000", value_parser = parse_count::<u64>)]
    pub rows: u64,

    /// Rows per batch: one INSERT statement, one COPY, or one commit of the procedure.
    #[arg(short = 'b', long = "batch-size", value_name = "N", default_value = "200", value_parser = parse_positive::<usize>)]
    pub batch_size: usize,

    /// Length of each of the four text fields, in characters.
    #[arg(short = 'f', long = "fields-length", value_name = "N", default_value = "24", value_parser = parse_positive::<usize>)]
    pub fields_length: usize,

    /// YugabyteDB: set yb_disable_transactional_writes on every worker connection, so that writes are not atomic per batch (refused on PostgreSQL).
    #[arg(short = 'n', long)]
    pub nontransactional: bool,

    /// YugabyteDB: create the table split into N tablets (ignored with a warning on PostgreSQL).
    #[arg(long, value_name = "N", value_parser = parse_positive::<u32>)]
    pub tablets: Option<u32>,

    /// Drop the table first (only a table that ysql-bench created, unless --force).
    #[arg(long)]
    pub drop: bool,

    /// Allow truncating, dropping or writing a table that ysql-bench did not create (one with other columns is still refused).
    #[arg(long)]
    pub force: bool,

    /// Send SQL text with literal values (simple query protocol) instead of prepared statements.
    #[arg(long)]
    pub no_prepared: bool,

    /// Table to load and query (default test_table; usertable for YCSB); always quoted as an identifier.
    #[arg(long, value_name = "NAME")]
    pub table_name: Option<String>,

    /// After the operations, print the average stored row size over a sample of rows.
    #[arg(long)]
    pub show_rowsize: bool,

    /// Seed for the generated data and the chosen ids, for reproducible runs.
    #[arg(long, value_name = "N", value_parser = parse_count::<u64>)]
    pub seed: Option<u64>,

    /// Directory of the CSV files for copy-file (on the database server's host).
    #[arg(long, value_name = "DIR", default_value = "/tmp")]
    pub csv_dir: PathBuf,

    /// How long select and update run (default 60s), e.g. 30s, 5m; also bounds a load, which then stops issuing batches and reports what it loaded.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "runtime_select")]
    pub time: Option<Duration>,

    /// The original tool's run time of select and update, in minutes (as --time, but it never bounds a load).
    #[arg(long, value_name = "MINUTES", value_parser = parse_minutes, allow_hyphen_values = true)]
    pub runtime_select: Option<Duration>,

    /// Run select and update this long first and discard what it measured, e.g. 10s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub warmup: Option<Duration>,

    /// Target rate over all threads: queries/s for select and update, batches/s for insert and copy-mem. Latency then counts from each unit's scheduled start.
    #[arg(long, value_name = "N", value_parser = parse_rate)]
    pub rate: Option<f64>,

    /// Spacing of the --rate schedule.
    #[arg(long, value_name = "KIND", default_value = "fixed", requires = "rate")]
    pub rate_distribution: RateDistributionArg,

    /// Count units slower than this many milliseconds as late; under --rate, select and update skip (and count) units already later than this when due.
    #[arg(long, value_name = "MS", value_parser = parse_millis)]
    pub latency_limit: Option<Duration>,

    /// Print a progress line on stderr every SECONDS (rate, latency percentiles, errors, lag).
    #[arg(short = 'P', long, value_name = "SECONDS", value_parser = parse_duration, allow_hyphen_values = true)]
    pub report_interval: Option<Duration>,

    /// Print an ASCII histogram of the latency of each operation.
    #[arg(short = 'p', long)]
    pub print_histogram: bool,

    /// Rows of the ASCII histogram.
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_positive::<usize>)]
    pub histogram_buckets: usize,

    /// Bucket spacing of the ASCII histogram: log keeps a long tail from squashing everything into the first row.
    #[arg(long, value_name = "SCALE", default_value = "linear")]
    pub histogram_scale: HistogramScaleArg,

    /// Write PNG scatterplots of latency over time per thread, and of throughput and p99 per interval.
    #[arg(long)]
    pub graph: bool,

    /// Size of the PNGs, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "1024x768", value_parser = parse_size)]
    pub graph_size: (u32, u32),

    /// Logarithmic latency axis in the scatterplots.
    #[arg(long)]
    pub graph_log_y: bool,

    /// Directory of the PNGs.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub graph_dir: PathBuf,

    /// Write the whole run as JSON: configuration, server, per operation counts, percentiles and HDR histograms.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per interval (1 s, or --report-interval) per operation.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write every timed unit (operation, thread, start, latency, rows) as CSV.
    #[arg(long, value_name = "FILE")]
    pub latency_log: Option<PathBuf>,

    /// Tries per unit: serialization failures and deadlocks (SQLSTATE 40001, 40P01; YugabyteDB's read-restart and conflict errors are 40001) are retried with jittered backoff.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_positive::<u32>)]
    pub max_tries: u32,

    /// After a failed unit: stop the operation, or count it and go on. Default: stop for loads (their data would be incomplete), continue for select and update.
    #[arg(long, value_name = "WHAT")]
    pub on_error: Option<OnErrorArg>,

    /// How long to wait for a connection (default 10s, or connect_timeout in the URL).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub connect_timeout: Option<Duration>,

    /// statement_timeout set on every connection (the server cancels longer statements), e.g. 30s. Default: the server's.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub statement_timeout: Option<Duration>,

    /// Spread the workers' connections over all the hosts of -u, one pool per host, instead of libpq's failover (which uses only the first host that answers).
    #[arg(long, value_name = "HOW")]
    pub load_balance: Option<LoadBalanceArg>,

    /// YugabyteDB: ask yb_servers() for the cluster's nodes and balance over them (round-robin unless --load-balance random). Not yet tested against a live cluster.
    #[arg(long, conflicts_with = "sandbox")]
    pub yb_discover: bool,

    /// A new connection for every batch or query, as pgbench -C. The connect time is measured apart (avg, p99), and throughput is shown with and without it.
    #[arg(short = 'C', long)]
    pub reconnect: bool,

    /// The CA certificate (PEM) that signed the server's certificate, as sslrootcert. Without an sslmode it means sslmode=verify-full.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// copy-file: read the CSV files from --csv-dir on this machine and send them with COPY FROM STDIN, instead of having the server read them. Works through haproxy and PgBouncer, where a connection may land on any node.
    #[arg(long)]
    pub copy_file_client: bool,

    /// How select, update and the YCSB mixes pick keys (default: uniform for select and update, each YCSB mix its own).
    #[arg(long, value_name = "KIND")]
    pub key_distribution: Option<KeyDistributionArg>,

    /// The zipfian exponent of --key-distribution zipfian and latest: any value above 0 but 1 (YCSB's 0.99 is the default).
    #[arg(long, value_name = "THETA", value_parser = parse_theta)]
    pub zipf_theta: Option<f64>,

    /// --key-distribution hotspot: the share of the keys that is hot (0 to 1, default 0.2).
    #[arg(long, value_name = "SHARE", default_value = "0.2", value_parser = parse_share)]
    pub hotspot_fraction: f64,

    /// --key-distribution hotspot: the share of the operations that go to the hot keys (0 to 1, default 0.8).
    #[arg(long, value_name = "SHARE", default_value = "0.8", value_parser = parse_share)]
    pub hotspot_ops: f64,

    /// YCSB: fields per record (field0..fieldN-1).
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_positive::<usize>)]
    pub ycsb_field_count: usize,

    /// YCSB: characters per field.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_positive::<usize>)]
    pub ycsb_field_length: usize,

    /// YCSB: an update writes every field, not one chosen at random.
    #[arg(long)]
    pub ycsb_write_all_fields: bool,

    /// YCSB: read-modify-write runs its read and update in one transaction.
    #[arg(long)]
    pub ycsb_rmw_txn: bool,

    /// YCSB: a custom mix replacing the workload's, e.g. read=0.9,update=0.1 (types: read, update, insert, scan, read-modify-write).
    #[arg(long, value_name = "TYPE=SHARE,...", value_parser = parse_proportions)]
    pub ycsb_proportions: Option<workload::ycsb::Mix>,

    /// Leave out the server's side of the run: no snapshots of pg_stat_database, pg_stat_user_tables and pg_stat_statements around each operation, no sampling of what the run's backends wait on (pg_stat_activity), no statistics connection.
    #[arg(long)]
    pub no_server_stats: bool,
}

/// What a worker does after a failed unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnErrorArg {
    Stop,
    Continue,
}

/// Bucket spacing of the ASCII histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HistogramScaleArg {
    Linear,
    Log,
}

fn parse_theta(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t != 1.0 && t <= 100.0 => Ok(t),
        _ => Err(format!(
            "'{s}' is not a zipfian exponent: give a number above 0 and up to 100 other than 1, e.g. 0.99"
        )),
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a share: give a number between 0 and 1, e.g. 0.2"
        )),
    }
}

fn parse_proportions(s: &str) -> Result<workload::ycsb::Mix, String> {
    workload::ycsb::Mix::parse(s)
}

/// Parses the command line of `P`. Help and version go to stdout as clap
/// prints them (`Err(0)`); any other error is one line on stderr, clap's
/// first, with a pointer to --help (`Err(2)`), as every usage error of the
/// tool is one line.
pub fn parse_command_line<P: Parser>() -> Result<P, i32> {
    let e = match P::try_parse() {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    if !e.use_stderr() {
        let _ = e.print();
        return Err(crate::error::EXIT_OK);
    }
    // clap's first paragraph, on one line: "error: the following
    // required arguments were not provided: --operations <LIST>".
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
    let name = P::command().get_name().to_string();
    crate::say!("{line} (see {name} --help)");
    Err(crate::error::EXIT_USAGE)
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

/// A whole number of at least 1, with a message that says so.
pub fn parse_positive<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + From<u8>,
{
    let v = parse_count::<T>(s)?;
    if v < T::from(1u8) {
        return Err("must be 1 or more".to_string());
    }
    Ok(v)
}

/// A whole number of at least 0, with a message that says so.
pub fn parse_count<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    let t = s.trim().replace('_', "");
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative: write digits, e.g. 1000"));
    }
    t.parse::<T>()
        .map_err(|_| format!("'{s}' is not a whole number (write digits, e.g. 1000)"))
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
    fn numbers_refuse_negative_zero_and_text() {
        assert_eq!(parse_positive::<usize>("4"), Ok(4));
        assert_eq!(parse_positive::<usize>("1_000"), Ok(1000));
        assert!(
            parse_positive::<usize>("0")
                .unwrap_err()
                .contains("1 or more")
        );
        assert!(
            parse_positive::<usize>("-3")
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            parse_positive::<usize>("ten")
                .unwrap_err()
                .contains("whole number")
        );
        assert_eq!(parse_count::<u64>("0"), Ok(0));
    }

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
