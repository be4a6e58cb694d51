//! `ycsb-load`: usertable's records by COPY, split over the workers.

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::Client;

use super::YcsbSettings;
use super::schema::{USERTABLE, check_shape, field_list, key_of, table_name};
use crate::db::schema;
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::copy_load::{CopyLoad, Lines};
use crate::workload::kit::rowgen::fill_alphanumeric;
use crate::workload::{
    BoxFuture, DynOperation, Facts, Settings, Spec, TableSet, Workload, worker_seed,
};

pub(super) fn build_load(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_shape(s)?;
    let ycsb = s.family::<YcsbSettings>().into_owned();
    let row_bytes = ycsb.field_count * (ycsb.field_length + 1) + 32;
    if s.batch_size.saturating_mul(row_bytes) > crate::workload::kit::limits::MAX_BATCH_BYTES {
        return Err(Error::usage(format!(
            "--batch-size {} of YCSB records of {row_bytes} bytes makes batches over {} MiB: use a smaller -b",
            s.batch_size,
            crate::workload::kit::limits::MAX_BATCH_BYTES >> 20
        )));
    }
    let table = table_name(s)?;
    Ok(Box::new(Load {
        spec,
        facts: Facts {
            batch_text: format!("{} records per COPY", s.batch_size),
            histogram_note: format!("batch ({} records)", s.batch_size),
            ..Facts::new(spec, table.clone())
        },
        table,
        settings: s.clone(),
        ycsb,
    }))
}

struct Load {
    spec: &'static Spec,
    facts: Facts,
    table: TableName,
    settings: Settings,
    ycsb: YcsbSettings,
}

impl Workload for Load {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &USERTABLE
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let table = std::slice::from_ref(&self.table);
            schema::require_privileges(client, table, &["INSERT"], self.spec.name).await?;
            schema::truncate(client, &self.table).await?;
            schema::mark_loading(client, &self.table).await
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(schema::mark_loaded(client, &self.table, rows))
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        Box::new(CopyLoad::new(
            format!(
                "copy {} (ycsb_key, {}) from stdin",
                self.table.quoted(),
                field_list(self.ycsb.field_count)
            ),
            s.share(s.rows, thread),
            s.batch_size,
            Records {
                seed: s.seed,
                fields: self.ycsb.field_count,
                field_len: self.ycsb.field_length,
            },
        ))
    }
}

/// usertable's records, as COPY lines.
struct Records {
    seed: u64,
    pub(super) fields: usize,
    pub(super) field_len: usize,
}

impl Lines for Records {
    fn line(&self, n: u64, out: &mut Vec<u8>) {
        record_line(self.seed, n, self.fields, self.field_len, out);
    }

    fn line_bytes(&self) -> usize {
        self.fields * (self.field_len + 1) + 24
    }

    fn what(&self) -> &'static str {
        "records"
    }
}

/// Appends record `n` as a COPY text line; its fields are a pure function
/// of (seed, n), so a seeded load is the same whatever the threads.
fn record_line(seed: u64, n: u64, fields: usize, field_len: usize, out: &mut Vec<u8>) {
    let mut rng = SmallRng::seed_from_u64(worker_seed(seed, n as usize, 7));
    out.extend_from_slice(key_of(n).as_bytes());
    for _ in 0..fields {
        out.push(b'\t');
        fill_alphanumeric(&mut rng, out, field_len);
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_line_is_the_same_for_the_same_seed() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        record_line(7, 42, 3, 5, &mut a);
        record_line(7, 42, 3, 5, &mut b);
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        assert_eq!(text.matches('\t').count(), 3);
        assert!(text.starts_with(&key_of(42)));
        assert_eq!(text.len(), key_of(42).len() + 3 * 6 + 1);
    }
}
