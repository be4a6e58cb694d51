//! `--pipeline N` against real servers: the queries the tool counts are
//! the ones the server ran (index scans, rows updated), prepared and as
//! unnamed statements; a query that fails inside a pipeline fails alone
//! and is counted once; `--on-error stop` still counts what was in
//! flight; a server restart is survived; `--rate` keeps its rate with
//! queries in flight, latency never below service time; the depth is in
//! the summary and the JSON report. With `--pipeline-sync K` a batch of K
//! is one transaction on the server, and a failure in it fails all K.

mod common;

use std::time::Duration;

use common::{client, plan, run_args, sandbox, spawn_run};
use tokio_postgres::Client;
use ysql_bench::db::sandbox::Sandbox;

/// (idx_scan, n_tup_upd) of test_table and xact_rollback of the database,
/// once the backends that ran the queries have reported them (at exit,
/// which a run's end does not wait for): read until two reads a little
/// apart agree.
async fn counts(c: &Client) -> (i64, i64, i64) {
    let read = || async {
        c.batch_execute("select pg_stat_clear_snapshot()")
            .await
            .unwrap();
        let r = c
            .query_one(
                "select coalesce(idx_scan, 0), n_tup_upd, \
                 (select xact_rollback from pg_stat_database where datname = current_database()) \
                 from pg_stat_user_tables where relname = 'test_table'",
                &[],
            )
            .await
            .unwrap();
        (r.get::<_, i64>(0), r.get::<_, i64>(1), r.get::<_, i64>(2))
    };
    settled(read).await
}

/// What `read` gives once two reads a little apart agree.
async fn settled<T: PartialEq, F: std::future::Future<Output = T>>(read: impl Fn() -> F) -> T {
    let mut last = read().await;
    loop {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let now = read().await;
        if now == last {
            return now;
        }
        last = now;
    }
}

/// A trigger that refuses the update of every tenth id (SQLSTATE P0042).
const NO_TENS: &str = "create function no_tens() returns trigger language plpgsql as $$
     begin if new.id % 10 = 0 then raise exception 'id % refused', new.id using errcode = 'P0042'; end if; return new; end $$;
     create trigger no_tens before update on test_table for each row execute function no_tens();";

/// A trigger that refuses every `n`th try of an update with a
/// serialization failure (40001), counted by the sequence `tries`, which
/// a rollback does not undo.
fn every_nth_try_fails(n: u32) -> String {
    format!(
        "create sequence tries;
         create function nth_try_fails() returns trigger language plpgsql as $$
         begin
           if nextval('tries') % {n} = 0 then
             raise exception 'try of % refused', new.id using errcode = '40001';
           end if;
           return new;
         end $$;
         create trigger nth_try_fails before update on test_table for each row execute function nth_try_fails();"
    )
}

/// An AFTER trigger that logs each committed update in `updated` (a
/// rollback takes its row away too); [`committed`] counts them.
const LOG_UPDATES: &str = "create table updated (id int);
     create function log_update() returns trigger language plpgsql as $$
     begin insert into updated values (new.id); return new; end $$;
     create trigger log_update after update on test_table for each row execute function log_update();";

async fn committed(c: &Client) -> i64 {
    c.query_one("select count(*) from updated", &[])
        .await
        .unwrap()
        .get(0)
}

/// `-o update` on 2000 rows with two threads and `args`, without the
/// server sampler.
async fn updates(sb: &Sandbox, args: &[&str]) -> (ysql_bench::RunReport, String) {
    let mut all = vec!["-o", "update", "-r", "2000", "-t", "2"];
    all.extend_from_slice(args);
    all.push("--no-server-stats");
    run_args(sb, &all).await
}

async fn loaded(rows: &str) -> (Sandbox, Client) {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", rows]).await;
    let c = client(&sb).await;
    (sb, c)
}

