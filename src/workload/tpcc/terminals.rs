//! The terminals of a TPC-C run (`--terminals`), shared by the workers'
//! connections.
//!
//! The specification's users are terminals: each keys an input screen,
//! waits for the answer, reads it and keys the next (clause 5.2.5). With
//! keying and think times a terminal is busy on the database a fraction
//! of a percent of its time, so one connection per terminal (a thousand
//! warehouses, ten thousand connections) costs the server a backend per
//! idle terminal. Here a terminal is a few hundred bytes of state in a
//! queue ordered by when it is next ready; the `-t` workers each take the
//! earliest ready terminal, run its transaction on their connection and
//! hand it back with its next ready time (its think time after this
//! transaction, then the keying time of the next). A terminal holds a
//! connection only while its transaction runs.
//!
//! A terminal's ready time is its transaction's intended start: the
//! runner measures latency from it ([`crate::workload::Operation::ready`]),
//! so a terminal that is ready while every connection is busy waits in
//! the queue, and that wait (queueing) is in its response time, as clause
//! 5.5 counts it, and not in its service time.
//!
//! Why a locked binary heap and not a timer per terminal: a timer (or a
//! task) per terminal is kilobytes, the heap entry is its state alone,
//! and a worker touches the lock twice per transaction (seconds apart
//! with the waits; microseconds of work). Workers that find no terminal
//! ready sleep until the earliest one is; a terminal handed back earlier
//! than that wakes one of them (tokio's timer: up to a millisecond late).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use super::txn::{Homes, Mix};
use super::{DISTRICTS, WarehouseRange, wait};
use crate::workload::worker_seed;

/// One terminal: its home warehouse and district, its own random inputs
/// and deck of transaction types, and the type of its next transaction
/// (drawn when it is handed back, so that its keying time is known).
pub struct TerminalState {
    /// Which terminal (0-based), for messages and ties in the queue.
    pub id: u32,
    pub rng: SmallRng,
    /// Its home warehouse (clause 2.4.1.1: every transaction's W_ID).
    pub w: i32,
    /// Its district, fixed per terminal (clause 2.8.1.1 for Stock-Level).
    pub d: i32,
    /// A shuffled deck of 100 cards in the mix (clause 5.2.4.2).
    deck: [u8; 100],
    next_card: u8,
    /// The type of its next transaction, an index of [`super::txn::TYPES`].
    pub next: u8,
}

impl TerminalState {
    /// Terminal `id` of a client whose home warehouses are `at.homes`:
    /// home warehouse number `id % n` of the `n` homes, so terminals
    /// spread evenly, ten per warehouse when there are ten times as many;
    /// district `id / n % 10 + 1`, so the ten of a warehouse have one
    /// district each.
    pub fn new(seed: u64, id: u32, at: Homes, mix: Mix) -> Self {
        let n = at.homes.len().max(1);
        let mut deck = [0u8; 100];
        let mut i = 0;
        for (ty, cards) in mix.0.iter().enumerate() {
            for _ in 0..*cards {
                if let Some(c) = deck.get_mut(i) {
                    *c = ty as u8;
                }
                i += 1;
            }
        }
        let mut t = TerminalState {
            id,
            // The home range in the seed: clients on other machines that
            // share --seed (as they must, for one set of NURand constants)
            // have terminals of the same numbers, which would otherwise
            // draw the very same inputs in the same order.
            rng: SmallRng::seed_from_u64(worker_seed(
                seed,
                id as usize,
                0x7C_C7E7 + (u64::from(at.homes.first) << 32),
            )),
            w: (at.homes.first + id % n) as i32,
            d: ((id / n) % DISTRICTS + 1) as i32,
            deck,
            next_card: 100,
            next: 0,
        };
        t.next = t.draw_type();
        t
    }

    /// The next card of the deck, reshuffled when it is used up.
    pub fn draw_type(&mut self) -> u8 {
        if usize::from(self.next_card) >= self.deck.len() {
            self.deck.shuffle(&mut self.rng);
            self.next_card = 0;
        }
        self.next_card += 1;
        self.deck[usize::from(self.next_card) - 1]
    }

