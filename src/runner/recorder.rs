//! What the workers of one OS thread measure, kept once per thread.
//!
//! Each worker used to own its statistics (three HDR histograms per
//! transaction type and the common part), its interval recorder (more
//! histograms, per interval) and its scatter sample. An HDR histogram of
//! three significant digits from 1 ns takes about 100 KB once it holds
//! millisecond latencies, so that was about a megabyte per connection:
//! 1.1 GB at 1000 connections, and as many histograms to merge at the end.
//!
//! The workers of one thread run on its single-threaded runtime and so
//! never record at the same time. They share one [`ThreadRecorder`], made
//! on the thread behind a lock (`Send`, as the runtime's tasks must be;
//! see `threads.rs`) that they never wait for, but for the moment each
//! [`STOP_LOOK`] when the run's housekeeping takes it to move the interval
//! on (see [`housekeeping`]). A record holds it for the
//! length of one call that cannot await (every method takes a closure or
//! plain values), so it is never held across a suspension point and no
//! other worker of the thread can be running meanwhile. Memory now follows the OS threads (at
//! most the cores), not the connections, and every figure stays exact: a
//! histogram counts the same values whichever worker recorded them, and
//! the per-interval pieces are the thread's instead of each worker's.
//!
//! The figures per statement kind (transactions) are the thread's too: an
//! operation only lists the (statement, duration) pairs of the unit under
//! way, and as its worker counts the unit it moves them into the thread's
//! [`StatementTable`]; it drops them during the warmup and for a unit the
//! report leaves out (one the end of the run cut short), so that the
//! statements' counts are those of the units counted. A recorder
//! belongs to one operation's run, so every worker of the thread names
//! the same statement kinds.
//!
//! What stays per worker is what the reports show per worker or what says
//! how a worker ended: its rows (`thread_rows`), its error, the end of its
//! last unit and whether `--time` cut its share (see `worker.rs`). The
//! scatter sample and the timeline of the pictures are shared too; each
//! scatter point keeps its worker and its transaction type.
//!
//! The run's housekeeping task ([`housekeeping`]) moves every thread's
//! interval recorder on with the clock and looks at the stop flag for all
//! their waiting workers, every [`STOP_LOOK`]. It runs on the
//! coordinator's runtime, not on the workers' threads: a timer pending on
//! a worker thread's loop makes each of its waits for an answer an
//! `epoll_wait` with a timeout, which the kernel arms a timer for, and on
//! the 2-core VM of bench/RESULTS.md that cost about 1.4 µs a query at one
//! connection (sixth session, part D).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::ending::{STOP_LOOK, ThreadStop};
use super::intervals::{self, IntervalMsg, IntervalRecorder};
use crate::stats::outcome::{StatementStats, StatementTable, StatementTimes};
use crate::stats::{Keep, Scatter, Stats, Timeline, Timing, TypedStats, nanos};
use crate::workload::Outcome;

/// How the thread's interval pieces are cut and where they go.
pub(super) struct IntervalPlan {
    pub(super) len: Duration,
    /// How long measurement lasts, when known.
    pub(super) run_time: Option<Duration>,
    pub(super) tx: mpsc::UnboundedSender<IntervalMsg>,
}

/// What one OS thread's workers measured, handed back when they are done.
pub(super) struct ThreadOutput {
    pub(super) stats: TypedStats,
    pub(super) scatter: Scatter,
    pub(super) timeline: Timeline,
    /// Per statement kind, measured phase only.
    pub(super) statements: Vec<StatementStats>,
}

