//! Several clients' records of one run (`--clients`) made into one:
//! what `ysql-bench merge` writes.
//!
//! Counts are summed, and percentiles come from the sum of the clients'
//! HDR histograms ([`Stats::add`]), so they are exact within HDR's
//! precision, where adding throughputs and taking the largest p99 (what
//! is usually done) is not a percentile of anything. The intervals keep
//! their histograms too (compressed, [`IntervalFigures::histograms`]), so
//! the merged intervals' percentiles are exact as well: they add by the
//! one rule of interval figures (`AddAssign` of
//! [`IntervalFigures`]). Intervals are lined up on the database's clock
//! (each operation's `start.at_s`), not on the clients' clocks.
//!
//! The throughput of a merged operation is over the window all clients
//! shared (from the last client's start of measurement to the first
//! client's end), counted from the merged intervals that lie in it; when
//! no whole interval does, over the run's whole span.
//!
//! A workload's own figures (tpmC) are made again by the rule the
//! workload put on each ([`Rule`]); a figure without one is each
//! client's own and left out.

use std::collections::{BTreeMap, BTreeSet};

use super::outcome::{Metric, Rule};
use super::record::{ClientShare, OpRecord, OpStart, Rates, RunCluster, RunRecord, TypeRecord};
use super::{IntervalFigures, Stats, new_histogram};

/// The configuration fields that may differ between the clients of one
/// run: where each connected, each client's own seed, threads and pace
/// (its share of `--rate`, or its `--client-rate`), and how it spread its
/// connections (a client per region has its own `--topology-keys`). The
/// merged report adds the threads and the paces, and lists the clients'
/// topologies when they differ.
const PER_CLIENT: &[&str] = &[
    "target",
    "seed",
    "threads",
    "rate",
    "load_balance",
    "topology",
    "sslmode",
    "command_line",
];

/// Why `b` cannot be merged with `a`, naming the first difference.
pub fn difference(a: &RunRecord, b: &RunRecord) -> Option<String> {
    let va = serde_json::to_value(&a.config).ok()?;
    let vb = serde_json::to_value(&b.config).ok()?;
    let (Some(ma), Some(mb)) = (va.as_object(), vb.as_object()) else {
        return None;
    };
    let keys: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    for k in keys {
        if PER_CLIENT.contains(&k.as_str()) {
            continue;
        }
        let (x, y) = (ma.get(k), mb.get(k));
        if x != y {
            let show =
                |v: Option<&serde_json::Value>| v.map_or("none".to_string(), |v| v.to_string());
            return Some(format!(
                "{k} is {} in one and {} in the other",
                show(x),
                show(y)
            ));
        }
    }
    let ops_a: Vec<&str> = a.operations.iter().map(|o| o.operation.as_str()).collect();
    let ops_b: Vec<&str> = b.operations.iter().map(|o| o.operation.as_str()).collect();
    if ops_a != ops_b {
        return Some(format!(
            "the operations that ran are {} in one and {} in the other",
            ops_a.join(","),
            ops_b.join(",")
        ));
    }
    match (&a.cluster, &b.cluster) {
        (Some(x), Some(y)) if x.run_id != y.run_id => Some(format!(
            "the run id is {} in one and {} in the other",
            x.run_id, y.run_id
        )),
        (Some(x), Some(y)) if x.clients != y.clients => Some(format!(
            "--clients is {} in one and {} in the other",
            x.clients, y.clients
        )),
        (Some(_), None) | (None, Some(_)) => {
            Some("one is a client of a --clients run and the other is not".to_string())
        }
        _ => None,
    }
}

