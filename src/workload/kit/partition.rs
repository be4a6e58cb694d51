//! How the ids 0..rows are shared out: one contiguous range per thread, then
//! batches within it.
//!
//! The original tool lost rows to rounding; here every id in 0..rows is
//! written exactly once whatever the thread count and batch size: the first
//! `rows % threads` threads take one row more, and the last batch of a
//! thread is simply shorter. A thread may get no rows when rows < threads.

use std::ops::Range;

/// The ids thread `t` (0-based) of `threads` loads.
pub fn thread_range(rows: u64, threads: usize, t: usize) -> Range<u64> {
    let threads = threads.max(1) as u64;
    let t = t as u64;
    let base = rows / threads;
    let extra = rows % threads;
    let start = t * base + t.min(extra);
    let len = base + u64::from(t < extra);
    start..start + len
}

/// Which of several clients (`--clients`, `--client-index`) this one is;
/// one client of one by default.
///
/// Clients may run different thread counts (a small pod and a large one):
/// once they met, `layout` says how many threads the clients before this
/// one run and how many all of them run, so that every thread of every
/// client takes one share of the ids and the shares follow the threads.
/// Without it, every client is taken to run as many threads as this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientShare {
    /// 0-based, below `clients`.
    pub index: usize,
    /// At least 1.
    pub clients: usize,
    /// The clients' threads as the barrier exchanged them.
    pub layout: Option<ThreadLayout>,
}

impl Default for ClientShare {
    fn default() -> Self {
        ClientShare {
            index: 0,
            clients: 1,
            layout: None,
        }
    }
}

/// Where one client's threads sit among every client's threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadLayout {
    /// The threads of the clients with a lower index.
    pub before: usize,
    /// The threads of all the clients together.
    pub all: usize,
}

impl ClientShare {
    /// Client `index` of clients running `threads[i]` threads each.
    pub fn of_threads(index: usize, threads: &[usize]) -> ClientShare {
        ClientShare {
            index,
            clients: threads.len().max(1),
            layout: Some(ThreadLayout {
                before: threads.iter().take(index).map(|t| t.max(&1)).sum(),
                all: threads.iter().map(|t| t.max(&1)).sum::<usize>().max(1),
            }),
        }
    }

    /// The threads of all the clients together.
    pub fn all_threads(&self, threads: usize) -> usize {
        match self.layout {
            Some(l) => l.all,
            None => threads.max(1) * self.clients.max(1),
        }
    }

    /// This client's thread `t` among all the clients' threads.
    pub fn global_thread(&self, threads: usize, t: usize) -> usize {
        match self.layout {
            Some(l) => l.before + t,
            None => self.index * threads.max(1) + t,
        }
    }

    /// The ids this client's thread `t` loads: its global thread's range.
    pub fn thread_range(&self, rows: u64, threads: usize, t: usize) -> Range<u64> {
        thread_range(
            rows,
            self.all_threads(threads),
            self.global_thread(threads, t),
        )
    }

    /// The `local`-th number (counting from `base`) that this client hands
    /// out, in the common sequence starting at `base`: numbers congruent
    /// to the client's index modulo the clients, past `base`.
    pub fn interleave(&self, base: u64, local: u64) -> u64 {
        let k = local.saturating_sub(base);
        base + k * self.clients.max(1) as u64 + self.index as u64
    }

    /// How many numbers of the common sequence lie below the `local`-th
    /// one of this client (an estimate of how far all clients got).
    pub fn spread(&self, base: u64, local: u64) -> u64 {
        base + local.saturating_sub(base) * self.clients.max(1) as u64
    }
}

/// Hands out a range in batches of at most `batch` ids.
#[derive(Clone, Debug)]
pub struct Batches {
    next: u64,
    end: u64,
    batch: u64,
}

impl Batches {
    pub fn new(range: Range<u64>, batch: usize) -> Self {
        Batches {
            next: range.start,
            end: range.end,
            batch: batch.max(1) as u64,
        }
    }
}

