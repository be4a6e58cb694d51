//! `copy-file`: thread n runs one server-side `COPY ... FROM '<file>'` of
//! the CSV file csv_generator made for it.
//!
//! The files are read by the server process, so they must be on the
//! database server's host and readable by it, and the role needs
//! superuser or pg_read_server_files. Both failures are turned into a
//! message that says which file or role and what to do, and both are
//! found before the table is emptied: the server reads the first line of
//! each file first, as the load will ([`check_files`]).
//!
//! Through haproxy, a PgBouncer or a host list with --load-balance, a
//! connection may land on any node: the files must then be on every node.
//! `--copy-file-client` instead reads the files here, on the client, and
//! streams them with `COPY ... FROM STDIN` (as psql's `\copy`), which
//! works wherever the connection lands and needs no server file access.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio_postgres::Client;

use crate::db::wire::{WireConn, WireError};

use crate::workload::kit::copy_in::copy_in;
use crate::workload::kit::simple_query::command_rows;

use super::table::{self, TableOp, one_per_thread_note};
use crate::db::sql::{TableName, quote_ident, quote_literal};
use crate::error::{Error, Result};
use crate::workload::{BoxFuture, Operation, Outcome, Role, Settings, Spec};

/// The file name for thread `n` (1-based) of `threads`, as csv_generator
/// writes it: `ysql_bench-t{T}-r{R}-f{F}--nr{n}.csv`.
pub fn csv_file_name(threads: usize, rows: u64, field_len: usize, n: usize) -> String {
    format!("ysql_bench-t{threads}-r{rows}-f{field_len}--nr{n}.csv")
}

/// The path of thread `n`'s (1-based) file in `dir`.
pub fn csv_path(dir: &Path, threads: usize, rows: u64, field_len: usize, n: usize) -> PathBuf {
    dir.join(csv_file_name(threads, rows, field_len, n))
}

/// Bytes read from a local file per message with --copy-file-client.
const READ_CHUNK: usize = 1 << 20;

/// copy-file's own settings.
#[derive(Clone, Debug, Default)]
pub struct CopyFileSettings {
    /// `--copy-file-client`: the files are read on this machine and
    /// streamed (COPY FROM STDIN).
    pub client: bool,
}

pub struct CopyFile {
    table: String,
    path: PathBuf,
    expected_rows: u64,
    staged: bool,
    generator_hint: String,
    /// --copy-file-client: stream the local file with COPY FROM STDIN.
    client_side: bool,
    /// The role the tool connects as, quoted, when known (for the advice
    /// to grant it pg_read_server_files).
    role: Option<String>,
}

/// `-o copy-file`.
pub static SPEC: Spec = Spec {
    name: "copy-file",
    aliases: &["copy_file"],
    about: "load: one COPY of a csv_generator file per thread",
    role: Role::Load,
    paced: false,
    writes: true,
    drops: false,
    unit: "file",
    units: "files",
    build: table::build::<CopyFile>,
};

impl TableOp for CopyFile {
    fn new(plan: &Settings, table: &TableName, thread: usize) -> Self {
        let range = plan.share(plan.rows, thread);
        CopyFile {
            table: table.quoted(),
            // Several clients read the files of one csv_generator run
            // for all their threads together.
            path: csv_path(
                &plan.csv_dir,
                plan.client.all_threads(plan.threads),
                plan.rows,
                plan.field_len,
                plan.client.global_thread(plan.threads, thread) + 1,
            ),
            expected_rows: range.end - range.start,
            staged: false,
            generator_hint: format!(
                "csv_generator -r {} -t {} -f {} -d {}",
                plan.rows,
                plan.client.all_threads(plan.threads),
                plan.field_len,
                plan.csv_dir.display()
            ),
            client_side: plan.family::<CopyFileSettings>().client,
            role: None,
        }
    }

    fn before_truncate<'a>(
        client: &'a Client,
        s: &'a Settings,
        table: &'a TableName,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(check_files(s, table, client))
    }

    fn batch_text(_s: &Settings) -> String {
        "one COPY of a whole file per thread".to_string()
    }

    fn histogram_note(s: &Settings, unit: &str) -> String {
        one_per_thread_note(s, unit)
    }
}

impl CopyFile {
    fn stdin_sql(&self) -> String {
        format!(
            "copy {} (id, f1, f2, f3, f4) from stdin with (format csv)",
            self.table
        )
    }

