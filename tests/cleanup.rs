//! Clean-ups against real throwaway servers: `-o cleanup` drops exactly
//! the tables (and functions) ysql-bench created, each family's clean-up
//! only its family's, and a table of the same name that ysql-bench did not
//! create (made by `pgbench -i`, or by hand) survives them all, listed
//! with the reason. Regression tests of issue 22, item 9: before, only
//! `oltp-cleanup` existed, and it stopped at the first sbtest table that
//! sysbench had made.

mod common;
use common::*;

use std::collections::BTreeSet;

use tokio_postgres::Client;
use ysql_bench::db::sandbox::Sandbox;

/// Every table of the database outside the system schemas, as
/// "schema.name".
async fn tables(c: &Client) -> BTreeSet<String> {
    c.query(
        "select schemaname || '.' || tablename from pg_tables \
         where schemaname not in ('pg_catalog', 'information_schema')",
        &[],
    )
    .await
    .expect("pg_tables")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// Every function and procedure outside the system schemas.
async fn routines(c: &Client) -> BTreeSet<String> {
    c.query(
        "select n.nspname || '.' || p.proname from pg_proc p \
         join pg_namespace n on n.oid = p.pronamespace \
         where n.nspname not in ('pg_catalog', 'information_schema')",
        &[],
    )
    .await
    .expect("pg_proc")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| format!("public.{n}")).collect()
}

const TEST_TABLE: &[&str] = &["test_table"];
const YCSB: &[&str] = &["usertable"];
const OLTP: &[&str] = &["sbtest1", "sbtest2"];
const BOOKING: &[&str] = &["aircraft", "schedule", "seat", "payment", "audit"];
const TPCC: &[&str] = &[
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
];
const PGBENCH: &[&str] = &[
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_tellers",
    "pgbench_history",
];

/// Loads every family, small: test_table by the procedure (which makes
/// the two routines too), usertable, sbtest1..2, booking, TPC-C at one
/// warehouse, pgbench at scale 1.
async fn load_every_family(sb: &Sandbox) {
    for args in [
        &["-o", "procedure", "-r", "200"][..],
        &["-o", "ycsb-load", "-r", "100"],
        &["-o", "oltp-prepare", "--tables", "2", "-r", "100"],
        &["-o", "booking-load", "-t", "2"],
        &["-o", "tpcc-load", "--warehouses", "1", "-t", "2"],
        &["-o", "pgbench-init", "-s", "1", "-t", "2"],
    ] {
        let (r, s) = run_args(sb, args).await;
        assert!(r.succeeded(), "{args:?}:\n{s}");
    }
}

/// The user's own tables, which no clean-up may touch: names the tool
/// never uses, in public and in a schema of their own.
async fn make_users_tables(c: &Client) {
    c.batch_execute(
        "create table invoices (id int primary key, total numeric);
         insert into invoices values (1, 9.99);
         create schema app;
         create table app.customers (id int primary key);
         insert into app.customers values (7);",
    )
    .await
    .unwrap();
}

