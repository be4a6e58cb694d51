//! The contract between a workload and the rest of the program: what a
//! workload is ([`Spec`], its facts), what it does for a run ([`Workload`]:
//! set-up, checks, one [`Operation`] per worker), the tables it works on
//! ([`TableSet`]) and the settings it is built from ([`Settings`]).
//!
//! The runner, the app and the several-client gate know workloads only
//! through these types; a family implements them in its own folder and
//! is listed in [`super::registry`].

use std::future::Future;
use std::pin::Pin;

use tokio_postgres::Client;

use crate::error::Result;

pub mod args;
mod facts;
mod operation;
mod settings;
mod tables;

pub use args::{FamilyArgs, Misuse, RunContext, Unread};
pub use facts::Facts;
pub use operation::{AnyOperation, DynOperation, NoUnits, Operation, Ticket};
pub use settings::{FamilySetting, FamilySettings, Settings};
pub use tables::{ReadTable, TableSet, TableUse, Tables, rows_flag};

/// A boxed future that may move between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether a workload empties and fills its tables, or works on what is
/// already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Writes keys `0..rows` into emptied tables, split over the workers;
    /// ends when every worker's share is done (or at `--time`).
    Load,
    /// Reads or changes the loaded tables until `--time` is up.
    Query,
}

/// What the rest of the program knows of a workload.
pub struct Spec {
    /// The name in `-o` and in reports.
    pub name: &'static str,
    /// Other spellings `-o` accepts (the original tool's `copy_mem`).
    pub aliases: &'static [&'static str],
    /// One line for `--help`.
    pub about: &'static str,
    pub role: Role,
    /// Whether `--rate` paces its units (not so for one statement per
    /// thread, as procedure and copy-file send).
    pub paced: bool,
    /// Whether it writes into its tables (a query workload may too).
    pub writes: bool,
    /// Whether it drops tables (a clean-up): it needs none created, and
    /// no workload after it in `-o` may need the ones it drops.
    pub drops: bool,
    /// What one timed unit is, for reports, singular and plural.
    pub unit: &'static str,
    pub units: &'static str,
    /// Checks the flags for this workload and builds it for the run.
    pub build: fn(&'static Spec, &Settings) -> Result<Box<dyn Workload>>,
}

impl Spec {
    pub fn is_load(&self) -> bool {
        self.role == Role::Load
    }

    /// What the statistics keep of this workload.
    pub fn kind(&self) -> crate::stats::OpKind {
        crate::stats::OpKind {
            name: self.name,
            unit: self.unit,
            units: self.units,
            load: self.is_load(),
            paced: self.paced,
        }
    }
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Spec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A workload built for one run: what it is ([`Workload::facts`]) and
/// what it does in the life of an operation (set-up, load mark, checks,
/// one [`Operation`] per worker).
pub trait Workload: Send + Sync {
    fn spec(&self) -> &'static Spec;

    /// What the runner, the app and the reports know of it, as plain
    /// data fixed when it was built.
    fn facts(&self) -> &Facts;

    /// The tables it works on, checked once per run before any workload
    /// starts and created only when a load of the run fills them (see
    /// [`TableSet::reads`] and [`TableSet::prepare`]). Workloads that share
    /// tables return the same set; the first one prepares it.
    fn tables(&self) -> &'static dyn TableSet;

    /// Set-up on one connection before the workers start, not timed: for a
    /// load, emptying and marking the tables.
    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>>;

    /// For a query workload: what is wrong with the tables it is about to
    /// read (missing rows), as a warning; None when nothing is.
    fn check_loaded<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// After a load that ran to its end: marks the tables as loaded.
    fn finish_load<'a>(&'a self, _client: &'a Client, _rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// After the operation's units and before its figures are made, on a
    /// connection of its own, when [`Facts::reads_after_run`] says so:
    /// what it reads of the server to set beside its own figures in
    /// [`Workload::metrics`] (TPC-C: the server's count of committed
    /// New-Orders). Not after an interrupt; a failure is a warning.
    fn after_run<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// After the operation, on a connection of its own: consistency
    /// checks of what the workload wrote. A broken one fails the run.
    fn checks<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<Vec<Check>>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// What a workload without units did, line by line (a clean-up's
    /// dropped and left tables), read after its set-up, also a failed
    /// one: for the summary and the JSON report.
    fn findings(&self) -> Vec<Finding> {
        Vec::new()
    }

    /// Figures of its own, from what was measured of each type (in the
    /// order of [`Facts::types`]) over the measured wallclock: TPC-C's
    /// tpmC. Shown in the summary and the JSON report's `metrics`.
    fn metrics(&self, _types: &[TypeFigures], _wallclock: std::time::Duration) -> Vec<Metric> {
        Vec::new()
    }

    /// The same figures per interval (TPC-C: tpmC and efficiency), from
    /// each type's figures of one interval: on the progress lines, in the
    /// CSV and JSON reports and on the throughput picture. An owned
    /// function, as the collector of intervals outlives no workload.
    fn interval_metrics(&self) -> Option<IntervalMetrics> {
        None
    }

    /// What the run is sized by, in a few words for a picture's title
    /// ("2 warehouses", "scale 10"), when it is not the rows of `-r` (or
    /// of [`Workload::load_rows`]); asked after the run, as a script reads
    /// its scale in its set-up.
    fn scale(&self) -> Option<String> {
        None
    }

    /// For a load: the rows this client's workers will write, when `-r`
    /// does not say it (TPC-C's warehouses, booking's flights). The
    /// progress bar and the "stopped by --time" line measure against it.
    /// Not a fact: TPC-C counts its order lines, which takes a while for
    /// many warehouses, so it is asked once, when the load starts.
    fn load_rows(&self) -> Option<u64> {
        None
    }

    /// The operation of worker `thread` (0-based).
    fn worker(&self, thread: usize) -> Box<dyn DynOperation>;
}

pub use crate::stats::outcome::{
    Check, FigureColumn, Finding, IntervalMetrics, Metric, Outcome, PauseWords, Rule,
    StatementStats, StatementTimes, TypeFigures,
};
