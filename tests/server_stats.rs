//! The server's side of a run (issue 18), against real throwaway servers:
//! its counts agree with the tool's, a lock shows in the interval it was
//! held in, pg_stat_statements figures come when the server has the
//! extension and quietly do not when it has not, a role that may not read
//! the views gets one warning and a normal run, and --no-server-stats
//! turns it all off.

mod common;
use common::*;

use std::time::Duration;

use ysql_bench::db::sandbox::Sandbox;
use ysql_bench::stats::record::RunRecord as JsonReport;
use ysql_bench::stats::server::ServerFigures;

async fn load(sb: &Sandbox, rows: &str) {
    let (r, text) = run_args(sb, &["-o", "copy-mem", "-r", rows, "-t", "2", "-b", "100"]).await;
    assert!(r.succeeded(), "{text}");
}

fn server(op: &ysql_bench::stats::OpResult) -> &ServerFigures {
    op.server.as_ref().expect("the server was watched")
}

/// The server's commits, without the watcher's own queries, are the
/// tool's queries plus what each worker connection commits by itself (its
/// start and its one prepared statement: 2 × 2 here): a handful, not the
/// dozens of the watcher's own queries, which would show if they were not
/// taken out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_commits_are_the_tools_queries_within_a_handful() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let (loaded, text) = run_args(
        &sb,
        &["-o", "copy-mem", "-r", "2000", "-t", "2", "-b", "100"],
    )
    .await;
    let l = &loaded.operations[0];
    let (commits, _) = server(l).commits_without_own().expect("counters read");
    // One COPY per batch, each its own transaction.
    let diff = commits - l.total.ops as i64;
    assert!((0..=8).contains(&diff), "load: {diff}\n{text}");
    assert_eq!(server(l).tables[0].counts.n_tup_ins, 2000, "{text}");

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
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    let op = &report.operations[0];
    let s = server(op);
    assert!(s.application_name.starts_with("ysql-bench-"), "{s:?}");
    assert_eq!(s.application_name, report.application_name);
    let (commits, rollbacks) = s.commits_without_own().expect("counters read");
    let diff = commits - op.total.ops as i64;
    assert!((0..=8).contains(&diff), "{diff}\n{text}");
    assert_eq!(rollbacks, 0, "{text}");
    // The sampler ran about 20 queries in 2 s: taken out, not hidden.
    assert!(s.own_commits >= 15, "{s:?}");
    // Every query was an index scan of the table, as the server saw it.
    assert_eq!(s.tables[0].table, "test_table");
    assert_eq!(s.tables[0].counts.idx_scan, op.total.ops as i64, "{text}");
    // No extension here: no statement figures, and nothing said about it.
    assert!(s.statements.is_none());
    assert!(!text.contains("statement             :"), "{text}");
    assert!(text.contains("server commits"), "{text}");
    assert!(text.contains("server waits"), "{text}");
    // The waits line up with the intervals: same number, same indexes,
    // about ten samples each.
    assert_eq!(s.intervals.len(), op.intervals.len());
    for (sv, iv) in s.intervals.iter().zip(&op.intervals) {
        assert_eq!(sv.index, iv.index);
    }
    let waits = s.waits.as_ref().expect("waits sampled");
    assert!(waits.samples >= 15, "{waits:?}");
    assert!((waits.per_sample() - 2.0).abs() < 0.3, "{waits:?}");

    // JSON keeps the same figures; CSV has them per interval.
    let doc: JsonReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // (Floats may differ in their last bit after the round trip.)
    let back = doc.operations[0].server.as_ref().expect("server in JSON");
    assert_eq!(back.database, s.database);
    assert_eq!(back.own_commits, s.own_commits);
    assert_eq!(back.tables, s.tables);
    assert_eq!(back.waits, s.waits);
    assert_eq!(back.intervals, s.intervals);
    let mut rd = csv::Reader::from_path(&csv).unwrap();
    let header = rd.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (waits_col, commits_col) = (col("server_waits"), col("server_commits"));
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert!(rows.iter().any(|r| r[waits_col].contains('=')), "{rows:?}");
    let per_interval: i64 = rows
        .iter()
        .filter_map(|r| r[commits_col].parse::<i64>().ok())
        .sum();
    assert!(per_interval > 0, "{rows:?}");
}

