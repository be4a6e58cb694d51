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
        (
            &["-o", "select", "--time", "0", "--sandbox"][..],
            "--time 0",
        ),
        (&["-o", "insert", "-b", "50000", "--sandbox"][..], "13107"),
        (
            &["-o", "insert", "-u", "host=h port=x"][..],
            "not a valid connection string",
        ),
    ] {
        let out = bin("ysql-bench", args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
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
    // A port nothing listens on: bind one, note it, let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
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

#[test]
fn a_select_on_an_empty_table_is_warned_about() {
    let out = bin(
        "ysql-bench",
        &["--sandbox", "-o", "select", "-r", "100", "--time", "200ms"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: \"test_table\" is empty: select will find every row missing"),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("missing rows          : 0"));
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
