//! Statements sent as the unnamed statement: Parse, Bind, Describe,
//! Execute and Sync in one message, one round trip, nothing left behind.
//!
//! Why: tokio-postgres's `query`, `query_one`, `execute` and `copy_in` on
//! SQL text prepare a *named* statement (`s0`, `s1`, …, numbered afresh in
//! every process), run it, and close it with a later message. Through a
//! pooler in transaction mode (PgBouncer before 1.21) each Sync may hand
//! the client another server connection: the name can be missing where the
//! statement runs (26000), and a name left on a server connection collides
//! with the next process that counts from `s0` and lands there (42P05).
//! The unnamed statement is replaced by the next Parse on whatever server
//! connection it is on, so nothing outlives the round trip; it also costs
//! one round trip where the named one costs two and a close.
//!
//! So every statement of the tool's own (table checks and marks, the
//! barrier of several clients, counts, consistency checks, the server
//! statistics' queries) goes this way, `--no-prepared` or not. A
//! workload's statements are prepared once per connection unless
//! `--no-prepared` says otherwise: [`Stmt`] is one of them either way.
//!
//! The unnamed statement declares its parameters' types in its Parse;
//! [`Param`] takes them from the Rust values, so the SQL sees `$1` as the
//! type of what is bound to it (casts in the SQL text still apply). The
//! result columns must be of built-in types: an unknown type makes
//! tokio-postgres look it up with a named statement of its own.
//!
//! COPY is the one exception: tokio-postgres has no unnamed COPY, so
//! [`crate::workload::kit::copy_in::copy_in`] parses it, named, inside the
//! transaction that runs it, where the pooler keeps one server connection
//! until the statement is closed.

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Error, Row, Statement};

/// A value bound to a parameter, with the type the Parse declares for it.
pub trait Param: ToSql + Sync {
    fn pg_type(&self) -> Type;
}

macro_rules! param {
    ($($t:ty => $pg:ident),* $(,)?) => {
        $(impl Param for $t {
            fn pg_type(&self) -> Type {
                Type::$pg
            }
        })*
    };
}

param! {
    bool => BOOL,
    i16 => INT2,
    i32 => INT4,
    i64 => INT8,
    f64 => FLOAT8,
    String => TEXT,
    &str => TEXT,
    Option<&str> => TEXT,
    Option<String> => TEXT,
    Vec<i32> => INT4_ARRAY,
    Vec<i64> => INT8_ARRAY,
    Vec<f64> => FLOAT8_ARRAY,
    Vec<String> => TEXT_ARRAY,
}

fn typed<'a>(params: &[&'a dyn Param]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|p| (*p as &(dyn ToSql + Sync), p.pg_type()))
        .collect()
}

fn untyped<'a>(params: &[&'a dyn Param]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| *p as &(dyn ToSql + Sync)).collect()
}

/// The rows of `sql`.
pub async fn query(client: &Client, sql: &str, params: &[&dyn Param]) -> Result<Vec<Row>, Error> {
    client.query_typed(sql, &typed(params)).await
}

/// The one row of `sql`; an error when it returns none or several.
pub async fn query_one(client: &Client, sql: &str, params: &[&dyn Param]) -> Result<Row, Error> {
    client.query_typed_one(sql, &typed(params)).await
}

/// The row of `sql` if it returns one; an error when it returns several.
pub async fn query_opt(
    client: &Client,
    sql: &str,
    params: &[&dyn Param],
) -> Result<Option<Row>, Error> {
    client.query_typed_opt(sql, &typed(params)).await
}

/// Runs `sql`; the rows it changed.
pub async fn execute(client: &Client, sql: &str, params: &[&dyn Param]) -> Result<u64, Error> {
    client.execute_typed(sql, &typed(params)).await
}

/// A statement a workload sends many times: prepared once per connection,
/// or with `--no-prepared` its text sent as the unnamed statement each
/// time (for a workload whose statements need binary parameters, where
/// literals in the text would not do).
pub enum Stmt {
    Prepared(Statement),
    Unnamed(String),
}

impl Stmt {
    /// Prepares `sql` on `client` when `prepared`, else keeps its text.
    pub async fn new(client: &Client, sql: String, prepared: bool) -> Result<Stmt, Error> {
        Ok(if prepared {
            Stmt::Prepared(client.prepare(&sql).await?)
        } else {
            Stmt::Unnamed(sql)
        })
    }

    pub async fn query(&self, client: &Client, params: &[&dyn Param]) -> Result<Vec<Row>, Error> {
        match self {
            Stmt::Prepared(st) => client.query(st, &untyped(params)).await,
            Stmt::Unnamed(sql) => query(client, sql, params).await,
        }
    }

    pub async fn query_one(&self, client: &Client, params: &[&dyn Param]) -> Result<Row, Error> {
        match self {
            Stmt::Prepared(st) => client.query_one(st, &untyped(params)).await,
            Stmt::Unnamed(sql) => query_one(client, sql, params).await,
        }
    }

    pub async fn query_opt(
        &self,
        client: &Client,
        params: &[&dyn Param],
    ) -> Result<Option<Row>, Error> {
        match self {
            Stmt::Prepared(st) => client.query_opt(st, &untyped(params)).await,
            Stmt::Unnamed(sql) => query_opt(client, sql, params).await,
        }
    }

    pub async fn execute(&self, client: &Client, params: &[&dyn Param]) -> Result<u64, Error> {
        match self {
            Stmt::Prepared(st) => client.execute(st, &untyped(params)).await,
            Stmt::Unnamed(sql) => execute(client, sql, params).await,
        }
    }
}
