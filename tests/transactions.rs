//! Multi-statement transactions against a real server: sysbench's OLTP
//! family (checked against the server's own counts, and against sysbench
//! itself on the same tables) and the flight-booking transaction (its
//! consistency checks, retries under contention, a restart mid-run).

mod common;
use common::*;

use std::time::Duration;

use tokio_postgres::Client;

/// The server's (commits, rows updated, deleted, inserted in sbtest*)
/// once the run's sessions have flushed their statistics.
async fn server_counts(c: &Client) -> (i64, i64, i64, i64) {
    // Waits for the run's backends to end and the figures to settle.
    index_scans(c, "sbtest1").await;
    let commits: i64 = c
        .query_one(
            "select xact_commit from pg_stat_database where datname = current_database()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let row = c
        .query_one(
            "select coalesce(sum(n_tup_upd), 0)::int8, coalesce(sum(n_tup_del), 0)::int8, \
             coalesce(sum(n_tup_ins), 0)::int8 from pg_stat_user_tables where relname like 'sbtest%'",
            &[],
        )
        .await
        .unwrap();
    (commits, row.get(0), row.get(1), row.get(2))
}

async fn rows_in(c: &Client, table: &str) -> i64 {
    c.query_one(&format!("select count(*) from {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

/// Runs ysql-bench in process against database `db` of the sandbox.
async fn run_in(
    sb: &ysql_bench::db::sandbox::Sandbox,
    db: &str,
    args: &[&str],
) -> (ysql_bench::RunReport, String) {
    use clap::Parser;
    let url = format!(
        "host=127.0.0.1 port={} user=postgres dbname={db}",
        sb.port()
    );
    // The server's side of the run reads the statistics views in the
    // same database: its queries would count in the commits.
    let mut all = vec!["ysql-bench", "-u", url.as_str(), "--no-server-stats"];
    all.extend_from_slice(args);
    let plan =
        ysql_bench::config::RunPlan::from_cli(ysql_bench::cli::Cli::try_parse_from(all).unwrap())
            .unwrap();
    let mut out = Vec::new();
    let r = ysql_bench::run(plan, &mut out)
        .await
        .expect("the run completes");
    (r, String::from_utf8(out).unwrap())
}

/// The commits of database `bench` once the run's sessions have ended
/// and the figure settled, read from another database so that reading
/// them adds none.
async fn bench_commits(watch: &Client) -> i64 {
    let mut last = -1;
    for _ in 0..100 {
        let row = watch
            .query_one(
                "select (select xact_commit from pg_stat_database where datname = 'bench'),                  (select count(*) from pg_stat_activity where datname = 'bench')",
                &[],
            )
            .await
            .unwrap();
        let _ = watch.simple_query("select pg_stat_clear_snapshot()").await;
        let (n, sessions): (i64, i64) = (row.get(0), row.get(1));
        if sessions == 0 && n == last {
            return n;
        }
        last = n;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    last
}

/// Rows updated, deleted and inserted in bench's sbtest tables, read on a
/// new connection (one query: one commit, the same every time).
async fn bench_tuples(sb: &ysql_bench::db::sandbox::Sandbox) -> (i64, i64, i64) {
    let mut config = sb.config();
    config.dbname("bench");
    let (c, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
    let task = tokio::spawn(conn);
    let row = c
        .query_one(
            "select coalesce(sum(n_tup_upd), 0)::int8, coalesce(sum(n_tup_del), 0)::int8, \
             coalesce(sum(n_tup_ins), 0)::int8 from pg_stat_user_tables where relname like 'sbtest%'",
            &[],
        )
        .await
        .unwrap();
    drop(c);
    let _ = task.await;
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oltp_read_write_does_what_sysbench_does_per_transaction_counted_on_the_server() {
    // No autovacuum: its transactions would count in the commits.
    let sb = sandbox_with(vec![("autovacuum".to_string(), "off".to_string())]);
    let watch = client(&sb).await;
    watch.batch_execute("create database bench").await.unwrap();
    let (r, s) = run_in(
        &sb,
        "bench",
        &[
            "-o",
            "oltp-prepare",
            "--tables",
            "2",
            "-r",
            "5000",
            "-t",
            "2",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");

    // One worker: no two transactions meet, so every figure is exact.
    // Two runs of different lengths: the commits besides the transactions
    // (the tool's set-up and prepared statements, the reading of the
    // tuple counts) are the same in both, so each transaction is exactly
    // one commit. Without the server watcher, whose samples (ten a
    // second) would add commits that grow with the run's length.
    let mut extra = Vec::new();
    let mut last = None;
    for time in ["1s", "2s"] {
        let commits0 = bench_commits(&watch).await;
        let (upd0, del0, ins0) = bench_tuples(&sb).await;
        let (r, s) = run_in(
            &sb,
            "bench",
            &[
                "-o",
                "oltp-read-write",
                "--tables",
                "2",
                "-r",
                "5000",
                "-t",
                "1",
                "--time",
                time,
            ],
        )
        .await;
        assert!(r.succeeded(), "{s}");
        let txns = r.operations[0].total.ops as i64;
        assert!(txns > 10, "{s}");
        let commits = bench_commits(&watch).await;
        let (upd, del, ins) = bench_tuples(&sb).await;
        assert_eq!(upd - upd0, 2 * txns, "two updates per transaction\n{s}");
        assert_eq!(del - del0, txns, "one delete per transaction\n{s}");
        assert_eq!(ins - ins0, txns, "one insert per transaction\n{s}");
        extra.push(commits - commits0 - txns);
        last = Some((r, s, txns));
    }
    eprintln!("commits besides the transactions: {extra:?}");
    assert_eq!(
        extra[0], extra[1],
        "commits besides the transactions: {extra:?}"
    );
    assert!(extra[0] < 80, "{extra:?}");
    let (r, s, txns) = last.unwrap();
    // Prepared and on a plain connection: the lean driver ran it.
    assert!(s.contains("driver                : lean"), "{s}");
    // sysbench's query count: 10 + 4 reads, 4 writes, BEGIN and COMMIT.
    assert!(
        s.contains(&format!("queries               : {}", 20 * txns)),
        "{s}"
    );
    let statements: Vec<&str> = r.operations[0].statements.iter().map(|s| s.name).collect();
    assert!(statements.contains(&"distinct_range") && statements.contains(&"commit"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sysbench_runs_on_tables_oltp_prepare_made_and_the_other_way_round() {
    let sb = sandbox();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "oltp-prepare",
            "--tables",
            "2",
            "-r",
            "2000",
            "-t",
            "2",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let port = sb.port().to_string();
    let sysbench = |script: &str, cmd: &str| {
        let out = system_program("sysbench")
            .args([
                script,
                "--db-driver=pgsql",
                "--pgsql-host=127.0.0.1",
                &format!("--pgsql-port={port}"),
                "--pgsql-user=postgres",
                "--pgsql-db=postgres",
                "--tables=2",
                "--table-size=2000",
                "--threads=2",
                "--time=2",
                cmd,
            ])
            .output()
            .expect("sysbench runs (scripts/install-deps.sh installs it)");
        (out.status.success(), text(&out.stdout) + &text(&out.stderr))
    };
    // sysbench's own read-write and insert (which takes ids from the
    // sequence oltp-prepare moved past the loaded rows).
    for script in ["oltp_read_write", "oltp_insert"] {
        let (ok, out) = sysbench(script, "run");
        assert!(ok, "{script}: {out}");
        assert!(out.contains("transactions:"), "{out}");
        assert!(!out.contains("FATAL"), "{out}");
    }
    // sysbench's own tables: not ysql-bench's, so writing needs --force.
    let (ok, out) = sysbench("oltp_read_write", "cleanup");
    assert!(ok, "{out}");
    let (ok, out) = sysbench("oltp_read_write", "prepare");
    assert!(ok, "{out}");
    let args = [
        "-o",
        "oltp-read-write",
        "--tables",
        "2",
        "-r",
        "2000",
        "-t",
        "2",
        "--time",
        "1s",
    ];
    let e = ysql_bench::run(plan(&sb, &args), &mut Vec::new())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("--force"), "{e}");
    let mut forced = args.to_vec();
    forced.push("--force");
    let (r, s) = run_args(&sb, &forced).await;
    assert!(r.succeeded(), "{s}");
    assert!(r.operations[0].total.ops > 10, "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_conflicts_are_retried_and_no_transaction_is_lost_or_counted_twice() {
    let sb = sandbox();
    let c = client(&sb).await;
    let (r, s) = run_args(&sb, &["-o", "oltp-prepare", "-r", "20"]).await;
    assert!(r.succeeded(), "{s}");
    let (_, _, _, ins0) = server_counts(&c).await;
    // Two workers can also deadlock on the hot rows, and the server finds
    // that only after deadlock_timeout (1 s by default): on a loaded
    // machine a 2 s run could then end with its retries still under way
    // and no transaction retried to the end.
    for sql in [
        "alter system set deadlock_timeout = '50ms'",
        "select pg_reload_conf()",
    ] {
        c.batch_execute(sql).await.unwrap();
    }
    // 20 rows, 4 workers, every transaction writes four of them.
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "oltp-write-only",
            "-r",
            "20",
            "-t",
            "4",
            "--time",
            "3s",
            "--isolation",
            "serializable",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let t = &r.operations[0].total;
    assert!(t.retries > 0, "a hot key set conflicts\n{s}");
    assert!(t.retried > 0 && t.retried <= t.retries, "{s}");
    assert_eq!(t.failed(), 0, "retried without limit\n{s}");
    assert!(s.contains("attempt per txn"), "{s}");
    let (_, _, _, ins) = server_counts(&c).await;
    // Every transaction re-inserts the row it deleted: the table keeps
    // its rows, and the committed inserts are at least the transactions
    // counted (aborted tries count in n_tup_ins too).
    assert_eq!(rows_in(&c, "sbtest1").await, 20, "{s}");
    assert!(ins - ins0 >= t.ops as i64, "{s}");
    // Retries per interval add up to the total.
    let per_interval: u64 = r.operations[0].intervals.iter().map(|i| i.retries).sum();
    assert_eq!(per_interval, t.retries, "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookings_are_consistent_and_counted_once_even_with_a_restart_in_the_middle() {
    let mut sb = sandbox();
    let (r, s) = run_args(&sb, &["-o", "booking-load", "-t", "2"]).await;
    assert!(r.succeeded(), "{s}");
    let c = client(&sb).await;
    assert_eq!(rows_in(&c, "schedule").await, 15_000);
    // The load counts against its 15000 flights (its progress bar, its
    // "stopped by --time" line), not against -r's default of 100000.
    assert_eq!(r.operations[0].table_rows, 15_000, "{s}");
    // Two days: hot audit rows, repeatable read conflicts.
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "booking",
            "-t",
            "4",
            "--time",
            "2s",
            "--day-range",
            "1",
            // 15 flights take 90% of the bookings: hot audit rows.
            "--key-distribution",
            "hotspot",
            "--hotspot-fraction",
            "0.001",
            "--hotspot-ops",
            "0.9",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let op = &r.operations[0];
    assert!(
        op.total.retries > 0,
        "hot rows conflict at repeatable read\n{s}"
    );
    assert_eq!(rows_in(&c, "seat").await as u64, op.total.ops, "{s}");
    assert_eq!(op.checks.len(), 2, "{s}");
    assert!(op.checks.iter().all(|c| c.held), "{s}");
    // A restart in the middle: transactions in flight roll back, the
    // workers reconnect, and the tables stay consistent.
    drop(c);
    let p = plan(&sb, &["-o", "booking", "-t", "2", "--time", "5s"]);
    let run = spawn_run(p);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    tokio::task::block_in_place(|| {
        sb.stop_server();
        std::thread::sleep(Duration::from_millis(800));
        sb.start_server().unwrap();
    });
    let (report, s) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(op.total.reconnects >= 1, "{s}");
    assert!(op.checks.iter().all(|c| c.held), "{s}");
    let c = client(&sb).await;
    let (r, s) = run_args(&sb, &["-o", "booking-check"]).await;
    assert!(r.succeeded(), "{s}");
    assert!(s.contains("held: one payment per seat"), "{s}");
    // A broken table is found, and fails the run.
    c.batch_execute("update audit set seats_occupied = seats_occupied + 1 where ctid = (select min(ctid) from audit)")
        .await
        .unwrap();
    let (r, s) = run_args(&sb, &["-o", "booking-check"]).await;
    assert!(!r.succeeded(), "{s}");
    assert!(s.contains("BROKEN: seats equal the audit counters"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_oltp_script_runs_sysbenchs_statements_per_event() {
    let sb = sandbox();
    let (r, s) = run_args(&sb, &["-o", "oltp-prepare", "-r", "2000", "-t", "2"]).await;
    assert!(r.succeeded(), "{s}");
    let c = client(&sb).await;
    // Statements per event, BEGIN and COMMIT included, as sysbench counts
    // its queries.
    let cases: [(&str, &[&str], u64); 12] = [
        ("oltp-read-write", &[], 20),
        ("oltp-read-write", &["--no-prepared"], 20),
        ("oltp-write-only", &["--no-prepared"], 6),
        ("oltp-read-only", &[], 16),
        ("oltp-read-only", &["--range-selects", "off"], 12),
        ("oltp-read-write", &["--skip-trx", "--no-prepared"], 18),
        ("oltp-write-only", &[], 6),
        ("oltp-point-select", &[], 1),
        ("oltp-update-index", &["--no-prepared"], 1),
        ("oltp-update-non-index", &[], 1),
        ("oltp-insert", &[], 1),
        ("oltp-delete-insert", &[], 4),
    ];
    for (op, extra, per_event) in cases {
        let before = rows_in(&c, "sbtest1").await;
        let mut args = vec!["-o", op, "-r", "2000", "-t", "2", "--time", "1s"];
        args.extend_from_slice(extra);
        let (r, s) = run_args(&sb, &args).await;
        assert!(r.succeeded(), "{op} {extra:?}:\n{s}");
        let o = &r.operations[0];
        assert!(o.total.ops > 5, "{op} {extra:?}:\n{s}");
        // Statements of tries that failed and were retried count too (the
        // server ran them): exact when nothing was retried.
        let statements: u64 = o.statements.iter().map(|s| s.count).sum();
        let t = &o.total;
        assert!(
            statements >= per_event * t.ops && statements <= per_event * (t.ops + t.retries),
            "{statements} statements for {} events and {} retries: {op} {extra:?}:\n{s}",
            t.ops,
            t.retries
        );
        if t.retries == 0 {
            assert_eq!(statements, per_event * t.ops, "{op} {extra:?}:\n{s}");
        }
        let after = rows_in(&c, "sbtest1").await;
        if op == "oltp-insert" {
            assert_eq!((after - before) as u64, o.total.ops, "{s}");
        } else {
            assert_eq!(after, before, "{op} keeps the rows\n{s}");
        }
    }
}

async fn sbtest_tables(c: &Client) -> i64 {
    c.query_one(
        "select count(*) from pg_tables where tablename like 'sbtest%'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Issue 22: after `oltp-prepare --tables 2`, `oltp-point-select --tables
/// 7` created sbtest3..7 empty, ran with rows missing and exited 0; its
/// warning named one table and advised `give -r 0`, which is refused.
/// Now every table it reads is checked as sbtest1 was: refused, exit 2,
/// nothing created, with the command line that loads them, which works.
/// And `--drop` drops only what the run's loads fill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oltp_with_more_tables_than_prepared_is_refused_and_creates_none() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let ysql = |args: &[&str]| {
        let mut all = vec!["-u", url.as_str(), "--no-server-stats"];
        all.extend_from_slice(args);
        bin("ysql-bench", &all)
    };
    let out = ysql(&["-o", "oltp-prepare", "--tables", "2", "-r", "300"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = ysql(&[
        "-o",
        "oltp-point-select",
        "--tables",
        "7",
        "-r",
        "300",
        "--time",
        "300ms",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("table \"sbtest3\" does not exist, and oltp-point-select needs its rows"),
        "{stderr}"
    );
    let advice = "-o oltp-prepare,oltp-point-select --tables 7 -r 300";
    assert!(
        stderr.contains(&format!("e.g. {advice} (--time bounds the load too)")),
        "{stderr}"
    );
    assert!(!stderr.contains("-r 0"), "{stderr}");
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert_eq!(
        sbtest_tables(&c).await,
        2,
        "a query created tables: {stderr}"
    );

    // An empty table is refused the same way, with its own advice.
    c.batch_execute("truncate sbtest2").await.unwrap();
    let out = ysql(&["-o", "oltp-read-write", "--tables", "2", "-r", "300"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("table \"sbtest2\" is empty"), "{stderr}");
    assert!(
        stderr.contains("e.g. -o oltp-prepare,oltp-read-write --tables 2 -r 300,"),
        "{stderr}"
    );

    // The advice, as given, loads all seven and finds every row.
    let mut args: Vec<&str> = advice.split(' ').collect();
    args.extend(["--time", "300ms"]);
    let out = ysql(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("missing rows          : 0"), "{stdout}");
    assert_eq!(sbtest_tables(&c).await, 7);

    // --drop before a load of test_table leaves the sbtest tables, which
    // no load of the run fills, as they are (they were dropped and made
    // again empty, and every lookup missed).
    let out = ysql(&[
        "-o",
        "copy-mem,oltp-point-select",
        "--tables",
        "7",
        "-r",
        "300",
        "--drop",
        "--time",
        "300ms",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("missing rows          : 0"), "{stdout}");
    for t in 1..=7 {
        assert_eq!(rows_in(&c, &format!("sbtest{t}")).await, 300, "sbtest{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_booking_clients_at_once_never_book_as_one_user() {
    let sb = sandbox();
    let (r, s) = run_args(&sb, &["-o", "booking-load"]).await;
    assert!(r.succeeded(), "{s}");
    let args = ["-o", "booking", "-t", "2", "--time", "2s"];
    let a = spawn_run(plan(&sb, &args));
    let b = spawn_run(plan(&sb, &args));
    let (ra, sa) = a.await.unwrap();
    let (rb, sbs) = b.await.unwrap();
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert!(ra.succeeded(), "{sa}");
    assert!(rb.succeeded(), "{sbs}");
    let c = client(&sb).await;
    let row = c
        .query_one("select count(*), count(distinct user_id) from seat", &[])
        .await
        .unwrap();
    let (seats, users): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(
        seats as u64,
        ra.operations[0].total.ops + rb.operations[0].total.ops
    );
    assert_eq!(users, seats, "every booking has a user of its own");
    // Per-statement figures of the booking transaction.
    let names: Vec<&str> = ra.operations[0].statements.iter().map(|s| s.name).collect();
    assert_eq!(names, ["begin", "seat", "payment", "audit", "commit"]);
}
