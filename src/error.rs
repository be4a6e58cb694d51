//! The one error type of the tool and the exit code each kind maps to.
//!
//! Two kinds matter to a user: bad input (exit 2: nothing was run, fix the
//! command line) and a failed run (exit 1: something ran and went wrong);
//! a third, a run that went right and missed its `--slo` (exit 3), is no
//! error of the run but a verdict on it.
//! Every variant carries the context a user needs to act on it (which
//! operation, which file, which SQLSTATE); it is printed once, by `main`.

use std::fmt::Write as _;

/// Exit code of a successful run.
pub const EXIT_OK: i32 = 0;
/// Exit code of a run that started and failed.
pub const EXIT_FAILED: i32 = 1;
/// Exit code of bad usage: nothing was run.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of a run, merge or comparison that missed its service-level
/// objectives (`--slo`, `merge --slo`, `compare --fail-if`): distinct
/// from a failed run, so that a CI job tells a slow build from a broken one.
pub const EXIT_SLO: i32 = 3;
/// Exit code after an interrupt (128 + SIGINT), as shells report it.
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: one line saying what is wrong and how to fix it.
    #[error("{0}")]
    Usage(String),
    /// A server error, with what the tool was doing when it happened.
    #[error("{context}: {}", describe_pg(.source))]
    Db {
        context: String,
        #[source]
        source: tokio_postgres::Error,
    },
    /// A failure of the lean driver (`db::wire`), phrased as the same
    /// failure of tokio-postgres would be. The driver's own error type
    /// lives with the driver; this layer sees it through [`DriverFailure`],
    /// so that the error type imports nothing of the crate.
    #[error("{context}: {failure}")]
    Wire {
        context: String,
        failure: Box<dyn DriverFailure>,
    },
    /// A local I/O error (files, processes), with the path or action.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Any other failure of the run, already phrased for the user.
    #[error("{0}")]
    Run(String),
    /// A pipelined unit that failed with its batch (`--pipeline-sync`
    /// above 1): the batch is one transaction, and another unit of it
    /// failed, so this one was rolled back or never run. Its own class of
    /// error, so that one server error is not counted as several; made by
    /// [`Error::batch`], it answers [`Error::sqlstate`] and
    /// [`Error::lost_connection`] as the batch's failure does, so that the
    /// retry policy and the end of the run treat the whole batch alike.
    /// Boxed, so that the error, which every unit's result and future
    /// carries, stays as small as it was (a script unit's future must fit
    /// glibc's per-thread cache: see `workload::pgbench::script`).
    #[error("{}", .0.why)]
    Batch(Box<BatchFailure>),
    /// A script's own failure, found by the client and not the server: a
    /// variable no line had set, an expression's error, a `\gset` that did
    /// not get its one row. pgbench aborts the client on each of them; here
    /// the run stops at the first (see [`Error::ends_run`]), instead of
    /// counting the same failure as fast as the script can repeat it.
    #[error("{0} (a script error: the run stopped at the first one, as pgbench aborts the client)")]
    Script(String),
    /// A merge or comparison that missed its objectives (`merge --slo`,
    /// `compare --fail-if`): which criterion, with its value. Exit 3.
    #[error("{0}")]
    Slo(String),
    /// Ctrl-C or SIGTERM before the first operation started.
    #[error("interrupted before the first operation started ({0}); nothing was written")]
    Interrupted(&'static str),
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    pub fn run(msg: impl Into<String>) -> Self {
        Error::Run(msg.into())
    }

    pub fn script(msg: impl Into<String>) -> Self {
        Error::Script(msg.into())
    }

    pub fn db(context: impl Into<String>, source: tokio_postgres::Error) -> Self {
        Error::Db {
            context: context.into(),
            source,
        }
    }

    pub fn wire(context: impl Into<String>, source: impl DriverFailure) -> Self {
        Error::Wire {
            context: context.into(),
            failure: Box::new(source),
        }
    }

    /// A unit that failed with its pipeline batch (see [`Error::Batch`]),
    /// for `why`, which `cause` (the failure of another unit of the batch)
    /// follows in its message.
    pub fn batch(why: &str, cause: &Error) -> Self {
        Error::Batch(Box::new(BatchFailure {
            why: format!("{why}: {cause}"),
            sqlstate: cause.sqlstate().map(str::to_string),
            lost: cause.lost_connection(),
        }))
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            Error::Interrupted(_) => EXIT_INTERRUPTED,
            Error::Slo(_) => EXIT_SLO,
            _ => EXIT_FAILED,
        }
    }

    /// Whether every later unit on any connection would fail the same way,
    /// so that the operation should stop at once rather than count the
    /// same error until its time is up: a prepared statement that the
    /// server does not know (SQLSTATE 26000), which is what a pooler in
    /// transaction mode (PgBouncer before 1.21) does to prepared statements;
    /// and a script's own error ([`Error::Script`]), a bug of the script
    /// that a client repeats at full speed without waiting for a server
    /// (a misspelt variable failed 8 million times in 3 s at 100% CPU).
    pub fn ends_run(&self) -> bool {
        matches!(self, Error::Script(_))
            || matches!(
                self.sqlstate(),
                Some(PREPARED_STATEMENT_GONE | PREPARED_STATEMENT_TAKEN)
            )
    }

    /// Whether the connection is gone or going: closed under us, or the
    /// server said it is shutting down or restarting (57P01..57P03) or the
    /// link failed (class 08). Right after a 57P01 the connection may not
    /// show itself closed yet; the next unit on it would fail too.
    pub fn lost_connection(&self) -> bool {
        match self {
            Error::Db { source, .. } => {
                source.is_closed()
                    || source
                        .code()
                        .is_some_and(|c| c.code().starts_with("57P0") || c.code().starts_with("08"))
            }
            Error::Wire {
                failure: source, ..
            } => {
                source.is_closed()
                    || source
                        .sqlstate()
                        .is_some_and(|c| c.starts_with("57P0") || c.starts_with("08"))
            }
            Error::Batch(b) => b.lost,
            _ => false,
        }
    }

    /// The SQLSTATE of a server error, if this is one (for a unit that
    /// failed with its pipeline batch, the batch's failure's).
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            Error::Db { source, .. } => source.code().map(|c| c.code()),
            Error::Wire {
                failure: source, ..
            } => source.sqlstate(),
            Error::Batch(b) => b.sqlstate.as_deref(),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What [`Error::Batch`] keeps of a unit failed with its batch.
