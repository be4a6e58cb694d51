//! Logging in as psql does (issue 22): what `-u` leaves out comes from the
//! libpq variables (PGPASSWORD, PGPORT) and from the password file
//! (PGPASSFILE, `~/.pgpass`), looked up per host of a host list, on
//! servers whose pg_hba.conf wants scram-sha-256 for every login. The
//! variables are set for the child process only, never for the test
//! process, whose other tests run in parallel.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use ysql_bench::db::sandbox::{Sandbox, SandboxOptions};

const ROLE: &str = "bencher";

/// A server that wants scram-sha-256 for every login (initdb -A), with a
/// role `bencher` whose password is `password` and which owns a database
/// `bench` (PostgreSQL 15 lets no other role create tables in `public`).
fn scram_server(password: &str) -> Sandbox {
    let sb = Sandbox::start(SandboxOptions {
        settings: vec![],
        fast: true,
        password: Some("Super-pw-1".into()),
    })
    .expect("the sandbox server starts");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (c, conn) = sb
            .config()
            .connect(tokio_postgres::NoTls)
            .await
            .expect("the superuser logs in with its password");
        tokio::spawn(conn);
        c.batch_execute(&format!("create role {ROLE} login password '{password}'"))
            .await
            .unwrap();
        c.batch_execute(&format!("create database bench owner {ROLE}"))
            .await
            .unwrap();
    });
    sb
}

/// A password file of `text`, mode 0600 as libpq wants it.
fn password_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// ysql-bench with `args` and `env` only (HOME included: no test reads
/// the ~/.pgpass of whoever runs the tests).
fn ysql_bench(args: &[&str], env: &[(&str, &str)]) -> Output {
    bin_env("ysql-bench", args, env)
}

/// A load and a select of 1 s over `url`, the select on the lean driver.
fn insert_select<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "-u",
        url,
        "-o",
        "insert,select",
        "-r",
        "200",
        "-t",
        "2",
        "--time",
        "1s",
    ];
    a.extend_from_slice(extra);
    a
}

fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The run succeeded, selected, and showed no password; no connection
/// failed (the server statistics' own included, which only warn).
fn assert_ran(out: &Output, what: &str, secrets: &[&str]) {
    let all = all_output(out);
    assert_eq!(out.status.code(), Some(0), "{what}: {all}");
    assert!(all.contains("== select =="), "{what}: {all}");
    assert!(!all.contains("cannot connect"), "{what}: {all}");
    for s in secrets {
        assert!(!all.contains(s), "{what}: the password {s} leaked: {all}");
    }
}

/// Issue 22: with -u, PGPASSWORD, the password file and PGPORT were
/// ignored (`invalid configuration: password missing`, or a connection to
/// port 5432), while psql with the same string and variables logs in.
#[test]
fn with_u_the_password_comes_from_pgpassword_or_a_password_file_and_the_port_from_pgport() {
    let pw = "Right-pw:7\\x";
    let sb = scram_server(pw);
    let port = sb.port().to_string();
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    let url = format!("host=127.0.0.1 port={port} user={ROLE} dbname=bench");
    let json = home.path().join("run.json");
    let json_s = json.to_str().unwrap();

    // PGPASSWORD fills the password the string leaves out; workers on the
    // lean driver and the control connection alike.
    let out = ysql_bench(
        &insert_select(&url, &["--json", json_s]),
        &[("HOME", home_s), ("PGPASSWORD", pw)],
    );
    assert_ran(&out, "PGPASSWORD", &[pw]);
    let report = std::fs::read_to_string(&json).unwrap();
    assert!(report.contains(&format!("user={ROLE}")), "{report}");
    assert!(!report.contains("Right-pw"), "the JSON report: {report}");

    // The password file PGPASSFILE names: comments and lines for other
    // hosts, ports, databases and users are passed over; `*` matches
    // anything; `\:` and `\\` are a colon and a backslash.
    let escaped = pw.replace('\\', "\\\\").replace(':', "\\:");
    let file = password_file(
        home.path(),
        "pgpass",
        &format!(
            "# hostname:port:database:username:password\n\
             127.0.0.1:{port}:bench:someone-else:wrong-1\n\
             127.0.0.1:1:*:{ROLE}:wrong-2\n\
             other-host:*:*:*:wrong-3\n\
             127.0.0.1:{port}:postgres:{ROLE}:wrong-4\n\
             *:{port}:bench:{ROLE}:{escaped}\n\
             *:*:*:*:wrong-5\n"
        ),
    );
    let file_s = file.to_str().unwrap();
    let out = ysql_bench(
        &insert_select(&url, &[]),
        &[("HOME", home_s), ("PGPASSFILE", file_s)],
    );
    assert_ran(&out, "PGPASSFILE", &[pw, "wrong-"]);

    // Without PGPASSFILE, ~/.pgpass ($HOME as libpq reads it).
    password_file(
        home.path(),
        ".pgpass",
        &format!("127.0.0.1:{port}:*:{ROLE}:{escaped}\n"),
    );
    let out = ysql_bench(&insert_select(&url, &[]), &[("HOME", home_s)]);
    assert_ran(&out, "~/.pgpass", &[pw]);

    // A password in the string wins over the file, as in libpq.
    let with_wrong = format!("{url} password=not-it");
    let out = ysql_bench(&insert_select(&with_wrong, &[]), &[("HOME", home_s)]);
    let all = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("password authentication failed"), "{all}");
    assert!(
        !all.contains("not-it") && !all.contains("Right-pw"),
        "{all}"
    );

    // PGPORT fills the port the string leaves out (not 5432).
    let no_port = format!("host=127.0.0.1 user={ROLE} dbname=bench password='{escaped}'");
    let out = ysql_bench(
        &insert_select(&no_port, &[]),
        &[("HOME", home_s), ("PGPORT", &port)],
    );
    assert_ran(&out, "PGPORT", &[pw]);
    assert!(
        text(&out.stderr).contains(&format!(">> connect host=127.0.0.1 port={port} ")),
        "{}",
        text(&out.stderr)
    );

    // A file the group may read is ignored with libpq's warning, and the
    // missing password is said with the ways to give one: one line, the
    // exit code of a failed connection.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let empty_home = tempfile::tempdir().unwrap();
    let out = ysql_bench(
        &insert_select(&url, &[]),
        &[
            ("HOME", empty_home.path().to_str().unwrap()),
            ("PGPASSFILE", file_s),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("warning: password file \"{file_s}\"")),
        "{stderr}"
    );
    assert!(stderr.contains("group or world access"), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    for way in ["password=", "PGPASSWORD", "~/.pgpass", "PGPASSFILE"] {
        assert!(errors[0].contains(way), "{way} missing: {stderr}");
    }
    assert!(!stderr.contains("invalid configuration"), "{stderr}");
    assert!(!all_output(&out).contains("Right-pw"), "{stderr}");
}

