//! TPC-C against a throwaway server: the load's cardinalities and data
//! rules, a run of the five transactions, and the consistency conditions
//! of clause 3.3.2, kept by a run and broken by a tampered table.

mod common;

use common::*;
use tokio_postgres::Client;

async fn count(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_warehouse_loads_with_the_specifications_cardinalities() {
    let sb = sandbox();
    let started = std::time::Instant::now();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "tpcc-load",
            "--warehouses",
            "1",
            "-t",
            "2",
            "--seed",
            "5",
        ],
    )
    .await;
    eprintln!("1 warehouse loaded in {:?}", started.elapsed());
    assert!(r.succeeded(), "{s}");
    let c = client(&sb).await;
    for (t, n) in [
        ("warehouse", 1),
        ("district", 10),
        ("customer", 30_000),
        ("history", 30_000),
        ("orders", 30_000),
        ("new_order", 9_000),
        ("item", 100_000),
        ("stock", 100_000),
    ] {
        assert_eq!(
            count(&c, &format!("select count(*) from {t}")).await,
            n,
            "{t}"
        );
    }
    let lines = count(&c, "select count(*) from order_line").await;
    assert_eq!(
        lines,
        count(&c, "select sum(o_ol_cnt)::bigint from orders").await
    );
    assert!((280_000..=320_000).contains(&lines), "{lines}");
    // Clause 4.3.3.1: the last 900 orders of each district are new.
    assert_eq!(
        count(&c, "select count(*) from orders where o_carrier_id is null").await,
        9_000
    );
    assert_eq!(
        count(&c, "select min(no_o_id)::bigint from new_order").await,
        2101
    );
    assert_eq!(
        count(
            &c,
            "select count(distinct c_last) from customer where c_id <= 1000"
        )
        .await,
        1000
    );
    assert_eq!(
        count(
            &c,
            "select count(*) from district where d_next_o_id <> 3001"
        )
        .await,
        0
    );
    // The same seed gives the same data, whatever the threads.
    let digest = "select md5(string_agg(c_last || c_first, ',' order by c_w_id, c_d_id, c_id)) from customer";
    let first: String = c.query_one(digest, &[]).await.unwrap().get(0);
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "tpcc-load",
            "--warehouses",
            "1",
            "-t",
            "1",
            "--seed",
            "5",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let again: String = c.query_one(digest, &[]).await.unwrap().get(0);
    assert_eq!(first, again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_keeps_the_consistency_conditions_and_a_tampered_table_breaks_one() {
    let sb = sandbox();
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
            "9",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let (r, s) = run_args(&sb, &["-o", "tpcc-check"]).await;
    assert!(r.succeeded(), "the load keeps the conditions\n{s}");
    let c = client(&sb).await;
    let dir = shared_dir();
    let json = dir.path().join("tpcc.json");
    let json_arg = json.to_str().unwrap();
    let orders0 = count(&c, "select count(*) from orders").await;
    let history0 = count(&c, "select count(*) from history").await;
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "tpcc",
            "--warehouses",
            "2",
            "-t",
            "4",
            "--time",
            "8s",
            "--seed",
            "9",
            "--json",
            json_arg,
        ],
    )
    .await;
    eprintln!("{s}");
    assert!(r.succeeded(), "{s}");
    let op = &r.operations[0];
    assert_eq!(op.checks.len(), 11, "{s}");
    assert!(op.checks.iter().all(|c| c.held), "{s}");
    let names: Vec<&str> = op.types.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "new-order",
            "payment",
            "order-status",
            "delivery",
            "stock-level"
        ]
    );
    let no = &op.types[0].stats;
    assert!(no.ops > 0, "{s}");
    // Every committed New-Order is one new order on the server; every
    // Payment one history row.
    let orders = count(&c, "select count(*) from orders").await - orders0;
    assert_eq!(orders as u64, no.ops - no.missing, "{s}");
    let payments = count(&c, "select count(*) from history").await - history0;
    assert_eq!(payments as u64, op.types[1].stats.ops, "{s}");
    let tpmc = op.metrics.iter().find(|m| m.key == "tpmc").unwrap();
    let want = (no.ops - no.missing) as f64 / (op.wallclock.as_secs_f64() / 60.0);
    assert!((tpmc.value - want).abs() < 1e-6);
    assert!(s.contains("tpmC"), "{s}");
    assert!(s.contains("efficiency"), "{s}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let m = &report["operations"][0]["metrics"];
    assert!(
        (m["tpmc"].as_f64().unwrap() - tpmc.value).abs() < 1e-6,
        "{m}"
    );
    assert!(m["efficiency"].as_f64().unwrap() > 0.0, "{m}");
    // The mix, counted on the server, is about 45/43.
    let share = orders as f64 / (orders + payments) as f64;
    assert!((0.45..0.56).contains(&share), "{share}\n{s}");

    // A server restart in the middle of a run: transactions in flight
    // roll back, the terminals reconnect, and no half transaction is left.
    let mut sb = sb;
    drop(c);
    let p = plan(
        &sb,
        &["-o", "tpcc", "--warehouses", "2", "-t", "4", "--time", "5s"],
    );
    let run = spawn_run(p);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    tokio::task::block_in_place(|| {
        sb.stop_server();
        std::thread::sleep(std::time::Duration::from_millis(800));
        sb.start_server().unwrap();
    });
    let (report, s) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(op.total.reconnects >= 1, "{s}");
    assert_eq!(op.checks.len(), 11, "{s}");
    assert!(op.checks.iter().all(|c| c.held), "{s}");
    let c = client(&sb).await;

    // More warehouses than loaded: refused before any transaction.
    let (r, s) = run_args(&sb, &["-o", "tpcc", "--warehouses", "3", "--time", "1s"]).await;
    assert!(!r.succeeded(), "{s}");
    let why = r.operations[0].failure.clone().unwrap_or_default();
    assert!(
        why.contains("run -o tpcc-load --warehouses 3 first"),
        "{why}"
    );
    assert_eq!(r.operations[0].total.ops, 0);

    // A tampered warehouse breaks condition 1 (and 8), and the check
    // fails the run.
    c.batch_execute("update warehouse set w_ytd = w_ytd + 1 where w_id = 1")
        .await
        .unwrap();
    let (r, s) = run_args(&sb, &["-o", "tpcc-check"]).await;
    assert!(!r.succeeded(), "{s}");
    let broken: Vec<&str> = r.operations[0]
        .checks
        .iter()
        .filter(|c| !c.held)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        broken,
        [
            "TPC-C 3.3.2.1: W_YTD = sum(D_YTD)",
            "TPC-C 3.3.2.8: W_YTD = sum(H_AMOUNT)"
        ],
        "{s}"
    );
}
