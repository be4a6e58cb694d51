//! Time, rate, warmup, progress and interrupts against a real server.

mod common;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_is_held_and_latency_counts_from_the_schedule() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "10000", "-b", "1000"]).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o", "select", "-r", "10000", "-t", "4", "--rate", "2000", "--time", "5s",
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    let op = &report.operations[0];
    let achieved = op.total.ops as f64 / op.wallclock.as_secs_f64();
    assert!(
        (1900.0..=2100.0).contains(&achieved),
        "achieved {achieved}/s\n{text}"
    );
    assert!(
        text.contains("rate                  : target 2000.0 queries/s"),
        "{text}"
    );
    assert!(text.contains("schedule lag"), "{text}");
    assert!(text.contains("service per query"), "{text}");
    // Latency counts from the slot, so it is never below the service time.
    assert!(op.total.latency.value_at_quantile(0.5) >= op.total.service.value_at_quantile(0.5));
}

/// `after` from now, another session holds an exclusive lock on the
/// table for one second: every query waits for it.
async fn stall_after(
    sb: &ysql_bench::db::sandbox::Sandbox,
    after: Duration,
) -> tokio::task::JoinHandle<()> {
    let locker = client(sb).await;
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        locker
            .batch_execute("begin; lock table test_table in access exclusive mode; select pg_sleep(1); commit;")
            .await
            .unwrap();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_shows_in_the_corrected_latency_not_in_service_time() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "10000", "-b", "1000"]).await;
    let stall = stall_after(&sb, Duration::from_millis(1500)).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o", "select", "-r", "10000", "-t", "4", "--rate", "500", "--time", "4s",
        ],
    )
    .await;
    stall.await.unwrap();
    assert!(report.succeeded(), "{text}");
    let t = &report.operations[0].total;
    let ms = |ns: u64| ns as f64 / 1e6;
    // About a quarter of the units fell due during the 1 s stall: they
    // waited up to a second for their turn.
    assert!(ms(t.latency.value_at_quantile(0.99)) > 500.0, "{text}");
    assert!(ms(t.latency.max()) > 800.0, "{text}");
    // Only the four queries caught by the lock were slow to serve.
    assert!(ms(t.service.value_at_quantile(0.99)) < 100.0, "{text}");
    assert!(t.lag_max > Duration::from_millis(500), "{text}");
}

/// --latency-limit under --rate, as pgbench: the slots that fell due
/// during a stall and were already later than the limit are skipped, not
/// sent; those sent late are counted late; every slot is accounted for,
/// and the per-interval figures hold the skips too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_limit_skips_what_a_stall_made_too_late_and_counts_it() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "10000", "-b", "1000"]).await;
    let stall = stall_after(&sb, Duration::from_millis(1200)).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "10000",
            "-t",
            "2",
            "--rate",
            "400",
            "--time",
            "3s",
            "--latency-limit",
            "50",
        ],
    )
    .await;
    stall.await.unwrap();
    assert!(report.succeeded(), "{text}");
    let t = &report.operations[0].total;
    // About 400 slots fell due during the 1 s lock.
    assert!(t.skipped > 200, "{text}");
    // The queries caught by the lock itself were sent in time and ended late.
    assert!(t.late >= 2, "{text}");
    let slots = t.ops + t.skipped;
    assert!((1150..=1200).contains(&slots), "{slots} slots\n{text}");
    let in_intervals: u64 = report.operations[0]
        .intervals
        .iter()
        .map(|i| i.skipped)
        .sum();
    assert_eq!(in_intervals, t.skipped, "{text}");
    assert!(text.contains("skipped"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_is_run_first_and_left_out_of_the_figures() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let started = Instant::now();
    let (report, text) = run_args(
        &sb,
        &[
            "-o", "select", "-r", "1000", "--warmup", "1s", "--time", "1s", "-t", "2",
        ],
    )
    .await;
    let took = started.elapsed();
    assert!(report.succeeded(), "{text}");
    let op = &report.operations[0];
    assert!(
        took >= Duration::from_secs(2),
        "warmup and measurement take 2 s, took {took:?}"
    );
    assert!(
        op.wallclock < Duration::from_millis(1500),
        "wallclock {:?}",
        op.wallclock
    );
    assert!(text.contains("warmup"), "{text}");
    // Everything counted falls inside the measured second.
    let in_intervals: u64 = op.intervals.iter().map(|i| i.ops).sum();
    assert_eq!(in_intervals, op.total.ops);
    assert!(
        op.intervals.iter().all(|i| i.end_s <= 1.01),
        "{:?}",
        op.intervals
    );
}

/// Fixed slots, 4 threads at 4/s: every second holds exactly four slots,
/// after a warmup too. The first measured slot is not lost at the end of
/// the warmup, and each interval counts the queries that ended in it, also
/// when a worker's next query comes a whole second later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_rate_after_a_warmup_loses_no_slot_and_each_second_holds_its_own() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o", "select", "-r", "1000", "-t", "4", "--rate", "4", "--warmup", "1s", "--time",
            "3s",
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    let op = &report.operations[0];
    assert_eq!(op.total.ops, 12, "{text}");
    let per_second: Vec<u64> = op.intervals.iter().map(|i| i.ops).collect();
    assert_eq!(per_second.iter().sum::<u64>(), 12, "{per_second:?}");
    // A query due just before a boundary may end just after it.
    assert!(
        per_second.iter().all(|&n| (3..=5).contains(&n)),
        "{per_second:?}"
    );
    assert!(!text.contains("did not keep up"), "{text}");
}

