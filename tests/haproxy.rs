//! haproxy/haproxy.cfg, for real: the shipped file is valid, and the same
//! file pointed at two sandbox nodes spreads a select run's connections
//! over both (counted on each node).

mod common;
use common::*;

use ysql_bench::db::sandbox::Sandbox;

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/haproxy/haproxy.cfg");

/// The shipped configuration, listening on `port` on 127.0.0.1, with the
/// example servers replaced by `nodes`, and the health check's user by the
/// sandbox's superuser.
fn config_for(port: u16, nodes: &[&Sandbox]) -> String {
    let shipped = std::fs::read_to_string(SHIPPED).unwrap();
    let mut out = String::new();
    let mut servers_added = false;
    for line in shipped.lines() {
        let t = line.trim_start();
        if t.starts_with("bind ") {
            out.push_str(&format!("    bind 127.0.0.1:{port}\n"));
        } else if t.starts_with("server ") {
            if !servers_added {
                for (i, sb) in nodes.iter().enumerate() {
                    out.push_str(&format!(
                        "    server node{i} 127.0.0.1:{} check\n",
                        sb.port()
                    ));
                }
                servers_added = true;
            }
        } else if t.starts_with("option pgsql-check") {
            out.push_str("    option pgsql-check user postgres\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(servers_added, "the shipped haproxy.cfg has no server lines");
    out
}

#[test]
fn the_shipped_config_is_valid() {
    let out = system_program("haproxy")
        .args(["-c", "-f", SHIPPED])
        .output()
        .expect("haproxy runs (scripts/install-deps.sh installs it)");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_through_haproxy_reaches_both_nodes() {
    let (a, b) = (sandbox(), sandbox());
    for sb in [&a, &b] {
        let (r, s) = run_args(sb, &["-o", "copy-mem", "-r", "1000", "-f", "8"]).await;
        assert!(r.succeeded(), "{s}");
    }
    let dir = shared_dir();
    let port = free_port();
    let cfg = dir.path().join("haproxy.cfg");
    std::fs::write(&cfg, config_for(port, &[&a, &b])).unwrap();
    let log = dir.path().join("haproxy.log");
    let mut cmd = system_program("haproxy");
    // -db: stay in the foreground, so that the guard's kill ends it.
    cmd.arg("-db")
        .arg("-f")
        .arg(&cfg)
        .stdout(std::fs::File::create(&log).unwrap());
    cmd.stderr(std::fs::File::options().append(true).open(&log).unwrap());
    let _haproxy = Daemon::start("haproxy", cmd, port, log, false);

    let (ca, cb) = (client(&a).await, client(&b).await);
    let before = (
        index_scans(&ca, "test_table").await,
        index_scans(&cb, "test_table").await,
    );
    let url = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    let (report, summary) = run_plain(&[
        "-u", &url, "-o", "select", "-r", "1000", "-t", "4", "--time", "1s",
    ])
    .await;
    assert!(report.succeeded(), "{summary}");
    let ops = report.operations[0].total.ops as i64;
    assert!(ops > 100, "{summary}");
    drop(report);
    let after = (
        index_scans(&ca, "test_table").await,
        index_scans(&cb, "test_table").await,
    );
    let (on_a, on_b) = (after.0 - before.0, after.1 - before.1);
    assert!(on_a > 0 && on_b > 0, "a: {on_a}, b: {on_b}");
    assert_eq!(on_a + on_b, ops);
}
