//! Where the workers run: a few OS threads, each driving its own poll loop
//! ([`crate::rt::LocalLoop`]), rather than a shared work-stealing runtime.
//!
//! A worker reads and writes its connection itself (the lean driver has
//! no connection task). Threads of their own were first made for
//! tokio-postgres, whose connection task made each query two wake-ups: the
//! worker woke its connection's task to send, and that task woke the
//! worker when the answer was in. On a work-stealing runtime the two tasks
//! often sat on different threads, and each wake-up across threads is a
//! futex call and a context switch; on a 2-core machine that cost 17.6 µs
//! of CPU per select against 14.2 µs with all tasks on one thread
//! (bench/RESULTS.md). Here a worker and its connection share one thread
//! for the whole operation, the way each of pgbench's `-j` threads owns
//! its connections; workers are dealt round robin over as many threads as
//! there are cores, so a large `--threads` still uses every core.
//!
//! Why a loop of our own and not a current-thread tokio runtime, as until
//! the ninth session of issue 24: see `crate::rt`. Each thread also enters
//! a tokio runtime without drivers, whose blocking pool `tokio::fs` and
//! host name lookups use; tokio's own sockets and timers panic there, so
//! nothing on a worker thread may use them or tokio-postgres (a failed
//! unit's rows are counted on a lean connection), and `tokio::spawn`
//! would never run: `crate::rt::spawn` is the one to call.
//!
//! The futures are built on their thread, from parts that are `Send`, and
//! run there as tasks of its loop; the workers of a thread share state
//! made on it (the runner's per-thread recorder, `recorder.rs`). Each
//! thread also makes one value of its own before its futures start, and
//! hands back a result of its own once they have all ended.
//!
//! Why tasks, and not one future polling them all: the workers were once
//! polled in the thread's main future (a `FuturesUnordered`). They then
//! shared one cooperative-scheduling budget per poll of that future
//! instead of one each; with 512 pipelined TLS workers per thread
//! (`--pipeline 8`, 1024 connections) throughput fell from about 81k to
//! 33k queries/s and 113 workers never ended after the stop. As tasks,
//! each has its own budget. (The recorder's lock, which tasks that must be
//! `Send` ask for, is hardly ever waited for: the workers of a thread never
//! run at the same time, and the run's housekeeping takes it for a moment
//! every 20 ms; it costs 4-6 ns more than a `RefCell` borrow.)

use std::future::Future;
use std::sync::Arc;

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::oneshot;

/// The result of one future run by [`spawn_spread`]: its output, or why it
/// produced none (it panicked or was aborted, or its thread ended first).
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

/// A way to drop an item's future at its next wake-up, from any thread,
/// asked for before its task exists or after. The loop's own abort
/// ([`crate::rt::AbortHandle`]), and not a wrapper future (as
/// `futures_util`'s `Abortable`) that would look at its flag and register
/// the waker again on every poll of every worker.
#[derive(Clone, Default)]
pub struct AbortHandle(Arc<AbortSlot>);

#[derive(Default)]
struct AbortSlot {
    asked: AtomicBool,
    task: std::sync::Mutex<Option<crate::rt::AbortHandle>>,
}

