//! The one data-plane driver (`src/db/wire/`) against real servers: the
//! counts the server counts, prepared and with the simple protocol;
//! password authentication by SCRAM-SHA-256, MD5 and cleartext; server
//! errors with the same SQLSTATE and words as tokio-postgres's (the
//! control connections' driver); a restart survived; every workload
//! family on it; target_session_attrs as tokio-postgres reads it. TLS
//! is in `tests/tls.rs`.

mod common;

use std::time::Duration;

use common::{bin, client, plan, plan_of, run_args, sandbox, sandbox_with, spawn_run, text};
use tokio_postgres::Client;
use ysql_bench::db::sandbox::{Sandbox, SandboxOptions};
use ysql_bench::db::tls::Tls;
use ysql_bench::db::wire::{Param, WireConn, WireError};
use ysql_bench::error::Error;

/// (idx_scan, n_tup_upd) of test_table, once the backends that ran the
/// queries have reported them (they do at exit, which a run's end does
/// not wait for): read until two reads a little apart agree.
async fn table_counts(c: &Client) -> (i64, i64) {
    let read = || async {
        c.batch_execute("select pg_stat_clear_snapshot()")
            .await
            .unwrap();
        let r = c
            .query_one(
                "select coalesce(idx_scan, 0), n_tup_upd from pg_stat_user_tables where relname = 'test_table'",
                &[],
            )
            .await
            .unwrap();
        (r.get::<_, i64>(0), r.get::<_, i64>(1))
    };
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

/// select and update give the same results prepared and with the simple
/// protocol, and the server counts exactly the queries the tool says it
/// ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_protocols_count_what_the_server_counts() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "2000"]).await;
    let c = client(&sb).await;
    let mut extra_scans = Vec::new();
    for protocol in ["--prepared", "--no-prepared"] {
        for op in ["select", "update"] {
            let before = table_counts(&c).await;
            let (report, text) = run_args(
                &sb,
                &[
                    "-o",
                    op,
                    "-r",
                    "2000",
                    "-t",
                    "3",
                    "--time",
                    "1s",
                    "--no-server-stats",
                    protocol,
                ]
                .into_iter()
                .filter(|a| *a != "--prepared")
                .collect::<Vec<_>>(),
            )
            .await;
            let after = table_counts(&c).await;
            let r = &report.operations[0];
            assert_eq!(r.driver, "lean", "{text}");
            assert!(text.contains("driver                : lean"), "{text}");
            assert!(r.failure.is_none(), "{text}");
            assert!(r.total.ops > 100, "{text}");
            assert_eq!(r.total.missing, 0, "{text}");
            assert_eq!(r.total.rows, r.total.ops, "one row per query: {text}");
            let scans = after.0 - before.0;
            let updated = after.1 - before.1;
            if op == "update" {
                assert_eq!(updated as u64, r.total.ops, "{protocol}: {text}");
            } else {
                assert_eq!(updated, 0);
            }
            // The tool's own look at the table before the run may scan
            // the index too: the same number of times either way.
            extra_scans.push((op, scans - r.total.ops as i64));
        }
    }
    assert_eq!(extra_scans[0], extra_scans[2], "{extra_scans:?}");
    assert_eq!(extra_scans[1], extra_scans[3], "{extra_scans:?}");
    assert!(
        extra_scans.iter().all(|(_, n)| (0..=3).contains(n)),
        "{extra_scans:?}"
    );
}

