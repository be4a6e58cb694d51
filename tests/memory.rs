//! Memory per connection (issues 16 and 24): measurement memory follows
//! the OS threads, not the connections, so a run with hundreds of
//! connections stays within a few tens of MB, also for a transaction of
//! several statements timed each (a pgbench script). The tool runs as a
//! child process and its own peak RSS is read with wait4, so that neither
//! the test process nor the sandbox server counts.

mod common;

use std::process::{Command, Stdio};

/// Peak RSS (KB) and exit status of `ysql-bench args`.
// The child is waited for with wait4 (for its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn peak_rss_kb(args: &[&str]) -> (i64, std::process::ExitStatus, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args(args)
        .env_remove("YSQLBENCH_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let pid = child.id() as libc::pid_t;
    // Its stderr is a few lines: read after the exit.
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child by its pid; `status` and `usage`
    // are valid for writes.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    use std::os::unix::process::ExitStatusExt;
    (
        usage.ru_maxrss,
        std::process::ExitStatus::from_raw(status),
        stderr,
    )
}

/// A 500-connection select with --graph and --json: its peak RSS stays
/// within 40 MB on either driver. Each connection beyond the first ten
/// costs at most 20 KB on the lean driver (measured: about 11 KB in a
/// debug build; its buffers start at 768 bytes) and 40 KB on
/// tokio-postgres (about 27 KB in a release build, of which 16 KB are
/// its two codec buffers; per-worker histograms were about 1 MB).
#[test]
fn five_hundred_connections_stay_within_the_memory_budget() {
    let sb = common::sandbox_with(vec![("max_connections".into(), "540".into())]);
    let url = sb.url();
    let out = common::bin(
        "ysql-bench",
        &[
            "-u", &url, "-o", "copy-mem", "-r", "5000", "-t", "2", "--drop",
        ],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().to_str().expect("utf-8 path");
    let json = dir.path().join("run.json");
    let json = json.to_str().expect("utf-8 path");
    let select = |threads: &str| {
        let (kb, status, err) = peak_rss_kb(&[
            "-u",
            &url,
            "-o",
            "select",
            "-r",
            "5000",
            "-t",
            threads,
            "--time",
            "2s",
            "--graph",
            "--graph-dir",
            graph,
            "--json",
            json,
        ]);
        assert!(status.success(), "{threads} connections: {err}");
        kb
    };
    {
        let (driver, budget_kb) = ("lean", 20.0);
        let few = select("10");
        let many = select("500");
        let per_conn = (many - few) as f64 / 490.0;
        eprintln!(
            "{driver}: peak RSS: 10 connections {:.1} MB, 500 connections {:.1} MB, {per_conn:.1} KB per connection",
            few as f64 / 1024.0,
            many as f64 / 1024.0
        );
        assert!(
            many <= 40 * 1024,
            "{driver}, 500 connections: peak RSS {many} KB over the 40 MB budget"
        );
        assert!(
            per_conn <= budget_kb,
            "{driver}: {per_conn:.1} KB per connection, over the {budget_kb} KB budget"
        );
    }
}

/// pgbench's tpcb-like at 500 connections: seven statements per
/// transaction, each timed apart (`--per-statement`, the JSON's
/// `statements`), and one branch that every transaction updates, so
/// latencies reach hundreds of milliseconds. Its peak RSS stays within 40
/// MB and each connection beyond the first ten costs at most 20 KB
/// (measured: 7 to 9 KB in a debug build); with a histogram per
/// statement in every connection's script it was about 1.1 MB each.
#[test]
fn a_script_of_several_statements_at_five_hundred_connections_stays_within_the_budget() {
    let sb = common::sandbox_with(vec![("max_connections".into(), "540".into())]);
    let url = sb.url();
    let out = common::bin(
        "ysql-bench",
        &["-u", &url, "-o", "pgbench-init", "-s", "1", "-t", "2"],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("run.json");
    let json = json.to_str().expect("utf-8 path");
    let tpcb = |threads: &str| {
        let (kb, status, err) = peak_rss_kb(&[
            "-u",
            &url,
            "--builtin",
            "tpcb-like",
            "-t",
            threads,
            "--time",
            "3s",
            "--per-statement",
            "--json",
            json,
        ]);
        assert!(status.success(), "{threads} connections: {err}");
        // The statements were timed: seven kinds, each once per
        // transaction (a failed one may have run some of them).
        let text = std::fs::read_to_string(json).expect("the JSON report");
        let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let op = &report["operations"][0];
        let units = op["units"].as_u64().expect("units");
        let failed = op["failed"].as_u64().expect("failed");
        let statements = op["statements"].as_array().expect("statements");
        assert_eq!(statements.len(), 7, "{threads} connections: {statements:?}");
        assert!(units > 0, "{threads} connections: no transaction");
        for st in statements {
            let count = st["count"].as_u64().expect("count");
            assert!(
                (units..=units + failed).contains(&count),
                "{threads} connections: {units} transactions, {failed} failed: {st}"
            );
        }
        kb
    };
    let budget_kb = 20.0;
    let few = tpcb("10");
    let many = tpcb("500");
    let per_conn = (many - few) as f64 / 490.0;
    eprintln!(
        "tpcb-like: peak RSS: 10 connections {:.1} MB, 500 connections {:.1} MB, {per_conn:.1} KB per connection",
        few as f64 / 1024.0,
        many as f64 / 1024.0
    );
    assert!(
        many <= 40 * 1024,
        "tpcb-like, 500 connections: peak RSS {many} KB over the 40 MB budget"
    );
    assert!(
        per_conn <= budget_kb,
        "tpcb-like: {per_conn:.1} KB per connection, over the {budget_kb} KB budget"
    );
}
