//! ysql-bench: a load generator for YugabyteDB YSQL and PostgreSQL.
//!
//! The flow of a run follows the folders: [`cli`] flags are validated into
//! a [`config::RunPlan`]; [`app::run`] connects ([`db`]), prepares the
//! table, and runs each operation of [`workload`] through the one worker
//! loop of [`runner`]; workers record into [`stats`]; [`report`] turns the
//! stats into text and files.

pub mod app;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod db;
pub mod error;
pub mod generate;
pub mod output;
pub mod report;
pub mod runner;
pub mod signals;
pub mod stats;
pub mod workload;

pub use app::{Control, RunReport, run, run_with};
pub use error::{Error, Result};
