//! A workload whose work is its consistency checks (`booking-check`,
//! `tpcc-check`): no set-up, no unit, the family's checks on a connection
//! of their own. A family gives its tables and its checks.

use tokio_postgres::Client;

use crate::db::sql::TableName;
use crate::error::Result;
use crate::workload::{BoxFuture, Check, DynOperation, NoUnits, Spec, TableSet, Workload};

/// A family's checks, run on one connection.
pub type Checks = for<'a> fn(&'a Client) -> BoxFuture<'a, Result<Vec<Check>>>;

/// The workload of a `-o …-check`.
pub struct CheckOnly {
    pub spec: &'static Spec,
    /// The family's tables, which the checks read.
    pub tables: &'static dyn TableSet,
    /// The table the run names (`--show-rowsize`).
    pub table: TableName,
    pub checks: Checks,
}

impl Workload for CheckOnly {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn tables(&self) -> &'static dyn TableSet {
        self.tables
    }

    fn set_up<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Its work is its checks: the summary says what they found, not a
    /// count of zero timed units.
    fn has_units(&self) -> bool {
        false
    }

    fn checks<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Vec<Check>>> {
        (self.checks)(client)
    }

    fn table(&self) -> &TableName {
        &self.table
    }

    fn worker(&self, _thread: usize) -> Box<dyn DynOperation> {
        Box::new(NoUnits)
    }
}
