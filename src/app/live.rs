//! `--metrics-addr`: the live metrics' endpoint over the life of a run.
//! Bound first, before the run connects to anything, so that an address
//! that cannot be bound is a usage error (exit 2) at once; served while
//! the operations run; kept up after the reports are written until one
//! scrape has read the final figures, for at most `--metrics-linger`
//! (Ctrl-C ends the wait at once, with every report already written).

use std::sync::atomic::Ordering;

use crate::config::RunPlan;
use crate::error::Result;
use crate::metrics::Exporter;
use crate::stats::live::{Live, RunInfo};

use super::{Control, RunReport};

/// The endpoint of a run and the board it shows.
pub(super) struct LiveRun {
    exporter: Exporter,
    live: Live,
    linger: std::time::Duration,
}

/// Binds `--metrics-addr`, if given; `run_id` names a run of one (a run
/// of several clients is named by its `--run-id`).
pub(super) async fn start(plan: &RunPlan, run_id: &str) -> Result<Option<LiveRun>> {
    let Some(m) = &plan.output.metrics else {
        return Ok(None);
    };
    let (run_id, client) = match &plan.cluster {
        Some(c) => (c.run_id.clone(), c.index),
        None => (run_id.to_string(), 0),
    };
    let names: Vec<&str> = plan.operations.iter().map(|s| s.name).collect();
    let live = Live::new(RunInfo {
        run_id,
        client,
        workload: names.join(","),
        version: env!("CARGO_PKG_VERSION").to_string(),
    });
    let exporter = Exporter::bind(&m.addr, live.clone()).await?;
    crate::say!(">> metrics at http://{}/metrics", exporter.local_addr());
    Ok(Some(LiveRun {
        exporter,
        live,
        linger: m.linger,
    }))
}

impl LiveRun {
    /// The board the runner feeds.
    pub(super) fn board(&self) -> Live {
        self.live.clone()
    }

    /// After the reports: serves the final figures until scraped once, at
    /// most the linger; not after an interrupt, which asked to end. An
    /// interrupt while it waits makes the run's exit code 130.
    pub(super) async fn linger(&self, control: &Control, report: &mut RunReport) {
        if control.stop.load(Ordering::Relaxed) || self.linger.is_zero() {
            self.live.end_run();
            return;
        }
        crate::say!(
            ">> metrics: serving the final figures until scraped once more (at most {})",
            humantime::format_duration(self.linger)
        );
        let scraped = self.exporter.linger(self.linger, &control.stop).await;
        if !scraped && !control.interrupted.load(Ordering::Relaxed) {
            crate::say!(
                ">> metrics: not scraped within --metrics-linger {}; the last interval may be missing from Prometheus",
                humantime::format_duration(self.linger)
            );
        }
        report.interrupted |= control.interrupted.load(Ordering::Relaxed);
    }
}
