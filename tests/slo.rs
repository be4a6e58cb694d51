//! `--slo`, `compare --fail-if` and `--find-max` against real sandbox
//! servers, through the binary (the exit codes are the point).
//!
//! The limits these tests find come from the server, not from the
//! client's CPU: a table lock another session holds, or a script whose
//! unit is `pg_sleep`, so that 20 workers of 50 ms units serve at most
//! about 400 units/s whatever else the machine runs.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

const EXIT_SLO: i32 = 3;

fn exit(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Runs the binary against `url` with `args` on a blocking thread.
async fn run_bin(url: String, args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let mut all = vec!["-u".to_string(), url, "--no-server-stats".to_string()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        bin("ysql-bench", &refs)
    })
    .await
    .expect("the binary's thread")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON report")).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_meets_its_slo_exits_0_and_one_held_up_by_a_lock_exits_3_naming_it() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    run_args(&sb, &["-o", "copy-mem", "-r", "2000", "-b", "500"]).await;
    let slo = "p99<300ms,errors<1%";
    let met = run_bin(
        sb.url(),
        strings(&[
            "-o", "select", "-r", "2000", "--rate", "100", "--time", "2s", "--slo", slo,
        ]),
    )
    .await;
    let out = text(&met.stdout);
    assert_eq!(exit(&met), 0, "{out}{}", text(&met.stderr));
    assert!(
        out.contains("slo                   : met (p99<300ms,errors<1%)"),
        "{out}"
    );
    // A second session holds the table for 1.5 s during the run: every
    // query due meanwhile waits, and p99 is over a second.
    let locker = client(&sb).await;
    let lock = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        locker
            .batch_execute(
                "begin; lock table test_table in access exclusive mode; select pg_sleep(1.5); commit;",
            )
            .await
            .unwrap();
    });
    let report = dir.path().join("missed.json");
    let csv = dir.path().join("missed.csv");
    let missed = run_bin(
        sb.url(),
        strings(&[
            "-o",
            "select",
            "-r",
            "2000",
            "--rate",
            "100",
            "--time",
            "5s",
            "--slo",
            slo,
            "--json",
            report.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ]),
    )
    .await;
    lock.await.unwrap();
    let (out, err) = (text(&missed.stdout), text(&missed.stderr));
    assert_eq!(exit(&missed), EXIT_SLO, "{out}{err}");
    // The criterion missed is named with its value, on stderr and in the
    // summary; the one met is said met.
    let line = err
        .lines()
        .find(|l| l.starts_with("SLO missed: p99<300ms (select "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.ends_with(" s)") || line.ends_with(" ms)"), "{line}");
    assert!(out.contains("MISSED") && out.contains("errors<1%"), "{out}");
    let v = json(&report);
    assert_eq!(v["slo"]["met"], false);
    let p99 = &v["slo"]["verdicts"][0];
    assert_eq!(p99["criterion"], "p99<300ms");
    assert!(p99["measured"].as_f64().unwrap() >= 300e6, "{p99}");
    assert_eq!(v["slo"]["verdicts"][1]["met"], true);
    let verdicts = std::fs::read_to_string(dir.path().join("missed.slo.csv")).unwrap();
    assert!(verdicts.contains("p99<300ms,select,,"), "{verdicts}");
    assert!(verdicts.contains(",false\n"), "{verdicts}");
}

