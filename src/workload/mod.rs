//! Workloads: what each runnable thing of `-o` sends to the server, and how
//! it counts.
//!
//! A workload is one module that exports a [`Spec`] and is listed once in
//! [`REGISTRY`]. The spec says what the runner, the reports and the
//! configuration need to know (its names in `-o`, whether it loads or
//! queries, whether `--rate` paces it, what a unit is called) and how to
//! build the workload from the validated [`Settings`]. The built
//! [`Workload`] does the per-run set-up on one connection and makes one
//! [`Operation`] per worker. Nothing in the runner, the reports or the app
//! matches on a workload's name: adding one is a module and a registry line.
//!
//! Workloads differ only in the SQL they send and in what a unit of work
//! is (a batch of rows, one COPY of a file, one CALL, one query, one
//! transaction of a mix). How units are scheduled, timed and counted is the
//! runner's business, in one loop for all of them ([`crate::runner`]).
//! `stage` prepares the next unit outside the timed section (random strings,
//! COPY buffers, which key and which type of transaction), `execute` sends
//! it and is timed. Each unit says which of the workload's transaction
//! [`Workload::types`] it is, and every statistic is kept per type.
//!
//! An operation whose unit is one prepared statement may also offer itself
//! to the lean driver ([`crate::db::wire`]) through [`Operation::wire`]: it
//! then says what to prepare, which parameters a unit binds and what the
//! answer means, and the worker's session sends it without tokio-postgres
//! and without a boxed future.
//!
//! The runner drives a worker's operation through `Box<dyn DynOperation>`:
//! one small allocation per executed unit for the boxed future, against
//! tens of microseconds for the round trip, buys a registry without a
//! closed enum.

pub mod basic;
pub mod booking;
pub mod cleanup;
pub mod contract;
pub mod kit;
pub mod oltp;
pub mod pgbench;
pub mod registry;
pub mod tpcc;
pub mod ycsb;

pub use contract::*;
pub use kit::ids::{IdPicker, worker_seed};
pub use registry::{REGISTRY, figure_rules, lookup, names};

// The basic operations that other layers' unit tests take as fixtures,
// at the paths they had before the families became folders.
pub use basic::{copy_mem, insert, select};

/// sysbench's query classes of a statement kind, by its name: `read`
/// (selects and ranges), `other` (BEGIN, COMMIT, ROLLBACK) or `write`.
pub fn query_class(name: &str) -> &'static str {
    if let Some(class) = pgbench::script::query_class(name) {
        return class;
    }
    if name.contains("select") || name.ends_with("_range") || name == "read" || name == "scan" {
        "read"
    } else if matches!(name, "begin" | "commit" | "rollback") {
        "other"
    } else {
        "write"
    }
}
