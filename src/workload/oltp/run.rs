//! A transaction script as a [`Workload`]: its types, description and
//! per-statement figures, and the workers it makes.

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::Client;

use super::schema::{SBTABLES, check_rows, table};
use super::statements::{KINDS, Kind, groups, transactional};
use super::unit::OltpOp;
use super::{OltpSettings, Script, script_of};
use crate::db::schema;
use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::kit::keys::{KeyDistribution, KeyPicker};
use crate::workload::{
    BoxFuture, DynOperation, Facts, Settings, Spec, StatementTimes, TableSet, Workload, worker_seed,
};

pub(super) fn build_run(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_rows(spec, s)?;
    let script = script_of(spec.name);
    if groups(script, &s.family::<OltpSettings>()).is_empty() {
        return Err(Error::usage(format!(
            "{spec} has no statement left to run with these counts: give at least one of its statements a count above 0"
        )));
    }
    let oltp = s.family::<OltpSettings>().into_owned();
    Ok(Box::new(OltpRun {
        spec,
        script,
        facts: Facts {
            description: describe(script, s, &oltp),
            // sysbench's PostgreSQL driver also re-runs an event on a
            // unique violation (two transactions re-inserting one deleted
            // id).
            retry_on: &["40001", "40P01", "23505"],
            // As sysbench: an "ignored error" re-runs the event, without
            // limit.
            default_max_tries: 0,
            stat_tables: (1..=oltp.tables).map(|i| format!("sbtest{i}")).collect(),
            ..Facts::new(spec, table(1))
        },
        settings: s.clone(),
        oltp,
    }))
}

/// What a script's event runs, over how many tables and keys.
fn describe(script: Script, s: &Settings, o: &OltpSettings) -> String {
    let per: Vec<String> = groups(script, o)
        .iter()
        .map(|(k, n)| format!("{n} {}", k.name()))
        .collect();
    format!(
        "{} table(s) of {} rows; per event: {}{}; range size {}; keys {}",
        o.tables,
        s.rows,
        per.join(", "),
        if transactional(script, o) {
            " in BEGIN/COMMIT"
        } else {
            ""
        },
        o.range_size,
        s.keys.unwrap_or(KeyDistribution::Uniform).name()
    )
}

struct OltpRun {
    spec: &'static Spec,
    script: Script,
    facts: Facts,
    settings: Settings,
    /// The sysbench flags it was built with.
    oltp: OltpSettings,
}

impl Workload for OltpRun {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &SBTABLES
    }

    fn set_up<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn check_loaded<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            for i in 1..=self.oltp.tables {
                let t = table(i);
                match schema::load_state(client, &t).await? {
                    schema::LoadState::Incomplete => {
                        return Ok(Some(format!(
                            "the last oltp-prepare of {} did not finish: rows are missing",
                            t.quoted()
                        )));
                    }
                    schema::LoadState::Loaded(n) if n != self.settings.rows => {
                        return Ok(Some(format!(
                            "{} was prepared with {n} rows but -r is {}: ids will be missed or only part of the table used",
                            t.quoted(),
                            self.settings.rows
                        )));
                    }
                    schema::LoadState::Unknown => {
                        // A table sysbench prepared carries no mark: its
                        // highest id says its size.
                        let max: Option<i32> = unnamed::query_one(
                            client,
                            &format!("select max(id) from {}", t.quoted()),
                            &[],
                        )
                        .await
                        .map_err(|e| Error::db(format!("cannot read {}", t.quoted()), e))?
                        .get(0);
                        let max = max.unwrap_or(0) as u64;
                        // An empty table was refused before the run (this
                        // is one emptied since): no -r would help.
                        if max == 0 {
                            return Ok(Some(format!(
                                "{} is empty: every id will be missing",
                                t.quoted()
                            )));
                        }
                        if max != self.settings.rows {
                            return Ok(Some(format!(
                                "{} holds ids up to {max} but -r is {} (sysbench's --table-size is 10000 by default): give -r {max}",
                                t.quoted(),
                                self.settings.rows
                            )));
                        }
                    }
                    _ => {}
                }
            }
            Ok(None)
        })
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let keys = s.keys.unwrap_or(KeyDistribution::Uniform);
        let start = (s.rows as u128 * thread as u128 / s.threads.max(1) as u128) as u64;
        let groups = groups(self.script, &self.oltp);
        let mut names: Vec<&'static str> = Vec::new();
        let txn = transactional(self.script, &self.oltp);
        for k in KINDS {
            let used = groups.iter().any(|(g, _)| *g == k)
                || (k == Kind::Insert
                    && groups.iter().any(|(g, _)| *g == Kind::Delete)
                    && self.script != Script::Insert)
                || (txn && matches!(k, Kind::Begin | Kind::Commit));
            if used {
                names.push(k.name());
            }
        }
        let stat_slots = KINDS.map(|k| names.iter().position(|&n| n == k.name()));
        let stats = StatementTimes::new(names, crate::workload::kit::query_class);
        Box::new(OltpOp {
            stat_slots,
            tables: self.oltp.tables,
            rows: s.rows,
            range: self.oltp.range_size,
            groups,
            txn,
            serial_insert: self.script == Script::Insert,
            protocol: s.protocol,
            rng: SmallRng::seed_from_u64(worker_seed(s.seed, thread, 17)),
            keys: KeyPicker::new(keys, s.rows, start),
            statements: Vec::new(),
            steps: Vec::new(),
            failed_at: None,
            stats,
        })
    }
}
