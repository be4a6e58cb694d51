//! Per-interval figures while an operation runs: the recording side
//! ([`IntervalRecorder`], one per OS thread of workers) and the collector
//! that merges their pieces.
//!
//! The workers of one thread record each unit into the interval in which
//! it ended, in their thread's recorder, which sends the interval's stats
//! to the collector when it moves on to a later interval (about once per
//! interval, so the channel is quiet): when a unit ends in a later
//! interval, and at each interval's end from the run's housekeeping task
//! (see `recorder.rs`), so that idle workers or one long unit do not hold
//! back the thread's piece. The housekeeping runs on another thread, so a
//! unit may read its end just before its recorder moves on and record it
//! just after: its piece is then late, and counts in its own interval all
//! the same (below). The collector
//! finishes interval i when every recorder still running has moved past
//! it, or, so that one long unit cannot hold up the progress lines, when
//! a grace period after the interval's end has passed.
//!
//! A piece that arrives after its interval was finished (a unit that ended
//! in it but was sent late, or whose end was read before the recorder moved
//! on, such as a long unit that first counted its committed rows) still
//! counts in that interval, not in a later one: the figures that the CSV
//! and JSON reports keep are those of the units that really ended in each
//! interval. The histograms of the last [`KEEP_FINISHED`] finished
//! intervals are kept so that a late piece is merged at once; an older
//! interval's figures are added to by the one rule interval figures add
//! up by (`AddAssign` of [`IntervalFigures`], which `merge` uses too),
//! from the compressed histograms the figures keep, so its percentiles
//! are exact too, if dearer to make. Only the progress line, printed
//! when the interval was finished, shows what was known then.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::stats::interval::{IntervalFigures, IntervalSet, IntervalStats, SetFigures};
use crate::stats::{Timing, nanos};
use crate::workload::Outcome;

/// A piece of an interval, from one recorder.
pub struct IntervalMsg {
    source: usize,
    index: u64,
    stats: IntervalSet,
    /// The recorder will send no more pieces.
    done: bool,
    /// Units the recorder's thread had in flight when it sent the piece
    /// (the live metrics' gauge).
    in_flight: u64,
}

#[cfg(test)]
impl IntervalMsg {
    /// The interval this piece is of.
    pub(super) fn index(&self) -> u64 {
        self.index
    }

    /// The units the piece counts, of every type.
    pub(super) fn ops(&self) -> u64 {
        self.stats.total().ops
    }

    /// The thread's units in flight when the piece was handed over.
    pub(super) fn in_flight(&self) -> u64 {
        self.in_flight
    }
}

/// The recording side: one per OS thread of workers.
pub struct IntervalRecorder {
    /// Which recorder this is, for the collector (0-based).
    source: usize,
    start: Instant,
    len_ns: u64,
    index: u64,
    /// Units that end after a timed run's end (in flight at the deadline)
    /// count in its last interval instead of making a sliver of their own.
    last_index: Option<u64>,
    /// Transaction types of the workload.
    types: usize,
    current: IntervalSet,
    tx: mpsc::UnboundedSender<IntervalMsg>,
    /// Units in flight on the recorder's thread, as its recorder last
    /// said: sent with each piece.
    pub in_flight: u64,
}

impl IntervalRecorder {
    /// `run_time`, when known, is how long measurement lasts; `types`
    /// is how many transaction types the workload has.
    pub fn new(
        source: usize,
        start: Instant,
        len: Duration,
        run_time: Option<Duration>,
        types: usize,
        tx: mpsc::UnboundedSender<IntervalMsg>,
    ) -> Self {
        let len_ns = nanos(len).max(1);
        IntervalRecorder {
            source,
            start,
            len_ns,
            index: 0,
            last_index: run_time.map(|d| nanos(d).div_ceil(len_ns).saturating_sub(1)),
            types,
            current: IntervalSet::new(types),
            tx,
            in_flight: 0,
        }
    }

    /// The interval of `at`.
    fn index_of(&self, at: Instant) -> u64 {
        let index = nanos(at.saturating_duration_since(self.start)) / self.len_ns;
        match self.last_index {
            Some(last) => index.min(last),
            None => index,
        }
    }

    /// Whether `at` falls in the current interval: recording a unit that
    /// ended then neither hands a piece over nor sends a late one.
    pub fn holds(&self, at: Instant) -> bool {
        self.index_of(at) == self.index
    }

