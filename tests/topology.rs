//! YugabyteDB's topology (issue 29), against stand-ins: real PostgreSQL
//! servers on 127.0.0.1, each carrying a `yb_servers()` function of the
//! test's own that returns the servers' addresses with the columns of
//! YugabyteDB's (host, port, num_connections, node_type, cloud, region,
//! zone, public_ip, uuid), zones and node types the test chooses. None of
//! this ran against a live YugabyteDB cluster.
//!
//! Where the workers are is read on each server (`pg_stat_activity`:
//! backends whose statement is the select's), not only from the tool's
//! per-host figures.

mod common;
use common::*;

use std::time::{Duration, Instant};

use ysql_bench::db::sandbox::Sandbox;

const ROWS: &str = "1000";

/// A node of the stand-in cluster: its server and its place.
struct Node<'a> {
    sb: &'a Sandbox,
    node_type: &'a str,
    cloud: &'a str,
    region: &'a str,
    zone: &'a str,
}

/// `create or replace function yb_servers()` answering `nodes`.
fn yb_servers_sql(nodes: &[Node<'_>]) -> String {
    let rows: Vec<String> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "('127.0.0.1', {}::int8, 0, '{}', '{}', '{}', '{}', '', 'uuid-{i}')",
                n.sb.port(),
                n.node_type,
                n.cloud,
                n.region,
                n.zone
            )
        })
        .collect();
    format!(
        "create or replace function yb_servers() returns table(host text, port bigint, \
         num_connections int, node_type text, cloud text, region text, zone text, \
         public_ip text, uuid text) language sql as $$ values {} $$",
        rows.join(", ")
    )
}