/// Every query the tool counts is one the server ran, and no more: select
/// (index scans) and update (rows updated), prepared and as unnamed
/// statements, eight in flight on each of two connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_queries_count_what_the_server_counts() {
    let (sb, c) = loaded("2000").await;
    let dir = tempfile::tempdir().unwrap();
    for protocol in ["prepared", "extended"] {
        for op in ["select", "update"] {
            let json = dir.path().join(format!("{op}-{protocol}.json"));
            let before = counts(&c).await;
            let (report, text) = run_args(
                &sb,
                &[
                    "-o",
                    op,
                    "-r",
                    "2000",
                    "-t",
                    "2",
                    "--time",
                    "2s",
                    "--pipeline",
                    "8",
                    "-M",
                    protocol,
                    "--no-server-stats",
                    "--json",
                    json.to_str().unwrap(),
                ],
            )
            .await;
            let after = counts(&c).await;
            let r = &report.operations[0];
            assert!(r.failure.is_none(), "{text}");
            assert_eq!(r.total.failed(), 0, "{text}");
            assert!(r.total.ops > 100, "{text}");
            assert_eq!(r.total.missing, 0, "{text}");
            let server = match op {
                "select" => after.0 - before.0,
                _ => after.1 - before.1,
            };
            assert_eq!(
                r.total.ops as i64, server,
                "{op} -M {protocol}: the tool's count against the server's\n{text}"
            );
            assert!(
                text.contains("pipeline              : 8 queries in flight per connection"),
                "{text}"
            );
            let saved: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            assert_eq!(saved["operations"][0]["pipeline"], 8, "{saved}");
        }
    }
    // --transactions counts the queries each worker starts: exactly that
    // many run, none left in flight.
    let before = counts(&c).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "2000",
            "-t",
            "2",
            "--transactions",
            "1001",
            "--pipeline",
            "8",
            "--no-server-stats",
        ],
    )
    .await;
    let after = counts(&c).await;
    assert_eq!(report.operations[0].total.ops, 2002, "{text}");
    assert_eq!(after.0 - before.0, 2002, "{text}");
    // Without --pipeline the line is not there, and the key says 1.
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "2000",
            "--time",
            "1s",
            "--no-server-stats",
        ],
    )
    .await;
    assert!(!text.contains("pipeline "), "{text}");
    assert_eq!(report.operations[0].pipeline, 1);
}

/// A trigger refuses the update of every tenth id: those queries fail,
/// each counted once (as many as the server rolled back), and the others
/// in the same pipelines succeed (as many as the server updated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_query_in_a_pipeline_fails_alone() {
    let (sb, c) = loaded("2000").await;
    c.batch_execute(NO_TENS).await.unwrap();
    let before = counts(&c).await;
    let (report, text) = updates(
        &sb,
        &["--time", "2s", "--pipeline", "8", "--on-error", "continue"],
    )
    .await;
    let after = counts(&c).await;
    let r = &report.operations[0];
    let failed = r.total.failed();
    assert_eq!(r.total.ops as i64, after.1 - before.1, "{text}");
    assert_eq!(failed as i64, after.2 - before.2, "{text}");
    assert_eq!(
        r.total.errors.keys().collect::<Vec<_>>(),
        ["P0042"],
        "{text}"
    );
    // About a tenth of the ids are refused.
    let share = failed as f64 / (failed + r.total.ops) as f64;
    assert!((0.05..0.15).contains(&share), "{share}: {text}");
    assert_eq!(r.total.reconnects, 0, "{text}");

    // --on-error stop: the first failure stops the run, and what was in
    // flight still counts, failed or not.
    let before = counts(&c).await;
    let (report, text) = updates(
        &sb,
        &["--time", "5s", "--pipeline", "8", "--on-error", "stop"],
    )
    .await;
    let after = counts(&c).await;
    let r = &report.operations[0];
    assert!(!report.succeeded(), "{text}");
    assert!(
        r.failure.as_deref().unwrap_or("").contains("P0042"),
        "{text}"
    );
    assert!(r.wallclock < Duration::from_secs(4), "{text}");
    assert!(r.total.failed() >= 1, "{text}");
    assert_eq!(r.total.ops as i64, after.1 - before.1, "{text}");
    assert_eq!(r.total.failed() as i64, after.2 - before.2, "{text}");
}

