//! sysbench's flags: the tables (`--tables`, `--table-size`, which is `-r`
//! by sysbench's name) and the statement counts of a transaction.

use clap::{ArgAction, Args};

use super::{CLEANUP, OltpSettings, PREPARE};
use crate::error::{Error, Result};
use crate::workload::kit::args::{WORKLOAD, parse_count, parse_on_off, parse_positive};
use crate::workload::{FamilyArgs, FamilySettings, RunContext, Spec, Unread};

/// The oltp-* flags of the command line.
#[derive(Args, Debug, Clone)]
pub struct OltpArgs {
    /// oltp-*: tables sbtest1..N, each of -r rows.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_positive::<usize>, help_heading = WORKLOAD)]
    pub tables: usize,

    /// oltp-*: rows per table, as sysbench's --table-size (the same as -r).
    #[arg(long, value_name = "N", value_parser = parse_count::<u64>, help_heading = WORKLOAD)]
    pub table_size: Option<u64>,

    /// oltp-*: rows of each range select.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_positive::<u64>, help_heading = WORKLOAD)]
    pub range_size: u64,

    /// oltp-*: point selects per transaction (oltp-point-select: 1).
    #[arg(long, value_name = "N", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub point_selects: Option<u32>,

    /// oltp-*: simple range selects per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub simple_ranges: u32,

    /// oltp-*: SUM() range selects per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub sum_ranges: u32,

    /// oltp-*: ORDER BY range selects per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub order_ranges: u32,

    /// oltp-*: DISTINCT range selects per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub distinct_ranges: u32,

    /// oltp-*: index updates (k = k + 1) per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub index_updates: u32,

    /// oltp-*: non-index updates (c = ...) per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub non_index_updates: u32,

    /// oltp-*: DELETE and INSERT pairs of one id per transaction.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_count::<u32>, help_heading = WORKLOAD)]
    pub delete_inserts: u32,

    /// oltp-*: run the range selects (on, as sysbench's --range-selects).
    #[arg(long, value_name = "BOOL", default_value = "on", value_parser = parse_on_off, action = ArgAction::Set, help_heading = WORKLOAD)]
    pub range_selects: bool,

    /// oltp-*: no BEGIN/COMMIT: every statement autocommits.
    #[arg(long, help_heading = WORKLOAD)]
    pub skip_trx: bool,
}

impl OltpArgs {
    fn built(&self) -> OltpSettings {
        OltpSettings {
            tables: self.tables,
            range_size: self.range_size,
            point_selects: self.point_selects,
            simple_ranges: self.simple_ranges,
            sum_ranges: self.sum_ranges,
            order_ranges: self.order_ranges,
            distinct_ranges: self.distinct_ranges,
            index_updates: self.index_updates,
            non_index_updates: self.non_index_updates,
            delete_inserts: self.delete_inserts,
            range_selects: self.range_selects,
            skip_trx: self.skip_trx,
        }
    }
}

impl FamilyArgs for OltpArgs {
    /// sysbench's --table-size is -r by another name.
    fn rows(&self, _operations: &[&'static Spec], rows: Option<u64>) -> Result<Option<u64>> {
        match (rows, self.table_size) {
            (Some(r), Some(t)) if r != t => Err(Error::usage(format!(
                "--table-size {t} and -r {r} disagree: they are the same setting, give one"
            ))),
            (r, t) => Ok(r.or(t)),
        }
    }

    fn settings(&self, _run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()> {
        families.insert(self.built());
        Ok(())
    }

    fn unread(&self, operations: &[&'static Spec]) -> Vec<Unread> {
        let oltp = |o: &&'static Spec| o.name.starts_with("oltp-");
        // The transaction scripts: neither the load nor the clean-up.
        let runs = operations
            .iter()
            .any(|o| oltp(o) && *o != &PREPARE && *o != &CLEANUP);
        let d = OltpSettings::default();
        let o = self.built();
        let knobs = o.range_size != d.range_size
            || o.point_selects.is_some()
            || o.simple_ranges != d.simple_ranges
            || o.sum_ranges != d.sum_ranges
            || o.order_ranges != d.order_ranges
            || o.distinct_ranges != d.distinct_ranges
            || o.index_updates != d.index_updates
            || o.non_index_updates != d.non_index_updates
            || o.delete_inserts != d.delete_inserts
            || o.range_selects != d.range_selects
            || o.skip_trx;
        let mut unread = Vec::new();
        if knobs && !runs {
            unread.push(Unread {
                flag: "the oltp statement counts (--point-selects, --range-size, ...)",
                applies: "the oltp-* runs",
            });
        }
        if o.tables != d.tables && !operations.iter().any(oltp) {
            unread.push(Unread {
                flag: "--tables",
                applies: "the oltp-* workloads",
            });
        }
        unread
    }
}
