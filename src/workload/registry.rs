//! The one list of workloads: every name `-o` accepts, in the order
//! `--help` lists them.

use super::Spec;
use super::{basic, booking, cleanup, oltp, pgbench, tpcc, ycsb};

/// Every workload, in the order `--help` lists them.
pub static REGISTRY: &[&Spec] = &[
    &basic::insert::SPEC,
    &basic::copy_mem::SPEC,
    &basic::copy_file::SPEC,
    &basic::procedure::SPEC,
    &basic::select::SPEC,
    &basic::update::SPEC,
    &basic::table::CLEANUP,
    &ycsb::LOAD,
    &ycsb::A,
    &ycsb::B,
    &ycsb::C,
    &ycsb::D,
    &ycsb::E,
    &ycsb::F,
    &ycsb::CLEANUP,
    &oltp::PREPARE,
    &oltp::READ_WRITE,
    &oltp::READ_ONLY,
    &oltp::WRITE_ONLY,
    &oltp::POINT_SELECT,
    &oltp::UPDATE_INDEX,
    &oltp::UPDATE_NON_INDEX,
    &oltp::INSERT,
    &oltp::DELETE_INSERT,
    &oltp::CLEANUP,
    &booking::LOAD,
    &booking::BOOKING,
    &booking::CHECK,
    &booking::CLEANUP,
    &tpcc::LOAD,
    &tpcc::RUN,
    &tpcc::CHECK,
    &tpcc::CLEANUP,
    &pgbench::init::SPEC,
    &pgbench::init::CLEANUP,
    &pgbench::script::SPEC,
    &cleanup::SPEC,
];

/// The workload named `name` in `-o` (its name or an alias).
pub fn lookup(name: &str) -> Option<&'static Spec> {
    REGISTRY
        .iter()
        .copied()
        .find(|s| s.name == name || s.aliases.contains(&name))
}

/// The names `-o` accepts, for messages and `--help`.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|s| s.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_alias_finds_one_workload() {
        let mut seen = std::collections::HashSet::new();
        for s in REGISTRY {
            for n in std::iter::once(&s.name).chain(s.aliases) {
                assert!(seen.insert(*n), "{n} is listed twice");
                assert_eq!(lookup(n).map(|x| x.name), Some(s.name));
            }
        }
        assert!(lookup("delete").is_none());
    }
}
