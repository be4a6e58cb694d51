//! The test harness: throwaway PostgreSQL servers (the same code as
//! `--sandbox`), in-process runs, and the facts a test checks in the table.
#![allow(dead_code)]

use std::process::{Command, Output};

use clap::Parser;
use tokio_postgres::{Client, NoTls};
use ysql_bench::cli::Cli;
use ysql_bench::config::RunPlan;
use ysql_bench::db::sandbox::{Sandbox, SandboxOptions};
use ysql_bench::{RunReport, run};

/// A fresh server, fsync off (tests measure correctness, not speed).
pub fn sandbox() -> Sandbox {
    sandbox_with(Vec::new())
}

pub fn sandbox_with(settings: Vec<(String, String)>) -> Sandbox {
    Sandbox::start(SandboxOptions {
        settings,
        fast: true,
        password: None,
    })
    .expect("the sandbox server starts (PostgreSQL server binaries installed?)")
}

/// The plan for `args` against `sb`.
pub fn plan(sb: &Sandbox, args: &[&str]) -> RunPlan {
    let url = sb.url();
    let mut all = vec!["ysql-bench", "-u", url.as_str()];
    all.extend_from_slice(args);
    RunPlan::from_cli(Cli::try_parse_from(all).expect("flags parse")).expect("plan is valid")
}

/// Runs in process; returns the report and what was written to stdout.
pub async fn run_args(sb: &Sandbox, args: &[&str]) -> (RunReport, String) {
    let mut out = Vec::new();
    let report = run(plan(sb, args), &mut out)
        .await
        .expect("the run completes");
    (report, String::from_utf8(out).expect("utf-8 summary"))
}

/// Starts a run in the background, for tests that act on the server while
/// it runs; yields the run's result and its summary.
pub fn spawn_run(
    plan: RunPlan,
) -> tokio::task::JoinHandle<(ysql_bench::Result<RunReport>, String)> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        let r = run(plan, &mut out).await;
        (r, String::from_utf8(out).expect("utf-8 summary"))
    })
}

/// As [`spawn_run`], with the handle that interrupts the run as Ctrl-C does.
pub fn spawn_interruptible(
    plan: RunPlan,
) -> (
    ysql_bench::Control,
    tokio::task::JoinHandle<(ysql_bench::Result<RunReport>, String)>,
) {
    let control = ysql_bench::Control::default();
    let stopper = control.clone();
    let run = tokio::spawn(async move {
        let mut out = Vec::new();
        let r = ysql_bench::run_with(plan, &mut out, control).await;
        (r, String::from_utf8(out).expect("utf-8 summary"))
    });
    (stopper, run)
}

pub async fn client(sb: &Sandbox) -> Client {
    let (client, conn) = sb.config().connect(NoTls).await.expect("connect");
    tokio::spawn(conn);
    client
}

/// Whether `table` exists (in the connection's database).
pub async fn table_exists(c: &Client, table: &str) -> bool {
    c.query_one("select to_regclass($1) is not null", &[&table])
        .await
        .expect("to_regclass")
        .get(0)
}

/// What a load must leave behind.
#[derive(Debug, PartialEq, Eq)]
pub struct TableFacts {
    pub count: i64,
    pub distinct: i64,
    pub min: Option<i32>,
    pub max: Option<i32>,
    pub min_len: Option<i32>,
    pub max_len: Option<i32>,
}

pub async fn facts(c: &Client, quoted_table: &str) -> TableFacts {
    let r = c
        .query_one(
            &format!(
                "select count(*), count(distinct id), min(id), max(id), \
                 least(min(length(f1)), min(length(f2)), min(length(f3)), min(length(f4))), \
                 greatest(max(length(f1)), max(length(f2)), max(length(f3)), max(length(f4))) \
                 from {quoted_table}"
            ),
            &[],
        )
        .await
        .expect("facts query");
    TableFacts {
        count: r.get(0),
        distinct: r.get(1),
        min: r.get(2),
        max: r.get(3),
        min_len: r.get(4),
        max_len: r.get(5),
    }
}

/// The facts of a complete load of `rows` rows with fields of `len`.
pub fn loaded(rows: i64, len: i32) -> TableFacts {
    TableFacts {
        count: rows,
        distinct: rows,
        min: (rows > 0).then_some(0),
        max: (rows > 0).then_some(rows as i32 - 1),
        min_len: (rows > 0).then_some(len),
        max_len: (rows > 0).then_some(len),
    }
}