/// One record of several clients' records, already checked to be of one
/// run ([`difference`]), in client order; None when they ran different
/// numbers of operations (or there are none).
pub fn merge(mut parts: Vec<RunRecord>) -> Option<RunRecord> {
    let n_ops = parts.first()?.operations.len();
    if parts.iter().any(|r| r.operations.len() != n_ops) {
        return None;
    }
    let indexes: Vec<usize> = parts
        .iter()
        .enumerate()
        .map(|(k, r)| r.cluster.as_ref().and_then(|c| c.client_index).unwrap_or(k))
        .collect();
    let operations = (0..n_ops)
        .map(|i| {
            let ops: Vec<&OpRecord> = parts.iter().map(|r| &r.operations[i]).collect();
            merge_operation(&ops, &indexes)
        })
        .collect();
    // Every client's threads and pace together: the run's.
    let threads = parts.iter().map(|r| r.config.threads).sum();
    let rate = parts.iter().map(|r| r.config.rate).sum::<Option<f64>>();
    let mut topologies: Vec<String> = Vec::new();
    for t in parts.iter().filter_map(|r| r.config.topology.clone()) {
        if !topologies.contains(&t) {
            topologies.push(t);
        }
    }
    let mut first = parts.remove(0);
    first.config.threads = threads;
    first.config.rate = rate;
    first.config.topology = (!topologies.is_empty()).then(|| topologies.join("; "));
    first.config.command_line.clear();
    let cluster = first.cluster.as_ref().map(|c| RunCluster {
        run_id: c.run_id.clone(),
        clients: c.clients,
        client_index: None,
        run_seed: c.run_seed,
        merged: std::iter::once(c.client_index)
            .chain(
                parts
                    .iter()
                    .map(|r| r.cluster.as_ref().and_then(|c| c.client_index)),
            )
            .flatten()
            .collect(),
    });
    Some(RunRecord {
        operations,
        cluster,
        // Each client measured it on its own, when it ended: not a figure
        // of the merged run.
        row_size: None,
        // Judged again on the merged figures (`merge` does, by the
        // clients' criteria or its own --slo).
        slo: None,
        ..first
    })
}

/// Where an operation's measurement started and ended, in seconds on the
/// database's clock (or from a common zero without a start).
fn window(o: &OpRecord) -> (f64, f64) {
    let at = o.start.as_ref().map_or(0.0, |s| s.at_s) + o.warmup_s.unwrap_or(0.0);
    (at, at + o.wallclock_s)
}

/// The clients' windows on the common clock: from the first start, the
/// span of them all, and the part every client measured.
struct Windows {
    /// Each client's start, from the first client's.
    offsets: Vec<f64>,
    span: f64,
    shared: (f64, f64),
    /// The longest interval of any client: the bins of the merged ones.
    interval_s: f64,
}

impl Windows {
    fn of(ops: &[&OpRecord]) -> Windows {
        let w: Vec<(f64, f64)> = ops.iter().map(|o| window(o)).collect();
        let begin = w.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
        let end = w.iter().map(|w| w.1).fold(f64::NEG_INFINITY, f64::max);
        let shared_begin = w.iter().map(|w| w.0).fold(f64::NEG_INFINITY, f64::max);
        let shared_end = w.iter().map(|w| w.1).fold(f64::INFINITY, f64::min);
        Windows {
            offsets: w.iter().map(|w| w.0 - begin).collect(),
            span: (end - begin).max(0.0),
            shared: (shared_begin - begin, shared_end - begin),
            interval_s: ops
                .iter()
                .flat_map(|o| o.intervals.iter())
                .map(|f| f.seconds)
                .fold(0.0, f64::max),
        }
    }

    /// The clients' figures added up, their intervals on the common
    /// clock, and their rate over the shared window.
    fn merge(
        &self,
        parts: &[(&Stats, Rates, &[IntervalFigures])],
    ) -> (Rates, Stats, Vec<IntervalFigures>) {
        let lists: Vec<(&[IntervalFigures], f64)> = parts
            .iter()
            .zip(&self.offsets)
            .map(|(p, offset)| (p.2, *offset))
            .collect();
        let intervals = merge_intervals(&lists, self.interval_s);
        let all: Vec<(&Stats, Rates)> = parts.iter().map(|p| (p.0, p.1)).collect();
        let (rates, figures) = merge_figures(&all, &intervals, self.shared, self.span);
        (rates, figures, intervals)
    }
}

