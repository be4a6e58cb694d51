//! The board ([`crate::stats::live`]) as OpenMetrics text, through the
//! Prometheus project's `prometheus-client` crate: a [`Collector`] that
//! reads the board on each scrape and encodes each family with its
//! descriptor, so the exposition's syntax (names, label escaping, `_total`
//! and `_bucket` suffixes, `# EOF`) is the crate's, and the figures ours.
//!
//! Latency histograms are made from the run's HDR histograms at scrape
//! time: every value the HDR histogram holds is counted under the first
//! bound at or above it, on a fixed grid of bounds 2^(1/16) apart
//! ([`BUCKETS_PER_OCTAVE`]), so each bucket is 4.4% wider than the one
//! below. `histogram_quantile` interpolates inside the bucket where the
//! quantile's rank falls, so its answer is within one bucket (4.4%, plus
//! the HDR histogram's own 0.1%) of the run's percentile. The grid is the
//! same for every client, so several clients' buckets add up with
//! `sum by (le)`. Only the bounds from just below the smallest value seen
//! up to [`TOP_NS`] are written (about 350 for a run from 20 µs): below
//! the smallest value every bucket holds 0, which a missing series in a
//! sum also means; above the largest they hold the count, which a missing
//! series would not, so the grid always runs to the top.

use std::borrow::Cow;

use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::stats::interval::IntervalStats;
use crate::stats::live::{Board, Live, LiveOp};

/// Buckets per doubling of latency: bounds 2^(1/16) = 1.044 apart.
pub const BUCKETS_PER_OCTAVE: f64 = 16.0;

/// The highest finite bound, 100 s in nanoseconds: a longer unit counts
/// in `+Inf` only.
pub const TOP_NS: f64 = 1e11;

/// The relative width of a bucket: how far `histogram_quantile` may be
/// from the run's own percentile.
pub fn bucket_resolution() -> f64 {
    2f64.powf(1.0 / BUCKETS_PER_OCTAVE) - 1.0
}

/// Bound number `k` of the grid, in nanoseconds, rounded to a whole
/// nanosecond so that every client writes the same `le`.
fn bound_ns(k: i32) -> f64 {
    2f64.powf(f64::from(k) / BUCKETS_PER_OCTAVE).round()
}

/// The lowest bound: 2^10 ns, 1.024 µs (below it the rounded bounds
/// would repeat; no database round trip is that short).
const FLOOR_K: i32 = 160;

/// The grid, from [`FLOOR_K`] to the first bound at or above [`TOP_NS`],
/// in nanoseconds: made once, so that a scrape only searches it.
fn grid() -> &'static [f64] {
    static GRID: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    GRID.get_or_init(|| {
        let mut g = Vec::new();
        let mut k = FLOOR_K;
        loop {
            g.push(bound_ns(k));
            if bound_ns(k) >= TOP_NS {
                return g;
            }
            k += 1;
        }
    })
}

/// The place in [`grid`] of the first bound at or above `ns` (0 below the
/// floor; past the end above the top).
fn bound_index(ns: f64) -> usize {
    grid().partition_point(|b| *b < ns)
}

/// The bounds, in seconds, of the bucket a value of `ns` nanoseconds is
/// counted in: `histogram_quantile` of a quantile whose HDR value is `ns`
/// lands between them (0 below the floor; `+Inf` above the top).
pub fn bucket_of_ns(ns: u64) -> (f64, f64) {
    let g = grid();
    let i = bound_index(ns as f64);
    let lower = if i == 0 { 0.0 } else { g[i - 1] / 1e9 };
    let upper = g.get(i).map_or(f64::INFINITY, |b| b / 1e9);
    (lower, upper)
}

/// A histogram in nanoseconds as (upper bound in seconds, count in that
/// bucket alone) pairs, `+Inf` last, and its sum in seconds.
pub fn buckets(h: &Histogram<u64>) -> (Vec<(f64, u64)>, f64) {
    let g = grid();
    if h.is_empty() {
        return (vec![(f64::INFINITY, 0)], 0.0);
    }
    // One empty bucket below the smallest value, so that interpolation
    // in the lowest bucket with data starts at its true lower bound.
    let first = bound_index(h.min() as f64)
        .saturating_sub(1)
        .min(g.len() - 1);
    let mut out: Vec<(f64, u64)> = g[first..].iter().map(|b| (b / 1e9, 0)).collect();
    out.push((f64::INFINITY, 0));
    let mut sum = 0.0;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to() as f64;
        let n = v.count_at_value();
        sum += value * n as f64;
        // Past the top: +Inf, the last.
        let last = out.len() - 1;
        let i = bound_index(value).max(first) - first;
        out[i.min(last)].1 += n;
    }
    (out, sum / 1e9)
}