async fn run_bin_plain(args: &[&str]) -> std::process::Output {
    let args = strings(args);
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bin("ysql-bench", &refs)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slo_abort_stops_a_run_that_can_no_longer_meet_it() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sleep.sql");
    std::fs::write(&script, "select pg_sleep(0.05);\n").unwrap();
    // 4 workers of 50 ms units serve 80/s: at 400/s the backlog grows by
    // 320 units a second, so p99 is lost within the first seconds of 30.
    let out = run_bin(
        sb.url(),
        strings(&[
            "--script",
            script.to_str().unwrap(),
            "-t",
            "4",
            "--rate",
            "400",
            "--time",
            "30s",
            "--slo",
            "p99<200ms",
            "--slo-abort",
        ]),
    )
    .await;
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(exit(&out), EXIT_SLO, "{stdout}{err}");
    assert!(err.contains("stopped by --slo-abort: p99<200ms"), "{err}");
    let wall: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("wallclock time        : "))
        .and_then(|v| v.trim_end_matches(" s").parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(wall < 15.0, "stopped after {wall} s\n{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_fail_if_passes_a_run_against_itself_and_fails_a_slowed_one() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("unit.sql");
    let (fast, slow) = (dir.path().join("fast.json"), dir.path().join("slow.json"));
    for (sleep, report) in [("0.002", &fast), ("0.1", &slow)] {
        std::fs::write(&script, format!("select pg_sleep({sleep});\n")).unwrap();
        let out = run_bin(
            sb.url(),
            strings(&[
                "--script",
                script.to_str().unwrap(),
                "-t",
                "2",
                "--time",
                "3s",
                "-P",
                "0.5",
                "--json",
                report.to_str().unwrap(),
            ]),
        )
        .await;
        assert_eq!(exit(&out), 0, "{}", text(&out.stderr));
    }
    let rules = "p99>+10%,throughput<-5%";
    let same = run_bin_plain(&[
        "compare",
        fast.to_str().unwrap(),
        fast.to_str().unwrap(),
        "--fail-if",
        rules,
    ])
    .await;
    let out = text(&same.stdout);
    assert_eq!(exit(&same), 0, "{out}{}", text(&same.stderr));
    assert!(
        out.contains("fail-if p99>+10%: script") && out.contains("passes"),
        "{out}"
    );
    let worse = run_bin_plain(&[
        "compare",
        fast.to_str().unwrap(),
        slow.to_str().unwrap(),
        "--fail-if",
        rules,
    ])
    .await;
    let (out, err) = (text(&worse.stdout), text(&worse.stderr));
    assert_eq!(exit(&worse), EXIT_SLO, "{out}{err}");
    assert!(out.contains("beyond noise: FAILS"), "{out}");
    assert!(
        err.contains("compare --fail-if: p99>+10% (script +"),
        "{err}"
    );
    // The other way round is faster: nothing fails.
    let better = run_bin_plain(&[
        "compare",
        slow.to_str().unwrap(),
        fast.to_str().unwrap(),
        "--fail-if",
        rules,
    ])
    .await;
    assert_eq!(exit(&better), 0, "{}", text(&better.stdout));
    // A rule that cannot be read is bad input.
    let bad = run_bin_plain(&[
        "compare",
        fast.to_str().unwrap(),
        slow.to_str().unwrap(),
        "--fail-if",
        "p99>10ms",
    ])
    .await;
    assert_eq!(exit(&bad), 2);
    assert_eq!(
        text(&bad.stderr).lines().count(),
        1,
        "{}",
        text(&bad.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_max_finds_a_rate_that_holds_and_one_a_fifth_higher_does_not() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sleep.sql");
    // 20 workers of 50 ms units: about 400 units/s at most, set by the
    // server's sleeps rather than the client's CPU.
    std::fs::write(&script, "select pg_sleep(0.05);\n").unwrap();
    let report = dir.path().join("search.json");
    let csv = dir.path().join("search.csv");
    let common = [
        "--script",
        script.to_str().unwrap(),
        "-t",
        "20",
        "--slo",
        "p99<300ms",
        "--time",
        "3s",
        "--warmup",
        "1s",
    ];
    let mut args = strings(&common);
    args.extend(strings(&[
        "--find-max",
        "--rate",
        "100",
        "--find-max-resolution",
        "10",
        "--json",
        report.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]));
    let out = run_bin(sb.url(), args).await;
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(exit(&out), 0, "{stdout}{err}");
    assert!(
        stdout.contains("find-max              : sustains "),
        "{stdout}"
    );
    let v = json(&report);
    let answer = v["find_max"]["answer"]
        .as_f64()
        .unwrap_or_else(|| panic!("{v}"));
    assert!((100.0..=600.0).contains(&answer), "{answer}\n{stdout}");
    let steps = v["find_max"]["steps"].as_array().unwrap();
    assert!(steps.iter().any(|s| s["met"] == false), "{stdout}");
    assert!(steps.last().unwrap()["confirm"] == true, "{stdout}");
    let rows = std::fs::read_to_string(dir.path().join("search.find-max.csv")).unwrap();
    assert_eq!(rows.lines().count(), steps.len() + 1, "{rows}");
    // The answer holds in a run of its own; a fifth more does not.
    for (rate, code) in [(answer, 0), (answer * 1.2, EXIT_SLO)] {
        let mut args = strings(&common);
        args.extend(strings(&["--rate", &format!("{rate}")]));
        let out = run_bin(sb.url(), args).await;
        assert_eq!(
            exit(&out),
            code,
            "at {rate}/s (answer {answer})\n{}{}\nsearch:\n{stdout}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}

#[test]
fn slo_syntax_errors_are_one_line_and_exit_2_before_connecting() {
    for (args, says) in [
        (vec!["--slo", "p99<10"], "needs a unit"),
        (
            vec!["--slo", "nosuch:p99<1ms"],
            "neither an operation of -o",
        ),
        (vec!["--slo", "throughput>=95%"], "has no --rate"),
        (vec!["--slo", "tpmc>=1"], "not a metric"),
        (vec!["--slo-abort"], "--slo"),
        (vec!["--find-max"], "--slo"),
    ] {
        let mut all = vec!["-u", "host=127.0.0.1 port=1", "-o", "select"];
        all.extend(args.iter().copied());
        let out = bin("ysql-bench", &all);
        let err = text(&out.stderr);
        assert_eq!(exit(&out), 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains(">> connect"), "{err}");
    }
}