/// Rewrites pg_hba.conf so that TCP logins use `method`, and reloads.
async fn hba(sb: &Sandbox, c: &Client, method: &str) {
    std::fs::write(
        sb.data_dir().join("pg_hba.conf"),
        format!("local all all trust\nhost all all 127.0.0.1/32 {method}\n"),
    )
    .unwrap();
    c.batch_execute("select pg_reload_conf()").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn config(sb: &Sandbox, user: &str, password: &str) -> tokio_postgres::Config {
    let mut c = sb.config();
    c.user(user).password(password);
    c
}

/// A login, a prepared statement with an int and a text parameter, and
/// its answer.
async fn round_trip(config: &tokio_postgres::Config) -> Result<(), WireError> {
    let mut w = WireConn::connect(config, &Tls::Plain).await?;
    w.simple_query("set statement_timeout = 5000").await?;
    let st = w.prepare("select $1::int4 + 1, $2::text").await?;
    let a = w.execute(st, &[Param::Int(41), Param::Text("x")]).await?;
    assert_eq!((a.rows, a.affected), (1, 1));
    w.close().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_md5_and_cleartext_passwords_log_in_and_a_wrong_one_is_said() {
    let sb = Sandbox::start(SandboxOptions {
        settings: vec![],
        fast: true,
        password: Some("pw-Super1".into()),
    })
    .unwrap();
    let c = client(&sb).await;
    c.batch_execute(
        "set password_encryption = 'md5'; create role md5user login password 'pw-Md5';
         set password_encryption = 'scram-sha-256'; create role scramuser login password 'pw-Scram';",
    )
    .await
    .unwrap();
    // initdb -A scram-sha-256: SCRAM.
    round_trip(&config(&sb, "scramuser", "pw-Scram"))
        .await
        .expect("SCRAM-SHA-256");
    // md5 in pg_hba: MD5 for an MD5-stored password (SCRAM for the other).
    hba(&sb, &c, "md5").await;
    round_trip(&config(&sb, "md5user", "pw-Md5"))
        .await
        .expect("MD5");
    round_trip(&config(&sb, "scramuser", "pw-Scram"))
        .await
        .expect("SCRAM under md5");
    hba(&sb, &c, "password").await;
    round_trip(&config(&sb, "md5user", "pw-Md5"))
        .await
        .expect("cleartext");
    hba(&sb, &c, "scram-sha-256").await;
    let e = round_trip(&config(&sb, "scramuser", "not-it"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("28P01"), "{e}");
    let shown = Error::wire("cannot connect to x", e).to_string();
    assert_eq!(
        shown,
        "cannot connect to x: password authentication failed for user \"scramuser\" (SQLSTATE 28P01)"
    );
    // The binary: one line, exit 1, as before.
    let url = format!(
        "host=127.0.0.1 port={} user=scramuser password=not-it dbname=postgres",
        sb.port()
    );
    let out = bin("ysql-bench", &["-u", &url, "-o", "select", "-r", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("password authentication failed"),
        "{err}"
    );
    assert!(!err.contains("not-it"), "the password leaked: {err}");
    // A right password runs select on the lean driver.
    let url = format!(
        "host=127.0.0.1 port={} user=postgres password=pw-Super1 dbname=postgres",
        sb.port()
    );
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
            "1s",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("driver                : lean"));
}

/// A server error reads the same on both drivers, with its SQLSTATE, and
/// the connection stays usable after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_has_the_same_sqlstate_and_words_on_both_drivers() {
    let sb = sandbox();
    let c = client(&sb).await;
    let mut w = WireConn::connect(&sb.config(), &Tls::Plain).await.unwrap();
    let sql = "select 1 / $1::int4";
    let st = w.prepare(sql).await.unwrap();
    let lean = w.execute(st, &[Param::Int(0)]).await.unwrap_err();
    let tokio = c.query(sql, &[&0i32]).await.unwrap_err();
    assert_eq!(lean.code(), Some("22012"));
    let lean = Error::wire("SELECT failed", lean);
    let tokio = Error::db("SELECT failed", tokio);
    assert_eq!(lean.to_string(), tokio.to_string());
    assert_eq!(lean.sqlstate(), tokio.sqlstate());
    assert!(!lean.lost_connection());
    // Still usable.
    let a = w.execute(st, &[Param::Int(1)]).await.unwrap();
    assert_eq!(a.rows, 1);
    // A prepare that fails names the relation, as tokio-postgres does.
    let lean = w.prepare("select * from no_such_table").await.unwrap_err();
    let tokio = c.prepare("select * from no_such_table").await.unwrap_err();
    assert_eq!(
        Error::wire("x", lean).to_string(),
        Error::db("x", tokio).to_string()
    );
    // Killed by the server: 57P01, a lost connection.
    let pid: i32 = {
        let r = c
            .query_one(
                "select pid from pg_stat_activity where application_name = 'ysql-bench' and pid <> pg_backend_pid() and backend_type = 'client backend'",
                &[],
            )
            .await
            .unwrap();
        r.get(0)
    };
    c.execute("select pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let gone = w.execute(st, &[Param::Int(1)]).await.unwrap_err();
    assert!(w.is_closed());
    let gone = Error::wire("SELECT failed", gone);
    assert!(gone.lost_connection(), "{gone}");
}

/// A table dropped under a running select: with --on-error stop the run
/// stops with the server's SQLSTATE in its message, as on tokio-postgres.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_table_stops_a_lean_select_with_its_sqlstate() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let c = client(&sb).await;
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
            "10s",
            "--on-error",
            "stop",
        ],
    );
    let run = spawn_run(p);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    c.batch_execute("drop table test_table").await.unwrap();
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    let failure = op.failure.clone().unwrap_or_default();
    assert!(failure.contains("SELECT failed"), "{failure}\n{text}");
    assert!(failure.contains("(SQLSTATE 42P01)"), "{failure}\n{text}");
    assert!(op.total.errors.contains_key("42P01"), "{text}");
    assert!(op.total.ops > 0, "{text}");
}

