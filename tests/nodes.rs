//! Several nodes: a host list with --load-balance spreads the workers over
//! two real servers (counted on each server, not only by the tool), a host
//! list without it keeps libpq's failover meaning, and --reconnect makes a
//! new connection per unit and times it apart.
//!
//! The two sandbox servers are separate PostgreSQL instances, not one
//! cluster: the table is loaded on each before the balanced select.

mod common;
use common::*;

const ROWS: &str = "1000";

async fn load(sb: &ysql_bench::db::sandbox::Sandbox) {
    let (r, s) = run_args(sb, &["-o", "copy-mem", "-r", ROWS, "-f", "8"]).await;
    assert!(r.succeeded(), "{s}");
}

/// A 1 s select by `threads` workers over `url`, with `extra` flags.
async fn select_1s(url: &str, threads: &str, extra: &[&str]) -> (ysql_bench::RunReport, String) {
    let mut args = vec![
        "-u", url, "-o", "select", "-r", ROWS, "-t", threads, "--time", "1s",
    ];
    args.extend_from_slice(extra);
    run_plain(&args).await
}

fn host_list(a: &ysql_bench::db::sandbox::Sandbox, b: &ysql_bench::db::sandbox::Sandbox) -> String {
    format!(
        "host=127.0.0.1,127.0.0.1 port={},{} user=postgres dbname=postgres",
        a.port(),
        b.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balance_spreads_the_workers_over_both_nodes() {
    let (a, b) = (sandbox(), sandbox());
    load(&a).await;
    load(&b).await;
    let (ca, cb) = (client(&a).await, client(&b).await);
    let before = (
        index_scans(&ca, "test_table").await,
        index_scans(&cb, "test_table").await,
    );

    let url = host_list(&a, &b);
    let json_dir = tempfile::tempdir().unwrap();
    let json_path = json_dir.path().join("run.json");
    let (report, summary) = select_1s(
        &url,
        "4",
        &[
            "--json",
            json_path.to_str().unwrap(),
            "--load-balance",
            "round-robin",
        ],
    )
    .await;
    assert!(report.succeeded(), "{summary}");
    let op = &report.operations[0];
    let label_a = format!("127.0.0.1:{}", a.port());
    let label_b = format!("127.0.0.1:{}", b.port());
    assert_eq!(op.hosts, [label_a.clone(), label_b.clone()]);
    // Four workers round-robin over two hosts: two connections each.
    assert_eq!(op.total.conns.opened, [2, 2]);
    let (ops_a, ops_b) = (op.total.conns.ops[0], op.total.conns.ops[1]);
    assert!(ops_a > 50 && ops_b > 50, "{summary}");
    assert_eq!(ops_a + ops_b, op.total.ops);
    for (label, ops) in [(&label_a, ops_a), (&label_b, ops_b)] {
        let line = format!(
            "{:<22}: 2 connections, {ops} queries",
            format!("host {label}")
        );
        assert!(summary.contains(&line), "{line} missing in\n{summary}");
    }

    // The JSON report has the same per-host counts.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(doc["config"]["load_balance"], "round-robin");
    let hosts = &doc["operations"][0]["hosts"];
    assert_eq!(hosts[0]["host"], label_a.as_str());
    assert_eq!(hosts[0]["connections"], 2);
    assert_eq!(hosts[0]["units"], ops_a);
    assert_eq!(hosts[1]["units"], ops_b);

    // Each server saw the selects the tool says it sent there.
    drop(report);
    let after = (
        index_scans(&ca, "test_table").await,
        index_scans(&cb, "test_table").await,
    );
    assert_eq!(after.0 - before.0, ops_a as i64, "node a");
    assert_eq!(after.1 - before.1, ops_b as i64, "node b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_urls_balance_at_random_and_a_plain_host_list_fails_over() {
    let (a, b) = (sandbox(), sandbox());
    load(&a).await;
    load(&b).await;

    // -u twice, --load-balance random: both hosts get work.
    let (ua, ub) = (a.url(), b.url());
    let (report, summary) = run_plain(&[
        "-u",
        &ua,
        "-u",
        &ub,
        "--load-balance",
        "random",
        "-o",
        "select",
        "-r",
        ROWS,
        "-t",
        "8",
        "--time",
        "1s",
        "--seed",
        "3",
    ])
    .await;
    assert!(report.succeeded(), "{summary}");
    let conns = &report.operations[0].total.conns;
    assert_eq!(conns.opened.iter().sum::<u64>(), 8);
    assert!(conns.opened.iter().all(|&n| n > 0), "{summary}");

    // The same host list without --load-balance: libpq's failover, every
    // connection on the first host that answers.
    let cb = client(&b).await;
    let before_b = index_scans(&cb, "test_table").await;
    let url = host_list(&a, &b);
    let (report, summary) = select_1s(&url, "4", &[]).await;
    assert!(report.succeeded(), "{summary}");
    assert!(!summary.contains("host 127.0.0.1"), "{summary}");
    drop(report);
    assert_eq!(
        index_scans(&cb, "test_table").await,
        before_b,
        "node b was used"
    );

    // With node a down, failover finds node b.
    let mut a = a;
    a.stop_server();
    let (report, summary) = select_1s(&url, "2", &[]).await;
    assert!(report.succeeded(), "{summary}");
    drop(report);
    assert!(index_scans(&cb, "test_table").await > before_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_makes_one_connection_per_query_and_times_it_apart() {
    let (a, b) = (sandbox(), sandbox());
    load(&a).await;
    load(&b).await;
    let url = host_list(&a, &b);
    let (report, summary) = select_1s(&url, "2", &["--load-balance", "round-robin", "-C"]).await;
    assert!(report.succeeded(), "{summary}");
    let op = &report.operations[0];
    let conns = &op.total.conns;
    assert!(op.total.ops > 10, "{summary}");
    // One new connection per query, every one timed.
    assert_eq!(conns.timed(), op.total.ops);
    assert_eq!(conns.opened.iter().sum::<u64>(), op.total.ops);
    // Round-robin per connection: each worker alternates, so the hosts
    // differ by at most one connection per worker.
    assert!(conns.opened[0].abs_diff(conns.opened[1]) <= 2, "{summary}");
    // A new connection costs more than the point query on it.
    let mean_connect = conns.connect_total.as_secs_f64() / conns.timed() as f64;
    assert!(mean_connect > op.total.latency.mean() / 1e9, "{summary}");
    assert!(summary.contains("new (--reconnect), avg "), "{summary}");
    let with = op.total.ops as f64 / op.wallclock.as_secs_f64();
    let without = ysql_bench::report::conns::rate_without_connect(op).unwrap();
    assert!(without > with, "{summary}");
    assert!(summary.contains("queries/s w/o connect : "), "{summary}");

    // A load with -C: one connection per batch, and every row arrives.
    let (report, summary) = run_plain(&[
        "-u",
        &a.url(),
        "-C",
        "-o",
        "insert",
        "-r",
        "1000",
        "-b",
        "100",
        "-t",
        "2",
    ])
    .await;
    assert!(report.succeeded(), "{summary}");
    let op = &report.operations[0];
    assert_eq!(op.total.conns.timed(), 10);
    assert_eq!(op.total.rows, 1000);
    let c = client(&a).await;
    assert_eq!(facts(&c, "test_table").await, loaded(1000, 24));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_file_client_streams_local_files_the_server_cannot_read() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    // A directory only we can read: the server (another user when we are
    // root) could not COPY from it, the client can.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = dir.path().to_str().unwrap();
    let out = bin(
        "csv_generator",
        &["-r", "2500", "-t", "3", "-f", "24", "-d", d],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let c = client(&sb).await;
    for extra in [&[][..], &["--no-prepared"]] {
        let mut args = vec![
            "-o",
            "copy-file",
            "--copy-file-client",
            "-r",
            "2500",
            "-t",
            "3",
            "--csv-dir",
            d,
        ];
        args.extend_from_slice(extra);
        let (r, s) = run_args(&sb, &args).await;
        assert!(r.succeeded(), "{extra:?}\n{s}");
        assert_eq!(r.operations[0].total.rows, 2500);
        assert_eq!(facts(&c, "test_table").await, loaded(2500, 24));
    }
    if service_user().is_some() {
        let (r, s) = run_args(
            &sb,
            &["-o", "copy-file", "-r", "2500", "-t", "3", "--csv-dir", d],
        )
        .await;
        assert!(!r.succeeded(), "the server read a private directory?\n{s}");
    }
    // A missing local file says where and how to make it.
    let (r, _) = run_args(
        &sb,
        &[
            "-o",
            "copy-file",
            "--copy-file-client",
            "-r",
            "10",
            "--csv-dir",
            d,
        ],
    )
    .await;
    let why = r.operations[0].failure.clone().unwrap();
    assert!(why.contains("on this machine"), "{why}");
    assert!(why.contains("csv_generator -r 10 -t 1 -f 24"), "{why}");
    // The flag without copy-file is a usage error.
    let out = bin(
        "ysql-bench",
        &["--sandbox", "-o", "insert", "--copy-file-client"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("-o copy-file"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yb_discover_on_postgresql_says_it_needs_yugabytedb() {
    // yb_servers() exists only on YugabyteDB; its parsing is unit-tested in
    // db::nodes, and it is untested against a live cluster.
    let sb = sandbox();
    let mut out = Vec::new();
    let e = ysql_bench::run(
        plan_of(&["-u", &sb.url(), "--yb-discover", "-o", "insert", "-r", "10"]),
        &mut out,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("yb_servers()") && e.contains("YugabyteDB"),
        "{e}"
    );
    // Refused before the table was created.
    let c = client(&sb).await;
    let tables: i64 = c
        .query_one(
            "select count(*) from pg_tables where tablename = 'test_table'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
    let out = bin(
        "ysql-bench",
        &["--sandbox", "--yb-discover", "-o", "insert"],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// A node that is down when the run starts is skipped: its workers go to
/// the next host instead of ending the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balance_skips_a_node_that_is_down_at_the_start() {
    let (a, b) = (sandbox(), sandbox());
    load(&b).await;
    let url = host_list(&a, &b);
    let mut a = a;
    a.stop_server();
    let (report, summary) = select_1s(&url, "4", &["--load-balance", "round-robin"]).await;
    assert!(report.succeeded(), "{summary}");
    let conns = &report.operations[0].total.conns;
    assert_eq!(conns.opened, vec![0, 4], "{summary}");
    assert_eq!(report.operations[0].total.missing, 0);
}
