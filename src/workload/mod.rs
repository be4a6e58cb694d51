//! The six operations: what each sends to the server and how it counts rows.
//!
//! Operations differ only in the SQL they send and in what a unit of work
//! is (a batch of rows, one COPY of a file, one CALL, one query). How units
//! are scheduled, timed and counted is the runner's business, in one loop
//! for all of them ([`crate::runner`]). Each operation implements
//! [`Operation`]: `stage` prepares the next unit outside the timed section
//! (random strings, COPY buffers), `execute` sends it and is timed.

use std::future::Future;

use tokio_postgres::Client;

use crate::error::Result;

pub mod copy_file;
pub mod copy_mem;
pub mod csv_gen;
pub mod insert;
pub mod partition;
pub mod procedure;
pub mod rowgen;
pub mod select;
pub mod update;

/// The operations, as the rest of the program knows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    Insert,
    CopyMem,
    CopyFile,
    Procedure,
    Select,
    Update,
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Insert => "insert",
            OpKind::CopyMem => "copy-mem",
            OpKind::CopyFile => "copy-file",
            OpKind::Procedure => "procedure",
            OpKind::Select => "select",
            OpKind::Update => "update",
        }
    }

    /// Loads write ids 0..rows into an emptied table; the others query it.
    pub fn is_load(self) -> bool {
        !matches!(self, OpKind::Select | OpKind::Update)
    }

    /// Whether the operation writes into the table.
    pub fn writes(self) -> bool {
        self != OpKind::Select
    }

    /// Whether the client builds batches of rows in memory.
    pub fn generates_batches(self) -> bool {
        matches!(self, OpKind::Insert | OpKind::CopyMem)
    }

    /// Whether `--rate` paces it: queries and the client's batches, not the
    /// one statement per thread of procedure and copy-file.
    pub fn is_paced(self) -> bool {
        !self.is_load() || self.generates_batches()
    }

    /// What the timed units are called, in the plural.
    pub fn units(self) -> &'static str {
        match self {
            OpKind::Insert | OpKind::CopyMem => "batches",
            OpKind::CopyFile => "files",
            OpKind::Procedure => "calls",
            OpKind::Select | OpKind::Update => "queries",
        }
    }

    /// What one timed unit is, for reports.
    pub fn unit(self) -> &'static str {
        match self {
            OpKind::Insert | OpKind::CopyMem => "batch",
            OpKind::CopyFile => "file",
            OpKind::Procedure => "call",
            OpKind::Select | OpKind::Update => "query",
        }
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one executed unit did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Rows written or read.
    pub rows: u64,
    /// Rows the unit looked for and did not find (select and update).
    pub missing: u64,
}

/// One worker's share of an operation, on its own connection.
pub trait Operation: Send + 'static {
    /// Per-connection set-up, not timed: prepares statements.
    fn prepare(&mut self, client: &Client) -> impl Future<Output = Result<()>> + Send;

    /// Makes the next unit ready, not timed. Returns false when this
    /// worker's share is done (loads); queries always have a next unit.
    fn stage(&mut self) -> bool;

    /// Sends the staged unit and waits for its result: the timed part.
    /// May be called again for the same unit to retry it.
    fn execute(&mut self, client: &Client) -> impl Future<Output = Result<Outcome>> + Send;

    /// Which rows the staged unit holds, for error messages ("ids 0..200").
    fn unit_label(&self) -> Option<String> {
        None
    }

    /// Whether a failed unit may simply be sent again. False where a
    /// failure can leave part of the unit committed.
    fn retryable(&self) -> bool {
        true
    }

    /// Whether one unit may run for a long time (one CALL or one COPY of a
    /// whole share). Such a unit is cancelled on the server when the run is
    /// stopped or `--time` is up, instead of being waited for.
    fn long_unit(&self) -> bool {
        false
    }

    /// Rows that a failed or cancelled unit left committed in the table.
    /// None for units that commit all or nothing.
    fn committed_rows(&mut self, _client: &Client) -> impl Future<Output = Result<u64>> + Send {
        std::future::ready(Ok(0))
    }
}

/// A 64-bit mix of the run's seed and a worker's index, so that workers of
/// one run draw different ids while the run stays reproducible.
pub fn worker_seed(seed: u64, thread: usize, salt: u64) -> u64 {
    let mut z = seed
        .wrapping_add((thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws the ids select and update look for: uniform over 0..rows.
pub struct IdPicker {
    rng: rand::rngs::SmallRng,
    rows: u64,
}

impl IdPicker {
    pub fn new(seed: u64, thread: usize, rows: u64) -> Self {
        use rand::SeedableRng;
        IdPicker {
            rng: rand::rngs::SmallRng::seed_from_u64(worker_seed(seed, thread, 1)),
            rows: rows.max(1),
        }
    }

    /// The next id, as the table's int column wants it.
    pub fn next_id(&mut self) -> i32 {
        use rand::RngExt;
        // rows <= 2^31 is checked in the plan, so the id fits in an i32.
        self.rng.random_range(0..self.rows) as i32
    }

    /// The generator, for operations that also need random text.
    pub fn rng(&mut self) -> &mut rand::rngs::SmallRng {
        &mut self.rng
    }
}
