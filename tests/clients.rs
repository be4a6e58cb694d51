//! Several clients, one run (issue 15): three ysql-bench processes with
//! `--clients 3` against one server, started at once as a Kubernetes
//! Indexed Job would start them.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Starts client `index` of a run with `args`, in the background.
fn start_client(url: &str, index: usize, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args(["-u", url, "--client-index", &index.to_string()])
        .args(args)
        .env_remove("YSQLBENCH_URL")
        .env_remove("JOB_COMPLETION_INDEX")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

fn wait_all(children: Vec<Child>) -> Vec<Output> {
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("the client ends"))
        .collect()
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written"))
        .expect("report is JSON")
}

/// The latencies (µs) of the successful units of `operation` in the
/// --latency-log files.
fn logged_latencies(paths: &[std::path::PathBuf], operation: &str) -> Vec<u64> {
    let mut all = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).expect("latency log written");
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            if f[0] == operation && f[6] == "1" {
                all.push(f[3].parse::<u64>().expect("latency_us"));
            }
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn three_clients_load_every_id_once_and_merge_exactly() {
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = 30_001;
    let rows_text = rows.to_string();
    let json: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("c{i}.json")))
        .collect();
    let logs: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("l{i}.csv")))
        .collect();
    let c = client(&sb).await;
    let children: Vec<Child> = (0..3)
        .map(|i| {
            start_client(
                &url,
                i,
                &[
                    "--clients",
                    "3",
                    "--run-id",
                    "three",
                    "-o",
                    "copy-mem,select",
                    "-r",
                    &rows_text,
                    "-t",
                    "2",
                    "--time",
                    "3s",
                    "--seed",
                    "7",
                    "-q",
                    "--json",
                    json[i].to_str().unwrap(),
                    "--latency-log",
                    logs[i].to_str().unwrap(),
                ],
            )
        })
        .collect();
    let outs = wait_all(children);
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "client {i}: {}\n{}",
            text(&o.stderr),
            text(&o.stdout)
        );
    }
    // The load: exactly 0..N-1, each once, over the three clients.
    assert_eq!(facts(&c, "test_table").await, loaded(rows as i64, 24));
    let server_scans = index_scans(&c, "test_table").await;

    let mut selects = 0u64;
    for (i, p) in json.iter().enumerate() {
        let r = report(p);
        assert_eq!(r["cluster"]["client_index"], i);
        assert_eq!(r["cluster"]["clients"], 3);
        assert_eq!(r["cluster"]["run_id"], "three");
        for op in r["operations"].as_array().unwrap() {
            let skew = op["start"]["skew_ms"].as_f64().expect("a start skew");
            assert!(
                skew.abs() < 50.0,
                "client {i} {}: skew {skew} ms",
                op["operation"]
            );
            assert!(op["start"]["at_s"].as_f64().unwrap() > 1.7e9);
        }
        // Each client loaded its third (the first takes the odd row).
        let loaded: u64 = r["operations"][0]["rows"].as_u64().unwrap();
        assert_eq!(loaded, if i == 0 { 10_001 } else { 10_000 }, "client {i}");
        selects += r["operations"][1]["units"].as_u64().unwrap();
    }
    // The three clients started each operation at one instant.
    let at = |p: &Path, op: usize| {
        report(p)["operations"][op]["start"]["at_s"]
            .as_f64()
            .unwrap()
    };
    for op in 0..2 {
        // The same instant, as each read it back (microseconds).
        assert!((at(&json[0], op) - at(&json[1], op)).abs() < 1e-5);
        assert!((at(&json[0], op) - at(&json[2], op)).abs() < 1e-5);
    }

    // The merged report counts what the server counted...
    let merged = dir.path().join("merged.json");
    let args: Vec<&str> = ["merge"]
        .into_iter()
        .chain(json.iter().map(|p| p.to_str().unwrap()))
        .chain(["--json", merged.to_str().unwrap()])
        .collect();
    let out = bin("ysql-bench", &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = report(&merged);
    let sel = &m["operations"][1];
    let units = sel["units"].as_u64().unwrap();
    assert_eq!(units, selects);
    let diff = (units as f64 - server_scans as f64).abs();
    assert!(
        diff <= 0.01 * server_scans as f64,
        "merged {units} selects, the server counted {server_scans}"
    );
    assert_eq!(sel["clients"].as_array().unwrap().len(), 3);
    // ...and its percentiles are those of the three latency logs, within
    // HDR's precision (3 significant digits) and the logs' microseconds.
    let mut lat = logged_latencies(&logs, "select");
    lat.sort_unstable();
    assert_eq!(lat.len() as u64, units);
    for (q, key) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p999")] {
        let rank = ((q * lat.len() as f64).ceil() as usize).clamp(1, lat.len()) - 1;
        let want_ns = lat[rank] as f64 * 1e3;
        let got_ns = sel["latency_ns"][key].as_f64().expect(key);
        assert!(
            (got_ns - want_ns).abs() <= want_ns * 0.002 + 1_500.0,
            "{key}: merged {got_ns} ns, from the logs {want_ns} ns"
        );
    }
    merged_intervals_are_the_logs_intervals(&json, &logs, sel);
}

