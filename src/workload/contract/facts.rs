//! What the rest of the program knows of a workload built for a run,
//! beyond its [`Spec`]: plain data, fixed when the workload is built, so
//! that the runner and the app read fields rather than ask a trait object
//! a dozen questions.

use super::Spec;
use crate::db::sql::TableName;

/// A built workload's facts. [`Facts::new`] gives what most workloads
/// have; a workload changes the fields that differ.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The transaction types its units report, in the order reports show
    /// them; [`super::Operation::unit_type`] indexes this list. One type,
    /// named after the unit, unless the workload is a mix.
    pub types: Vec<&'static str>,
    /// The table the rows go to or come from, for `--show-rowsize`.
    pub table: TableName,
    /// The tables whose server statistics the run reports
    /// ([`crate::db::server_watch`]): [`Facts::table`] unless the workload
    /// says more (or none, as a clean-up).
    pub stat_tables: Vec<String>,
    /// SQLSTATEs whose failure makes a unit be tried again (unless
    /// `--retry-on` says otherwise): serialization failures and deadlocks
    /// (YugabyteDB reports its read-restart and conflict errors as 40001).
    pub retry_on: &'static [&'static str],
    /// Tries per unit unless `--max-tries` says otherwise (0: no limit but
    /// the end of the run): one for single statements; transactional
    /// workloads retry as the tools they stand in for do.
    pub default_max_tries: u32,
    /// Whether this run of the workload writes into its tables (so that a
    /// table the tool did not create is refused without `--force`): the
    /// spec's, unless the flags change it (a custom YCSB mix).
    pub writes: bool,
    /// Whether the workload runs timed units at all (not so for one whose
    /// work is its set-up or its checks): its summary is then only what
    /// it did.
    pub has_units: bool,
    /// Whether the workload needs its tables created and checked before
    /// the run (not so for one that drops them, nor for scripts).
    pub needs_tables: bool,
    /// What this run of the workload is, beyond its name: a mix's shares,
    /// its key distribution, its record shape. Shown in the summary and
    /// the JSON report; empty when the name says it all.
    pub description: String,
    /// What one unit holds, as the summary's `batch` line says it.
    pub batch_text: String,
    /// What the units that found rows missing are, as the summary says
    /// them (TPC-C: the New-Orders rolled back by rule, not missing rows).
    pub missing_label: &'static str,
    /// What the latency histogram is of, e.g. "batch (200 rows)".
    pub histogram_note: String,
    /// How the pauses between units are named, when this run of the
    /// workload makes its workers pause (TPC-C's keying and think times).
    pub pauses: Option<super::PauseWords>,
    /// Whether its units may be kept several in flight on a connection
    /// (`--pipeline`): each is one statement whose answer stands alone,
    /// outside any transaction, and its operation implements
    /// [`super::Operation::queue`] and [`super::Operation::answered`].
    pub pipelines: bool,
    /// The users its workers' connections serve, when they are more than
    /// a user per connection could say (TPC-C's terminals): a user's unit
    /// is due when the user is ready ([`super::Operation::ready`]), and
    /// its wait for a free connection is in its latency.
    pub terminals: Option<u64>,
    /// Whether it reads the server after its units
    /// ([`super::Workload::after_run`]): a connection is made for it.
    pub reads_after_run: bool,
}

impl Facts {
    /// The facts of most workloads of `spec` on `table`: one type named
    /// after the unit, the server's statistics of `table`, retries of
    /// serialization failures and deadlocks with one try by default, the
    /// spec's writes, timed units, tables needed unless it drops them, no
    /// pipelining.
    pub fn new(spec: &'static Spec, table: TableName) -> Facts {
        Facts {
            types: vec![spec.unit],
            stat_tables: vec![table.as_str().to_string()],
            table,
            retry_on: &["40001", "40P01"],
            default_max_tries: 1,
            writes: spec.writes,
            has_units: true,
            needs_tables: !spec.drops,
            description: String::new(),
            batch_text: String::new(),
            missing_label: "missing",
            histogram_note: spec.unit.to_string(),
            pauses: None,
            pipelines: false,
            terminals: None,
            reads_after_run: false,
        }
    }
}
