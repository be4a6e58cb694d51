//! YCSB's flags: the record's shape (`--ycsb-field-count`,
//! `--ycsb-field-length`) for the load and the mixes, and what the mixes
//! send (`--ycsb-write-all-fields`, `--ycsb-rmw-txn`,
//! `--ycsb-proportions`).

use clap::Args;

use super::{LOAD, Mix, YcsbSettings};
use crate::error::Result;
use crate::workload::kit::args::{WORKLOAD, parse_positive};
use crate::workload::{FamilyArgs, FamilySettings, RunContext, Spec, Unread};

/// The YCSB flags of the command line.
#[derive(Args, Debug, Clone)]
pub struct YcsbArgs {
    /// YCSB: fields per record (field0..fieldN-1).
    #[arg(long, value_name = "N", default_value = "10", value_parser = parse_positive::<usize>, help_heading = WORKLOAD)]
    pub ycsb_field_count: usize,

    /// YCSB: characters per field.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_positive::<usize>, help_heading = WORKLOAD)]
    pub ycsb_field_length: usize,

    /// YCSB: an update writes every field, not one chosen at random.
    #[arg(long, help_heading = WORKLOAD)]
    pub ycsb_write_all_fields: bool,

    /// YCSB: read-modify-write runs its read and update in one transaction.
    #[arg(long, help_heading = WORKLOAD)]
    pub ycsb_rmw_txn: bool,

    /// YCSB: a custom mix replacing the workload's, e.g. read=0.9,update=0.1 (types: read, update, insert, scan, read-modify-write).
    #[arg(long, value_name = "TYPE=SHARE,...", value_parser = Mix::parse, help_heading = WORKLOAD)]
    pub ycsb_proportions: Option<Mix>,
}

/// Whether `o` is a YCSB workload.
fn is_ycsb(o: &Spec) -> bool {
    o.name.starts_with("ycsb-")
}

/// Whether `o` reads the mixes' flags: any YCSB workload but the load
/// (`ycsb-cleanup` too, as the warnings have always counted it).
fn is_mix(o: &Spec) -> bool {
    is_ycsb(o) && *o != LOAD
}

impl FamilyArgs for YcsbArgs {
    fn settings(&self, _run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()> {
        families.insert(YcsbSettings {
            field_count: self.ycsb_field_count,
            field_length: self.ycsb_field_length,
            write_all_fields: self.ycsb_write_all_fields,
            rmw_txn: self.ycsb_rmw_txn,
            proportions: self.ycsb_proportions,
        });
        Ok(())
    }

    fn unread(&self, operations: &[&'static Spec]) -> Vec<Unread> {
        let mut unread = Vec::new();
        let mut note = |flag, applies| unread.push(Unread { flag, applies });
        if !self.draws_zipfian(operations) {
            if self.ycsb_proportions.is_some() {
                note("--ycsb-proportions", "the YCSB mixes (ycsb-a … ycsb-f)");
            }
            if self.ycsb_rmw_txn {
                note("--ycsb-rmw-txn", "the YCSB mixes' read-modify-write");
            }
            if self.ycsb_write_all_fields {
                note("--ycsb-write-all-fields", "the YCSB mixes' updates");
            }
        }
        let d = YcsbSettings::default();
        if !operations.iter().any(|o| is_ycsb(o))
            && (self.ycsb_field_count != d.field_count || self.ycsb_field_length != d.field_length)
        {
            note(
                "--ycsb-field-count/--ycsb-field-length",
                "the YCSB workloads",
            );
        }
        unread
    }

    fn draws_zipfian(&self, operations: &[&'static Spec]) -> bool {
        operations.iter().any(|o| is_mix(o))
    }
}