/// Issue 22: under --rate the workers wait for their schedule most of
/// the time, and their backends wait for the client all that time; the
/// block read that as "the client (or the network) is the bottleneck".
/// Read against the pacing, it says what the pacing explains and that the
/// units kept to their schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paced_run_is_not_read_as_a_slow_client() {
    let sb = sandbox();
    load(&sb, "2000").await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "2000",
            "-t",
            "2",
            "--rate",
            "200",
            "--time",
            "3s",
            "--json",
            json.to_str().unwrap(),
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    let reading = text
        .lines()
        .find(|l| l.starts_with("reading the waits"))
        .unwrap_or_else(|| panic!("no reading of the waits in\n{text}"));
    assert!(!reading.contains("bottleneck"), "{reading}");
    assert!(
        reading.contains("their --rate schedule (200/s)")
            && reading.contains("the pacing explains")
            && reading.contains("the units kept to their schedule, so the pacing sets the pace"),
        "{reading}"
    );
    // The share it names: 200 queries of some 50 us a second over 2
    // workers leave them waiting nearly all the time.
    let pct: f64 = reading
        .split("the workers spent ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{reading}"));
    assert!(pct >= 80.0, "{reading}");
    // The JSON keeps the waits behind the share.
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let op = &raw["operations"][0];
    let waited = op["schedule_wait_ns"].as_f64().unwrap_or(0.0) / 1e9;
    let worker_time = 2.0 * op["wallclock_s"].as_f64().unwrap();
    assert!(waited / worker_time >= 0.8, "{waited} of {worker_time}");
}

/// Another session holds an exclusive lock on the table for 2 s in the
/// middle of a 5 s select: the intervals it covers show the workers
/// waiting on `Lock:relation`, the first interval does not, and so do the
/// progress lines and the summary of the binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_for_two_seconds_shows_in_the_intervals_it_covers() {
    let sb = sandbox();
    load(&sb, "2000").await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = sb.url();
    let args = [
        "-u",
        &url,
        "-o",
        "select",
        "-r",
        "2000",
        "-t",
        "2",
        "--time",
        "5s",
        "-P",
        "1",
        "--json",
        json.to_str().unwrap(),
    ];
    let path = env!("CARGO_BIN_EXE_ysql-bench");
    let child = std::process::Command::new(path)
        .args(args)
        .env_remove("YSQLBENCH_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let c = client(&sb).await;
    // The workers are connected just before measurement starts.
    for _ in 0..200 {
        let n: i64 = c
            .query_one(
                &format!(
                    "select count(*) from pg_stat_activity where {WORKER_BACKENDS} and pid <> pg_backend_pid()"
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if n >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    c.batch_execute("begin; lock table test_table in access exclusive mode")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    c.batch_execute("commit").await.unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");

    let doc: JsonReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = doc.operations[0].server.as_ref().expect("server figures");
    let top = |i: usize| {
        s.intervals[i]
            .waits
            .shares()
            .first()
            .map(|(e, share)| (e.to_string(), *share))
    };
    let locked: Vec<usize> = (0..s.intervals.len())
        .filter(|&i| top(i).is_some_and(|(e, share)| e == "Lock:relation" && share > 0.9))
        .collect();
    assert!(!locked.is_empty(), "{:?}\n{stdout}", s.intervals);
    assert!(
        !s.intervals[0].waits.events.contains_key("Lock:relation"),
        "{:?}",
        s.intervals[0]
    );
    // The lock ended a second before the run: the last interval is free.
    let last = s.intervals.len() - 1;
    assert!(!locked.contains(&last), "{locked:?}");
    assert!(stdout.contains("Lock:relation"), "{stdout}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("progress: select") && l.ends_with("% Lock:relation")),
        "{stderr}"
    );
}

/// With pg_stat_statements loaded and created, the select's statement is
/// there with one call per query, and its execution time beside the
/// client's time in the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_statements_figures_appear_when_the_server_has_it() {
    let sb = sandbox_with(vec![(
        "shared_preload_libraries".to_string(),
        "pg_stat_statements".to_string(),
    )]);
    client(&sb)
        .await
        .batch_execute("create extension pg_stat_statements")
        .await
        .unwrap();
    load(&sb, "2000").await;
    let (report, text) = run_args(
        &sb,
        &["-o", "select", "-r", "2000", "-t", "2", "--time", "1s"],
    )
    .await;
    let op = &report.operations[0];
    let stmts = server(op).statements.as_ref().expect("statements read");
    let select = stmts
        .iter()
        .find(|s| s.query.contains("where id = $1"))
        .unwrap_or_else(|| panic!("{stmts:?}"));
    assert_eq!(select.calls, op.total.ops as i64, "{text}");
    assert!(select.total_exec_ms > 0.0);
    // The tool's own statistics queries are not among them.
    assert!(
        stmts.iter().all(|s| !s.query.contains("pg_stat")),
        "{stmts:?}"
    );
    assert!(text.contains("statement             :"), "{text}");
    assert!(text.contains("server exec time"), "{text}");
}

/// The extension created but not loaded by the server: nothing to read,
/// no warning, a note, and the rest of the block as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_statements_not_loaded_is_a_note_not_an_error() {
    let sb = sandbox();
    client(&sb)
        .await
        .batch_execute("create extension pg_stat_statements")
        .await
        .unwrap();
    load(&sb, "1000").await;
    let url = sb.url();
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "select", "-r", "1000", "--time", "1s"],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(stdout.contains("installed but not loaded"), "{stdout}");
    assert!(stdout.contains("server commits"), "{stdout}");
}