impl Iterator for Batches {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        if self.next >= self.end {
            return None;
        }
        let start = self.next;
        self.next = (start + self.batch).min(self.end);
        Some(start..self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_ids(rows: u64, threads: usize, batch: usize) -> Vec<u64> {
        (0..threads)
            .flat_map(|t| Batches::new(thread_range(rows, threads, t), batch))
            .flatten()
            .collect()
    }

    #[test]
    fn every_id_once_whatever_the_split() {
        for (rows, threads, batch) in [
            (1001, 3, 200),
            (1, 1, 200),
            (1, 4, 200),
            (3, 8, 1),
            (0, 3, 10),
            (201, 1, 200),
            (400, 2, 200),
            (100_003, 7, 999),
        ] {
            let ids = all_ids(rows, threads, batch);
            assert_eq!(
                ids,
                (0..rows).collect::<Vec<_>>(),
                "{rows} {threads} {batch}"
            );
        }
    }

    #[test]
    fn threads_differ_by_at_most_one_row() {
        let sizes: Vec<u64> = (0..3)
            .map(|t| {
                let r = thread_range(1001, 3, t);
                r.end - r.start
            })
            .collect();
        assert_eq!(sizes, vec![334, 334, 333]);
    }

    #[test]
    fn clients_together_load_every_id_once() {
        for (rows, clients, threads) in [(1001, 3, 2), (10, 4, 3), (100_003, 3, 7), (2, 3, 1)] {
            let mut ids = Vec::new();
            for index in 0..clients {
                let c = ClientShare {
                    index,
                    clients,
                    layout: None,
                };
                let mut last_end = None;
                for t in 0..threads {
                    let r = c.thread_range(rows, threads, t);
                    // Each client's share is contiguous.
                    if let Some(e) = last_end {
                        assert_eq!(r.start, e);
                    }
                    last_end = Some(r.end);
                    ids.extend(r);
                }
            }
            assert_eq!(
                ids,
                (0..rows).collect::<Vec<_>>(),
                "{rows} {clients} {threads}"
            );
        }
        // One client of one is the plain split.
        let one = ClientShare::default();
        assert_eq!(one.thread_range(1001, 3, 1), thread_range(1001, 3, 1));
    }

    #[test]
    fn clients_of_unequal_threads_load_every_id_once_in_proportion() {
        for (rows, threads) in [
            (30_001u64, vec![1, 3, 6]),
            (10, vec![6, 1, 3]),
            (7, vec![2, 9]),
            (100_003, vec![4, 4, 4]),
        ] {
            let mut ids = Vec::new();
            let all: usize = threads.iter().sum();
            for (index, &t_here) in threads.iter().enumerate() {
                let c = ClientShare::of_threads(index, &threads);
                let before = ids.len() as u64;
                for t in 0..t_here {
                    ids.extend(c.thread_range(rows, t_here, t));
                }
                // The client's share follows its threads, within a row per thread.
                let share = ids.len() as u64 - before;
                let want = rows as f64 * t_here as f64 / all as f64;
                assert!(
                    (share as f64 - want).abs() <= t_here as f64,
                    "{rows} {threads:?}: client {index} loaded {share}, about {want} due"
                );
            }
            assert_eq!(ids, (0..rows).collect::<Vec<_>>(), "{rows} {threads:?}");
        }
        // Equal threads: the layout gives the split made without it.
        let equal = ClientShare::of_threads(1, &[2, 2, 2]);
        let plain = ClientShare {
            index: 1,
            clients: 3,
            layout: None,
        };
        for t in 0..2 {
            assert_eq!(
                equal.thread_range(1001, 2, t),
                plain.thread_range(1001, 2, t)
            );
        }
    }

    #[test]
    fn interleaved_numbers_never_collide_across_clients() {
        let mut seen = std::collections::HashSet::new();
        for index in 0..3 {
            let c = ClientShare {
                index,
                clients: 3,
                layout: None,
            };
            for local in 100..200 {
                assert!(seen.insert(c.interleave(100, local)));
            }
        }
        assert_eq!(seen.len(), 300);
        assert_eq!(seen.iter().min(), Some(&100));
        assert_eq!(seen.iter().max(), Some(&399));
        let one = ClientShare::default();
        assert_eq!(one.interleave(100, 105), 105);
    }

    #[test]
    fn the_last_batch_is_shorter_and_none_is_empty() {
        let b: Vec<_> = Batches::new(0..334, 200).collect();
        assert_eq!(b, vec![0..200, 200..334]);
        assert_eq!(Batches::new(5..5, 200).count(), 0);
    }
}
