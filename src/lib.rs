//! ysql-bench: a load generator for YugabyteDB YSQL and PostgreSQL.
//!
//! The flow of a run follows the folders: [`cli`] flags (each workload
//! family's group flattened in through the registry) are validated into a
//! [`config::RunPlan`]; [`app::run`] connects ([`db`]) and hands each
//! operation of [`workload`] to [`runner`], which owns its life (tables,
//! set-up, the one worker loop, checks, the load mark); workers record
//! into [`stats`], whose run record is what [`report`] turns into text and
//! files, for a live run and for a saved one alike.
//!
//! Each module imports only the layers below it (`tests/layers.rs` holds
//! the table): `error`, `output`, `db::sql`, `stats` and `rt` (the worker
//! threads' poll loop) are leaves; `db`,
//! then `workload`, then `runner`; `report` reads `stats` alone; `cluster`
//! implements the runner's start barrier; `cli`, `config` and `app` sit on
//! top.

pub mod app;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod db;
pub mod error;
pub mod generate;
pub mod metrics;
pub mod output;
pub mod report;
pub mod rt;
pub mod runner;
pub mod signals;
pub mod stats;
pub mod workload;

pub use app::{Control, RunReport, run, run_with};
pub use error::{Error, Result};