struct Recorded {
    /// Which thread (recorder) this is, for the interval collector.
    source: usize,
    types: usize,
    keep: Keep,
    measured: TypedStats,
    /// Recorded during the warmup, and thrown away.
    warmup: TypedStats,
    scatter: Scatter,
    timeline: Timeline,
    statements: StatementTable,
    plan: IntervalPlan,
    /// Made when the first worker of the thread starts measuring.
    intervals: Option<IntervalRecorder>,
    /// When measurement started, as the first worker of the thread saw it.
    start: Option<Instant>,
    /// Units of the thread's workers started and not yet counted: handed
    /// over with each interval piece (the live metrics' gauge).
    in_flight: u64,
    /// Units done and not yet recorded: see [`ThreadRecorder::unit_done`].
    pending: Vec<DoneUnit>,
}

/// A unit that succeeded, as a worker counts it ([`ThreadRecorder::unit_done`]).
pub(super) struct UnitDone<'a> {
    pub(super) unit: DoneUnit,
    /// It is back now: no longer in flight (see [`ThreadRecorder::unit_ended`]).
    pub(super) ended: bool,
    /// The times of its statements, moved into the thread's figures when
    /// measured, else dropped (see [`ThreadRecorder::statements_done`]).
    pub(super) statements: Option<&'a mut StatementTimes>,
    /// The host of its connection, counted per host.
    pub(super) host: Option<usize>,
}

/// A unit that succeeded, as it waits to be recorded.
#[derive(Clone, Copy)]
pub(super) struct DoneUnit {
    /// Measured, or in the warmup.
    pub(super) measured: bool,
    pub(super) worker: u32,
    /// Its transaction type.
    pub(super) ty: usize,
    pub(super) end: Instant,
    pub(super) timing: Timing,
    pub(super) outcome: Outcome,
    /// Its latency exceeded `--latency-limit`.
    pub(super) late: bool,
}

/// How many done units wait before they are recorded together (or
/// until an interval ends, see [`ThreadRecorder::tick`]). Recorded
/// together, their values land on the histograms' lines back to back:
/// one at a time, each was about a cache miss (see [`ThreadRecorder::unit_done`]).
const BATCH: usize = 1024;

impl Recorded {
    /// The statistics of the measured phase, or of the warmup.
    fn phase(&mut self, measured: bool) -> &mut TypedStats {
        if measured {
            &mut self.measured
        } else {
            &mut self.warmup
        }
    }

    /// Units started and not yet counted, as the interval pieces carry it.
    fn set_in_flight(&mut self, n: u64) {
        self.in_flight = n;
        if let Some(iv) = self.intervals.as_mut() {
            iv.in_flight = n;
        }
    }

    /// Records the units that wait, in the order they were done.
    #[inline(never)]
    fn record_pending(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        for u in pending.drain(..) {
            self.record(u);
        }
        // The same buffer again, with its capacity.
        self.pending = pending;
    }

    fn record(&mut self, u: DoneUnit) {
        let DoneUnit {
            measured,
            worker,
            ty,
            end,
            timing,
            outcome,
            late,
        } = u;
        let keep = self.keep;
        if !measured {
            self.warmup.of(ty).record_kept(timing, outcome, keep);
            return;
        }
        self.measured.of(ty).record_kept(timing, outcome, keep);
        if keep.pictures
            && let Some(start) = self.start
        {
            // As the intervals count them: a unit in flight at a timed
            // run's end counts at its end, not in a sliver after it.
            let mut since = nanos(end.saturating_duration_since(start));
            if let Some(d) = self.plan.run_time {
                since = since.min(nanos(d).saturating_sub(1));
            }
            let latency = nanos(timing.latency);
            let t = u16::try_from(ty).unwrap_or(u16::MAX);
            self.scatter.record(since, latency, worker, t);
            self.timeline.record(since, ty, latency, outcome.rows);
        }
        if let Some(iv) = self.intervals.as_mut() {
            iv.record(end, ty, timing, outcome, late);
        }
    }
}

/// The measurements shared by the workers of one OS thread; cloned into
/// each of them (a reference count, not a copy).
#[derive(Clone)]
pub(super) struct ThreadRecorder(Arc<Mutex<Recorded>>);

