//! What the runner needs to know of a run: how many workers, for how
//! long, at what pace, and what to do after a failure. Built by
//! [`crate::config`] from the command line; nothing here is a clap type.

use std::time::Duration;

use super::schedule::Distribution;
use crate::db::sql::Isolation;
use crate::workload::Spec;

/// What a worker does after a failed unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    Stop,
    Continue,
}

/// Which failed units are tried again, and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// SQLSTATEs that make a unit (a whole transaction) be tried again.
    pub on: Vec<String>,
    /// Tries per unit in all; 0 for no limit but the end of the run.
    pub max_tries: u32,
}

impl RetryPolicy {
    /// Whether a unit that failed with `sqlstate` on try number `tries`
    /// goes again.
    pub fn again(&self, tries: u32, sqlstate: Option<&str>) -> bool {
        (self.max_tries == 0 || tries < self.max_tries)
            && sqlstate.is_some_and(|c| self.on.iter().any(|o| o == c))
    }
}

/// The runner's part of the run plan.
#[derive(Clone, Debug)]
pub struct RunSettings {
    pub threads: usize,
    /// Rows a load writes (for its progress bar and `--time` note).
    pub rows: u64,
    /// The seed of the run (schedules, jitter, the scatter samples).
    pub seed: u64,
    /// How long query workloads run.
    pub run_time: Duration,
    /// `--time` as given (not `--runtime-select`): it also bounds loads.
    pub load_time: Option<Duration>,
    /// `--transactions`: each worker of a query workload ends this many
    /// measured units, then stops (instead of `run_time`).
    pub transactions: Option<u64>,
    /// Query workloads run this long first, unmeasured.
    pub warmup: Option<Duration>,
    /// Units per second over all threads.
    pub rate: Option<f64>,
    pub rate_distribution: Distribution,
    pub latency_limit: Option<Duration>,
    /// Progress lines every so often.
    pub report_interval: Option<Duration>,
    /// `--max-tries`, if given (0: no limit); each workload has its default.
    pub max_tries: Option<u32>,
    /// `--retry-on`, if given; each workload has its default.
    pub retry_on: Option<Vec<String>>,
    /// `--isolation`: set as the session default on every connection.
    pub isolation: Option<Isolation>,
    /// `--on-error` as given; [`RunSettings::on_error`] applies the defaults.
    pub on_error: Option<OnError>,
    pub statement_timeout: Option<Duration>,
    /// YugabyteDB's yb_disable_transactional_writes on every connection.
    pub nontransactional: bool,
    /// A new connection per unit (pgbench -C).
    pub reconnect: bool,
    /// Pictures are drawn (`--graph`): only they use the scatter sample
    /// and the fine timeline, so only then are they recorded per unit.
    pub pictures: bool,
    /// Units in flight per connection (`--pipeline`) for the workloads
    /// that can pipeline; 1 sends each unit alone.
    pub pipeline: usize,
    /// Pipelined units per Sync (`--pipeline-sync`): 1 makes each its
    /// own transaction; more make a batch one transaction.
    pub pipeline_sync: usize,
    /// `--slo`: judged so far on each progress line.
    pub slo: Option<std::sync::Arc<crate::stats::slo::Slo>>,
    /// `--slo-abort`: stop an operation once a criterion cannot be met.
    pub slo_abort: bool,
    /// Whether a criterion without scope judges the loads: only when the
    /// run has no query workload (`-o copy-mem,select --slo p99<10ms`
    /// judges the select, so its copy is neither said to miss it nor
    /// stopped by `--slo-abort`), as the run's verdict judges it.
    pub slo_judges_loads: bool,
}

impl RunSettings {
    /// What to do after a failed unit of `spec`: stop a load (its data
    /// would be incomplete), go on with queries, unless told otherwise.
    pub fn on_error(&self, spec: &Spec) -> OnError {
        self.on_error.unwrap_or(if spec.is_load() {
            OnError::Stop
        } else {
            OnError::Continue
        })
    }

    /// The retries of a workload whose defaults are `on` and `max_tries`,
    /// with the flags given in their place.
    pub fn retry_policy(&self, on: &[&str], max_tries: u32) -> RetryPolicy {
        RetryPolicy {
            on: self
                .retry_on
                .clone()
                .unwrap_or_else(|| on.iter().map(|s| s.to_string()).collect()),
            max_tries: self.max_tries.unwrap_or(max_tries),
        }
    }

    /// How many units a worker of a workload keeps in flight: `--pipeline`
    /// when the workload `pipelines`, else one.
    pub fn pipeline_for(&self, pipelines: bool) -> usize {
        if pipelines { self.pipeline.max(1) } else { 1 }
    }

    /// How many of those units share a Sync: `--pipeline-sync` when the
    /// workload pipelines, else one.
    pub fn pipeline_sync_for(&self, pipelines: bool) -> usize {
        self.pipeline_sync.clamp(1, self.pipeline_for(pipelines))
    }

    /// The length of the per-interval figures (CSV rows, progress lines).
    pub fn interval(&self) -> Duration {
        self.report_interval.unwrap_or(Duration::from_secs(1))
    }
}
