//! TPC-C's terminals over fewer connections (issue 28), against a
//! throwaway server: 200 terminals with keying and think times share 20
//! connections and keep every consistency condition; with 4 connections
//! they queue, and the queueing is in their latency, not their service
//! time; NOPM agrees with the server's count of New-Orders; the
//! statements' times add up to the transactions'; ten thousand idle
//! terminals cost the client a few MB.
//!
//! The waits are the specification's scaled down (`--tpcc-wait-scale`),
//! so that a run of seconds makes many cycles of every terminal.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use ysql_bench::stats::OpResult;

fn metric(op: &OpResult, key: &str) -> f64 {
    op.metrics
        .iter()
        .find(|m| m.key == key)
        .map(|m| m.value)
        .unwrap_or_else(|| panic!("no metric {key}"))
}

/// The most backends of the run's workers seen at once while `run`
/// lasts, sampled every 100 ms (the workers' application_name is
/// `ysql-bench-<run id>`; the server-statistics connections end in
/// `-stats`).
async fn most_backends<T>(
    sb: &ysql_bench::db::sandbox::Sandbox,
    run: tokio::task::JoinHandle<T>,
) -> (i64, T) {
    let c = client(sb).await;
    let mut most = 0;
    while !run.is_finished() {
        let n: i64 = c
            .query_one(
                "select count(*) from pg_stat_activity where backend_type = 'client backend' \
                 and application_name like 'ysql-bench-%' and application_name not like '%-stats'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        most = most.max(n);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (most, run.await.unwrap())
}

/// Peak RSS (KB) of `ysql-bench args` and its exit status and stderr:
/// the VmHWM of its process, read every 20 ms until it exits. (wait4's
/// ru_maxrss would not do: it keeps the high-water mark of the test
/// process the child was spawned from, tens of MB here.)
fn peak_rss_kb(args: &[&str]) -> (u64, std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args(args)
        .env_remove("YSQLBENCH_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        let hwm = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .unwrap_or(0);
        peak = peak.max(hwm);
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    (peak, status, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminals_share_fewer_connections_and_queue_for_them() {
    let sb = sandbox_with(vec![("max_connections".into(), "60".into())]);
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "tpcc-load",
            "--warehouses",
            "2",
            "-t",
            "2",
            "--seed",
            "4",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let run = |connections: &'static str, secs: &'static str| {
        plan(
            &sb,
            &[
                "-o",
                "tpcc",
                "--warehouses",
                "2",
                "--terminals",
                "200",
                "-t",
                connections,
                "--tpcc-wait",
                "--tpcc-wait-scale",
                "0.02",
                "--time",
                secs,
                "--seed",
                "5",
                "--no-server-stats",
                "--json",
                "/dev/null",
            ],
        )
    };

    // 200 terminals over 20 connections: never more than 20 backends of
    // the workers, every condition kept.
    let (most, (report, s)) = most_backends(&sb, spawn_run(run("20", "8s"))).await;
    let report = report.unwrap();
    eprintln!("{s}");
    let op = &report.operations[0];
    assert!(report.succeeded(), "{s}");
    assert!(op.failure.is_none(), "{s}");
    assert_eq!(op.checks.len(), 12, "{s}");
    assert!(op.checks.iter().all(|c| c.held), "{s}");
    assert!(
        (1..=20).contains(&most),
        "{most} backends of the run's workers at once\n{s}"
    );
    let opened: u64 = op.total.conns.opened.iter().sum();
    assert_eq!(opened, 20, "{s}");
    // Every terminal ran: 200 terminals of about a cycle a second each.
    assert!(op.total.ops > 400, "{s}");
    assert!(s.contains("200 terminals over 20 connections"), "{s}");
    assert!(
        s.contains("terminals             : 200 over 20 connections"),
        "{s}"
    );

    // NOPM is the committed New-Orders a minute; the server's count (the
    // rise of sum(d_next_o_id)) is the terminals' within 1%, and without
    // a warmup the terminals' count is the measured one.
    let committed = op.types[0].stats.ops - op.types[0].stats.missing;
    let nopm = metric(op, "nopm");
    let minutes = op.wallclock.as_secs_f64() / 60.0;
    assert!((nopm * minutes - committed as f64).abs() < 0.5, "{s}");
    let server = metric(op, "server_new_orders");
    let terminals = metric(op, "terminal_new_orders");
    assert!(server > 0.0, "{s}");
    assert!((server - committed as f64).abs() <= server * 0.01, "{s}");
    assert!((terminals - committed as f64).abs() <= 1.0, "{s}");
    assert!(s.contains("agree (within"), "{s}");
    // The isolation level that ran: the server's default.
    assert_eq!(metric(op, "isolation"), 2.0, "{s}");
    assert!(
        s.contains("read committed (the server's default_transaction_isolation"),
        "{s}"
    );

    // The statements inside the transactions add up to their service
    // time, less the client's own work between them (and the pauses
    // between the tries of a retried one).
    let statements: f64 = op
        .statements
        .iter()
        .map(|st| st.latency.mean() * st.count as f64)
        .sum();
    let service = op.total.busy.as_nanos() as f64;
    let share = statements / service;
    eprintln!("statements: {share} of the service time");
    assert!(
        (0.9..=1.01).contains(&share),
        "statements {share} of the service time\n{s}"
    );
    let names: Vec<&str> = op.statements.iter().map(|st| st.name).collect();
    assert!(
        names.contains(&"new-order: stock") && names.contains(&"commit"),
        "{names:?}"
    );

    // 200 terminals over 4 connections: they queue. The wait for a free
    // connection is in the latency (from when the terminal was ready),
    // not in the service time, and it is most of the response time.
    let (most, (report, s)) = most_backends(&sb, spawn_run(run("4", "5s"))).await;
    let report = report.unwrap();
    eprintln!("{s}");
    let op = &report.operations[0];
    assert!(report.succeeded(), "{s}");
    assert!(most <= 4, "{most}\n{s}");
    let t = &op.total;
    let queueing = t.lag_total.as_secs_f64() / t.ops as f64;
    let service = t.busy.as_secs_f64() / t.ops as f64;
    assert!(
        queueing > service,
        "queueing {queueing} s, service {service} s\n{s}"
    );
    assert!(
        t.latency.value_at_quantile(0.5) > t.service.value_at_quantile(0.5),
        "{s}"
    );
    for ty in &op.types {
        if ty.stats.ops > 0 {
            let lag = ty.stats.lag_total;
            let diff = ty.stats.latency.mean() - ty.stats.service.mean();
            let per_unit = lag.as_nanos() as f64 / ty.stats.ops as f64;
            // The queueing is the latency beyond the service time.
            assert!(
                (per_unit - diff).abs() <= per_unit * 0.02 + 1e6,
                "{}: {per_unit} {diff}",
                ty.name
            );
        }
    }
    assert!(s.contains("[new-order] queueing"), "{s}");
    assert!(s.contains("[new-order] service"), "{s}");

    // Ten thousand idle terminals (waits ten times the specification's:
    // none is ready within the run) cost the client little: the peak RSS
    // of the process beside one with ten terminals. The target (tens of
    // MB for ten thousand) is measured in bench/tpcc.sh.
    let url = sb.url();
    let rss = |terminals: &str| {
        let (kb, status, err) = peak_rss_kb(&[
            "-u",
            &url,
            "-o",
            "tpcc",
            "--warehouses",
            "2",
            "--terminals",
            terminals,
            "-t",
            "2",
            "--tpcc-wait",
            "--tpcc-wait-scale",
            "10",
            "--time",
            "2s",
            "--no-server-stats",
            "--quiet",
        ]);
        assert!(status.success(), "{err}");
        kb
    };
    let (few, many) = tokio::task::block_in_place(|| (rss("10"), rss("10000")));
    eprintln!("peak RSS: 10 terminals {few} KB, 10000 terminals {many} KB");
    assert!(
        many - few < 16 * 1024,
        "10 terminals {few} KB, 10000 terminals {many} KB"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_check_covers_the_sampled_warehouses_and_finds_what_breaks_there() {
    let sb = sandbox();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "tpcc-load",
            "--warehouses",
            "3",
            "-t",
            "2",
            "--seed",
            "4",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let c = client(&sb).await;
    // Warehouse 2 broken: a sample of one finds it when it draws 2, and
    // the whole check always does.
    c.batch_execute("update warehouse set w_ytd = w_ytd + 1 where w_id = 2")
        .await
        .unwrap();
    let (r, s) = run_args(&sb, &["-o", "tpcc-check"]).await;
    assert!(!r.succeeded(), "{s}");
    let mut found = 0;
    for seed in 1..=12 {
        let seed = seed.to_string();
        let (r, s) = run_args(
            &sb,
            &["-o", "tpcc-check", "--check-sample", "1", "--seed", &seed],
        )
        .await;
        let op = &r.operations[0];
        assert_eq!(op.checks.len(), 12, "{s}");
        assert!(
            op.checks
                .iter()
                .all(|c| c.detail.ends_with("on 1 of 3 warehouses (--check-sample)")),
            "{s}"
        );
        found += usize::from(!r.succeeded());
    }
    // One warehouse in three: about 4 of 12 samples draw it.
    assert!((1..12).contains(&found), "{found} of 12 samples found it");
    // A sample as large as the warehouses is the whole check.
    let (r, s) = run_args(&sb, &["-o", "tpcc-check", "--check-sample", "5"]).await;
    assert!(!r.succeeded(), "{s}");
    assert!(
        r.operations[0].checks[0].detail == "1 warehouses break it",
        "{s}"
    );
}
