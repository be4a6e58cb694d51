//! A mix as a [`Workload`]: the shares drawn from, the shared insert
//! counter, the set-up that finds the first free record, and the
//! description the reports show.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::Client;

use super::YcsbSettings;
use super::mix::{Mix, MixDef, TYPES, mix_of};
use super::schema::{USERTABLE, check_shape, key_of, table_name};
use super::unit::{INSERT, MixOp, READ, SCAN, Staged};
use crate::db::schema;
use crate::db::sql::TableName;
use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::kit::keys::{KeyDistribution, KeyPicker};
use crate::workload::{
    BoxFuture, DynOperation, Facts, Settings, Spec, TableSet, Workload, worker_seed,
};

pub(super) fn build_mix(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    check_shape(s)?;
    if s.rows == 0 {
        return Err(Error::usage(format!(
            "--rows 0 leaves {spec} no record to read: give the records loaded by ycsb-load, e.g. -r 100000"
        )));
    }
    let MixDef { mix, keys } = mix_of(spec.name, s);
    // The types that can happen, in TYPES order; a unit's type indexes it.
    let active: Vec<usize> = (0..TYPES.len()).filter(|&i| mix[i] > 0.0).collect();
    let mix_shares = mix;
    let total = Mix(mix).total();
    let mut cumulative = Vec::with_capacity(active.len());
    let mut acc = 0.0;
    for &i in &active {
        acc += mix[i] / total;
        cumulative.push(acc);
    }
    let table = table_name(s)?;
    let mut built = YcsbMix {
        spec,
        facts: Facts::new(spec, table.clone()),
        table: table.clone(),
        settings: s.clone(),
        ycsb: s.family::<YcsbSettings>().into_owned(),
        active,
        mix: mix_shares,
        cumulative,
        keys,
        next_insert: Arc::new(AtomicU64::new(s.rows)),
        insert_base: Arc::new(AtomicU64::new(s.rows)),
        acked: Arc::new(Acknowledged::new(s.rows)),
    };
    built.facts = built.facts_of(table);
    Ok(Box::new(built))
}

struct YcsbMix {
    spec: &'static Spec,
    facts: Facts,
    table: TableName,
    settings: Settings,
    ycsb: YcsbSettings,
    /// Indexes into TYPES of the types this mix draws.
    pub(super) active: Vec<usize>,
    /// The shares of all five types, as given.
    mix: [f64; 5],
    /// Cumulative shares of `active`, the last being 1.
    cumulative: Vec<f64>,
    keys: KeyDistribution,
    /// The next record number to insert, shared by the workers.
    next_insert: Arc<AtomicU64>,
    /// The first free record number when the mix started, the same for
    /// every client (they all read it before any inserts).
    insert_base: Arc<AtomicU64>,
    /// How far inserts are done without a gap (for `latest`).
    pub(super) acked: Arc<Acknowledged>,
}

impl YcsbMix {
    /// Its facts, from the mix as the flags made it.
    fn facts_of(&self, table: TableName) -> Facts {
        Facts {
            types: self.types(),
            writes: self.writes(),
            description: self.description(),
            ..Facts::new(self.spec, table)
        }
    }

