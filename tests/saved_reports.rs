//! Reports written by an earlier version still load, show, merge and
//! compare (issue 23: the saved report became the serialised run record;
//! what was written before must still read).
//!
//! `tests/fixtures/reports/` holds `--json` reports written by ysql-bench
//! 0.2.0 (commit 2f4f3d6) against a throwaway PostgreSQL: a copy-mem and
//! select run, a YCSB load and mix, a sysbench OLTP run, a TPC-C load,
//! run and check with one warehouse, and the two clients of a `--clients
//! 2` TPC-C run. `v0.2.0/` holds what that version printed and wrote from
//! them: the live summaries, `show`, `merge` (JSON, CSV, summary) and
//! `compare`. No server is needed here.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name)
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).expect("fixture reads")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report reads")).expect("JSON")
}

const REPORTS: [&str; 6] = [
    "select.json",
    "ycsb.json",
    "oltp.json",
    "tpcc.json",
    "tpcc-c0.json",
    "tpcc-c1.json",
];

#[test]
fn old_reports_show_every_operation() {
    for name in REPORTS {
        let path = fixture(name);
        let out = bin("ysql-bench", &["show", path.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let shown = text(&out.stdout);
        let report = json(&path);
        assert!(
            shown.contains(&report["config"]["seed"].as_str().unwrap().to_string()),
            "{name}: no seed in\n{shown}"
        );
        for op in report["operations"].as_array().unwrap() {
            let name_of = op["operation"].as_str().unwrap();
            assert!(
                shown.contains(name_of),
                "{name}: {name_of} missing in\n{shown}"
            );
            // The units counted, as the summary and show print them.
            let units = op["units"].as_u64().unwrap();
            if units > 0 {
                assert!(
                    shown.contains(&units.to_string()),
                    "{name}: {units} units of {name_of} missing in\n{shown}"
                );
            }
        }
        // With histograms too.
        let out = bin(
            "ysql-bench",
            &["show", path.to_str().unwrap(), "--print-histogram"],
        );
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    }
}

/// The figures a merge makes of the old clients' reports are those the
/// old version made: counts, percentiles from the summed histograms, the
/// intervals on the common clock, and TPC-C's tpmC, efficiency over both
/// clients' warehouses and the 90th percentile limits.
#[test]
fn old_client_reports_merge_to_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (merged, csv) = (dir.path().join("m.json"), dir.path().join("m.csv"));
    let out = bin(
        "ysql-bench",
        &[
            "merge",
            fixture("tpcc-c0.json").to_str().unwrap(),
            fixture("tpcc-c1.json").to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (new, old) = (json(&merged), json(&fixture("v0.2.0/merged-tpcc.json")));
    assert_eq!(new["cluster"], old["cluster"]);
    let (n, o) = (&new["operations"][0], &old["operations"][0]);
    for key in [
        "units",
        "rows",
        "failed",
        "threads",
        "wallclock_s",
        "units_per_s",
        "latency_ns",
        "service_ns",
        "start",
        "intervals",
    ] {
        assert_eq!(n[key], o[key], "{key}");
    }
    // Each client's figures as before; newer reports add each client's
    // threads and rows beside them.
    let (nc, oc) = (
        n["clients"].as_array().unwrap(),
        o["clients"].as_array().unwrap(),
    );
    assert_eq!(nc.len(), oc.len(), "clients");
    for (a, b) in nc.iter().zip(oc) {
        for (key, value) in b.as_object().unwrap() {
            assert_eq!(&a[key], value, "client {}: {key}", b["client"]);
        }
    }
    for (a, b) in n["types"]
        .as_array()
        .unwrap()
        .iter()
        .zip(o["types"].as_array().unwrap())
    {
        for key in ["name", "units", "units_per_s", "latency_ns", "intervals"] {
            assert_eq!(a[key], b[key], "type {}: {key}", b["name"]);
        }
    }
    let close = |a: &serde_json::Value, b: &serde_json::Value, what: &str| {
        let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "{what}: {a} vs {b}"
        );
    };
    let old_metrics = o["metrics"].as_object().unwrap();
    assert_eq!(
        n["metrics"].as_object().unwrap().len(),
        old_metrics.len(),
        "{}",
        n["metrics"]
    );
    for (k, v) in old_metrics {
        close(&n["metrics"][k], v, k);
    }
    for (k, v) in o["interval_metrics"].as_object().unwrap() {
        for (i, (a, b)) in n["interval_metrics"][k]
            .as_array()
            .unwrap()
            .iter()
            .zip(v.as_array().unwrap())
            .enumerate()
        {
            close(a, b, &format!("{k}[{i}]"));
        }
    }
    // The merged CSV has the live CSV's columns, and the merged
    // intervals' counts.
    let live_header = fixture_text("v0.2.0/tpcc.csv")
        .lines()
        .next()
        .unwrap()
        .to_string();
    let merged_csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(merged_csv.lines().next().unwrap(), live_header);
    let all_rows: Vec<&str> = merged_csv
        .lines()
        .filter(|l| l.split(',').nth(17) == Some("all"))
        .collect();
    let counts: Vec<u64> = all_rows
        .iter()
        .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    let old_counts: Vec<u64> = fixture_text("v0.2.0/merged-tpcc.csv")
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts, old_counts);
    // tpmC per merged interval, as the old merge wrote it.
    let tpmc: Vec<&str> = all_rows
        .iter()
        .map(|l| l.split(',').nth(22).unwrap())
        .collect();
    let old_tpmc: Vec<String> = fixture_text("v0.2.0/merged-tpcc.csv")
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(12).unwrap().to_string())
        .collect();
    assert_eq!(tpmc, old_tpmc);
    // The merged intervals' percentiles are not known: empty cells, not a
    // made-up 0; min and max are.
    for row in &all_rows {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(&cells[9..14], ["", "", "", "", ""], "{row}");
        assert!(cells[14].parse::<f64>().unwrap() > 0.0, "{row}");
    }
}

