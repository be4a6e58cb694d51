//! booking's flag: `--day-range`, the days a flight is booked on.

use clap::Args;

use super::{BOOKING, BookingSettings};
use crate::error::Result;
use crate::workload::kit::args::{WORKLOAD, parse_positive};
use crate::workload::{FamilyArgs, FamilySettings, RunContext, Spec, Unread};

/// The booking flags of the command line.
#[derive(Args, Debug, Clone)]
pub struct BookingArgs {
    /// booking: the days a flight is booked on (fewer days, hotter audit rows).
    #[arg(long, value_name = "DAYS", default_value = "30", value_parser = parse_positive::<u32>, help_heading = WORKLOAD)]
    pub day_range: u32,
}

impl FamilyArgs for BookingArgs {
    fn settings(&self, _run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()> {
        families.insert(BookingSettings {
            day_range: self.day_range,
        });
        Ok(())
    }

    fn unread(&self, operations: &[&'static Spec]) -> Vec<Unread> {
        if self.day_range != BookingSettings::default().day_range && !operations.contains(&&BOOKING)
        {
            return vec![Unread {
                flag: "--day-range",
                applies: "booking",
            }];
        }
        Vec::new()
    }
}
