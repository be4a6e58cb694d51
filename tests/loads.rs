//! Every load method against a real server: the exact table afterwards.

mod common;
use common::*;

const LOADS: [&str; 4] = ["insert", "copy-mem", "procedure", "copy-file"];

async fn load_and_check(
    sb: &ysql_bench::db::sandbox::Sandbox,
    op: &str,
    rows: u64,
    threads: usize,
    extra: &[&str],
) {
    let c = client(sb).await;
    let rows_s = rows.to_string();
    let threads_s = threads.to_string();
    let dir = shared_dir();
    let dir_s = dir.path().to_str().unwrap().to_string();
    if op == "copy-file" {
        let out = bin(
            "csv_generator",
            &["-r", &rows_s, "-t", &threads_s, "-f", "24", "-d", &dir_s],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let mut args = vec![
        "-o",
        op,
        "-r",
        &rows_s,
        "-t",
        &threads_s,
        "-b",
        "200",
        "--csv-dir",
        &dir_s,
    ];
    args.extend_from_slice(extra);
    let (report, summary) = run_args(sb, &args).await;
    assert!(report.succeeded(), "{op} {rows}/{threads}: {summary}");
    assert_eq!(report.operations[0].total.rows, rows, "{op}");
    assert!(
        summary.contains(&format!("total rows            : {rows}\n")),
        "{summary}"
    );
    assert_eq!(
        facts(&c, "test_table").await,
        loaded(rows as i64, 24),
        "{op} {rows}/{threads}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_load_writes_each_id_exactly_once_with_uneven_splits() {
    let sb = sandbox();
    for op in LOADS {
        // Neither divisible by the threads nor by the batch.
        load_and_check(&sb, op, 1001, 3, &[]).await;
        // A single row, and fewer rows than threads.
        load_and_check(&sb, op, 1, 1, &[]).await;
        load_and_check(&sb, op, 2, 4, &[]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_without_prepared_statements_are_exact_too() {
    let sb = sandbox();
    for op in ["insert", "copy-mem"] {
        load_and_check(&sb, op, 1001, 3, &["--no-prepared"]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_gives_the_same_table_by_every_client_side_method() {
    let sb = sandbox();
    let c = client(&sb).await;
    let dir = shared_dir();
    let dir_s = dir.path().to_str().unwrap();
    let out = bin(
        "csv_generator",
        &[
            "-r", "5000", "-t", "2", "-f", "24", "-d", dir_s, "--seed", "77",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut digests = Vec::new();
    for (op, threads, batch) in [
        ("copy-mem", "3", "200"),
        ("insert", "1", "999"),
        ("copy-file", "2", "200"),
    ] {
        let (report, _) = run_args(
            &sb,
            &[
                "-o",
                op,
                "-r",
                "5000",
                "-t",
                threads,
                "-b",
                batch,
                "--seed",
                "77",
                "--csv-dir",
                dir_s,
            ],
        )
        .await;
        assert!(report.succeeded());
        digests.push(digest(&c, "test_table").await);
    }
    assert_eq!(digests[0], digests[1]);
    assert_eq!(digests[1], digests[2]);
    // A different seed gives different data.
    run_args(&sb, &["-o", "copy-mem", "-r", "5000", "--seed", "78"]).await;
    assert_ne!(digest(&c, "test_table").await, digests[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_name_that_needs_quoting_works_and_injects_nothing() {
    let sb = sandbox();
    let c = client(&sb).await;
    let name = "My \"odd\" table; drop table x";
    for op in ["insert", "copy-mem", "procedure"] {
        let (report, _) = run_args(
            &sb,
            &["-o", op, "-r", "300", "-t", "2", "--table-name", name],
        )
        .await;
        assert!(report.succeeded(), "{op}");
        assert_eq!(
            facts(&c, "\"My \"\"odd\"\" table; drop table x\"").await,
            loaded(300, 24)
        );
    }
    let (report, _) = run_args(
        &sb,
        &[
            "-o",
            "select,update",
            "-r",
            "300",
            "--time",
            "300ms",
            "--table-name",
            name,
        ],
    )
    .await;
    assert!(report.succeeded());
    assert_eq!(report.operations[0].total.missing, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_file_with_missing_files_says_which_and_how_to_make_them() {
    let sb = sandbox();
    let c = client(&sb).await;
    let (before, _) = run_args(&sb, &["-o", "copy-mem", "-r", "7"]).await;
    assert!(before.succeeded());
    let dir = shared_dir();
    let dir_s = dir.path().to_str().unwrap();
    for client_side in [false, true] {
        let mut args = vec!["-o", "copy-file", "-r", "10", "--csv-dir", dir_s];
        if client_side {
            args.push("--copy-file-client");
        }
        let (report, summary) = run_args(&sb, &args).await;
        assert!(!report.succeeded());
        let why = report.operations[0].failure.clone().unwrap();
        assert!(why.contains("ysql_bench-t1-r10-f24--nr1.csv"), "{why}");
        assert!(why.contains("csv_generator -r 10 -t 1 -f 24"), "{why}");
        // Found before anything ran: no summary block of zeros (the
        // reason goes to stderr).
        assert!(!summary.contains("== copy-file =="), "{summary}");
        // Found missing before the truncate: the table keeps its rows.
        assert_eq!(facts(&c, "test_table").await.count, 7, "{why}");
    }
}

/// A file the server may not read is not a missing role privilege, though
/// PostgreSQL reports both as 42501: the message must say which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_file_the_server_may_not_read_says_so_not_privilege() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    let dir = shared_dir();
    let dir_s = dir.path().to_str().unwrap();
    let out = bin("csv_generator", &["-r", "10", "-d", dir_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = dir.path().join("ysql_bench-t1-r10-f24--nr1.csv");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let (report, _) = run_args(&sb, &["-o", "copy-file", "-r", "10", "--csv-dir", dir_s]).await;
    let why = report.operations[0].failure.clone().unwrap();
    assert!(why.contains("may not read"), "{why}");
    assert!(why.contains("chmod"), "{why}");
    assert!(!why.contains("pg_read_server_files"), "{why}");
}

/// Issue 17: copy-file's 42501 (a role without pg_read_server_files, or
/// a file the server may not read) was counted as `client`, though errors
/// are counted by SQLSTATE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_file_permission_errors_are_counted_by_sqlstate() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    let c = client(&sb).await;
    let dir = shared_dir();
    let dir_s = dir.path().to_str().unwrap();
    let out = bin("csv_generator", &["-r", "10", "-d", dir_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (made, _) = run_args(&sb, &["-o", "copy-mem", "-r", "10"]).await;
    assert!(made.succeeded());
    // A role that owns the table but may not read server files.
    c.batch_execute("create role loader login; alter table test_table owner to loader;")
        .await
        .unwrap();
    let loader = format!(
        "host=127.0.0.1 port={} user=loader dbname=postgres",
        sb.port()
    );
    let (report, summary) = run_plain(&[
        "-u",
        &loader,
        "-o",
        "copy-file",
        "-r",
        "10",
        "--csv-dir",
        dir_s,
    ])
    .await;
    let errors = &report.operations[0].total.errors;
    assert_eq!(errors.get("42501"), Some(&1), "{summary}");
    assert_eq!(errors.get("client"), None, "{summary}");
    assert!(
        summary.contains("failed                : 1 (42501: 1)"),
        "{summary}"
    );
    assert!(summary.contains("pg_read_server_files"), "{summary}");

    // A superuser, but a file the server's OS user may not read.
    let file = dir.path().join("ysql_bench-t1-r10-f24--nr1.csv");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    c.batch_execute("alter table test_table owner to postgres")
        .await
        .unwrap();
    let (report, summary) =
        run_args(&sb, &["-o", "copy-file", "-r", "10", "--csv-dir", dir_s]).await;
    let errors = &report.operations[0].total.errors;
    assert_eq!(errors.get("42501"), Some(&1), "{summary}");
    assert!(summary.contains("may not read"), "{summary}");
}
