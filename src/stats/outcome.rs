//! What a workload's units and checks produce, as plain data: the outcome
//! of one unit, the time per statement kind inside units, the consistency
//! checks, the findings of a clean-up, a workload's own figures (tpmC)
//! and the rules by which a merge of several clients' reports makes them
//! again.
//!
//! The time per statement kind is kept in two halves. An HDR histogram of
//! three significant digits takes about 100 KB once it holds millisecond
//! latencies, and a transaction has several statements: a histogram per
//! statement in every worker's operation came to about a megabyte per
//! connection (pgbench's tpcb-like, 1.2 GB at 1024 connections). So an
//! operation keeps only [`StatementTimes`], the names of its statements
//! and the (statement, duration) pairs of the unit under way, a few
//! hundred bytes; as it counts each unit the runner moves the pairs into
//! the [`StatementTable`] of its OS thread, shared by that thread's
//! workers as its other histograms are (and drops those of a unit it
//! does not count). The figures are the same values: a
//! histogram counts a duration the same whichever worker recorded it.
//!
//! These are statistics, not parts of the workload contract: the runner
//! counts them, the report prints them and a saved report reads them back,
//! so they live in the statistics layer, which imports nothing above it;
//! the workload layer re-exports them for its implementations.

/// What one executed unit did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Rows written or read.
    pub rows: u64,
    /// Rows the unit looked for and did not find (select and update).
    pub missing: u64,
}

/// One consistency condition checked after a workload ran.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    pub name: String,
    pub held: bool,
    /// What was found, e.g. "0 of 15000 (schedule, day) pairs differ".
    pub detail: String,
}

/// One line of what a workload without units did (the workload's findings),
/// e.g. label "dropped", text "table \"public\".\"usertable\" (1000 rows)".
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    pub label: String,
    pub text: String,
}

/// What the workload's `metrics` is given of one transaction type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypeFigures {
    /// Units that succeeded.
    pub units: u64,
    /// Of which found rows missing (TPC-C: New-Orders rolled back by rule).
    pub missing: u64,
    /// The 90th percentile of latency (with retries).
    pub p90: std::time::Duration,
}

/// The workload's `interval_metrics`: given the figures of one interval
/// per type (in the order of the workload's types).
pub type IntervalMetrics =
    std::sync::Arc<dyn Fn(&[crate::stats::IntervalFigures]) -> Vec<Metric> + Send + Sync>;

/// A column of the interval CSV that holds a workload's figure per
/// interval: its key in the record's `interval_metrics`, which is also the
/// column's name, and the decimals its values are written with. The
/// workload layer lists them ([`crate::workload::registry`]); the CSV
/// writer is handed the list and knows no figure by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FigureColumn {
    pub key: &'static str,
    pub decimals: usize,
}

/// How a workload names the pauses it makes its workers take between
/// units (TPC-C: "the keying and think times", "--tpcc-wait"), for the
/// report to read the server's waits against: the workload's words, kept
/// on the record so that the report names no workload.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PauseWords {
    /// What the pauses are, as a sentence's subject.
    pub what: String,
    /// The flag that makes them.
    pub flag: String,
}

/// A figure a workload computes from what was measured (tpmC).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Metric {
    /// Its key in the JSON report's `metrics`.
    pub key: String,
    /// Its label in the summary.
    pub label: String,
    pub value: f64,
    /// The summary's text, with what it is made of.
    pub text: String,
    /// How a merge of several clients' reports makes the figure again
    /// from the merged ones; None: it is each client's own, and a merged
    /// report leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<Rule>,
    /// How a merge makes it per merged interval (the report's
    /// `interval_metrics` of the same key), if the workload keeps it per
    /// interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_interval: Option<Rule>,
    /// How the throughput picture's title gives the figure (TPC-C: "tpmC
    /// 24.7", "efficiency 96.2%"), worded by the workload; None: the title
    /// leaves it out. Not saved: the pictures are drawn from a live run.
    #[serde(skip)]
    pub title: Option<String>,
}

impl Metric {
    /// A figure that a merge leaves out (see [`Metric::merge`]).
    pub fn new(key: &str, label: &str, value: f64, text: String) -> Metric {
        Metric {
            key: key.to_string(),
            label: label.to_string(),
            value,
            text,
            merge: None,
            per_interval: None,
            title: None,
        }
    }