/// A single report merges into itself (no `--clients`), and every
/// fixture of one run merges with itself: twice the units.
#[test]
fn old_reports_merge_with_themselves() {
    for name in ["select.json", "ycsb.json", "oltp.json", "tpcc.json"] {
        let dir = tempfile::tempdir().unwrap();
        let merged = dir.path().join("m.json");
        let p = fixture(name);
        let out = bin(
            "ysql-bench",
            &[
                "merge",
                p.to_str().unwrap(),
                p.to_str().unwrap(),
                "--json",
                merged.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let (m, one) = (json(&merged), json(&p));
        for (a, b) in m["operations"]
            .as_array()
            .unwrap()
            .iter()
            .zip(one["operations"].as_array().unwrap())
        {
            assert_eq!(
                a["units"].as_u64().unwrap(),
                2 * b["units"].as_u64().unwrap(),
                "{name} {}",
                b["operation"]
            );
        }
        // The merged report shows and compares too.
        let out = bin("ysql-bench", &["show", merged.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let out = bin(
            "ysql-bench",
            &["compare", p.to_str().unwrap(), merged.to_str().unwrap()],
        );
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    }
}

/// `compare` of old reports prints what the old version printed.
#[test]
fn old_reports_compare_as_before() {
    for (base, new, expected) in [
        ("select.json", "select.json", "v0.2.0/compare-select.txt"),
        ("tpcc-c0.json", "tpcc-c1.json", "v0.2.0/compare-tpcc.txt"),
    ] {
        let out = bin(
            "ysql-bench",
            &[
                "compare",
                fixture(base).to_str().unwrap(),
                fixture(new).to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), fixture_text(expected), "{base} {new}");
    }
}

/// `merge` prints the merged record's rates (over the window all
/// clients shared, as its JSON and `compare` have them), the
/// operation's and each type's, not its units over the whole span.
#[test]
fn merge_prints_the_rates_of_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("m.json");
    let out = bin(
        "ysql-bench",
        &[
            "merge",
            fixture("tpcc-c0.json").to_str().unwrap(),
            fixture("tpcc-c1.json").to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let op = &json(&merged)["operations"][0];
    let rate = op["units_per_s"].as_f64().unwrap();
    // The old merge's rate: units over the shared window.
    assert_eq!(format!("{rate:.1}"), "395.0");
    assert!(
        shown.contains(&format!("transactions/s        : {rate:.1}\n")),
        "{shown}"
    );
    for ty in op["types"].as_array().unwrap() {
        let (name, rate) = (
            ty["name"].as_str().unwrap(),
            ty["units_per_s"].as_f64().unwrap(),
        );
        let label = format!("[{name}]");
        let line = shown
            .lines()
            .find(|l| l.starts_with(&format!("{label:<22}:")))
            .unwrap_or_else(|| panic!("no {label} in\n{shown}"));
        assert!(line.contains(&format!(", {rate:.1}/s")), "{line}");
    }
    // Shown again from the merged JSON, the same.
    let again = bin("ysql-bench", &["show", merged.to_str().unwrap()]);
    assert!(text(&again.stdout).contains(&format!("transactions/s        : {rate:.1}\n")));
}

/// The text of `show` from the line `from` on to the next operation's
/// (or the end).
fn block_of(shown: &str, from: &str) -> String {
    let (_, rest) = shown
        .split_once(from)
        .unwrap_or_else(|| panic!("no {from} in\n{shown}"));
    let rest = rest.split("\noperation             : ").next().unwrap();
    format!("{from}{rest}")
}

/// Checks and clean-ups of an old report (which kept one empty interval
/// for them too) show what they found, as the old run printed it, not a
/// timed block of zeros.
#[test]
fn old_checks_and_cleanups_show_what_they_found() {
    let out = bin(
        "ysql-bench",
        &["show", fixture("tpcc.json").to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let live = fixture_text("v0.2.0/tpcc.summary");
    assert_eq!(
        block_of(&shown, "== tpcc-check ==").trim_end(),
        block_of(&live, "== tpcc-check ==").trim_end()
    );
    // A clean-up: its findings, nothing timed.
    let mut report = json(&fixture("tpcc.json"));
    let op = &mut report["operations"][2];
    op["operation"] = "cleanup".into();
    op["unit"] = "table".into();
    op["checks"] = serde_json::json!([]);
    op["failure"] = serde_json::Value::Null;
    op["succeeded"] = true.into();
    op["findings"] = serde_json::json!([{"label": "dropped", "text": "test_table"}]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cleanup.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let out = bin("ysql-bench", &["show", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let block = block_of(&text(&out.stdout), "== cleanup ==");
    assert_eq!(
        block.trim_end(),
        "== cleanup ==\ndropped               : test_table"
    );
}

/// An old report did not keep a load's batch text: `show` and `merge`
/// leave the line out rather than print it empty.
#[test]
fn an_unknown_batch_text_is_left_out() {
    let p = fixture("select.json");
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("m.json");
    let show = bin("ysql-bench", &["show", p.to_str().unwrap()]);
    let merge = bin(
        "ysql-bench",
        &[
            "merge",
            p.to_str().unwrap(),
            p.to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ],
    );
    for out in [show, merge] {
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(shown.contains("total rows            : "), "{shown}");
        assert!(
            !shown
                .lines()
                .any(|l| l.trim_end() == "batch                 :"),
            "{shown}"
        );
    }
}

/// An old report of a run with --latency-limit kept the limit in its
/// config and each operation's late and skipped units: `show` prints
/// the `late` line, as the run did.
#[test]
fn an_old_latency_limit_is_shown() {
    let mut report = json(&fixture("select.json"));
    report["config"]["latency_limit_ms"] = 1.0.into();
    let op = &mut report["operations"][1];
    assert_eq!(op["operation"], "select");
    assert!(op.get("latency_limit_ms").is_none());
    op["late"] = 50.into();
    op["skipped"] = 3.into();
    let units = op["units"].as_u64().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("limit.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let out = bin("ysql-bench", &["show", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.contains(&format!(
            "late (> 1.000 ms)     : 50 of {units} queries, skipped 3\n"
        )),
        "{shown}"
    );
}

/// `show` of an old TPC-C report prints what its run printed: the
/// workload's figures with their text (tpmC, efficiency as a percentage,
/// the 90th percentile limits, the load's MB/s), `rolled back by rule`,
/// the checks. Left out is only what 0.2.0 did not keep: the load's
/// batch text and how many rows it was to load.
#[test]
fn old_tpcc_reports_show_what_the_run_printed() {
    for (report, summary) in [
        ("tpcc.json", "v0.2.0/tpcc.summary"),
        ("tpcc-c0.json", "v0.2.0/tpcc-c0.summary"),
    ] {
        let out = bin("ysql-bench", &["show", fixture(report).to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        let shown: Vec<&str> = shown
            .lines()
            // Where and when the run was made, before its seed.
            .skip_while(|l| !l.starts_with("seed "))
            .filter(|l| !l.starts_with("operation             : "))
            .filter(|l| !l.starts_with("start skew            : "))
            .collect();
        let live = fixture_text(summary);
        let live: Vec<String> = live
            .lines()
            .filter(|l| !l.starts_with("batch                 : "))
            .map(|l| l.replace(" of 599050 rows loaded", " rows loaded"))
            .collect();
        assert_eq!(shown, live, "{report}");
    }
}