/// Issue 22: every host of a host list gets its own password from the
/// file, as libpq looks it up per host and port: a failover list whose
/// first host is down, and a balanced list over two servers whose
/// passwords differ.
#[test]
fn each_host_of_a_list_gets_its_own_password_from_the_file() {
    let (pw_a, pw_b) = ("Pw-of-a-1", "Pw-of-b-2");
    let (a, b) = (scram_server(pw_a), scram_server(pw_b));
    let (pa, pb) = (a.port().to_string(), b.port().to_string());
    let dead = free_port().to_string();
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    let file = password_file(
        home.path(),
        "pgpass",
        &format!(
            "127.0.0.1:{dead}:*:{ROLE}:{pw_a}\n\
             127.0.0.1:{pa}:*:{ROLE}:{pw_a}\n\
             127.0.0.1:{pb}:*:{ROLE}:{pw_b}\n"
        ),
    );
    let env = [("HOME", home_s), ("PGPASSFILE", file.to_str().unwrap())];
    let secrets = [pw_a, pw_b];

    // Each server's table, loaded over its own password.
    for port in [&pa, &pb] {
        let url = format!("host=127.0.0.1 port={port} user={ROLE} dbname=bench");
        let out = ysql_bench(&["-u", &url, "-o", "copy-mem", "-r", "200"], &env);
        assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    }

    // Failover: the first host does not answer; the second is logged in
    // to with its own password, not the first host's.
    let failover = format!("host=127.0.0.1,127.0.0.1 port={dead},{pb} user={ROLE} dbname=bench");
    let args = [
        "-u", &failover, "-o", "select", "-r", "200", "-t", "2", "--time", "1s",
    ];
    let out = ysql_bench(&args, &env);
    assert_ran(&out, "failover", &secrets);

    // Balanced over both servers: each worker's host has its password.
    let both = format!("host=127.0.0.1,127.0.0.1 port={pa},{pb} user={ROLE} dbname=bench");
    for driver in ["prepared", "simple"] {
        let mut args = vec![
            "-u",
            &both,
            "-o",
            "select",
            "-r",
            "200",
            "-t",
            "4",
            "--time",
            "1s",
            "--load-balance",
            "round-robin",
        ];
        if driver == "simple" {
            args.push("--no-prepared");
        }
        let out = ysql_bench(&args, &env);
        assert_ran(&out, driver, &secrets);
        let stdout = text(&out.stdout);
        for port in [&pa, &pb] {
            let host = format!("host 127.0.0.1:{port}");
            let line = format!("{host:<22}: 2 connections,");
            assert!(
                stdout.contains(&line),
                "{driver}: {line} missing in {stdout}"
            );
        }
    }
}