    /// The same, made again by `rule` in a merge.
    pub fn merged_by(self, rule: Rule) -> Metric {
        Metric {
            merge: Some(rule),
            ..self
        }
    }

    /// The same, given as `title` in the throughput picture's title.
    pub fn titled(self, title: String) -> Metric {
        Metric {
            title: Some(title),
            ..self
        }
    }

    /// The same, made again per merged interval by `rule`.
    pub fn per_interval_by(self, rule: Rule) -> Metric {
        Metric {
            per_interval: Some(rule),
            ..self
        }
    }
}

/// How a workload's figure is made from the figures of a merged report,
/// as data the workload puts on its figure, so that a merge of several
/// clients' reports recomputes it without the report knowing the
/// workload (TPC-C's tpmC, efficiency and 90th percentile limits).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// The clients' values added up: counts, the rates of one shared
    /// window, what each client drove.
    Sum,
    /// Units of the transaction type `of_type` per minute: of an
    /// interval, over that interval.
    PerMinute { of_type: String },
    /// The figure `of` over `reference` times the figure `times` (of an
    /// interval: `of` of that interval, `times` of the whole operation).
    Ratio {
        of: String,
        reference: f64,
        times: String,
    },
    /// 1 when every transaction type with units kept the `quantile` of
    /// its latency within its limit (seconds, by type name), else 0.
    LatencyLimits {
        quantile: f64,
        limits_s: Vec<(String, f64)>,
    },
}

/// Time and count per statement kind inside a workload's units (the
/// point selects, ranges, updates of a transaction): kept once per OS
/// thread of workers ([`StatementTable`]), and merged with `add`.
#[derive(Clone, Debug)]
pub struct StatementStats {
    pub name: &'static str,
    /// "read", "write" or "other", as sysbench splits its queries; the
    /// workload layer fills it (empty until then).
    pub class: &'static str,
    pub count: u64,
    pub latency: hdrhistogram::Histogram<u64>,
}

impl StatementStats {
    pub fn new(name: &'static str) -> Self {
        StatementStats {
            name,
            class: "",
            count: 0,
            latency: super::new_histogram(),
        }
    }

    pub fn record(&mut self, took: std::time::Duration) {
        self.count += 1;
        super::record_ns(&mut self.latency, super::nanos(took));
    }

    pub fn add(&mut self, other: &StatementStats) {
        self.count += other.count;
        let _ = self.latency.add(&other.latency);
    }
}

/// A statement kind as a workload names it, with its query class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatementName {
    pub name: &'static str,
    /// "read", "write" or "other", as sysbench splits its queries.
    pub class: &'static str,
}

/// One worker's times per statement kind, until the runner moves them
/// into its thread's [`StatementTable`] (as it counts the unit they
/// belong to) or drops them: the kinds, named once, and the (kind,
/// nanoseconds) pairs recorded since.
#[derive(Clone, Debug, Default)]
pub struct StatementTimes {
    names: Vec<StatementName>,
    pending: Vec<(usize, u64)>,
    /// Where each kind is in the [`StatementTable`] that `mapped_in`
    /// names (its id and generation), found when the pairs were first
    /// moved there: a table only appends kinds until it is taken, so the
    /// places hold until then and the names need not be compared again
    /// after every unit.
    slots: Vec<usize>,
    mapped_in: Option<(u64, u64)>,
}

impl StatementTimes {
    /// Times for the statement kinds `names`, in the order reports list
    /// them, each of the query class `class` gives it.
    pub fn new(
        names: impl IntoIterator<Item = &'static str>,
        class: impl Fn(&str) -> &'static str,
    ) -> Self {
        let names: Vec<StatementName> = names
            .into_iter()
            .map(|name| StatementName {
                name,
                class: class(name),
            })
            .collect();
        // At their sizes now, beside the names, rather than when the
        // first unit grows them, among every other connection's blocks.
        let n = names.len();
        StatementTimes {
            names,
            pending: Vec::with_capacity(n),
            slots: Vec::with_capacity(n),
            mapped_in: None,
        }
    }

    /// Statement kind `index` (of the names given to [`Self::new`]) took
    /// `took`. An index out of range is not recorded.
    pub fn record(&mut self, index: usize, took: std::time::Duration) {
        if index < self.names.len() {
            self.pending.push((index, super::nanos(took)));
        }
    }

    pub fn names(&self) -> &[StatementName] {
        &self.names
    }

