//! The connection lines of a summary: connections and units per host when
//! there are several hosts, the same per YugabyteDB zone when the nodes
//! were discovered, and under `--reconnect` the connect time and
//! the throughput with and without it.
//!
//! "Without" follows pgbench: the connect time of an average worker
//! (all workers' connect time / threads) is taken out of the wallclock
//! (see [`crate::stats::record::connect`]).

use std::io::{self, Write};
use std::time::Duration;

use super::summary::human;
use crate::stats::OpResult;
use crate::stats::record::OpRecord;

const W: usize = 22;

/// Throughput with the connect time of an average worker taken out of the
/// wallclock; None when nothing was connected under --reconnect.
pub fn rate_without_connect(r: &OpResult) -> Option<f64> {
    let c = crate::stats::record::connect(r)?;
    Some(if r.spec.is_load() {
        c.rows_per_s_without_connect
    } else {
        c.units_per_s_without_connect
    })
}

/// Writes the connection lines, if there is anything to say.
pub fn write_conn_lines(w: &mut dyn Write, r: &OpRecord) -> io::Result<()> {
    if let Some(c) = &r.connect {
        let avg = Duration::from_nanos(c.avg_ns);
        let p99 = Duration::from_nanos(c.connect_ns.p99);
        writeln!(
            w,
            "{:<W$}: {} new (--reconnect), avg {}, p99 {}",
            "connections",
            c.connections,
            human(avg),
            human(p99)
        )?;
        let (label, rate) = if r.load {
            (
                "rows/s w/o connect".to_string(),
                c.rows_per_s_without_connect,
            )
        } else {
            (
                format!("{}/s w/o connect", r.units()),
                c.units_per_s_without_connect,
            )
        };
        writeln!(w, "{label:<W$}: {rate:.1}")?;
    }
    if r.hosts.len() > 1 || r.connect.is_some() {
        for h in &r.hosts {
            writeln!(
                w,
                "{:<W$}: {} connections, {} {}",
                format!("host {}", h.host),
                h.connections,
                h.units,
                r.units()
            )?;
        }
    }
    for z in &r.zones {
        writeln!(
            w,
            "{:<W$}: {} host(s), {} connections, {} {}",
            format!("zone {}", z.zone),
            z.hosts,
            z.connections,
            z.units,
            r.units()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Timing;
    use crate::workload::Outcome;

    fn select(threads: usize, wall_ms: u64, hosts: &[&str]) -> OpResult {
        let mut r = OpResult::new(crate::workload::basic::select::SPEC.kind(), threads);
        r.table_rows = 100;
        r.wallclock = Duration::from_millis(wall_ms);
        r.hosts = hosts.iter().map(|h| h.to_string()).collect();
        r
    }

    #[test]
    fn reconnect_lines_show_connect_time_and_rate_without_it() {
        // 2 threads, 100 queries in 1 s, 100 connects of 4 ms = 400 ms, so
        // 200 ms per worker: 100 queries in 0.8 s without connecting.
        let mut r = select(2, 1000, &["a:1", "b:2"]);
        for i in 0..100 {
            r.total.record(
                Timing::unscheduled(Duration::from_micros(100)),
                Outcome {
                    rows: 1,
                    missing: 0,
                },
            );
            r.total.conns.opened(i % 2, Some(Duration::from_millis(4)));
            r.total.conns.op_on(i % 2);
        }
        assert!((rate_without_connect(&r).unwrap() - 125.0).abs() < 1e-9);
        let mut out = Vec::new();
        write_conn_lines(&mut out, &OpRecord::of(&r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("connections           : 100 new (--reconnect), avg 4.000 ms, p99 4."),
            "{text}"
        );
        assert!(text.contains("queries/s w/o connect : 125.0"), "{text}");
        assert!(
            text.contains("host a:1              : 50 connections, 50 queries"),
            "{text}"
        );
        assert!(
            text.contains("host b:2              : 50 connections, 50 queries"),
            "{text}"
        );
    }

    #[test]
    fn one_pooled_host_adds_no_lines() {
        let mut r = select(1, 1000, &["a:1"]);
        r.total.conns.opened(0, None);
        let mut out = Vec::new();
        write_conn_lines(&mut out, &OpRecord::of(&r)).unwrap();
        assert!(out.is_empty());
        assert_eq!(rate_without_connect(&r), None);
    }

    #[test]
    fn discovered_hosts_add_a_line_per_zone() {
        let mut r = select(3, 1000, &["a:1", "b:2", "c:3"]);
        r.host_places = vec![
            ("aws.r1.z1".into(), "primary".into()),
            ("aws.r2.z2".into(), "primary".into()),
            ("aws.r1.z1".into(), "read_replica".into()),
        ];
        for (host, n) in [(0, 3), (1, 5), (2, 7)] {
            for _ in 0..n {
                r.total.conns.op_on(host);
            }
            r.total.conns.opened(host, None);
        }
        let rec = OpRecord::of(&r);
        assert_eq!(rec.hosts[2].node_type, "read_replica");
        let mut out = Vec::new();
        write_conn_lines(&mut out, &rec).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("zone aws.r1.z1        : 2 host(s), 2 connections, 10 queries"),
            "{text}"
        );
        assert!(
            text.contains("zone aws.r2.z2        : 1 host(s), 1 connections, 5 queries"),
            "{text}"
        );
        // Two clients' zones add up by name.
        let both = crate::stats::record::add_zones(&[&rec.zones, &rec.zones[..1]]);
        assert_eq!(both[0].units, 20);
        assert_eq!(both[0].hosts, 2);
        assert_eq!(both[1].units, 5);
    }
}