/// A failure the retry policy names is sent again inside the pipeline: a
/// trigger refuses every third update with a serialization failure (40001;
/// a sequence counts them, as a rollback does not undo it), and every unit
/// ends done after its retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_query_is_queued_again() {
    let (sb, c) = loaded("2000").await;
    c.batch_execute(&every_nth_try_fails(3)).await.unwrap();
    let before = counts(&c).await;
    let (report, text) = updates(
        &sb,
        &["--time", "2s", "--pipeline", "8", "--max-tries", "20"],
    )
    .await;
    let after = counts(&c).await;
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert!(r.total.retries > 0 && r.total.retried > 0, "{text}");
    assert_eq!(r.total.ops as i64, after.1 - before.1, "{text}");
    // Each retry counted once: with the unit at its end, as the intervals
    // count it.
    let per_interval: u64 = r.intervals.iter().map(|i| i.retries).sum();
    assert_eq!(per_interval, r.total.retries, "{text}");
}

/// The server restarts under eight queries in flight per connection: the
/// queries in flight fail (each counted), the workers reconnect once each,
/// and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_select_survives_a_server_restart() {
    let mut sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let p = plan(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "1000",
            "-t",
            "2",
            "--time",
            "6s",
            "--pipeline",
            "8",
        ],
    );
    let run = spawn_run(p);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    tokio::task::block_in_place(|| {
        sb.stop_server();
        std::thread::sleep(Duration::from_millis(800));
        sb.start_server().unwrap();
    });
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    // Every worker ends on time: none waits for an answer that cannot
    // come (a unit queued on the connection that was lost).
    assert!(op.wallclock < Duration::from_millis(6500), "{text}");
    assert!(
        (2..=4).contains(&op.total.reconnects),
        "one reconnect per worker (two if the server refused the first while starting)\n{text}"
    );
    assert!((1..=2 * 8).contains(&op.total.failed()), "{text}");
    let classes: Vec<&String> = op.total.errors.keys().collect();
    assert!(
        classes
            .iter()
            .all(|c| c.starts_with("57P0") || *c == "connection-closed"),
        "{classes:?}"
    );
    let last = op.intervals.last().unwrap();
    assert!(last.ops > 0, "{:?}", op.intervals);
}

/// Under --rate the pipelined queries keep the rate (counted on the
/// server), and each one's latency, from its due time, is never below
/// its service time, from its send. On one connection due every 2.5 ms,
/// one update in five sleeps 6 ms on the server, so that the next two fall
/// due while it is in flight; the server is busy about half the time, so
/// that the rate can be kept on a machine other tests load too (a 2 ms
/// sleep on every update left it no room and failed a CI run at 80%).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_queries_keep_the_rate() {
    let (sb, c) = loaded("2000").await;
    let before = counts(&c).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "2000",
            "-t",
            "2",
            "--time",
            "2s",
            "--rate",
            "300",
            "--pipeline",
            "8",
            "--no-server-stats",
        ],
    )
    .await;
    let after = counts(&c).await;
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert_eq!(r.total.ops as i64, after.0 - before.0, "{text}");
    assert!((570..=601).contains(&r.total.ops), "{text}");
    latency_covers_service(&r.total, &text);

    c.batch_execute(
        "create function slow() returns trigger language plpgsql as $$
         begin if random() < 0.2 then perform pg_sleep(0.006); end if; return new; end $$;
         create trigger slow before update on test_table for each row execute function slow();",
    )
    .await
    .unwrap();
    let before = counts(&c).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "update",
            "-r",
            "2000",
            "--time",
            "2s",
            "--rate",
            "400",
            "--pipeline",
            "4",
            "--no-server-stats",
        ],
    )
    .await;
    let after = counts(&c).await;
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert_eq!(r.total.ops as i64, after.1 - before.1, "{text}");
    assert!(r.total.ops >= 700, "{text}");
    latency_covers_service(&r.total, &text);
}

fn latency_covers_service(t: &ysql_bench::stats::Stats, text: &str) {
    for q in [0.0, 0.5, 0.99, 1.0] {
        assert!(
            t.latency.value_at_quantile(q) >= t.service.value_at_quantile(q),
            "quantile {q}: latency below service time\n{text}"
        );
    }
}

