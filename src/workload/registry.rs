//! The one list of workloads: every name `-o` accepts, in the order
//! `--help` lists them, and every family's flag group ([`WorkloadArgs`]),
//! which the command line flattens into its own flags.
//!
//! A family is plugged in here: its specs in [`REGISTRY`], its flag group
//! in [`WorkloadArgs`] and [`WorkloadArgs::families`] (and, if it creates
//! tables, its tables in [`super::cleanup::FAMILIES`], so that `-o cleanup`
//! drops them). The run plan asks the groups through
//! [`FamilyArgs`] to imply workloads, say the rows, check their flags,
//! build their settings and warn about flags the run leaves unread.
//!
//! What reports show of a workload comes from here too, as data: the
//! columns of the figures a workload keeps per interval
//! ([`INTERVAL_COLUMNS`]), and, for a report written before the record
//! kept them, a workload's figure rules and the words for its pauses. And
//! the command line asks [`usage_hint`] what to write instead of a habit
//! of the tool a family stands in for (pgbench's `-T 10`).

use clap::Args;

use super::kit::keys::KeyDistribution;
use super::{
    FamilyArgs, FamilySettings, FigureColumn, Metric, Misuse, PauseWords, RunContext, Settings,
    Spec, TypeFigures, Unread,
};
use super::{basic, booking, cleanup, oltp, pgbench, tpcc, ycsb};
use crate::error::Result;

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

/// The figures the workload named `operation` puts on its record, with
/// the rules by which a merge makes them again: for a report written
/// before the record kept the rules (only TPC-C's have figures).
pub fn figure_rules(operation: &str) -> Vec<Metric> {
    if [tpcc::LOAD.name, tpcc::RUN.name].contains(&operation) {
        tpcc::figure_rules()
    } else {
        Vec::new()
    }
}

/// What the workload named `operation` calls its units that found rows
/// missing, when not "missing": for a report written before the record
/// kept it.
pub fn missing_label(operation: &str) -> Option<&'static str> {
    (operation == tpcc::RUN.name).then_some(tpcc::MISSING_LABEL)
}

/// The figures of the workload named `operation` with the text its
/// summary gives them, made again from what a report written before the
/// record kept the text holds (see [`tpcc::figures_again`]); none for a
/// workload that has no figures or when what they need is not there.
pub fn figures_again(
    operation: &str,
    description: &str,
    types: &[TypeFigures],
    wallclock: std::time::Duration,
    stored: &std::collections::BTreeMap<String, f64>,
) -> Vec<Metric> {
    tpcc::figures_again(operation, description, types, wallclock, stored)
}

/// The workloads' figures per interval, as the trailing columns of the
/// interval CSV in their order: one list for every workload, so that the
/// file of a run of several keeps one header (a workload without such
/// figures leaves those cells empty). Only TPC-C keeps any.
pub static INTERVAL_COLUMNS: &[FigureColumn] = &tpcc::INTERVAL_COLUMNS;

/// How the workload named `operation` names its pauses between units, if
/// it makes any: for a report written before the record kept the words.
pub fn pause_words(operation: &str) -> Option<PauseWords> {
    (operation == tpcc::RUN.name).then(tpcc::pause_words)
}

/// What to write instead, when `misuse` is a habit of a tool a family
/// stands in for (pgbench's `-T 10`): each family that knows such habits
/// is asked, in turn.
pub fn usage_hint(misuse: Misuse) -> Option<String> {
    let families: [fn(Misuse) -> Option<String>; 1] = [pgbench::hints::hint];
    families.iter().find_map(|hint| hint(misuse))
}

/// The flags that make `-o` needless (a run of scripts), as clap names
/// them.
pub const IMPLY_OPERATIONS: [&str; 2] = pgbench::args::IMPLY_OPERATIONS;

/// Every family's flags, in the order `--help` lists them under their
/// headings.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    #[command(flatten)]
    pub basic: basic::args::BasicArgs,
    #[command(flatten)]
    pub ycsb: ycsb::args::YcsbArgs,
    #[command(flatten)]
    pub oltp: oltp::args::OltpArgs,
    #[command(flatten)]
    pub booking: booking::args::BookingArgs,
    #[command(flatten)]
    pub tpcc: tpcc::args::TpccArgs,
    #[command(flatten)]
    pub pgbench: pgbench::args::PgbenchArgs,
}

