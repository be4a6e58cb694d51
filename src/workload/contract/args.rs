//! A family's side of the command line: its flag group (a clap `Args`
//! struct in its `args.rs`, flattened into the command line by
//! [`crate::workload::registry::WorkloadArgs`]) implements [`FamilyArgs`],
//! so that the run plan checks, builds and warns about every family's
//! flags without knowing one. A family that stands in for another tool
//! also hints, given a [`Misuse`] of a flag, what to write instead of
//! that tool's habit.

use super::{FamilySettings, Settings, Spec};
use crate::error::Result;
use crate::workload::kit::partition::ClientShare;

/// What a family's flags are checked against: the run's other choices.
pub struct RunContext<'a> {
    /// The workloads of `-o`, in order.
    pub operations: &'a [&'static Spec],
    /// The run's seed, the same on every client of several (each client
    /// draws its own from it for [`Settings::seed`]).
    pub run_seed: u64,
    /// Whether `--seed` gave it.
    pub seed_given: bool,
    /// Whether `--rate` is given.
    pub rate_given: bool,
    /// `--clients` above 1: this client's place among them.
    pub clients: Option<ClientShare>,
}

/// A flag the command line refused, as a family is asked for a hint about
/// it ([`crate::workload::registry::usage_hint`]): clap's error in the workload layer's terms. Flags are given
/// by the name the user wrote (an unknown one, before any `=`) or by
/// their long name (`--rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misuse<'a> {
    /// A flag the command line does not have.
    Unknown(&'a str),
    /// A flag without its value, or with one not among its choices.
    Invalid(&'a str),
    /// A value the flag's parser refused.
    Rejected { flag: &'a str, value: &'a str },
}

/// A flag given that no workload of the run reads: the warning says what
/// it applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unread {
    /// The flag as the warning names it ("--day-range").
    pub flag: &'static str,
    /// What reads it ("booking").
    pub applies: &'static str,
}

/// A family's flag group, as the run plan asks it.
pub trait FamilyArgs {
    /// The workloads of the run, from those of `-o`: a family's flags may
    /// imply one of its workloads (`--script` implies `-o script`), or
    /// refuse a list that leaves it out.
    fn operations(&self, given: Vec<&'static Spec>) -> Result<Vec<&'static Spec>> {
        Ok(given)
    }

    /// The rows of the run, from `-r` (None when not given): a family's
    /// flags may say it another way (sysbench's `--table-size`, pgbench's
    /// `-s`), and must agree with `-r`.
    fn rows(&self, operations: &[&'static Spec], rows: Option<u64>) -> Result<Option<u64>> {
        let _ = operations;
        Ok(rows)
    }

    /// Checks the family's flags against each other and the run (a usage
    /// error, before any connection), and keeps the family's settings.
    fn settings(&self, run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()>;

    /// The family's flags given that no workload of the run reads.
    fn unread(&self, operations: &[&'static Spec]) -> Vec<Unread> {
        let _ = operations;
        Vec::new()
    }

    /// Other warnings about the family's flags in this run, each a line.
    fn warnings(&self, operations: &[&'static Spec], settings: &Settings) -> Vec<String> {
        let _ = (operations, settings);
        Vec::new()
    }

    /// Whether a workload of the run draws zipfian keys of its own, and
    /// so reads `--zipf-theta` without `--key-distribution` (the YCSB
    /// mixes).
    fn draws_zipfian(&self, operations: &[&'static Spec]) -> bool {
        let _ = operations;
        false
    }
}