/// The YCSB mixes without read-modify-write and oltp-point-select
/// pipeline too: inserts in flight are acknowledged as their answers come
/// (so that `latest` never reads a record still being inserted: no
/// record missing), every insert is in the table, and each point select
/// is one index scan and one statement in the per-statement figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_mixes_and_oltp_point_select_pipeline_too() {
    let sb = sandbox();
    let c = client(&sb).await;
    run_args(&sb, &["-o", "ycsb-load", "-r", "2000", "-t", "2"]).await;
    let records = || async {
        c.query_one("select count(*) from usertable", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    for mix in ["ycsb-d", "ycsb-e", "ycsb-a"] {
        let before = records().await;
        let (report, text) = run_args(
            &sb,
            &[
                "-o",
                mix,
                "-r",
                "2000",
                "-t",
                "2",
                "--time",
                "1s",
                "--pipeline",
                "8",
                "--no-server-stats",
            ],
        )
        .await;
        let r = &report.operations[0];
        assert_eq!(r.total.failed(), 0, "{mix}: {text}");
        assert_eq!(r.total.missing, 0, "{mix}: {text}");
        assert!(r.total.ops > 100, "{mix}: {text}");
        let inserted: u64 = r
            .types
            .iter()
            .filter(|t| t.name == "insert")
            .map(|t| t.stats.ops)
            .sum();
        assert_eq!(records().await - before, inserted as i64, "{mix}: {text}");
    }

    run_args(&sb, &["-o", "oltp-prepare", "-r", "2000"]).await;
    let before = common::index_scans(&c, "sbtest1").await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "oltp-point-select",
            "-r",
            "2000",
            "-t",
            "2",
            "--time",
            "1s",
            "--pipeline",
            "8",
            "--no-server-stats",
        ],
    )
    .await;
    let after = common::index_scans(&c, "sbtest1").await;
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert_eq!(r.total.missing, 0, "{text}");
    assert_eq!(r.total.ops as i64, after - before, "{text}");
    let selects: u64 = r.statements.iter().map(|s| s.count).sum();
    assert_eq!(selects, r.total.ops, "{text}");
}

/// Commits in the database so far, once the backends have reported them.
async fn commits(c: &Client) -> i64 {
    let read = || async {
        c.batch_execute("select pg_stat_clear_snapshot()")
            .await
            .unwrap();
        c.query_one(
            "select xact_commit from pg_stat_database where datname = current_database()",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
    };
    settled(read).await
}

/// `--pipeline 8 --pipeline-sync 8`: the server runs every query counted,
/// as one transaction per eight (a Sync each would make one per query),
/// and the summary and report say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_queries_is_one_transaction() {
    let (sb, c) = loaded("2000").await;
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("run.json"), dir.path().join("run.html"));
    let (scans, commits_before) = (counts(&c).await.0, commits(&c).await);
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "2000",
            "-t",
            "2",
            "--transactions",
            "800",
            "--pipeline",
            "8",
            "--pipeline-sync",
            "8",
            "--no-server-stats",
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    )
    .await;
    let (scans_after, commits_after) = (counts(&c).await.0, commits(&c).await);
    let r = &report.operations[0];
    assert_eq!(r.total.ops, 1600, "{text}");
    assert_eq!(r.total.ops as i64, scans_after - scans, "{text}");
    // 200 batches, and the few transactions of connecting and preparing;
    // a Sync per query would have made 1600.
    let made = commits_after - commits_before;
    assert!((200..260).contains(&made), "{made} commits: {text}");
    assert_eq!((r.pipeline, r.pipeline_sync), (8, 8), "{text}");
    assert!(text.contains("in batches of 8 per Sync"), "{text}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(saved["operations"][0]["pipeline_sync"], 8, "{saved}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("in batches of 8 per Sync"), "{page}");
}