/// Gives every server of `on` the function answering `nodes`.
async fn set_yb_servers(on: &[&Sandbox], nodes: &[Node<'_>]) {
    let sql = yb_servers_sql(nodes);
    for sb in on {
        client(sb).await.batch_execute(&sql).await.unwrap();
    }
}

async fn load(sb: &Sandbox) {
    let (r, s) = run_args(sb, &["-o", "copy-mem", "-r", ROWS, "-f", "8"]).await;
    assert!(r.succeeded(), "{s}");
}

/// The run's workers on `sb` now: backends whose statement is the select.
async fn workers_on(sb: &Sandbox) -> i64 {
    let Ok((c, conn)) = sb.config().connect(tokio_postgres::NoTls).await else {
        return 0;
    };
    tokio::spawn(conn);
    c.query_one(
        "select count(*) from pg_stat_activity where pid <> pg_backend_pid() \
         and query like 'select f1, f2, f3, f4 from%'",
        &[],
    )
    .await
    .map(|r| r.get(0))
    .unwrap_or(0)
}

/// Waits until `cond` holds (for at most `limit`); false if it never did.
async fn eventually<F, Fut>(limit: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if cond().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

fn url_of(sb: &Sandbox) -> String {
    format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres",
        sb.port()
    )
}

/// Workers go only to the preferred zone while it is up, move to the
/// fallback zone when its servers are stopped, and come back after
/// `--yb-refresh` once they answer again; the reports give the figures
/// per zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_stay_in_the_preferred_zone_fall_back_and_come_back() {
    let (mut a1, mut a2, b1) = (sandbox(), sandbox(), sandbox());
    for sb in [&a1, &a2, &b1] {
        load(sb).await;
    }
    let place = |sb, zone| Node {
        sb,
        node_type: "primary",
        cloud: "cloud",
        region: "r1",
        zone,
    };
    set_yb_servers(
        &[&a1, &a2, &b1],
        &[place(&a1, "a"), place(&a2, "a"), place(&b1, "b")],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let csv = dir.path().join("run.csv");
    let url = url_of(&b1);
    let (stop, run) = spawn_interruptible(plan_of(&[
        "-u",
        &url,
        "-o",
        "select",
        "-r",
        ROWS,
        "-t",
        "4",
        "--time",
        "60s",
        "--topology-keys",
        "cloud.r1.a:1,cloud.r1.b:2",
        "--yb-refresh",
        "1s",
        "--failed-host-delay",
        "1s",
        "--no-server-stats",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]));
    let limit = Duration::from_secs(15);
    // Zone a (priority 1) takes every worker; b only is the fallback.
    assert!(
        eventually(limit, || async {
            workers_on(&a1).await + workers_on(&a2).await == 4
        })
        .await,
        "the workers never all reached zone a"
    );
    assert_eq!(workers_on(&b1).await, 0, "a worker went to zone b");

    // Zone a goes down: the workers move to zone b.
    tokio::task::block_in_place(|| {
        a1.stop_server();
        a2.stop_server();
    });
    assert!(
        eventually(limit, || async { workers_on(&b1).await == 4 }).await,
        "the workers did not fall back to zone b"
    );

    // Zone a answers again: after a refresh the workers come back.
    tokio::task::block_in_place(|| {
        a1.start_server().unwrap();
        a2.start_server().unwrap();
    });
    assert!(
        eventually(limit, || async {
            workers_on(&b1).await == 0 && workers_on(&a1).await + workers_on(&a2).await == 4
        })
        .await,
        "the workers did not come back to zone a: {} on b",
        workers_on(&b1).await
    );
    stop.interrupt();
    let (report, summary) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(op.total.ops > 0, "{summary}");

    // The summary, the JSON and the record say it per zone.
    assert!(summary.contains("zone cloud.r1.a"), "{summary}");
    assert!(summary.contains("zone cloud.r1.b"), "{summary}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let zones = doc["operations"][0]["zones"].as_array().unwrap().clone();
    assert_eq!(zones.len(), 2, "{zones:?}");
    let zone = |name: &str| zones.iter().find(|z| z["zone"] == name).unwrap().clone();
    let (za, zb) = (zone("cloud.r1.a"), zone("cloud.r1.b"));
    assert_eq!(za["hosts"], 2);
    assert_eq!(zb["hosts"], 1);
    // Four workers first in a, then four in b, then back in a.
    assert!(za["connections"].as_u64().unwrap() >= 8, "{za}");
    assert!(zb["connections"].as_u64().unwrap() >= 4, "{zb}");
    assert!(za["units"].as_u64().unwrap() > 0 && zb["units"].as_u64().unwrap() > 0);
    let units = za["units"].as_u64().unwrap() + zb["units"].as_u64().unwrap();
    assert_eq!(units, op.total.ops);
    let hosts = doc["operations"][0]["hosts"].as_array().unwrap();
    assert!(
        hosts.iter().all(|h| h["node_type"] == "primary"),
        "{hosts:?}"
    );
    assert_eq!(
        doc["config"]["topology"],
        "only-primary, topology cloud.r1.a:1,cloud.r1.b:2"
    );
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let head = csv_text.lines().next().unwrap();
    assert!(head.contains("units_zone_cloud.r1.a"), "{head}");
}

/// A node added to `yb_servers()`'s answer during the run receives the
/// new connections (here one per query, `-C`); the node types follow the
/// smart drivers' modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_added_during_the_run_gets_connections_and_node_types_are_kept() {
    let (p1, p2, rr) = (sandbox(), sandbox(), sandbox());
    for sb in [&p1, &p2, &rr] {
        load(sb).await;
    }
    let node = |sb, node_type| Node {
        sb,
        node_type,
        cloud: "c",
        region: "r",
        zone: "z",
    };
    let all = [&p1, &p2, &rr];
    set_yb_servers(&all, &[node(&p1, "primary"), node(&rr, "read_replica")]).await;
    let url = url_of(&p1);

    // Node types: only the read replica, or only the primary.
    for (mode, only) in [("only-rr", &rr), ("only-primary", &p1), ("prefer-rr", &rr)] {
        let (report, summary) = run_plain(&[
            "-u",
            &url,
            "-o",
            "select",
            "-r",
            ROWS,
            "-t",
            "2",
            "--time",
            "500ms",
            "--load-balance",
            mode,
            "--no-server-stats",
        ])
        .await;
        let op = &report.operations[0];
        assert!(report.succeeded(), "{mode}: {summary}");
        let label = format!("127.0.0.1:{}", only.port());
        for (h, n) in op.hosts.iter().zip(&op.total.conns.opened) {
            assert_eq!(
                *n > 0,
                *h == label,
                "{mode}: {h} had {n} connections\n{summary}"
            );
        }
    }

    // A node added while the run goes on: new connections reach it.
    let plan = plan_of(&[
        "-u",
        &url,
        "-o",
        "select",
        "-r",
        ROWS,
        "-t",
        "2",
        "--time",
        "60s",
        "-C",
        "--yb-refresh",
        "1s",
        "--no-server-stats",
    ]);
    let (stop, run) = spawn_interruptible(plan);
    let c2 = client(&p2).await;
    let before = index_scans(&c2, "test_table").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        index_scans(&c2, "test_table").await,
        before,
        "p2 was used before it was listed"
    );
    set_yb_servers(
        &all,
        &[
            node(&p1, "primary"),
            node(&p2, "primary"),
            node(&rr, "read_replica"),
        ],
    )
    .await;
    let reached = eventually(Duration::from_secs(15), || async {
        index_scans(&c2, "test_table").await > before
    })
    .await;
    stop.interrupt();
    let (report, summary) = run.await.unwrap();
    let report = report.unwrap();
    assert!(reached, "the new node got no query\n{summary}");
    let op = &report.operations[0];
    let label = format!("127.0.0.1:{}", p2.port());
    let i = op
        .hosts
        .iter()
        .position(|h| *h == label)
        .expect("the new node is in the report");
    assert!(op.total.conns.opened[i] > 0, "{summary}");
    // The read replica took nothing: discovery alone is primaries only.
    let rr_label = format!("127.0.0.1:{}", rr.port());
    let r = op.hosts.iter().position(|h| *h == rr_label).unwrap();
    assert_eq!(
        op.total.conns.opened.get(r).copied().unwrap_or(0),
        0,
        "{summary}"
    );
}

