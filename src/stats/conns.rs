//! Connections: where each worker's connections went, and with
//! `--reconnect` how long each took to make.
//!
//! Kept apart from the units' latency: a new connection (TCP, TLS,
//! authentication, a backend process on the server) costs far more than a
//! point query, and pgbench -C users want to see both. Counters are per
//! endpoint index (see [`crate::db::nodes::ConnSource::labels`]), grown on
//! first use, so recording stays a vector index on the hot path.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::{nanos, new_histogram, record_ns};

#[derive(Clone, Debug)]
pub struct ConnStats {
    /// Connections taken, per endpoint (pooled: one per worker and
    /// operation; with --reconnect: one per unit).
    pub opened: Vec<u64>,
    /// Units that succeeded, per endpoint.
    pub ops: Vec<u64>,
    /// Time to make each new connection (--reconnect only), in ns.
    pub connect: Histogram<u64>,
    /// Sum of the connect times (exact; the histogram's mean is rounded).
    pub connect_total: Duration,
}

impl Default for ConnStats {
    fn default() -> Self {
        ConnStats {
            opened: Vec::new(),
            ops: Vec::new(),
            connect: new_histogram(),
            connect_total: Duration::ZERO,
        }
    }
}

fn bump(v: &mut Vec<u64>, i: usize, by: u64) {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += by;
}

impl ConnStats {
    /// A connection was taken from endpoint `host`; `took` is set when it
    /// was made for this unit (--reconnect).
    pub fn opened(&mut self, host: usize, took: Option<Duration>) {
        bump(&mut self.opened, host, 1);
        if let Some(d) = took {
            self.connect_total += d;
            record_ns(&mut self.connect, nanos(d));
        }
    }

    /// A unit succeeded on endpoint `host`.
    pub fn op_on(&mut self, host: usize) {
        bump(&mut self.ops, host, 1);
    }

    /// Connections made and timed (--reconnect).
    pub fn timed(&self) -> u64 {
        self.connect.len()
    }

    pub fn add(&mut self, other: &ConnStats) {
        for (i, n) in other.opened.iter().enumerate() {
            bump(&mut self.opened, i, *n);
        }
        for (i, n) in other.ops.iter().enumerate() {
            bump(&mut self.ops, i, *n);
        }
        // The histograms grow as needed, so adding cannot fail.
        let _ = self.connect.add(&other.connect);
        self.connect_total += other.connect_total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_per_host_and_connect_times_add_up() {
        let mut a = ConnStats::default();
        let mut b = ConnStats::default();
        a.opened(0, None);
        a.op_on(0);
        a.op_on(0);
        b.opened(2, Some(Duration::from_millis(3)));
        b.opened(2, Some(Duration::from_millis(5)));
        b.op_on(2);
        a.add(&b);
        assert_eq!(a.opened, [1, 0, 2]);
        assert_eq!(a.ops, [2, 0, 1]);
        assert_eq!(a.timed(), 2);
        assert_eq!(a.connect_total, Duration::from_millis(8));
        let p99 = a.connect.value_at_quantile(0.99);
        assert!((4_990_000..=5_010_000).contains(&p99), "{p99}");
    }
}