/// One operation as several clients ran it together (`indexes`: each
/// one's client index), made into one: the rule of `merge`, which a
/// search of several clients (`--find-max`) applies to each step.
pub fn merge_operation(ops: &[&OpRecord], indexes: &[usize]) -> OpRecord {
    let first = ops[0];
    let win = Windows::of(ops);
    let parts: Vec<_> = ops
        .iter()
        .map(|o| (&o.figures, o.rates, o.intervals.as_slice()))
        .collect();
    let (rates, figures, intervals) = win.merge(&parts);
    let types: Vec<TypeRecord> = first
        .types
        .iter()
        .enumerate()
        .map(|(t, ty)| {
            let same: Vec<_> = ops
                .iter()
                .filter_map(|o| o.types.get(t))
                .map(|x| (&x.figures, x.rates, x.intervals.as_slice()))
                .collect();
            let (rates, figures, intervals) = win.merge(&same);
            TypeRecord {
                name: ty.name.clone(),
                rates,
                figures,
                intervals,
            }
        })
        .collect();
    let metric_lines = merged_metrics(ops, &types);
    let interval_metrics = merged_interval_metrics(ops, &metric_lines, &types);
    OpRecord {
        // Every client snapshots the same server, so their server figures
        // overlap and do not add up: a merged report leaves them out (each
        // client's report keeps its own).
        server: None,
        metrics: metric_lines
            .iter()
            .map(|m| (m.key.clone(), m.value))
            .collect(),
        metric_lines,
        interval_metrics,
        pauses: ops.iter().find_map(|o| o.pauses.clone()),
        terminals: ops.iter().filter_map(|o| o.terminals).reduce(|a, b| a + b),
        succeeded: ops.iter().all(|o| o.succeeded),
        failure: ops.iter().find_map(|o| o.failure.clone()),
        interrupted: ops.iter().any(|o| o.interrupted),
        timed_out: ops.iter().any(|o| o.timed_out),
        threads: ops.iter().map(|o| o.threads).sum(),
        wallclock_s: win.span,
        db_time_s: ops.iter().map(|o| o.db_time_s).sum(),
        warmup_interrupted: ops.iter().any(|o| o.warmup_interrupted),
        rates,
        figures,
        rate_target: ops.iter().map(|o| o.rate_target).sum::<Option<f64>>(),
        thread_rows: ops
            .iter()
            .flat_map(|o| o.thread_rows.iter().copied())
            .collect(),
        intervals,
        types,
        statements: merged_statements(ops),
        // Only the leader cleans up: its lines are the run's.
        findings: ops
            .iter()
            .find(|o| !o.findings.is_empty())
            .map(|o| o.findings.clone())
            .unwrap_or_default(),
        // Per host and connect figures are each client's own.
        hosts: if ops.len() == 1 {
            first.hosts.clone()
        } else {
            Vec::new()
        },
        // A zone is the cluster's, not one client's: they add up.
        zones: super::record::add_zones(
            &ops.iter().map(|o| o.zones.as_slice()).collect::<Vec<_>>(),
        ),
        connect: if ops.len() == 1 {
            first.connect.clone()
        } else {
            None
        },
        start: merged_start(ops),
        clients: ops
            .iter()
            .zip(indexes)
            .map(|(o, &i)| ClientShare {
                client: i,
                skew_ms: o.start.as_ref().map(|s| s.skew_ms),
                threads: o.threads,
                rows: o.figures.rows,
                units: o.figures.ops,
                units_per_s: o.rates.units_per_s,
                wallclock_s: o.wallclock_s,
            })
            .collect(),
        ..first.clone()
    }
}

/// The earliest start, and the skew of the client furthest from the
/// common instant.
fn merged_start(ops: &[&OpRecord]) -> Option<OpStart> {
    let s = ops[0].start.as_ref()?;
    Some(OpStart {
        at_s: ops
            .iter()
            .filter_map(|o| o.start.as_ref().map(|s| s.at_s))
            .fold(s.at_s, f64::min),
        skew_ms: ops
            .iter()
            .filter_map(|o| o.start.as_ref().map(|s| s.skew_ms))
            .fold(0.0, |m: f64, x| if x.abs() > m.abs() { x } else { m }),
    })
}