/// The server restarts during a lean select: the workers reconnect (on
/// the lean driver) and go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lean_select_survives_a_server_restart() {
    let mut sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let p = plan(
        &sb,
        &["-o", "select", "-r", "1000", "-t", "2", "--time", "6s"],
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
    assert_eq!(op.driver, "lean", "{text}");
    assert!(op.total.reconnects >= 2, "{text}");
    assert!((1..=2).contains(&op.total.failed()), "{text}");
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

/// Every YCSB mix runs on the one driver, read-modify-write included,
/// and finds every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_mixes_run_on_the_one_driver() {
    let sb = sandbox();
    run_args(&sb, &["-o", "ycsb-load", "-r", "2000", "-t", "2"]).await;
    for (mix, driver) in [
        ("ycsb-a", "lean"),
        ("ycsb-b", "lean"),
        ("ycsb-d", "lean"),
        ("ycsb-e", "lean"),
        ("ycsb-f", "lean"),
    ] {
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
                "--no-server-stats",
            ],
        )
        .await;
        let op = &report.operations[0];
        assert_eq!(op.driver, driver, "{mix}: {text}");
        assert!(op.failure.is_none(), "{mix}: {text}");
        assert!(op.total.ops > 20, "{mix}: {text}");
        assert_eq!(op.total.missing, 0, "{mix}: {text}");
        assert!(op.total.errors.is_empty(), "{mix}: {text}");
    }
}

/// Which of `ports` the lean connection `w` is on.
async fn lean_port(w: &mut WireConn, ports: &[u16]) -> Option<u16> {
    for &p in ports {
        let sql = format!("select 1 where current_setting('port') = '{p}'");
        if w.simple_query(&sql).await.unwrap().rows == 1 {
            return Some(p);
        }
    }
    None
}

/// target_session_attrs: a server with default_transaction_read_only on
/// says transaction_read_only is on, as a hot standby does, and is passed
/// over for read-write (and taken for read-only), by the lean driver as
/// by tokio-postgres; a run with such a host list lands where it can
/// write, on the lean driver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_session_attrs_pass_over_a_server_of_the_wrong_kind() {
    let ro = sandbox_with(vec![("default_transaction_read_only".into(), "on".into())]);
    let rw = sandbox();
    let ports = [ro.port(), rw.port()];
    let url = |attrs: &str, order: [u16; 2]| {
        format!(
            "host=127.0.0.1,127.0.0.1 port={},{} user=postgres dbname=postgres target_session_attrs={attrs}",
            order[0], order[1]
        )
    };
    for (attrs, order, want) in [
        ("read-write", [ro.port(), rw.port()], rw.port()),
        ("read-only", [rw.port(), ro.port()], ro.port()),
        ("any", [ro.port(), rw.port()], ro.port()),
    ] {
        let config: tokio_postgres::Config = url(attrs, order).parse().unwrap();
        let mut w = WireConn::connect(&config, &Tls::Plain)
            .await
            .unwrap_or_else(|e| panic!("{attrs}: {e}"));
        assert_eq!(lean_port(&mut w, &ports).await, Some(want), "{attrs}");
        w.close().await;
        // tokio-postgres lands on the same server.
        let (c, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let port: String = c.query_one("show port", &[]).await.unwrap().get(0);
        assert_eq!(port, want.to_string(), "tokio-postgres, {attrs}");
    }
    // Only the read-only server: refused, and why.
    let only: tokio_postgres::Config = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres target_session_attrs=read-write",
        ro.port()
    )
    .parse()
    .unwrap();
    let e = WireConn::connect(&only, &Tls::Plain)
        .await
        .err()
        .expect("a read-only server");
    assert!(e.to_string().contains("read-only"), "{e}");

    // A run over the host list: it writes its table on the read-write
    // server, and its select runs there on the lean driver.
    let u = url("read-write", [ro.port(), rw.port()]);
    let mut out = Vec::new();
    let r = ysql_bench::run(
        plan_of(&[
            "-u",
            &u,
            "-o",
            "copy-mem,select",
            "-r",
            "300",
            "--time",
            "1s",
        ]),
        &mut out,
    )
    .await
    .unwrap_or_else(|e| panic!("a run with target_session_attrs=read-write: {e}"));
    let shown = String::from_utf8_lossy(&out).into_owned();
    assert!(r.succeeded(), "{shown}");
    let select = &r.operations[1];
    assert_eq!(select.driver, "lean", "{shown}");
    assert_eq!(select.total.missing, 0, "{shown}");
    assert!(select.total.ops > 20, "{shown}");
}