    fn types(&self) -> Vec<&'static str> {
        self.active.iter().map(|&i| TYPES[i]).collect()
    }

    fn writes(&self) -> bool {
        // From the mix run, not the workload's name: ycsb-c with
        // --ycsb-proportions update=1 writes.
        self.active.iter().any(|&i| i != READ && i != SCAN)
    }

    fn description(&self) -> String {
        let total: f64 = self.active.iter().map(|&i| self.mix[i]).sum();
        let shares: Vec<String> = self
            .active
            .iter()
            .map(|&i| format!("{}={}", TYPES[i], self.mix[i] / total))
            .collect();
        let custom = if self.ycsb.proportions.is_some() {
            " (custom mix, --ycsb-proportions)"
        } else {
            ""
        };
        format!(
            "{}{custom}; keys {}; {} fields of {} characters{}{}",
            shares.join(","),
            describe_keys(self.keys),
            self.ycsb.field_count,
            self.ycsb.field_length,
            if self.ycsb.write_all_fields {
                "; updates write all fields"
            } else {
                ""
            },
            if self.ycsb.rmw_txn {
                "; read-modify-write in one transaction"
            } else {
                ""
            }
        )
    }

    /// The first record number past every record in the table: from the
    /// count, past every key that exists within a window above the last
    /// one found (an earlier run's inserts, with the holes its failed
    /// inserts left: they are never more than the workers in flight).
    async fn first_free(&self, client: &Client) -> Result<u64> {
        let t = self.table.quoted();
        let count: i64 = unnamed::query_one(client, &format!("select count(*) from {t}"), &[])
            .await
            .map_err(|e| Error::db(format!("cannot count the records of {t}"), e))?
            .get(0);
        let mut free = (count.max(0) as u64).max(self.settings.rows);
        let window = (4 * self.settings.threads as u64).max(64);
        let probe = format!("select ycsb_key from {t} where ycsb_key = any($1)");
        loop {
            let keys: Vec<String> = (free..free + window).map(key_of).collect();
            let found: Vec<String> = unnamed::query(client, &probe, &[&keys])
                .await
                .map_err(|e| Error::db(format!("cannot look for free keys in {t}"), e))?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let last = keys
                .iter()
                .enumerate()
                .filter(|(_, k)| found.contains(k))
                .map(|(i, _)| i as u64)
                .max();
            match last {
                Some(i) => free += i + 1,
                None => return Ok(free),
            }
        }
    }
}

/// How far the inserts of a run are done without a gap, as YCSB's
/// acknowledged counter: `latest` reads only below it, so it never looks
/// for a record whose insert (or an earlier-numbered one) is in flight.
/// Inserts are a few per cent of a mix, so a short lock on acknowledging
/// one costs nothing that matters; reading the limit takes no lock.
pub struct Acknowledged {
    upto: AtomicU64,
    done: std::sync::Mutex<std::collections::BTreeSet<u64>>,
}

impl Acknowledged {
    fn new(first: u64) -> Self {
        Acknowledged {
            upto: AtomicU64::new(first),
            done: std::sync::Mutex::new(std::collections::BTreeSet::new()),
        }
    }

    fn reset(&self, first: u64) {
        self.upto.store(first, Ordering::Relaxed);
        self.done.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Every record below this is in the table (or its insert failed).
    pub fn upto(&self) -> u64 {
        self.upto.load(Ordering::Acquire)
    }

    /// Insert `n` is done.
    pub fn ack(&self, n: u64) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let mut upto = self.upto.load(Ordering::Relaxed);
        if n < upto {
            return;
        }
        done.insert(n);
        while done.remove(&upto) {
            upto += 1;
        }
        self.upto.store(upto, Ordering::Release);
    }
}

/// The key distribution, as reports say it.
fn describe_keys(k: KeyDistribution) -> String {
    match k {
        KeyDistribution::Zipfian { theta } => format!("zipfian (scrambled, theta {theta})"),
        KeyDistribution::Latest { theta } => format!("latest (theta {theta})"),
        KeyDistribution::Hotspot { fraction, ops } => {
            format!("hotspot ({fraction} of the keys take {ops} of the operations)")
        }
        other => other.name().to_string(),
    }
}