    /// --copy-file-client: reads the local file in chunks and sends them.
    async fn copy_from_client(&self, conn: &mut WireConn) -> Result<u64> {
        let file = self.path.display().to_string();
        let cannot_read = |e: std::io::Error| {
            Error::io(
                format!(
                    "copy-file --copy-file-client: cannot read {file} on this machine; make the files here with `{}`",
                    self.generator_hint
                ),
                e,
            )
        };
        let f = tokio::fs::File::open(&self.path)
            .await
            .map_err(cannot_read)?;
        let chunks = futures_util::stream::try_unfold(f, |mut f| async move {
            let mut buf = BytesMut::zeroed(READ_CHUNK);
            let n = f.read(&mut buf).await.map_err(|e| {
                Error::io("copy-file --copy-file-client: reading a CSV file failed", e)
            })?;
            if n == 0 {
                return Ok(None);
            }
            buf.truncate(n);
            Ok(Some((Bytes::from(buf), f)))
        });
        copy_in(conn, &self.stdin_sql(), chunks)
            .await
            .map_err(|e| match e {
                Error::Wire { failure, .. } => Error::Wire {
                    context: format!("COPY FROM STDIN of {file} failed"),
                    failure,
                },
                other => other,
            })
    }

    /// The server's error with what to do about it. It stays a server
    /// error, so that the failed COPY is counted under its SQLSTATE
    /// (58P01, 42501) like any other.
    fn explain(&self, e: tokio_postgres::Error) -> Error {
        let code = e.code().map(|c| c.code().to_string());
        let what = self.explanation(code.as_deref(), db_message(&e));
        Error::db(what, e)
    }

    /// As [`Self::explain`], for the error of the worker's connection.
    fn explain_wire(&self, e: WireError) -> Error {
        let message = e.as_db().map_or("", |d| d.message.as_str()).to_string();
        let what = self.explanation(e.code(), &message);
        Error::wire(what, e)
    }

    /// What to do about a failed COPY with SQLSTATE `code`.
    fn explanation(&self, code: Option<&str>, message: &str) -> String {
        let file = self.path.display();
        match code {
            Some("58P01") => format!(
                "copy-file: the server cannot find {file}: make the files on the database server's host with `{}`",
                self.generator_hint
            ),
            // The server process may not read the file (or a directory
            // on its path): the same SQLSTATE as a missing role privilege.
            Some("42501") if message.starts_with("could not open file") => {
                let dir = self.path.parent().unwrap_or(Path::new("/"));
                let dir = shell_word(&dir.to_string_lossy());
                format!(
                    "copy-file: the database server may not read {file}: make the files and the directories above them readable by the server's OS user, e.g. `chmod o+x {dir} && chmod o+r {dir}/*.csv`"
                )
            }
            Some("42501") if message.contains("pg_read_server_files") => format!(
                "copy-file: the role may not read server files: grant it with `grant pg_read_server_files to {}` or connect as a superuser",
                self.role.as_deref().unwrap_or("<the role you connect as>")
            ),
            // A data exception: the file holds what no csv_generator
            // file does.
            Some(c) if c.starts_with("22") => format!(
                "copy-file: {file} is not as csv_generator writes it: remake it with `{}`",
                self.generator_hint
            ),
            _ => format!("COPY FROM '{file}' failed"),
        }
    }
}

impl Operation for CopyFile {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        !std::mem::replace(&mut self.staged, true)
    }

    fn unit_label(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }

    /// One COPY of the thread's whole file; it commits all or nothing.
    fn long_unit(&self) -> bool {
        true
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        if self.client_side {
            let rows = self.copy_from_client(conn).await?;
            return self.check_rows(rows);
        }
        let sql = format!(
            "copy {} (id, f1, f2, f3, f4) from {} with (format csv)",
            self.table,
            quote_literal(&self.path.to_string_lossy())
        );
        let rows = conn
            .simple_query(&sql)
            .await
            .map_err(|e| self.explain_wire(e))?
            .affected;
        self.check_rows(rows)
    }
}

/// Before the table is emptied: every thread's file must be there and
/// readable by whoever reads it, so that a file the load cannot read does
/// not cost the table it would have replaced. With --copy-file-client the
/// files are opened here. Otherwise each is read by the server as the load
/// will read it (`CopyFile::probe`), which needs nothing the load itself
/// does not (superuser or pg_read_server_files, and INSERT on the table).
pub async fn check_files(s: &Settings, table: &TableName, client: &Client) -> Result<()> {
    let role = match s.family::<CopyFileSettings>().client {
        true => None,
        false => client
            .query_typed("select current_user::text", &[])
            .await
            .ok()
            .and_then(|rows| rows.first().map(|r| quote_ident(r.get(0)))),
    };
    for t in 0..s.threads {
        let mut file = CopyFile::new(s, table, t);
        file.role = role.clone();
        file.check_file(client).await?;
    }
    Ok(())
}

/// SQLSTATEs the probe of a file expects ([`CopyFile::probe`]):
/// division_by_zero, its own stop after the first row; syntax_error, a
/// server without `COPY ... WHERE` (PostgreSQL 11, YugabyteDB 2.x); and
/// bad_copy_file_format, "extra data after last expected column".
const DIVISION_BY_ZERO: &str = "22012";
const SYNTAX_ERROR: &str = "42601";
const BAD_COPY_FILE_FORMAT: &str = "22P04";