/// Each statement kind's counts and histograms added up.
fn merged_statements(ops: &[&OpRecord]) -> Vec<super::record::StatementRecord> {
    let mut out: Vec<super::record::StatementRecord> = Vec::new();
    for st in ops.iter().flat_map(|o| o.statements.iter()) {
        match out.iter_mut().find(|s| s.name == st.name) {
            Some(s) => {
                s.count += st.count;
                let mut sum = new_histogram();
                // Histograms of one precision that grow as needed add.
                let _ = sum.add(&s.latency);
                let _ = sum.add(&st.latency);
                s.latency = sum;
            }
            None => out.push(st.clone()),
        }
    }
    out
}

/// The clients' figures added up ([`Stats::add`]: counts summed,
/// histograms added, so percentiles of the sum are exact), and their rate
/// over the shared window (`shared`, seconds from the first start) when
/// whole intervals lie in it, else over `span`.
fn merge_figures(
    all: &[(&Stats, Rates)],
    intervals: &[IntervalFigures],
    shared: (f64, f64),
    span: f64,
) -> (Rates, Stats) {
    let mut sum = Stats::default();
    for (f, _) in all {
        sum.add(f);
    }
    // One report: its own rates (the same window).
    if let [(_, rates)] = all {
        return (*rates, sum);
    }
    let inside: Vec<&IntervalFigures> = intervals
        .iter()
        .filter(|f| f.end_s - f.seconds >= shared.0 - 1e-6 && f.end_s <= shared.1 + 1e-6)
        .collect();
    let secs: f64 = inside.iter().map(|f| f.seconds).sum();
    let rates = if secs > 0.0 {
        Rates::over(
            inside.iter().map(|f| f.ops).sum(),
            inside.iter().map(|f| f.rows).sum(),
            secs,
        )
    } else {
        Rates::over(sum.ops, sum.rows, span)
    };
    (rates, sum)
}

/// Lines the clients' intervals up on one clock: each list with the
/// offset of its start from the first client's, binned by the interval
/// length, and added in its bin.
pub fn merge_intervals(
    lists: &[(&[IntervalFigures], f64)],
    interval_s: f64,
) -> Vec<IntervalFigures> {
    if lists.len() == 1 {
        return lists[0].0.to_vec();
    }
    if interval_s <= 0.0 {
        return Vec::new();
    }
    let mut bins: BTreeMap<u64, IntervalFigures> = BTreeMap::new();
    for (list, offset) in lists {
        for f in list.iter() {
            let k = ((f.end_s + offset) / interval_s).ceil().max(1.0) as u64;
            *bins.entry(k).or_insert_with(|| {
                IntervalFigures::empty(k - 1, k as f64 * interval_s, interval_s)
            }) += f;
        }
    }
    bins.into_values().collect()
}

