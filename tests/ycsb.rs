//! YCSB's core workloads against a real server, counted on the server.
//!
//! What the tool says it did is checked against what PostgreSQL counted
//! (pg_stat_user_tables, a trigger that logs every updated key, the rows
//! in usertable), not against the tool's own figures.

mod common;
use common::*;

use tokio_postgres::Client;
use ysql_bench::RunReport;
use ysql_bench::db::sandbox::Sandbox;

const RECORDS: u64 = 20_000;

/// usertable loaded with RECORDS records of 10 fields of 20 characters
/// (small fields: these tests are about keys and counts).
async fn loaded(sb: &Sandbox) -> Client {
    let n = RECORDS.to_string();
    let (r, s) = run_args(
        sb,
        &[
            "-o",
            "ycsb-load",
            "-r",
            &n,
            "-t",
            "2",
            "--ycsb-field-length",
            "20",
            "--seed",
            "7",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let c = client(sb).await;
    let count: i64 = c
        .query_one("select count(*) from usertable", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count as u64, RECORDS, "{s}");
    c
}

/// The server's counts of usertable once the run's sessions have flushed
/// their statistics: (index scans, rows updated, rows inserted).
async fn server_counts(c: &Client) -> (i64, i64, i64) {
    let scans = index_scans(c, "usertable").await;
    let row = c
        .query_one(
            "select n_tup_upd, n_tup_ins from pg_stat_user_tables where relname = 'usertable'",
            &[],
        )
        .await
        .unwrap();
    (scans, row.get(0), row.get(1))
}

fn type_ops(r: &RunReport, op: usize, name: &str) -> u64 {
    r.operations[op]
        .types
        .iter()
        .find(|t| t.name == name)
        .map_or(0, |t| t.stats.ops)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_a_is_half_reads_half_updates_on_the_server_with_scrambled_zipfian_keys() {
    let sb = sandbox();
    let c = loaded(&sb).await;
    // Every updated key, as the server saw it.
    c.batch_execute(
        "create table hits (k text);
         create function log_hit() returns trigger language plpgsql as
           'begin insert into hits values (new.ycsb_key); return new; end';
         create trigger log_hit after update on usertable
           for each row execute function log_hit();",
    )
    .await
    .unwrap();
    let (scans0, upd0, _) = server_counts(&c).await;
    let n = RECORDS.to_string();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "ycsb-a",
            "-r",
            &n,
            "-t",
            "4",
            "--time",
            "6s",
            "--seed",
            "42",
            "--ycsb-field-length",
            "20",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let (scans, upd, _) = server_counts(&c).await;
    let updates = upd - upd0;
    // Each read and each update looks its key up in the primary key once.
    let reads = scans - scans0 - updates;
    let total = (reads + updates) as f64;
    assert!(total > 3000.0, "too few operations to judge: {total}\n{s}");
    let share = reads as f64 / total;
    assert!((0.47..=0.53).contains(&share), "reads {share}\n{s}");
    // The tool's counts per type are the server's.
    assert_eq!(type_ops(&r, 0, "read") as i64, reads, "{s}");
    assert_eq!(type_ops(&r, 0, "update") as i64, updates, "{s}");
    assert_eq!(r.operations[0].total.ops as i64, reads + updates, "{s}");
    // The hottest key of a scrambled zipfian over 10^10 items takes about
    // 1/zeta(10^10, 0.99) = 3.8% of the operations; a plain zipfian over
    // 20000 keys would give it about 9%.
    let hottest: i64 = c
        .query_one(
            "select count(*) from hits group by k order by count(*) desc limit 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let logged: i64 = c
        .query_one("select count(*) from hits", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(logged, updates);
    let top = hottest as f64 / logged as f64;
    eprintln!(
        "server: {reads} reads, {updates} updates (reads {share:.4}); hottest key {top:.4} of updates"
    );
    assert!(
        (0.030..=0.050).contains(&top),
        "hottest key share {top}\n{s}"
    );
    // And it is not record 0's key at the low end of the key space but
    // the hash of the zipfian's first item.
    let key: String = c
        .query_one(
            "select k from hits group by k order by count(*) desc limit 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let expect = format!(
        "user{}",
        ysql_bench::workload::keys::fnv1a_64(ysql_bench::workload::keys::fnv1a_64(0) % RECORDS)
    );
    assert_eq!(key, expect, "{s}");
    // The summary reads per type, as YCSB's does.
    assert!(
        s.contains("[read]") && s.contains("[update] latency"),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_of_ycsb_d_and_e_never_collide_across_workers_or_reruns() {
    let sb = sandbox();
    let c = loaded(&sb).await;
    let n = RECORDS.to_string();
    let mut inserted = 0;
    for op in ["ycsb-d", "ycsb-d", "ycsb-e"] {
        let (r, s) = run_args(
            &sb,
            &[
                "-o",
                op,
                "-r",
                &n,
                "-t",
                "4",
                "--time",
                "2s",
                "--ycsb-field-length",
                "20",
            ],
        )
        .await;
        // A duplicate key would be a failed insert (23505).
        assert!(r.succeeded(), "{op}:\n{s}");
        // latest reads only records whose inserts, and every earlier
        // one's, are done: none is missing.
        assert_eq!(r.operations[0].total.missing, 0, "{op}:\n{s}");
        let ins = type_ops(&r, 0, "insert");
        assert!(ins > 5, "{op}: {ins} inserts\n{s}");
        inserted += ins;
        if op == "ycsb-e" {
            assert!(type_ops(&r, 0, "scan") > 0, "{s}");
            assert_eq!(r.operations[0].types.len(), 2, "{s}");
        }
    }
    let count: i64 = c
        .query_one("select count(*) from usertable", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count as u64, RECORDS + inserted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_ycsb_a_reports_each_type_in_every_format() {
    let sb = sandbox();
    let _c = loaded(&sb).await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let csv = dir.path().join("run.csv");
    let n = RECORDS.to_string();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "ycsb-a",
            "-r",
            &n,
            "-t",
            "2",
            "--rate",
            "400",
            "--time",
            "3s",
            "--ycsb-field-length",
            "20",
            "--zipf-theta",
            "0.8",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--graph",
            "--graph-dir",
            dir.path().to_str().unwrap(),
            "-p",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    // Summary: each type's percentiles, latency and service time.
    for ty in ["read", "update"] {
        assert!(s.contains(&format!("[{ty}] latency")), "{s}");
        assert!(s.contains(&format!("[{ty}] service")), "{s}");
        assert!(s.contains(&format!("histogram of [{ty}]")), "{s}");
    }
    // JSON: types[] with the figures and histograms of each.
    let text = std::fs::read_to_string(&json).unwrap();
    let doc: ysql_bench::stats::record::RunRecord = serde_json::from_str(&text).unwrap();
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    let op = &doc.operations[0];
    // --zipf-theta reaches the mix's own zipfian, and both reports say so.
    let keys = "keys zipfian (scrambled, theta 0.8)";
    assert!(op.workload.contains(keys), "{}", op.workload);
    assert!(s.contains(keys), "{s}");
    let names: Vec<&str> = op.types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read", "update"]);
    let sum: u64 = op.types.iter().map(|t| t.figures.ops).sum();
    assert_eq!(sum, op.figures.ops);
    for (i, t) in op.types.iter().enumerate() {
        // As written: the README's fields, the histogram decodable alone.
        let w = &raw["operations"][0]["types"][i];
        assert_eq!(w["units"].as_u64(), Some(t.figures.ops), "{w}");
        assert!(t.figures.ops > 100, "{t:?}");
        assert!(w["latency_ns"]["p99"].as_u64() >= w["latency_ns"]["p50"].as_u64());
        let h = ysql_bench::stats::saved::decode_histogram(
            w["histograms"]["latency"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(h.len(), t.figures.ops);
        // As read back: the same histogram.
        assert_eq!(t.figures.latency.len(), t.figures.ops);
        let per_interval: u64 = t.intervals.iter().map(|i| i.ops).sum();
        assert_eq!(per_interval, t.figures.ops);
    }
    // CSV: a row per interval per type, and one for all.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header = rdr.headers().unwrap().clone();
    let ty_col = header
        .iter()
        .position(|h| h == "type")
        .expect("type column");
    let count_col = header.iter().position(|h| h == "count").unwrap();
    let mut by_type = std::collections::BTreeMap::<String, u64>::new();
    for rec in rdr.records() {
        let rec = rec.unwrap();
        *by_type.entry(rec[ty_col].to_string()).or_default() +=
            rec[count_col].parse::<u64>().unwrap();
    }
    assert_eq!(by_type.get("all"), Some(&op.figures.ops), "{text}");
    assert_eq!(by_type.get("read"), Some(&op.types[0].figures.ops));
    assert_eq!(by_type.get("update"), Some(&op.types[1].figures.ops));
    // PNG: the throughput picture has a line per type beside the total.
    let throughput = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("ycsb-a-throughput.png"))
        .expect("a throughput picture");
    let decoder = png::Decoder::new(std::fs::File::open(&throughput).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    // Each type's line in its own colour, beside the total's blue and red.
    let pixels: std::collections::HashSet<[u8; 3]> = buf[..info.buffer_size()]
        .chunks(3)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    for (i, c) in ysql_bench::report::plot::TYPE_COLORS[..2]
        .iter()
        .enumerate()
    {
        assert!(
            pixels.contains(&[c.0, c.1, c.2]),
            "no line of type {i} in {throughput:?}"
        );
    }
    // `all` in one colour in both panels (issue 22: it was blue over the
    // rates and red over the p99), where the total's blue and red were.
    let all = ysql_bench::report::plot::ALL_COLOR;
    let width = info.width as usize;
    let rows = buf[..info.buffer_size()]
        .chunks(width * 3)
        .collect::<Vec<_>>();
    let (top, bottom) = rows.split_at(rows.len() / 2);
    for half in [top, bottom] {
        assert!(
            half.iter()
                .any(|r| r.chunks(3).any(|p| p == [all.0, all.1, all.2])),
            "no line of all in a half of {throughput:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_proportions_and_key_distributions_are_followed() {
    let sb = sandbox();
    let _c = loaded(&sb).await;
    let n = RECORDS.to_string();
    let (r, s) = run_args(
        &sb,
        &[
            "-o",
            "ycsb-b",
            "-r",
            &n,
            "-t",
            "2",
            "--time",
            "2s",
            "--ycsb-field-length",
            "20",
            "--ycsb-proportions",
            "scan=0.5,read-modify-write=0.5",
            "--ycsb-rmw-txn",
            "--key-distribution",
            "uniform",
            "--no-prepared",
        ],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let names: Vec<&str> = r.operations[0].types.iter().map(|t| t.name).collect();
    assert_eq!(names, ["scan", "read-modify-write"], "{s}");
    assert_eq!(r.operations[0].total.missing, 0, "{s}");
    // select with a skewed distribution still finds every row.
    let (r, s) = run_args(&sb, &["-o", "copy-mem", "-r", "5000"]).await;
    assert!(r.succeeded(), "{s}");
    for dist in ["zipfian", "hotspot", "sequential", "latest"] {
        let (r, s) = run_args(
            &sb,
            &[
                "-o",
                "select",
                "-r",
                "5000",
                "--time",
                "1s",
                "--key-distribution",
                dist,
            ],
        )
        .await;
        assert!(r.succeeded(), "{dist}: {s}");
        assert!(r.operations[0].total.ops > 100, "{dist}: {s}");
        assert_eq!(r.operations[0].total.missing, 0, "{dist}: {s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_inserts_past_the_holes_failed_inserts_left() {
    let sb = sandbox();
    let c = loaded(&sb).await;
    let n = RECORDS.to_string();
    let args = [
        "-o",
        "ycsb-d",
        "-r",
        &n,
        "-t",
        "2",
        "--time",
        "1s",
        "--ycsb-field-length",
        "20",
    ];
    let (r, s) = run_args(&sb, &args).await;
    assert!(r.succeeded(), "{s}");
    let inserted = r.operations[0].types[1].stats.ops;
    assert!(inserted > 3, "{s}");
    // Two holes just below the last record inserted, as failed inserts
    // in flight would leave them.
    let last = RECORDS + inserted - 1;
    for hole in [last - 1, last - 2] {
        let key = format!("user{}", ysql_bench::workload::keys::fnv1a_64(hole));
        let n = c
            .execute("delete from usertable where ycsb_key = $1", &[&key])
            .await
            .unwrap();
        assert_eq!(n, 1);
    }
    let (r, s) = run_args(&sb, &args).await;
    assert!(r.succeeded(), "a rerun collided with an existing key:\n{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_mix_that_writes_is_refused_on_a_table_the_tool_did_not_create() {
    let sb = sandbox();
    let c = loaded(&sb).await;
    c.batch_execute("comment on table usertable is 'my precious data'")
        .await
        .unwrap();
    let n = RECORDS.to_string();
    let args = [
        "-o",
        "ycsb-c",
        "-r",
        &n,
        "--time",
        "1s",
        "--ycsb-proportions",
        "update=1",
    ];
    let e = ysql_bench::run(plan(&sb, &args), &mut Vec::new())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("--force"), "{e}");
    // Reading it is allowed.
    let (r, s) = run_args(&sb, &["-o", "ycsb-c", "-r", &n, "--time", "1s"]).await;
    assert!(r.succeeded(), "{s}");
}

/// Issue 22: a YCSB mix on a database without usertable created it empty
/// and ran with every record missing, exit 0 (on an empty one it warned
/// and ran). Now both are refused as select's table is, exit 2, with the
/// load to put first, and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ycsb_mix_on_a_missing_or_empty_usertable_is_refused() {
    let sb = sandbox();
    let c = client(&sb).await;
    let refused = |args: &'static [&'static str]| {
        let plan = plan(&sb, args);
        async move {
            let mut out = Vec::new();
            match ysql_bench::run(plan, &mut out).await {
                Ok(_) => panic!("{args:?} ran:\n{}", String::from_utf8_lossy(&out)),
                Err(e) => {
                    assert_eq!(e.exit_code(), 2, "{e}");
                    e.to_string()
                }
            }
        }
    };
    let why = refused(&["-o", "ycsb-a", "-r", "100", "--time", "300ms"]).await;
    assert!(
        why.starts_with("table \"usertable\" does not exist, and ycsb-a needs its rows"),
        "{why}"
    );
    assert!(why.contains("e.g. -o ycsb-load,ycsb-a -r 100 "), "{why}");
    assert!(!table_exists(&c, "usertable").await, "{why}");

    let (r, s) = run_args(&sb, &["-o", "ycsb-load", "-r", "100"]).await;
    assert!(r.succeeded(), "{s}");
    c.batch_execute("truncate usertable").await.unwrap();
    let why = refused(&["-o", "ycsb-c", "-r", "100", "--time", "300ms"]).await;
    assert!(why.starts_with("table \"usertable\" is empty"), "{why}");
}
