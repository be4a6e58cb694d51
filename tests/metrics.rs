//! `--metrics-addr` (issue 27) against a real Prometheus: Debian's
//! `prometheus` (installed by scripts/install-deps.sh), started here with
//! its own configuration and data directory on a free port of 127.0.0.1,
//! scraping every second, stopped when the test ends. Its HTTP API is
//! asked what a user's PromQL would ask: the counters equal the runs'
//! JSON reports, `histogram_quantile` over the buckets is within one
//! bucket of the JSON's p99 (one client, and two clients' buckets added
//! up against the merged report), and every query of the Grafana
//! dashboard returns data. Skipped, with a line saying so, only when
//! prometheus is not installed.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use common::*;

fn prometheus_binary() -> Option<PathBuf> {
    let fixed = Path::new("/usr/bin/prometheus");
    if fixed.is_file() {
        return Some(fixed.to_path_buf());
    }
    Command::new("prometheus")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("prometheus"))
}

/// A Prometheus of our own scraping `targets` every second.
fn start_prometheus(bin: &Path, dir: &Path, targets: &[u16]) -> (Daemon, u16) {
    let port = free_port();
    let list: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: ysql-bench\n    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        ),
    )
    .unwrap();
    let log = dir.join("prometheus.log");
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("prometheus.err")).unwrap());
    let mut d = Daemon::start("prometheus", cmd, port, dir.join("prometheus.err"), false);
    // It listens before its scrapes begin: wait until every target has
    // been tried once (down, as nothing serves them yet).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ready(port) {
        assert!(std::time::Instant::now() < deadline, "{}", d.state());
        std::thread::sleep(Duration::from_millis(100));
    }
    loop {
        let v = api(port, "/api/v1/query", &[("query", "count(up)".to_string())]);
        let n = v["data"]["result"][0]["value"][1].as_str().unwrap_or("0");
        if n == targets.len().to_string() {
            return (d, port);
        }
        assert!(std::time::Instant::now() < deadline, "{}", d.state());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether Prometheus says it is ready (it answers 503 while it starts).
fn ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = write!(
        s,
        "GET /-/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    );
    let mut got = String::new();
    let _ = s.read_to_string(&mut got);
    got.starts_with("HTTP/1.1 200")
}

/// Prometheus's answer to `path?query` (form-encoded by curl-like hand).
fn api(port: u16, path: &str, params: &[(&str, String)]) -> serde_json::Value {
    let mut body = String::new();
    for (k, v) in params {
        if !body.is_empty() {
            body.push('&');
        }
        body.push_str(k);
        body.push('=');
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                body.push(b as char);
            } else {
                body.push_str(&format!("%{b:02X}"));
            }
        }
    }
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("prometheus listens");
    use std::io::{Read, Write};
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let got = String::from_utf8_lossy(&got).into_owned();
    let (head, rest) = got.split_once("\r\n\r\n").expect("an HTTP answer");
    // Prometheus answers small bodies whole, large ones chunked.
    let json = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut r = rest;
        while let Some((len, after)) = r.split_once("\r\n") {
            let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            r = &after[n + 2..];
        }
        out
    } else {
        rest.to_string()
    };
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {got}"));
    assert_eq!(v["status"], "success", "{params:?}: {v}");
    v
}

/// The value of an instant query that yields one series.
fn scalar(port: u16, q: &str) -> f64 {
    let v = api(port, "/api/v1/query", &[("query", q.to_string())]);
    let r = v["data"]["result"].as_array().expect("a vector");
    assert_eq!(r.len(), 1, "{q}: {v}");
    r[0]["value"][1].as_str().unwrap().parse().unwrap()
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args(args)
        .env_remove("YSQLBENCH_URL")
        .env_remove("JOB_COMPLETION_INDEX")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

fn ended(c: Child, what: &str) -> Output {
    let o = c.wait_with_output().expect("the run ends");
    // The bad script's units fail on purpose: exit 1, reports written.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{what}: {:?}\n{}",
        o.status,
        text(&o.stderr)
    );
    o
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("report")).expect("JSON")
}

