//! ysql-bench: a load generator for YugabyteDB YSQL and PostgreSQL.
//!
//! The flow of a run follows the folders: [`cli`] flags are validated into
//! a [`config::RunPlan`]; [`app::run`] connects ([`db`]), prepares the
//! table, and runs each operation of [`workload`] through the one worker
//! loop of [`runner`]; workers record into [`stats`]; [`report`] turns the
//! stats into text and files.

/// `eprintln!` that cannot panic: progress, warnings and errors go to
/// stderr, and when stderr is a closed pipe (`2>&1 | head`) they are
/// dropped rather than ending the run with a panic, so that the run still
/// finishes, cleans up its sandbox and writes its reports. Lines starting
/// `>>` say what the run is doing and are left out under `--quiet`
/// ([`output`]).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        $crate::output::say(::std::format_args!($($arg)*));
    }};
}

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