    /// Moves to the interval of `at`, handing over the piece of the
    /// interval before. Called with a unit's end, and with the clock by
    /// the run's housekeeping (a unit that read its end before that and
    /// records it after goes to `Self::at`'s late piece).
    pub fn move_to(&mut self, at: Instant) {
        let index = self.index_of(at);
        // Forward only.
        if index > self.index {
            self.send(false);
            self.index = index;
        }
    }

    fn send(&mut self, done: bool) {
        let stats = std::mem::replace(&mut self.current, IntervalSet::new(self.types));
        // A closed collector means the operation is being torn down.
        let _ = self.tx.send(IntervalMsg {
            source: self.source,
            index: self.index,
            stats,
            done,
            in_flight: self.in_flight,
        });
    }

    /// The piece of the interval of `at`, changed by `f`: the current one,
    /// after moving on to `at`'s interval if that is later; or, for a time
    /// before the current interval, a piece of its own sent at once.
    fn at(&mut self, at: Instant, f: impl FnOnce(&mut IntervalSet)) {
        let index = self.index_of(at);
        if index < self.index {
            let mut late = IntervalSet::new(self.types);
            f(&mut late);
            let _ = self.tx.send(IntervalMsg {
                source: self.source,
                index,
                stats: late,
                done: false,
                in_flight: self.in_flight,
            });
            return;
        }
        self.move_to(at);
        f(&mut self.current);
    }

    /// Records a successful unit of type `ty` that ended at `end`.
    /// `late`: its latency exceeded `--latency-limit`.
    pub fn record(
        &mut self,
        end: Instant,
        ty: usize,
        timing: Timing,
        outcome: Outcome,
        late: bool,
    ) {
        self.at(end, |s| {
            let s = s.of(ty);
            s.record(timing, outcome);
            s.late += u64::from(late);
        });
    }

    /// Counts a unit that succeeded on host `host` and ended at `end`.
    pub fn record_host(&mut self, end: Instant, host: usize) {
        self.at(end, |s| s.common.on_host(host));
    }

    /// Counts a failed unit of type `ty` that ended at `end`, under its
    /// error class (a SQLSTATE).
    pub fn record_error(&mut self, end: Instant, ty: usize, class: &str) {
        self.at(end, |s| s.of(ty).record_error(class));
    }

    /// Counts a connection made again at `at` after one was lost.
    pub fn record_reconnect(&mut self, at: Instant) {
        self.at(at, |s| s.common.reconnects += 1);
    }

    /// Counts a unit skipped at `at` under --latency-limit (before its
    /// type was drawn).
    pub fn record_skipped(&mut self, at: Instant) {
        self.at(at, |s| s.common.skipped += 1);
    }

    /// Counts the retries of a unit of type `ty` that ended at `end`.
    pub fn record_retries(&mut self, end: Instant, ty: usize, retries: u64) {
        self.at(end, |s| s.of(ty).retries += retries);
    }

    /// Counts rows that a failed unit of type `ty` ending at `end` left
    /// committed.
    pub fn record_rows(&mut self, end: Instant, ty: usize, rows: u64) {
        self.at(end, |s| s.of(ty).rows += rows);
    }

    /// Hands over the last piece.
    pub fn finish(mut self) {
        self.send(true);
    }
}

/// Tells the collector that recorder `source`, which never started
/// measuring (its workers failed before the start), sends nothing more.
pub fn finish_empty(source: usize, tx: &mpsc::UnboundedSender<IntervalMsg>) {
    let _ = tx.send(IntervalMsg {
        source,
        index: 0,
        stats: IntervalSet::new(1),
        done: true,
        in_flight: 0,
    });
}

/// Called with each finished interval (progress lines, `--slo` so far,
/// live metrics): its figures and the pieces they were made of,
/// histograms included.
pub type OnInterval = Box<dyn FnMut(&SetFigures, &IntervalSet) + Send>;

/// Where the collector adds every piece as it comes, for the live metrics
/// (`--metrics-addr`): the run's board and the operation's place on it.
#[derive(Clone)]
pub struct LiveFeed {
    pub live: crate::stats::live::Live,
    pub op: usize,
}

/// How many finished intervals keep their histograms for late pieces: a
/// histogram of millisecond latencies takes about 100 KB, and a piece is
/// rarely later than a few intervals.
pub const KEEP_FINISHED: usize = 8;

/// [`absorb_late`] for the total and each type.
fn absorb_late_set(f: &mut SetFigures, piece: &IntervalSet) {
    absorb_late(&mut f.total, &piece.total());
    for (f, p) in f.types.iter_mut().zip(&piece.types) {
        absorb_late(f, p);
    }
}