    /// With `--all-warehouses`: this transaction's warehouse, drawn from
    /// all of `homes` (HammerDB's "use all warehouses"); else its home.
    pub fn warehouse(&mut self, spread: Option<WarehouseRange>) -> i32 {
        match spread {
            Some(r) => self.rng.random_range(r.first..=r.last) as i32,
            None => self.w,
        }
    }
}

/// A terminal in the queue: ready `ready` after the queue's epoch.
struct Waiting {
    ready: Duration,
    state: TerminalState,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiting {
    /// Reversed, so that the max-heap gives the earliest ready (the lower
    /// id first among equals).
    fn cmp(&self, other: &Self) -> Ordering {
        (other.ready, other.state.id).cmp(&(self.ready, self.state.id))
    }
}

/// The keying and think times, scaled (`--tpcc-wait-scale`), or none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Waits {
    pub scale: f64,
}

impl Waits {
    fn keying(self, ty: u8) -> Duration {
        wait::keying_time(usize::from(ty)).mul_f64(self.scale)
    }
}

/// All the terminals of a run, queued by when each is next ready.
pub struct Terminals {
    /// When the first worker asked for a terminal: ready times count
    /// from it.
    epoch: OnceLock<Instant>,
    queue: Mutex<BinaryHeap<Waiting>>,
    /// A terminal handed back ahead of every other in the queue.
    ahead: tokio::sync::Notify,
    waits: Option<Waits>,
    /// The terminals' committed New-Orders over the whole operation
    /// (warmup included), against the server's count.
    pub committed_new_orders: AtomicU64,
}

impl Terminals {
    /// `count` terminals over the homes of `at`, dealing `mix`, with the
    /// keying and think times `waits`: each is first ready after the
    /// keying time of its first transaction.
    pub fn new(count: u32, seed: u64, at: Homes, mix: Mix, waits: Option<Waits>) -> Self {
        let queue = (0..count)
            .map(|id| {
                let state = TerminalState::new(seed, id, at, mix);
                Waiting {
                    ready: waits.map_or(Duration::ZERO, |w| w.keying(state.next)),
                    state,
                }
            })
            .collect();
        Terminals {
            epoch: OnceLock::new(),
            queue: Mutex::new(queue),
            ahead: tokio::sync::Notify::new(),
            waits,
            committed_new_orders: AtomicU64::new(0),
        }
    }

    fn epoch(&self) -> Instant {
        *self.epoch.get_or_init(Instant::now)
    }

    /// Hands back a terminal whose transaction ended at `ended`: it is
    /// next ready after its think time for that transaction (clause
    /// 5.2.5.4) and the keying time of its next (5.2.5.2).
    pub fn hand_back(&self, mut state: TerminalState, ended: Instant) {
        let done = state.next;
        state.next = state.draw_type();
        let mut ready = ended.saturating_duration_since(self.epoch());
        if let Some(w) = self.waits {
            ready += wait::think_time(&mut state.rng, usize::from(done)).mul_f64(w.scale)
                + w.keying(state.next);
        }
        let first = {
            let Ok(mut q) = self.queue.lock() else {
                return;
            };
            let first = q.peek().is_none_or(|top| ready < top.ready);
            q.push(Waiting { ready, state });
            first
        };
        if first {
            self.ahead.notify_one();
        }
    }

    /// Waits for the earliest ready terminal and takes it; gives when it
    /// was ready (its transaction's intended start).
    pub async fn take(&self) -> (Instant, TerminalState) {
        let epoch = self.epoch();
        loop {
            let ahead = self.ahead.notified();
            tokio::pin!(ahead);
            // Listening before looking: a terminal handed back between
            // the look and the sleep still wakes this worker.
            ahead.as_mut().enable();
            let wake = {
                let Ok(mut q) = self.queue.lock() else {
                    // A worker panicked with the lock: no terminal is
                    // handed out any more; the run ends by its time.
                    return std::future::pending().await;
                };
                let now = Instant::now();
                match q.peek().map(|top| epoch + top.ready) {
                    Some(at) if at <= now => {
                        if let Some(w) = q.pop() {
                            return (at, w.state);
                        }
                        None
                    }
                    other => other,
                }
            };
            match wake {
                Some(at) => {
                    tokio::select! {
                        _ = &mut ahead => {}
                        _ = crate::rt::time::sleep_until(at) => {}
                    }
                }
                None => ahead.await,
            }
        }
    }

