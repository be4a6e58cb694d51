//! pgbench scripts (`--script`, `--builtin`, `-o pgbench-init`) against
//! real throwaway servers, checked against what the server counted and
//! against pgbench itself: pgbench's own TPC-B-like text (as `pgbench
//! --show-script` prints it) on tables `pgbench -i` made, weighted scripts
//! counted on the server, the tables of `-o pgbench-init` next to those of
//! `pgbench -i`, retries of whole script transactions, and the examples
//! in `examples/` run as they ship.

mod common;
use common::*;

use std::path::Path;

use tokio_postgres::Client;
use ysql_bench::RunReport;
use ysql_bench::db::sandbox::Sandbox;

/// pgbench's own text of a built-in script.
fn pgbench_script(name: &str) -> String {
    let out = pgbench()
        .arg(format!("--show-script={name}"))
        .output()
        .expect("pgbench runs");
    // Printed on stderr, after a comment line naming it.
    let t = text(&out.stderr);
    assert!(t.contains("pgbench_accounts"), "{t}");
    t
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write the script");
    p.to_string_lossy().into_owned()
}

/// A connection to database `db` of the sandbox.
async fn client_to(sb: &Sandbox, db: &str) -> Client {
    let mut config = sb.config();
    config.dbname(db);
    let (c, conn) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    c
}

async fn one_i64(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.expect(sql).get(0)
}

/// What a TPC-B-like run leaves on the server: history rows, the sums of
/// the three balances and of the history's deltas, and the rows updated in
/// accounts, tellers and branches and inserted into history (from the
/// server's statistics, once the run's sessions have flushed them).
#[derive(Debug, PartialEq, Eq)]
struct TpcbEffects {
    history: i64,
    abalance: i64,
    bbalance: i64,
    tbalance: i64,
    delta: i64,
    updated: [i64; 3],
    inserted: i64,
}

async fn tpcb_effects(c: &Client) -> TpcbEffects {
    // Waits for the run's sessions to end and the statistics to settle.
    index_scans(c, "pgbench_accounts").await;
    let stat = |t: &'static str, col: &'static str| async move {
        let sql = format!("select {col} from pg_stat_user_tables where relname = '{t}'");
        one_i64(c, &sql).await
    };
    TpcbEffects {
        history: one_i64(c, "select count(*) from pgbench_history").await,
        abalance: one_i64(c, "select sum(abalance)::int8 from pgbench_accounts").await,
        bbalance: one_i64(c, "select sum(bbalance)::int8 from pgbench_branches").await,
        tbalance: one_i64(c, "select sum(tbalance)::int8 from pgbench_tellers").await,
        delta: one_i64(
            c,
            "select coalesce(sum(delta), 0)::int8 from pgbench_history",
        )
        .await,
        updated: [
            stat("pgbench_accounts", "n_tup_upd").await,
            stat("pgbench_tellers", "n_tup_upd").await,
            stat("pgbench_branches", "n_tup_upd").await,
        ],
        inserted: stat("pgbench_history", "n_tup_ins").await,
    }
}