fn users_tables() -> BTreeSet<String> {
    ["public.invoices", "app.customers"]
        .into_iter()
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_drops_exactly_the_tables_ysql_bench_created() {
    let sb = sandbox();
    let c = client(&sb).await;
    make_users_tables(&c).await;
    load_every_family(&sb).await;
    let mut tool = BTreeSet::new();
    for family in [TEST_TABLE, YCSB, OLTP, BOOKING, TPCC, PGBENCH] {
        tool.extend(set(family));
    }
    let before = tables(&c).await;
    assert_eq!(
        before,
        tool.union(&users_tables()).cloned().collect(),
        "the loads made the tables expected"
    );
    assert!(routines(&c).await.contains("public.ysql_bench_load"));

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cleanup.json");
    let json = json.to_str().unwrap();
    let (r, s) = run_args(&sb, &["-o", "cleanup", "--json", json]).await;
    assert!(r.succeeded(), "{s}");
    assert_eq!(tables(&c).await, users_tables(), "{s}");
    assert_eq!(routines(&c).await, BTreeSet::new(), "{s}");
    // What went, with its rows; the user's tables are not ysql-bench's
    // business and are not named.
    assert!(
        s.contains("dropped               : table \"public\".\"usertable\" (100 rows)"),
        "{s}"
    );
    assert!(
        s.contains("dropped               : table \"public\".\"pgbench_accounts\" (100000 rows)"),
        "{s}"
    );
    assert!(
        s.contains("procedure \"public\".\"ysql_bench_load\""),
        "{s}"
    );
    assert!(
        s.contains("in all                : dropped 22 tables"),
        "{s}"
    );
    assert!(!s.contains("invoices") && !s.contains("customers\""), "{s}");
    let op = &r.operations[0];
    assert!(
        op.findings.iter().filter(|f| f.label == "dropped").count() == 24,
        "{:?}",
        op.findings
    );

    // The JSON report keeps the lines, and `show` prints them.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let findings = doc["operations"][0]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 25, "{findings:?}");
    assert_eq!(findings[24]["label"], "in all");
    let out = bin("ysql-bench", &["show", json]);
    assert!(
        text(&out.stdout)
            .contains("dropped               : table \"public\".\"stock\" (100000 rows)"),
        "{}",
        text(&out.stdout)
    );

    // Nothing left to drop: exit 0, and it says so.
    let out = bin("ysql-bench", &["-u", &sb.url(), "-o", "cleanup"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("nothing to drop: no table ysql-bench created"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(tables(&c).await, users_tables());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_familys_cleanup_drops_only_its_family() {
    let sb = sandbox();
    let c = client(&sb).await;
    make_users_tables(&c).await;
    load_every_family(&sb).await;
    let mut left = tables(&c).await;
    for (cleanup, family) in [
        ("ycsb-cleanup", YCSB),
        ("pgbench-cleanup", PGBENCH),
        ("tpcc-cleanup", TPCC),
        ("oltp-cleanup", OLTP),
        ("booking-cleanup", BOOKING),
        ("table-cleanup", TEST_TABLE),
    ] {
        let (r, s) = run_args(&sb, &["-o", cleanup]).await;
        assert!(r.succeeded(), "{cleanup}:\n{s}");
        for t in set(family) {
            assert!(left.remove(&t), "{cleanup}: {t} was there");
        }
        assert_eq!(
            tables(&c).await,
            left,
            "{cleanup} dropped its family alone:\n{s}"
        );
        let functions = routines(&c).await;
        // The procedure's functions are test_table's family's.
        assert_eq!(
            functions.is_empty(),
            cleanup == "table-cleanup",
            "{cleanup}: {functions:?}"
        );
    }
    assert_eq!(left, users_tables());
    // Run again: nothing of the family is there, and that is no failure.
    let out = bin("ysql-bench", &["-u", &sb.url(), "-o", "tpcc-cleanup"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("nothing to drop: no TPC-C table ysql-bench created"),
        "{}",
        text(&out.stdout)
    );
}

/// pgbench -i's tables, a usertable and a test_table made by hand (as the
/// original ysql-bench made it, unmarked) have the tool's names and
/// columns; no clean-up drops them, each says why, and their rows stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_named_table_ysql_bench_did_not_create_survives_every_cleanup() {
    let sb = sandbox();
    let c = client(&sb).await;
    run_pgbench(&sb, "postgres", &["-i", "-q", "-s", "1"]);
    let fields: Vec<String> = (0..10).map(|i| format!("field{i} text")).collect();
    c.batch_execute(&format!(
        "create table usertable (ycsb_key varchar(255) primary key, {});
         insert into usertable (ycsb_key, field0) values ('user1', 'mine');
         create table test_table (id int primary key, f1 text, f2 text, f3 text, f4 text);
         insert into test_table values (42, 'precious', 'a', 'b', 'c');
         create function ysql_bench_random_text(len int) returns text
           language sql as $$ select 'not the tool''s' $$;",
        fields.join(", ")
    ))
    .await
    .unwrap();
    let theirs = tables(&c).await;
    let url = sb.url();
    for (ops, extra) in [
        ("cleanup", None),
        ("cleanup", Some("--force")),
        ("pgbench-cleanup", None),
        ("ycsb-cleanup", None),
        ("table-cleanup", None),
        ("oltp-cleanup", None),
    ] {
        let mut args = vec!["-u", url.as_str(), "-o", ops];
        args.extend(extra);
        let out = bin("ysql-bench", &args);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            tables(&c).await,
            theirs,
            "{args:?} dropped nothing:\n{stdout}"
        );
        let names: &[&str] = match ops {
            "cleanup" => &["pgbench_accounts", "usertable", "test_table"],
            "pgbench-cleanup" => PGBENCH,
            "ycsb-cleanup" => YCSB,
            "table-cleanup" => TEST_TABLE,
            _ => &[],
        };
        for n in names {
            assert!(
                stdout.contains(&format!(
                    "left                  : table \"public\".\"{n}\": it was not created by ysql-bench"
                )),
                "{args:?} says why {n} stays:\n{stdout}"
            );
        }
        if extra.is_some() {
            assert!(
                text(&out.stderr).contains("--force does not make cleanup drop"),
                "{}",
                text(&out.stderr)
            );
        }
        if ops == "pgbench-cleanup" {
            assert!(stdout.contains("add --force to drop it anyway"), "{stdout}");
        }
    }
    let accounts = c
        .query_one("select count(*), sum(abalance) from pgbench_accounts", &[])
        .await
        .unwrap();
    assert_eq!(
        accounts.get::<_, i64>(0),
        100_000,
        "pgbench's accounts survive"
    );
    let kept: i64 = c
        .query_one(
            "select (select count(*) from usertable where field0 = 'mine') \
             + (select count(*) from test_table where f1 = 'precious')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 2, "the user's rows survive");
    assert!(
        routines(&c).await.contains("public.ysql_bench_random_text"),
        "a function of the tool's name and another body stays"
    );

    // --force lets a family's clean-up drop a table of its columns, as it
    // lets a load write into one: pgbench -i's tables go.
    let (r, s) = run_args(&sb, &["-o", "pgbench-cleanup", "--force"]).await;
    assert!(r.succeeded(), "{s}");
    assert!(s.contains("dropped as --force says"), "{s}");
    let mut rest = theirs.clone();
    for t in set(PGBENCH) {
        rest.remove(&t);
    }
    assert_eq!(tables(&c).await, rest, "{s}");
}

/// The tool creates its tables in the first schema of the search_path and
/// finds them there: a clean-up drops the tool's tables of the schemas on
/// the path, whatever --table-name they were made under, and names (but
/// leaves) those of a schema off the path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_follows_the_search_path_and_the_table_name() {
    let sb = sandbox();
    let c = client(&sb).await;
    c.batch_execute("create schema bench").await.unwrap();
    let bench = format!("{} options=-csearch_path=bench", sb.url());
    let public = sb.url();
    for args in [
        &[
            "-u",
            bench.as_str(),
            "-o",
            "copy-mem",
            "-r",
            "50",
            "--table-name",
            "bench_t",
        ][..],
        &["-u", bench.as_str(), "-o", "ycsb-load", "-r", "20"],
        &["-u", public.as_str(), "-o", "ycsb-load", "-r", "30"],
        &["-u", public.as_str(), "-o", "copy-mem", "-r", "40"],
    ] {
        let (r, s) = run_plain(args).await;
        assert!(r.succeeded(), "{args:?}:\n{s}");
    }
    let all: BTreeSet<String> = [
        "bench.bench_t",
        "bench.usertable",
        "public.usertable",
        "public.test_table",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(tables(&c).await, all);

    // table-cleanup takes --table-name: bench_t goes, nothing else.
    let (r, s) = run_plain(&[
        "-u",
        &bench,
        "-o",
        "table-cleanup",
        "--table-name",
        "bench_t",
    ])
    .await;
    assert!(r.succeeded(), "{s}");
    assert!(s.contains("table \"bench\".\"bench_t\" (50 rows)"), "{s}");
    let mut left = all.clone();
    left.remove("bench.bench_t");
    assert_eq!(tables(&c).await, left, "{s}");

    // cleanup on path bench: bench's usertable goes; public's tables are
    // named as left, with how to reach them.
    let (r, s) = run_plain(&["-u", &bench, "-o", "cleanup"]).await;
    assert!(r.succeeded(), "{s}");
    assert!(
        s.contains("dropped               : table \"bench\".\"usertable\" (20 rows)"),
        "{s}"
    );
    assert!(
        s.contains("left                  : table \"public\".\"usertable\": schema public is not on this connection's search_path (bench)"),
        "{s}"
    );
    left.remove("bench.usertable");
    assert_eq!(tables(&c).await, left, "{s}");

    // A table made under --table-name is the tool's whatever its name:
    // cleanup on the default path takes the rest.
    let (r, s) = run_plain(&[
        "-u",
        &public,
        "-o",
        "copy-mem",
        "-r",
        "10",
        "--table-name",
        "odd name",
    ])
    .await;
    assert!(r.succeeded(), "{s}");
    let (r, s) = run_plain(&["-u", &public, "-o", "cleanup"]).await;
    assert!(r.succeeded(), "{s}");
    assert!(s.contains("table \"public\".\"odd name\" (10 rows)"), "{s}");
    assert_eq!(tables(&c).await, BTreeSet::new(), "{s}");
}

/// oltp-cleanup as before: the tool's sbtest tables go, and a table of
/// sysbench's (unmarked) goes only with --force. It drops every sbtestN
/// the tool made, whatever --tables says now; one it did not make is now
/// left and named (before, the clean-up stopped there with an error,
/// part done).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oltp_cleanup_drops_the_tools_sbtest_tables_and_sysbenchs_only_with_force() {
    let sb = sandbox();
    let c = client(&sb).await;
    let (r, s) = run_args(&sb, &["-o", "oltp-prepare", "--tables", "2", "-r", "100"]).await;
    assert!(r.succeeded(), "{s}");
    // sbtest3 as sysbench's prepare makes it: its DDL, no mark.
    c.batch_execute(&format!(
        "{}; insert into sbtest3 (k, c, pad) values (1, 'c', 'pad')",
        ysql_bench::workload::oltp::create_sql(ysql_bench::db::dialect::Flavor::Postgres, 3, None)
    ))
    .await
    .unwrap();
    let url = sb.url();
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "oltp-cleanup", "--tables", "3"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(tables(&c).await, set(&["sbtest3"]), "{stdout}");
    assert!(
        stdout.contains(
            "left                  : table \"public\".\"sbtest3\": it was not created by ysql-bench"
        ) && stdout.contains("add --force"),
        "{stdout}"
    );
    let out = bin(
        "ysql-bench",
        &["-u", &url, "-o", "oltp-cleanup", "--tables", "3", "--force"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("table \"public\".\"sbtest3\" (1 row), not created by ysql-bench: dropped as --force says"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(tables(&c).await, BTreeSet::new());
}

/// Nothing is dropped with CASCADE: a view of the user's on a table of
/// the tool's keeps both, and the clean-up fails (exit 1) after dropping
/// the rest, saying what it could not drop and why; the clean-ups after
/// it in -o still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_table_another_object_depends_on_is_not_dropped_and_the_cleanup_fails() {
    let sb = sandbox();
    let c = client(&sb).await;
    for args in [
        &["-o", "ycsb-load", "-r", "10"][..],
        &["-o", "copy-mem", "-r", "10"],
    ] {
        let (r, s) = run_args(&sb, args).await;
        assert!(r.succeeded(), "{s}");
    }
    c.batch_execute("create view my_users as select ycsb_key from usertable")
        .await
        .unwrap();
    let out = bin("ysql-bench", &["-u", &sb.url(), "-o", "cleanup"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        stdout.contains("not dropped           : cannot drop table \"public\".\"usertable\": ")
            && stdout.contains("2BP01"),
        "{stdout}"
    );
    assert!(
        text(&out.stderr)
            .contains("error: cleanup failed: cannot drop table \"public\".\"usertable\""),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(tables(&c).await, set(&["usertable"]), "{stdout}");
    assert!(table_exists(&c, "my_users").await);

    // A clean-up that failed does not stop the clean-ups after it.
    let (r, s) = run_args(&sb, &["-o", "copy-mem", "-r", "10"]).await;
    assert!(r.succeeded(), "{s}");
    let out = bin(
        "ysql-bench",
        &["-u", &sb.url(), "-o", "ycsb-cleanup,table-cleanup"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("== table-cleanup =="),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        tables(&c).await,
        set(&["usertable"]),
        "{}",
        text(&out.stdout)
    );
}

/// A clean-up drops tables: an operation after it that needs them is
/// refused before any connection.
#[test]
fn an_operation_after_a_cleanup_is_refused_before_connecting() {
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            "host=192.0.2.1 connect_timeout=30",
            "-o",
            "oltp-cleanup,oltp-prepare",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "oltp-prepare comes after oltp-cleanup, which drops tables: put the clean-ups last"
        ),
        "{err}"
    );
}