impl ThreadRecorder {
    /// The thread's measurements, for one call that cannot await. The
    /// workers of this thread take the lock, never at the same time, and
    /// the run's housekeeping once every [`STOP_LOOK`], for a moment. A
    /// worker that panicked while holding it left figures no worse than
    /// the units it was recording lost (a batch of them at most, see
    /// [`Self::unit_done`]), so a poisoned lock is taken as it is.
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recorder of thread `source` for `workers` workers of a workload
    /// with `types` transaction types.
    pub(super) fn new(
        source: usize,
        workers: usize,
        types: usize,
        keep: Keep,
        seed: u64,
        plan: IntervalPlan,
    ) -> Self {
        ThreadRecorder(Arc::new(Mutex::new(Recorded {
            source,
            types,
            keep,
            measured: TypedStats::new(types),
            warmup: TypedStats::new(types),
            scatter: Scatter::for_workers(seed, workers),
            timeline: Timeline::new(types),
            statements: StatementTable::default(),
            plan,
            intervals: None,
            start: None,
            in_flight: 0,
            pending: Vec::with_capacity(BATCH),
        })))
    }

    /// A worker starts measuring at `start`; the first one of the thread
    /// sets the thread's start, which intervals and the scatter sample
    /// count from (the workers pass the start barrier together).
    pub(super) fn begin(&self, start: Instant) {
        let mut r = self.lock();
        if r.start.is_none() {
            r.start = Some(start);
            let rec = IntervalRecorder::new(
                r.source,
                start,
                r.plan.len,
                r.plan.run_time,
                r.types,
                r.plan.tx.clone(),
            );
            r.intervals = Some(rec);
        }
    }

    /// A worker whose operation times its statements starts measuring:
    /// each of its statement kinds is listed, run or not.
    pub(super) fn name_statements(&self, times: Option<&mut StatementTimes>) {
        if let Some(t) = times {
            t.clear();
            self.lock().statements.name(t);
        }
    }

    /// As a unit is counted: moves the times of its statements into the
    /// thread's figures, or drops them when not `measured` (the warmup, or
    /// a unit not counted). No lock when there are none (a pipelined
    /// unit's time has gone in with its answer).
    pub(super) fn statements_done(&self, measured: bool, times: Option<&mut StatementTimes>) {
        match times {
            Some(t) if t.pending().is_empty() => {}
            Some(t) if measured => self.lock().statements.absorb(t),
            Some(t) => t.clear(),
            None => {}
        }
    }

