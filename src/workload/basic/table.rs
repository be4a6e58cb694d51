//! `test_table` and what its six operations share: the table set, and one
//! generic [`Workload`] that each operation plugs into with [`TableOp`].
//!
//! The six operations (insert, copy-mem, copy-file, procedure, select,
//! update) work on one table, `id int primary key, f1..f4 text`, created
//! and checked once per run. Loads empty it and mark it as loading before
//! their workers start, and as loaded with N rows when they end; queries
//! read that mark to warn about a table that holds fewer rows than `-r`.

use std::marker::PhantomData;

use tokio_postgres::Client;

use crate::db::dialect::{self, COLUMNS};
use crate::db::schema::{self, TableDef};
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::{
    BoxFuture, Facts, Operation, Role, Settings, Spec, TableSet, Tables, Workload,
};

/// The default name of the table.
pub const DEFAULT_TABLE: &str = "test_table";

/// The table of `settings`.
pub fn table_name(s: &Settings) -> Result<TableName> {
    TableName::new(s.table_name.as_deref().unwrap_or(DEFAULT_TABLE))
}

/// test_table, the one table of the six operations.
pub static TEST_TABLE: Tables = Tables {
    key: DEFAULT_TABLE,
    loader: "copy-mem",
    defs: |s, flavor| {
        let table = table_name(s)?;
        Ok(vec![TableDef {
            ddl: dialect::create_table(flavor, &table, s.tablets),
            name: table,
            columns: COLUMNS
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
            shape: "id integer, f1..f4 text",
        }])
    },
    left_empty: &[],
    load_flags: crate::workload::rows_flag,
};

/// `-o table-cleanup`.
pub static CLEANUP: Spec = crate::workload::kit::cleanup::spec(
    "table-cleanup",
    "drop test_table (or --table-name) and the procedure's functions, if ysql-bench created them",
    |spec, s| crate::workload::kit::cleanup::build(spec, s, Some(&FAMILY), &[]),
);

/// The family's tables, as the clean-ups know them.
pub static FAMILY: crate::workload::kit::cleanup::Family = crate::workload::kit::cleanup::Family {
    name: "test_table",
    tables: &TEST_TABLE,
    more: None,
    routines: true,
};

/// One operation on test_table, as [`OnTestTable`] needs it.
pub trait TableOp: Operation + Sized {
    /// Checks the flags this operation cares about.
    fn check(_s: &Settings) -> Result<()> {
        Ok(())
    }

    /// The operation of worker `thread`.
    fn new(s: &Settings, table: &TableName, thread: usize) -> Self;

    /// For a load: checks and set-up made before the table is emptied, so
    /// that a missing input or a set-up that cannot be made costs nothing.
    fn before_truncate<'a>(
        _client: &'a Client,
        _s: &'a Settings,
        _table: &'a TableName,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Whether its units are single statements that `--pipeline` may keep
    /// several in flight ([`Facts::pipelines`]).
    const PIPELINES: bool = false;

    /// The summary's `batch` line.
    fn batch_text(s: &Settings) -> String {
        s.batch_size.to_string()
    }

    /// What one unit is, over the latency histogram.
    fn histogram_note(_s: &Settings, unit: &str) -> String {
        unit.to_string()
    }
}

/// Builds the workload of `spec` for operation `O`: the `build` of each
/// operation's [`Spec`].
pub fn build<O: TableOp>(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    crate::workload::kit::limits::check_table_shape(s.rows, s.field_len)?;
    O::check(s)?;
    if spec.role == Role::Query && s.rows == 0 {
        return Err(Error::usage(format!(
            "--rows 0 leaves {spec} nothing to read: give the number of rows in the table, e.g. -r 100000"
        )));
    }
    let table = table_name(s)?;
    Ok(Box::new(OnTestTable::<O> {
        spec,
        facts: Facts {
            batch_text: O::batch_text(s),
            histogram_note: O::histogram_note(s, spec.unit),
            pipelines: O::PIPELINES,
            ..Facts::new(spec, table.clone())
        },
        table,
        settings: s.clone(),
        op: PhantomData,
    }))
}

/// A workload on test_table whose workers run `O`.
pub struct OnTestTable<O> {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    table: TableName,
    op: PhantomData<fn() -> O>,
}

impl<O: TableOp> Workload for OnTestTable<O> {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &TEST_TABLE
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if !self.spec.is_load() {
                return Ok(());
            }
            // Whatever can tell now that the load cannot fill the table
            // is asked before it is emptied.
            schema::require_privileges(
                client,
                std::slice::from_ref(&self.table),
                &["INSERT"],
                self.spec.name,
            )
            .await?;
            O::before_truncate(client, &self.settings, &self.table).await?;
            schema::truncate(client, &self.table).await?;
            schema::mark_loading(client, &self.table).await
        })
    }

    fn check_loaded<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let kind = self.spec.name;
            let rows = self.settings.rows;
            let t = self.table.quoted();
            let state = schema::load_state(client, &self.table).await?;
            let empty = state == schema::LoadState::Unknown
                && schema::is_empty(client, &self.table).await?;
            Ok(match state {
                _ if empty => Some(format!(
                    "{t} is empty: {kind} will find every row missing; load it first, e.g. -o copy-mem,{kind}"
                )),
                schema::LoadState::Incomplete => Some(format!(
                    "the last load of {t} did not finish: {kind} will find rows missing; load it again first"
                )),
                schema::LoadState::Loaded(n) if n != rows => Some(format!(
                    "{t} was loaded with {n} rows but --rows is {rows}: {kind} will {}",
                    if n < rows {
                        "find rows missing"
                    } else {
                        "touch only part of the table"
                    }
                )),
                _ => None,
            })
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(schema::mark_loaded(client, &self.table, rows))
    }

    fn worker(&self, thread: usize) -> Box<dyn crate::workload::DynOperation> {
        Box::new(O::new(&self.settings, &self.table, thread))
    }
}

/// The histogram note of a load with one unit per thread (copy-file and
/// procedure): its whole share.
pub fn one_per_thread_note(s: &Settings, unit: &str) -> String {
    format!(
        "{unit} (one per thread, {} rows each or one more)",
        s.rows / s.threads.max(1) as u64
    )
}