/// Each merged interval of the select's has the percentiles of the
/// latency-log lines of the units that ended in it: each client's units
/// by the interval of that client they ended in, lined up on the common
/// clock as `merge` lines up the clients' intervals (issue 25).
fn merged_intervals_are_the_logs_intervals(
    json: &[std::path::PathBuf],
    logs: &[std::path::PathBuf],
    merged: &serde_json::Value,
) {
    let ops: Vec<serde_json::Value> = json
        .iter()
        .map(|p| report(p)["operations"][1].clone())
        .collect();
    let begin = |o: &serde_json::Value| {
        o["start"]["at_s"].as_f64().unwrap() + o["warmup_s"].as_f64().unwrap_or(0.0)
    };
    let first = ops.iter().map(begin).fold(f64::INFINITY, f64::min);
    let mut bins: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    // Units whose logged end lies within 2 us of an interval's edge: the
    // log gives due and latency each cut to whole microseconds, so such a
    // unit may be logged one interval off (per interval, those in it or
    // beside it).
    let mut edge: std::collections::BTreeMap<u64, u64> = Default::default();
    for (o, log) in ops.iter().zip(logs) {
        let offset = begin(o) - first;
        let ends: Vec<f64> = o["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["end_s"].as_f64().unwrap())
            .collect();
        let text = std::fs::read_to_string(log).expect("latency log written");
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            if f[0] != "select" || f[6] != "1" {
                continue;
            }
            let (due, latency): (u64, u64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
            // The interval (1 s) it ended in; past the run's end, its last.
            let j = (((due + latency) / 1_000_000) as usize).min(ends.len() - 1);
            let k = ((ends[j] + offset) / 1.0).ceil().max(1.0) as u64 - 1;
            bins.entry(k).or_default().push(latency);
            let within = (due + latency) % 1_000_000;
            if within <= 2 || within >= 999_998 {
                for n in [k.saturating_sub(1), k, k + 1] {
                    *edge.entry(n).or_default() += 1;
                }
            }
        }
    }
    let intervals = merged["intervals"].as_array().unwrap();
    let mut checked = 0;
    for f in intervals {
        let k = f["index"].as_u64().unwrap();
        let mut lat = bins.remove(&k).unwrap_or_default();
        let ops = f["ops"].as_u64().unwrap_or(0);
        let off = edge.get(&k).copied().unwrap_or(0);
        assert!(
            ops.abs_diff(lat.len() as u64) <= off,
            "interval {k}: merged {ops} units, the logs {} ({off} within 2 us of an edge)",
            lat.len()
        );
        if lat.len() < 100 {
            continue;
        }
        lat.sort_unstable();
        for (q, key) in [(0.5, "p50"), (0.99, "p99")] {
            let got_ns = f["latency"][key].as_f64().unwrap();
            let rank = ((q * lat.len() as f64).ceil() as usize).clamp(1, lat.len()) - 1;
            // A unit that ended within a microsecond of an interval's end
            // may be logged in the next: the ranks beside count too.
            let near = lat[rank.saturating_sub(1)..=(rank + 1).min(lat.len() - 1)]
                .iter()
                .any(|&us| (got_ns - us as f64 * 1e3).abs() <= us as f64 * 1e3 * 0.002 + 1_500.0);
            assert!(
                near,
                "interval {k} {key}: merged {got_ns} ns, the logs' {} us",
                lat[rank]
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 2,
        "only {checked} merged intervals had units enough"
    );
    assert!(
        bins.is_empty(),
        "log lines outside the merged intervals: {:?}",
        bins.keys()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_comes_is_named_and_nothing_is_written() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let args = [
        "--clients",
        "3",
        "--run-id",
        "missing",
        "--barrier-timeout",
        "3s",
        "-o",
        "copy-mem,select",
        "-r",
        "1000",
        "--time",
        "1s",
    ];
    let began = Instant::now();
    let outs = wait_all(vec![
        start_client(&url, 0, &args),
        start_client(&url, 1, &args),
    ]);
    let took = began.elapsed();
    assert!(took < Duration::from_secs(15), "took {took:?}");
    for (i, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(1), "client {i}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(err.contains("client(s) 2 of 3"), "client {i}: {err}");
    }
    assert!(!table_exists(&c, "test_table").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn leftover_barrier_rows_of_an_earlier_run_do_not_confuse_a_new_one() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let args = [
        "--clients",
        "2",
        "--run-id",
        "again",
        "--barrier-timeout",
        "20s",
        "-o",
        "copy-mem",
        "-r",
        "2000",
        "-q",
    ];
    // A first run, complete.
    let outs = wait_all(vec![
        start_client(&url, 0, &args),
        start_client(&url, 1, &args),
    ]);
    assert!(outs.iter().all(|o| o.status.success()));
    // The follower of a second run comes first and finds the first run's
    // rows; the leader comes a second later.
    let follower = start_client(&url, 1, &args);
    std::thread::sleep(Duration::from_millis(1500));
    let leader = start_client(&url, 0, &args);
    let outs = wait_all(vec![leader, follower]);
    for o in &outs {
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    assert_eq!(facts(&c, "test_table").await, loaded(2000, 24));
}

/// Issue 29: clients of unequal machines (`-t 1`, `3` and `6`) meet under
/// the run id their common flags give, load exactly 0..N-1 in proportion
/// to their threads, mark the table loaded with the whole count, and their
/// merged selects are what the server counted.
#[tokio::test(flavor = "multi_thread")]
async fn clients_of_unequal_threads_split_by_threads_mark_the_load_and_merge() {
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let rows: u64 = 30_001;
    let rows_text = rows.to_string();
    let threads = [1u64, 3, 6];
    let json: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("c{i}.json")))
        .collect();
    let c = client(&sb).await;
    let children: Vec<Child> = (0..3)
        .map(|i| {
            let t = threads[i].to_string();
            start_client(
                &url,
                i,
                &[
                    "--clients",
                    "3",
                    "-o",
                    "copy-mem,select",
                    "-r",
                    &rows_text,
                    "-t",
                    &t,
                    "--time",
                    "3s",
                    "--seed",
                    "7",
                    "--json",
                    json[i].to_str().unwrap(),
                ],
            )
        })
        .collect();
    let outs = wait_all(children);
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "client {i}: {}\n{}",
            text(&o.stderr),
            text(&o.stdout)
        );
    }
    // Every client saw every client's threads.
    assert!(
        text(&outs[2].stderr).contains("all 3 clients are here, 10 threads in all"),
        "{}",
        text(&outs[2].stderr)
    );
    // The load: exactly 0..N-1 (count, distinct, min, max), each client's
    // share in proportion to its threads.
    assert_eq!(facts(&c, "test_table").await, loaded(rows as i64, 24));
    let server_scans = index_scans(&c, "test_table").await;
    let mut selects = 0u64;
    let mut run_ids = Vec::new();
    for (i, p) in json.iter().enumerate() {
        let r = report(p);
        run_ids.push(r["cluster"]["run_id"].as_str().unwrap().to_string());
        assert_eq!(r["config"]["threads"], threads[i]);
        let share = r["operations"][0]["rows"].as_u64().unwrap();
        let due = rows * threads[i] / 10;
        assert!(
            share.abs_diff(due) <= threads[i],
            "client {i} loaded {share} rows, {due} due"
        );
        selects += r["operations"][1]["units"].as_u64().unwrap();
    }
    assert!(
        run_ids
            .iter()
            .all(|r| r == &run_ids[0] && r.starts_with("ysql-bench-"))
    );
    // The table is marked with the whole count...
    let mark: String = c
        .query_one(
            "select obj_description('test_table'::regclass, 'pg_class')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(mark.ends_with(&format!("loaded {rows} rows")), "{mark}");
    // ...so that a following run does not warn of an unfinished load.
    let after = bin(
        "ysql-bench",
        &[
            "-u", &url, "-o", "select", "-r", &rows_text, "--time", "1s", "-q",
        ],
    );
    assert!(after.status.success(), "{}", text(&after.stderr));
    assert!(
        !text(&after.stderr).contains("did not finish"),
        "{}",
        text(&after.stderr)
    );

    // The merge adds the threads, keeps each client's, and counts what
    // the server counted.
    let merged = dir.path().join("merged.json");
    let args: Vec<&str> = ["merge"]
        .into_iter()
        .chain(json.iter().map(|p| p.to_str().unwrap()))
        .chain(["--json", merged.to_str().unwrap()])
        .collect();
    let out = bin("ysql-bench", &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = report(&merged);
    assert_eq!(m["config"]["threads"], 10);
    let sel = &m["operations"][1];
    assert_eq!(sel["threads"], 10);
    let per: Vec<u64> = sel["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(per, threads);
    let units = sel["units"].as_u64().unwrap();
    assert_eq!(units, selects);
    let diff = (units as f64 - server_scans as f64).abs();
    assert!(
        diff <= 0.01 * server_scans as f64,
        "merged {units} selects, the server counted {server_scans}"
    );
}

/// Issue 29: two clients whose `-r` differ meet (their run id comes only
/// from flags they share), and both stop at once naming the difference,
/// before anything is written.
#[tokio::test(flavor = "multi_thread")]
async fn clients_whose_flags_differ_both_stop_at_once_naming_it() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let args = |rows: &'static str| -> Vec<&'static str> {
        vec![
            "--clients",
            "2",
            "-o",
            "copy-mem,select",
            "-r",
            rows,
            "--time",
            "1s",
        ]
    };
    let began = Instant::now();
    let outs = wait_all(vec![
        start_client(&url, 0, &args("5000")),
        start_client(&url, 1, &args("6000")),
    ]);
    let took = began.elapsed();
    // Not the barrier's minute.
    assert!(took < Duration::from_secs(20), "took {took:?}");
    for (i, o) in outs.iter().enumerate() {
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "client {i}: {err}");
        assert!(
            err.contains("client 1 runs -r 6000, client 0 -r 5000"),
            "client {i}: {err}"
        );
    }
    assert!(!table_exists(&c, "test_table").await);
}

/// Issue 29: a client alone names the clients it cannot see, never
/// itself.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_alone_names_the_missing_ones_not_itself() {
    let sb = sandbox();
    let url = sb.url();
    let args = [
        "--clients",
        "3",
        "--barrier-timeout",
        "2s",
        "-o",
        "copy-mem",
        "-r",
        "100",
    ];
    let outs = wait_all(vec![start_client(&url, 1, &args)]);
    let err = text(&outs[0].stderr);
    assert_eq!(outs[0].status.code(), Some(1), "{err}");
    assert!(err.contains("client(s) 0, 2 of 3 did not arrive"), "{err}");
}

#[test]
fn client_flags_are_checked_before_connecting() {
    let out = bin("ysql-bench", &["-o", "select", "--clients", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--client-index"),
        "{}",
        text(&out.stderr)
    );
    let out = bin(
        "ysql-bench",
        &["-o", "select", "--clients", "3", "--client-index", "3"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not below"),
        "{}",
        text(&out.stderr)
    );
}

/// A report of a short single-client run, for the tests of the saved
/// report commands.
async fn one_report(dir: &Path) -> std::path::PathBuf {
    let sb = sandbox();
    let p = dir.join("one.json");
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            &sb.url(),
            "-o",
            "copy-mem,select",
            "-r",
            "5000",
            "-t",
            "2",
            "--time",
            "2s",
            "-P",
            "0.5",
            "-q",
            "--json",
            p.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    p
}

#[tokio::test(flavor = "multi_thread")]
async fn merge_of_one_report_is_that_report_and_compare_with_itself_shows_no_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = one_report(dir.path()).await;
    let merged = dir.path().join("merged.json");
    let out = bin(
        "ysql-bench",
        &[
            "merge",
            p.to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (a, b) = (report(&p), report(&merged));
    for (x, y) in a["operations"]
        .as_array()
        .unwrap()
        .iter()
        .zip(b["operations"].as_array().unwrap())
    {
        for key in [
            "operation",
            "units",
            "rows",
            "failed",
            "errors",
            "units_per_s",
            "rows_per_s",
            "latency_ns",
            "service_ns",
            "intervals",
            "types",
            "thread_rows",
            "threads",
            "succeeded",
            "statements",
            "checks",
            "hosts",
        ] {
            if key == "types" {
                // Types hold histograms re-encoded: compare their figures.
                for (tx, ty) in x[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(y[key].as_array().unwrap())
                {
                    assert_eq!(tx["units"], ty["units"]);
                    assert_eq!(tx["latency_ns"], ty["latency_ns"]);
                    assert_eq!(tx["intervals"], ty["intervals"]);
                }
                continue;
            }
            assert_eq!(x[key], y[key], "{key} of {}", x["operation"]);
        }
        let dw = x["wallclock_s"].as_f64().unwrap() - y["wallclock_s"].as_f64().unwrap();
        assert!(dw.abs() < 1e-9);
    }

    let out = bin(
        "ysql-bench",
        &["compare", p.to_str().unwrap(), p.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("select"), "{t}");
    assert!(t.contains("no change"), "{t}");
    for line in t.lines().filter(|l| l.contains('%')) {
        assert!(line.contains("+0.0%"), "{line}");
    }

    let out = bin("ysql-bench", &["show", p.to_str().unwrap(), "-p"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("operation             : select"), "{t}");
    assert!(t.contains("latency per query"), "{t}");
    assert!(t.contains("histogram is per query"), "{t}");
}

/// Issue 22: two runs that differed in sslmode and driver compared as
/// "+55.7% beyond noise" without a word about it. The keys that differ
/// come first, before any figure; the units are plural as English makes
/// them (not "querys", "batchs").
#[tokio::test(flavor = "multi_thread")]
async fn compare_names_the_configuration_that_differs_before_the_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = one_report(dir.path()).await;
    let base = report(&p);
    let mut other = base.clone();
    other["config"]["sslmode"] = serde_json::json!("require");
    let select = other["operations"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|o| o["operation"] == "select")
        .expect("a select in the report");
    let driver = if select["driver"] == "lean" {
        "tokio-postgres"
    } else {
        "lean"
    };
    select["driver"] = serde_json::json!(driver);
    let q = dir.path().join("other.json");
    std::fs::write(&q, other.to_string()).unwrap();
    let out = bin(
        "ysql-bench",
        &["compare", p.to_str().unwrap(), q.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    assert!(
        lines[0].starts_with("configuration differs in 2 points"),
        "{t}"
    );
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not in\n{t}"))
    };
    let sslmode = at("sslmode");
    let old_mode = base["config"]["sslmode"].as_str().unwrap();
    assert!(
        lines[sslmode].contains(&format!("base {old_mode}, new require")),
        "{t}"
    );
    let drv = at("select driver");
    assert!(lines[drv].contains(&format!("new {driver}")), "{t}");
    let figures = at("select (queries)");
    assert!(sslmode < figures && drv < figures, "{t}");
    assert!(at("copy-mem (batches)") < figures, "{t}");
    for wrong in ["querys", "batchs"] {
        assert!(!t.contains(wrong), "{t}");
    }

    // The same set-up says so; a seed alone is said as such.
    let out = bin(
        "ysql-bench",
        &["compare", p.to_str().unwrap(), p.to_str().unwrap()],
    );
    assert!(text(&out.stdout).starts_with("configuration: the same\n"));
    let mut reseeded = base.clone();
    reseeded["config"]["seed"] = serde_json::json!("12345");
    let r = dir.path().join("reseeded.json");
    std::fs::write(&r, reseeded.to_string()).unwrap();
    let out = bin(
        "ysql-bench",
        &["compare", p.to_str().unwrap(), r.to_str().unwrap()],
    );
    let t = text(&out.stdout);
    assert!(
        t.starts_with("configuration: the same but for the seed"),
        "{t}"
    );

    // A seed that differs along with another point is listed, and the head
    // says so: the count and the lines below it agree.
    let mut threads = reseeded.clone();
    let more = base["config"]["threads"]
        .as_u64()
        .expect("threads in the config")
        + 1;
    threads["config"]["threads"] = serde_json::json!(more);
    let r = dir.path().join("threads.json");
    std::fs::write(&r, threads.to_string()).unwrap();
    let out = bin(
        "ysql-bench",
        &["compare", p.to_str().unwrap(), r.to_str().unwrap()],
    );
    let t = text(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    assert!(
        lines[0].starts_with("configuration differs in 1 point (and the seed): "),
        "{t}"
    );
    let listed: Vec<&str> = lines[1..]
        .iter()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(listed.len(), 2, "{t}");
    assert!(
        listed.contains(&"seed") && listed.contains(&"threads"),
        "{t}"
    );
}

/// A merged report the disk cannot hold is an error, not a cut JSON said
/// to be written with exit 0: its last buffer is flushed with the error
/// seen. The disk is made full by a file size limit one byte short of the
/// report (SIGXFSZ ignored, so that the write fails with EFBIG instead of
/// killing the process), which only the last flush reaches.
#[tokio::test(flavor = "multi_thread")]
async fn a_merged_json_the_disk_cannot_hold_is_an_error() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let p = one_report(dir.path()).await;
    let merged = dir.path().join("merged.json");
    let args = [
        "merge",
        p.to_str().unwrap(),
        "--json",
        merged.to_str().unwrap(),
    ];
    let out = bin("ysql-bench", &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let size = std::fs::metadata(&merged).unwrap().len();
    std::fs::remove_file(&merged).unwrap();
    let limit = (size - 1) as libc::rlim_t;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ysql-bench"));
    cmd.args(args).env_remove("YSQLBENCH_URL");
    // SAFETY: signal and setrlimit are async-signal-safe and touch only
    // the child, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("the binary runs");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("error: cannot write {}", merged.display())),
        "{err}"
    );
    assert!(!err.contains(">> wrote"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn merge_refuses_reports_of_different_runs_and_bad_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = one_report(dir.path()).await;
    // The same run with another row count is another run.
    let mut other = report(&p);
    other["config"]["rows"] = serde_json::json!(6000);
    let q = dir.path().join("other.json");
    std::fs::write(&q, other.to_string()).unwrap();
    let out = bin(
        "ysql-bench",
        &["merge", p.to_str().unwrap(), q.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("rows is 5000 in one and 6000"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Not a report.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"tool\": 1}").unwrap();
    for cmd in [
        &["show", bad.to_str().unwrap()][..],
        &["merge", bad.to_str().unwrap()][..],
    ] {
        let out = bin("ysql-bench", cmd);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("is not a ysql-bench --json report"));
    }
    let out = bin(
        "ysql-bench",
        &["compare", p.to_str().unwrap(), "/nonexistent.json"],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn inserts_of_two_clients_running_a_mix_never_collide() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let json: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("y{i}.json")))
        .collect();
    let children: Vec<Child> = (0..2)
        .map(|i| {
            start_client(
                &url,
                i,
                &[
                    "--clients",
                    "2",
                    "--run-id",
                    "ycsb",
                    "-o",
                    "ycsb-load,ycsb-d",
                    "-r",
                    "2001",
                    "-t",
                    "2",
                    "--time",
                    "2s",
                    "-q",
                    "--json",
                    json[i].to_str().unwrap(),
                ],
            )
        })
        .collect();
    for (i, o) in wait_all(children).iter().enumerate() {
        assert!(o.status.success(), "client {i}: {}", text(&o.stderr));
    }
    let mut inserted = 0;
    for p in &json {
        let r = report(p);
        let mix = &r["operations"][1];
        assert_eq!(mix["failed"], 0, "{}", mix["errors"]);
        for t in mix["types"].as_array().unwrap() {
            if t["name"] == "insert" {
                inserted += t["units"].as_i64().unwrap();
            }
        }
    }
    assert!(inserted > 0);
    let n: i64 = c
        .query_one("select count(*) from usertable", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2001 + inserted);
}

/// The barrier itself, three clients in one process: a follower's note
/// reaches the leader at `gather`, and the note of the leader's release
/// reaches every follower (what a `--find-max` of several clients is
/// built on); a release without a note hands nothing, and each meeting's
/// note is its own.
#[tokio::test(flavor = "multi_thread")]
async fn a_release_hands_the_leaders_note_to_every_follower() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use ysql_bench::cluster::{ClusterPlan, Gate, Member};
    use ysql_bench::db::endpoint::Endpoint;
    use ysql_bench::db::tls::Tls;
    use ysql_bench::runner::StartBarrier;

    let sb = sandbox();
    let whole = Endpoint::whole(&sb.config(), None);
    let plan = |index: usize| ClusterPlan {
        clients: 3,
        index,
        run_id: "notes".to_string(),
        barrier_timeout: Duration::from_secs(30),
        run_seed: 1,
        me: Member {
            index,
            threads: 1,
            client_rate: None,
            host: "here".to_string(),
            version: "test".to_string(),
        },
        terms: Vec::new(),
        whole_rate: None,
        threads_of: Vec::new(),
    };
    let open = |index: usize| {
        let whole = whole.clone();
        let plan = plan(index);
        async move {
            let pool = ysql_bench::db::connect::pool(&whole, 3, &Tls::Plain).unwrap();
            Gate::open(plan, pool, whole, Arc::new(AtomicBool::new(false)))
                .await
                .unwrap()
        }
    };
    // The leader opens first, so that the followers find its run.
    let leader = Arc::new(open(0).await);
    let followers = [Arc::new(open(1).await), Arc::new(open(2).await)];
    let mut heard = Vec::new();
    for f in &followers {
        let f = f.clone();
        heard.push(tokio::spawn(async move {
            f.exchange().await.unwrap();
            let mine = format!("figures of {}", f.plan.index);
            let first = f.gather("step:1", &mine).await.unwrap();
            let second = f.gather("step:2", "again").await.unwrap();
            (first, second)
        }));
    }
    let members = leader.exchange().await.unwrap();
    assert_eq!(members.len(), 3);
    let notes = leader.gather("step:1", "").await.unwrap();
    assert_eq!(
        notes,
        vec![
            (1, Some("figures of 1".to_string())),
            (2, Some("figures of 2".to_string()))
        ]
    );
    // The trait's release (the gate's own takes a start instant).
    StartBarrier::release(&*leader, "step:1", Some("next: 240/s"))
        .await
        .unwrap();
    let notes = leader.gather("step:2", "").await.unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    StartBarrier::release(&*leader, "step:2", None)
        .await
        .unwrap();
    for h in heard {
        let (first, second) = h.await.unwrap();
        assert_eq!(first, vec![(0, Some("next: 240/s".to_string()))]);
        assert_eq!(second, vec![(0, None)]);
    }
    leader.close().await;
}

/// Issue 29: a client per region gives its own `--topology-keys` (the
/// barrier lets them differ), so `merge` takes their reports too, and the
/// merged configuration lists each client's topology.
#[tokio::test(flavor = "multi_thread")]
async fn reports_of_clients_with_their_own_topology_keys_merge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = one_report(dir.path()).await;
    let mut paths = Vec::new();
    for (i, zone) in ["aws.us-east-1.us-east-1a:1", "aws.us-west-2.*:1"]
        .iter()
        .enumerate()
    {
        let mut r = report(&p);
        r["config"]["topology"] = serde_json::json!(format!("only-primary, topology {zone}"));
        let q = dir.path().join(format!("region{i}.json"));
        std::fs::write(&q, r.to_string()).unwrap();
        paths.push(q);
    }
    let merged = dir.path().join("merged.json");
    let out = bin(
        "ysql-bench",
        &[
            "merge",
            paths[0].to_str().unwrap(),
            paths[1].to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        report(&merged)["config"]["topology"],
        "only-primary, topology aws.us-east-1.us-east-1a:1; only-primary, topology aws.us-west-2.*:1"
    );
}

/// The builtins read `:scale` from pgbench_branches in their set-up, as
/// pgbench does (and then every script of the run has it); every client
/// of a run does so, not the leader alone: a follower that skipped it
/// had `-s`'s scale, 1 by default, and drew accounts from that range.
#[tokio::test(flavor = "multi_thread")]
async fn every_client_of_a_builtin_script_reads_the_scale_from_the_tables() {
    let sb = sandbox();
    let url = sb.url();
    let c = client(&sb).await;
    let out = bin("ysql-bench", &["-u", &url, "-o", "pgbench-init", "-s", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    c.batch_execute("create table seen (scale int)")
        .await
        .unwrap();
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("seen.sql");
    std::fs::write(&script, "INSERT INTO seen VALUES (:scale);\n").unwrap();
    let script = format!("{}@1", script.display());
    let children: Vec<Child> = (0..2)
        .map(|i| {
            start_client(
                &url,
                i,
                &[
                    "--clients",
                    "2",
                    "--run-id",
                    "scale",
                    "--builtin",
                    "select-only@0",
                    "--script",
                    &script,
                    "-t",
                    "1",
                    "--time",
                    "1s",
                    "-q",
                ],
            )
        })
        .collect();
    for (i, o) in wait_all(children).iter().enumerate() {
        assert!(o.status.success(), "client {i}: {}", text(&o.stderr));
    }
    let rows = c
        .query("select scale, count(*) from seen group by scale", &[])
        .await
        .unwrap();
    let seen: Vec<(i32, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(seen.len(), 1, "scales seen: {seen:?}");
    assert_eq!(seen[0].0, 2, "scales seen: {seen:?}");
}