/// A trigger refuses the update of every tenth id. In batches of four,
/// one transaction each, a refusal fails its whole batch: the updates
/// before it are rolled back and those after it never run, so what the
/// tool counts done is what committed (an AFTER trigger's log rows), each
/// failed batch is one rollback with one P0042 and three "pipeline-batch"
/// failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_in_a_batch_fails_the_whole_batch() {
    let (sb, c) = loaded("2000").await;
    c.batch_execute(NO_TENS).await.unwrap();
    c.batch_execute(LOG_UPDATES).await.unwrap();
    let before = counts(&c).await;
    let (report, text) = updates(
        &sb,
        &[
            "--transactions",
            "400",
            "--pipeline",
            "8",
            "--pipeline-sync",
            "4",
            "--on-error",
            "continue",
        ],
    )
    .await;
    let after = counts(&c).await;
    let committed = committed(&c).await;
    let r = &report.operations[0];
    let failed = r.total.failed();
    assert_eq!(r.total.ops + failed, 800, "{text}");
    assert_eq!(r.total.ops as i64, committed, "{text}");
    let refused = r.total.errors.get("P0042").copied().unwrap_or(0);
    let with_batch = r.total.errors.get("pipeline-batch").copied().unwrap_or(0);
    assert!(refused > 0, "{text}");
    assert_eq!(refused as i64, after.2 - before.2, "{text}");
    assert_eq!(with_batch, 3 * refused, "{text}");
    assert_eq!(failed, 4 * refused, "{text}");
    assert_eq!(r.total.ops % 4, 0, "{text}");
    assert_eq!(r.total.reconnects, 0, "{text}");
}

/// A serialization failure (40001) in a batch is retried with the whole
/// batch when the retry policy names it: every unit ends done, and what
/// the tool counts is what committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_is_tried_again_whole() {
    let (sb, c) = loaded("2000").await;
    c.batch_execute(&every_nth_try_fails(5)).await.unwrap();
    c.batch_execute(LOG_UPDATES).await.unwrap();
    let (report, text) = updates(
        &sb,
        &[
            "--transactions",
            "200",
            "--pipeline",
            "8",
            "--pipeline-sync",
            "4",
            "--max-tries",
            "50",
        ],
    )
    .await;
    let committed = committed(&c).await;
    let tries: i64 = c
        .query_one("select last_value from tries", &[])
        .await
        .unwrap()
        .get(0);
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert_eq!(r.total.ops, 400, "{text}");
    assert!(r.total.retries > 0 && r.total.retried > 0, "{text}");
    assert_eq!(r.total.ops as i64, committed, "{text}");
    // Each refusal is tried again with the others of its batch: more
    // retries than refusals (with a Sync per query, as many).
    let refused = tries / 5;
    assert!(
        r.total.retries as i64 > refused,
        "{refused} refused: {text}"
    );
}

/// A batch whose failure the retry policy would try again, cut short by
/// the end of `--time`, is left out whole, as a unit alone is: not only
/// the query that failed, but also the ones of its batch that were rolled
/// back or never ran (their "pipeline-batch" failure was counted before,
/// since only the failed query's own error was looked at).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_cut_short_by_the_end_is_left_out_whole() {
    let (sb, c) = loaded("200").await;
    // Even ids fail with 40001 after the run's second is over.
    c.batch_execute(
        "create function late_refusal() returns trigger language plpgsql as $$
         begin
           if new.id % 2 = 0 then
             perform pg_sleep(2);
             raise exception 'try of % refused', new.id using errcode = '40001';
           end if;
           return new;
         end $$;
         create trigger late_refusal before update on test_table for each row execute function late_refusal();",
    )
    .await
    .unwrap();
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "update",
            "-r",
            "200",
            "-t",
            "1",
            "--time",
            "1s",
            "--pipeline",
            "4",
            "--pipeline-sync",
            "4",
            "--max-tries",
            "0",
            "--no-server-stats",
        ],
    )
    .await;
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert!(!r.total.errors.contains_key("pipeline-batch"), "{text}");
}

/// The per-statement figures of a batch that failed keep nothing: its
/// queries that succeeded before the failure were rolled back, and are
/// counted failed. Each update sends a long notice, so that a batch's
/// answers come in several reads and the units of the batch before it
/// are counted while it is half answered (which moved the times of its
/// first queries into the figures, before its failure was known): the
/// statements counted must still be exactly the units done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_keeps_no_statement_times() {
    let sb = sandbox();
    let c = client(&sb).await;
    run_args(&sb, &["-o", "oltp-prepare", "-r", "2000"]).await;
    c.batch_execute(
        "create function noisy_refusal() returns trigger language plpgsql as $$
         begin
           raise notice '%', repeat('x', 2000);
           if new.id % 97 = 0 then
             raise exception 'id % refused', new.id using errcode = 'P0042';
           end if;
           return new;
         end $$;
         create trigger noisy_refusal before update on sbtest1 for each row execute function noisy_refusal();",
    )
    .await
    .unwrap();
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "oltp-update-index",
            "--skip-trx",
            "-r",
            "2000",
            "-t",
            "2",
            "--time",
            "2s",
            "--pipeline",
            "32",
            "--pipeline-sync",
            "16",
            "--on-error",
            "continue",
            "--no-server-stats",
        ],
    )
    .await;
    let r = &report.operations[0];
    assert!(
        r.total.errors.get("P0042").is_some_and(|&n| n > 0),
        "{text}"
    );
    assert!(r.total.ops > 0, "{text}");
    let statements: u64 = r.statements.iter().map(|s| s.count).sum();
    assert_eq!(statements, r.total.ops, "{text}");
}