impl AbortSlot {
    fn task(&self) -> std::sync::MutexGuard<'_, Option<crate::rt::AbortHandle>> {
        // Nothing that holds it can panic; a poisoned one is as good.
        self.task.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl AbortHandle {
    pub fn abort(&self) {
        self.0.asked.store(true, Ordering::SeqCst);
        if let Some(t) = self.0.task().as_ref() {
            t.abort();
        }
    }

    /// The item's task now exists: an abort asked for before it takes
    /// effect now. (Under the lock, so that an abort either sees the task
    /// or is seen here.)
    fn attach(&self, task: crate::rt::AbortHandle) {
        let mut slot = self.0.task();
        if self.0.asked.load(Ordering::SeqCst) {
            task.abort();
        }
        *slot = Some(task);
    }
}

/// How many threads [`spawn_spread`] uses for `workers` futures: one per
/// core, but never more than there are workers.
pub fn thread_count(workers: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    workers.clamp(1, cores.max(1))
}

const ABORTED: &str = "aborted";

/// What each thread does, shared by all of them: `local(thread, items)`
/// makes the thread's own value (on the thread, inside its runtime, so it
/// may spawn tasks that live as long as the thread's items);
/// `run(item, &local)` makes one item's future; `finish(&local)` makes the
/// thread's result once every item has ended (or was aborted).
pub struct Work<L, I, Fut, D> {
    pub local: Box<dyn Fn(usize, usize) -> L + Send + Sync>,
    pub run: RunItem<L, I, Fut>,
    pub finish: Box<dyn Fn(&L) -> D + Send + Sync>,
}

/// How [`Work`] makes one item's future.
pub type RunItem<L, I, Fut> = Box<dyn Fn(I, &L) -> Fut + Send + Sync>;

/// What [`spawn_spread`] started: one [`Joined`] per item, in the order
/// given, and each thread's own result.
pub struct Spread<T, D> {
    pub items: Vec<Joined<T>>,
    pub threads: Vec<oneshot::Receiver<D>>,
}

type Group<I, T> = Vec<(I, AbortHandle, oneshot::Sender<Result<T, String>>)>;

/// Runs the items on up to [`thread_count`] new threads, dealt round robin
/// over the threads that could be started, each thread with its own
/// poll loop. Fails,
/// having started nothing, only when not one thread could be made.
pub fn spawn_spread<L, I, Fut, T, D>(
    items: Vec<I>,
    work: Work<L, I, Fut, D>,
) -> Result<Spread<T, D>, String>
where
    L: 'static,
    I: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
    D: Send + 'static,
{
    let wanted = thread_count(items.len());
    let work = Arc::new(work);
    let mut started = Vec::with_capacity(wanted);
    let mut why = String::new();
    for g in 0..wanted {
        match start_thread(g, work.clone()) {
            Ok(t) => started.push(t),
            Err(e) => {
                crate::say!("warning: worker thread {g}: {e}; its workers go to the other threads");
                why = e;
            }
        }
    }
    if started.is_empty() {
        return Err(format!("no worker thread could be started: {why}"));
    }
    let n = started.len();
    let mut groups: Vec<Group<I, T>> = (0..n).map(|_| Vec::new()).collect();
    let mut joined = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let (tx, rx) = oneshot::channel();
        let abort = AbortHandle::default();
        groups[i % n].push((item, abort.clone(), tx));
        joined.push(Joined { result: rx, abort });
    }
    let mut threads = Vec::with_capacity(n);
    for (slot, (t, group)) in started.into_iter().zip(groups).enumerate() {
        let (done_tx, done_rx) = oneshot::channel();
        // The thread waits for its group; it cannot be gone before it
        // got one (it stops only when this sender is dropped).
        let _ = t.send(Start {
            slot,
            group,
            done: done_tx,
        });
        threads.push(done_rx);
    }
    Ok(Spread {
        items: joined,
        threads,
    })
}

struct Start<I, T, D> {
    /// The thread's index among those started.
    slot: usize,
    group: Group<I, T>,
    done: oneshot::Sender<D>,
}

/// Starts thread `g` with its runtime; returns the way to give it work.
fn start_thread<L, I, Fut, T, D>(
    g: usize,
    work: Arc<Work<L, I, Fut, D>>,
) -> Result<std::sync::mpsc::Sender<Start<I, T, D>>, String>
where
    L: 'static,
    I: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
    D: Send + 'static,
{
    // The runtime is made on the thread (a runtime must not be dropped
    // inside another one), and the work is sent once it exists.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let (start_tx, start_rx) = std::sync::mpsc::channel::<Start<I, T, D>>();
    std::thread::Builder::new()
        .name(format!("ysql-bench-worker-{g}"))
        .spawn(move || {
            // tokio's runtime without drivers, entered: its blocking pool
            // serves `tokio::fs` and `lookup_host`; its sockets and timers
            // would panic here, where the loop's serve instead.
            let made = tokio::runtime::Builder::new_current_thread()
                .build()
                .map_err(|e| format!("cannot make a runtime: {e}"))
                .and_then(|rt| {
                    crate::rt::LocalLoop::new()
                        .map(|l| (rt, l))
                        .map_err(|e| format!("cannot make a poll loop: {e}"))
                });
            let rt = match made {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            if let Ok(start) = start_rx.recv() {
                run_group(rt, start, work);
            }
        })
        .map_err(|e| format!("cannot start it: {e}"))?;
    // Blocks the caller for as long as making a runtime takes (microseconds),
    // once per thread, before any work is timed.
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(start_tx),
        Ok(Err(why)) => Err(why),
        Err(_) => Err("it stopped at once".to_string()),
    }
}