/// A digest of the whole table's content, to compare two loads ("" for
/// an empty table).
pub async fn digest(c: &Client, quoted_table: &str) -> String {
    c.query_one(
        &format!(
            "select md5(string_agg(id || ',' || f1 || ',' || f2 || ',' || f3 || ',' || f4, ';' order by id)) from {quoted_table}"
        ),
        &[],
    )
    .await
    .expect("digest query")
    .get::<_, Option<String>>(0)
    .unwrap_or_default()
}

/// Runs one of the crate's binaries.
pub fn bin(name: &str, args: &[&str]) -> Output {
    bin_env(name, args, &[])
}

/// Runs one of the crate's binaries with `env` set for it alone (never
/// for the test process, whose other tests run in parallel).
pub fn bin_env(name: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let path = match name {
        "ysql-bench" => env!("CARGO_BIN_EXE_ysql-bench"),
        "csv_generator" => env!("CARGO_BIN_EXE_csv_generator"),
        other => panic!("unknown binary {other}"),
    };
    let mut cmd = Command::new(path);
    cmd.args(args).env_remove("YSQLBENCH_URL");
    // The libpq variables of whoever runs the tests (PGPASSWORD, PGPORT,
    // ...) would fill what a test's -u leaves out: the child starts
    // without them and gets only those the test gives.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PG") {
            cmd.env_remove(name);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("the binary runs")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A directory the server's own user can read (tests run as root, the
/// server as postgres).
pub fn shared_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    d
}

/// The plan for `args` as given (the test supplies -u itself).
pub fn plan_of(args: &[&str]) -> RunPlan {
    let mut all = vec!["ysql-bench"];
    all.extend_from_slice(args);
    RunPlan::from_cli(Cli::try_parse_from(all).expect("flags parse")).expect("plan is valid")
}

/// Runs `args` in process (the test supplies -u itself); the run's error
/// when it could not complete.
pub async fn try_run_plain(args: &[&str]) -> ysql_bench::Result<(RunReport, String)> {
    let mut out = Vec::new();
    let report = run(plan_of(args), &mut out).await?;
    Ok((report, String::from_utf8(out).expect("utf-8 summary")))
}

/// Runs `args` in process (the test supplies -u itself).
pub async fn run_plain(args: &[&str]) -> (RunReport, String) {
    let mut out = Vec::new();
    let report = run(plan_of(args), &mut out)
        .await
        .expect("the run completes");
    (report, String::from_utf8(out).expect("utf-8 summary"))
}

/// Rows in a procedure load that no test lets run to its end.
pub const LONG_PROCEDURE_ROWS: u64 = 20_000_000;

/// A procedure load of [`LONG_PROCEDURE_ROWS`] on 2 threads, with `extra`
/// flags that end it early; checks that the summary counts exactly the
/// rows the table holds, part of the whole, and returns that count.
pub async fn cut_short_procedure(sb: &Sandbox, extra: &[&str]) -> (RunReport, String, u64) {
    let rows = LONG_PROCEDURE_ROWS.to_string();
    let mut args = vec!["-o", "procedure", "-r", &rows, "-t", "2"];
    args.extend_from_slice(extra);
    let (report, text) = run_args(sb, &args).await;
    let in_table = facts(&client(sb).await, "test_table").await.count as u64;
    assert!(
        in_table > 0 && in_table < LONG_PROCEDURE_ROWS,
        "{in_table}\n{text}"
    );
    assert_eq!(report.operations[0].total.rows, in_table, "{text}");
    // The per-interval figures (CSV, JSON) hold the same rows.
    let per_interval: u64 = report.operations[0].intervals.iter().map(|i| i.rows).sum();
    assert_eq!(per_interval, in_table, "{text}");
    (report, text, in_table)
}

