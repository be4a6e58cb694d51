//! `ysql-bench show` of a run's `--json` prints what the run printed
//! (issue 23: one summary printer, and the saved report is the run's
//! record read back).
//!
//! Every line of the live summary is compared, histograms included,
//! except where the two cannot be the same:
//! - `show` begins with where and when the run was made (`report of`,
//!   `target`, `server`), and names each operation before its block
//!   (`operation : NAME`): a live run says those on stderr as it connects
//!   and as each operation starts (`>> NAME`), so they are taken off
//!   `show`'s output before the comparison.
//!
//! `--per-statement` and `--show-rowsize` are flags of the run that
//! `show` does not have: the record keeps that the run showed the latency
//! per statement, and the row size it measured, so `show` prints them
//! too.

mod common;

use common::*;

/// Runs `args` with `--json` against a fresh server, then `show` (with
/// `show_args`) of the report, and compares the two; the live text.
async fn same_text(args: &[&str], show_args: &[&str]) -> String {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    // Whatever became of the run (a broken check is in its text too).
    let (_, live) = run_args(&sb, &all).await;
    let mut show = vec!["show", json.to_str().unwrap()];
    show.extend_from_slice(show_args);
    let out = bin("ysql-bench", &show);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let (head, body) = shown
        .split_once("seed ")
        .unwrap_or_else(|| panic!("no seed line in\n{shown}"));
    let head: Vec<&str> = head.lines().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        head,
        [
            "report of             ",
            "target                ",
            "server                "
        ],
        "{shown}"
    );
    let body = format!("seed {body}");
    let (live_lines, shown_lines): (Vec<&str>, Vec<&str>) = (
        live.lines().collect(),
        body.lines()
            .filter(|l| !l.starts_with("operation             : "))
            .collect(),
    );
    for (i, (a, b)) in live_lines.iter().zip(&shown_lines).enumerate() {
        assert_eq!(a, b, "line {i} differs; live:\n{live}\nshown:\n{body}");
    }
    assert_eq!(
        live_lines.len(),
        shown_lines.len(),
        "live:\n{live}\nshown:\n{body}"
    );
    live
}

/// A load, a query run under --rate (service time, schedule lag), a
/// YCSB mix (a block per type) and a sysbench transaction (queries by
/// class, the latency per statement), each with its histograms, and the
/// last table's row size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_what_the_run_printed() {
    let live = same_text(
        &[
            "-o",
            "copy-mem,select,ycsb-load,ycsb-a,oltp-prepare,oltp-read-write",
            "-r",
            "2000",
            "-t",
            "2",
            "--time",
            "1s",
            "--rate",
            "400",
            "--latency-limit",
            "50",
            "-p",
            "--histogram-scale",
            "linear",
            "--per-statement",
            "--show-rowsize",
        ],
        &["-p", "--histogram-scale", "linear"],
    )
    .await;
    for line in ["latency per statement:", "row size              : "] {
        assert!(live.contains(line), "{line} missing in\n{live}");
    }
}

/// TPC-C: the workload's own figures (tpmC, efficiency, the 90th
/// percentile limits, the load's MB/s) and its consistency checks.
/// `--time` bounds the load too, so the load is cut (`stopped by --time`)
/// and the checks may find the partly loaded tables broken: that is text
/// of the run as well, and `show` must print it alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_the_workloads_figures_and_checks() {
    same_text(
        &[
            "-o",
            "tpcc-load,tpcc,tpcc-check",
            "--warehouses",
            "1",
            "-t",
            "2",
            "--time",
            "1s",
        ],
        &[],
    )
    .await;
}