#[derive(Debug)]
pub struct BatchFailure {
    why: String,
    /// The SQLSTATE of the failure that ended the batch.
    sqlstate: Option<String>,
    /// That failure was the connection's loss.
    lost: bool,
}

/// What the error type needs of a driver's own error: its SQLSTATE and
/// whether the connection is gone. The lean driver's `WireError`
/// implements it; a caller that needs the driver's own variants downcasts
/// (`&dyn DriverFailure as &dyn Any`).
pub trait DriverFailure: std::error::Error + Send + Sync + std::any::Any {
    /// The SQLSTATE of a server error.
    fn sqlstate(&self) -> Option<&str>;
    /// Whether the connection is gone (closed, reset, broken).
    fn is_closed(&self) -> bool;
}

/// SQLSTATE invalid_sql_statement_name: "prepared statement ... does not
/// exist".
pub const PREPARED_STATEMENT_GONE: &str = "26000";

/// SQLSTATE duplicate_prepared_statement: "prepared statement "s1"
/// already exists", the other face of the same pooler: a server connection
/// that another client already prepared its statements on.
pub const PREPARED_STATEMENT_TAKEN: &str = "42P05";

/// What to do about SQLSTATE 26000 and 42P05, appended to their message.
pub const PREPARED_STATEMENT_HINT: &str = "a pooler in transaction mode (PgBouncer before 1.21) hands each transaction any server connection, so a prepared statement may be missing or already taken there; run with --no-prepared, which leaves nothing prepared there (a name taken under it was left by another client: RECONNECT on the pooler's console closes its server connections)";

/// What a login that needs a password and has none is told: every way
/// there is to give one.
pub const NO_PASSWORD: &str = "the server asks for a password and none was given: add password=... to -u, set PGPASSWORD, or put a line for this host in a password file (~/.pgpass, or the file PGPASSFILE names)";

/// Whether tokio-postgres gave up a login because the server asked for a
/// password and the configuration has none (its "invalid configuration:
/// password missing", which says nothing of how to give one).
pub fn is_password_missing(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_none()
        && std::error::Error::source(e).is_some_and(|c| c.to_string() == "password missing")
}

/// One line for a tokio-postgres error: the SQLSTATE and the server's
/// message, detail and hint when the server sent them, otherwise the
/// client-side cause (connection refused, timeout, closed connection).
pub fn describe_pg(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return describe_db(db.message(), db.code().code(), db.detail(), db.hint());
    }
    if is_password_missing(e) {
        return NO_PASSWORD.to_string();
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !s.contains(&text) {
            let _ = write!(s, ": {text}");
        }
        source = cause.source();
    }
    s
}

/// One line for a server error: its message and SQLSTATE, then its detail
/// and hint when the server sent them (and what to do about a pooler that
/// loses prepared statements). Both drivers' errors read so.
pub fn describe_db(message: &str, code: &str, detail: Option<&str>, hint: Option<&str>) -> String {
    let mut s = format!("{message} (SQLSTATE {code})");
    if let Some(detail) = detail {
        let _ = write!(s, "; detail: {detail}");
    }
    if let Some(hint) = hint {
        let _ = write!(s, "; hint: {hint}");
    }
    if [PREPARED_STATEMENT_GONE, PREPARED_STATEMENT_TAKEN].contains(&code) {
        let _ = write!(s, "; {PREPARED_STATEMENT_HINT}");
    }
    s
}

/// The key under which an error is counted in the statistics: the SQLSTATE
/// for server errors, a short client-side class otherwise.
pub fn error_class(e: &tokio_postgres::Error) -> String {
    if let Some(code) = e.code() {
        return code.code().to_string();
    }
    if e.is_closed() {
        "connection-closed".to_string()
    } else {
        "client".to_string()
    }
}

/// [`error_class`] of a lean driver's error: the same keys.
pub fn wire_error_class(e: &dyn DriverFailure) -> String {
    if let Some(code) = e.sqlstate() {
        return code.to_string();
    }
    if e.is_closed() {
        "connection-closed".to_string()
    } else {
        "client".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unit's result and future carries an `Error`: a variant that
    /// grows it grows them all (a script unit's future once went past
    /// glibc's per-thread cache by 48 bytes this way). Large payloads go
    /// in a box, as [`Error::Batch`]'s does.
    #[test]
    fn the_error_stays_small() {
        assert!(
            std::mem::size_of::<Error>() <= 40,
            "Error is {} bytes",
            std::mem::size_of::<Error>()
        );
    }
}