fn type_ops(r: &RunReport, op: usize, name: &str) -> u64 {
    r.operations[op]
        .types
        .iter()
        .find(|t| t.name == name)
        .map_or(0, |t| t.stats.ops)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_tpcb_like_text_on_pgbench_i_tables_does_what_pgbench_does_on_the_server() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "tpcb.sql", &pgbench_script("tpcb-like"));
    run_pgbench(&sb, "postgres", &["-i", "-q", "-s", "2"]);
    let c = client(&sb).await;

    let (r, s) = run_args(
        &sb,
        &["--script", &script, "-s", "2", "-t", "4", "--time", "3s"],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let txns = r.operations[0].total.ops as i64;
    assert!(txns > 100, "{s}");
    let ours = tpcb_effects(&c).await;
    // One history row per transaction, and the balances moved together.
    assert_eq!(ours.history, txns, "{s}");
    assert_eq!(ours.abalance, ours.delta, "{ours:?}");
    assert_eq!(ours.bbalance, ours.delta, "{ours:?}");
    assert_eq!(ours.tbalance, ours.delta, "{ours:?}");
    assert_eq!(ours.updated, [txns; 3], "{ours:?}");
    assert_eq!(ours.inserted, txns, "{ours:?}");
    // Each statement of the script was timed once per transaction.
    let st = &r.operations[0].statements;
    assert_eq!(st.len(), 7, "{st:?}");
    assert!(st.iter().all(|x| x.count as i64 == txns), "{st:?}");
    assert!(
        st[1].name.starts_with("tpcb.sql:7 UPDATE pgbench_accounts"),
        "{}",
        st[1].name
    );

    // pgbench itself, the same number of transactions on fresh tables.
    run_pgbench(&sb, "postgres", &["-i", "-q", "-s", "2"]);
    let n = txns.to_string();
    run_pgbench(
        &sb,
        "postgres",
        &[
            "-n",
            "-M",
            "prepared",
            "-b",
            "tpcb-like",
            "-c",
            "1",
            "-t",
            &n,
        ],
    );
    let theirs = tpcb_effects(&c).await;
    assert_eq!(theirs.history, txns);
    assert_eq!(
        (theirs.updated, theirs.inserted),
        (ours.updated, ours.inserted)
    );
    assert_eq!(theirs.abalance, theirs.delta);
    assert_eq!(theirs.bbalance, theirs.delta);
    assert_eq!(theirs.tbalance, theirs.delta);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_and_no_prepared_keep_the_balances_together() {
    let sb = sandbox();
    run_pgbench(&sb, "postgres", &["-i", "-q", "-s", "1"]);
    let c = client(&sb).await;
    // --builtin reads :scale from pgbench_branches, as pgbench does; one
    // run prepared, one with literals.
    for extra in [None, Some("--no-prepared")] {
        let mut args = vec!["--builtin", "tpcb-like", "-t", "3", "--time", "2s"];
        args.extend(extra);
        let (r, s) = run_args(&sb, &args).await;
        assert!(r.succeeded(), "{s}");
        assert!(s.contains("nr txns"), "{s}");
    }
    let e = tpcb_effects(&c).await;
    assert_eq!(e.abalance, e.delta, "{e:?}");
    assert_eq!(e.bbalance, e.delta, "{e:?}");
    assert_eq!(e.tbalance, e.delta, "{e:?}");
    assert_eq!(e.inserted, e.history, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_scripts_come_out_ninety_ten_on_the_server() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table hits (script text)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.sql", "insert into hits values ('a');\n");
    let b = write(dir.path(), "b.sql", "insert into hits values ('b');\n");
    let (r, s) = run_args(
        &sb,
        &[
            "--script",
            &format!("{a}@9"),
            "--script",
            &format!("{b}@1"),
            "-t",
            "2",
            "--time",
            "3s",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let on_a = one_i64(&c, "select count(*) from hits where script = 'a'").await;
    let on_b = one_i64(&c, "select count(*) from hits where script = 'b'").await;
    let all = on_a + on_b;
    assert!(
        all > 2000,
        "{all} inserts: too few to judge the shares\n{s}"
    );
    let share = on_a as f64 * 100.0 / all as f64;
    assert!((88.0..=92.0).contains(&share), "a took {share:.1}%\n{s}");
    // Reported per script, as the server counted.
    assert_eq!(type_ops(&r, 0, "a.sql") as i64, on_a, "{s}");
    assert_eq!(type_ops(&r, 0, "b.sql") as i64, on_b, "{s}");
    assert!(s.contains("[a.sql]") && s.contains("[b.sql]"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_init_makes_the_tables_pgbench_i_makes_and_both_tools_run_on_them() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create database theirs").await.unwrap();
    run_pgbench(&sb, "theirs", &["-i", "-q", "-s", "2"]);
    let (r, s) = run_args(&sb, &["-o", "pgbench-init", "-s", "2", "-t", "2"]).await;
    assert!(r.succeeded(), "{s}");
    assert_eq!(r.operations[0].total.rows, 200_000, "{s}");
    let theirs = client_to(&sb, "theirs").await;
    // The same columns, types, nullability and primary keys.
    let shape = "select string_agg(table_name || '.' || column_name || ' ' || data_type || \
                 coalesce('(' || character_maximum_length || ')', '') || ' ' || is_nullable, ', ' \
                 order by table_name, ordinal_position) from information_schema.columns \
                 where table_name like 'pgbench%'";
    let keys = "select string_agg(conname || ' ' || pg_get_constraintdef(oid), ', ' order by conname) \
                from pg_constraint where conrelid::regclass::text like 'pgbench%'";
    for q in [shape, keys] {
        let a: String = c.query_one(q, &[]).await.unwrap().get(0);
        let b: String = theirs.query_one(q, &[]).await.unwrap().get(0);
        assert_eq!(a, b);
    }
    // The same rows, to the byte.
    for q in [
        "select md5(string_agg(aid || ',' || bid || ',' || abalance || ',' || coalesce(filler::text, 'null'), ';' order by aid)) from pgbench_accounts",
        "select md5(string_agg(tid || ',' || bid || ',' || tbalance || ',' || coalesce(filler, 'null'), ';' order by tid)) from pgbench_tellers",
        "select md5(string_agg(bid || ',' || bbalance || ',' || coalesce(filler, 'null'), ';' order by bid)) from pgbench_branches",
        "select count(*)::text from pgbench_history",
    ] {
        let a: Option<String> = c.query_one(q, &[]).await.unwrap().get(0);
        let b: Option<String> = theirs.query_one(q, &[]).await.unwrap().get(0);
        assert_eq!(a, b, "{q}");
    }
    // The tables are marked as the tool's; pgbench -i's are not, so a
    // pgbench-init on them is refused without --force.
    let mark: String = c
        .query_one("select obj_description('pgbench_accounts'::regclass)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(mark, "created by ysql-bench; loaded 200000 rows");
    // pgbench runs on the tables pgbench-init made, and the built-ins run
    // in the same command line as the load.
    run_pgbench(&sb, "postgres", &["-n", "-b", "tpcb-like", "-t", "50"]);
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "pgbench-init,script",
            "-s",
            "3",
            "--builtin",
            "tpcb-like",
            "--builtin",
            "select-only@3",
            "--builtin",
            "simple-update",
            "-t",
            "2",
            "--time",
            "2s",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    assert_eq!(
        one_i64(&c, "select count(*) from pgbench_branches").await,
        3
    );
    let txns = &r.operations[1];
    assert_eq!(txns.types.len(), 3, "{s}");
    let history = one_i64(&c, "select count(*) from pgbench_history").await;
    assert_eq!(
        history as u64,
        type_ops(&r, 1, "tpcb-like") + type_ops(&r, 1, "simple-update"),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_transaction_is_retried_whole_after_a_serialization_failure() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute(
        "create table hot (id int primary key, n int8); insert into hot values (1, 0);
         create table log (d int)",
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "hot.sql",
        "\\set d random(1, 10)\n\
         BEGIN ISOLATION LEVEL REPEATABLE READ;\n\
         UPDATE hot SET n = n + :d WHERE id = 1;\n\
         INSERT INTO log VALUES (:d);\n\
         COMMIT;\n",
    );
    let (r, s) = run_args(
        &sb,
        &[
            "--script",
            &script,
            "-t",
            "4",
            "--time",
            "3s",
            "--max-tries",
            "0",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let op = &r.operations[0];
    assert!(
        op.total.retries > 0,
        "no serialization failure to retry\n{s}"
    );
    assert_eq!(op.total.failed(), 0, "{s}");
    // Every transaction counted once, whatever its retries, and a retried
    // one left nothing of its failed tries.
    let logged = one_i64(&c, "select count(*) from log").await;
    assert_eq!(logged as u64, op.total.ops, "{s}");
    let n = one_i64(&c, "select n from hot").await;
    assert_eq!(n, one_i64(&c, "select sum(d)::int8 from log").await);
    // Without retries (the default: one try, as pgbench), failures are
    // counted by SQLSTATE and the run goes on.
    let (r, s) = run_args(&sb, &["--script", &script, "-t", "4", "--time", "2s"]).await;
    assert!(r.operations[0].total.errors.contains_key("40001"), "{s}");
    assert!(s.contains("40001"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variables_go_to_the_server_and_back_in_both_modes() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table t (mode text, k text, v text)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "vars.sql",
        r#"\set n random(3, 3)
\set d 1.0 / 3
\set neg -5
select :n as got, 'x' || :n as s, 10 - :neg as minus, 1.50::numeric as num, date '2027-01-02' as day \gset r_
\if :r_got = 3 and :r_minus = 15
insert into t values (:mode, 'gset', :r_s || ' ' || :r_num || ' ' || :r_day);
\elif true
insert into t values (:mode, 'gset', 'wrong');
\endif
select g from generate_series(1, :n) g \aset
insert into t values (:mode, 'aset', :g);
select 1 as none where false \aset
insert into t values (:mode, 'd', :d);
insert into t values (:mode, 'quote', :name);
\sleep 1 ms
"#,
    );
    for mode in ["prepared", "simple"] {
        let mut args = vec![
            "--script",
            script.as_str(),
            "-D",
            "name=it's a \\ test",
            "--time",
            "0.3s",
        ];
        let m = format!("mode={mode}");
        args.extend(["-D", &m]);
        if mode == "simple" {
            args.push("--no-prepared");
        }
        let (r, s) = run_args(&sb, &args).await;
        assert!(r.succeeded(), "{s}");
        let rows = c
            .query(
                "select distinct k, v from t where mode = $1 order by k",
                &[&mode],
            )
            .await
            .unwrap();
        let got: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            got,
            [
                ("aset".to_string(), "3".to_string()),
                ("d".to_string(), "0.333333333333333".to_string()),
                ("gset".to_string(), "x3 1.50 2027-01-02".to_string()),
                ("quote".to_string(), "it's a \\ test".to_string()),
            ],
            "{mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_booking_example_runs_as_it_ships_and_its_checks_hold() {
    let sb = sandbox();
    let (r, s) = run_args(&sb, &["-o", "booking-load", "-t", "2"]).await;
    assert!(r.succeeded(), "{s}");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/booking.sql");
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "script,booking-check",
            "--script",
            script,
            "-t",
            "4",
            "--time",
            "3s",
            "--max-tries",
            "0",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let c = client(&sb).await;
    let seats = one_i64(&c, "select count(*) from seat").await;
    assert_eq!(seats as u64, r.operations[0].total.ops, "{s}");
    assert!(seats > 100, "{s}");
    let checks = &r.operations[1].checks;
    assert_eq!(checks.len(), 2, "{s}");
    assert!(checks.iter().all(|c| c.held), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ycsb_a_example_runs_as_it_ships_half_reads_half_updates_on_the_server() {
    let sb = sandbox();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "ycsb-load",
            "-r",
            "5000",
            "-t",
            "2",
            "--ycsb-field-length",
            "20",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let c = client(&sb).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ycsb-a.sql");
    let (r, s) = run_args(
        &sb,
        &[
            "--script",
            script,
            "-D",
            "records=5000",
            "-t",
            "2",
            "--time",
            "3s",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let op = &r.operations[0];
    let count = |verb: &str| -> u64 {
        op.statements
            .iter()
            .filter(|st| st.name.split_whitespace().nth(1) == Some(verb))
            .map(|st| st.count)
            .sum()
    };
    let (reads, updates) = (count("SELECT"), count("UPDATE"));
    assert_eq!(reads + updates, op.total.ops, "{s}");
    let share = reads as f64 / op.total.ops as f64;
    assert!((0.45..=0.55).contains(&share), "reads {share:.3}\n{s}");
    // Every key exists: each read and each update found its one row.
    assert_eq!(op.total.rows, op.total.ops, "{s}");
    // The server updated as many rows as the script sent updates.
    index_scans(&c, "usertable").await;
    let upd = one_i64(
        &c,
        "select n_tup_upd from pg_stat_user_tables where relname = 'usertable'",
    )
    .await;
    assert_eq!(upd as u64, updates, "{s}");
}

#[test]
fn parse_errors_name_the_file_line_and_column_and_exit_2_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: an error there would be a connection's.
    let url = "host=127.0.0.1 port=1 user=nobody connect_timeout=1";
    for (body, says) in [
        (
            "select 1;\n\\set x random(1,\n",
            "bad.sql:2:17: syntax error",
        ),
        ("\\set x frob(2)\n", "bad.sql:1:8: unknown function 'frob'"),
        (
            "\n  \\setshell x echo 1\n",
            "bad.sql:2:3: \\setshell runs a shell command",
        ),
        ("\\shell ls\n", "bad.sql:1:1: \\shell runs a shell command"),
        (
            "select 1 \\bogus\n",
            "bad.sql:1:10: unknown meta-command \\bogus",
        ),
        (
            "\\if true\nselect 1;\n",
            "bad.sql:1:1: \\if without a matching \\endif",
        ),
        (
            "\\set x 9223372036854775808\n",
            "bad.sql:1:8: bigint constant overflow",
        ),
        // What pgbench 15 fails only when a client meets it.
        (
            "\\startpipeline\nselect 1 \\gset\n\\endpipeline\n",
            "bad.sql:2:10: \\gset is not allowed inside a pipeline",
        ),
        (
            "\\startpipeline\nselect 1;\n",
            "bad.sql:1:1: \\startpipeline without a matching \\endpipeline",
        ),
        ("\\set 1x 1\n", "bad.sql:1:6: \\set 1x: a variable name"),
        (
            "select 1 as \"a b\" \\gset\n",
            "bad.sql:1:19: \\gset would store the column \"a b\"",
        ),
    ] {
        let f = write(dir.path(), "bad.sql", body);
        let out = bin("ysql-bench", &["-u", url, "--script", &f]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains(says), "{body}: {err}");
        assert!(!err.contains(">> connect"), "{err}");
    }
    // As pgbench -M simple, a pipeline needs the extended protocol.
    let f = write(
        dir.path(),
        "pipe.sql",
        "\\startpipeline\nselect 1;\n\\endpipeline\n",
    );
    let out = bin("ysql-bench", &["-u", url, "--script", &f, "--no-prepared"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("pipe.sql:1: \\startpipeline needs the extended protocol"),
        "{err}"
    );
    let out = bin(
        "ysql-bench",
        &["-u", url, "-o", "select", "--builtin", "tpcb-like"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("-o select,script"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_follows_rate_and_its_sleep_counts_in_the_transaction() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "nap.sql", "select 1;\n\\sleep 5 ms\n");
    let (r, s) = run_args(
        &sb,
        &[
            "--script", &script, "-t", "2", "--rate", "100", "--time", "3s",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let op = &r.operations[0];
    // 100 a second for 3 s, as scheduled (a unit or two at the edges).
    assert!((290..=310).contains(&op.total.ops), "{s}");
    // The sleep is inside the unit, as in pgbench: no transaction is
    // shorter than it.
    let min_ns = op.total.latency.min();
    assert!(min_ns >= 5_000_000, "min {min_ns} ns\n{s}");
    let sleep = op
        .statements
        .iter()
        .find(|st| st.name.contains("\\sleep"))
        .expect("the sleep has its own figures");
    assert_eq!(sleep.count, op.total.ops, "{s}");
}

/// Issue 22: a misspelt variable (`where aid = :idd`) was found only at
/// run time, and then failed millions of times until `--time` ended. Now
/// the parse says where, exit 2, before any connection.
#[test]
fn a_variable_nothing_sets_is_refused_at_its_line_and_column_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: an error there would be a connection's.
    let url = "host=127.0.0.1 port=1 user=nobody connect_timeout=1";
    let typo = write(
        dir.path(),
        "idd.sql",
        "\\set id random(1, 1000)\nselect abalance from pgbench_accounts where aid = :idd;\n",
    );
    let other = write(dir.path(), "other.sql", "\\set n :delat + 1\n");
    // Read only in a branch no run takes (while the scale is small):
    // pgbench runs it; it is refused, and -D is how to run it.
    let dead = write(
        dir.path(),
        "dead.sql",
        "\\set aid random(1, 100000 * :scale)\n\\if :scale > 1000000\n\\set aid random(1, :accounts)\n\\endif\nselect abalance from pgbench_accounts where aid = :aid;\n",
    );
    let ycsb = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ycsb-a.sql");
    let ycsb = ycsb.to_str().unwrap();
    for (args, says, hint, not) in [
        (
            vec!["--script", typo.as_str(), "--time", "3s"],
            "idd.sql:2:51: undefined variable \"idd\"",
            "did you mean :id? or give -D idd=VALUE",
            "\\if",
        ),
        // In an expression; -D gives other names, not this one.
        (
            vec!["--script", other.as_str(), "-D", "delta=1", "-D", "mm=2"],
            "other.sql:1:8: undefined variable \"delat\"",
            "did you mean :delta? or give -D delat=VALUE",
            "\\if",
        ),
        (
            vec!["--script", dead.as_str()],
            "dead.sql:3:20: undefined variable \"accounts\"",
            "or give -D accounts=VALUE (it is read inside \\if",
            "did you mean",
        ),
        // Not ":record", which that very line computes from :records.
        (
            vec!["--script", ycsb],
            "ycsb-a.sql:16:41: undefined variable \"records\"",
            "or give -D records=VALUE",
            "did you mean",
        ),
    ] {
        let mut all = vec!["-u", url];
        all.extend(args);
        let out = bin("ysql-bench", &all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains(hint), "{err}");
        assert!(!err.contains(not), "{err}");
        assert!(!err.contains(">> connect"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

/// No false refusal: a variable that any line of any script, `-D` or the
/// tool can set is accepted, and the scripts run, here and in pgbench.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variable_any_line_can_set_is_accepted_and_runs_as_in_pgbench() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, body: &str| write(dir.path(), name, body);
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        // From a \gset of an earlier line, with a prefix.
        (
            vec![w(
                "gset.sql",
                "select 7 as id, count(*) from pg_class \\gset p_\nselect :p_id, :p_count;\n",
            )],
            vec![],
        ),
        // From a \gset whose columns the text does not say.
        (
            vec![w(
                "star.sql",
                "select * from (select 1 as a) s \\gset r_\nselect :r_a;\n",
            )],
            vec![],
        ),
        // From -D.
        (
            vec![w("given.sql", "select :given;\n")],
            vec!["-D", "given=3"],
        ),
        // From another script of the run (guarded until it has run).
        (
            vec![
                w("reader.sql", "\\if :ready\nselect :from_b;\n\\endif\n"),
                w("setter.sql", "\\set from_b 5\n\\set ready 1\n"),
            ],
            vec!["-D", "ready=0"],
        ),
        // From a later \set of the same script, in an earlier transaction.
        (
            vec![w(
                "later.sql",
                "\\if :started\nselect :x;\n\\endif\n\\set x random(1, 9)\n\\set started 1\n",
            )],
            vec!["-D", "started=0"],
        ),
        // A slice bound that only a \gset of unknown columns may set,
        // and does not: SQL, as pgbench leaves it (it failed at prepare,
        // and under --no-prepared as an undefined variable).
        (
            vec![w(
                "maybe.sql",
                "select 1 as Foo, (select max(oid) from pg_class) \\gset\nselect (array[[10, 20, 30]])[1][1:m] as s from (select 2 as m) q;\n",
            )],
            vec![],
        ),
        // A slice bound nothing sets is SQL, as pgbench leaves it.
        (
            vec![w(
                "slice.sql",
                "select (array[10, 20, 30])[1:n] as s from (select 2 as n) q;\n",
            )],
            vec![],
        ),
    ];
    for (files, extra) in &cases {
        let mut args: Vec<&str> = Vec::new();
        for f in files {
            args.extend(["--script", f.as_str()]);
        }
        args.extend(extra.iter().copied());
        for mode in [None, Some("--no-prepared")] {
            let mut all = args.clone();
            all.extend(["-t", "2", "--time", "0.3s"]);
            all.extend(mode);
            let (r, s) = run_args(&sb, &all).await;
            assert!(r.succeeded(), "{files:?} {mode:?}\n{s}");
            assert!(r.operations[0].total.ops > 0, "{files:?}\n{s}");
        }
        // pgbench runs it too (-f for --script, the same -D).
        let mut theirs = vec!["-n", "-t", "3"];
        for f in files {
            theirs.extend(["-f", f.as_str()]);
        }
        theirs.extend(extra.iter().copied());
        run_pgbench(&sb, "postgres", &theirs);
    }
}

/// What only the run can tell: a variable set inside a branch never
/// taken. pgbench aborts the client on it; the run stops at once, exit 1,
/// with the error said once, instead of failing as fast as the client can
/// loop until `--time` ends.
#[test]
fn a_script_error_at_run_time_stops_the_run_at_once_and_says_it_once() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "branch.sql",
        "\\if :client_id < 0\n\\set id 1\n\\endif\nselect :id;\n",
    );
    let json = dir.path().join("run.json");
    let url = sb.url();
    for mode in [None, Some("--no-prepared")] {
        let mut args = vec![
            "-u",
            url.as_str(),
            "--script",
            &script,
            "-t",
            "2",
            "--time",
            "30s",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend(mode);
        let began = std::time::Instant::now();
        let out = bin("ysql-bench", &args);
        let took = began.elapsed();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{stderr}\n{stdout}");
        assert!(took.as_secs() < 10, "took {took:?}\n{stdout}");
        let says = "branch.sql:4: undefined variable \"id\"";
        assert_eq!(stderr.matches(says).count(), 1, "{stderr}");
        assert_eq!(stdout.matches(says).count(), 1, "{stdout}");
        assert!(stderr.contains("the run stopped"), "{stderr}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let op = &doc["operations"][0];
        assert_eq!(op["succeeded"], false, "{op}");
        assert!(
            op["failure"].as_str().is_some_and(|f| f.contains(says)),
            "{op}"
        );
        let wallclock = op["wallclock_s"].as_f64().unwrap();
        assert!(wallclock < 1.0, "measured for {wallclock} s\n{stdout}");
        // One failed unit per worker at most, not millions.
        let failed = op["failed"].as_u64().unwrap();
        assert!((1..=2).contains(&failed), "{failed} failed\n{stdout}");
    }
}

/// A bound in an array subscript that only a `\gset` of unknown columns
/// may set is the variable when the run has set it and SQL as written
/// when not, each time the command runs, as pgbench's simple mode does,
/// in both modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscript_bound_an_unknown_gset_may_set_is_the_variable_only_when_set() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table got (mode text, el int, sl int[])")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The \gset's columns have no names the text says (`*`): any name may
    // come of them. It sets m (2), never n: [1:n] is the column n of the
    // subquery (3), [:m] the variable. (A column named ?column? would fail
    // the \gset, as in pgbench.)
    let script = write(
        dir.path(),
        "maybe.sql",
        "insert into got select :mode, null, (array[10, 20, 30])[1:n] from (select 3 as n) s;\n\
         select * from (select 2 as m, 1 as k) g \\gset\n\
         insert into got select :mode, (array[10, 20, 30])[:m], null;\n",
    );
    for mode in ["prepared", "simple"] {
        let m = format!("mode={mode}");
        let mut args = vec!["--script", script.as_str(), "-D", &m, "-t", "1"];
        args.extend(["--time", "0.3s"]);
        if mode == "simple" {
            args.push("--no-prepared");
        }
        let (r, s) = run_args(&sb, &args).await;
        assert!(r.succeeded(), "{mode}\n{s}");
        let rows = c
            .query(
                "select distinct el, sl::text from got where mode = $1 order by 1 nulls first",
                &[&mode],
            )
            .await
            .unwrap();
        let got: Vec<(Option<i32>, Option<String>)> =
            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            got,
            [(None, Some("{10,20,30}".to_string())), (Some(20), None)],
            "{mode}\n{s}"
        );
        assert_eq!(r.operations[0].total.failed(), 0, "{mode}\n{s}");
    }
}

/// A script error stops the run even under an explicit `--on-error
/// continue`, and says so; one during `--warmup` says it failed there,
/// not that the operation did not start.
#[test]
fn a_script_error_says_it_overrides_on_error_continue_and_when_it_was_in_the_warmup() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "branch.sql",
        "\\if :client_id < 0\n\\set id 1\n\\endif\nselect :id;\n",
    );
    let url = sb.url();
    let base = [
        "-u",
        url.as_str(),
        "--script",
        &script,
        "-t",
        "1",
        "--time",
        "20s",
    ];
    let says = "branch.sql:4: undefined variable \"id\"";

    let mut args = base.to_vec();
    args.extend(["--on-error", "continue"]);
    let out = bin("ysql-bench", &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches(says).count(), 1, "{stderr}");
    assert!(
        stderr.contains("--on-error continue does not go on after a script error"),
        "{stderr}"
    );
    // Not said when continue is only the default.
    let out = bin("ysql-bench", &base);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("--on-error"), "{stderr}");

    let mut args = base.to_vec();
    args.extend(["--warmup", "10s"]);
    let began = std::time::Instant::now();
    let out = bin("ysql-bench", &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(began.elapsed().as_secs() < 8, "{stderr}");
    assert!(
        stderr.contains("failed during the warmup (after "),
        "{stderr}"
    );
    assert!(stderr.contains(says), "{stderr}");
    assert!(!stderr.contains("did not start"), "{stderr}");
}

/// pgbench's -t on scripts: each thread ends `--transactions` units, the
/// failed ones counted among them as pgbench counts them; the server
/// holds one row per unit. Under a rate too high to keep, the slots
/// skipped by --latency-limit count too (pgbench's "late throttling"
/// test: `\sleep 2ms` at 100000/s with a 1 ms limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_run_with_transactions_ends_each_threads_count_failed_units_included() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table done (k int, fails bool)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Every unit writes its row (autocommit), then about half fail.
    let script = write(
        dir.path(),
        "half.sql",
        "\\set f random(0, 1)\ninsert into done values (:client_id, :f = 0);\nselect 1 / :f;\n",
    );
    let (r, s) = run_args(
        &sb,
        &["--script", &script, "-t", "2", "--transactions", "7"],
    )
    .await;
    let op = &r.operations[0];
    assert_eq!(op.total.ops + op.total.failed(), 14, "{s}");
    assert!(op.total.failed() > 0 && op.total.ops > 0, "{s}");
    assert_eq!(one_i64(&c, "select count(*) from done").await, 14, "{s}");
    let per_thread = c
        .query("select count(*) from done group by k order by k", &[])
        .await
        .unwrap();
    let per_thread: Vec<i64> = per_thread.iter().map(|r| r.get(0)).collect();
    assert_eq!(per_thread, [7, 7], "{s}");
    let failed = one_i64(&c, "select count(*) from done where fails").await;
    assert_eq!(failed as u64, op.total.failed(), "{s}");

    let late = write(
        dir.path(),
        "late.sql",
        "insert into done values (-1, false);\n\\sleep 2ms\n",
    );
    let (r, s) = run_args(
        &sb,
        &[
            "--script",
            &late,
            "--transactions",
            "10",
            "--rate",
            "100000",
            "--latency-limit",
            "1",
        ],
    )
    .await;
    let t = &r.operations[0].total;
    assert_eq!(t.ops + t.failed() + t.skipped, 10, "{s}");
    assert!(t.skipped >= 8, "{s}");
    let ran = one_i64(&c, "select count(*) from done where k = -1").await;
    assert_eq!(ran as u64, t.ops, "{s}");
}

/// Issue 24: `of` is false, as pgbench reads it; a `\\gset` of a column
/// whose name is no variable name (`select 1` gives `?column?`) fails the
/// transaction and stops the run, as pgbench aborts the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_reads_false_and_a_gset_into_no_variable_name_fails_as_in_pgbench() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table got (v text)").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "of.sql",
        "\\if :f\ninsert into got values ('true');\n\\else\ninsert into got values ('false');\n\\endif\n",
    );
    for (value, want) in [("of", "false"), ("OF", "false"), ("on", "true")] {
        c.batch_execute("truncate got").await.unwrap();
        let d = format!("f={value}");
        let (r, s) = run_args(&sb, &["--script", &script, "-D", &d, "--transactions", "1"]).await;
        assert!(r.succeeded(), "{value}: {s}");
        let got: String = c.query_one("select v from got", &[]).await.unwrap().get(0);
        assert_eq!(got, want, "{value}");
    }

    let gset = write(dir.path(), "gset.sql", "select 1 \\gset\nselect 2;\n");
    let url = sb.url();
    for mode in [None, Some("--no-prepared")] {
        let mut args = vec!["-u", url.as_str(), "--script", &gset, "--time", "20s"];
        args.extend(mode);
        let out = bin("ysql-bench", &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mode:?}: {stderr}");
        let says =
            "gset.sql:1: \\gset cannot store a column into \"?column?\": it is no variable name";
        assert_eq!(stderr.matches(says).count(), 1, "{mode:?}: {stderr}");
    }
}

/// pgbench's own `\gset` and `\aset` tests (001_pgbench_with_server.pl),
/// with the values they check written to a table: no columns, one, two,
/// a prefix, a name given twice (the last wins), statements joined by
/// `\;` (the last one's row for `\gset`), and several rows under `\aset`
/// (the last kept). Joined statements go as one simple query: under
/// prepared statements they are refused before connecting, as the server
/// would refuse them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_gset_and_aset_tests_give_pgbench_values() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table got (mode text, vals int[])")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "gset.sql",
        "SELECT \\gset\n\
         SELECT 0 AS i0 \\gset\n\
         SELECT 1 AS i1, 2 AS i2 \\gset\n\
         SELECT 3 AS i3 \\gset x_\n\
         SELECT 0 AS i4, 4 AS i4 \\gset\n\
         \\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\n\
         SELECT 6 AS i6 \\aset\n\
         SELECT 8 AS i8 UNION SELECT 9 ORDER BY 1 DESC \\aset\n\
         insert into got values ('simple', array[:i0, :i1, :i2, :x_i3, :i4, :i5, :i6, :i8]);\n",
    );
    let (r, s) = run_args(
        &sb,
        &["--script", &script, "--transactions", "1", "--no-prepared"],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let vals: Vec<i32> = c
        .query_one("select vals from got", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(vals, [0, 1, 2, 3, 4, 5, 6, 8], "{s}");

    let url = "host=127.0.0.1 port=1 user=nobody connect_timeout=1";
    for protocol in [None, Some(["-M", "extended"])] {
        let mut args = vec!["-u", url, "--script", &script];
        args.extend(protocol.into_iter().flatten());
        let out = bin("ysql-bench", &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("gset.sql:6: statements joined by \\; go as one simple query"),
            "{err}"
        );
    }
}

/// Pipelines as pgbench runs them: the statements up to a Sync go before
/// any result is read, in one implicit transaction, so an error inside
/// fails the unit and takes the statements around it back; prepared and
/// unnamed alike, `\syncpipeline` included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelines_run_whole_and_an_error_inside_fails_their_unit() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table piped (k int, mode text)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "pipe.sql",
        "\\set m 1\n\\startpipeline\ninsert into piped values (:m, :mode);\n\
         insert into piped values (2, :mode);\n\\syncpipeline\n\
         insert into piped values (3, :mode);\nselect 1;\n\\endpipeline\n",
    );
    for mode in ["prepared", "extended"] {
        let d = format!("mode={mode}");
        let (r, s) = run_args(
            &sb,
            &[
                "--script",
                &script,
                "-M",
                mode,
                "-D",
                &d,
                "-t",
                "2",
                "--transactions",
                "5",
            ],
        )
        .await;
        let op = &r.operations[0];
        assert!(op.failure.is_none(), "{mode}: {s}");
        assert_eq!(op.total.ops, 10, "{mode}: {s}");
        assert_eq!(op.total.failed(), 0, "{mode}: {s}");
        let n = one_i64(
            &c,
            &format!("select count(*) from piped where mode = '{mode}'"),
        )
        .await;
        assert_eq!(n, 30, "{mode}: {s}");
    }
    // An error between two inserts of one pipeline part: the whole part
    // rolls back, the unit fails under its SQLSTATE, the run goes on.
    let bad = write(
        dir.path(),
        "bad_pipe.sql",
        "\\startpipeline\ninsert into piped values (10, 'bad');\nselect 1 / 0;\n\
         insert into piped values (11, 'bad');\n\\endpipeline\nselect 1;\n",
    );
    let (r, s) = run_args(&sb, &["--script", &bad, "-t", "1", "--transactions", "3"]).await;
    let op = &r.operations[0];
    assert_eq!(op.total.failed(), 3, "{s}");
    assert_eq!(op.total.errors.get("22012").copied(), Some(3), "{s}");
    assert_eq!(
        one_i64(&c, "select count(*) from piped where mode = 'bad'").await,
        0,
        "{s}"
    );
}

/// Runs `script` as the tests of what the end of a run leaves out do:
/// three clients for one second, a unit retried on division by zero
/// (22012) up to three tries.
async fn run_cut_by_time(sb: &Sandbox, script: &str) -> (RunReport, String) {
    run_args(
        sb,
        &[
            "--script",
            script,
            "-t",
            "3",
            "--time",
            "1s",
            "--retry-on",
            "22012",
            "--max-tries",
            "3",
        ],
    )
    .await
}

/// The per-statement figures hold the statements of the units the report
/// counts, and none of a unit it leaves out. Under load, a tpcb-like run
/// at 500 connections counted more BEGINs than transactions, failed ones
/// included (tests/memory.rs): the runner moved a unit's statement times
/// into its thread's table as soon as the unit ended, before deciding
/// whether to count it, and the end of a run leaves some units out.
/// Here each of those ends is forced, one per client: client 0 sleeps
/// past the stop grace after `--time` and is cancelled by the
/// coordinator; client 1's only try fails with an error `--retry-on`
/// names after `--time` is up, too late to try again. Neither is a unit
/// done nor failed, yet both had run BEGIN (and client 1 its sleep).
/// Client 2 runs short units, all counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_times_leave_out_the_units_the_end_of_the_run_leaves_out() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "cut.sql",
        "\\set d 1\n\\set ms 5\n\
         \\if :client_id = 0\n\\set ms 60000\n\\endif\n\
         \\if :client_id = 1\n\\set ms 1500\n\\set d 0\n\\endif\n\
         BEGIN;\nselect pg_sleep(:ms * 0.001);\nselect 1 / :d;\nEND;\n",
    );
    let (r, s) = run_cut_by_time(&sb, &script).await;
    let op = &r.operations[0];
    let (units, failed) = (op.total.ops, op.total.failed());
    assert!(units > 20, "{s}");
    assert_eq!(failed, 0, "{s}");
    let counts: Vec<(&str, u64)> = op.statements.iter().map(|st| (st.name, st.count)).collect();
    assert_eq!(counts.len(), 4, "{counts:?}\n{s}");
    for (name, count) in &counts {
        assert_eq!(*count, units, "{name}: {counts:?}\n{s}");
    }
}

/// The other side of the test above: the units the report counts keep
/// the statements of all their tries, a failure's included. Client 0's
/// units always fail with an error `--retry-on` names, each counted
/// after its third try (BEGIN and the sleep three times, the division
/// never timed, as no failed statement is); client 1's fail every other
/// try (a sequence's parity), so half its units succeed at the second
/// try (BEGIN and the sleep twice); client 2's succeed at once. A unit
/// cut short at the end of --time is left out with its statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_times_keep_every_try_of_the_units_counted_failed_or_retried() {
    let sb = sandbox();
    let c = client_to(&sb, "postgres").await;
    c.batch_execute("create sequence alt").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "tries.sql",
        "\\set m 2\n\
         \\if :client_id = 0\n\\set m 0\n\\endif\n\
         \\if :client_id = 1\n\\set m 1\n\\endif\n\
         BEGIN;\nselect pg_sleep(0.002);\n\
         select 1 / (case cast(:m as int) when 0 then 0 when 1 then nextval('alt') % 2 else 1 end);\n\
         END;\n",
    );
    let (r, s) = run_cut_by_time(&sb, &script).await;
    let t = &r.operations[0].total;
    let (done, failed, retried) = (t.ops, t.failed(), t.retried);
    assert!(done > 20 && failed > 2, "{s}");
    // Units retried: the failed ones, and client 1's second tries.
    assert!(retried > failed, "{s}");
    let tries = done + 2 * failed + retried;
    let counts: Vec<(&str, u64)> = r.operations[0]
        .statements
        .iter()
        .map(|st| (st.name, st.count))
        .collect();
    let want = [tries, tries, done, done];
    assert_eq!(
        counts.iter().map(|c| c.1).collect::<Vec<_>>(),
        want,
        "{done} done, {failed} failed, {retried} retried: {counts:?}\n{s}"
    );
}

/// The retries of a unit the end of the run leaves out are left out with
/// it: the summary's retries belong to the units it counts, as its
/// intervals' do. They were counted as they happened, so a run could
/// report "0 transactions retried, 2 retries in all". Client 0's unit
/// fails its first try at once and is retried; its second sleeps past
/// the stop grace and is cancelled by the coordinator. Client 1's unit
/// fails after half a second, is retried, and fails again after
/// `--time` is up, too late to try again. Client 2 runs short units,
/// all counted, none retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_of_the_units_the_end_of_the_run_leaves_out_are_not_counted() {
    let sb = sandbox();
    let c = client_to(&sb, "postgres").await;
    c.batch_execute("create sequence zero; create sequence one")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "left_out.sql",
        "\\set ms 5\n\
         \\if :client_id = 0\n\\set ms 60000\n\\endif\n\
         \\if :client_id = 1\n\\set ms 500\n\\endif\n\
         BEGIN;\n\
         select 1 / (case cast(:client_id as int) when 0 then nextval('zero') - 1 else 1 end);\n\
         select pg_sleep(:ms * 0.001);\n\
         select 1 / (case cast(:client_id as int) when 1 then 0 * nextval('one') else 1 end);\n\
         END;\n",
    );
    let (r, s) = run_cut_by_time(&sb, &script).await;
    // Both left-out units were tried twice.
    let row = c
        .query_one(
            "select (select last_value from zero), (select last_value from one)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (2, 2), "{s}");
    let op = &r.operations[0];
    let t = &op.total;
    assert!(t.ops > 20, "{s}");
    assert_eq!((t.failed(), t.retried, t.retries), (0, 0, 0), "{s}");
    let per_interval: u64 = op.intervals.iter().map(|i| i.retries).sum();
    assert_eq!(per_interval, 0, "{s}");
    assert!(!s.contains("retries in all"), "{s}");
    // The two units left out retried once each: kept apart, for the check
    // that fails a run in which nothing succeeded.
    assert_eq!(t.left_out_retries, 2, "{s}");
}

/// A script whose every try fails with 22012 (division by zero), and the
/// flags that retry it without limit until the end of a 1 s run.
const NEVER_SUCCEEDS: &str = "select 1 / 0;\n";
const RETRIED_TO_THE_END: [&str; 6] = ["--time", "1s", "--retry-on", "22012", "--max-tries", "0"];

/// Runs the binary on a sandbox with `body` as the script `file`, and
/// `extra` after `-u` and `--script`.
fn run_script_cli(file: &str, body: &str, extra: &[&str]) -> std::process::Output {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), file, body);
    let url = sb.url();
    let mut args = vec!["-u", url.as_str(), "--script", script.as_str()];
    args.extend_from_slice(extra);
    bin("ysql-bench", &args)
}

/// What the test above leaves out is still looked at: a run whose every
/// unit was retried until the end of `--time` (no limit on tries) counted
/// none, and fails saying so rather than passing as a run of nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_retried_to_its_end_without_one_unit_counted_fails() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "never.sql", NEVER_SUCCEEDS);
    let mut args = vec!["--script", script.as_str()];
    args.extend_from_slice(&RETRIED_TO_THE_END);
    let (r, s) = run_args(&sb, &args).await;
    let op = &r.operations[0];
    let t = &op.total;
    assert_eq!((t.ops, t.failed(), t.retries), (0, 0, 0), "{s}");
    let failure = op.failure.as_deref().unwrap_or_default();
    assert!(
        failure.contains("retries until the end of the run"),
        "{failure:?}\n{s}"
    );
    assert!(!r.succeeded(), "{s}");
}

/// The same run from the command line: it exits 1, and its error says the
/// operation failed, not that it "did not start": its units were sent (and
/// retried) until the end.
#[test]
fn a_run_retried_to_its_end_says_it_failed_not_that_it_did_not_start() {
    let mut extra = RETRIED_TO_THE_END.to_vec();
    extra.push("--no-server-stats");
    let out = run_script_cli("never.sql", NEVER_SUCCEEDS, &extra);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: script failed: no txn succeeded"),
        "{err}"
    );
    assert!(!err.contains("did not start"), "{err}");
}

/// At the end of `--time`, the workers still in a unit are named before
/// their statements are cancelled: only those. Four connections on two
/// cores share two threads, so the worker that sleeps shares its thread
/// with one that has ended, whose output waits for it; that one is not in
/// a unit. (On more cores each worker has a thread of its own, and the
/// count is the same.)
#[test]
fn the_workers_still_in_a_unit_at_the_end_are_those_in_a_statement() {
    // The first connection to take the advisory lock keeps it, and
    // sleeps; the others find it taken and end their units at once.
    let out = run_script_cli(
        "one_sleeps.sql",
        "select pg_try_advisory_lock(7) as got \\gset\n\\if :got\nselect pg_sleep(3600);\n\\endif\n",
        &["-t", "4", "--time", "1s", "--no-server-stats"],
    );
    let err = text(&out.stderr);
    assert!(
        err.contains(">> script: 1 worker(s) still in a unit 5 s after"),
        "{err}"
    );
}

/// A failed command inside `BEGIN … COMMIT` rolls its transaction back
/// before the next unit, and a script that ends with its transaction
/// open stops the run: on the interpreter's loop for scripts of `\set`s
/// and prepared SQL alone (the default, -M prepared) and on the general
/// one, whose SQL goes as unnamed statements (-M extended) or as text
/// (--no-prepared).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_interpreter_paths_roll_back_a_failed_or_unfinished_transaction() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create table kept (r int)").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let half = write(
        dir.path(),
        "half.sql",
        "\\set r random(0, 1)\n\
         BEGIN;\n\
         INSERT INTO kept VALUES (:r);\n\
         SELECT 1 / :r;\n\
         COMMIT;\n",
    );
    let open = write(
        dir.path(),
        "open.sql",
        "BEGIN;\nINSERT INTO kept VALUES (7);\n",
    );
    for mode in [&[][..], &["-M", "extended"], &["--no-prepared"]] {
        c.batch_execute("truncate kept").await.unwrap();
        let mut args = vec!["--script", half.as_str(), "-t", "2", "--time", "1s"];
        args.extend(mode);
        let (r, s) = run_args(&sb, &args).await;
        let total = &r.operations[0].total;
        assert!(total.errors.contains_key("22012"), "{mode:?}\n{s}");
        // Without the rollback, the next unit on that connection would
        // fail as inside an aborted transaction, and every one after it.
        assert!(!total.errors.contains_key("25P02"), "{mode:?}\n{s}");
        assert!(total.ops > 0, "{mode:?}: no unit succeeded\n{s}");
        let rows = one_i64(&c, "select count(*) from kept").await;
        assert_eq!(rows as u64, total.ops, "{mode:?}\n{s}");

        let mut args = vec!["--script", open.as_str(), "-t", "1", "--time", "5s"];
        args.extend(mode);
        let (r, s) = run_args(&sb, &args).await;
        assert!(!r.succeeded(), "{mode:?}\n{s}");
        assert!(
            s.contains("ended inside a transaction (BEGIN without COMMIT or END)"),
            "{mode:?}\n{s}"
        );
    }
}