    /// The pairs recorded and not yet moved.
    pub fn pending(&self) -> &[(usize, u64)] {
        &self.pending
    }

    /// Forgets the pairs recorded (the warmup's, or a unit's the report
    /// leaves out).
    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

/// Statement durations a [`StatementTable`] keeps before it records them
/// into their histograms, together. A histogram of three significant
/// digits spreads the latencies of a run over hundreds of cache lines,
/// so one value recorded at a unit's end is about one cache miss (in
/// `perf annotate`, nearly all of the recording's time is on that load);
/// a few thousand recorded back to back share the lines they land on and
/// overlap their misses.
const DEFERRED: usize = 4096;

/// The figures per statement kind of the workers of one OS thread (see
/// the module's doc), by name, in the order the kinds were first named.
#[derive(Debug)]
pub struct StatementTable {
    stats: Vec<StatementStats>,
    /// Durations absorbed and not yet in their histograms: (place in
    /// `stats`, nanoseconds), recorded [`DEFERRED`] at a time (see there).
    deferred: Vec<(usize, u64)>,
    /// This table among all (see [`StatementTimes`]'s mapping).
    id: u64,
    /// Bumped when the figures are taken: the places a worker's times
    /// found before then no longer hold.
    generation: u64,
}

impl Default for StatementTable {
    fn default() -> Self {
        // A process-wide count, not the table's address: a table made
        // where a dropped one was must not pass for it.
        static TABLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        StatementTable {
            stats: Vec::new(),
            deferred: Vec::new(),
            id: TABLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            generation: 0,
        }
    }
}

impl StatementTable {
    /// Makes room for the kinds of `times`, so that a kind no unit ran
    /// is listed with a count of 0, as every kind of the workload is, and
    /// keeps in `times` where each of its kinds is.
    pub fn name(&mut self, times: &mut StatementTimes) {
        times.slots.clear();
        for (i, n) in times.names.iter().enumerate() {
            // The workers of a thread name the same kinds in the same
            // order: the kind at the same place is almost always it.
            let same = |s: &StatementStats| std::ptr::eq(s.name, n.name) || s.name == n.name;
            let slot = match self.stats.get(i).filter(|s| same(s)) {
                Some(_) => i,
                None => match self.stats.iter().position(same) {
                    Some(at) => at,
                    None => {
                        let mut s = StatementStats::new(n.name);
                        s.class = n.class;
                        self.stats.push(s);
                        self.stats.len() - 1
                    }
                },
            };
            times.slots.push(slot);
        }
        times.mapped_in = Some((self.id, self.generation));
    }

    /// Moves the pairs of `times` into the figures.
    pub fn absorb(&mut self, times: &mut StatementTimes) {
        if times.pending.is_empty() {
            return;
        }
        // Once per worker and table, not once per unit (comparing the
        // names cost, per unit, about 5 of the instruction cache's misses
        // and 60 instructions for select-only's one kind, 270 for
        // tpcb-like's seven; callgrind, 9903310).
        if times.mapped_in != Some((self.id, self.generation)) {
            self.name(times);
        }
        for &(i, ns) in &times.pending {
            if let Some(&at) = times.slots.get(i) {
                self.deferred.push((at, ns));
            }
        }
        times.pending.clear();
        if self.deferred.len() >= DEFERRED {
            self.record_deferred();
        }
    }

    fn record_deferred(&mut self) {
        for &(at, ns) in &self.deferred {
            if let Some(s) = self.stats.get_mut(at) {
                s.count += 1;
                super::record_ns(&mut s.latency, ns);
            }
        }
        self.deferred.clear();
    }

