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
