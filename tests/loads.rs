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
/// are counted by SQLSTATE. Issue 22: both are now found before the table
/// is emptied, where the failure still carries its SQLSTATE; an error
/// only the load itself meets (a bad line past the first) is counted
/// under its own.
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
    let before = digest(&c, "test_table").await;
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
    let why = report.operations[0].failure.clone().unwrap_or_default();
    assert!(why.contains("(SQLSTATE 42501)"), "{why}\n{summary}");
    assert!(why.contains("pg_read_server_files"), "{why}");
    assert_eq!(report.operations[0].total.errors.get("client"), None);
    assert_eq!(digest(&c, "test_table").await, before, "{why}");

    // A superuser, but a file the server's OS user may not read.
    let file = dir.path().join("ysql_bench-t1-r10-f24--nr1.csv");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    c.batch_execute("alter table test_table owner to postgres")
        .await
        .unwrap();
    let (report, _) = run_args(&sb, &["-o", "copy-file", "-r", "10", "--csv-dir", dir_s]).await;
    let why = report.operations[0].failure.clone().unwrap_or_default();
    assert!(why.contains("(SQLSTATE 42501)"), "{why}");
    assert!(why.contains("may not read"), "{why}");
    assert_eq!(digest(&c, "test_table").await, before, "{why}");

    // A file whose first line is good and a later one is not: the COPY
    // fails, counted under the server's SQLSTATE.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut body = std::fs::read_to_string(&file).unwrap();
    body.push_str("x,y,z,w,v\n");
    std::fs::write(&file, body).unwrap();
    let (report, summary) =
        run_args(&sb, &["-o", "copy-file", "-r", "10", "--csv-dir", dir_s]).await;
    let errors = &report.operations[0].total.errors;
    assert_eq!(errors.get("22P02"), Some(&1), "{summary}");
    assert_eq!(errors.get("client"), None, "{summary}");
    assert!(
        summary.contains("failed                : 1 (22P02: 1)"),
        "{summary}"
    );
    assert!(
        summary.contains("not as csv_generator writes it"),
        "{summary}"
    );
}

/// copy-file of 10 rows on 2 threads from `dir`.
async fn copy_file_10(
    sb: &ysql_bench::db::sandbox::Sandbox,
    dir: &str,
) -> (ysql_bench::RunReport, String) {
    run_args(
        sb,
        &["-o", "copy-file", "-r", "10", "-t", "2", "--csv-dir", dir],
    )
    .await
}

/// Issue 22: copy-file from a directory the server's OS user may not
/// enter (made by `mktemp -d`, 0700, ours) emptied the table and then
/// failed on "Permission denied": the rows were gone and none came in.
/// What a load can check about its input it now checks before it empties
/// anything: the files are read by the server first, as the load will.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_file_that_cannot_read_its_input_keeps_every_row() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    let c = client(&sb).await;
    let (made, _) = run_args(&sb, &["-o", "copy-mem", "-r", "7", "--seed", "3"]).await;
    assert!(made.succeeded());
    let before = digest(&c, "test_table").await;
    // A private directory, as `mktemp -d` makes it: the server, another
    // user when we are root, may not enter it.
    let private = tempfile::tempdir().unwrap();
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let private_s = private.path().to_str().unwrap();
    let out = bin("csv_generator", &["-r", "10", "-t", "2", "-d", private_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    if service_user().is_some() {
        let (r, s) = copy_file_10(&sb, private_s).await;
        assert!(!r.succeeded(), "the server read a private directory?\n{s}");
        let why = r.operations[0].failure.clone().unwrap_or_default();
        assert!(why.contains("may not read"), "{why}");
        assert!(why.contains("Permission denied"), "{why}");
        assert_eq!(digest(&c, "test_table").await, before, "{why}");
    } else {
        eprintln!("not root: the server runs as we do and reads a private directory");
    }
    // An empty file, and one csv_generator did not write (its first line
    // is not a row), where the server can read them.
    let shared = shared_dir();
    let shared_s = shared.path().to_str().unwrap();
    let out = bin("csv_generator", &["-r", "10", "-t", "2", "-d", shared_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second = shared.path().join("ysql_bench-t2-r10-f24--nr2.csv");
    for (body, says) in [
        ("", "is empty where 5 rows were expected"),
        (
            "id,f1,f2,f3,f4\n0,a,b,c,d\n",
            "not as csv_generator writes it",
        ),
        ("7\n8\n", "not as csv_generator writes it"),
    ] {
        std::fs::write(&second, body).unwrap();
        let (r, s) = copy_file_10(&sb, shared_s).await;
        assert!(!r.succeeded(), "{body:?}: {s}");
        let why = r.operations[0].failure.clone().unwrap_or_default();
        assert!(why.contains(says), "{body:?}: {why}");
        assert!(why.contains("csv_generator -r 10 -t 2 -f 24"), "{why}");
        assert_eq!(digest(&c, "test_table").await, before, "{body:?}: {why}");
    }
}

/// Issue 22: a load emptied its table before it found that it could not
/// fill it: a role that may truncate but not insert, or may not create
/// the procedure's generator. Found now before anything is emptied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_the_role_cannot_finish_leaves_the_tables_as_they_were() {
    let sb = sandbox();
    let c = client(&sb).await;
    let (made, _) = run_args(
        &sb,
        &["-o", "copy-mem,oltp-prepare", "--tables", "2", "-r", "50"],
    )
    .await;
    assert!(made.succeeded());
    let before = digest(&c, "test_table").await;
    // PostgreSQL 15 lets no one but the owner create in schema public.
    c.batch_execute(
        "create role loader login; \
         grant select, truncate on test_table, sbtest1, sbtest2 to loader; \
         grant insert on sbtest1 to loader",
    )
    .await
    .unwrap();
    let loader = format!(
        "host=127.0.0.1 port={} user=loader dbname=postgres",
        sb.port()
    );
    let load = |args: &'static [&'static str]| {
        let loader = loader.clone();
        async move {
            let mut all = vec!["-u", loader.as_str(), "--force"];
            all.extend_from_slice(args);
            let (r, s) = run_plain(&all).await;
            assert!(!r.succeeded(), "{args:?}: {s}");
            r.operations[0].failure.clone().unwrap_or_default()
        }
    };
    for op in ["copy-mem", "insert"] {
        let why = load(if op == "insert" {
            &["-o", "insert", "-r", "50"]
        } else {
            &["-o", "copy-mem", "-r", "50"]
        })
        .await;
        assert!(
            why.contains("has no INSERT privilege on table \"test_table\""),
            "{op}: {why}"
        );
        assert!(
            why.contains("grant insert on \"test_table\" to \"loader\""),
            "{why}"
        );
        assert_eq!(digest(&c, "test_table").await, before, "{op}: {why}");
    }
    let why = load(&["-o", "oltp-prepare", "--tables", "2", "-r", "50"]).await;
    assert!(
        why.contains("INSERT privilege on table \"sbtest2\""),
        "{why}"
    );
    for t in ["sbtest1", "sbtest2"] {
        let n: i64 = c
            .query_one(&format!("select count(*) from {t}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 50, "{t}: {why}");
    }
    c.batch_execute("grant insert on test_table to loader")
        .await
        .unwrap();
    let why = load(&["-o", "procedure", "-r", "50"]).await;
    assert!(why.contains("cannot create the load procedure"), "{why}");
    assert_eq!(digest(&c, "test_table").await, before, "{why}");
}