/// The workload figures of a merged operation, each made again by its
/// rule from the clients' figures and the merged types; those without a
/// rule are each client's own and left out.
fn merged_metrics(ops: &[&OpRecord], types: &[TypeRecord]) -> Vec<Metric> {
    let lines: Vec<Vec<Metric>> = ops.iter().map(|o| o.metric_lines()).collect();
    let mut out: Vec<Metric> = Vec::new();
    for m in lines.iter().flatten() {
        if m.merge.is_none() || out.iter().any(|o| o.key == m.key) {
            continue;
        }
        // Made again by its rule, a figure is its value alone: the words
        // the workload wrote beside one client's no longer hold. It is
        // shown by its key, as the JSON has it.
        out.push(Metric {
            label: m.key.clone(),
            value: 0.0,
            text: String::new(),
            ..m.clone()
        });
    }
    // Sums first: the ratios are over them.
    for m in out.iter_mut() {
        if m.merge == Some(Rule::Sum) {
            m.value = lines
                .iter()
                .flatten()
                .filter(|x| x.key == m.key)
                .map(|x| x.value)
                .sum();
        }
    }
    let sums: BTreeMap<String, f64> = out.iter().map(|m| (m.key.clone(), m.value)).collect();
    for m in out.iter_mut() {
        match &m.merge {
            Some(Rule::Ratio {
                of,
                reference,
                times,
            }) => {
                m.value = ratio(sums.get(of), *reference, sums.get(times));
            }
            Some(Rule::LatencyLimits { quantile, limits_s }) => {
                m.value = latency_limits(types, *quantile, limits_s);
            }
            Some(Rule::PerMinute { of_type }) => {
                let span: f64 = ops.iter().map(|o| o.wallclock_s).fold(0.0, f64::max);
                m.value = types
                    .iter()
                    .find(|t| &t.name == of_type)
                    .map_or(0.0, |t| per_minute(t.figures.ops, span));
            }
            _ => {}
        }
        m.text = super::record::number(m.value);
    }
    out
}

/// `of` over `reference` × `times`; 0 when `times` is not known.
fn ratio(of: Option<&f64>, reference: f64, times: Option<&f64>) -> f64 {
    match (of, times) {
        (Some(of), Some(&times)) if times > 0.0 && reference > 0.0 => of / (reference * times),
        _ => 0.0,
    }
}

/// Units per minute of `seconds`.
fn per_minute(units: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        units as f64 * 60.0 / seconds
    } else {
        0.0
    }
}

/// 1 when every type with units kept its limit at `quantile`, else 0.
fn latency_limits(types: &[TypeRecord], quantile: f64, limits_s: &[(String, f64)]) -> f64 {
    let met = limits_s.iter().all(|(name, limit)| {
        types.iter().filter(|t| &t.name == name).all(|t| {
            t.figures.ops == 0
                || t.figures.latency.value_at_quantile(quantile) as f64 <= limit * 1e9
        })
    });
    if met { 1.0 } else { 0.0 }
}

