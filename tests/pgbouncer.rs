//! Through a real PgBouncer in transaction pooling mode, in front of a
//! sandbox server.
//!
//! The pool has fewer server connections than the run has workers, so
//! consecutive transactions of one worker land on different server
//! connections: exactly the situation where a named prepared statement
//! made in one transaction is missing in the next. With --no-prepared
//! every operation must work; with prepared statements the run must either
//! work or stop with a message that says to use --no-prepared. And -C
//! through the pooler is compared with -C straight to the server.
//!
//! Under --no-prepared nothing the tool sends may stay prepared on a
//! server connection, where the next client would meet its name (issue
//! 22): runs one after another, each its own process; every workload
//! family with the server's log read for named statements; and loads on
//! server connections where other clients left names.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;

use ysql_bench::RunReport;
use ysql_bench::db::sandbox::Sandbox;

/// Server connections per database and user: fewer than the workers.
const POOL_SIZE: u32 = 2;

struct Bouncer {
    daemon: Daemon,
    _dir: tempfile::TempDir,
    port: u16,
}

impl Bouncer {
    /// Runs `args` through the pooler; a run that cannot complete panics
    /// with the pooler's state and log.
    async fn run(&mut self, args: &[&str]) -> (RunReport, String) {
        match try_run_plain(args).await {
            Ok(r) => r,
            Err(e) => panic!(
                "the run through PgBouncer failed: {e}\n{}",
                self.daemon.state()
            ),
        }
    }

    fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

fn pgbouncer(sb: &Sandbox) -> Bouncer {
    pgbouncer_with(sb, POOL_SIZE)
}

/// A PgBouncer in transaction mode with `pool_size` server connections.
fn pgbouncer_with(sb: &Sandbox, pool_size: u32) -> Bouncer {
    let dir = shared_dir();
    let port = free_port();
    let d = dir.path();
    let ini = format!(
        "[databases]\n\
         postgres = host=127.0.0.1 port={server} dbname=postgres user=postgres\n\
         [pgbouncer]\n\
         listen_addr = 127.0.0.1\n\
         listen_port = {port}\n\
         unix_socket_dir =\n\
         auth_type = trust\n\
         auth_file = {dir}/userlist.txt\n\
         pool_mode = transaction\n\
         default_pool_size = {pool_size}\n\
         max_client_conn = 100\n\
         ignore_startup_parameters = extra_float_digits\n\
         logfile = {dir}/pgbouncer.log\n\
         log_connections = 0\n\
         log_disconnections = 0\n",
        server = sb.port(),
        dir = d.display()
    );
    std::fs::write(d.join("pgbouncer.ini"), ini).unwrap();
    std::fs::write(d.join("userlist.txt"), "\"postgres\" \"\"\n").unwrap();
    // PgBouncer refuses to run as root: it runs as postgres, and writes
    // its log here.
    if let Some((uid, gid)) = service_user() {
        std::os::unix::fs::chown(d, Some(uid), Some(gid)).unwrap();
    }
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = system_program("pgbouncer");
    cmd.arg(d.join("pgbouncer.ini"))
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let daemon = Daemon::start("pgbouncer", cmd, port, d.join("pgbouncer.log"), true);
    Bouncer {
        daemon,
        _dir: dir,
        port,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_works_through_pgbouncer_without_prepared_statements() {
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let url = pgb.url();
    let c = client(&sb).await;

    for load in ["insert", "copy-mem", "procedure"] {
        let (r, s) = pgb
            .run(&[
                "-u",
                &url,
                "--no-prepared",
                "-o",
                load,
                "-r",
                "3000",
                "-b",
                "100",
                "-t",
                "4",
            ])
            .await;
        assert!(r.succeeded(), "{load}:\n{s}");
        assert_eq!(facts(&c, "test_table").await, loaded(3000, 24), "{load}");
    }
    // copy-file through the pooler: the files are read here and streamed.
    let dir = shared_dir();
    let d = dir.path().to_str().unwrap();
    let out = bin(
        "csv_generator",
        &["-r", "3000", "-t", "4", "-f", "24", "-d", d],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Prepared first: if PgBouncer refuses it, the load after it refills
    // the table.
    for prepared in [&[][..], &["--no-prepared"]] {
        let mut args = vec![
            "-u",
            &url,
            "-o",
            "copy-file",
            "--copy-file-client",
            "-r",
            "3000",
            "-t",
            "4",
            "--csv-dir",
            d,
        ];
        args.extend_from_slice(prepared);
        let (r, s) = pgb.run(&args).await;
        if prepared.is_empty() && !r.succeeded() {
            // Prepared statements through PgBouncer 1.18: refused with advice.
            assert!(s.contains("run with --no-prepared"), "{s}");
            continue;
        }
        assert!(r.succeeded(), "copy-file {prepared:?}:\n{s}");
        assert_eq!(facts(&c, "test_table").await, loaded(3000, 24));
    }
    let (r, s) = pgb
        .run(&[
            "-u",
            &url,
            "--no-prepared",
            "-o",
            "select,update",
            "-r",
            "3000",
            "-t",
            "4",
            "--time",
            "1s",
        ])
        .await;
    assert!(r.succeeded(), "{s}");
    for op in &r.operations {
        assert!(op.total.ops > 50, "{s}");
        assert_eq!(op.total.missing, 0, "{s}");
    }
}

/// A clean-up through the pooler in transaction mode: its catalog reads,
/// counts and drops are each one statement, so any server connection
/// serves them. The tool's tables and functions go; the user's table of a
/// tool's name stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_works_through_pgbouncer() {
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let url = pgb.url();
    let c = client(&sb).await;
    for load in ["procedure", "ycsb-load"] {
        let (r, s) = pgb
            .run(&["-u", &url, "--no-prepared", "-o", load, "-r", "500"])
            .await;
        assert!(r.succeeded(), "{load}:\n{s}");
    }
    c.batch_execute(
        "create table pgbench_accounts (aid int, bid int, abalance int, filler char(84))",
    )
    .await
    .unwrap();
    let (r, s) = pgb
        .run(&["-u", &url, "--no-prepared", "-o", "cleanup", "-t", "4"])
        .await;
    assert!(r.succeeded(), "{s}");
    assert!(!table_exists(&c, "test_table").await, "{s}");
    assert!(!table_exists(&c, "usertable").await, "{s}");
    assert!(table_exists(&c, "pgbench_accounts").await, "{s}");
    let routines: i64 = c
        .query_one(
            "select count(*) from pg_proc where proname like 'ysql\\_bench\\_%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(routines, 0, "{s}");
    assert!(
        s.contains("in all                : dropped 2 tables (1000 rows) and 2 functions; left 1"),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_through_pgbouncer_work_or_stop_with_advice() {
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let url = pgb.url();
    let (r, s) = run_args(&sb, &["-o", "copy-mem", "-r", "2000"]).await;
    assert!(r.succeeded(), "{s}");

    for op in ["select", "insert"] {
        let started = std::time::Instant::now();
        let (r, s) = pgb
            .run(&[
                "-u", &url, "-o", op, "-r", "2000", "-b", "50", "-t", "4", "--time", "3s",
            ])
            .await;
        eprintln!("{s}");
        if !r.succeeded() {
            let why = r.operations[0].failure.clone().unwrap_or_default();
            assert!(why.contains("run with --no-prepared"), "{op}: {s}");
            // 26000 when a statement is missing on the server connection
            // a transaction lands on, 42P05 when it is already there.
            assert!(s.contains("26000") || s.contains("42P05"), "{op}: {s}");
            // Refused at once, not after counting the same error for the
            // whole run time.
            assert!(started.elapsed().as_secs_f64() < 2.5, "{op}: {s}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_through_pgbouncer_connects_faster_than_to_the_server() {
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let (r, s) = run_args(&sb, &["-o", "copy-mem", "-r", "2000"]).await;
    assert!(r.succeeded(), "{s}");
    let mut mean_connect = Vec::new();
    for url in [sb.url(), pgb.url()] {
        let (r, s) = pgb
            .run(&[
                "-u",
                &url,
                "-C",
                "--no-prepared",
                "-o",
                "select",
                "-r",
                "2000",
                "-t",
                "2",
                "--time",
                "1s",
            ])
            .await;
        eprintln!("{url}\n{s}");
        assert!(r.succeeded(), "{s}");
        let conns = &r.operations[0].total.conns;
        assert!(conns.timed() > 20, "{s}");
        assert_eq!(conns.timed(), r.operations[0].total.ops);
        mean_connect.push(conns.connect_total.as_secs_f64() / conns.timed() as f64);
    }
    // PgBouncer answers a new client itself and hands it a server
    // connection it already has; the server forks a backend per connection.
    assert!(
        mean_connect[1] < mean_connect[0],
        "connect through PgBouncer {:.3} ms, direct {:.3} ms",
        mean_connect[1] * 1e3,
        mean_connect[0] * 1e3
    );
}

/// PgBouncer 1.18 exits ("bad client state: 0") when a cancelling client
/// closes before the pooler has forwarded its request; the tool's cancel
/// waits for the pooler to close, as libpq does. Statements in flight are
/// cancelled through the pooler many times, and it must still serve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancels_through_pgbouncer_leave_it_running() {
    use ysql_bench::db::cancel::cancel;
    use ysql_bench::db::tls::Tls;
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let config: tokio_postgres::Config = pgb.url().parse().unwrap();
    let direct = client(&sb).await;
    for i in 0..40 {
        let (c, conn) = config
            .connect(tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect {i}: {e}\n{}", pgb.daemon.state()));
        tokio::spawn(conn);
        let token = c.cancel_token();
        // Each sleep its own text, so that the last one, cancelled but
        // perhaps not yet shown idle, is not taken for this one.
        let sql = format!("select pg_sleep(10), {i}");
        let query = sql.clone();
        let sleep = tokio::spawn(async move { c.simple_query(&query).await });
        // Cancel once the sleep runs on the server (a cancel that comes
        // before is dropped by the pooler).
        loop {
            let n: i64 = direct
                .query_one(
                    "select count(*) from pg_stat_activity where query = $1 and state = 'active'",
                    &[&sql],
                )
                .await
                .unwrap()
                .get(0);
            if n > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        cancel(
            &config,
            &Tls::Plain,
            &token,
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("cancel {i}: {e}\n{}", pgb.daemon.state()));
        let e = sleep
            .await
            .unwrap()
            .expect_err(&format!("sleep {i} is cancelled: {}", pgb.daemon.state()));
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::QUERY_CANCELED),
            "{e}"
        );
    }
    let state = pgb.daemon.state();
    assert!(state.contains("pgbouncer running"), "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ycsb_workload_runs_through_pgbouncer_without_prepared_statements() {
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let url = pgb.url();
    let common = [
        "-u",
        url.as_str(),
        "--no-prepared",
        "-r",
        "3000",
        "-t",
        "4",
        "--ycsb-field-length",
        "20",
    ];
    let mut args = common.to_vec();
    args.extend_from_slice(&["-o", "ycsb-load", "-b", "100"]);
    let (r, s) = pgb.run(&args).await;
    assert!(r.succeeded(), "{s}");
    let mut args = common.to_vec();
    args.extend_from_slice(&[
        "-o",
        "ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
        "--time",
        "1s",
        "--ycsb-rmw-txn",
    ]);
    let (r, s) = pgb.run(&args).await;
    assert!(r.succeeded(), "{s}");
    assert_eq!(r.operations.len(), 6, "{s}");
    for op in &r.operations {
        assert!(op.total.ops > 20, "{}: {s}", op.spec);
        assert_eq!(op.total.missing, 0, "{}: {s}", op.spec);
        for t in &op.types {
            assert!(t.stats.ops > 0, "{} {}: {s}", op.spec, t.name);
        }
    }
}

/// Through a pooler the server's backends are the pooler's: they carry
/// the name of the last client they served and outlive the run's
/// connections. The server block says so rather than reporting their
/// state as the workers', and the run is not slowed by waiting for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_pgbouncer_the_server_block_says_whose_backends_it_saw() {
    let sb = sandbox();
    let mut pgb = pgbouncer(&sb);
    let url = pgb.url();
    let (r, s) = pgb
        .run(&[
            "-u",
            &url,
            "--no-prepared",
            "-o",
            "copy-mem",
            "-r",
            "2000",
            "-t",
            "4",
        ])
        .await;
    assert!(r.succeeded(), "{s}");
    let started = std::time::Instant::now();
    let (r, s) = pgb
        .run(&[
            "-u",
            &url,
            "--no-prepared",
            "-o",
            "select",
            "-r",
            "2000",
            "-t",
            "4",
            "--time",
            "2s",
        ])
        .await;
    assert!(r.succeeded(), "{s}");
    println!("{s}");
    assert!(s.contains("pooler"), "{s}");
    assert!(started.elapsed() < std::time::Duration::from_secs(8), "{s}");
}

/// Issue 22: under --no-prepared nothing the tool sends may leave a named
/// prepared statement on a server connection, its own queries (the table
/// checks, the marks, the server statistics) included. tokio-postgres
/// numbers its statements s0, s1, … afresh in every process, so a name
/// that one run leaves on a pooled server connection collides (42P05)
/// with the next run's that lands there. Each run here is its own process,
/// as when a study runs the tool again and again through one PgBouncer,
/// and finds the server connections the earlier runs used. (Before the
/// fix, in four tries, 3, 6, 10 and 10 of the ten runs failed with 42P05.)
#[test]
fn no_prepared_runs_one_after_another_through_pgbouncer_all_succeed() {
    const RUNS: usize = 10;
    let sb = sandbox();
    let mut pgb = pgbouncer_with(&sb, 4);
    let url = pgb.url();
    let run = |args: &[&str]| {
        let mut all = vec!["-u", url.as_str(), "--no-prepared", "-r", "3000"];
        all.extend_from_slice(args);
        bin("ysql-bench", &all)
    };
    let out = run(&["-o", "insert"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut failed = Vec::new();
    for i in 1..=RUNS {
        let out = run(&["-o", "select,update", "-t", "8", "--time", "500ms"]);
        if !out.status.success() {
            eprintln!("run {i}: {}", text(&out.stderr));
            failed.push(i);
        }
    }
    assert!(
        failed.is_empty(),
        "runs {failed:?} of {RUNS} failed\n{}",
        pgb.daemon.state()
    );
    // YCSB A as the bexhoma study runs it through PgBouncer, on the same
    // server connections.
    let ycsb = ["-t", "8", "--ycsb-field-length", "20"];
    for op in [&["-o", "ycsb-load"][..], &["-o", "ycsb-a", "--time", "1s"]] {
        let mut args = op.to_vec();
        args.extend_from_slice(&ycsb);
        let out = run(&args);
        let summary = text(&out.stdout);
        assert!(
            out.status.success(),
            "{op:?}: {}\n{summary}\n{}",
            text(&out.stderr),
            pgb.daemon.state()
        );
        assert!(summary.contains("== ycsb-"), "{summary}");
    }
}

/// The statement names in a server log written with
/// log_min_duration_statement = 0 ("duration: … ms  parse s3: select …"):
/// every Parse, Bind and Execute that was not of the unnamed statement,
/// COPY left out (tokio-postgres sends COPY only as a named statement; the
/// tool parses and closes it inside the transaction that runs it).
fn named_statements(log: &str) -> Vec<String> {
    let mut named: Vec<String> = log
        .lines()
        .filter_map(|l| {
            let rest = &l[l
                .find("  parse ")
                .or_else(|| l.find("  bind "))
                .or_else(|| l.find("  execute "))?
                + 2..];
            let (_, rest) = rest.split_once(' ')?;
            let (name, text) = rest.split_once(": ")?;
            let copy = text.trim_start().to_ascii_lowercase().starts_with("copy ");
            (!name.starts_with("<unnamed>") && !copy).then(|| l.to_string())
        })
        .collect();
    named.sort();
    named.dedup();
    named
}

/// Every workload family through PgBouncer in transaction mode with
/// --no-prepared, and on the server behind it no statement of the run is
/// a named one, the tool's own (table checks and marks, counts, the
/// server statistics, the barrier of --clients, consistency checks)
/// included: a name on a pooled server connection outlives the run and
/// collides with the next client that counts from s0. (The runs here share
/// one process, and so tokio-postgres's count of names: the server log
/// shows what a collision between processes would need.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_prepared_sends_no_named_statement_in_any_family() {
    let sb = sandbox_with(vec![
        ("log_min_duration_statement".into(), "0".into()),
        ("log_line_prefix".into(), "".into()),
    ]);
    let mut pgb = pgbouncer(&sb);
    let url = pgb.url();
    let named = || named_statements(&std::fs::read_to_string(sb.log_path()).unwrap());
    let runs: &[&[&str]] = &[
        &["-o", "insert", "-r", "2000"],
        &["-o", "copy-mem,procedure", "-r", "2000", "-t", "2"],
        &[
            "-o",
            "select,update",
            "-r",
            "2000",
            "-t",
            "4",
            "--time",
            "300ms",
        ],
        &["-o", "ycsb-load", "-r", "2000", "--ycsb-field-length", "20"],
        &[
            "-o",
            "ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
            "-r",
            "2000",
            "--ycsb-field-length",
            "20",
            "--ycsb-rmw-txn",
            "-t",
            "4",
            "--time",
            "300ms",
        ],
        &["-o", "oltp-prepare", "-r", "2000"],
        &[
            "-o",
            "oltp-read-write,oltp-insert",
            "-r",
            "2000",
            "-t",
            "4",
            "--time",
            "300ms",
        ],
        &["-o", "booking-load"],
        &["-o", "booking,booking-check", "-t", "4", "--time", "300ms"],
        &[
            "-o",
            "tpcc,tpcc-check",
            "--warehouses",
            "1",
            "-t",
            "4",
            "--time",
            "300ms",
        ],
        &["-o", "pgbench-init", "-s", "1"],
        &[
            "-o",
            "script",
            "--builtin",
            "tpcb-like",
            "-t",
            "4",
            "--time",
            "300ms",
        ],
    ];
    for (i, args) in runs.iter().enumerate() {
        if args[1].starts_with("tpcc") {
            // TPC-C's load is the longest step here, and a third longer
            // through the pooler; its COPY and set-up are those of the
            // loads above.
            let (r, s) = run_args(
                &sb,
                &[
                    "--no-prepared",
                    "--no-server-stats",
                    "-o",
                    "tpcc-load",
                    "--warehouses",
                    "1",
                    "-t",
                    "2",
                ],
            )
            .await;
            assert!(r.succeeded(), "{s}");
        }
        let mut all = vec!["-u", url.as_str(), "--no-prepared"];
        // The server statistics (their sample a prepared statement but
        // for --no-prepared) once: through a pooler each operation waits
        // for the pooler's backends, which do not end.
        if i != 2 {
            all.push("--no-server-stats");
        }
        all.extend_from_slice(args);
        let started = std::time::Instant::now();
        let (r, s) = pgb.run(&all).await;
        eprintln!("{args:?}: {:?}", started.elapsed());
        assert!(r.succeeded(), "{args:?}:\n{s}");
        for op in r
            .operations
            .iter()
            .filter(|o| !o.spec.name.ends_with("-check"))
        {
            assert!(op.total.ops > 0, "{}:\n{s}", op.spec);
        }
        let named = named();
        assert!(
            named.is_empty(),
            "{args:?} sent named statements under --no-prepared:\n{}",
            named.join("\n")
        );
    }
    // The barrier of several clients.
    let runs: Vec<_> = (0..2)
        .map(|i| {
            let index = i.to_string();
            let args = [
                "-u",
                url.as_str(),
                "--no-prepared",
                "--clients",
                "2",
                "--client-index",
                &index,
                "--run-id",
                "named",
                "-o",
                "select",
                "-r",
                "2000",
                "--time",
                "300ms",
            ];
            spawn_run(plan_of(&args))
        })
        .collect();
    for r in runs {
        let (r, s) = r.await.unwrap();
        let r = r.unwrap_or_else(|e| panic!("--clients: {e}\n{s}"));
        assert!(r.succeeded(), "{s}");
    }
    let named = named();
    assert!(named.is_empty(), "--clients:\n{}", named.join("\n"));
}

/// A COPY can only be a named statement in tokio-postgres: under
/// --no-prepared it is parsed and closed inside its own transaction, and
/// a name that another client left on the pooler's server connection
/// (here PREPAREd on every one of them, as a run without --no-prepared
/// leaves them) is skipped rather than failing the load with 42P05.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_prepared_loads_skip_names_other_clients_left_on_the_pooler() {
    const LEFT: usize = 40;
    let sb = sandbox();
    let mut pgb = pgbouncer_with(&sb, 4);
    let config: tokio_postgres::Config = pgb.url().parse().unwrap();
    // Four transactions at once hold all four server connections.
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (c, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        c.batch_execute("begin").await.unwrap();
        clients.push(c);
    }
    for c in &clients {
        let prepares: String = (0..LEFT)
            .map(|i| format!("prepare s{i} as select {i};"))
            .collect();
        c.batch_execute(&prepares).await.unwrap();
    }
    for c in &clients {
        c.batch_execute("commit").await.unwrap();
    }
    drop(clients);
    let url = pgb.url();
    for op in ["copy-mem", "ycsb-load"] {
        let out = bin(
            "ysql-bench",
            &[
                "-u",
                &url,
                "--no-prepared",
                "-o",
                op,
                "-r",
                "3000",
                "-b",
                "50",
                "-t",
                "4",
                "--no-server-stats",
            ],
        );
        assert!(
            out.status.success(),
            "{op}: {}\n{}",
            text(&out.stderr),
            pgb.daemon.state()
        );
    }
    let c = client(&sb).await;
    assert_eq!(facts(&c, "test_table").await, loaded(3000, 24));
}
