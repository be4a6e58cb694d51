//! What workloads are built from: the settings every workload shares, and
//! each family's own, built by the family's flag group (its `args.rs`) and
//! kept here by type, so that this contract names no family.

use std::path::PathBuf;

use crate::workload::kit::{keys, partition};
use crate::workload::{booking, oltp, pgbench::script, tpcc, ycsb};

/// What workloads need from the command line: the shape of the data, how
/// keys are drawn, how statements are sent. Nothing about pacing or
/// reports.
#[derive(Clone, Debug)]
pub struct Settings {
    pub threads: usize,
    /// Rows (records) loaded, or keys drawn from.
    pub rows: u64,
    pub batch_size: usize,
    pub field_len: usize,
    /// False under --no-prepared: no operation may leave a named statement
    /// on its connection (literals over the simple protocol, or unnamed
    /// statements, see [`crate::db::unnamed`]).
    pub prepared: bool,
    /// The table name given with --table-name, if any (each table set has
    /// its own default).
    pub table_name: Option<String>,
    pub tablets: Option<u32>,
    pub drop: bool,
    pub force: bool,
    pub seed: u64,
    pub csv_dir: PathBuf,
    /// copy-file streams the files from this machine (COPY FROM STDIN).
    pub copy_file_client: bool,
    /// How query workloads pick keys; None: the workload's own default.
    pub keys: Option<keys::KeyDistribution>,
    /// `--zipf-theta`, if given: the exponent of the zipfian and `latest`
    /// of --key-distribution and of the YCSB mixes' own keys.
    pub zipf_theta: Option<f64>,
    pub ycsb: ycsb::YcsbSettings,
    pub oltp: oltp::OltpSettings,
    pub booking: booking::BookingSettings,
    pub tpcc: tpcc::TpccSettings,
    /// `--script`, `--builtin`, `-D` and `-s`.
    pub script: script::ScriptSettings,
    /// `--isolation`, for workloads that begin their transactions with
    /// an explicit level.
    pub isolation: Option<crate::db::sql::Isolation>,
    /// Which of several clients this is (`--clients`): loads take the
    /// share of the client's threads among all clients' threads.
    pub client: partition::ClientShare,
}

impl Settings {
    /// The ids (records, rows of all tables) this client's thread `t`
    /// loads out of `rows`: every loader takes its share through here, so
    /// that several clients together load 0..rows once.
    pub fn share(&self, rows: u64, t: usize) -> std::ops::Range<u64> {
        self.client.thread_range(rows, self.threads, t)
    }
}
