//! The limits of the generated rows and of the benchmark table, the same
//! for ysql-bench and for csv_generator (whose files must be loadable):
//! ids are int, a field has a bounded length, a batch of rows fits in a
//! worker's memory, and a prepared multi-row INSERT binds a bounded number
//! of parameters.

use crate::db::sql::MAX_BIND_PARAMS;
use crate::error::{Error, Result};
use crate::workload::Settings;

/// Columns bound per row by the multi-row INSERT.
pub const INSERT_COLUMNS: usize = 5;
/// The largest batch one prepared multi-row INSERT can bind.
pub const MAX_INSERT_BATCH: usize = MAX_BIND_PARAMS / INSERT_COLUMNS;
/// ids are `int` (int4): the table holds at most 2^31 rows, ids 0..2^31-1.
pub const MAX_ROWS: u64 = 1 << 31;
/// The longest field we generate (10 MiB); PostgreSQL's own limit is 1 GB.
pub const MAX_FIELD_LEN: usize = 10 << 20;

/// The most memory one batch of generated rows may take in a worker.
pub const MAX_BATCH_BYTES: usize = 256 << 20;

/// A batch of generated rows must fit in a worker's memory: insert and
/// copy-mem make `batch-size` rows of four `fields-length` fields.
pub fn check_batch_bytes(s: &Settings) -> Result<()> {
    let batch_bytes = s.batch_size.saturating_mul(s.field_len.saturating_mul(4));
    if batch_bytes > MAX_BATCH_BYTES {
        return Err(Error::usage(format!(
            "--batch-size {} with --fields-length {} makes batches of {} MiB: keep batch-size x 4 x fields-length under {} MiB",
            s.batch_size,
            s.field_len,
            batch_bytes >> 20,
            MAX_BATCH_BYTES >> 20
        )));
    }
    Ok(())
}

/// The table's limits, the same for ysql-bench and for csv_generator,
/// whose files must be loadable: ids are int, and a field is at most
/// [`MAX_FIELD_LEN`] characters.
pub fn check_table_shape(rows: u64, fields_length: usize) -> Result<()> {
    if rows > MAX_ROWS {
        return Err(Error::usage(format!(
            "--rows {rows} is more than the table can hold: ids are int, so at most {MAX_ROWS} rows"
        )));
    }
    if fields_length > MAX_FIELD_LEN {
        return Err(Error::usage(format!(
            "--fields-length {fields_length} is too large: the limit is {MAX_FIELD_LEN} characters"
        )));
    }
    Ok(())
}