    /// Hands over the figures (and forgets them).
    pub fn take(&mut self) -> Vec<StatementStats> {
        self.record_deferred();
        self.generation += 1;
        std::mem::take(&mut self.stats)
    }
}

/// Adds per-statement figures to `all`, by name, a name not yet there
/// going after the others (exact: histograms add).
pub fn merge_statements(all: &mut Vec<StatementStats>, more: Vec<StatementStats>) {
    for st in more {
        match all.iter_mut().find(|a| a.name == st.name) {
            Some(a) => a.add(&st),
            None => all.push(st),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn class(name: &str) -> &'static str {
        if name.starts_with("select") {
            "read"
        } else {
            "write"
        }
    }

    #[test]
    fn a_thread_table_holds_what_per_worker_histograms_held() {
        let names = ["select_a", "update_b", "select_c"];
        let mut table = StatementTable::default();
        let mut apart: Vec<StatementStats> = names.iter().map(|n| StatementStats::new(n)).collect();
        for w in 0..3u64 {
            let mut times = StatementTimes::new(names, class);
            for unit in 1..=50u64 {
                for (k, s) in apart.iter_mut().enumerate().take(2) {
                    let d = Duration::from_micros(unit * (w + 1) * (k as u64 + 1));
                    times.record(k, d);
                    s.record(d);
                }
                times.record(names.len(), Duration::from_micros(1));
                table.absorb(&mut times);
                assert!(times.pending().is_empty());
            }
        }
        let got = table.take();
        let order: Vec<&str> = got.iter().map(|s| s.name).collect();
        assert_eq!(order, names);
        let classes: Vec<&str> = got.iter().map(|s| s.class).collect();
        assert_eq!(classes, ["read", "write", "read"]);
        for (g, a) in got.iter().zip(&apart) {
            assert_eq!(g.count, a.count, "{}", g.name);
            assert_eq!(g.latency, a.latency, "{}", g.name);
        }
        assert_eq!(got[0].count, 150);
        assert_eq!(got[2].count, 0);
    }

    #[test]
    fn durations_kept_for_a_batch_are_all_recorded_across_its_edges() {
        let mut table = StatementTable::default();
        let mut apart = [StatementStats::new("a"), StatementStats::new("b")];
        let mut times = StatementTimes::new(["a", "b"], class);
        // Two and a half batches: the table records at each full batch
        // and the rest when the figures are taken.
        let n = (DEFERRED * 5 / 2) as u64;
        for i in 0..n {
            let k = (i % 3 == 0) as usize;
            let d = Duration::from_nanos(1_000 + i * 37);
            times.record(k, d);
            apart[k].record(d);
            table.absorb(&mut times);
        }
        assert!(table.deferred.len() < DEFERRED, "a full batch left waiting");
        let got = table.take();
        assert_eq!(got[0].count + got[1].count, n);
        for (g, a) in got.iter().zip(&apart) {
            assert_eq!(g.count, a.count, "{}", g.name);
            assert_eq!(g.latency, a.latency, "{}", g.name);
        }
        assert!(table.deferred.is_empty());
        assert!(table.take().is_empty());
    }

    #[test]
    fn a_worker_naming_its_kinds_in_another_order_records_by_name() {
        let mut table = StatementTable::default();
        let mut first = StatementTimes::new(["begin", "commit"], |_| "other");
        first.record(0, Duration::from_micros(5));
        table.absorb(&mut first);
        let mut second = StatementTimes::new(["commit", "extra", "begin"], |_| "other");
        second.record(0, Duration::from_micros(7));
        second.record(1, Duration::from_micros(9));
        table.absorb(&mut second);
        let got = table.take();
        let counts: Vec<(&str, u64)> = got.iter().map(|s| (s.name, s.count)).collect();
        assert_eq!(counts, [("begin", 1), ("commit", 1), ("extra", 1)]);
        assert_eq!(
            got[1].latency.max(),
            got[1].latency.highest_equivalent(7_000)
        );
    }

    #[test]
    fn the_places_kept_after_a_take_are_found_again() {
        let mut table = StatementTable::default();
        let mut times = StatementTimes::new(["a", "b"], |_| "other");
        times.record(1, Duration::from_micros(5));
        table.absorb(&mut times);
        assert_eq!(table.take()[1].count, 1);
        // Another worker names its kinds first in the emptied table.
        let mut other = StatementTimes::new(["b", "c"], |_| "other");
        table.name(&mut other);
        times.record(1, Duration::from_micros(6));
        table.absorb(&mut times);
        let got = table.take();
        let counts: Vec<(&str, u64)> = got.iter().map(|s| (s.name, s.count)).collect();
        assert_eq!(counts, [("b", 1), ("c", 0), ("a", 0)]);
    }

    #[test]
    fn cleared_times_move_nothing() {
        let mut table = StatementTable::default();
        let mut times = StatementTimes::new(["select"], class);
        table.name(&mut times);
        times.record(0, Duration::from_millis(3));
        times.clear();
        table.absorb(&mut times);
        let got = table.take();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].count, 0);
    }
}
