//! The run as it goes, for the live metrics (`--metrics-addr`): a board
//! the runner adds to and an exporter reads.
//!
//! Why it is shaped so:
//!
//! - **Fed by what is handed over anyway.** The workers of each OS thread
//!   already hand their interval pieces to the runner's collector about
//!   once per interval (see the runner's `intervals.rs`); the collector
//!   adds each piece here as well, under one lock, once per piece. No
//!   worker touches the board, so a scrape never slows a unit down, and
//!   what is added is exactly what the interval figures (and so the
//!   reports) count: the counters end equal to the run's totals.
//! - **Cumulative.** A counter in Prometheus must only grow: each
//!   operation keeps the sum of every piece so far ([`IntervalSet`], whose
//!   `add` is the one rule pieces add up by), histograms included, and
//!   keeps it after it ends. The gauges (units in flight, open
//!   connections, the schedule lag of the last interval, a workload's own
//!   figures) are the last values handed over.
//! - **Plain data.** The board knows nothing of HTTP or of the exposition
//!   format; `crate::metrics` renders it.

use std::sync::{Arc, Mutex, MutexGuard};

use super::interval::{IntervalSet, SetFigures};
use super::server::WaitCounts;

/// What names the run in every series: the labels several clients'
/// series are told apart by, and the info metric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// The run id (`--run-id`, or the one derived for a run of several
    /// clients, or this run's application name suffix).
    pub run_id: String,
    /// This client's index (0 for a run of one).
    pub client: usize,
    /// The operations of the run, as `-o` names them.
    pub workload: String,
    /// The tool's version.
    pub version: String,
}

/// One operation of the run, so far.
#[derive(Clone, Debug)]
pub struct LiveOp {
    pub name: &'static str,
    /// Its transaction types, in the workload's order.
    pub types: Vec<&'static str>,
    /// Every piece handed over so far, added up.
    pub so_far: IntervalSet,
    /// Units in flight per recorder (OS thread), as last handed over.
    pub in_flight: Vec<u64>,
    /// The database hosts, and the workers' connections open to each at
    /// the last interval's end.
    pub hosts: Vec<String>,
    pub conns: Vec<u64>,
    /// The largest schedule lag of the last finished interval, in ns.
    pub lag_max_ns: u64,
    /// The workload's own figures of the last finished interval (key,
    /// value): TPC-C's tpmC and efficiency.
    pub figures: Vec<(String, f64)>,
    /// Intervals finished.
    pub intervals: u64,
    /// Whether its workers are still running.
    pub running: bool,
}

/// Everything the exporter shows.
#[derive(Clone, Debug, Default)]
pub struct Board {
    pub info: RunInfo,
    pub ops: Vec<LiveOp>,
    /// The server's waits sampled over the run so far (every operation).
    pub waits: WaitCounts,
    /// The run has ended and its reports are written: the figures are
    /// final.
    pub ended: bool,
}

/// The shared board: cloned into the runner and the exporter.
#[derive(Clone, Debug, Default)]
pub struct Live(Arc<Mutex<Board>>);

impl Live {
    pub fn new(info: RunInfo) -> Live {
        Live(Arc::new(Mutex::new(Board {
            info,
            ..Board::default()
        })))
    }

    fn board(&self) -> MutexGuard<'_, Board> {
        // A panic elsewhere while the lock was held leaves plain numbers.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An operation starts: its index on the board.
    pub fn begin_op(
        &self,
        name: &'static str,
        types: &[&'static str],
        hosts: Vec<String>,
    ) -> usize {
        let mut b = self.board();
        b.ops.push(LiveOp {
            name,
            types: types.to_vec(),
            so_far: IntervalSet::new(types.len()),
            in_flight: Vec::new(),
            conns: vec![0; hosts.len()],
            hosts,
            lag_max_ns: 0,
            figures: Vec::new(),
            intervals: 0,
            running: true,
        });
        b.ops.len() - 1
    }

    /// A piece of operation `op` from recorder `source`, which had
    /// `in_flight` units in flight when it sent it.
    pub fn add_piece(&self, op: usize, source: usize, piece: &IntervalSet, in_flight: u64) {
        let mut b = self.board();
        let Some(o) = b.ops.get_mut(op) else { return };
        if !piece.is_empty() {
            o.so_far.add(piece);
        }
        if o.in_flight.len() <= source {
            o.in_flight.resize(source + 1, 0);
        }
        o.in_flight[source] = in_flight;
    }

    /// An interval of operation `op` was finished: its figures, the
    /// workload's own of it, and the connections open per host.
    pub fn interval_done(
        &self,
        op: usize,
        f: &SetFigures,
        figures: Vec<(String, f64)>,
        conns: Option<Vec<u64>>,
    ) {
        let mut b = self.board();
        let Some(o) = b.ops.get_mut(op) else { return };
        o.lag_max_ns = f.total.lag_max_ns;
        o.figures = figures;
        o.intervals += 1;
        if let Some(c) = conns {
            o.conns = c;
        }
    }

    /// The server's waits over the run so far.
    pub fn set_waits(&self, waits: WaitCounts) {
        self.board().waits = waits;
    }

    /// Operation `op`'s workers are done: nothing is in flight, no
    /// connection of theirs open.
    pub fn end_op(&self, op: usize) {
        let mut b = self.board();
        let Some(o) = b.ops.get_mut(op) else { return };
        o.running = false;
        o.in_flight.iter_mut().for_each(|n| *n = 0);
        o.conns.iter_mut().for_each(|n| *n = 0);
    }

    /// The run has ended and its reports are written.
    pub fn end_run(&self) {
        self.board().ended = true;
    }

    /// Reads the board under its lock (a scrape: the rendering takes
    /// what it needs and lets go).
    pub fn read<R>(&self, f: impl FnOnce(&Board) -> R) -> R {
        f(&self.board())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Timing;
    use crate::stats::outcome::Outcome;
    use std::time::Duration;

    #[test]
    fn pieces_add_up_and_gauges_are_the_last_handed_over() {
        let live = Live::new(RunInfo::default());
        let op = live.begin_op("select", &["query"], vec!["h1".into()]);
        let mut piece = IntervalSet::new(1);
        let o = Outcome {
            rows: 1,
            missing: 0,
        };
        piece
            .of(0)
            .record(Timing::unscheduled(Duration::from_micros(80)), o);
        piece.of(0).record_error("40001");
        live.add_piece(op, 1, &piece, 3);
        live.add_piece(op, 0, &piece, 2);
        live.add_piece(op, 1, &IntervalSet::new(1), 1);
        live.read(|b| {
            let o = &b.ops[0];
            assert_eq!(o.so_far.types[0].ops, 2);
            assert_eq!(o.so_far.types[0].error_classes.get("40001"), Some(&2));
            assert_eq!(o.so_far.types[0].latency.len(), 2);
            assert_eq!(o.in_flight, vec![2, 1]);
        });
        live.end_op(op);
        live.read(|b| assert_eq!(b.ops[0].in_flight, vec![0, 0]));
    }
}
