//! What a workload's units and checks produce, as plain data: the outcome
//! of one unit, the time per statement kind inside units, the consistency
//! checks, the findings of a clean-up, a workload's own figures (tpmC)
//! and the rules by which a merge of several clients' reports makes them
//! again.
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
/// point selects, ranges, updates of a transaction), kept by each
/// worker's operation and merged with `add`.
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
