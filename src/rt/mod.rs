//! Where the worker threads' futures run: a poll loop of our own, one per
//! worker thread, and the few things the data plane asks of a runtime
//! (tasks, sockets, timers) in a form that works on that loop and on
//! tokio's runtimes alike.
//!
//! Why a loop of our own. Each wake-up of a worker on a current-thread
//! tokio runtime went through its scheduler, its I/O driver and its time
//! driver, which read the clock three times (the driver after each park,
//! the start and end of its busy-time figure, not behind any switch in
//! tokio 1.54). Callgrind put about 120 of the 529 cache lines a tpcb-like
//! transaction runs in that machinery, and the first-level instruction
//! cache misses, not the instructions, were what kept plain text above
//! pgbench's client CPU (bench/RESULTS.md, seventh and eighth sessions).
//! pgbench's thread is a loop around one `poll(2)`; this is the same shape:
//! a queue of ready tasks, one `epoll_wait` (through mio) when none is
//! ready (and one that does not wait after every 61 tasks polled while
//! tasks stay ready, so that sockets are looked at), and no clock read at
//! all while no timer is pending.
//!
//! What it serves, and how each part stays on the thread:
//! - tasks ([`spawn`]): a slab of boxed futures; a waker is an `Arc` that
//!   queues its task on the thread's own queue when woken there, and on a
//!   locked queue when woken from another thread (the run's stop, a
//!   barrier), writing mio's waker (an eventfd) only if the loop is parked;
//! - sockets ([`net`]): TCP and Unix streams registered once, edge-triggered,
//!   their readiness kept beside them; tokio's `AsyncRead`/`AsyncWrite`,
//!   so tokio-rustls and the wire driver use them unchanged;
//! - timers ([`time`]): an ordered map of deadlines read after each park.
//!
//! Off such a loop (the coordinator's runtime, tests) every call here goes
//! to tokio instead, so the code that runs in both places is written once.
//! The runner's worker threads (`runner::threads`) also enter a tokio
//! runtime that has neither an I/O nor a time driver: tokio's blocking
//! pool still serves `tokio::fs` and `lookup_host`, while tokio's own
//! sockets and timers panic at once rather than never wake (and
//! `tokio::spawn` would never run: call [`spawn`]).
//!
//! Each task may complete 128 socket operations per poll, as tokio's
//! cooperative budget allows: a worker whose reads keep finding data
//! yields after them, so that the thread's other workers run. Unlike
//! tokio's, the budget does not cover tokio's channels on the loop.
//!
//! Written by hand because no crate does only this: the small executors
//! (async-executor, smol) bring their own reactor and timers that tokio's
//! sockets and tokio-rustls do not use, and tokio has no switch to leave
//! out its driver machinery while keeping its sockets.

mod exec;
pub mod net;
pub mod time;

#[cfg(test)]
mod tests;

pub use exec::{AbortHandle, JoinError, JoinHandle, LocalLoop, on_loop, spawn};