/// The workload's figures per merged interval, each by its interval
/// rule, from the merged intervals of each type; a ratio's `times` is
/// the merged operation's figure (the warehouses of all clients).
fn merged_interval_metrics(
    ops: &[&OpRecord],
    merged: &[Metric],
    types: &[TypeRecord],
) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    // One client: its own.
    if let [one] = ops {
        return one.interval_metrics.clone();
    }
    let rules: Vec<(&str, &Rule)> = merged
        .iter()
        .filter_map(|m| m.per_interval.as_ref().map(|r| (m.key.as_str(), r)))
        .collect();
    let n = types.first().map_or(0, |t| t.intervals.len());
    for i in 0..n {
        let mut this: BTreeMap<&str, f64> = BTreeMap::new();
        for (key, rule) in rules
            .iter()
            .filter(|(_, r)| matches!(r, Rule::PerMinute { .. }))
        {
            if let Rule::PerMinute { of_type } = rule {
                let f = types
                    .iter()
                    .find(|t| &t.name == of_type)
                    .and_then(|t| t.intervals.get(i));
                this.insert(key, f.map_or(0.0, |f| per_minute(f.ops, f.seconds)));
            }
        }
        for (key, rule) in &rules {
            if let Rule::Ratio {
                of,
                reference,
                times,
            } = rule
            {
                let whole = merged.iter().find(|m| &m.key == times).map(|m| &m.value);
                let v = ratio(this.get(of.as_str()), *reference, whole);
                this.insert(key, v);
            }
        }
        for (k, v) in this {
            out.entry(k.to_string()).or_default().push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Percentiles;

    fn interval(index: u64, ops: u64, max: u64) -> IntervalFigures {
        IntervalFigures {
            index,
            end_s: (index + 1) as f64,
            seconds: 1.0,
            ops,
            rows: ops,
            errors: 0,
            skipped: 0,
            retries: 0,
            missing: 0,
            ops_per_s: ops as f64,
            rows_per_s: ops as f64,
            latency: Percentiles {
                min: 10,
                mean: 20.0,
                p50: 20,
                max,
                ..Percentiles::default()
            },
            lag_avg_ns: 0,
            lag_max_ns: 0,
            ..Default::default()
        }
    }

    #[test]
    fn intervals_line_up_on_the_common_clock_with_exact_counts() {
        let a = [interval(0, 100, 50), interval(1, 100, 60)];
        // The second client started half an interval later: its first
        // interval ends at 1.5 s on the common clock, so in the second bin.
        let b = [interval(0, 10, 90), interval(1, 10, 30)];
        let m = merge_intervals(&[(&a, 0.0), (&b, 0.4)], 1.0);
        let ops: Vec<u64> = m.iter().map(|f| f.ops).collect();
        assert_eq!(ops, vec![100, 110, 10]);
        assert_eq!(m[1].latency.max, 90);
        assert_eq!(m[1].latency.min, 10);
        // Without histograms (a report written before they were kept)
        // percentiles per merged interval are not known.
        assert_eq!(m[1].latency.p50, 0);
        assert_eq!(m.iter().map(|f| f.ops).sum::<u64>(), 220);
        // One client: its own intervals, percentiles and all.
        assert_eq!(merge_intervals(&[(&a, 0.0)], 1.0), a.to_vec());
    }

    /// Interval `index` of one client whose units took `values` (ns).
    fn measured(index: u64, values: &[u64], served_in: u64) -> IntervalFigures {
        let mut st = crate::stats::interval::IntervalStats::default();
        for &v in values {
            let latency = std::time::Duration::from_nanos(v);
            let service = std::time::Duration::from_nanos(v.min(served_in));
            st.record(
                crate::stats::Timing { latency, service },
                crate::stats::outcome::Outcome::default(),
            );
        }
        st.figures(index, std::time::Duration::from_secs(1))
    }

    #[test]
    fn merged_intervals_have_the_percentiles_of_all_their_units() {
        // Client a is fast, client b slow: the merged p99 is b's tail,
        // which neither client's p99 alone nor their largest would give.
        let fast: Vec<u64> = (1..=990).map(|i| 1_000_000 + i * 1_000).collect();
        let slow: Vec<u64> = (1..=10).map(|i| 50_000_000 + i * 1_000_000).collect();
        let a = [measured(0, &fast, u64::MAX)];
        // b was sent late under --rate: its service time is at most 30 ms.
        let b = [measured(0, &slow, 30_000_000)];
        let m = merge_intervals(&[(&a, 0.0), (&b, 0.0)], 1.0);
        assert_eq!(m.len(), 1);
        let mut all = new_histogram();
        for v in fast.iter().chain(&slow) {
            crate::stats::record_ns(&mut all, *v);
        }
        let p = Percentiles::of(&all);
        assert_eq!(m[0].ops, 1000);
        assert_eq!(
            (m[0].latency.p50, m[0].latency.p99, m[0].latency.p999),
            (p.p50, p.p99, p.p999)
        );
        assert_eq!(m[0].latency.max, p.max);
        // Service time: a's latency (it had no service histogram of its
        // own) and b's service times.
        let served = m[0].service.expect("b's service time differs");
        assert!(served.max <= 30_100_000, "{served:?}");
        assert!(served.p99 > 1_990_000, "{served:?}");
        let back = m[0].latency_histogram().expect("histograms kept");
        assert_eq!(back.len(), 1000);
        // A side without histograms (an older report) leaves none.
        let mut old = b[0].clone();
        old.histograms = None;
        let m = merge_intervals(&[(&a, 0.0), (&[old], 0.0)], 1.0);
        assert!(m[0].histograms.is_none());
        // Written and read back, an interval keeps them.
        let text = serde_json::to_string(&a[0]).unwrap();
        let back: IntervalFigures = serde_json::from_str(&text).unwrap();
        assert_eq!(back, a[0]);
    }
}