/// Ctrl-C while every worker waits for its next slot ends the run at
/// once, with no worker given up on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_during_a_rate_wait_ends_the_run_at_once() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let plan = plan(
        &sb,
        &[
            "-o", "select", "-r", "1000", "-t", "2", "--rate", "0.2", "--time", "30s",
        ],
    );
    let (stopper, run) = spawn_interruptible(plan);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stopped = Instant::now();
    stopper.interrupt();
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(2),
        "took {:?} after the stop\n{text}",
        stopped.elapsed()
    );
    let op = &report.operations[0];
    assert!(op.failure.is_none(), "{text}");
    assert_eq!(op.total.ops, 1, "{text}");
    assert!(op.wallclock < Duration::from_secs(3), "{text}");
}

/// Ctrl-C while the queries wait for a lock: after the grace period they
/// are cancelled on the server, and what the workers measured before is
/// kept; the wallclock ends at the stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_during_a_stall_cancels_the_stuck_queries_and_keeps_the_figures() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let locker = client(&sb).await;
    let plan = plan(
        &sb,
        &["-o", "select", "-r", "1000", "-t", "2", "--time", "60s"],
    );
    let (stopper, run) = spawn_interruptible(plan);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    locker
        .batch_execute("begin; lock table test_table in access exclusive mode")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stopped = Instant::now();
    stopper.interrupt();
    let (report, text) = run.await.unwrap();
    let took = stopped.elapsed();
    locker.batch_execute("commit").await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(report.interrupted, "{text}");
    // The grace period, then the cancel: well before the 60 s are up.
    assert!(
        took >= ysql_bench::runner::STOP_GRACE && took < Duration::from_secs(15),
        "{took:?}\n{text}"
    );
    assert!(op.failure.is_none(), "{text}");
    assert!(op.total.ops > 100, "{text}");
    assert!(op.total.errors.is_empty(), "{text}");
    assert!(op.wallclock < Duration::from_secs(3), "{text}");
    let in_intervals: u64 = op.intervals.iter().map(|i| i.ops).sum();
    assert_eq!(in_intervals, op.total.ops, "{text}");
    // The intervals end with the measurement, not with the wait for the
    // stuck workers after it.
    let last = op.intervals.last().unwrap();
    assert!(
        last.end_s <= op.wallclock.as_secs_f64() + 0.01,
        "{:?} past {:?}",
        last,
        op.wallclock
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_bounds_a_load_and_the_summary_says_exactly_what_was_loaded() {
    let sb = sandbox();
    let c = client(&sb).await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o", "insert", "-r", "5000000", "-b", "50", "-t", "2", "--time", "500ms",
        ],
    )
    .await;
    let op = &report.operations[0];
    assert!(op.timed_out, "{text}");
    assert!(op.total.rows > 0 && op.total.rows < 5_000_000);
    assert!(text.contains("stopped by --time"), "{text}");
    assert_eq!(facts(&c, "test_table").await.count as u64, op.total.rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_during_the_warmup_says_so_and_measures_nothing() {
    let sb = sandbox();
    let (loaded, _) = run_args(&sb, &["-o", "insert", "-r", "1000"]).await;
    assert!(loaded.succeeded());
    let plan = plan(
        &sb,
        &[
            "-o", "select", "-r", "1000", "--warmup", "20s", "--time", "5s",
        ],
    );
    let (stopper, run) = spawn_interruptible(plan);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stopper.interrupt();
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    let op = &report.operations[0];
    assert!(op.warmup_cut, "{text}");
    let ran = op.warmup.unwrap();
    assert!(
        ran >= Duration::from_secs(1) && ran < Duration::from_secs(20),
        "{ran:?}"
    );
    assert_eq!(op.total.ops, 0, "{text}");
    assert!(
        text.contains("warmup                : stopped after"),
        "{text}"
    );
}

/// Whether, within `limit`, no statement like `pattern` is active on the
/// server any more.
async fn idle_within(c: &tokio_postgres::Client, pattern: &str, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        let n: i64 = c
            .query_one(
                "select count(*) from pg_stat_activity where query ilike $1 and state = 'active'",
                &[&pattern],
            )
            .await
            .unwrap()
            .get(0);
        if n == 0 {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A procedure CALL or a server-side COPY is one long statement: --time
/// and a stop must cancel it on the server, and the summary must say what
/// it left committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_cancels_a_procedure_and_counts_what_it_committed() {
    let sb = sandbox();
    let c = client(&sb).await;
    let t0 = Instant::now();
    let (report, text, in_table) = cut_short_procedure(&sb, &["--time", "1s"]).await;
    // 20 million rows take minutes; a cancelled CALL ends at once.
    assert!(t0.elapsed() < Duration::from_secs(30), "{text}");
    assert!(report.operations[0].timed_out, "{text}");
    assert!(
        text.contains(&format!("stopped by --time     : {in_table} of 20000000")),
        "{text}"
    );
    // Nothing is left running on the server (a backend may take a moment
    // to say it is idle after the client has its error).
    assert!(
        idle_within(&c, "call %", Duration::from_secs(10)).await,
        "a CALL still runs on the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_a_server_side_copy() {
    let sb = sandbox();
    let c = client(&sb).await;
    let dir = shared_dir();
    let dir_s = dir.path().to_str().unwrap().to_string();
    let out = bin(
        "csv_generator",
        &["-r", "4000000", "-t", "2", "-f", "8", "-d", &dir_s],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let args = [
        "-o",
        "copy-file",
        "-r",
        "4000000",
        "-t",
        "2",
        "-f",
        "8",
        "--csv-dir",
        &dir_s,
    ];
    let plan = plan(&sb, &args);
    let (stopper, run) = spawn_interruptible(plan);
    // Interrupt once both COPYs are running on the server.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let copying: i64 = c
            .query_one(
                "select count(*) from pg_stat_activity where query ilike 'copy %' and state = 'active'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if copying == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the COPYs never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stopper.interrupt();
    let (report, text) = run.await.unwrap();
    let report = report.unwrap();
    assert!(report.interrupted, "{text}");
    // A COPY commits all or nothing: what the summary says is in the table.
    let in_table = facts(&c, "test_table").await.count as u64;
    assert_eq!(report.operations[0].total.rows, in_table, "{text}");
    assert!(
        in_table < 4_000_000,
        "the interrupt came too late to test anything"
    );
    // Without the cancel the workers would wait for their COPYs: all rows
    // loaded, or workers abandoned after the stop grace (a failure).
    assert!(report.operations[0].failure.is_none(), "{text}");
    assert!(
        idle_within(&c, "copy %", Duration::from_secs(10)).await,
        "a COPY still runs on the server"
    );
}

#[test]
fn progress_lines_come_at_the_interval_with_their_fields() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args([
            "--sandbox",
            "-o",
            "insert,select",
            "-r",
            "1000",
            "--time",
            "2s",
            "-P",
            "0.5",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Each line with the time it arrived.
    let mut seen = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        seen.push((Instant::now(), line.unwrap()));
    }
    let status = child.wait().unwrap();
    let stderr: String = seen.iter().map(|(_, l)| format!("{l}\n")).collect();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let progress: Vec<&(Instant, String)> = seen
        .iter()
        .filter(|(_, l)| l.starts_with("progress: select"))
        .collect();
    let lines: Vec<&str> = progress.iter().map(|(_, l)| l.as_str()).collect();
    assert!((3..=5).contains(&lines.len()), "{stderr}");
    // While the run goes on, not all at its end: the first and the last
    // line arrive about 1.5 s apart.
    let spread = progress[progress.len() - 1].0 - progress[0].0;
    assert!(spread > Duration::from_millis(700), "{spread:?}\n{stderr}");
    for (i, l) in lines.iter().enumerate() {
        assert!(
            l.contains(&format!("{:.1} s,", 0.5 * (i + 1) as f64)),
            "{l}"
        );
        for field in [
            "queries/s",
            "rows/s",
            "lat p50",
            "p95",
            "p99",
            "max",
            "failed",
        ] {
            assert!(l.contains(field), "{field} missing in {l}");
        }
    }
}

/// Starts the binary, waits until stderr shows `marker`, lets it run a
/// little, sends SIGINT; returns exit code, stdout, stderr.
fn interrupt_after(args: &[&str], marker: &str) -> (Option<i32>, String, String) {
    interrupt_at(args, marker, Duration::from_millis(700))
}

/// As [`interrupt_after`], `delay` after the marker.
fn interrupt_at(args: &[&str], marker: &str, delay: Duration) -> (Option<i32>, String, String) {
    interrupt_with(args, marker, &[delay], &[])
}

/// As [`interrupt_at`], with one SIGINT after each of `delays` (each
/// counted from the one before) and extra environment variables.
fn interrupt_with(
    args: &[&str],
    marker: &str,
    delays: &[Duration],
    envs: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args(args)
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (rx, reader) = follow_lines(stderr);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx
            .recv_timeout(deadline - Instant::now())
            .expect("marker seen in time");
        if line.contains(marker) {
            break;
        }
    }
    for &delay in delays {
        std::thread::sleep(delay);
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = reader.join().unwrap();
    (out.status.code(), text(&out.stdout), stderr)
}

/// What every interrupted run must show: exit 130, the interrupted
/// operation's partial summary, and its sandbox server gone.
fn assert_interrupted(code: Option<i32>, stdout: &str, stderr: &str, op: &str) {
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stdout.contains(&format!("== {op} ==")), "{stdout}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    let port = sandbox_port(stderr);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

fn sandbox_port(stderr: &str) -> u16 {
    let l = stderr
        .lines()
        .find(|l| l.starts_with(">> connect"))
        .unwrap();
    l.split("port=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A second Ctrl-C quits at once, also while initdb makes the sandbox:
/// initdb is stopped and the sandbox directory removed. A second Ctrl-C
/// counts only a second or more after the first (a quicker one is taken
/// for the same request), and initdb alone takes about that long: here
/// it waits 3 s first, in a bin directory of its own
/// (YSQLBENCH_PG_BINDIR), so that the second Ctrl-C comes while it runs.
#[test]
fn a_second_sigint_while_the_sandbox_starts_leaves_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = shared_dir();
    let tmp_s = tmp.path().to_str().unwrap();
    let bin = shared_dir();
    let real = ysql_bench::db::sandbox::find_bindir().unwrap();
    std::os::unix::fs::symlink(real.join("postgres"), bin.path().join("postgres")).unwrap();
    let initdb = bin.path().join("initdb");
    std::fs::write(
        &initdb,
        format!(
            "#!/bin/sh\nsleep 3\nexec {} \"$@\"\n",
            real.join("initdb").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&initdb, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, _, stderr) = interrupt_with(
        &["--sandbox", "-o", "insert", "-r", "1000"],
        ">> start sandbox server",
        &[Duration::from_millis(300), Duration::from_millis(1200)],
        &[
            ("TMPDIR", tmp_s),
            ("YSQLBENCH_PG_BINDIR", bin.path().to_str().unwrap()),
        ],
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("interrupted again"), "{stderr}");
    let left_behind = || {
        let dirs = std::fs::read_dir(tmp.path()).unwrap().count();
        let procs = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).contains(tmp_s))
            .count();
        (dirs, procs)
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while left_behind() != (0, 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left_behind(), (0, 0), "sandbox dirs and processes left");
}

#[test]
fn sigint_while_the_sandbox_starts_ends_the_run_before_it_writes() {
    let (code, stdout, stderr) = interrupt_at(
        &["--sandbox", "-o", "insert", "-r", "1000"],
        ">> start sandbox server",
        Duration::ZERO,
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted before the first operation started"),
        "{stderr}"
    );
    assert!(!stderr.contains(">> create table"), "{stderr}");
    assert!(!stdout.contains("== insert =="), "{stdout}");
}

#[test]
fn sigint_during_a_select_gives_a_partial_summary_and_exit_130() {
    let (code, stdout, stderr) = interrupt_after(
        &[
            "--sandbox",
            "-o",
            "insert,select",
            "-r",
            "1000",
            "--time",
            "60s",
            "-t",
            "2",
        ],
        ">> select",
    );
    assert_interrupted(code, &stdout, &stderr, "select");
    let wall = stdout
        .lines()
        .filter(|l| l.starts_with("wallclock time"))
        .nth(1)
        .unwrap();
    assert!(!wall.contains(" 60."), "{wall}");
}

#[test]
fn sigint_during_a_load_reports_what_was_loaded_and_exits_130() {
    // Interrupted once a progress line shows the load under way, not a
    // fixed time after it was announced (connecting and preparing come
    // first, and take longer on a loaded machine).
    let (code, stdout, stderr) = interrupt_with(
        &[
            "--sandbox",
            "-o",
            "insert,select",
            "-r",
            "20000000",
            "-b",
            "100",
            "-t",
            "2",
            "-P",
            "0.2",
        ],
        "progress: insert",
        &[Duration::from_millis(100)],
        &[],
    );
    assert_interrupted(code, &stdout, &stderr, "insert");
    assert!(
        !stdout.contains("== select =="),
        "the run must stop at the interrupt"
    );
    let rows: u64 = stdout
        .lines()
        .find(|l| l.starts_with("total rows"))
        .unwrap()
        .split(':')
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(rows > 0 && rows < 20_000_000, "{rows}");
}

/// Issue 17: --latency-limit counted procedure's one CALL per thread as
/// late (`late (> 1.000 us) : 2 of 2 calls`); like --rate, it does not
/// apply to one statement per thread (and the plan warns about it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_limit_does_not_count_one_statement_per_thread_late() {
    let sb = sandbox();
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "procedure,select",
            "-r",
            "2000",
            "-t",
            "2",
            "--latency-limit",
            "0.001",
            "--time",
            "300ms",
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    let procedure = &report.operations[0];
    assert_eq!(procedure.total.ops, 2, "{text}");
    assert_eq!(procedure.total.late, 0, "{text}");
    assert_eq!(procedure.latency_limit, None, "{text}");
    // The select after it is still counted: every query takes more than 1 us.
    let select = &report.operations[1];
    assert!(
        select.total.late > 0 && select.total.late == select.total.ops,
        "{text}"
    );
    let late_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("late (")).collect();
    assert_eq!(late_lines.len(), 1, "{text}");
    let warnings = plan(&sb, &["-o", "procedure", "--latency-limit", "5"]).warnings();
    assert!(
        warnings.iter().any(|w| w.contains("--latency-limit")),
        "{warnings:?}"
    );
}

/// pgbench's -t: `--transactions N` makes each thread end N units and
/// stop; the server counts exactly threads x N queries, the summary and
/// the JSON say the count. A warmup runs first by its time, outside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_bound_each_thread_and_the_server_counts_exactly_them() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000", "-b", "1000"]).await;
    let c = client(&sb).await;
    let before = index_scans(&c, "test_table").await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "1000",
            "-t",
            "3",
            "--transactions",
            "50",
            "--json",
            json.to_str().unwrap(),
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    let scans = index_scans(&c, "test_table").await - before;
    assert_eq!(scans, 150, "{text}");
    let op = &report.operations[0];
    assert_eq!(op.total.ops, 150, "{text}");
    assert!(
        text.contains("--transactions        : 50 queries per thread, 150 in all"),
        "{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["config"]["transactions"], 50, "{doc}");
    assert_eq!(doc["operations"][0]["transactions"], 50);
    assert_eq!(doc["operations"][0]["units"], 150);

    // With a warmup: the warmup's units come first, then 20 measured per
    // thread; the server saw both.
    let before = index_scans(&c, "test_table").await;
    let (report, text) = run_args(
        &sb,
        &[
            "-o",
            "select",
            "-r",
            "1000",
            "-t",
            "2",
            "--transactions",
            "20",
            "--warmup",
            "300ms",
        ],
    )
    .await;
    assert!(report.succeeded(), "{text}");
    assert_eq!(report.operations[0].total.ops, 40, "{text}");
    let scans = index_scans(&c, "test_table").await - before;
    assert!(scans > 40, "{scans} scans\n{text}");
}
