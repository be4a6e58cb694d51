//! The binaries end to end: exit codes, messages, the summary on stdout.

mod common;
use common::*;

#[test]
fn a_sandbox_run_prints_a_summary_and_exits_0() {
    let out = bin(
        "ysql-bench",
        &[
            "--sandbox",
            "-o",
            "insert,select",
            "-r",
            "500",
            "-t",
            "2",
            "--time",
            "300ms",
            "--show-rowsize",
        ],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("== insert =="), "{stdout}");
    assert!(stdout.contains("total rows            : 500"), "{stdout}");
    assert!(stdout.contains("== select =="), "{stdout}");
    assert!(stdout.contains("row size"), "{stdout}");
    // Progress goes to stderr, never into the summary.
    assert!(stderr.contains(">> create table"), "{stderr}");
    assert!(!stdout.contains(">>"));
}

#[test]
fn bad_usage_exits_2_with_one_line_that_says_what_to_do() {
    for (args, expect) in [
        (&["-o", "insert,delete"][..], "invalid value 'delete'"),
        (&["-o", "insert", "-t", "0"][..], "1 or more"),
        (&["-o", "insert", "-b", "-5"][..], "negative"),
        (&["-o", "insert", "-r", "many"][..], "not a whole number"),
        (&["-o", "select", "-r", "0", "--sandbox"][..], "--rows 0"),
        // Issue 17: a load of 0 rows exited 0 with a summary of zeros.
        (
            &["-o", "insert", "-r", "0", "--sandbox"][..],
            "--rows 0 gives insert nothing to load",
        ),
        (
            &["-o", "select", "--time", "0", "--sandbox"][..],
            "--time 0",
        ),
        (&["-o", "insert", "-b", "50000", "--sandbox"][..], "13107"),
        (
            &["-o", "insert", "-u", "host=h port=x"][..],
            "not a valid connection string",
        ),
        // --transactions: as pgbench's -t, against a duration, a load
        // alone, and tries without limit; before any connection.
        (
            &["-o", "select", "--transactions", "5", "--time", "3s"][..],
            "'--transactions <N>' cannot be used with '--time <DURATION>'",
        ),
        (
            &[
                "-o",
                "select",
                "--runtime-select",
                "1",
                "--transactions",
                "5",
            ][..],
            "cannot be used with",
        ),
        (&["-o", "select", "--transactions", "0"][..], "1 or more"),
        (
            &["-o", "copy-mem", "--transactions", "5", "--sandbox"][..],
            "--transactions 5 counts the units of query workloads",
        ),
        (
            &["-o", "select", "--transactions", "5", "--max-tries", "0"][..],
            "--max-tries 0 tries a unit again until the end of --time",
        ),
        // --pipeline-sync: batches need a pipeline, and whole ones.
        (
            &["-o", "select", "--pipeline-sync", "4"][..],
            "give --pipeline N as well",
        ),
        (
            &["-o", "select", "--pipeline", "8", "--pipeline-sync", "3"][..],
            "--pipeline-sync 3 must divide --pipeline 8",
        ),
        (
            &["-o", "select", "--pipeline", "8", "--pipeline-sync", "0"][..],
            "1 or more",
        ),
    ] {
        let out = bin("ysql-bench", args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Issue 22: pgbench's habits failed without a hint (`-T 10`, `-c 4`,
/// `-b select-only`), and `-f my.sql` was taken as --fields-length. Each
/// is still bad usage (exit 2, one line, before any connection), and the
/// line says what to write instead; -f and -b keep the original tool's
/// meaning.
#[test]
fn pgbench_habits_fail_with_a_hint_of_the_equivalent() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bench.txt");
    std::fs::write(&script, "select 1;\n").unwrap();
    let script = script.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-o", "select", "-T", "10"],
            "-T SECONDS is --time here",
        ),
        (
            vec!["-c", "4", "-o", "select"],
            "-c CLIENTS is -t/--threads here",
        ),
        (vec!["-o", "select", "-c4"], "-t/--threads"),
        (vec!["--client=4", "-o", "select"], "-t/--threads"),
        (
            vec!["-b", "select-only"],
            "-b is --batch-size (as in the original ysql-bench); for pgbench's built-in script use --builtin select-only",
        ),
        (
            vec!["-f", "my.sql"],
            "-f is --fields-length (as in the original ysql-bench); for a pgbench script use --script my.sql",
        ),
        (vec!["-f", script], "use --script"),
        (vec!["-o", "select", "-j", "2"], "leave it out"),
        (
            vec!["-o", "select", "-M", "fast"],
            "possible values: simple, extended, prepared",
        ),
        (vec!["-o", "select", "-R", "100"], "is --rate here"),
        (vec!["-o", "select", "-L", "50"], "is --latency-limit here"),
        (vec!["-S"], "--builtin select-only"),
        (vec!["-N"], "--builtin simple-update"),
        (vec!["-i", "-s", "10"], "-o pgbench-init"),
        (vec!["-o", "select", "-U", "postgres"], "-u 'host=HOST"),
        (vec!["-o", "select", "-p", "5432"], "port=5432"),
        (vec!["-o", "select", "mydb"], "-u 'dbname=mydb'"),
        (vec!["-o", "select", "-r"], "is --per-statement"),
        (
            vec!["-o", "select", "--report-per-command"],
            "is --per-statement",
        ),
        (vec!["-o", "select", "--random-seed=42"], "is --seed N here"),
        (
            vec!["-h", "localhost", "-o", "select"],
            "-h is the help here; the host goes in -u 'host=localhost ...' (or PGHOST)",
        ),
        (vec!["-o", "select", "-h", "db1"], "-u 'host=db1 ...'"),
    ];
    for (args, hint) in cases {
        let out = bin("ysql-bench", &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // No hint where it would not be true: -f of a plain word, -b of
    // another word, a subcommand's own flags.
    for args in [
        &["-o", "select", "-f", "wide"][..],
        &["-o", "select", "-b", "many"][..],
        &["show", "-T", "x.json"][..],
    ] {
        let out = bin("ysql-bench", args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("pgbench"), "{args:?}: {stderr}");
        assert!(!stderr.contains("--script"), "{args:?}: {stderr}");
    }
    // -h alone or before another flag stays the short help, and so does a
    // subcommand's.
    for args in [
        &["-h"][..],
        &["-h", "-o", "select"][..],
        &["-o", "select", "-h"][..],
        &["show", "-h"][..],
    ] {
        let out = bin("ysql-bench", args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(text(&out.stdout).contains("Usage:"), "{args:?}");
    }
}

#[test]
fn nontransactional_is_refused_on_postgresql() {
    let out = bin(
        "ysql-bench",
        &["--sandbox", "-o", "insert", "-r", "10", "-n"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("only YugabyteDB"));
}

#[test]
fn an_unreachable_server_fails_with_exit_1_and_names_the_target() {
    // A port nothing listens on.
    let port = free_port();
    let url =
        format!("host=127.0.0.1 port={port} user=postgres password=hunter2 connect_timeout=2");
    let out = bin("ysql-bench", &["-u", &url, "-o", "select", "--time", "1s"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("port={port}")), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_ysql_bench_did_not_create_is_never_truncated_without_force() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute(
        "create table test_table (id int primary key, f1 text, f2 text, f3 text, f4 text);
         insert into test_table values (42, 'precious', 'a', 'b', 'c');
         create table other_shape (id int primary key, name text);",
    )
    .await
    .unwrap();
    let url = sb.url();
    let out = bin("ysql-bench", &["-u", &url, "-o", "insert", "-r", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--force"),
        "{}",
        text(&out.stderr)
    );
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "insert", "-r", "10", "--drop"],
    );
    assert_eq!(out.status.code(), Some(2));
    let kept: i64 = c
        .query_one("select count(*) from test_table where f1 = 'precious'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 1, "the user's row must survive");
    // Reading does not write: select is allowed on a table of the right shape.
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "select", "-r", "43", "--time", "200ms"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A table of another shape is refused even with --force.
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &url,
            "-o",
            "insert",
            "--table-name",
            "other_shape",
            "--force",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("other columns"),
        "{}",
        text(&out.stderr)
    );
    // With --force the user said the data may go.
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "insert", "-r", "10", "--force"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(facts(&c, "test_table").await, loaded(10, 24));
}

/// `ysql-bench ... 2>&1 | head`: once the reader is gone, progress lines
/// must not end the run with a panic; it finishes, cleans up its sandbox
/// and exits as usual.
#[test]
fn a_closed_stderr_pipe_does_not_end_the_run() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args([
            "--sandbox",
            "-o",
            "insert,select",
            "-r",
            "500",
            "--time",
            "300ms",
        ])
        .env_remove("YSQLBENCH_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The reader of stderr goes away before the first line is written.
    drop(child.stderr.take());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("== select =="), "{stdout}");
}

#[test]
fn a_failed_load_says_which_operations_it_skipped() {
    let dir = shared_dir();
    let out = bin(
        "ysql-bench",
        &[
            "--sandbox",
            "-o",
            "copy-file,select,update",
            "-r",
            "10",
            "--csv-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(">> skipped select, update: copy-file did not load the table"),
        "{stderr}"
    );
    // Issue 17: the reason was on stdout only; copy-file never started,
    // so it has no summary block of zeros either.
    assert!(
        stderr.contains("error: copy-file did not start: copy-file: the server cannot find"),
        "{stderr}"
    );
    assert!(
        !text(&out.stdout).contains("== copy-file =="),
        "{}",
        text(&out.stdout)
    );
}

/// Issue 17: with the summary sent to a file (`> results.txt`), a failed
/// run showed nothing but exit 1 on the terminal: the reason goes to
/// stderr too, and stays in the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_runs_reason_is_on_stderr_too() {
    let sb = sandbox();
    let url = sb.url();
    let out = bin("ysql-bench", &["-u", &url, "-o", "insert", "-r", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    client(&sb)
        .await
        .batch_execute(
            "create function no_7() returns trigger language plpgsql as $$
             begin if new.id = 7 then raise exception 'id 7 refused'; end if; return new; end $$;
             create trigger no_7 before insert on test_table for each row execute function no_7();",
        )
        .await
        .unwrap();
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "insert", "-r", "20", "-b", "5"],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("FAILED"), "{stdout}");
    assert!(stderr.contains("error: insert failed:"), "{stderr}");
    assert!(stderr.contains("ids 5..10"), "{stderr}");
    assert!(stderr.contains("id 7 refused (SQLSTATE P0001)"), "{stderr}");
}

/// The sandbox server takes as many connections as the run has threads.
#[test]
fn a_sandbox_serves_more_threads_than_the_default_connection_limit() {
    let out = bin(
        "ysql-bench",
        &[
            "--sandbox",
            "-o",
            "insert",
            "-r",
            "1000",
            "-b",
            "1",
            "-t",
            "320",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(text(&out.stdout).contains("total rows            : 1000"));
}

/// Issue 17: select or update on a missing table created an empty one,
/// warned, ran the whole --time with every row missing and exited 0. Now
/// refused before anything is created, with how to load it; a run that
/// loads first is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_on_a_missing_or_empty_table_is_refused_before_anything_is_created() {
    let sb = sandbox();
    let c = client(&sb).await;
    let url = sb.url();
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "select", "-r", "100", "--time", "200ms"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("table \"test_table\" does not exist, and select needs its rows"),
        "{stderr}"
    );
    assert!(stderr.contains("-o copy-mem,select"), "{stderr}");
    assert!(
        !table_exists(&c, "test_table").await,
        "a query-only run created the table"
    );
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));

    // An empty table (ours, loaded and emptied) is refused the same way.
    let out = bin("ysql-bench", &["-u", &url, "-o", "copy-mem", "-r", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    c.batch_execute("truncate test_table").await.unwrap();
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &url,
            "-o",
            "update,select",
            "-r",
            "100",
            "--time",
            "200ms",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is empty, and update needs its rows"),
        "{stderr}"
    );
    assert!(stderr.contains("-o copy-mem,update,select"), "{stderr}");

    // Loading first in the same run is what the message says to do.
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &url,
            "-o",
            "copy-mem,select",
            "-r",
            "100",
            "--time",
            "200ms",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("missing rows          : 0"));
}

/// The tables of the database's schema public, by name.
async fn public_tables(c: &tokio_postgres::Client) -> Vec<String> {
    c.query(
        "select tablename::text from pg_tables where schemaname = 'public' order by 1",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// Issue 22: a query workload of any family (not only select and update)
/// created the tables it was to read, empty, and ran on them. Each is now
/// refused on an empty database, exit 2, one line naming the first
/// table missing and the run's `-o` with the loads it lacks put first;
/// nothing is created; and every such advice, run as given, works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_workload_refuses_missing_tables_and_creates_none() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("own.sql");
    std::fs::write(&script, "select 1;\n").unwrap();
    let script = script.to_str().unwrap();
    // (flags, the table named, the advice); tpcc's, whose load is slow,
    // is run in tests/tpcc.rs.
    let cases: [(&[&str], &str, &str); 9] = [
        (
            &["-o", "select", "-r", "100"],
            "test_table",
            "-o copy-mem,select -r 100",
        ),
        (
            &["-o", "ycsb-c", "-r", "100"],
            "usertable",
            "-o ycsb-load,ycsb-c -r 100",
        ),
        (
            &["-o", "oltp-read-only", "--tables", "3", "-r", "100"],
            "sbtest1",
            "-o oltp-prepare,oltp-read-only --tables 3 -r 100",
        ),
        (&["-o", "booking"], "aircraft", "-o booking-load,booking"),
        (
            &["-o", "booking-check"],
            "aircraft",
            "-o booking-load,booking-check",
        ),
        (
            &["--builtin", "select-only"],
            "pgbench_branches",
            "-o pgbench-init,script -s 1",
        ),
        (
            &["-o", "tpcc-check"],
            "warehouse",
            "-o tpcc-load,tpcc-check --warehouses 1",
        ),
        // A load of other tables does not load these: nor does it run.
        (
            &["-o", "copy-mem,oltp-point-select", "-r", "100"],
            "sbtest1",
            "-o oltp-prepare,copy-mem,oltp-point-select --tables 1 -r 100",
        ),
        // Two families missing: both loads in the advice.
        (
            &["-o", "select,ycsb-c", "-r", "100"],
            "test_table",
            "-o copy-mem,ycsb-load,select,ycsb-c -r 100",
        ),
    ];
    for (flags, table, advice) in cases {
        let mut args = vec!["-u", &url];
        args.extend_from_slice(flags);
        let out = bin("ysql-bench", &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{flags:?}: {stderr}");
        assert!(
            errors[0].contains(&format!("table \"{table}\" does not exist")),
            "{flags:?}: {stderr}"
        );
        assert!(
            errors[0].contains(&format!("e.g. {advice},")),
            "{flags:?}: {stderr}"
        );
        assert!(!stderr.contains(">> create table"), "{flags:?}: {stderr}");
        assert!(
            public_tables(&c).await.is_empty(),
            "{flags:?} created a table: {stderr}"
        );
    }
    // A script of the user's reads what the tool cannot know: not checked.
    let out = bin(
        "ysql-bench",
        &["-u", &url, "--script", script, "--time", "200ms"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The advice, as given, loads and runs.
    for (flags, _, advice) in cases.iter().filter(|c| !c.2.contains("tpcc")) {
        let mut args = vec!["-u", &url, "--runtime-select", "0.005"];
        args.extend(advice.split(' '));
        if flags.contains(&"--builtin") {
            args.extend(["--builtin", "select-only"]);
        }
        let out = bin("ysql-bench", &args);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{advice}: {}",
            text(&out.stderr)
        );
        for l in stdout.lines().filter(|l| l.starts_with("missing rows")) {
            assert_eq!(l, "missing rows          : 0", "{advice}: {stdout}");
        }
    }
}

/// csv_generator refuses what ysql-bench could never load, and files that
/// would not fit on the disk, before writing a byte.
#[test]
fn csv_generator_refuses_fields_too_long_and_files_too_big_for_the_disk() {
    let dir = shared_dir();
    let d = dir.path().to_str().unwrap();
    for (args, says) in [
        (vec!["-r", "10", "-f", "100000000", "-d", d], "too large"),
        (
            vec!["-r", "2000000000", "-f", "10000000", "-d", d],
            "GB free",
        ),
    ] {
        let mut all = args.clone();
        all.push("-t");
        all.push("2");
        let out = bin("csv_generator", &all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

/// More threads than connections the tool may open: refused up front, in
/// one line, rather than workers failing one by one.
#[test]
fn threads_beyond_the_open_file_limit_or_the_cap_are_refused() {
    use std::os::unix::process::CommandExt;
    let out = bin("ysql-bench", &["--sandbox", "-o", "select", "-t", "10001"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("more than 10000"),
        "{}",
        text(&out.stderr)
    );
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ysql-bench"));
    cmd.args(["--sandbox", "-o", "select", "-t", "500"]);
    // SAFETY: setrlimit is async-signal-safe; runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let rl = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("open files"), "{stderr}");
    assert!(stderr.contains("at least 564 open files"), "{stderr}");
    // Nothing was started: no sandbox.
    assert!(!stderr.contains(">> start sandbox server"), "{stderr}");
}

/// Issue 17: without -u, with $USER unset (root in a container), the tool
/// logged in as `postgres`, a superuser, and created test_table in the
/// postgres database. As libpq, the user is the OS login name and the
/// database the user's; stderr names both before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_user_it_logs_in_as_the_os_user_as_psql_does() {
    let login = ysql_bench::db::connect::os_user_name().expect("a login name");
    if login == "postgres" {
        // The sandbox's superuser: this process would rightly log in as it.
        eprintln!("skipped: the tests run as the postgres user");
        return;
    }
    let sb = sandbox();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args(["-o", "copy-mem,select", "-r", "10", "--time", "200ms"])
        .env_remove("YSQLBENCH_URL")
        .env_remove("USER")
        .env_remove("PGUSER")
        .env_remove("PGDATABASE")
        .env_remove("PGPASSWORD")
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", sb.port().to_string())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let port = sb.port();
    assert!(
        stderr.contains(&format!(
            ">> connect host=127.0.0.1 port={port} user={login} dbname={login}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("role \"{login}\" does not exist")),
        "{stderr}"
    );
    assert!(
        !table_exists(&client(&sb).await, "test_table").await,
        "the run wrote into the postgres database"
    );
}

/// Issue 17: a role that may write the table but does not own it (a
/// common benchmark role) failed with "cannot mark table: must be owner"
/// and an empty summary. It now runs, the mark skipped with a warning;
/// the safety check still refuses a table ysql-bench did not create; and
/// an operation that never started prints no summary block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_that_may_write_but_not_own_the_table_can_run() {
    let sb = sandbox();
    let c = client(&sb).await;
    let url = sb.url();
    let out = bin("ysql-bench", &["-u", &url, "-o", "copy-mem", "-r", "100"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    c.batch_execute(
        "create role bench login;
         grant select, insert, update, truncate on test_table to bench;",
    )
    .await
    .unwrap();
    let bench = format!(
        "host=127.0.0.1 port={} user=bench dbname=postgres",
        sb.port()
    );

    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &bench,
            "-o",
            "copy-mem,select",
            "-r",
            "200",
            "--time",
            "300ms",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: cannot mark table"), "{stderr}");
    assert!(stderr.contains("must be owner"), "{stderr}");
    assert!(stdout.contains("total rows            : 200"), "{stdout}");
    assert!(stdout.contains("missing rows          : 0"), "{stdout}");
    assert_eq!(facts(&c, "test_table").await, loaded(200, 24));

    // The safety check holds: a table without ysql-bench's mark is not
    // emptied for this role either.
    c.batch_execute("comment on table test_table is 'the owner''s own data'")
        .await
        .unwrap();
    let out = bin("ysql-bench", &["-u", &bench, "-o", "copy-mem", "-r", "10"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(facts(&c, "test_table").await.count, 200);

    // A role that may not empty the table: the load never starts, and
    // says why on stderr instead of printing a summary of zeros.
    c.batch_execute(
        "comment on table test_table is 'created by ysql-bench; loaded 200 rows';
         revoke truncate on test_table from bench;",
    )
    .await
    .unwrap();
    let out = bin("ysql-bench", &["-u", &bench, "-o", "copy-mem", "-r", "10"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stdout.contains("== copy-mem =="), "{stdout}");
    assert!(
        stderr.contains("error: copy-mem did not start: cannot truncate table"),
        "{stderr}"
    );
    assert!(stderr.contains("42501"), "{stderr}");
    assert_eq!(facts(&c, "test_table").await.count, 200);
}

/// --quiet: the summary on stdout and nothing on stderr but warnings and
/// errors.
#[test]
fn quiet_leaves_only_the_summary_warnings_and_errors() {
    let out = bin(
        "ysql-bench",
        &[
            "--sandbox",
            "-o",
            "insert",
            "-r",
            "50",
            "--tablets",
            "3",
            "-q",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("total rows            : 50"), "{stdout}");
    assert!(!stderr.contains(">>"), "{stderr}");
    assert!(
        stderr.contains("warning: --tablets applies to YugabyteDB only"),
        "{stderr}"
    );
}

/// clap colours the help on a terminal, or when forced; NO_COLOR wins.
#[test]
fn no_color_turns_the_helps_colours_off() {
    let help = |no_color: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ysql-bench"));
        cmd.arg("--help")
            .env("CLICOLOR_FORCE", "1")
            .env_remove("NO_COLOR");
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        text(&cmd.output().unwrap().stdout)
    };
    assert!(help(false).contains('\x1b'), "forced colours are shown");
    assert!(!help(true).contains('\x1b'), "NO_COLOR");
}

#[test]
fn help_is_grouped_short_for_h_and_with_examples_for_help() {
    let short = text(&bin("ysql-bench", &["-h"]).stdout);
    let long = text(&bin("ysql-bench", &["--help"]).stdout);
    for heading in [
        "Connection:",
        "Workload:",
        "Pacing:",
        "Reports:",
        "Several nodes:",
        "Safety:",
    ] {
        assert!(short.contains(heading), "-h: {heading}\n{short}");
        assert!(long.contains(heading), "--help: {heading}");
    }
    // Each flag one line in -h; --help adds the details and examples.
    assert!(
        short.contains("--latency-limit <MS>        Count queries and batches slower than this many milliseconds as late\n"),
        "{short}"
    );
    assert!(!short.contains("Examples:"), "{short}");
    assert!(long.contains("Examples:"), "{long}");
    assert!(long.contains("ysql-bench completions bash"), "{long}");
    assert!(long.contains("procedure and copy-file are never counted late"));
}

#[test]
fn the_version_says_the_commit() {
    let out = bin("ysql-bench", &["--version"]);
    let v = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    let expected = format!("ysql-bench {} (", env!("CARGO_PKG_VERSION"));
    assert!(
        v.starts_with(&expected) && v.trim_end().ends_with(')'),
        "{v}"
    );
    let commit = v.trim_end()[expected.len()..]
        .trim_end_matches(')')
        .to_string();
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{v}"
    );
}

/// `completions` and `man` need no -o and run nothing; a run's command
/// line is not taken for one.
#[test]
fn completions_and_the_man_page_are_printed_on_stdout() {
    let out = bin("ysql-bench", &["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // bash takes it: sourced, it registers a completion for ysql-bench.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ysql-bench.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let bash = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p ysql-bench",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(
        text(&bash.stdout).contains("-F _ysql__bench"),
        "{}{}",
        text(&bash.stdout),
        text(&bash.stderr)
    );
    let out = bin("ysql-bench", &["man"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains(".TH ysql-bench 1"));
    let out = bin("ysql-bench", &["-o", "select", "man"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out.stderr)
    );
}

/// Issue 22: `-o <TAB>` completed file names. Sourced into bash, the
/// generated script offers the operations' names, also for the item after
/// a comma, with the items before it kept.
#[test]
fn bash_completes_operation_names_after_o_and_after_a_comma() {
    let out = bin("ysql-bench", &["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ysql-bench.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // A file that a completion of file names would offer.
    std::fs::write(dir.path().join("select-notes.txt"), "").unwrap();
    let complete = |words: &[&str]| -> Vec<String> {
        let cur = words.last().unwrap();
        let prev = words[words.len() - 2];
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let cmd = format!(
            "source {} && COMP_WORDS=({}) && COMP_CWORD={} && _ysql__bench ysql-bench '{cur}' '{prev}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            quoted.join(" "),
            words.len() - 1
        );
        let bash = std::process::Command::new("bash")
            .current_dir(dir.path())
            .arg("-c")
            .arg(cmd)
            .output()
            .unwrap();
        assert!(bash.status.success(), "{}", text(&bash.stderr));
        text(&bash.stdout).lines().map(str::to_string).collect()
    };
    let all = complete(&["ysql-bench", "-o", ""]);
    // Every operation of the registry, the clean-ups too.
    for name in ysql_bench::workload::names() {
        assert!(all.iter().any(|c| c == name), "{name} not in {all:?}");
    }
    assert!(!all.iter().any(|c| c.contains(".txt")), "{all:?}");
    assert_eq!(complete(&["ysql-bench", "--operations", "sel"]), ["select"]);
    assert_eq!(
        complete(&["ysql-bench", "-o", "copy-mem,upd"]),
        ["copy-mem,update"]
    );
    let after = complete(&["ysql-bench", "-t", "4", "-o", "insert,select,ycsb-"]);
    assert!(
        after.contains(&"insert,select,ycsb-a".to_string()),
        "{after:?}"
    );
    assert!(
        after.iter().all(|c| c.starts_with("insert,select,ycsb-")),
        "{after:?}"
    );
    // The subcommands' own flags complete too: clap's bash script spells
    // their states apart for a program name with a hyphen (clap issue
    // 6421), so nothing completed after `show` or `compare`.
    assert_eq!(
        complete(&["ysql-bench", "show", "r.json", "--histogram-scale", "l"]),
        ["linear", "log"]
    );
    assert_eq!(
        complete(&["ysql-bench", "show", "--print-h"]),
        ["--print-histogram"]
    );
    assert_eq!(
        complete(&["ysql-bench", "compare", "--h"]),
        ["--html", "--help"]
    );
}

/// The load's progress bar redraws itself with cursor controls: it is
/// drawn on a terminal (here a pseudo-terminal made by `script`), and not
/// under --quiet, with TERM=dumb, or into a pipe; it never has colour.
#[test]
fn the_progress_bar_is_drawn_only_on_a_terminal_that_can_redraw() {
    let sb = sandbox();
    let url = sb.url();
    let load = |term: &str, extra: &str| {
        let cmd = format!(
            "{} -u '{url}' -o copy-mem -r 200000 -b 1000 {extra}",
            env!("CARGO_BIN_EXE_ysql-bench")
        );
        let out = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env("TERM", term)
            .env_remove("YSQLBENCH_URL")
            .output()
            .expect("script (util-linux) runs");
        assert!(out.status.success(), "{}", text(&out.stdout));
        text(&out.stdout)
    };
    let drawn = load("xterm", "");
    assert!(
        drawn.contains("copy-mem [") && drawn.contains(" rows/s, ETA"),
        "{drawn}"
    );
    // Cursor movement, but no colour (SGR, `ESC [ ... m`).
    assert!(
        !drawn.contains("\x1b[3") && !drawn.contains("\x1b[1m"),
        "{drawn:?}"
    );
    assert!(!load("xterm", "-q").contains("ETA"));
    assert!(!load("dumb", "").contains("ETA"));
    let piped = bin(
        "ysql-bench",
        &["-u", &url, "-o", "copy-mem", "-r", "200000", "-b", "1000"],
    );
    assert!(
        !text(&piped.stderr).contains("ETA"),
        "{}",
        text(&piped.stderr)
    );
}

/// Issue 22: an output that cannot be written was found only after the
/// run (a one-hour run lost its JSON). Now each is tried first: exit 2,
/// one line with the flag, the path and the OS's error, and no connection
/// (the server named here does not exist; reaching for it would fail
/// with exit 1 and its address).
#[test]
fn an_output_that_cannot_be_written_is_refused_before_connecting() {
    let tmp = tempfile::tempdir().unwrap();
    let afile = tmp.path().join("afile");
    std::fs::write(&afile, "").unwrap();
    let through_a_file = afile.join("x.out");
    let through_a_file = through_a_file.to_str().unwrap();
    let url = format!("host=127.0.0.1 port={} user=postgres", free_port());
    // Root may write almost anywhere; not in /sys.
    for (args, flag, path) in [
        (
            vec!["--json", "/sys/ysql-bench.json"],
            "--json",
            "/sys/ysql-bench.json",
        ),
        (
            vec!["--csv", "/sys/ysql-bench.csv"],
            "--csv",
            "/sys/ysql-bench.csv",
        ),
        (
            vec!["--latency-log", through_a_file],
            "--latency-log",
            through_a_file,
        ),
        (vec!["--json", through_a_file], "--json", through_a_file),
        (
            vec!["--graph", "--graph-dir", "/sys"],
            "--graph-dir",
            "/sys",
        ),
    ] {
        let mut all = vec!["-u", url.as_str(), "-o", "select", "--time", "1s"];
        all.extend_from_slice(&args);
        let out = bin("ysql-bench", &all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {flag} {path}")) && stderr.contains("os error"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains(">> connect"), "{args:?}: {stderr}");
    }
    // --sandbox starts no server for a run that cannot write its report.
    let out = bin(
        "ysql-bench",
        &[
            "--sandbox",
            "-o",
            "insert",
            "--json",
            "/sys/ysql-bench.json",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains(">> start sandbox"), "{stderr}");
    // merge tries its outputs before it reads the reports (which here do
    // not even exist).
    let out = bin(
        "ysql-bench",
        &["merge", "missing.json", "--csv", "/sys/ysql-bench.csv"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: --csv /sys/ysql-bench.csv cannot be written"),
        "{stderr}"
    );
}

/// The audit after issue 22: `--graph-dir` was created while the flags
/// were checked, and left behind by a run that failed before drawing
/// anything. It is tried without being made, and made with the first
/// picture.
#[test]
fn a_run_that_draws_nothing_leaves_no_graph_dir() {
    let dir = tempfile::tempdir().unwrap();
    let graphs = dir.path().join("gnew/a/b");
    let g = graphs.to_str().unwrap();
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            "host=127.0.0.1 port=1 connect_timeout=2",
            "-o",
            "select",
            "--graph",
            "--graph-dir",
            g,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // A usage error after the directory was checked.
    let out = bin(
        "ysql-bench",
        &[
            "-o",
            "select",
            "--graph",
            "--graph-dir",
            g,
            "--warehouses",
            "2000000",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!dir.path().join("gnew").exists());
    // One that cannot be made is still refused before connecting.
    let out = bin(
        "ysql-bench",
        &["-o", "select", "--graph", "--graph-dir", "/sys/x/y"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
