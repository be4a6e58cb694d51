//! The connection lines of a summary: connections and units per host when
//! there are several hosts, and under `--reconnect` the connect time and
//! the throughput with and without it.
//!
//! "Without" follows pgbench: the connect time of an average worker
//! (all workers' connect time / threads) is taken out of the wallclock.

use std::io::{self, Write};
use std::time::Duration;

use super::summary::human;
use crate::stats::{OpResult, Percentiles, nanos};

const W: usize = 22;

/// Throughput with the connect time of an average worker taken out of the
/// wallclock; None when nothing was connected under --reconnect.
pub fn rate_without_connect(r: &OpResult) -> Option<f64> {
    let c = &r.total.conns;
    if c.timed() == 0 {
        return None;
    }
    let items = r.items();
    let per_worker = c.connect_total.as_secs_f64() / r.threads.max(1) as f64;
    let wall = (r.wallclock.as_secs_f64() - per_worker).max(0.0);
    Some(if wall > 0.0 { items as f64 / wall } else { 0.0 })
}

/// Writes the connection lines, if there is anything to say.
pub fn write_conn_lines(w: &mut dyn Write, r: &OpResult) -> io::Result<()> {
    let c = &r.total.conns;
    if c.timed() > 0 {
        let avg = Duration::from_secs_f64(c.connect_total.as_secs_f64() / c.timed() as f64);
        let p99 = Duration::from_nanos(c.connect.value_at_quantile(0.99));
        writeln!(
            w,
            "{:<W$}: {} new (--reconnect), avg {}, p99 {}",
            "connections",
            c.timed(),
            human(avg),
            human(p99)
        )?;
        if let Some(rate) = rate_without_connect(r) {
            let label = if r.spec.is_load() {
                "rows/s w/o connect".to_string()
            } else {
                format!("{}/s w/o connect", r.spec.units)
            };
            writeln!(w, "{label:<W$}: {rate:.1}")?;
        }
    }
    if r.hosts.len() > 1 || c.timed() > 0 {
        for (i, host) in r.hosts.iter().enumerate() {
            let opened = c.opened.get(i).copied().unwrap_or(0);
            let ops = c.ops.get(i).copied().unwrap_or(0);
            writeln!(
                w,
                "{:<W$}: {opened} connections, {ops} {}",
                format!("host {host}"),
                r.spec.units
            )?;
        }
    }
    Ok(())
}

/// One host in the JSON report.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JsonHost {
    pub host: String,
    pub connections: u64,
    pub units: u64,
}

/// The connect figures of --reconnect in the JSON report.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JsonConnect {
    pub connections: u64,
    pub avg_ns: u64,
    pub connect_ns: Percentiles,
    /// Throughput with an average worker's connect time taken out.
    pub units_per_s_without_connect: f64,
    pub rows_per_s_without_connect: f64,
}

/// Connections and units per host, for the JSON report.
pub fn json_hosts(r: &OpResult) -> Vec<JsonHost> {
    let c = &r.total.conns;
    r.hosts
        .iter()
        .enumerate()
        .map(|(i, host)| JsonHost {
            host: host.clone(),
            connections: c.opened.get(i).copied().unwrap_or(0),
            units: c.ops.get(i).copied().unwrap_or(0),
        })
        .collect()
}

/// The --reconnect figures, for the JSON report; None without --reconnect.
pub fn json_connect(r: &OpResult) -> Option<JsonConnect> {
    let c = &r.total.conns;
    if c.timed() == 0 {
        return None;
    }
    let per_worker = c.connect_total.as_secs_f64() / r.threads.max(1) as f64;
    let wall = (r.wallclock.as_secs_f64() - per_worker).max(0.0);
    let per_s = |n: u64| if wall > 0.0 { n as f64 / wall } else { 0.0 };
    Some(JsonConnect {
        connections: c.timed(),
        avg_ns: nanos(c.connect_total) / c.timed(),
        connect_ns: Percentiles::of(&c.connect),
        units_per_s_without_connect: per_s(r.total.ops),
        rows_per_s_without_connect: per_s(r.total.rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Timing;
    use crate::workload::Outcome;

    fn select(threads: usize, wall_ms: u64, hosts: &[&str]) -> OpResult {
        let mut r = OpResult::new(crate::workload::select::SPEC.kind(), threads);
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
        write_conn_lines(&mut out, &r).unwrap();
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
        write_conn_lines(&mut out, &r).unwrap();
        assert!(out.is_empty());
        assert_eq!(rate_without_connect(&r), None);
    }
}