/// A role that is neither superuser nor the table's owner nor in
/// pg_read_all_stats still sees its own backends and the database's
/// counters; where the views are closed to it, it gets one warning and a
/// normal run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_without_access_gets_one_warning_and_a_normal_run() {
    let sb = sandbox();
    load(&sb, "1000").await;
    let c = client(&sb).await;
    c.batch_execute("create role bench login; grant select on test_table to bench")
        .await
        .unwrap();
    let url = format!(
        "host=127.0.0.1 port={} user=bench dbname=postgres",
        sb.port()
    );
    let args = [
        "-u",
        url.as_str(),
        "-o",
        "select",
        "-r",
        "1000",
        "-t",
        "2",
        "--time",
        "1s",
    ];
    let out = bin("ysql-bench", &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(stdout.contains("server commits"), "{stdout}");
    assert!(stdout.contains("server waits"), "{stdout}");

    c.batch_execute(
        "revoke select on pg_stat_database, pg_stat_activity, pg_stat_user_tables from public",
    )
    .await
    .unwrap();
    let out = bin("ysql-bench", &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("pg_stat_database"), "{stderr}");
    assert!(warnings[0].contains("--no-server-stats"), "{stderr}");
    assert!(stdout.contains("nr queries"), "{stdout}");
    assert!(!stdout.contains("server commits"), "{stdout}");
    assert!(!stdout.contains("server waits"), "{stdout}");
}

/// --no-server-stats: no figures, no block, no statistics connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_stats_turns_it_all_off() {
    let sb = sandbox();
    load(&sb, "1000").await;
    let plan = plan(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "1000",
            "--time",
            "1500ms",
            "--no-server-stats",
        ],
    );
    let run = spawn_run(plan);
    let c = client(&sb).await;
    let mut stats_seen = 0i64;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stats_seen += c
            .query_one(
                "select count(*) from pg_stat_activity where application_name like '%-stats'",
                &[],
            )
            .await
            .unwrap()
            .get::<_, i64>(0);
    }
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    assert!(report.succeeded(), "{text}");
    assert!(report.operations[0].server.is_none());
    assert!(!text.contains("server"), "{text}");
    assert_eq!(stats_seen, 0);
}