    /// The statistics of the measured phase (or of the warmup, which are
    /// thrown away).
    pub(super) fn stats(&self, measured: bool) -> StatsRef<'_> {
        StatsRef {
            rec: self,
            measured,
        }
    }

    /// A unit was started (sent, or queued on a pipeline).
    pub(super) fn unit_started(&self) {
        self.in_flight(|n| n + 1);
    }

    /// A started unit came back, to be counted whatever its end.
    pub(super) fn unit_ended(&self) {
        self.in_flight(|n| n.saturating_sub(1));
    }

    fn in_flight(&self, f: impl FnOnce(u64) -> u64) {
        let mut r = self.lock();
        let n = f(r.in_flight);
        r.set_in_flight(n);
    }

    /// A successful unit (see [`UnitDone`]), with all that is counted of it
    /// at its end in one hold of the lock: each hold is two atomic
    /// read-modify-writes, which wait for the thread's earlier stores,
    /// and a success used to take it four times (`perf annotate`, 16
    /// connections: half of the samples in the worker's counting of a
    /// unit fell on taking the lock).
    ///
    /// It waits with up to [`BATCH`] others, and they are recorded
    /// together (into the histograms, the interval, the pictures' samples)
    /// before anything else touches the interval: the next unit's interval
    /// figure (an error, a retry, a host), the housekeeping's move to the
    /// clock, the end; and at once when this unit ended outside the
    /// current interval, so that a piece is handed over (or a late one
    /// sent) when it was before. So every figure and every interval piece
    /// is what recording each at once gave, while the recording's code
    /// runs once a batch instead of once a unit: with it, the code one
    /// tpcb-like transaction runs was larger than the 32 KB first-level
    /// instruction cache, and evicted itself (issue 24, seventh session in
    /// bench/RESULTS.md).
    pub(super) fn unit_done(&self, u: UnitDone<'_>) {
        let mut r = self.lock();
        let r = &mut *r;
        let unit = u.unit;
        if u.ended {
            r.set_in_flight(r.in_flight.saturating_sub(1));
        }
        if let Some(t) = u.statements {
            if unit.measured {
                r.statements.absorb(t);
            } else {
                t.clear();
            }
        }
        let stats = r.phase(unit.measured);
        if unit.late {
            stats.of(unit.ty).late += 1;
        }
        if let Some(host) = u.host {
            stats.common.conns.op_on(host);
        }
        let end = unit.end;
        r.pending.push(unit);
        // A unit of another interval hands a piece over (or sends a late
        // one): at once, as it did when each was recorded at once, not at
        // the housekeeping's next look.
        if r.pending.len() >= BATCH || r.intervals.as_ref().is_some_and(|iv| !iv.holds(end)) {
            r.record_pending();
        }
    }

    /// Interval figures of the measured phase (statistics are recorded
    /// through [`Self::stats`]), after the units that wait.
    pub(super) fn interval(&self, f: impl FnOnce(&mut IntervalRecorder)) {
        let mut r = self.lock();
        if !r.pending.is_empty() {
            r.record_pending();
        }
        if let Some(iv) = r.intervals.as_mut() {
            f(iv);
        }
    }

    /// The clock is at `now`: hands over the pieces of the intervals
    /// before it. A unit of this thread that read its end just before and
    /// records it just after sends a late piece of its own (see
    /// `intervals.rs`).
    ///
    /// While the clock is still in the current interval there is nothing
    /// to hand over, and the units that wait are left to the worker, which
    /// records them on its own thread when its batch is full or its next
    /// unit ends in a later interval. Recorded here, on the coordinator's
    /// thread, every batch and the histograms it lands on would move
    /// between the cores.
    pub(super) fn tick(&self, now: Instant) {
        let mut r = self.lock();
        if r.intervals.as_ref().is_none_or(|iv| iv.holds(now)) {
            return;
        }
        r.record_pending();
        if let Some(iv) = r.intervals.as_mut() {
            iv.move_to(now);
        }
    }

    /// Once every worker of the thread has ended: hands over the last
    /// interval piece and the thread's measurements.
    pub(super) fn finish(&self) -> ThreadOutput {
        let mut r = self.lock();
        let r = &mut *r;
        r.record_pending();
        match r.intervals.take() {
            Some(iv) => iv.finish(),
            None => intervals::finish_empty(r.source, &r.plan.tx),
        }
        let mut stats = std::mem::replace(&mut r.measured, TypedStats::new(r.types));
        stats.complete(r.keep);
        let scatter = std::mem::replace(&mut r.scatter, Scatter::new(0));
        let timeline = std::mem::replace(&mut r.timeline, Timeline::new(r.types));
        ThreadOutput {
            stats,
            scatter,
            timeline,
            statements: r.statements.take(),
        }
    }
}

/// The statistics a phase of a worker records into: the measured ones or
/// the warmup's.
#[derive(Clone, Copy)]
pub(super) struct StatsRef<'a> {
    rec: &'a ThreadRecorder,
    measured: bool,
}

impl StatsRef<'_> {
    /// Runs `f` on the statistics (it cannot await, so the borrow ends
    /// before any other worker runs).
    pub(super) fn with<R>(self, f: impl FnOnce(&mut TypedStats) -> R) -> R {
        f(self.rec.lock().phase(self.measured))
    }

    /// Runs `f` on the part that belongs to no transaction type
    /// (connections, reconnects).
    pub(super) fn common(self, f: impl FnOnce(&mut Stats)) {
        self.with(|s| f(&mut s.common));
    }
}