/// The flags every family may read, given or not, for the warnings about
/// those no workload of the run reads.
#[derive(Clone, Copy, Debug)]
pub struct SharedFlags {
    pub zipf_theta_given: bool,
    pub hotspot_given: bool,
}

impl WorkloadArgs {
    /// Each family's group, in the order of the registry.
    pub fn families(&self) -> [&dyn FamilyArgs; 6] {
        [
            &self.basic,
            &self.ycsb,
            &self.oltp,
            &self.booking,
            &self.tpcc,
            &self.pgbench,
        ]
    }

    /// The workloads of the run, from those of `-o` (see
    /// [`FamilyArgs::operations`]).
    pub fn operations(&self, given: Vec<&'static Spec>) -> Result<Vec<&'static Spec>> {
        self.families()
            .iter()
            .try_fold(given, |ops, f| f.operations(ops))
    }

    /// The rows of the run, from `-r` (see [`FamilyArgs::rows`]).
    pub fn rows(&self, operations: &[&'static Spec], rows: Option<u64>) -> Result<Option<u64>> {
        self.families()
            .iter()
            .try_fold(rows, |rows, f| f.rows(operations, rows))
    }

    /// Every family's settings, checked.
    pub fn settings(&self, run: &RunContext<'_>) -> Result<FamilySettings> {
        let mut families = FamilySettings::default();
        for f in self.families() {
            f.settings(run, &mut families)?;
        }
        Ok(families)
    }

    /// The warnings about workload flags in this run: each family's flags
    /// that no workload reads and its other warnings, then the shared
    /// flags that none reads, then `--force` with `cleanup` alone.
    pub fn warnings(
        &self,
        operations: &[&'static Spec],
        settings: &Settings,
        shared: SharedFlags,
    ) -> Vec<String> {
        let families = self.families();
        let mut unread: Vec<Unread> = families.iter().flat_map(|f| f.unread(operations)).collect();
        let draws_zipfian = families.iter().any(|f| f.draws_zipfian(operations));
        unread.extend(unread_shared(operations, settings, shared, draws_zipfian));
        let mut w: Vec<String> = unread
            .iter()
            .map(|u| {
                format!(
                    "warning: {} applies to {}; no workload of this run uses it",
                    u.flag, u.applies
                )
            })
            .collect();
        w.extend(
            families
                .iter()
                .flat_map(|f| f.warnings(operations, settings)),
        );
        if settings.force && operations.iter().all(|o| *o == &cleanup::SPEC) {
            w.push(
                "warning: --force does not make cleanup drop a table ysql-bench did not create; a family's clean-up (e.g. pgbench-cleanup --force) drops one of the family's columns"
                    .to_string(),
            );
        }
        w
    }
}

/// The shared workload flags given that no workload of the run reads.
fn unread_shared(
    operations: &[&'static Spec],
    s: &Settings,
    shared: SharedFlags,
    draws_zipfian: bool,
) -> Vec<Unread> {
    let mut unread = Vec::new();
    let mut note = |flag, applies| unread.push(Unread { flag, applies });
    // Workloads that draw keys: the queries (not the loads, not the
    // checks and cleanups).
    let keyed = operations.iter().any(|o| !o.is_load() && o.paced);
    if s.keys.is_some() && !keyed {
        note(
            "--key-distribution",
            "workloads that pick keys (select, update, the YCSB mixes, oltp-*, booking), not loads",
        );
    }
    let zipf = match s.keys {
        Some(KeyDistribution::Zipfian { .. } | KeyDistribution::Latest { .. }) => true,
        None => draws_zipfian,
        _ => false,
    };
    if shared.zipf_theta_given && !zipf {
        note(
            "--zipf-theta",
            "--key-distribution zipfian and latest (and the YCSB mixes' defaults)",
        );
    }
    if s.drop && !operations.iter().any(|o| o.is_load()) {
        note("--drop", "the tables that the loads of the run fill");
    }
    if shared.hotspot_given && !matches!(s.keys, Some(KeyDistribution::Hotspot { .. })) {
        note(
            "--hotspot-fraction/--hotspot-ops",
            "--key-distribution hotspot",
        );
    }
    unread
}

/// The query class of a statement kind by its name, for reports written
/// before the class was recorded: a pgbench script's statement by its
/// verb, any other by the kit's rule.
pub fn query_class(name: &str) -> &'static str {
    pgbench::script::query_class(name).unwrap_or_else(|| super::kit::query_class(name))
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
