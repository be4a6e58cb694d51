//! The basic operations' own flag: `--copy-file-client`, where copy-file
//! reads its files. (`--csv-dir`, `-b`, `-f` and the table flags are the
//! command line's own: other families read them too, or they were there
//! before any family.)

use clap::Args;

use super::copy_file::{self, CopyFileSettings};
use crate::error::{Error, Result};
use crate::workload::kit::args::NODES;
use crate::workload::{FamilyArgs, FamilySettings, RunContext};

/// The basic operations' flags of the command line.
#[derive(Args, Debug, Clone)]
pub struct BasicArgs {
    /// copy-file: read the CSV files here and stream them, instead of the server reading them.
    ///
    /// COPY FROM STDIN, like psql's \copy: works through haproxy and PgBouncer, where a
    /// connection may land on any node, and needs no server file access.
    #[arg(long, help_heading = NODES)]
    pub copy_file_client: bool,
}

impl FamilyArgs for BasicArgs {
    fn settings(&self, run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()> {
        if self.copy_file_client && !run.operations.contains(&&copy_file::SPEC) {
            return Err(Error::usage(
                "--copy-file-client changes how copy-file reads its files, and copy-file is not among the operations: add it (-o copy-file) or leave the flag out",
            ));
        }
        families.insert(CopyFileSettings {
            client: self.copy_file_client,
        });
        Ok(())
    }
}