/// The operation's one task beside its workers, on the coordinator's
/// runtime, until it is aborted once they are done: every [`STOP_LOOK`],
/// for each worker thread that has made its recorder (`threads`), it wakes
/// the waiting workers if the run was stopped and moves the interval
/// recorder on to the clock, so that workers that wait (a rate slot) or
/// run one long unit do not hold the interval back from the collector.
/// One timer for the run, and none on the workers' threads (see the
/// module's doc).
/// It holds the recorders, and so their senders of interval pieces: the
/// coordinator drops it before it awaits the interval collector.
pub(super) async fn housekeeping(threads: Arc<Mutex<Vec<(ThreadRecorder, ThreadStop)>>>) {
    let mut tick = tokio::time::interval(STOP_LOOK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = Instant::now();
        let threads = threads.lock().unwrap_or_else(PoisonError::into_inner);
        for (rec, stop) in threads.iter() {
            stop.look();
            rec.tick(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A successful unit as the tests count it: not in flight before, no
    /// statements, no host.
    fn done(
        measured: bool,
        worker: u32,
        ty: usize,
        end: Instant,
        timing: Timing,
        outcome: Outcome,
        late: bool,
    ) -> UnitDone<'static> {
        UnitDone {
            unit: DoneUnit {
                measured,
                worker,
                ty,
                end,
                timing,
                outcome,
                late,
            },
            ended: false,
            statements: None,
            host: None,
        }
    }

    fn plan(tx: mpsc::UnboundedSender<IntervalMsg>) -> IntervalPlan {
        IntervalPlan {
            len: Duration::from_secs(1),
            run_time: None,
            tx,
        }
    }

    #[tokio::test]
    async fn workers_of_a_thread_share_one_set_of_histograms_exactly() {
        let (tx, rx) = mpsc::unbounded_channel();
        let keep = Keep {
            service: false,
            per_row: false,
            pictures: true,
        };
        let rec = ThreadRecorder::new(0, 3, 1, keep, 1, plan(tx));
        let start = Instant::now();
        rec.begin(start);
        let mut alone = Stats::default();
        for w in 0..3u32 {
            for i in 1..=100u64 {
                let d = Duration::from_micros(i * (w as u64 + 1));
                let t = Timing::unscheduled(d);
                let o = Outcome {
                    rows: 1,
                    missing: 0,
                };
                rec.unit_done(done(true, w, 0, start + d, t, o, false));
                rec.unit_done(done(false, w, 0, start + d, t, o, false));
                alone.record(t, o);
            }
        }
        rec.stats(true).common(|c| c.reconnects += 1);
        let out = rec.finish();
        let total = out.stats.total();
        assert_eq!(total.ops, 300);
        assert_eq!(total.reconnects, 1);
        assert_eq!(
            crate::stats::Percentiles::of(&total.latency),
            crate::stats::Percentiles::of(&alone.latency)
        );
        // Service time filled from latency, as without a schedule.
        assert_eq!(total.service.len(), 300);
        let workers: std::collections::BTreeSet<u32> =
            out.scatter.points().iter().map(|p| p.worker).collect();
        assert_eq!(workers.len(), 3);
        let units: u64 = out.timeline.bins().iter().map(|b| b[0].units).sum();
        assert_eq!(units, 300);
        drop(rec);
        // No end from a coordinator: the collector takes the time it ends.
        let (_, no_end) = tokio::sync::oneshot::channel();
        let figs = intervals::collect(
            rx,
            1,
            1,
            start,
            Duration::from_secs(1),
            None,
            None,
            no_end,
            None,
        )
        .await;
        assert_eq!(figs.iter().map(|f| f.total.ops).sum::<u64>(), 300);
    }

    /// All that a success counts at its end, taken in one hold of the
    /// lock: it is out of flight, its statements' times move (or, in the
    /// warmup, are dropped), lateness and its host are counted, in the
    /// phase it ran in.
    #[test]
    fn a_success_counts_everything_of_its_end_in_the_phase_it_ran_in() {
        let (rec, _rx, start) = one_thread_measuring();
        let (t, o) = a_unit();
        let mut times = StatementTimes::new(["select"], |_| "read");
        rec.name_statements(Some(&mut times));
        for measured in [false, true, true] {
            rec.unit_started();
            times.record(0, Duration::from_micros(4));
            rec.unit_done(UnitDone {
                ended: true,
                statements: Some(&mut times),
                host: Some(2),
                ..done(
                    measured,
                    0,
                    0,
                    start + Duration::from_millis(1),
                    t,
                    o,
                    measured,
                )
            });
            assert!(times.pending().is_empty());
            assert_eq!(rec.lock().in_flight, 0);
        }
        rec.unit_started();
        assert_eq!(rec.lock().in_flight, 1);
        let warmup_ops = rec.lock().warmup.common.conns.ops.clone();
        assert_eq!(warmup_ops, [0, 0, 1]);
        let out = rec.finish();
        assert_eq!(out.stats.common.conns.ops, [0, 0, 2]);
        assert_eq!(out.stats.types[0].late, 2);
        assert_eq!(out.stats.total().ops, 2);
        assert_eq!(out.statements.len(), 1);
        assert_eq!(out.statements[0].count, 2);
    }

    /// One thread's recorder, without pictures, measuring since the
    /// instant returned, and where its interval pieces go.
    fn one_thread_measuring() -> (
        ThreadRecorder,
        mpsc::UnboundedReceiver<IntervalMsg>,
        Instant,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let keep = Keep {
            service: false,
            per_row: false,
            pictures: false,
        };
        let rec = ThreadRecorder::new(0, 1, 1, keep, 1, plan(tx));
        let start = Instant::now();
        rec.begin(start);
        (rec, rx, start)
    }

    /// A unit of 5 µs and one row.
    fn a_unit() -> (Timing, Outcome) {
        let o = Outcome {
            rows: 1,
            missing: 0,
        };
        (Timing::unscheduled(Duration::from_micros(5)), o)
    }

    /// Units wait to be recorded in batches, but no interval is handed
    /// over without them: the housekeeping's move to the clock records
    /// them first, into the interval they ended in, not as a late piece.
    #[test]
    fn units_waiting_in_a_batch_go_into_the_interval_they_ended_in() {
        let (rec, mut rx, start) = one_thread_measuring();
        let (t, o) = a_unit();
        let n = BATCH as u64 - 1;
        // All within the first interval (1 s).
        let step = Duration::from_secs(1) / BATCH as u32;
        for i in 0..n {
            rec.unit_done(done(true, 0, 0, start + step * i as u32, t, o, false));
        }
        // Inside the interval the housekeeping leaves them to the worker.
        rec.tick(start + Duration::from_millis(999));
        assert_eq!(rec.lock().pending.len() as u64, n);
        assert!(rx.try_recv().is_err(), "a piece before the interval's end");
        rec.tick(start + Duration::from_millis(1500));
        let m = rx.try_recv().expect("the first interval's piece");
        assert_eq!((m.index(), m.ops()), (0, n));
        assert!(rec.lock().pending.is_empty());
        assert!(rx.try_recv().is_err(), "a late piece");
        assert_eq!(rec.finish().stats.total().ops, n);
    }

    /// A unit that ends in a later interval hands over the piece of the
    /// interval before at once, as recording it at once did (the module
    /// doc of `intervals.rs`): the collector finishes an interval when
    /// every thread's piece is in, or a grace (half of `-P`, so 5 ms at
    /// `-P 0.01`) after its end, and its progress line, `--slo-abort` and
    /// the live board see only the pieces in by then. Waiting in a batch
    /// until the housekeeping's next look (every 20 ms) held it back.
    #[test]
    fn a_unit_in_a_later_interval_hands_over_the_piece_before_it_at_once() {
        let (rec, mut rx, start) = one_thread_measuring();
        let (t, o) = a_unit();
        for i in 0..3u64 {
            rec.unit_started();
            rec.unit_ended();
            rec.unit_done(done(
                true,
                0,
                0,
                start + Duration::from_millis(100 * i),
                t,
                o,
                false,
            ));
        }
        // The first unit of interval 1 ends: the thread is past interval 0.
        rec.unit_started();
        rec.unit_ended();
        rec.unit_done(done(
            true,
            0,
            0,
            start + Duration::from_millis(1200),
            t,
            o,
            false,
        ));
        let m = rx
            .try_recv()
            .expect("interval 0's piece, handed over at once");
        assert_eq!((m.index(), m.ops(), m.in_flight()), (0, 3, 0));
        // The next unit starts, and the housekeeping looks later: the
        // piece said how many units were in flight when it was handed
        // over, not at the housekeeping's look.
        rec.unit_started();
        rec.tick(start + Duration::from_millis(1300));
        assert!(rx.try_recv().is_err(), "nothing more to hand over");
    }

    /// Without pictures to draw, no unit goes into the scatter sample or
    /// the timeline; the statistics and intervals count it all the same.
    #[tokio::test]
    async fn without_pictures_the_samples_of_the_pictures_stay_empty() {
        let (rec, rx, start) = one_thread_measuring();
        for i in 1..=50u64 {
            let d = Duration::from_micros(i);
            let o = Outcome {
                rows: 1,
                missing: 0,
            };
            rec.unit_done(done(
                true,
                0,
                0,
                start + d,
                Timing::unscheduled(d),
                o,
                false,
            ));
        }
        let out = rec.finish();
        assert_eq!(out.stats.total().ops, 50);
        assert!(out.scatter.points().is_empty());
        assert!(out.timeline.is_empty());
        drop(rec);
        let (_, no_end) = tokio::sync::oneshot::channel();
        let len = Duration::from_secs(1);
        let figs = intervals::collect(rx, 1, 1, start, len, None, None, no_end, None).await;
        assert_eq!(figs.iter().map(|f| f.total.ops).sum::<u64>(), 50);
    }

    #[tokio::test]
    async fn statement_times_of_the_warmup_are_dropped_and_the_rest_moved_once() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let keep = Keep {
            service: false,
            per_row: false,
            pictures: false,
        };
        let rec = ThreadRecorder::new(0, 2, 1, keep, 1, plan(tx));
        let names = ["select", "update", "commit"];
        let class = crate::workload::kit::query_class;
        let mut a = StatementTimes::new(names, class);
        let mut b = StatementTimes::new(names, class);
        // The warmup: recorded, then dropped after the unit.
        a.record(0, Duration::from_millis(50));
        rec.statements_done(false, Some(&mut a));
        assert!(a.pending().is_empty());
        rec.begin(Instant::now());
        rec.name_statements(Some(&mut a));
        rec.name_statements(Some(&mut b));
        for i in 1..=10u64 {
            a.record(0, Duration::from_micros(i));
            b.record(0, Duration::from_micros(i));
            b.record(1, Duration::from_micros(100 * i));
            rec.statements_done(true, Some(&mut a));
            rec.statements_done(true, Some(&mut b));
        }
        // Moved already: a second call adds nothing.
        rec.statements_done(true, Some(&mut b));
        let out = rec.finish();
        let got: Vec<(&str, &str, u64)> = out
            .statements
            .iter()
            .map(|s| (s.name, s.class, s.count))
            .collect();
        assert_eq!(
            got,
            [
                ("select", "read", 20),
                ("update", "write", 10),
                ("commit", "other", 0)
            ]
        );
        // No warmup time in the measured figures.
        assert!(out.statements[0].latency.max() < 1_000_000);
    }
}
