//! TPC-C: `tpcc-load` (the initial population of clause 4.3), `tpcc` (the
//! five transactions of clause 2 in the standard mix) and `tpcc-check`
//! (the consistency conditions of clause 3.3.2).
//!
//! Faithful to the specification where it matters for the numbers: the
//! schema, cardinalities and data rules, the transactions' profiles and
//! input rules (NURand with the run's constants, 1% of New-Orders rolled
//! back on an unused item, 1% remote order lines, 15% remote payments, 60%
//! of customer look-ups by last name), the mix and tpmC. Not a compliant
//! implementation: no keying or think times (as go-tpc and BenchBase by
//! default), no terminal emulation, no pricing or durability audit, so no
//! result from it is a TPC-C result. See the README's TPC-C section.
//!
//! Files: [`schema`] the DDL, [`load`] the data generation, [`txn`] the
//! transactions, [`check`] the consistency conditions.

use rand::RngExt;
use rand::rngs::SmallRng;
use tokio_postgres::Client;

use super::{BoxFuture, DynOperation, Role, Settings, Spec, TableSet, Workload};
use crate::config::TableName;
use crate::db::schema as db_schema;
use crate::error::{Error, Result};

pub mod load;
pub mod schema;

/// Items in `item` and stock rows per warehouse (clause 1.2.1).
pub const ITEMS: u32 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: u32 = 10;
/// Customers per district.
pub const CUSTOMERS: u32 = 3_000;
/// Orders per district at load time.
pub const ORDERS: u32 = 3_000;
/// The first order of a district still undelivered at load time (the
/// last 900 are in `new_order`).
pub const NEW_ORDERS_FROM: u32 = 2_101;
/// The constant C of NURand(255, ..) for c_last at load time (clause
/// 2.1.6). The specification draws it at random; a fixed one lets a run,
/// which may not know the load's seed, choose its own C within the
/// distance of clause 2.1.6.1.
pub const C_LOAD_LAST: u32 = 157;

/// NURand(A, x, y) with constant `c` (clause 2.1.6).
pub fn nurand(rng: &mut SmallRng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// The TPC-C flags.
#[derive(Clone, Debug)]
pub struct TpccSettings {
    /// `--warehouses`.
    pub warehouses: u32,
}

impl Default for TpccSettings {
    fn default() -> Self {
        TpccSettings { warehouses: 1 }
    }
}

fn name(t: &str) -> TableName {
    TableName::new(t).unwrap_or_else(|_| unreachable!("a fixed, valid name"))
}

/// `-o tpcc-load`.
pub static LOAD: Spec = Spec {
    name: "tpcc-load",
    aliases: &[],
    about: "TPC-C: create and load the nine tables for --warehouses W (clause 4.3)",
    role: Role::Load,
    paced: false,
    writes: true,
    unit: "batch",
    units: "batches",
    build: build_load,
};

fn build_load(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Load {
        spec,
        settings: s.clone(),
        table: name("warehouse"),
    }))
}

struct Load {
    spec: &'static Spec,
    settings: Settings,
    table: TableName,
}

impl Workload for Load {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn tables(&self) -> &'static dyn TableSet {
        &schema::TPCC_TABLES
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            client
                .batch_execute(&format!("truncate table {}", schema::NAMES.join(", ")))
                .await
                .map_err(|e| Error::db("cannot empty the TPC-C tables", e))?;
            for t in schema::NAMES {
                db_schema::mark_loading(client, &name(t)).await?;
            }
            Ok(())
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, _rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for t in schema::NAMES {
                client
                    .batch_execute(&format!("analyze {t}"))
                    .await
                    .map_err(|e| Error::db(format!("cannot analyze {t}"), e))?;
                let rows: i64 = client
                    .query_one(&format!("select count(*) from {t}"), &[])
                    .await
                    .map_err(|e| Error::db(format!("cannot count {t}"), e))?
                    .get(0);
                db_schema::mark_loaded(client, &name(t), rows as u64).await?;
            }
            Ok(())
        })
    }

    fn describe(&self) -> String {
        format!("{} warehouses", self.settings.tpcc.warehouses)
    }

    fn batch_text(&self) -> String {
        "one COPY per district and table (10000 rows of item or stock)".to_string()
    }

    fn table(&self) -> &TableName {
        &self.table
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace('T', " ")
            .trim_end_matches('Z')
            .to_string();
        Box::new(load::LoadOp::new(
            s.tpcc.warehouses,
            s.threads,
            thread,
            s.seed,
            now,
        ))
    }
}
