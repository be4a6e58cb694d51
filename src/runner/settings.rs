//! What the runner needs to know of a run: how many workers, for how
//! long, at what pace, and what to do after a failure. Built by
//! [`crate::config`] from the command line; nothing here is a clap type.

use std::time::Duration;

use super::schedule::Distribution;
use crate::workload::Spec;

/// What a worker does after a failed unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    Stop,
    Continue,
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
    /// Query workloads run this long first, unmeasured.
    pub warmup: Option<Duration>,
    /// Units per second over all threads.
    pub rate: Option<f64>,
    pub rate_distribution: Distribution,
    pub latency_limit: Option<Duration>,
    /// Progress lines every so often.
    pub report_interval: Option<Duration>,
    pub max_tries: u32,
    /// `--on-error` as given; [`RunSettings::on_error`] applies the defaults.
    pub on_error: Option<OnError>,
    pub statement_timeout: Option<Duration>,
    /// YugabyteDB's yb_disable_transactional_writes on every connection.
    pub nontransactional: bool,
    /// A new connection per unit (pgbench -C).
    pub reconnect: bool,
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

    /// The length of the per-interval figures (CSV rows, progress lines).
    pub fn interval(&self) -> Duration {
        self.report_interval.unwrap_or(Duration::from_secs(1))
    }
}
