//! The tables of a workload family: how a run checks, creates and refuses
//! them before any workload starts.

use tokio_postgres::Client;

use super::{BoxFuture, Settings};
use crate::db::dialect::Flavor;
use crate::db::schema::{self, TableDef};
use crate::db::sql::TableName;
use crate::error::Result;

/// The [`TableSet`] of a workload family, described by its tables: each
/// is created when missing and refused when it is not the tool's (see
/// [`schema::prepare_table`]).
pub struct Tables {
    pub key: &'static str,
    pub loader: &'static str,
    /// The tables, with their DDL for the server's flavour.
    pub defs: fn(&Settings, Flavor) -> Result<Vec<TableDef>>,
    /// The tables a complete load leaves empty (booking's seats, pgbench's
    /// history): a query refuses them missing, not empty.
    pub left_empty: &'static [&'static str],
    /// See [`TableSet::load_flags`].
    pub load_flags: fn(&Settings) -> Vec<String>,
}

impl TableSet for Tables {
    fn key(&self) -> &'static str {
        self.key
    }

    fn loader(&self) -> &'static str {
        self.loader
    }

    fn reads(&self, s: &Settings) -> Result<Vec<ReadTable>> {
        // The names alone: the flavour only changes the DDL.
        Ok((self.defs)(s, Flavor::Postgres)?
            .into_iter()
            .map(|d| ReadTable {
                holds_rows: !self.left_empty.contains(&d.name.as_str()),
                name: d.name,
            })
            .collect())
    }

    fn load_flags(&self, s: &Settings) -> Vec<String> {
        (self.load_flags)(s)
    }

    fn prepare<'a>(
        &'a self,
        client: &'a Client,
        s: &'a Settings,
        flavor: Flavor,
        how: TableUse,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for def in (self.defs)(s, flavor)? {
                schema::prepare_table(client, &def, s.drop, s.force, how.written, how.filled)
                    .await?;
            }
            Ok(())
        })
    }
}

/// `-r N`: the rows a load writes and the queries look up.
pub fn rows_flag(s: &Settings) -> Vec<String> {
    vec![format!("-r {}", s.rows)]
}

/// A table a query workload reads, as checked before a run that does not
/// load it first (see [`TableSet::reads`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadTable {
    pub name: TableName,
    /// Whether a complete load leaves rows in it, so that an empty one
    /// means it was never loaded (and is refused as a missing one is).
    pub holds_rows: bool,
}

/// How the run uses a set of tables, for [`TableSet::prepare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableUse {
    /// A load of the run fills them: missing ones are created (and with
    /// `--drop`, existing ones dropped first). Otherwise only queries
    /// read them, and nothing is created or dropped.
    pub filled: bool,
    /// A workload of the run writes into them (a table that is not the
    /// tool's is then refused without `--force`).
    pub written: bool,
}

/// A set of tables that one or more workloads use.
pub trait TableSet: Sync {
    /// Tells sets apart: workloads with the same key share their tables.
    fn key(&self) -> &'static str;

    /// The workload of `-o` that loads these tables, for advice such as
    /// "load it first with -o copy-mem,select".
    fn loader(&self) -> &'static str;

    /// The tables the set's query workloads read. A run whose query comes
    /// before any load of the set refuses, before anything is created or
    /// written, when one is missing or (if a load leaves rows in it)
    /// empty: every lookup would miss, and the run still end "well".
    /// None by default: the tables of a set that does not say are not
    /// the tool's to know (a user's scripts).
    fn reads(&self, _settings: &Settings) -> Result<Vec<ReadTable>> {
        Ok(Vec::new())
    }

    /// The flags of this run that the loader needs to fill what the
    /// queries read, as a command line gives them ("--tables 7", "-r
    /// 1000"): the advice to load first repeats them, so that the load
    /// fills exactly what the query will look for.
    fn load_flags(&self, _settings: &Settings) -> Vec<String> {
        Vec::new()
    }

    /// Creates the tables when a load of the run fills them (dropping
    /// them first with `--drop`), and refuses any that is not the tool's
    /// before anything is written (see [`TableUse`]).
    fn prepare<'a>(
        &'a self,
        client: &'a Client,
        settings: &'a Settings,
        flavor: Flavor,
        how: TableUse,
    ) -> BoxFuture<'a, Result<()>>;
}
