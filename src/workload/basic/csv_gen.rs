//! The CSV files that `copy-file` loads, as `csv_generator` writes them.
//!
//! One file per thread, holding exactly the ids that thread would load
//! (the same partitioning as every load) and the same rows copy-mem would
//! send for the same seed. Files are written in parallel, through a large
//! buffer, under a temporary name that is renamed when complete, so a file
//! with the final name is never a partial one.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::copy_file::csv_path;
use crate::error::{Error, Result};
use crate::workload::kit::partition::thread_range;
use crate::workload::kit::rowgen::RowGen;

/// Bytes generated before each write.
const CHUNK: usize = 1 << 20;

/// What to generate.
#[derive(Clone, Debug)]
pub struct CsvSpec {
    pub dir: PathBuf,
    pub rows: u64,
    pub threads: usize,
    pub field_len: usize,
    pub seed: u64,
    /// How many files are written at once.
    pub parallel: usize,
}

/// Writes all the files; returns their paths and the bytes written.
pub fn write_all(spec: &CsvSpec) -> Result<(Vec<PathBuf>, u64)> {
    if !spec.dir.is_dir() {
        return Err(Error::usage(format!(
            "{} is not a directory: create it or pick another with -d",
            spec.dir.display()
        )));
    }
    let parallel = spec.parallel.clamp(1, spec.threads.max(1));
    let results: Vec<Result<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..parallel)
            .map(|w| {
                s.spawn(move || {
                    let mut bytes = 0;
                    for t in (w..spec.threads).step_by(parallel) {
                        bytes += write_one(spec, t)?;
                    }
                    Ok(bytes)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::run("a writer thread panicked")))
            })
            .collect()
    });
    let mut total = 0;
    for r in results {
        total += r?;
    }
    let paths = (1..=spec.threads)
        .map(|n| csv_path(&spec.dir, spec.threads, spec.rows, spec.field_len, n))
        .collect();
    Ok((paths, total))
}

/// Writes thread `t`'s (0-based) file; returns its size.
fn write_one(spec: &CsvSpec, t: usize) -> Result<u64> {
    let path = csv_path(&spec.dir, spec.threads, spec.rows, spec.field_len, t + 1);
    let tmp = temp_name(&path);
    let ctx = |what: &str| format!("cannot {what} {}", tmp.display());
    let file = File::create(&tmp).map_err(|e| Error::io(ctx("create"), e))?;
    let mut out = BufWriter::with_capacity(CHUNK, file);
    let rows = RowGen::new(spec.seed, spec.field_len);
    let mut buf = Vec::with_capacity(CHUNK + 4 * spec.field_len + 32);
    let mut bytes = 0u64;
    for id in thread_range(spec.rows, spec.threads, t) {
        rows.csv_row(id, &mut buf);
        if buf.len() >= CHUNK {
            out.write_all(&buf)
                .map_err(|e| Error::io(ctx("write"), e))?;
            bytes += buf.len() as u64;
            buf.clear();
        }
    }
    out.write_all(&buf)
        .map_err(|e| Error::io(ctx("write"), e))?;
    bytes += buf.len() as u64;
    out.flush().map_err(|e| Error::io(ctx("write"), e))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(
            format!("cannot rename {} to {}", tmp.display(), path.display()),
            e,
        )
    })?;
    Ok(bytes)
}

fn temp_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hold_every_id_once_with_the_seeded_rows() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CsvSpec {
            dir: dir.path().to_path_buf(),
            rows: 1001,
            threads: 3,
            field_len: 7,
            seed: 9,
            parallel: 2,
        };
        let (paths, bytes) = write_all(&spec).unwrap();
        assert_eq!(paths.len(), 3);
        let mut ids = Vec::new();
        let mut size = 0;
        let rowgen = RowGen::new(9, 7);
        for p in &paths {
            let text = std::fs::read(p).unwrap();
            size += text.len() as u64;
            let mut r = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(&text[..]);
            for rec in r.records() {
                let rec = rec.unwrap();
                assert_eq!(rec.len(), 5);
                let id: u64 = rec[0].parse().unwrap();
                let mut expect = Vec::new();
                rowgen.csv_row(id, &mut expect);
                let line = format!("{}\n", rec.iter().collect::<Vec<_>>().join(","));
                assert_eq!(line.as_bytes(), &expect[..]);
                ids.push(id);
            }
        }
        assert_eq!(size, bytes);
        assert_eq!(ids, (0..1001).collect::<Vec<_>>());
        // No partial files are left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_missing_directory_is_a_usage_error() {
        let spec = CsvSpec {
            dir: PathBuf::from("/nonexistent/dir"),
            rows: 1,
            threads: 1,
            field_len: 1,
            seed: 0,
            parallel: 1,
        };
        assert!(matches!(write_all(&spec), Err(Error::Usage(_))));
    }
}