impl Workload for YcsbMix {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &USERTABLE
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let first = if self.active.contains(&INSERT) {
                self.first_free(client).await?
            } else {
                self.settings.rows
            };
            self.next_insert.store(first, Ordering::Relaxed);
            self.insert_base.store(first, Ordering::Relaxed);
            self.acked.reset(first);
            Ok(())
        })
    }

    fn check_loaded<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let t = self.table.quoted();
            let rows = self.settings.rows;
            Ok(match schema::load_state(client, &self.table).await? {
                schema::LoadState::Incomplete => Some(format!(
                    "the last ycsb-load of {t} did not finish: {} will find records missing",
                    self.spec
                )),
                schema::LoadState::Loaded(n) if n < rows => Some(format!(
                    "{t} was loaded with {n} records but -r is {rows}: {} will find records missing",
                    self.spec
                )),
                schema::LoadState::Loaded(n) if n > rows => Some(format!(
                    "{t} was loaded with {n} records but -r is {rows}: {} will use only the first {rows} (give -r {n} to use them all)",
                    self.spec
                )),
                schema::LoadState::Unknown if schema::is_empty(client, &self.table).await? => {
                    Some(format!(
                        "{t} is empty: load it first, e.g. -o ycsb-load,{}",
                        self.spec
                    ))
                }
                _ => None,
            })
        })
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let seed = worker_seed(s.seed, thread, 11);
        let start = (s.rows as u128 * thread as u128 / s.threads.max(1) as u128) as u64;
        Box::new(MixOp {
            table: self.table.quoted(),
            rng: SmallRng::seed_from_u64(seed),
            keys: KeyPicker::new(self.keys, s.rows, start),
            latest: matches!(self.keys, KeyDistribution::Latest { .. }),
            // Set up before the workers are made: the first record number
            // past every record in the table.
            acked: self.acked.clone(),
            pending_ack: None,
            active: self.active.clone(),
            cumulative: self.cumulative.clone(),
            fields: self.ycsb.field_count,
            field_len: self.ycsb.field_length,
            write_all: self.ycsb.write_all_fields,
            rmw_txn: self.ycsb.rmw_txn,
            protocol: s.protocol,
            next_insert: self.next_insert.clone(),
            insert_base: self.insert_base.load(Ordering::Relaxed),
            client: s.client,
            st: None,
            staged: Staged::default(),
            values: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{A, B, C, D};
    use super::*;

    /// The settings of a command line, as the run would get them.
    fn settings_of(args: &[&str]) -> Settings {
        use clap::Parser;
        let mut all = vec!["ysql-bench", "--sandbox"];
        all.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(all).expect("clap accepts the flags");
        crate::config::RunPlan::from_cli(cli)
            .expect("a valid command line")
            .workload
    }

    /// --zipf-theta reaches the mixes' own zipfian and `latest`, and the
    /// workload line (the summary's and the JSON's) says the theta used;
    /// --key-distribution still replaces the mix's keys.
    #[test]
    fn the_mixes_keys_take_the_zipf_theta_given() {
        for (args, keys) in [
            (
                &["-o", "ycsb-a", "-r", "10000"][..],
                KeyDistribution::Zipfian { theta: 0.99 },
            ),
            (
                &["-o", "ycsb-a", "-r", "10000", "--zipf-theta", "0.5"][..],
                KeyDistribution::Zipfian { theta: 0.5 },
            ),
            (
                &["-o", "ycsb-d", "-r", "10000", "--zipf-theta", "1.2"][..],
                KeyDistribution::Latest { theta: 1.2 },
            ),
            (
                &[
                    "-o",
                    "ycsb-c",
                    "-r",
                    "10000",
                    "--key-distribution",
                    "latest",
                    "--zipf-theta",
                    "0.7",
                ][..],
                KeyDistribution::Latest { theta: 0.7 },
            ),
            (
                &[
                    "-o",
                    "ycsb-b",
                    "-r",
                    "10000",
                    "--key-distribution",
                    "uniform",
                ][..],
                KeyDistribution::Uniform,
            ),
        ] {
            let s = settings_of(args);
            let name = args[1];
            assert_eq!(mix_of(name, &s).keys, keys, "{args:?}");
            let spec = [&A, &B, &C, &D]
                .into_iter()
                .find(|spec| spec.name == name)
                .expect("a mix");
            let w = build_mix(spec, &s).expect("the mix builds");
            assert!(
                w.facts().description.contains(&describe_keys(keys)),
                "{args:?}: {}",
                w.facts().description
            );
        }
        let w = build_mix(&A, &settings_of(&["-o", "ycsb-a", "--zipf-theta", "0.5"]))
            .expect("the mix builds");
        assert!(
            w.facts()
                .description
                .contains("keys zipfian (scrambled, theta 0.5)"),
            "{}",
            w.facts().description
        );
    }

    #[test]
    fn latest_counts_only_inserts_done_without_a_gap() {
        let a = Acknowledged::new(100);
        a.ack(101);
        a.ack(102);
        assert_eq!(a.upto(), 100, "100 is still in flight");
        a.ack(100);
        assert_eq!(a.upto(), 103);
        a.ack(50);
        assert_eq!(a.upto(), 103);
        a.reset(7);
        assert_eq!(a.upto(), 7);
    }
}