    /// Terminals in the queue (not in a transaction).
    pub fn waiting(&self) -> usize {
        self.queue.lock().map_or(0, |q| q.len())
    }

    /// Counts a committed New-Order.
    pub fn new_order_committed(&self) {
        self.committed_new_orders
            .fetch_add(1, AtomicOrdering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tpcc::txn::MIX;

    fn homes(first: u32, last: u32, warehouses: u32) -> Homes {
        Homes {
            homes: WarehouseRange { first, last },
            warehouses,
        }
    }

    #[test]
    fn terminals_get_a_home_warehouse_and_district_each_as_the_specification_assigns() {
        let at = homes(3, 4, 6);
        let t: Vec<(i32, i32)> = (0..6)
            .map(|id| {
                let s = TerminalState::new(5, id, at, MIX);
                (s.w, s.d)
            })
            .collect();
        assert_eq!(t, [(3, 1), (4, 1), (3, 2), (4, 2), (3, 3), (4, 3)]);
        // Ten per warehouse: each of the ten has its own district.
        let at = homes(1, 5, 5);
        for w in 1..=5 {
            let mut ds: Vec<i32> = (0..50)
                .map(|id| TerminalState::new(1, id, at, MIX))
                .filter(|s| s.w == w)
                .map(|s| s.d)
                .collect();
            ds.sort();
            assert_eq!(ds, (1..=10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_deck_deals_the_mix_exactly() {
        let mut t = TerminalState::new(3, 0, homes(1, 2, 2), MIX);
        let mut n = [0u32; 5];
        n[usize::from(t.next)] += 1;
        for _ in 0..999 {
            n[usize::from(t.draw_type())] += 1;
        }
        assert_eq!(n, [450, 430, 40, 40, 40]);
        // A terminal is a few hundred bytes: ten thousand are a few MB.
        assert!(std::mem::size_of::<Waiting>() <= 256);
    }

    #[test]
    fn all_warehouses_spreads_the_transactions_over_the_range() {
        let mut t = TerminalState::new(3, 0, homes(2, 9, 9), MIX);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..2000 {
            seen.insert(t.warehouse(Some(WarehouseRange { first: 2, last: 9 })));
        }
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            (2..=9).collect::<Vec<_>>()
        );
        assert_eq!(t.warehouse(None), 2);
    }

    #[tokio::test]
    async fn the_earliest_ready_terminal_comes_first_and_a_handed_back_one_wakes_a_waiter() {
        let q = std::sync::Arc::new(Terminals::new(3, 1, homes(1, 1, 1), MIX, None));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(q.take().await.1);
        }
        assert_eq!(got.iter().map(|t| t.id).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(q.waiting(), 0);
        // A worker waits while every terminal is in a transaction; the
        // one handed back wakes it, ready at its end.
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { q.take().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        let ended = Instant::now();
        let second = got.remove(1);
        q.hand_back(second, ended);
        let (due, t) = waiter.await.unwrap();
        assert_eq!((t.id, due), (1, ended));
    }

    #[tokio::test]
    async fn with_waits_a_terminal_is_ready_after_its_think_and_next_keying_time() {
        let waits = Some(Waits { scale: 0.001 });
        let q = Terminals::new(1, 2, homes(1, 1, 1), MIX, waits);
        let (first, t) = q.take().await;
        let keyed = wait::keying_time(usize::from(t.next)).mul_f64(0.001);
        assert!(first >= q.epoch() + keyed);
        let ended = Instant::now();
        q.hand_back(t, ended);
        let (due, t) = q.take().await;
        // The think time of the last (at most 10 × its mean), then the
        // keying of the next.
        let keyed = wait::keying_time(usize::from(t.next)).mul_f64(0.001);
        assert!(due >= ended + keyed, "{:?}", due - ended);
        assert!(due <= ended + keyed + Duration::from_millis(121));
    }
}