/// The operation `name` of a report.
fn op<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == name)
        .unwrap_or_else(|| panic!("no {name} in the report"))
}

/// The relative width of a bucket (see `metrics::render`), and the HDR
/// histogram's own error.
fn tolerance() -> f64 {
    ysql_bench::metrics::render::bucket_resolution() + 0.002
}

/// `got` (seconds, from Prometheus) is within the bucket resolution of
/// the report's `want_ns`, and more: inside the very bucket `want_ns` is
/// counted in, so that buckets shifted by one (still within 9%) fail.
fn within_its_bucket(got: f64, want_ns: u64, what: &str) {
    let want = want_ns as f64 / 1e9;
    assert!(
        (got - want).abs() / want <= tolerance(),
        "{what}: p99 {got} vs the report's {want}"
    );
    let (lo, hi) = ysql_bench::metrics::render::bucket_of_ns(want_ns);
    // Prometheus reads the bounds back from their text: allow its rounding.
    let eps = hi * 1e-9;
    assert!(
        lo - eps <= got && got <= hi + eps,
        "{what}: p99 {got} not in the bucket [{lo}, {hi}] of the report's {want}"
    );
}

fn p99_of_buckets(port: u16, sel: &str) -> f64 {
    // The last value of each cumulative bucket is the whole run's.
    scalar(
        port,
        &format!(
            "histogram_quantile(0.99, sum by (le) (max_over_time(ysql_bench_latency_seconds_bucket{{{sel}}}[10m])))"
        ),
    )
}