/// On PostgreSQL (no yb_servers()) the flags refuse with one line, exit 2,
/// before the table is touched; bad keys are refused before connecting.
#[test]
fn topology_flags_refuse_postgresql_and_bad_keys_with_one_line() {
    let sb = sandbox();
    let url = url_of(&sb);
    for flags in [
        &["--topology-keys", "c.r.z"][..],
        &["--load-balance", "prefer-primary"],
        &["--yb-refresh", "2s"],
    ] {
        let mut args = vec!["-u", url.as_str(), "-o", "insert", "-r", "10"];
        args.extend_from_slice(flags);
        let out = bin("ysql-bench", &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_default();
        assert!(
            line.contains("no yb_servers()") && line.contains("YugabyteDB"),
            "{err}"
        );
    }
    // Refused before the table was created.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tables: i64 = rt.block_on(async {
        client(&sb)
            .await
            .query_one(
                "select count(*) from pg_tables where tablename = 'test_table'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert_eq!(tables, 0);
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            "host=127.0.0.1 port=1",
            "--topology-keys",
            "aws.*.z",
            "-o",
            "select",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("only the zone may be '*'"), "{err}");
    assert!(!err.contains("cannot connect"), "{err}");
}

/// A preferred zone whose only node is down from the start: the workers
/// spread over the fallback zone's two nodes, not all onto one (the
/// rotation used to move on past the failed node for the workers that
/// had picked it, and so land where those that had not would: -t 6 all
/// on one node). A key that matches no node is said at the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_spread_over_the_fallback_when_the_preferred_zone_is_down_from_the_start() {
    let (mut gone, b1, b2) = (sandbox(), sandbox(), sandbox());
    for sb in [&b1, &b2] {
        load(sb).await;
    }
    let place = |sb, zone| Node {
        sb,
        node_type: "primary",
        cloud: "cloud",
        region: "r1",
        zone,
    };
    set_yb_servers(
        &[&b1, &b2],
        &[place(&gone, "a"), place(&b1, "b"), place(&b2, "b")],
    )
    .await;
    tokio::task::block_in_place(|| gone.stop_server());
    let url = url_of(&b1);
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &url,
            "-o",
            "select",
            "-r",
            ROWS,
            "-t",
            "6",
            "--time",
            "1s",
            "--topology-keys",
            "cloud.r1.a:1,cloud.r1.b:2,cloud.r1.typo:3",
            "--no-server-stats",
        ],
    );
    let (err, summary) = (text(&out.stderr), text(&out.stdout));
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: --topology-keys entry cloud.r1.typo:3 matches no node"),
        "{err}"
    );
    for sb in [&b1, &b2] {
        let line = summary
            .lines()
            .find(|l| l.starts_with(&format!("host 127.0.0.1:{}", sb.port())))
            .unwrap_or_else(|| panic!("no line for {}\n{summary}", sb.port()));
        assert!(line.contains(": 3 connections"), "{summary}");
    }
}