/// The board's collector, registered once with the run's labels.
#[derive(Debug)]
struct BoardCollector(Live);

type Labels = Vec<(&'static str, String)>;

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// What one family writes: a value per label set.
enum Values {
    Counter(Vec<(Labels, u64)>),
    CounterF(Vec<(Labels, f64)>),
    Gauge(Vec<(Labels, f64)>),
}

fn family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: Values,
) -> Result<(), std::fmt::Error> {
    let kind = match values {
        Values::Counter(_) | Values::CounterF(_) => MetricType::Counter,
        Values::Gauge(_) => MetricType::Gauge,
    };
    let mut m = enc.encode_descriptor(name, help, None, kind)?;
    match values {
        Values::Counter(v) => {
            for (l, n) in v {
                m.encode_family(&l)?
                    .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
        }
        Values::CounterF(v) => {
            for (l, n) in v {
                m.encode_family(&l)?
                    .encode_counter::<NoLabelSet, _, f64>(&n, None)?;
            }
        }
        Values::Gauge(v) => {
            for (l, n) in v {
                m.encode_family(&l)?.encode_gauge(&n)?;
            }
        }
    }
    Ok(())
}

/// Per operation and transaction type: `f` of each type's figures.
fn per_type<T>(b: &Board, f: impl Fn(&IntervalStats) -> T) -> Vec<(Labels, T)> {
    let mut v = Vec::new();
    for o in &b.ops {
        for (name, s) in o.types.iter().zip(&o.so_far.types) {
            v.push((labels(&[("op", o.name), ("type", name)]), f(s)));
        }
    }
    v
}

/// Per operation: `f` of it.
fn per_op<T>(b: &Board, f: impl Fn(&LiveOp) -> T) -> Vec<(Labels, T)> {
    b.ops
        .iter()
        .map(|o| (labels(&[("op", o.name)]), f(o)))
        .collect()
}

fn units(b: &Board) -> Vec<(Labels, u64)> {
    let mut v = Vec::new();
    for o in &b.ops {
        for (name, s) in o.types.iter().zip(&o.so_far.types) {
            for (outcome, n) in [("ok", s.ops), ("error", s.errors)] {
                let l = labels(&[("op", o.name), ("type", name), ("outcome", outcome)]);
                v.push((l, n));
            }
        }
    }
    v
}

fn errors(b: &Board) -> Vec<(Labels, u64)> {
    let mut v = Vec::new();
    for o in &b.ops {
        let all = o
            .so_far
            .types
            .iter()
            .chain(std::iter::once(&o.so_far.common));
        for (name, s) in o.types.iter().chain(std::iter::once(&"")).zip(all) {
            for (class, n) in &s.error_classes {
                let l = labels(&[("op", o.name), ("type", name), ("sqlstate", class)]);
                v.push((l, *n));
            }
        }
    }
    v
}

fn conns(b: &Board) -> Vec<(Labels, f64)> {
    let mut v = Vec::new();
    for o in &b.ops {
        for (host, n) in o.hosts.iter().zip(&o.conns) {
            v.push((labels(&[("op", o.name), ("host", host)]), *n as f64));
        }
    }
    v
}

fn host_units(b: &Board) -> Vec<(Labels, u64)> {
    let mut v = Vec::new();
    for o in &b.ops {
        let mut per_host = vec![0u64; o.hosts.len()];
        if let [one] = per_host.as_mut_slice() {
            // The workers count units per host only among several; the
            // one host had every unit.
            *one = o.so_far.types.iter().map(|s| s.ops).sum();
        } else {
            let all = o
                .so_far
                .types
                .iter()
                .chain(std::iter::once(&o.so_far.common));
            for s in all {
                for (n, u) in per_host.iter_mut().zip(&s.host_ops) {
                    *n += u;
                }
            }
        }
        for (host, n) in o.hosts.iter().zip(per_host) {
            v.push((labels(&[("op", o.name), ("host", host)]), n));
        }
    }
    v
}

fn figures(b: &Board) -> Vec<(Labels, f64)> {
    let mut v = Vec::new();
    for o in &b.ops {
        for (key, value) in &o.figures {
            v.push((labels(&[("op", o.name), ("figure", key)]), *value));
        }
    }
    v
}

fn waits(b: &Board) -> Vec<(Labels, u64)> {
    b.waits
        .events
        .iter()
        .map(|(ev, n)| {
            // `type:event`, or `CPU`, or a state: the class is the part
            // before the colon.
            let class = ev.split_once(':').map_or(ev.as_str(), |(c, _)| c);
            (labels(&[("class", class), ("event", ev)]), *n)
        })
        .collect()
}

fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// The counters and gauges of the board.
fn plain_families(enc: &mut DescriptorEncoder, b: &Board) -> Result<(), std::fmt::Error> {
    use Values::*;
    let i = &b.info;
    let mut m = enc.encode_descriptor(
        "ysql_bench_run",
        "The run: its id, this client's index, the operations and the tool's version",
        None,
        MetricType::Info,
    )?;
    m.encode_info(&labels(&[
        ("workload", &i.workload),
        ("version", &i.version),
    ]))?;
    let fams: Vec<(&str, &str, Values)> = vec![
        (
            "ysql_bench_units",
            "Units ended, by operation, transaction type and outcome",
            Counter(units(b)),
        ),
        (
            "ysql_bench_rows",
            "Rows written or read by the units that succeeded",
            Counter(per_type(b, |s| s.rows)),
        ),
        (
            "ysql_bench_errors",
            "Failed units by SQLSTATE (or client-side class)",
            Counter(errors(b)),
        ),
        (
            "ysql_bench_retries",
            "Retries of units (--retry-on, --max-tries)",
            Counter(per_type(b, |s| s.retries)),
        ),
        (
            "ysql_bench_late_units",
            "Units whose latency exceeded --latency-limit",
            Counter(per_type(b, |s| s.late)),
        ),
        (
            "ysql_bench_skipped_units",
            "Units skipped as already later than --latency-limit when due",
            Counter(per_op(b, |o| o.so_far.common.skipped)),
        ),
        (
            "ysql_bench_reconnects",
            "Connections made again after one was lost",
            Counter(per_op(b, |o| o.so_far.common.reconnects)),
        ),
        (
            "ysql_bench_schedule_lag_seconds",
            "Schedule lag summed over the units (--rate): divide its rate by the units' for the mean",
            CounterF(per_type(b, |s| secs(s.lag_total))),
        ),
        (
            "ysql_bench_schedule_lag_max_seconds",
            "The largest schedule lag of the last finished interval",
            Gauge(per_op(b, |o| o.lag_max_ns as f64 / 1e9)),
        ),
        (
            "ysql_bench_units_in_flight",
            "Units started and not yet ended, as the worker threads last handed over",
            Gauge(per_op(b, |o| o.in_flight.iter().sum::<u64>() as f64)),
        ),
        (
            "ysql_bench_host_units",
            "Units that succeeded, per database host",
            Counter(host_units(b)),
        ),
        (
            "ysql_bench_connections_open",
            "The workers' connections open per database host at the last interval's end",
            Gauge(conns(b)),
        ),
        (
            "ysql_bench_operation_running",
            "1 while the operation's workers run",
            Gauge(per_op(b, |o| f64::from(u8::from(o.running)))),
        ),
        (
            "ysql_bench_workload_figure",
            "A workload's own figure over the last finished interval (TPC-C: tpmc, efficiency)",
            Gauge(figures(b)),
        ),
        (
            "ysql_bench_server_backends",
            "The run's backends seen in the server's samples of pg_stat_activity, by wait class and event",
            Counter(waits(b)),
        ),
        (
            "ysql_bench_server_samples",
            "Samples of pg_stat_activity taken (one per node and tick)",
            Counter(vec![(Vec::new(), b.waits.samples)]),
        ),
        (
            "ysql_bench_run_ended",
            "1 once the run has ended and its reports are written: the figures are final",
            Gauge(vec![(Vec::new(), f64::from(u8::from(b.ended)))]),
        ),
    ];
    for (name, help, values) in fams {
        family(enc, name, help, values)?;
    }
    Ok(())
}

/// One histogram as written: its buckets, sum and count.
type Written = (Vec<(f64, u64)>, f64, u64);

fn written(h: &Histogram<u64>) -> Written {
    let (bk, sum) = buckets(h);
    (bk, sum, h.len())
}

/// The latency and service-time histograms per operation and type. The
/// buckets of a type's latency are made once, and serve as its service
/// time too while that was the latency (no unit sent after it was due).
fn histograms(enc: &mut DescriptorEncoder, b: &Board) -> Result<(), std::fmt::Error> {
    let mut rows: Vec<(Labels, Written, Option<Written>)> = Vec::new();
    for o in &b.ops {
        for (ty, s) in o.types.iter().zip(&o.so_far.types) {
            // None while every unit's service time was its latency.
            let service = s.service.as_ref().map(written);
            let l = labels(&[("op", o.name), ("type", ty)]);
            rows.push((l, written(&s.latency), service));
        }
    }
    let fams = [
        (
            "ysql_bench_latency_seconds",
            "Latency of the units that succeeded, from when each was due (no coordinated omission)",
        ),
        (
            "ysql_bench_service_time_seconds",
            "Service time of the units that succeeded, from when each was sent (the latency without --rate)",
        ),
    ];
    for (n, (name, help)) in fams.into_iter().enumerate() {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Histogram)?;
        for (l, latency, service) in &rows {
            let (bk, sum, count) = match (n, service) {
                (1, Some(w)) => w,
                _ => latency,
            };
            m.encode_family(l)?
                .encode_histogram::<NoLabelSet>(*sum, *count, bk, None)?;
        }
    }
    Ok(())
}