impl CopyFile {
    async fn check_file(&self, client: &Client) -> Result<()> {
        if self.client_side {
            let cannot_read = |e| {
                Error::io(
                    format!(
                        "copy-file --copy-file-client: cannot read {} on this machine; make the files here with `{}`",
                        self.path.display(),
                        self.generator_hint
                    ),
                    e,
                )
            };
            let f = std::fs::File::open(&self.path).map_err(cannot_read)?;
            let len = f.metadata().map_err(cannot_read)?.len();
            return self.check_not_empty(len);
        }
        self.probe(client).await
    }

    /// Has the server read the file's first row the way the load will:
    /// its COPY, with the same path, options, privileges and table, and a
    /// WHERE that divides by zero on the first row it parsed, so that no
    /// more than that row is read. Whatever else the server says (no such
    /// file, a directory, the OS user may not read it, the role may not
    /// read server files, a first line that is not a row) is what the
    /// load would meet after the truncate. Where COPY has no WHERE, the
    /// file goes into the `id` column alone, where csv_generator's first
    /// line fails at once on its extra fields (a first line that is not a
    /// row then passes, and fails the load). In a transaction that is
    /// rolled back, so that nothing is ever added.
    async fn probe(&self, client: &Client) -> Result<()> {
        let file = quote_literal(&self.path.to_string_lossy());
        let t = &self.table;
        let full = format!(
            "copy {t} (id, f1, f2, f3, f4) from {file} with (format csv) \
             where 1 / (0 * coalesce(id, 0)) = 0"
        );
        match try_copy(client, &full).await? {
            Err(e) if sqlstate(&e) == Some(DIVISION_BY_ZERO) => Ok(()),
            Err(e) if sqlstate(&e) == Some(SYNTAX_ERROR) => {
                let narrow = format!("copy {t} (id) from {file} with (format csv)");
                match try_copy(client, &narrow).await? {
                    Err(e) if sqlstate(&e) == Some(BAD_COPY_FILE_FORMAT) => Ok(()),
                    Err(e) => Err(self.explain(e)),
                    Ok(0) => self.check_not_empty(0),
                    Ok(_) => Err(Error::run(format!(
                        "copy-file: {} holds one field per line where csv_generator writes five: remake it with `{}`",
                        self.path.display(),
                        self.generator_hint
                    ))),
                }
            }
            Err(e) => Err(self.explain(e)),
            // No row reached the WHERE: the file holds none.
            Ok(rows) => self.check_not_empty(rows),
        }
    }

    /// An empty file where rows were expected would load nothing.
    fn check_not_empty(&self, len: u64) -> Result<()> {
        if len == 0 && self.expected_rows > 0 {
            return Err(Error::run(format!(
                "copy-file: {} is empty where {} rows were expected: remake it with `{}`",
                self.path.display(),
                self.expected_rows,
                self.generator_hint
            )));
        }
        Ok(())
    }

    fn check_rows(&self, rows: u64) -> Result<Outcome> {
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

/// Runs `sql` (a COPY) in a transaction that is rolled back: the outer
/// result is the tool's connection failing, the inner the COPY's own.
async fn try_copy(
    client: &Client,
    sql: &str,
) -> Result<std::result::Result<u64, tokio_postgres::Error>> {
    let ctx = "cannot check the copy-file files";
    client
        .batch_execute("begin")
        .await
        .map_err(|e| Error::db(ctx, e))?;
    let read = client.simple_query(sql).await.map(|m| command_rows(&m));
    client
        .batch_execute("rollback")
        .await
        .map_err(|e| Error::db(ctx, e))?;
    Ok(read)
}

/// `text` as one word of a POSIX shell: as it is when it holds nothing
/// the shell would read otherwise, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn sqlstate(e: &tokio_postgres::Error) -> Option<&str> {
    e.code().map(|c| c.code())
}

/// The server's message of a database error, or "".
fn db_message(e: &tokio_postgres::Error) -> &str {
    e.as_db_error().map(|d| d.message()).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_in_advice_is_one_shell_word() {
        assert_eq!(shell_word("/tmp/tmp.Ab1-x_y"), "/tmp/tmp.Ab1-x_y");
        assert_eq!(shell_word("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_word("/tmp/it's"), "'/tmp/it'\\''s'");
        assert_eq!(shell_word("/tmp/$x"), "'/tmp/$x'");
    }

    #[test]
    fn file_names_follow_the_original_pattern() {
        assert_eq!(
            csv_path(Path::new("/tmp"), 4, 1000, 24, 2),
            PathBuf::from("/tmp/ysql_bench-t4-r1000-f24--nr2.csv")
        );
    }
}
