//! `copy-file`: thread n runs one server-side `COPY ... FROM '<file>'` of
//! the CSV file csv_generator made for it.
//!
//! The files are read by the server process, so they must be on the
//! database server's host and readable by it, and the role needs
//! superuser or pg_read_server_files. Both failures are turned into a
//! message that says which file or role and what to do.

use std::path::{Path, PathBuf};

use tokio_postgres::Client;

use super::insert::command_rows;
use super::partition::thread_range;
use super::{Operation, Outcome};
use crate::config::{RunPlan, quote_literal};
use crate::error::{Error, Result, describe_pg};

/// The file name for thread `n` (1-based) of `threads`, as csv_generator
/// writes it: `ysql_bench-t{T}-r{R}-f{F}--nr{n}.csv`.
pub fn csv_file_name(threads: usize, rows: u64, field_len: usize, n: usize) -> String {
    format!("ysql_bench-t{threads}-r{rows}-f{field_len}--nr{n}.csv")
}

/// The path of thread `n`'s (1-based) file in `dir`.
pub fn csv_path(dir: &Path, threads: usize, rows: u64, field_len: usize, n: usize) -> PathBuf {
    dir.join(csv_file_name(threads, rows, field_len, n))
}

pub struct CopyFile {
    table: String,
    path: PathBuf,
    expected_rows: u64,
    staged: bool,
    generator_hint: String,
}

impl CopyFile {
    pub fn new(plan: &RunPlan, thread: usize) -> Self {
        let range = thread_range(plan.rows, plan.threads, thread);
        CopyFile {
            table: plan.table.quoted(),
            path: csv_path(
                &plan.csv_dir,
                plan.threads,
                plan.rows,
                plan.field_len,
                thread + 1,
            ),
            expected_rows: range.end - range.start,
            staged: false,
            generator_hint: format!(
                "csv_generator -r {} -t {} -f {} -d {}",
                plan.rows,
                plan.threads,
                plan.field_len,
                plan.csv_dir.display()
            ),
        }
    }

    fn explain(&self, e: tokio_postgres::Error) -> Error {
        let file = self.path.display();
        match e.code().map(|c| c.code()) {
            Some("58P01") => Error::run(format!(
                "copy-file: the server cannot find {file}: make the files on the database server's host with `{}`",
                self.generator_hint
            )),
            Some("42501") => Error::run(format!(
                "copy-file: the role may not read server files ({}): grant it with `grant pg_read_server_files to <role>` or connect as a superuser",
                describe_pg(&e)
            )),
            _ => Error::db(format!("COPY FROM '{file}' failed"), e),
        }
    }
}

impl Operation for CopyFile {
    async fn prepare(&mut self, _client: &Client) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        !std::mem::replace(&mut self.staged, true)
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!("file {}", self.path.display()))
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        let sql = format!(
            "copy {} (id, f1, f2, f3, f4) from {} with (format csv)",
            self.table,
            quote_literal(&self.path.to_string_lossy())
        );
        let rows = command_rows(
            &client
                .simple_query(&sql)
                .await
                .map_err(|e| self.explain(e))?,
        );
        if rows != self.expected_rows {
            return Err(Error::run(format!(
                "copy-file: {} held {rows} rows where {} were expected: remake it with `{}`",
                self.path.display(),
                self.expected_rows,
                self.generator_hint
            )));
        }
        Ok(Outcome { rows, missing: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_follow_the_original_pattern() {
        assert_eq!(
            csv_path(Path::new("/tmp"), 4, 1000, 24, 2),
            PathBuf::from("/tmp/ysql_bench-t4-r1000-f24--nr2.csv")
        );
    }
}
