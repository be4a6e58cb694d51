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
    fn the_last_batch_is_shorter_and_none_is_empty() {
        let b: Vec<_> = Batches::new(0..334, 200).collect();
        assert_eq!(b, vec![0..200, 200..334]);
        assert_eq!(Batches::new(5..5, 200).count(), 0);
    }
}
