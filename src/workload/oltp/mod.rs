//! sysbench's OLTP family: `oltp-prepare`, `oltp-cleanup` and the eight
//! transaction scripts of sysbench's `oltp_*.lua`, on the same tables, so
//! that sysbench can run on tables ysql-bench prepared and the other way
//! round.
//!
//! Tables `sbtest1..N` (`--tables`) of `-r` rows (`--table-size`) each, in
//! sysbench's layout: `id serial primary key, k integer, c char(120), pad
//! char(60)` and index `k_N` on `k`; `c` is ten groups of 11 random digits
//! joined by `-`, `pad` five, `k` uniform in 1..rows, ids 1..rows (the
//! sequence is moved past them, so that sysbench's own inserts go on
//! after). `oltp-prepare` loads them with COPY over the threads;
//! `oltp-cleanup` drops them (only the tool's, or with `--force` those of
//! sysbench's shape; see [`crate::workload::cleanup`]).
//!
//! One unit is one sysbench *event*: for the transactional scripts a
//! BEGIN … COMMIT holding the groups of statements of `oltp_common.lua`
//! (point selects, the four range selects over `--range-size`, index and
//! non-index updates, delete-then-insert of one id), each group on a table
//! drawn at random, the ids from `--key-distribution` (uniform by
//! default). The statements of a unit are drawn in `stage`, untimed; a
//! failed transaction is rolled back, and `--retry-on` (40001, 40P01 and
//! 23505 by default, as sysbench's PostgreSQL driver) runs the same
//! transaction again. Each statement kind keeps its own latency, reported
//! with `--per-statement` and always in JSON, and the summary counts
//! queries as sysbench does (read, write, other).
//!
//! A file an idea: the flags ([`args`]), the tables (`schema`), the load
//! (`prepare`), the statements of an event (`statements`), a script as a
//! workload (`run`) and a worker's events (`unit`).

pub mod args;
mod prepare;
mod run;
mod schema;
mod statements;
mod unit;

pub use schema::{SBTABLES, create_sql, digits_value};

use crate::workload::{Role, Spec};
use prepare::build_prepare;
use run::build_run;

/// sysbench's knobs.
#[derive(Clone, Debug)]
pub struct OltpSettings {
    pub tables: usize,
    pub range_size: u64,
    /// `--point-selects`; None: 10 (1 for oltp-point-select).
    pub point_selects: Option<u32>,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
    pub skip_trx: bool,
}

impl Default for OltpSettings {
    fn default() -> Self {
        OltpSettings {
            tables: 1,
            range_size: 100,
            point_selects: None,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
        }
    }
}

/// What one oltp workload runs per unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Script {
    ReadWrite,
    ReadOnly,
    WriteOnly,
    PointSelect,
    UpdateIndex,
    UpdateNonIndex,
    Insert,
    DeleteInsert,
}

const fn run_spec(name: &'static str, about: &'static str, writes: bool) -> Spec {
    Spec {
        name,
        aliases: &[],
        about,
        role: Role::Query,
        paced: true,
        writes,
        drops: false,
        unit: "txn",
        units: "txns",
        build: build_run,
    }
}

/// `-o oltp-prepare`.
pub static PREPARE: Spec = Spec {
    name: "oltp-prepare",
    aliases: &[],
    about: "sysbench OLTP: create and load sbtest1..--tables with -r rows each",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: build_prepare,
};
/// `-o oltp-cleanup`.
pub static CLEANUP: Spec = crate::workload::kit::cleanup::spec(
    "oltp-cleanup",
    "sysbench OLTP: drop sbtest1..--tables and every other sbtestN, those ysql-bench created",
    |spec, s| crate::workload::kit::cleanup::build(spec, s, Some(&FAMILY), &[]),
);

/// The family's tables, as the clean-ups know them.
pub static FAMILY: crate::workload::kit::cleanup::Family = crate::workload::kit::cleanup::Family {
    name: "sysbench OLTP",
    tables: &SBTABLES,
    more: Some(is_sbtest),
    routines: false,
};

/// sysbench's table names: `sbtest` and a number.
fn is_sbtest(name: &str) -> bool {
    name.strip_prefix("sbtest")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
pub static READ_WRITE: Spec = run_spec(
    "oltp-read-write",
    "sysbench oltp_read_write: selects, ranges, updates, delete+insert in one transaction",
    true,
);
pub static READ_ONLY: Spec = run_spec(
    "oltp-read-only",
    "sysbench oltp_read_only: point and range selects in one transaction",
    false,
);
pub static WRITE_ONLY: Spec = run_spec(
    "oltp-write-only",
    "sysbench oltp_write_only: updates and delete+insert in one transaction",
    true,
);
pub static POINT_SELECT: Spec = run_spec(
    "oltp-point-select",
    "sysbench oltp_point_select: one point select",
    false,
);
pub static UPDATE_INDEX: Spec = run_spec(
    "oltp-update-index",
    "sysbench oltp_update_index: k = k + 1 of one row",
    true,
);
pub static UPDATE_NON_INDEX: Spec = run_spec(
    "oltp-update-non-index",
    "sysbench oltp_update_non_index: c of one row",
    true,
);
pub static INSERT: Spec = run_spec(
    "oltp-insert",
    "sysbench oltp_insert: one insert with a new serial id",
    true,
);
pub static DELETE_INSERT: Spec = run_spec(
    "oltp-delete-insert",
    "sysbench OLTP: delete and re-insert one id in one transaction",
    true,
);

pub(super) fn script_of(name: &str) -> Script {
    match name {
        "oltp-read-write" => Script::ReadWrite,
        "oltp-read-only" => Script::ReadOnly,
        "oltp-write-only" => Script::WriteOnly,
        "oltp-point-select" => Script::PointSelect,
        "oltp-update-index" => Script::UpdateIndex,
        "oltp-update-non-index" => Script::UpdateNonIndex,
        "oltp-insert" => Script::Insert,
        _ => Script::DeleteInsert,
    }
}

#[cfg(test)]
mod family_tests {
    use super::is_sbtest;

    #[test]
    fn sysbench_table_names_are_sbtest_and_a_number() {
        assert!(is_sbtest("sbtest12") && !is_sbtest("sbtest") && !is_sbtest("sbtest1a"));
    }
}
