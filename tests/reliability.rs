//! Faults, retries, bad input and secrets, against real servers.

mod common;
use std::time::Duration;

use common::*;
use ysql_bench::db::sandbox::{Sandbox, SandboxOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serialization_failures_are_counted_by_sqlstate_and_retried_when_asked() {
    // Under repeatable read, two updates of the same row conflict: 40001.
    let sb = sandbox_with(vec![(
        "default_transaction_isolation".into(),
        "repeatable read".into(),
    )]);
    run_args(&sb, &["-o", "insert", "-r", "2"]).await;
    let (once, text) = run_args(&sb, &["-o", "update", "-r", "2", "-t", "4", "--time", "2s"]).await;
    let t = &once.operations[0].total;
    let conflicts = t.errors.get("40001").copied().unwrap_or(0);
    assert!(
        conflicts > 0,
        "no conflict in 2 s of 4 threads on 2 rows:\n{text}"
    );
    assert!(text.contains("40001"), "{text}");
    assert!(!once.succeeded());
    // Failed units are not in the latency figures.
    assert_eq!(t.latency.len(), t.ops);

    let (retried, text) = run_args(
        &sb,
        &[
            "-o",
            "update",
            "-r",
            "2",
            "-t",
            "4",
            "--time",
            "2s",
            "--max-tries",
            "100",
        ],
    )
    .await;
    let t = &retried.operations[0].total;
    assert!(t.retries > 0 && t.retried > 0, "{text}");
    assert_eq!(t.failed(), 0, "{text}");
    assert!(text.contains("retries"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_batch_is_named_and_stops_a_load_unless_told_to_continue() {
    let sb = sandbox();
    let c = client(&sb).await;
    run_args(&sb, &["-o", "insert", "-r", "1"]).await;
    c.batch_execute(
        "create function no_500() returns trigger language plpgsql as $$
         begin if new.id = 500 then raise exception 'id 500 refused'; end if; return new; end $$;
         create trigger no_500 before insert on test_table for each row execute function no_500();",
    )
    .await
    .unwrap();
    let (stopped, text) = run_args(&sb, &["-o", "insert,select", "-r", "1000", "-b", "200"]).await;
    assert!(!stopped.succeeded());
    assert_eq!(
        stopped.operations.len(),
        1,
        "the run must stop at the failed load"
    );
    let why = stopped.operations[0].failure.clone().unwrap_or_default();
    assert!(why.contains("batch ids 400..600 failed"), "{why}");
    assert!(why.contains("P0001"), "{why}");
    assert!(text.contains("FAILED"), "{text}");

    let (cont, text) = run_args(
        &sb,
        &[
            "-o",
            "insert",
            "-r",
            "1000",
            "-b",
            "200",
            "--on-error",
            "continue",
        ],
    )
    .await;
    assert!(!cont.succeeded());
    let t = &cont.operations[0].total;
    assert_eq!(t.rows, 800);
    assert_eq!(t.failed_units, vec!["ids 400..600".to_string()]);
    assert!(
        text.contains("failed batches        : ids 400..600"),
        "{text}"
    );
    assert_eq!(facts(&c, "test_table").await.count, 800);
}

/// `after` from now, the server stops (its sessions get 57P01) and is
/// started again 0.8 s later on the same port.
async fn restart_after(sb: &mut Sandbox, after: Duration) {
    tokio::time::sleep(after).await;
    tokio::task::block_in_place(|| {
        sb.stop_server();
        std::thread::sleep(Duration::from_millis(800));
        sb.start_server().unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_reconnect_after_a_server_restart_during_a_select() {
    let mut sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let p = plan(
        &sb,
        &["-o", "select", "-r", "1000", "-t", "2", "--time", "6s"],
    );
    let run = spawn_run(p);
    restart_after(&mut sb, Duration::from_millis(1500)).await;
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(op.total.reconnects >= 2, "{text}");
    assert!(op.total.failed() >= 1, "{text}");
    // One lost query per worker: after the server's 57P01 a worker
    // reconnects at once instead of failing its next query on the dead
    // connection too.
    assert!(op.total.failed() <= 2, "{text}");
    assert!(
        !report.succeeded(),
        "failed queries make the run fail (exit 1)"
    );
    // Queries went on after the restart, until the end.
    let last = op.intervals.last().unwrap();
    assert!(last.ops > 0, "{:?}", op.intervals);
    assert!(text.contains("reconnects"), "{text}");
}

/// The families whose units were on tokio-postgres before the one driver
/// (YCSB, the oltp scripts, pgbench scripts) go on after a server restart
/// as select does: each worker loses the unit in flight, reconnects, and
/// units run again until the end. (select: above; booking and TPC-C:
/// tests/transactions.rs and tests/tpcc.rs; pipelines: tests/pipeline.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_oltp_and_script_workers_reconnect_after_a_server_restart() {
    let mut sb = sandbox();
    run_args(&sb, &["-o", "ycsb-load", "-r", "2000", "-t", "2"]).await;
    run_args(&sb, &["-o", "oltp-prepare", "-r", "2000", "-t", "2"]).await;
    run_args(&sb, &["-o", "pgbench-init", "-s", "1", "-t", "2"]).await;
    let cases: [&[&str]; 3] = [
        &["-o", "ycsb-a", "-r", "2000"],
        &["-o", "oltp-read-write", "-r", "2000"],
        &["--builtin", "tpcb-like", "-s", "1"],
    ];
    for args in cases {
        let mut all = args.to_vec();
        all.extend(["-t", "2", "--time", "5s"]);
        let run = spawn_run(plan(&sb, &all));
        restart_after(&mut sb, Duration::from_millis(1500)).await;
        let (report, text) = run.await.unwrap();
        let report = report.unwrap();
        let op = &report.operations[0];
        assert!(op.total.reconnects >= 2, "{args:?}: {text}");
        assert!(op.total.failed() >= 1, "{args:?}: {text}");
        let last = op.intervals.last().unwrap();
        assert!(last.ops > 0, "{args:?}: {:?}", op.intervals);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_cut_by_a_server_stop_is_reported_and_the_table_marked_incomplete() {
    let mut sb = sandbox();
    let p = plan(
        &sb,
        &["-o", "insert", "-r", "3000000", "-b", "100", "-t", "2"],
    );
    let run = spawn_run(p);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    tokio::task::block_in_place(|| sb.stop_server());
    let (report, summary) = run.await.unwrap();
    let report = report.unwrap();
    assert!(!report.succeeded(), "{summary}");
    let op = &report.operations[0];
    assert!(op.total.rows < 3_000_000);
    assert!(
        op.failure.as_deref().unwrap_or("").contains("failed"),
        "{summary}"
    );
    tokio::task::block_in_place(|| sb.start_server().unwrap());
    // A later select is warned that the table is incomplete.
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &sb.url(),
            "-o",
            "select",
            "-r",
            "3000000",
            "--time",
            "200ms",
        ],
    );
    assert!(
        text(&out.stderr).contains("did not finish"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn interrupted_loads_leave_a_table_that_is_loaded_or_marked_incomplete() {
    let sb = sandbox();
    let url = sb.url();
    for delay_ms in [300u64, 900, 1500] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
            .args([
                "-u", &url, "-o", "copy-mem", "-r", "400000", "-b", "500", "-t", "2",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
        let out = child.wait_with_output().unwrap();
        let stdout = text(&out.stdout);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (count, mark): (i64, String) = rt.block_on(async {
            let c = client(&sb).await;
            let n = facts(&c, "test_table").await.count;
            let m: String = c
                .query_one(
                    "select obj_description('test_table'::regclass, 'pg_class')",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            (n, m)
        });
        match out.status.code() {
            Some(0) => {
                assert_eq!(count, 400_000);
                assert_eq!(mark, "created by ysql-bench; loaded 400000 rows");
            }
            Some(130) => {
                assert!(stdout.contains("interrupted"), "{stdout}");
                assert!(count < 400_000);
                assert_eq!(mark, "created by ysql-bench; load incomplete");
                let reported: i64 = stdout
                    .lines()
                    .find(|l| l.starts_with("total rows"))
                    .map(|l| l.split(':').nth(1).unwrap().trim().parse().unwrap())
                    .unwrap_or(0);
                assert_eq!(reported, count, "the summary must say what is in the table");
            }
            other => panic!("exit {other:?}: {}", text(&out.stderr)),
        }
    }
}

#[test]
fn bad_input_gets_one_line_and_the_right_exit_code() {
    let pw = Sandbox::start(SandboxOptions {
        settings: vec![],
        fast: true,
        password: Some("s3cret-pw".into()),
    })
    .unwrap();
    let good = format!(
        "host=127.0.0.1 port={} user=postgres password=s3cret-pw",
        pw.port()
    );
    let wrong = format!(
        "host=127.0.0.1 port={} user=postgres password=not-it",
        pw.port()
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut cfg = pw.config();
        cfg.dbname("postgres");
        let (c, conn) = cfg.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        c.batch_execute("create table odd (id int primary key, name text)")
            .await
            .unwrap();
    });
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["-o", "insert", "-t", "0"], 2, "1 or more"),
        (vec!["-o", "insert", "-b", "0"], 2, "1 or more"),
        (vec!["-o", "insert", "-r", "-5"], 2, "negative"),
        (vec!["-o", "insert", "-t", "four"], 2, "not a whole number"),
        (vec!["-o", "select", "-r", "0", "-u", &good], 2, "--rows 0"),
        (vec!["-o", "insert", "-b", "13108", "-u", &good], 2, "13107"),
        (vec!["-o", "scan"], 2, "invalid value 'scan'"),
        (
            vec!["-o", "insert", "-u", "postgres://u@h:notaport/db"],
            2,
            "not a valid connection string",
        ),
        (vec!["-o", "insert", "-f", "0"], 2, "1 or more"),
        (vec!["-o", "insert", "-f", "999999999"], 2, "too large"),
        (
            vec!["-o", "select", "--time", "0", "-u", &good],
            2,
            "--time 0",
        ),
        (
            vec!["-o", "insert", "--table-name", "odd", "-u", &good],
            2,
            "other columns",
        ),
        (
            vec!["-o", "insert", "-r", "10", "-u", &wrong],
            1,
            "password authentication failed",
        ),
        (
            vec![
                "-o",
                "insert",
                "-u",
                "host=no-such-host.invalid user=x connect_timeout=3",
            ],
            1,
            "no-such-host.invalid",
        ),
        (
            vec![
                "-o",
                "copy-file",
                "-r",
                "10",
                "--csv-dir",
                "/nonexistent",
                "-u",
                &good,
            ],
            1,
            "csv_generator",
        ),
    ];
    for (args, code, expect) in cases {
        let out = bin("ysql-bench", &args);
        let stderr = text(&out.stderr);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expect) || stdout.contains(expect),
            "{args:?}: {stderr}{stdout}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if code == 2 {
            // One line, clap's errors too: what is wrong and what to do
            // (after the progress lines of what ran before it was found).
            let other: Vec<&str> = stderr.lines().filter(|l| !l.starts_with(">> ")).collect();
            assert_eq!(other.len(), 1, "{args:?}: {stderr}");
            assert!(other[0].starts_with("error: "), "{args:?}: {stderr}");
        }
        for secret in ["s3cret-pw", "not-it"] {
            assert!(
                !stderr.contains(secret) && !stdout.contains(secret),
                "{args:?} leaked"
            );
        }
    }
}

#[test]
fn the_password_appears_nowhere_in_output_or_reports() {
    let pw = Sandbox::start(SandboxOptions {
        settings: vec![],
        fast: true,
        password: Some("hunter2-xyz".into()),
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let url = format!(
        "postgres://postgres:hunter2-xyz@127.0.0.1:{}/postgres",
        pw.port()
    );
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &url,
            "-o",
            "insert,select",
            "-r",
            "100",
            "--time",
            "1s",
            "-P",
            "0.5",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let everything = [
        text(&out.stdout),
        text(&out.stderr),
        std::fs::read_to_string(&json).unwrap(),
        std::fs::read_to_string(&csv).unwrap(),
    ]
    .concat();
    assert!(everything.contains("user=postgres"));
    assert!(!everything.contains("hunter2"), "the password leaked");
    assert!(!std::path::Path::new(".env").exists());
}

#[test]
fn a_server_that_accepts_but_never_answers_fails_within_the_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("host=127.0.0.1 port={port} user=postgres");
    let started = std::time::Instant::now();
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "select", "--connect-timeout", "1s"],
    );
    let took = started.elapsed();
    drop(listener);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot connect"),
        "{}",
        text(&out.stderr)
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// The procedure commits every batch: when its CALL fails half-way, what
/// it committed is in the table, and the summary must count it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_procedure_counts_the_rows_it_committed() {
    let sb = sandbox();
    let (report, text, in_table) =
        cut_short_procedure(&sb, &["--statement-timeout", "700ms"]).await;
    let why = report.operations[0]
        .failure
        .clone()
        .expect("the CALL hits the statement timeout");
    assert!(why.contains("rows were committed"), "{why}");
    assert!(
        text.contains(&format!("total rows            : {in_table}")),
        "{text}"
    );
}

/// More threads than the server takes: the run fails before any worker
/// writes, rather than loading part of the table with the lucky ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_cannot_connect_stops_the_others_before_they_write() {
    let sb = sandbox_with(vec![("max_connections".into(), "12".into())]);
    let c = client(&sb).await;
    let (report, text) =
        run_args(&sb, &["-o", "insert", "-r", "5000", "-b", "1", "-t", "30"]).await;
    let op = &report.operations[0];
    let why = op.failure.clone().expect("too many clients");
    assert!(why.contains("53300"), "{why}");
    assert_eq!(op.total.ops, 0, "{text}");
    assert_eq!(facts(&c, "test_table").await.count, 0, "{text}");
}

/// A server that stops answering (its backends frozen with SIGSTOP: not
/// even a cancel gets through) must not hold the run past its time for
/// ever: the units in flight are cancelled, then given up on, and the run
/// ends failed with what it measured before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_does_not_hold_a_timed_run_for_ever() {
    let sb = sandbox();
    let (loaded, _) = run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    assert!(loaded.succeeded());
    let c = client(&sb).await;
    let plan = plan(
        &sb,
        &["-o", "select", "-r", "1000", "-t", "2", "--time", "2s"],
    );
    let started = std::time::Instant::now();
    let run = spawn_run(plan);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let pids: Vec<i32> = c
        .query(
            &format!(
                "select pid from pg_stat_activity where {WORKER_BACKENDS} and pid <> pg_backend_pid()"
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!pids.is_empty());
    for &p in &pids {
        unsafe {
            libc::kill(p, libc::SIGSTOP);
        }
    }
    let (report, text) = run.await.unwrap();
    let took = started.elapsed();
    for &p in &pids {
        unsafe {
            libc::kill(p, libc::SIGCONT);
        }
    }
    let report = report.unwrap();
    // --time 2 s, the grace, the cancel's wait: about 12 s, not for ever.
    assert!(took < Duration::from_secs(25), "took {took:?}\n{text}");
    let op = &report.operations[0];
    let why = op.failure.clone().expect("the frozen workers are given up");
    assert!(why.contains("the end of --time"), "{why}");
    assert!(op.wallclock < Duration::from_secs(3), "{text}");
}

/// A server restart in the middle of the procedure's CALLs: the rows they
/// committed before are in the table, and the summary counts them (on a
/// new connection, as the workers' own are gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_procedure_cut_by_a_restart_counts_what_it_committed() {
    let mut sb = sandbox();
    let rows = LONG_PROCEDURE_ROWS.to_string();
    let p = plan(&sb, &["-o", "procedure", "-r", &rows, "-t", "2"]);
    let run = spawn_run(p);
    restart_after(&mut sb, Duration::from_millis(1500)).await;
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(op.failure.is_some(), "{text}");
    let in_table = facts(&client(&sb).await, "test_table").await.count as u64;
    assert!(in_table > 0, "{text}");
    assert_eq!(op.total.rows, in_table, "{text}");
}