/// In batches, a YCSB insert is acknowledged to the readers of `latest`
/// once its batch has committed, not at its own answer: the answers of a
/// batch of reads of 1 KB rows fill the server's buffer, which is sent
/// before the batch's Sync commits it, and a reader on another connection
/// that went by the acknowledgement found the record missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_latest_reads_no_insert_of_a_batch_not_yet_committed() {
    let sb = sandbox();
    let c = client(&sb).await;
    run_args(&sb, &["-o", "ycsb-load", "-r", "2000", "-t", "2"]).await;
    let records = || async {
        c.query_one("select count(*) from usertable", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    let before = records().await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "ycsb-d",
            "-r",
            "2000",
            "-t",
            "4",
            "--time",
            "2s",
            "--pipeline",
            "32",
            "--pipeline-sync",
            "32",
            "--no-server-stats",
        ],
    )
    .await;
    let r = &report.operations[0];
    assert_eq!(r.total.failed(), 0, "{text}");
    assert_eq!(r.total.missing, 0, "{text}");
    let inserted: u64 = r
        .types
        .iter()
        .filter(|t| t.name == "insert")
        .map(|t| t.stats.ops)
        .sum();
    assert!(inserted > 0, "{text}");
    assert_eq!(records().await - before, inserted as i64, "{text}");
}

/// `--on-error stop` in batches reports the query that failed its batch,
/// with its own id, not one of the others that failed with it (which
/// were counted first, so that the run's failure named an update the
/// server had not refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_error_stop_reports_the_query_that_failed_the_batch() {
    let (sb, c) = loaded("2000").await;
    c.batch_execute(NO_TENS).await.unwrap();
    let (report, text) = updates(
        &sb,
        &[
            "--time",
            "5s",
            "--pipeline",
            "8",
            "--pipeline-sync",
            "4",
            "--on-error",
            "stop",
        ],
    )
    .await;
    let r = &report.operations[0];
    assert!(!report.succeeded(), "{text}");
    let failure = r.failure.as_deref().unwrap_or("");
    assert!(failure.contains("P0042"), "{failure}: {text}");
    assert!(!failure.contains("pipeline batch"), "{failure}: {text}");
    assert!(r.total.errors.contains_key("pipeline-batch"), "{text}");
}

/// Batches keep their size when their answers come in several reads: the
/// units of a batch answered before its end still hold their places, so
/// that a refill starts whole batches (counted free, they let the worker
/// start more than a batch, and the Syncs that followed cut batches of
/// other sizes). Each update sends a long notice, so that a batch's
/// answers take several reads, and logs its transaction: every
/// transaction holds exactly four updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_keep_their_size_when_answers_come_in_pieces() {
    let (sb, c) = loaded("2000").await;
    c.batch_execute(
        "create table updated (id int, tx bigint);
         create function noisy_log() returns trigger language plpgsql as $$
         begin
           raise notice '%', repeat('x', 2000);
           insert into updated values (new.id, txid_current());
           return new;
         end $$;
         create trigger noisy_log after update on test_table for each row execute function noisy_log();",
    )
    .await
    .unwrap();
    let (report, text) = updates(
        &sb,
        &[
            "--transactions",
            "200",
            "--pipeline",
            "8",
            "--pipeline-sync",
            "4",
        ],
    )
    .await;
    let r = &report.operations[0];
    assert_eq!((r.total.ops, r.total.failed()), (400, 0), "{text}");
    let sizes: Vec<(i64, i64)> = c
        .query(
            "select n, count(*) from (select tx, count(*) n from updated group by tx) t group by n order by n",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(sizes, [(4, 100)], "{text}");
}
