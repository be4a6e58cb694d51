//! Where the workers run: a few OS threads, each driving its own
//! single-threaded tokio runtime, rather than the shared work-stealing one.
//!
//! tokio-postgres drives every connection from a task of its own, so each
//! query is two wake-ups: the worker wakes its connection's task to send,
//! and that task wakes the worker when the answer is in. On a work-stealing
//! runtime the two tasks often sit on different threads, and each wake-up
//! across threads is a futex call and a context switch; on a 2-core machine
//! that made ysql-bench spend about 15% more CPU per select than with all
//! tasks on one thread (bench/RESULTS.md). Here a worker and the connection
//! it opens share one thread for the whole operation, the way each of
//! pgbench's `-j` threads owns its connections; workers are dealt round
//! robin over as many threads as there are cores, so a large `--threads`
//! still uses every core.
//!
//! A connection's task lives on the runtime where the connection was
//! opened, and dies with it: the runner drops idle pooled connections
//! before the workers start (they were opened elsewhere), and the pool
//! replaces the ones left closed when these runtimes end.

use std::future::Future;

use futures_util::future::{AbortHandle, Abortable};
use tokio::sync::oneshot;

/// The result of one future run by [`spawn_spread`]: its output, or why it
/// produced none (it panicked or was aborted, or its thread could not
/// start).
pub struct Joined<T> {
    result: oneshot::Receiver<Result<T, String>>,
    abort: AbortHandle,
}

impl<T> Joined<T> {
    pub async fn join(self) -> Result<T, String> {
        self.result
            .await
            .unwrap_or_else(|_| Err("its thread ended without a result".to_string()))
    }

    /// A handle that drops the future at its next wake-up, from any thread.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }
}

/// How many threads [`spawn_spread`] uses for `workers` futures: one per
/// core, but never more than there are workers.
pub fn thread_count(workers: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    workers.clamp(1, cores.max(1))
}

const ABORTED: &str = "aborted";

type Group<F, T> = Vec<(Abortable<F>, oneshot::Sender<Result<T, String>>)>;

/// Runs the futures on [`thread_count`] new threads, dealt round robin, each
/// thread with its own single-threaded runtime (timers and I/O enabled).
/// Returns one [`Joined`] per future, in the order given. Must be called
/// within a tokio runtime: if a thread or its runtime cannot be made, that
/// group runs on the caller's runtime instead (slower, but it runs, so
/// that nobody waits forever at the runner's barrier).
pub fn spawn_spread<F, T>(futures: Vec<F>) -> Vec<Joined<T>>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let n = thread_count(futures.len());
    let mut groups: Vec<Group<F, T>> = (0..n).map(|_| Vec::new()).collect();
    let mut joins = Vec::with_capacity(futures.len());
    for (i, f) in futures.into_iter().enumerate() {
        let (tx, rx) = oneshot::channel();
        let (abort, registration) = AbortHandle::new_pair();
        groups[i % n].push((Abortable::new(f, registration), tx));
        joins.push(Joined { result: rx, abort });
    }
    for (g, group) in groups.into_iter().enumerate() {
        if let Err((group, why)) = start_thread(g, group) {
            crate::say!("warning: worker thread {g}: {why}; its workers share the main runtime");
            for (f, tx) in group {
                tokio::spawn(async move {
                    let _ = tx.send(f.await.map_err(|_| ABORTED.to_string()));
                });
            }
        }
    }
    joins
}

/// Starts thread `g` with its runtime, or gives the group back.
fn start_thread<F, T>(g: usize, group: Group<F, T>) -> Result<(), (Group<F, T>, String)>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    // The runtime is made on the thread (a runtime must not be dropped
    // inside another one), and the group is sent once it exists, so that
    // it is still ours if anything fails.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let (group_tx, group_rx) = std::sync::mpsc::channel::<Group<F, T>>();
    let started = std::thread::Builder::new()
        .name(format!("ysql-bench-worker-{g}"))
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot make a runtime: {e}")));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            if let Ok(group) = group_rx.recv() {
                run_group(rt, group);
            }
        });
    if let Err(e) = started {
        return Err((group, format!("cannot start it: {e}")));
    }
    // Blocks the caller for as long as making a runtime takes (microseconds),
    // once per thread, before any work is timed.
    match ready_rx.recv() {
        Ok(Ok(())) => group_tx
            .send(group)
            .map_err(|e| (e.0, "it stopped at once".to_string())),
        Ok(Err(why)) => Err((group, why)),
        Err(_) => Err((group, "it stopped at once".to_string())),
    }
}

/// Runs a group to its end, ends the runtime, then hands out the results.
fn run_group<F, T>(rt: tokio::runtime::Runtime, group: Group<F, T>)
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let results = rt.block_on(async move {
        // Spawned, not just awaited, so that they run concurrently and a
        // panic in one is reported as its result.
        let tasks: Vec<_> = group
            .into_iter()
            .map(|(f, tx)| (tokio::spawn(f), tx))
            .collect();
        let mut results = Vec::with_capacity(tasks.len());
        for (task, tx) in tasks {
            let result = match task.await {
                Ok(Ok(out)) => Ok(out),
                Ok(Err(_)) => Err(ABORTED.to_string()),
                Err(e) => Err(e.to_string()),
            };
            results.push((tx, result));
        }
        results
    });
    // The connections opened here went back to the pool, but their tasks
    // die with this runtime. Ending it before anyone learns the results
    // means that by then they are closed, so the pool replaces them
    // instead of handing out one about to close.
    drop(rt);
    for (tx, result) in results {
        let _ = tx.send(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn never_more_threads_than_workers() {
        assert_eq!(thread_count(1), 1);
        assert!(thread_count(1000) >= 1);
        assert!(thread_count(1000) <= 1000);
    }

    #[tokio::test]
    async fn results_come_back_in_order_from_every_thread() {
        let barrier = Arc::new(tokio::sync::Barrier::new(5));
        let futures: Vec<_> = (0..5u64)
            .map(|i| {
                let b = barrier.clone();
                async move {
                    // All five wait for each other: they run concurrently
                    // even when some share a thread.
                    b.wait().await;
                    tokio::time::sleep(std::time::Duration::from_millis(5 * (5 - i))).await;
                    (i, std::thread::current().name().map(str::to_string))
                }
            })
            .collect();
        let mut threads = std::collections::BTreeSet::new();
        for (i, j) in spawn_spread(futures).into_iter().enumerate() {
            let (got, name) = j.join().await.unwrap();
            assert_eq!(got, i as u64);
            let name = name.unwrap();
            assert!(name.starts_with("ysql-bench-worker-"), "{name}");
            threads.insert(name);
        }
        assert_eq!(threads.len(), thread_count(5));
    }

    #[tokio::test]
    async fn an_aborted_worker_stops_waiting() {
        let futures = vec![std::future::pending::<u32>()];
        let joined = spawn_spread(futures).pop().unwrap();
        joined.abort_handle().abort();
        assert_eq!(joined.join().await, Err("aborted".to_string()));
    }

    #[tokio::test]
    async fn a_panicking_worker_is_an_error_and_the_others_finish() {
        let futures: Vec<_> = (0..3u64)
            .map(|i| async move {
                assert!(i != 1, "worker 1 fails");
                i
            })
            .collect();
        let results: Vec<_> =
            futures_util::future::join_all(spawn_spread(futures).into_iter().map(|j| j.join()))
                .await;
        assert_eq!(results[0], Ok(0));
        assert!(results[1].as_ref().unwrap_err().contains("panic"));
        assert_eq!(results[2], Ok(2));
    }
}