/// Adds a piece that arrived after its interval `f` was finished, whose
/// live histogram is no longer kept, by the one rule interval figures add
/// up by (`AddAssign` of [`IntervalFigures`], from the compressed
/// histograms the figures keep).
fn absorb_late(f: &mut IntervalFigures, piece: &IntervalStats) {
    let len = std::time::Duration::from_secs_f64(f.seconds.max(0.0));
    *f += &piece.figures(f.index, len);
}

/// What the collector holds between pieces: the intervals not finished
/// yet, the last finished with their histograms, and the figures of
/// every finished interval, in order.
struct Collector {
    len: Duration,
    types: usize,
    pending: BTreeMap<u64, IntervalSet>,
    /// The last finished intervals, histograms included, for late pieces.
    kept: BTreeMap<u64, IntervalSet>,
    /// The next interval to finish.
    next: u64,
    out: Vec<SetFigures>,
    on_interval: Option<OnInterval>,
}

impl Collector {
    /// Takes a piece: into its interval, finished or not.
    fn take(&mut self, m: &IntervalMsg) {
        // An empty piece only says how far its recorder got (the
        // housekeeping's, or the last one of a thread that waited for
        // stuck workers): it makes no interval of its own.
        if m.stats.is_empty() {
            return;
        }
        if m.index >= self.next {
            let types = self.types;
            self.pending
                .entry(m.index)
                .or_insert_with(|| IntervalSet::new(types))
                .add(&m.stats);
        } else if let Some(f) = self.out.get_mut(m.index as usize) {
            // Late: into the interval it belongs to.
            match self.kept.get_mut(&m.index) {
                Some(k) => {
                    k.add(&m.stats);
                    *f = k.figures(m.index, self.len);
                }
                None => absorb_late_set(f, &m.stats),
            }
        }
    }

    /// The pieces of interval `index`, taken out of those pending.
    fn pieces(&mut self, index: u64) -> IntervalSet {
        self.pending
            .remove(&index)
            .unwrap_or_else(|| IntervalSet::new(self.types))
    }

    /// Hands a finished interval's figures on.
    fn push(&mut self, f: SetFigures, stats: &IntervalSet) {
        if let Some(cb) = self.on_interval.as_mut() {
            cb(&f, stats);
        }
        self.out.push(f);
        self.next += 1;
    }

    /// Finishes every interval before `upto`.
    fn finish_upto(&mut self, upto: u64) {
        while self.next < upto {
            let index = self.next;
            let stats = self.pieces(index);
            self.push(stats.figures(index, self.len), &stats);
            self.kept.insert(index, stats);
            if self.kept.len() > KEEP_FINISHED {
                self.kept.pop_first();
            }
        }
    }

    /// Every recorder is done: the rest, the last one possibly partial,
    /// up to `total` after the start. The end is the operation's (the
    /// stop, or the last unit counted after it), not now: intervals
    /// finished while a stuck worker was waited for after the end are no
    /// part of the measurement.
    fn finish(mut self, total: Duration, last_index: Option<u64>) -> Vec<SetFigures> {
        let len = self.len;
        let by_end = (nanos(total).max(1) - 1) / nanos(len).max(1);
        let by_end = by_end.min(last_index.unwrap_or(u64::MAX));
        let last = self
            .pending
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(by_end);
        self.out.truncate(last as usize + 1);
        // The length of the last interval, which may be partial.
        let last_len = |begin: Duration| match total.checked_sub(begin) {
            Some(d) if !d.is_zero() => d.min(len),
            _ => len,
        };
        if self.next > last
            && let Some(f) = self.out.get_mut(last as usize)
        {
            // Already finished (while a stuck worker was waited for):
            // made partial now.
            let begin = len.saturating_mul(last as u32);
            let this_len = last_len(begin);
            if let Some(k) = self.kept.get(&last) {
                *f = k.figures(last, this_len);
            }
            f.set_length(this_len.as_secs_f64(), (begin + this_len).as_secs_f64());
        }
        while self.next <= last {
            let index = self.next;
            let begin = len.saturating_mul(index as u32);
            // Only the last interval may be partial.
            let this_len = if index < last { len } else { last_len(begin) };
            let pieces = self.pieces(index);
            let mut f = pieces.figures(index, this_len);
            f.set_length(this_len.as_secs_f64(), (begin + this_len).as_secs_f64());
            self.push(f, &pieces);
        }
        self.out
    }
}