/// Every query of the dashboard, for run `run_id`, as Grafana sends
/// them: over the run's time range, step 1 s; those of the workload's
/// own figures only when `figures`.
fn dashboard_queries_return_data(port: u16, run_id: &str, from: f64, to: f64, figures: bool) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana/ysql-bench-dashboard.json"
    );
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut n = 0;
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            if !figures && expr.contains("ysql_bench_workload_figure") {
                continue;
            }
            let q = expr
                .replace("$run_id", run_id)
                .replace("$op", ".*")
                .replace("$__rate_interval", "4s");
            let v = api(
                port,
                "/api/v1/query_range",
                &[
                    ("query", q.clone()),
                    ("start", format!("{from:.3}")),
                    ("end", format!("{to:.3}")),
                    ("step", "1".to_string()),
                ],
            );
            let r = v["data"]["result"].as_array().unwrap();
            let points = r
                .iter()
                .flat_map(|s| s["values"].as_array().unwrap())
                .filter(|p| p[1].as_str().is_some_and(|x| x != "NaN"))
                .count();
            assert!(points > 0, "{}: {q} returned no data: {v}", p["title"]);
            n += 1;
        }
    }
    assert!(n >= 10, "{n} queries");
}

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_reads_counts_and_percentiles_equal_to_the_reports() {
    let Some(prom) = prometheus_binary() else {
        eprintln!("skipped: prometheus is not installed (scripts/install-deps.sh installs it)");
        return;
    };
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = d.join("ok.sql");
    let bad = d.join("bad.sql");
    std::fs::write(&ok, "select pg_sleep(random() * 0.002);\n").unwrap();
    std::fs::write(&bad, "select 1/0;\n").unwrap();
    let scripts = [
        format!("{}@9", ok.display()),
        format!("{}@1", bad.display()),
    ];
    let load = bin(
        "ysql-bench",
        &[
            "-u",
            &url,
            "-o",
            "tpcc-load",
            "--warehouses",
            "1",
            "-t",
            "2",
            "-q",
        ],
    );
    assert!(load.status.success(), "{}", text(&load.stderr));
    let ports = [free_port(), free_port(), free_port()];
    let (_prometheus, pport) = start_prometheus(&prom, d, &ports);
    let from = unix_now();
    let common = |port: u16, json: &Path| -> Vec<String> {
        [
            "-u",
            &url,
            "--script",
            &scripts[0],
            "--script",
            &scripts[1],
            "--on-error",
            "continue",
            "-t",
            "2",
            "--time",
            "4s",
            "-q",
            "--metrics-addr",
            &format!("127.0.0.1:{port}"),
            "--json",
            json.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // One client: TPC-C (the workload's own figures) and the scripts.
    let a_json = d.join("a.json");
    let mut a_args = common(ports[0], &a_json);
    a_args.extend(["-o", "tpcc,script", "--warehouses", "1", "--rate", "300"].map(String::from));
    let a = spawn(&a_args.iter().map(String::as_str).collect::<Vec<_>>());
    // Two clients of one run, beside it.
    let b_json = [d.join("b0.json"), d.join("b1.json")];
    let b: Vec<Child> = (0..2)
        .map(|i| {
            let mut args = common(ports[1 + i], &b_json[i]);
            args.extend(
                [
                    "--clients",
                    "2",
                    "--client-index",
                    &i.to_string(),
                    "--run-id",
                    "metrics-two",
                ]
                .map(String::from),
            );
            spawn(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    ended(a, "one client");
    for (i, c) in b.into_iter().enumerate() {
        ended(c, &format!("client {i}"));
    }
    let to = unix_now();
    let merged = d.join("merged.json");
    let m = bin(
        "ysql-bench",
        &[
            "merge",
            b_json[0].to_str().unwrap(),
            b_json[1].to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ],
    );
    assert!(m.status.success(), "{}", text(&m.stderr));

    // The one client's run id, from the info metric.
    let info = api(
        pport,
        "/api/v1/query",
        &[(
            "query",
            format!(
                "max_over_time(ysql_bench_run_info{{instance=\"127.0.0.1:{}\"}}[10m])",
                ports[0]
            ),
        )],
    );
    let metric = &info["data"]["result"][0]["metric"];
    let a_id = metric["run_id"].as_str().expect("a run id").to_string();
    assert_eq!(metric["workload"], "tpcc,script", "{info}");
    assert_eq!(metric["client"], "0");

    // Counters equal the reports, operation by operation.
    let a_rep = json(&a_json);
    for name in ["tpcc", "script"] {
        let o = op(&a_rep, name);
        let sel = format!("run_id=\"{a_id}\",op=\"{name}\"");
        let units = scalar(
            pport,
            &format!("sum(max_over_time(ysql_bench_units_total{{{sel},outcome=\"ok\"}}[10m]))"),
        );
        assert_eq!(units, o["units"].as_f64().unwrap(), "{name}");
        assert!(units > 0.0);
        // Per database host, as the report's hosts have them.
        let hosts: f64 = o["hosts"]
            .as_array()
            .map(|h| h.iter().map(|h| h["units"].as_f64().unwrap_or(0.0)).sum())
            .unwrap_or(0.0);
        let on_hosts = scalar(
            pport,
            &format!("sum(max_over_time(ysql_bench_host_units_total{{{sel}}}[10m]))"),
        );
        assert_eq!(on_hosts, hosts, "{name}: units per host");
        assert!(on_hosts > 0.0, "{name}: no units per host");
    }
    let failed = scalar(
        pport,
        &format!(
            "sum(max_over_time(ysql_bench_errors_total{{run_id=\"{a_id}\",sqlstate=\"22012\"}}[10m]))"
        ),
    );
    assert_eq!(failed, op(&a_rep, "script")["failed"].as_f64().unwrap());

    // The gauges: both workers' connections to the one host, no more
    // units in flight than workers, the server's waits sampled.
    let a_sel = format!("run_id=\"{a_id}\",op=\"script\"");
    let conns = scalar(
        pport,
        &format!("max(max_over_time(ysql_bench_connections_open{{{a_sel}}}[10m]))"),
    );
    assert_eq!(conns, 2.0);
    let flying = scalar(
        pport,
        &format!("max(max_over_time(ysql_bench_units_in_flight{{{a_sel}}}[10m]))"),
    );
    assert!((0.0..=2.0).contains(&flying), "{flying}");
    let seen = scalar(
        pport,
        &format!("sum(max_over_time(ysql_bench_server_backends_total{{run_id=\"{a_id}\"}}[10m]))"),
    );
    assert!(seen > 0.0);

    // The p99 of the buckets is the run's within a bucket.
    let ty = &op(&a_rep, "script")["types"][0];
    assert_eq!(ty["name"], "ok.sql");
    let want = ty["latency_ns"]["p99"].as_u64().unwrap();
    let got = p99_of_buckets(
        pport,
        &format!("run_id=\"{a_id}\",op=\"script\",type=\"ok.sql\""),
    );
    within_its_bucket(got, want, "one client");

    // Two clients: their series add up to the merged report.
    let mrep = json(&merged);
    let mo = op(&mrep, "script");
    let units = scalar(
        pport,
        "sum(max_over_time(ysql_bench_units_total{run_id=\"metrics-two\",outcome=\"ok\"}[10m]))",
    );
    assert_eq!(units, mo["units"].as_f64().unwrap());
    let clients = scalar(
        pport,
        "count(max_over_time(ysql_bench_run_info{run_id=\"metrics-two\"}[10m]))",
    );
    assert_eq!(clients, 2.0);
    for (i, p) in b_json.iter().enumerate() {
        let u = scalar(
            pport,
            &format!(
                "sum(max_over_time(ysql_bench_units_total{{run_id=\"metrics-two\",client=\"{i}\",outcome=\"ok\"}}[10m]))"
            ),
        );
        assert_eq!(
            u,
            op(&json(p), "script")["units"].as_f64().unwrap(),
            "client {i}"
        );
    }
    let want = mo["types"][0]["latency_ns"]["p99"].as_u64().unwrap();
    let got = p99_of_buckets(pport, "run_id=\"metrics-two\",type=\"ok.sql\"");
    within_its_bucket(got, want, "two clients");

    // The dashboard: every query has data for the one client's run, and
    // all but the workload's figures (scripts have none) for the two.
    dashboard_queries_return_data(pport, &a_id, from, to, true);
    dashboard_queries_return_data(pport, "metrics-two", from, to, false);
}

#[test]
fn an_address_that_cannot_be_bound_is_refused_before_connecting() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    // Port 1 of 127.0.0.1: nothing listens, so any connection would fail
    // with "cannot connect" — the refusal must come first.
    let url = "host=127.0.0.1 port=1 user=nobody dbname=nothing connect_timeout=2";
    for (addr, says) in [
        (format!("127.0.0.1:{port}"), "cannot listen there"),
        // TEST-NET-1: no interface of this machine has it.
        ("192.0.2.1:9470".to_string(), "cannot listen there"),
        ("9470".to_string(), "is not HOST:PORT"),
    ] {
        let out = bin(
            "ysql-bench",
            &["-u", url, "-o", "select", "--metrics-addr", &addr],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {err}");
        assert!(
            err.contains(says) && err.contains("--metrics-addr"),
            "{addr}: {err}"
        );
        assert!(!err.contains("connect "), "{addr}: connected first: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{addr}: {err}");
    }
    drop(taken);
}

/// Ctrl-C while the endpoint waits for its last scrape ends the wait at
/// once: the reports were written before it, and the exit code is 130.
#[test]
fn an_interrupt_during_the_linger_ends_it_with_the_reports_written() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_ysql-bench"))
        .args([
            "-u",
            &sb.url(),
            "-o",
            "copy-mem",
            "-r",
            "1000",
            "--metrics-addr",
            "127.0.0.1:0",
            "--metrics-linger",
            "10m",
            "--json",
            report.to_str().unwrap(),
        ])
        .env_remove("YSQLBENCH_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let (lines, reader) = follow_lines(child.stderr.take().unwrap());
    // The linger begins once every report is written.
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the run reaches its linger");
        if line.contains("serving the final figures") {
            break;
        }
    }
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Not the ten minutes of the linger: a bound, not a timing.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("Ctrl-C did not end the linger");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    let r = json(&report);
    assert_eq!(op(&r, "copy-mem")["rows"], 1000);
}