impl Collector for BoardCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // The board is copied out under its lock, and encoded without it:
        // the collector that feeds it never waits for a slow scrape.
        let b = self.0.read(Board::clone);
        plain_families(&mut enc, &b)?;
        histograms(&mut enc, &b)
    }
}

/// The registry of a run: the board's collector, every series labelled
/// with the run id and the client's index.
pub fn registry(live: Live) -> Registry {
    let info = live.read(|b| b.info.clone());
    let consts: [(Cow<'static, str>, Cow<'static, str>); 2] = [
        (Cow::Borrowed("run_id"), Cow::Owned(info.run_id)),
        (Cow::Borrowed("client"), Cow::Owned(info.client.to_string())),
    ];
    let mut r = Registry::with_labels(consts.into_iter());
    r.register_collector(Box::new(BoardCollector(live)));
    r
}

/// The exposition of `registry`: OpenMetrics text, `# EOF` last.
pub fn text(registry: &Registry) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut s, registry);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::interval::IntervalSet;
    use crate::stats::live::RunInfo;
    use crate::stats::outcome::Outcome;
    use crate::stats::{Percentiles, Timing, record_ns};
    use std::time::Duration;

    #[test]
    fn bounds_are_a_sixteenth_of_an_octave_apart_and_found_exactly() {
        let g = grid();
        assert_eq!(g[0], 1024.0);
        assert!(g[g.len() - 1] >= TOP_NS && g[g.len() - 2] < TOP_NS);
        for (i, w) in g.windows(2).enumerate() {
            let r = w[1] / w[0];
            assert!((r - 1.0 - bucket_resolution()).abs() < 2e-3, "{i}: {r}");
            assert_eq!(bound_index(w[0]), i);
            assert_eq!(bound_index(w[0] + 1.0), i + 1);
        }
        assert_eq!(bound_index(1.0), 0);
        assert_eq!(bound_index(TOP_NS * 2.0), g.len());
        assert_eq!(bucket_of_ns(1), (0.0, 1.024e-6));
        assert_eq!(bucket_of_ns(1024), (0.0, 1.024e-6));
        assert_eq!(bucket_of_ns(1025), (1.024e-6, 1.069e-6));
        assert_eq!(bucket_of_ns(2 * TOP_NS as u64).1, f64::INFINITY);
    }

    #[test]
    fn values_below_the_floor_and_above_the_top_are_counted() {
        let mut h = crate::stats::new_histogram();
        for ns in [1u64, 500, 2_000, 200_000_000_000] {
            record_ns(&mut h, ns);
        }
        let (bk, _) = buckets(&h);
        assert_eq!(bk.iter().map(|b| b.1).sum::<u64>(), 4);
        assert_eq!(bk[0], (1.024e-6, 2));
        assert_eq!(bk[bk.len() - 1], (f64::INFINITY, 1));
        let les: Vec<f64> = bk.iter().map(|b| b.0).collect();
        assert!(les.windows(2).all(|w| w[0] < w[1]), "bounds increase");
    }

    /// What histogram_quantile does with cumulative buckets: linear
    /// interpolation inside the bucket where the rank falls.
    fn quantile(q: f64, bk: &[(f64, u64)]) -> f64 {
        let total: u64 = bk.iter().map(|b| b.1).sum();
        let rank = q * total as f64;
        let mut cum = 0u64;
        for (i, (ub, n)) in bk.iter().enumerate() {
            if (cum + n) as f64 >= rank && *n > 0 {
                let lower = if i == 0 { 0.0 } else { bk[i - 1].0 };
                return lower + (ub - lower) * (rank - cum as f64) / *n as f64;
            }
            cum += n;
        }
        f64::NAN
    }

    #[test]
    fn the_quantile_of_the_buckets_is_within_a_bucket_of_the_hdr_percentile() {
        // A long tail: 20 µs .. 50 ms, skewed.
        let mut h = crate::stats::new_histogram();
        let mut x: u64 = 7;
        for _ in 0..200_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            record_ns(&mut h, (20_000.0 * (1.0 / (1.0 - u * 0.9996))) as u64);
        }
        let (bk, sum) = buckets(&h);
        assert_eq!(bk.iter().map(|b| b.1).sum::<u64>(), h.len());
        assert!((sum / h.len() as f64 * 1e9 - h.mean()).abs() / h.mean() < 2e-3);
        let p = Percentiles::of(&h);
        for (q, want) in [(0.5, p.p50), (0.99, p.p99), (0.999, p.p999)] {
            let got = quantile(q, &bk);
            let err = (got * 1e9 - want as f64).abs() / want as f64;
            assert!(err <= bucket_resolution() + 2e-3, "q {q}: {got} vs {want}");
            // Not merely near: in the very bucket the HDR percentile is
            // counted in (a bucket off by one would still be within 9%).
            let (lo, hi) = bucket_of_ns(want);
            assert!(lo <= got && got <= hi, "q {q}: {got} not in [{lo}, {hi}]");
        }
    }

    #[test]
    fn the_exposition_has_the_run_labels_counters_and_histograms() {
        let live = Live::new(RunInfo {
            run_id: "r1".into(),
            client: 1,
            workload: "select".into(),
            version: "0.2.0".into(),
        });
        let op = live.begin_op("select", &["query"], vec!["127.0.0.1:5432".into()]);
        let mut piece = IntervalSet::new(1);
        let o = Outcome {
            rows: 1,
            missing: 0,
        };
        for us in [50u64, 60, 70] {
            piece
                .of(0)
                .record(Timing::unscheduled(Duration::from_micros(us)), o);
        }
        piece.of(0).record_error("40001");
        live.add_piece(op, 0, &piece, 2);
        let text = text(&registry(live));
        assert!(text.ends_with("# EOF\n"), "{text}");
        for want in [
            r#"ysql_bench_units_total{run_id="r1",client="1",op="select",type="query",outcome="ok"} 3"#,
            r#"ysql_bench_errors_total{run_id="r1",client="1",op="select",type="query",sqlstate="40001"} 1"#,
            r#"ysql_bench_latency_seconds_count{run_id="r1",client="1",op="select",type="query"} 3"#,
            r#"ysql_bench_latency_seconds_bucket{run_id="r1",client="1",le="+Inf",op="select",type="query"} 3"#,
            r#"ysql_bench_units_in_flight{run_id="r1",client="1",op="select"} 2.0"#,
            r#"ysql_bench_run_info{run_id="r1",client="1",workload="select",version="0.2.0"} 1"#,
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }
}
