//! The run's tables, before its first operation: every table a query
//! reads must be there (and hold rows), and every set of tables the
//! workloads use is created or checked once, before anything is written.
//!
//! With several clients every client meets the others first (step
//! `tables`), before any table is touched; the leader alone checks and
//! creates the tables, the others only check what their queries read, and
//! wait for the leader to let them past.

use tokio_postgres::Client;

use super::barrier::StartBarrier;
use super::settings::RunSettings;
use super::setup_race::SetUpConn;
use crate::db::dialect::Flavor;
use crate::db::schema::{self, Contents};
use crate::error::{Error, Result};
use crate::workload::{Settings, TableSet, TableUse, Workload};

/// The tables step: checks what the queries read, then (unless another
/// client leads) creates or checks each set of tables, each query racing
/// the stop. A leader whose part fails calls the run off for everyone.
pub async fn prepare(
    conn: &SetUpConn<'_>,
    settings: &Settings,
    run: &RunSettings,
    workloads: &[Box<dyn Workload>],
    flavor: Flavor,
    barrier: Option<&dyn StartBarrier>,
) -> Result<()> {
    if let Some(b) = barrier {
        b.meet("tables").await?;
    }
    let checked = check_query_tables(conn.client, settings, run, workloads);
    if barrier.is_some_and(|b| !b.leads()) {
        return conn.or_stop(checked).await;
    }
    let prepared = async {
        checked.await?;
        prepare_tables(conn.client, settings, workloads, flavor).await
    };
    if let Err(e) = conn.or_stop(prepared).await {
        if let Some(b) = barrier {
            b.fail(&e.to_string()).await;
        }
        return Err(e);
    }
    match barrier {
        Some(b) => b.release("tables", None).await,
        None => Ok(()),
    }
}

/// Query workloads look rows up: before anything is created or written,
/// every table that a query reads, when no load of the run fills it
/// before, must exist and, unless a load leaves it empty, hold rows
/// ([`TableSet::reads`]). Otherwise every lookup would miss for the whole
/// run and the run still end "successfully". Refused as bad usage, naming
/// the first table that is missing or empty, with this run's `-o` with
/// the loaders it lacks put first and the flags they need.
async fn check_query_tables(
    client: &Client,
    settings: &Settings,
    run: &RunSettings,
    workloads: &[Box<dyn Workload>],
) -> Result<()> {
    let mut filled: Vec<&str> = Vec::new();
    let mut checked: Vec<&str> = Vec::new();
    // The first table found wanting, and the sets that lack their load.
    let mut first: Option<(String, &'static str, bool)> = None;
    let mut unloaded: Vec<&dyn TableSet> = Vec::new();
    let mut wanting = 0;
    for w in workloads {
        let set = w.tables();
        if w.spec().is_load() {
            if w.facts().needs_tables {
                filled.push(set.key());
            }
            continue;
        }
        if filled.contains(&set.key()) || checked.contains(&set.key()) {
            continue;
        }
        checked.push(set.key());
        for t in set.reads(settings)? {
            let what = match schema::contents(client, &t.name).await? {
                Contents::Missing => "does not exist",
                Contents::Empty if t.holds_rows => "is empty",
                _ => continue,
            };
            wanting += 1;
            if !unloaded.iter().any(|u| u.key() == set.key()) {
                unloaded.push(set);
            }
            first.get_or_insert((
                format!("table {} {what}", t.name.quoted()),
                w.spec().name,
                t.holds_rows,
            ));
        }
    }
    let Some((table, needed_by, holds_rows)) = first else {
        return Ok(());
    };
    let mut ops: Vec<&str> = unloaded.iter().map(|s| s.loader()).collect();
    ops.extend(workloads.iter().map(|w| w.spec().name));
    let mut line = format!("-o {}", ops.join(","));
    let mut flags: Vec<String> = Vec::new();
    for f in unloaded.iter().flat_map(|s| s.load_flags(settings)) {
        if !flags.contains(&f) {
            line.push(' ');
            line.push_str(&f);
            flags.push(f);
        }
    }
    let needs = if holds_rows {
        "needs its rows"
    } else {
        "needs it"
    };
    let (more, them) = match wanting - 1 {
        0 => (String::new(), "it"),
        1 => (
            " (one more table is missing or empty too)".to_string(),
            "them",
        ),
        n => (
            format!(" ({n} more tables are missing or empty too)"),
            "them",
        ),
    };
    let check = if settings.table_name.is_some() {
        "--table-name and the database"
    } else {
        "the database"
    };
    let bounded = if run.load_time.is_some() {
        " (--time bounds the load too)"
    } else {
        ""
    };
    Err(Error::usage(format!(
        "{table}, and {needed_by} {needs}{more}: load {them} first in the same run, e.g. {line}{bounded}, or check {check}"
    )))
}

/// Creates or checks each set of tables the workloads use, once, before
/// any of them runs: refusing a table that is not the tool's before
/// anything is written. Only a set that a load of the run fills is
/// created (or dropped with `--drop`); one that queries alone read was
/// checked by [`check_query_tables`] and is left as it is.
async fn prepare_tables(
    client: &Client,
    settings: &Settings,
    workloads: &[Box<dyn Workload>],
    flavor: Flavor,
) -> Result<()> {
    let mut done: Vec<&str> = Vec::new();
    for w in workloads.iter().filter(|w| w.facts().needs_tables) {
        let set = w.tables();
        if done.contains(&set.key()) {
            continue;
        }
        done.push(set.key());
        let same = || workloads.iter().filter(|o| o.tables().key() == set.key());
        let how = TableUse {
            filled: same().any(|o| o.spec().is_load() && o.facts().needs_tables),
            written: same().any(|o| o.facts().writes),
        };
        set.prepare(client, settings, flavor, how).await?;
    }
    Ok(())
}