/// Runs a group to its end, ends the loop, then hands out the results.
fn run_group<L, I, Fut, T, D>(
    (tokio_rt, mut rt): (tokio::runtime::Runtime, crate::rt::LocalLoop),
    start: Start<I, T, D>,
    work: Arc<Work<L, I, Fut, D>>,
) where
    L: 'static,
    I: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
    D: Send + 'static,
{
    let Start { slot, group, done } = start;
    let entered = tokio_rt.enter();
    let (results, local) = rt.block_on(async {
        let local = (work.local)(slot, group.len());
        // Spawned, not just awaited, so that they run concurrently, each
        // with its own cooperative-scheduling budget, and a panic in one
        // is reported as its result.
        let tasks: Vec<_> = group
            .into_iter()
            .map(|(item, abort, tx)| {
                let task = crate::rt::spawn((work.run)(item, &local));
                abort.attach(task.abort_handle());
                (task, tx)
            })
            .collect();
        let mut results = Vec::with_capacity(tasks.len());
        for (task, tx) in tasks {
            let result = match task.await {
                Ok(out) => Ok(out),
                Err(e) if e.is_cancelled() => Err(ABORTED.to_string()),
                Err(e) => Err(e.to_string()),
            };
            results.push((tx, result));
        }
        (results, local)
    });
    let finished = (work.finish)(&local);
    drop(local);
    drop(work);
    // The thread's own tasks (made by `local`) end with the loop, and let
    // go of what they shared with the items; so do the connections still
    // open on it, closed before anyone learns the results.
    drop(rt);
    drop(entered);
    drop(tokio_rt);
    for (tx, result) in results {
        let _ = tx.send(result);
    }
    let _ = done.send(finished);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Work whose items are futures made by `f` from the item alone.
    fn plain<I, Fut, T>(f: impl Fn(I) -> Fut + Send + Sync + 'static) -> Work<(), I, Fut, ()>
    where
        Fut: Future<Output = T>,
    {
        Work {
            local: Box::new(|_, _| ()),
            run: Box::new(move |i, _| f(i)),
            finish: Box::new(|_| ()),
        }
    }

    #[test]
    fn never_more_threads_than_workers() {
        assert_eq!(thread_count(1), 1);
        assert!(thread_count(1000) >= 1);
        assert!(thread_count(1000) <= 1000);
    }

    #[tokio::test]
    async fn results_come_back_in_order_from_every_thread() {
        let barrier = Arc::new(tokio::sync::Barrier::new(5));
        let items: Vec<_> = (0..5u64).map(|i| (i, barrier.clone())).collect();
        let work = plain(|(i, b): (u64, Arc<tokio::sync::Barrier>)| async move {
            // All five wait for each other: they run concurrently even
            // when some share a thread.
            b.wait().await;
            crate::rt::time::sleep(std::time::Duration::from_millis(5 * (5 - i))).await;
            (i, std::thread::current().name().map(str::to_string))
        });
        let mut threads = std::collections::BTreeSet::new();
        let spread = spawn_spread(items, work).unwrap();
        for (i, j) in spread.items.into_iter().enumerate() {
            let (got, name) = j.join().await.unwrap();
            assert_eq!(got, i as u64);
            let name = name.unwrap();
            assert!(name.starts_with("ysql-bench-worker-"), "{name}");
            threads.insert(name);
        }
        assert_eq!(threads.len(), thread_count(5));
    }

    #[tokio::test]
    async fn the_items_of_a_thread_share_its_local_value_and_it_finishes_once() {
        let work = Work {
            local: Box::new(|_, _| Arc::new(AtomicU64::new(0))),
            run: Box::new(|i: u64, sum: &Arc<AtomicU64>| {
                let sum = sum.clone();
                async move {
                    tokio::task::yield_now().await;
                    sum.fetch_add(i, Ordering::Relaxed);
                    i
                }
            }),
            finish: Box::new(|sum: &Arc<AtomicU64>| sum.load(Ordering::Relaxed)),
        };
        let spread = spawn_spread((1..=100u64).collect(), work).unwrap();
        for (i, j) in spread.items.into_iter().enumerate() {
            assert_eq!(j.join().await.unwrap(), i as u64 + 1);
        }
        let mut total = 0;
        for t in spread.threads {
            total += t.await.unwrap();
        }
        assert_eq!(total, 5050);
    }

    #[tokio::test]
    async fn an_aborted_worker_stops_waiting() {
        let work = plain(|_: ()| std::future::pending::<u32>());
        let joined = spawn_spread(vec![()], work).unwrap().items.pop().unwrap();
        joined.abort_handle().abort();
        assert_eq!(joined.join().await, Err("aborted".to_string()));
    }

    #[tokio::test]
    async fn an_abort_asked_before_the_task_exists_takes_effect() {
        let abort = AbortHandle::default();
        abort.abort();
        let task = crate::rt::spawn(std::future::pending::<u32>());
        abort.attach(task.abort_handle());
        let e = task.await.expect_err("aborted");
        assert!(e.is_cancelled());
    }

    #[tokio::test]
    async fn a_panicking_worker_is_an_error_and_the_others_finish() {
        let work = plain(|i: u64| async move {
            assert!(i != 1, "worker 1 fails");
            i
        });
        let spread = spawn_spread((0..3u64).collect(), work).unwrap();
        let results: Vec<_> =
            futures_util::future::join_all(spread.items.into_iter().map(|j| j.join())).await;
        assert_eq!(results[0], Ok(0));
        assert!(results[1].as_ref().unwrap_err().contains("panic"));
        assert_eq!(results[2], Ok(2));
    }
}