/// Merges the recorders' pieces until every recorder is gone; returns the
/// figures of every interval, in order. The last interval is finished only
/// when the workers are done, with its true length up to `end` (sent by
/// the coordinator; now, if it sends none). `run_time`, when known, tells
/// which interval is the last.
#[allow(clippy::too_many_arguments)]
pub async fn collect(
    mut rx: mpsc::UnboundedReceiver<IntervalMsg>,
    sources: usize,
    types: usize,
    start: Instant,
    len: Duration,
    run_time: Option<Duration>,
    on_interval: Option<OnInterval>,
    end: tokio::sync::oneshot::Receiver<Instant>,
    live: Option<LiveFeed>,
) -> Vec<SetFigures> {
    let grace = (len / 2).min(Duration::from_secs(1));
    let len_ns = nanos(len).max(1);
    let last_index = run_time.map(|d| nanos(d).div_ceil(len_ns).saturating_sub(1));
    let mut c = Collector {
        len,
        types,
        pending: BTreeMap::new(),
        kept: BTreeMap::new(),
        next: 0,
        out: Vec::new(),
        on_interval,
    };
    let mut position = vec![0u64; sources];
    let mut done = vec![false; sources];
    let mut tick = tokio::time::interval(
        (len / 4).clamp(Duration::from_millis(10), Duration::from_millis(250)),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(m) = msg else { break };
                if let Some(f) = &live {
                    f.live.add_piece(f.op, m.source, &m.stats, m.in_flight);
                }
                c.take(&m);
                // A recorder sends interval k's piece when it moves past k.
                if let Some(p) = position.get_mut(m.source) {
                    *p = (*p).max(m.index + 1);
                }
                if m.done && let Some(d) = done.get_mut(m.source) {
                    *d = true;
                }
            }
            _ = tick.tick() => {}
        }
        // Intervals that have ended, and those past the grace period.
        let ended = nanos(start.elapsed()) / len_ns;
        let past_grace = nanos(start.elapsed().saturating_sub(grace)) / len_ns;
        let frontier = position
            .iter()
            .zip(&done)
            .filter(|(_, d)| !**d)
            .map(|(p, _)| *p)
            .min()
            .unwrap_or(u64::MAX);
        let upto = frontier
            .max(past_grace)
            .min(ended)
            .min(last_index.unwrap_or(u64::MAX));
        c.finish_upto(upto);
    }
    let end = end.await.unwrap_or_else(|_| Instant::now());
    c.finish(end.saturating_duration_since(start), last_index)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No end from a coordinator: the collector takes the time it ends.
    fn no_end() -> tokio::sync::oneshot::Receiver<Instant> {
        tokio::sync::oneshot::channel().1
    }

    fn unit() -> (Timing, Outcome) {
        (
            Timing::unscheduled(Duration::from_micros(100)),
            Outcome {
                rows: 2,
                missing: 0,
            },
        )
    }

    #[tokio::test]
    async fn pieces_of_all_workers_add_up_per_interval() {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let len = Duration::from_secs(1);
        let mut a = IntervalRecorder::new(0, start, len, None, 1, tx.clone());
        let mut b = IntervalRecorder::new(1, start, len, None, 1, tx);
        let (t, o) = unit();
        // Interval 0: a 3 units, b 1; interval 2: b 2 units and an error.
        for _ in 0..3 {
            a.record(start + Duration::from_millis(100), 0, t, o, false);
        }
        b.record(start + Duration::from_millis(900), 0, t, o, false);
        b.record(start + Duration::from_millis(2100), 0, t, o, false);
        b.record(start + Duration::from_millis(2200), 0, t, o, false);
        b.record_error(start + Duration::from_millis(2300), 0, "40001");
        a.finish();
        b.finish();
        let figs = collect(rx, 2, 1, start, len, None, None, no_end(), None).await;
        assert_eq!(figs[0].total.ops, 4);
        assert_eq!(figs[0].total.rows, 8);
        assert_eq!(figs[1].total.ops, 0);
        assert_eq!(figs[2].total.ops, 2);
        assert_eq!(figs[2].total.errors, 1);
        assert_eq!(figs.iter().map(|f| f.total.ops).sum::<u64>(), 6);
        assert!((figs[0].total.ops_per_s - 4.0).abs() < 1e-9);
    }

    #[tokio::test]
    async fn units_in_flight_at_the_deadline_count_in_the_last_interval() {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let len = Duration::from_secs(1);
        let mut r = IntervalRecorder::new(0, start, len, Some(Duration::from_secs(2)), 1, tx);
        let (t, o) = unit();
        r.record(start + Duration::from_millis(1500), 0, t, o, false);
        r.record(start + Duration::from_millis(2003), 0, t, o, false);
        r.finish();
        let figs = collect(
            rx,
            1,
            1,
            start,
            len,
            Some(Duration::from_secs(2)),
            None,
            no_end(),
            None,
        )
        .await;
        assert_eq!(figs.len(), 2);
        assert_eq!(figs[1].total.ops, 2);
    }

    /// A piece sent after its interval was finished (the worker's next
    /// unit ended much later) counts in its own interval, not a later one.
    #[tokio::test]
    async fn a_late_piece_counts_in_the_interval_its_units_ended_in() {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let len = Duration::from_millis(20);
        let worker = tokio::spawn(async move {
            let mut r = IntervalRecorder::new(0, start, len, None, 1, tx);
            let (t, o) = unit();
            r.record(start + Duration::from_millis(5), 0, t, o, false);
            // Long enough for the collector to finish intervals 0..4 by
            // its grace period before interval 0's piece arrives.
            tokio::time::sleep(Duration::from_millis(150)).await;
            r.record(Instant::now(), 0, t, o, false);
            r.finish();
        });
        let figs = collect(rx, 1, 1, start, len, None, None, no_end(), None).await;
        worker.await.unwrap();
        assert_eq!(figs[0].total.ops, 1, "{figs:?}");
        assert_eq!(figs[0].total.rows, 2);
        assert!(figs[0].total.latency.max > 0);
        assert_eq!(figs.iter().map(|f| f.total.ops).sum::<u64>(), 2);
    }

    #[test]
    fn a_late_piece_past_the_kept_histograms_updates_counts_min_and_max() {
        let len = Duration::from_secs(1);
        let mut early = IntervalStats::default();
        let (t, o) = unit();
        early.record(t, o);
        let mut f = early.figures(0, len);
        let mut late = IntervalStats::default();
        late.record(Timing::unscheduled(Duration::from_micros(900)), o);
        late.errors = 1;
        absorb_late(&mut f, &late);
        assert_eq!((f.ops, f.rows, f.errors), (2, 4, 1));
        assert!((f.ops_per_s - 2.0).abs() < 1e-9);
        assert!(f.latency.min < 101_000 && f.latency.max > 899_000, "{f:?}");
        assert!((f.latency.mean - 500_000.0).abs() < 1_000.0, "{f:?}");
    }

    #[tokio::test]
    async fn the_callback_sees_every_interval_once_in_order() {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let len = Duration::from_millis(20);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let cb: OnInterval = Box::new(move |f, _| s2.lock().unwrap().push(f.total.index));
        let worker = tokio::spawn(async move {
            let mut r = IntervalRecorder::new(0, start, len, None, 1, tx);
            let (t, o) = unit();
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(7)).await;
                r.record(Instant::now(), 0, t, o, false);
            }
            r.finish();
        });
        let figs = collect(rx, 1, 1, start, len, None, Some(cb), no_end(), None).await;
        worker.await.unwrap();
        let indexes: Vec<u64> = figs.iter().map(|f| f.total.index).collect();
        assert_eq!(*seen.lock().unwrap(), indexes);
        assert_eq!(indexes, (0..indexes.len() as u64).collect::<Vec<_>>());
        assert_eq!(figs.iter().map(|f| f.total.ops).sum::<u64>(), 10);
    }

    /// A unit whose end was read before the thread's recorder moved on
    /// counts in the interval it ended in, not in the recorder's current.
    #[tokio::test]
    async fn an_end_before_the_current_interval_goes_to_its_own() {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Instant::now() - Duration::from_secs(5);
        let len = Duration::from_secs(1);
        let mut r = IntervalRecorder::new(0, start, len, None, 1, tx);
        let (t, o) = unit();
        r.record(start + Duration::from_millis(3500), 0, t, o, false);
        r.record(start + Duration::from_millis(1200), 0, t, o, false);
        r.record_error(start + Duration::from_millis(1300), 0, "40001");
        r.record(start + Duration::from_millis(3600), 0, t, o, false);
        r.finish();
        let figs = collect(rx, 1, 1, start, len, None, None, no_end(), None).await;
        let ops: Vec<u64> = figs.iter().map(|f| f.total.ops).collect();
        assert_eq!(&ops[..4], &[0, 1, 0, 2]);
        assert_eq!(figs[1].total.errors, 1);
    }
}
