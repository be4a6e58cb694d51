//! Workloads: what each runnable thing of `-o` sends to the server, and how
//! it counts.
//!
//! The layer is a contract, a registry, a kit and one folder per family:
//!
//! - [`contract`]: what the rest of the program knows of a workload. A
//!   [`Spec`] says what it is before it is built (its names in `-o`,
//!   whether it loads or queries, whether `--rate` paces it, what a unit is
//!   called); the built [`Workload`] gives its [`Facts`] as plain data and
//!   does the life of an operation: set-up on one connection, load mark,
//!   checks, and one [`Operation`] per worker. Its [`Settings`] are the
//!   shared ones plus each family's, kept by type.
//! - [`registry`]: the one list of workloads ([`REGISTRY`]) and of the
//!   families' flag groups ([`registry::WorkloadArgs`], flattened into the
//!   command line).
//! - [`kit`]: what several families share (keys, row text, the split of ids
//!   over workers and clients, COPY and its loader, limits, a check-only
//!   workload), so that no family imports another.
//! - the families, each a folder with its flags in `args.rs`: [`basic`] (the
//!   original tool's six operations on test_table), [`ycsb`], [`oltp`]
//!   (sysbench), [`booking`], [`tpcc`], [`pgbench`] (pgbench-init and the
//!   script interpreter); and [`cleanup`], which drops what every family
//!   made and so knows their tables.
//!
//! Nothing in the runner, the reports, the app, `cli` or `config` names a
//! workload or holds a family's flag: adding a family is its folder and its
//! lines in the registry (CONTRIBUTING.md walks through it).
//!
//! Workloads differ only in the SQL they send and in what a unit of work
//! is (a batch of rows, one COPY of a file, one CALL, one query, one
//! transaction of a mix). How units are scheduled, timed and counted is the
//! runner's business, in one loop for all of them ([`crate::runner`]).
//! `stage` prepares the next unit outside the timed section (random strings,
//! COPY buffers, which key and which type of transaction), `execute` sends
//! it and is timed. Each unit says which of the workload's transaction
//! [`Facts::types`] it is, and every statistic is kept per type. Every
//! operation runs on the one data-plane driver ([`crate::db::wire`]); one
//! whose units are independent statements may also queue them in a
//! pipeline (`queue`, `answered`).

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
pub use registry::{
    REGISTRY, figure_rules, figures_again, lookup, missing_label, names, query_class,
};
