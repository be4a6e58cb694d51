//! YCSB's core workloads: `ycsb-load` and the mixes `ycsb-a` … `ycsb-f`.
//!
//! This folder is the example of the workload seam: everything YCSB is
//! here, a file an idea (its flags in [`args`], its table in `schema`, its
//! loader in `load`, the mixes' shares in `mix`, a mix as a workload in
//! `run`, a worker's units in `unit` and, for the lean driver, `wire`),
//! plugged in by its nine specs in [`crate::workload::REGISTRY`] and its
//! flag group in [`crate::workload::registry::WorkloadArgs`].
//!
//! The data follows YCSB's core workload: table `usertable` with
//! `ycsb_key varchar(255) primary key` and `field0..field9 text` of 100
//! characters; record `n`'s key is `"user"` and the decimal FNV-1a hash of
//! `n` (so keys are not in record order), and `-r` records `0..N-1` are
//! loaded exactly, split over the threads, by COPY in batches of `-b`.
//!
//! A mix draws, per unit, one transaction type with the mix's
//! proportions, and a record with the key distribution (scrambled zipfian
//! by default, `latest` for D, both of θ = 0.99 or `--zipf-theta`): read (every field of one record),
//! update (one random field, or all with `--ycsb-write-all-fields`),
//! insert (a new record), scan (`ycsb_key >= $1 order by ycsb_key limit
//! $2`, length uniform in 1..=100) and read-modify-write (a read and an
//! update of the same record, timed as one unit, in one transaction with
//! `--ycsb-rmw-txn`). Inserts take record numbers after those in the table
//! (counted at set-up, then probed until a free key), from one counter
//! shared by the workers, so that no two workers and no rerun insert the
//! same key.

pub mod args;
mod load;
mod mix;
mod run;
mod schema;
mod unit;

pub use mix::{Mix, TYPES};
pub use run::Acknowledged;
pub use schema::{USERTABLE, create_sql, key_of};

use crate::workload::{Role, Spec};
use load::build_load;
use run::build_mix;

/// The table's default name, as in YCSB.
pub const DEFAULT_TABLE: &str = "usertable";
/// The longest scan, as YCSB's `maxscanlength`.
pub const MAX_SCAN: i64 = 100;
/// YCSB's default zipfian constant, every zipfian's default.
pub use crate::workload::kit::keys::ZIPF_THETA;

/// The YCSB flags.
#[derive(Clone, Debug)]
pub struct YcsbSettings {
    pub field_count: usize,
    pub field_length: usize,
    pub write_all_fields: bool,
    pub rmw_txn: bool,
    /// `--ycsb-proportions`: replaces the mix's own.
    pub proportions: Option<Mix>,
}

impl Default for YcsbSettings {
    fn default() -> Self {
        YcsbSettings {
            field_count: 10,
            field_length: 100,
            write_all_fields: false,
            rmw_txn: false,
            proportions: None,
        }
    }
}

const fn mix_spec(name: &'static str, about: &'static str, writes: bool) -> Spec {
    Spec {
        name,
        aliases: &[],
        about,
        role: Role::Query,
        paced: true,
        writes,
        drops: false,
        unit: "op",
        units: "ops",
        build: build_mix,
    }
}

/// `-o ycsb-load`.
pub static LOAD: Spec = Spec {
    name: "ycsb-load",
    aliases: &[],
    about: "YCSB: load usertable with -r records by COPY",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: build_load,
};
pub static A: Spec = mix_spec("ycsb-a", "YCSB A: read/update 50/50, zipfian", true);
pub static B: Spec = mix_spec("ycsb-b", "YCSB B: read/update 95/5, zipfian", true);
pub static C: Spec = mix_spec("ycsb-c", "YCSB C: read only, zipfian", false);
pub static D: Spec = mix_spec("ycsb-d", "YCSB D: read/insert 95/5, latest", true);
pub static E: Spec = mix_spec("ycsb-e", "YCSB E: scan/insert 95/5, zipfian", true);
pub static F: Spec = mix_spec(
    "ycsb-f",
    "YCSB F: read/read-modify-write 50/50, zipfian",
    true,
);

/// `-o ycsb-cleanup`.
pub static CLEANUP: Spec = crate::workload::kit::cleanup::spec(
    "ycsb-cleanup",
    "YCSB: drop usertable (or --table-name) if ysql-bench created it",
    |spec, s| crate::workload::kit::cleanup::build(spec, s, Some(&FAMILY), &[]),
);

/// The family's tables, as the clean-ups know them.
pub static FAMILY: crate::workload::kit::cleanup::Family = crate::workload::kit::cleanup::Family {
    name: "YCSB",
    tables: &USERTABLE,
    more: None,
    routines: false,
};
