//! A workload whose work is its consistency checks (`booking-check`,
//! `tpcc-check`): no set-up, no unit, the family's checks on a connection
//! of their own. A family gives its tables and its checks.

use tokio_postgres::Client;

use crate::db::sql::TableName;
use crate::error::Result;
use crate::workload::{BoxFuture, Check, DynOperation, Facts, NoUnits, Spec, TableSet, Workload};

/// A family's checks, run on one connection (a closure, so that they may
/// keep the flags that shape them: TPC-C's `--check-sample`).
pub type Checks =
    Box<dyn for<'a> Fn(&'a Client) -> BoxFuture<'a, Result<Vec<Check>>> + Send + Sync>;

/// The workload of a `-o …-check`.
pub struct CheckOnly {
    spec: &'static Spec,
    facts: Facts,
    tables: &'static dyn TableSet,
    checks: Checks,
}

impl CheckOnly {
    /// The check of `spec` on the family's `tables`; `table` is the one
    /// the run names (`--show-rowsize`).
    pub fn new(
        spec: &'static Spec,
        tables: &'static dyn TableSet,
        table: TableName,
        checks: impl for<'a> Fn(&'a Client) -> BoxFuture<'a, Result<Vec<Check>>> + Send + Sync + 'static,
    ) -> CheckOnly {
        CheckOnly {
            spec,
            // Its work is its checks: the summary says what they found,
            // not a count of zero timed units.
            facts: Facts {
                has_units: false,
                ..Facts::new(spec, table)
            },
            tables,
            checks: Box::new(checks),
        }
    }
}

impl Workload for CheckOnly {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        self.tables
    }

    fn set_up<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn checks<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Vec<Check>>> {
        (self.checks)(client)
    }

    fn worker(&self, _thread: usize) -> Box<dyn DynOperation> {
        Box::new(NoUnits)
    }
}