/// Index scans of `table` on the server so far, once the backends that
/// ran them have flushed their statistics (PostgreSQL 15 flushes at exit
/// or at most once a second): waits until two readings agree.
pub async fn index_scans(c: &Client, table: &str) -> i64 {
    // First let the run's sessions end (they flush their statistics as
    // they exit), then wait for the count to settle.
    for _ in 0..100 {
        let others: i64 = c
            .query_one(
                "select count(*) from pg_stat_activity where backend_type = 'client backend' \
                 and application_name like 'ysql-bench-%' and pid <> pg_backend_pid()",
                &[],
            )
            .await
            .expect("pg_stat_activity")
            .get(0);
        if others == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut last = -1;
    for _ in 0..50 {
        let _ = c.simple_query("select pg_stat_clear_snapshot()").await;
        let n: i64 = c
            .query_one(
                "select coalesce(sum(idx_scan), 0)::int8 from pg_stat_user_tables where relname = $1",
                &[&table],
            )
            .await
            .expect("pg_stat_user_tables")
            .get(0);
        if n == last {
            return n;
        }
        last = n;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    last
}

/// The uid and gid of the `postgres` user when we are root (servers and
/// poolers refuse to run as root), None otherwise.
pub fn service_user() -> Option<(u32, u32)> {
    ysql_bench::db::sandbox::service_user().expect("a postgres user exists when running as root")
}

/// A free TCP port on 127.0.0.1, from below the ephemeral range, so that
/// another test's outgoing connection cannot take it before the program
/// under test binds it (the sandbox's own picker says more).
pub fn free_port() -> u16 {
    ysql_bench::db::sandbox::free_port().expect("a free port")
}

/// The condition that finds the workers' backends of a run in
/// pg_stat_activity: every connection of a run is named `ysql-bench-` and
/// the run id, the server watcher's own with `-stats` after it.
pub const WORKER_BACKENDS: &str =
    "application_name like 'ysql-bench-%' and application_name not like '%-stats'";

/// A helper server (haproxy, PgBouncer) started by a test: killed when
/// dropped, so also when the test panics; and asked to die with the test
/// process on Linux.
pub struct Daemon {
    pub name: &'static str,
    child: std::process::Child,
    pub log: std::path::PathBuf,
}

impl Daemon {
    /// Starts `cmd` (as the postgres user when we are root and `as_service`)
    /// and waits until `port` on 127.0.0.1 accepts connections.
    pub fn start(
        name: &'static str,
        mut cmd: Command,
        port: u16,
        log: std::path::PathBuf,
        as_service: bool,
    ) -> Daemon {
        use std::os::unix::process::CommandExt;
        if as_service && let Some((uid, gid)) = service_user() {
            cmd.uid(uid).gid(gid);
        }
        // SAFETY: prctl is async-signal-safe; runs in the child before exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        cmd.stdin(std::process::Stdio::null());
        let child = cmd.spawn().unwrap_or_else(|e| {
            panic!("cannot start {name} ({e}): scripts/install-deps.sh installs it")
        });
        let mut d = Daemon { name, child, log };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return d;
            }
            if let Ok(Some(status)) = d.child.try_wait() {
                panic!("{name} exited with {status}: {}", d.log_text());
            }
            if std::time::Instant::now() > deadline {
                panic!("{name} did not listen on {port}: {}", d.log_text());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether it still runs, and its log: what a failing test shows.
    pub fn state(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(None) => "running".to_string(),
            Ok(Some(s)) => format!("exited with {s}"),
            Err(e) => format!("unknown ({e})"),
        };
        format!("{} {status}; its log:\n{}", self.name, self.log_text())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A system program that Debian installs in /usr/sbin (haproxy,
/// pgbouncer), found also when /usr/sbin is not on PATH (as for non-root
/// users).
pub fn system_program(name: &str) -> Command {
    let sbin = std::path::Path::new("/usr/sbin").join(name);
    if sbin.is_file() {
        Command::new(sbin)
    } else {
        Command::new(name)
    }
}

/// pgbench of the server's version (installed with PostgreSQL's server
/// binaries), else the one on PATH.
pub fn pgbench() -> Command {
    let beside = ysql_bench::db::sandbox::find_bindir()
        .ok()
        .map(|d| d.join("pgbench"))
        .filter(|p| p.is_file());
    Command::new(beside.unwrap_or_else(|| std::path::PathBuf::from("pgbench")))
}

/// Runs pgbench against `db` of the sandbox; panics with its output on
/// failure. The database is a positional argument (pgbench's -d is
/// --debug).
pub fn run_pgbench(sb: &Sandbox, db: &str, args: &[&str]) -> String {
    let port = sb.port().to_string();
    let out = pgbench()
        .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres"])
        .args(args)
        .arg(db)
        .output()
        .expect("pgbench runs (it is installed with PostgreSQL)");
    let text = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "pgbench {args:?}: {text}");
    text
}

/// Follows a child's stderr on a thread: each line as it comes, on the
/// receiver (to wait for a marker), and the whole text when the thread is
/// joined (for the assertions).
#[allow(dead_code)]
pub fn follow_lines(
    stderr: std::process::ChildStderr,
) -> (
    std::sync::mpsc::Receiver<String>,
    std::thread::JoinHandle<String>,
) {
    use std::io::{BufRead, BufReader};
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    (rx, reader)
}
