//! The coordinator and the unit loop, driven with fake units.
//!
//! A fake workload needs no table: its units sleep, or make the real
//! server raise a serialization failure, or never end, and count what they
//! did themselves. The runner's figures (per type, per interval, retries,
//! the end of a stuck run) are checked against those counts. Connections
//! are real (a sandbox server): only the units are fakes.

mod common;
use common::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_postgres::Client;
use ysql_bench::db::dialect::Flavor;
use ysql_bench::db::sql::TableName;
use ysql_bench::db::wire::WireConn;
use ysql_bench::workload::{
    BoxFuture, DynOperation, Facts, Operation, Outcome, Role, Settings, Spec, TableSet, TableUse,
    Workload,
};
use ysql_bench::{Control, RunReport};

/// What the fake units do.
#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    /// Sleep 200 µs and succeed.
    Quick,
    /// Every third unit fails its first try with a 40001 raised by the
    /// server, then succeeds.
    Conflicts,
    /// Worker 0's first unit never ends; the others are quick.
    Hangs,
}

/// What the units counted themselves.
#[derive(Default)]
struct Counts {
    /// Successful units per type.
    done: [AtomicU64; 2],
    /// Units that failed once before they succeeded.
    conflicted: AtomicU64,
    /// Set-ups run (where a real load truncates).
    set_ups: AtomicU64,
}

struct NoTables;

impl TableSet for NoTables {
    fn key(&self) -> &'static str {
        "none"
    }
    fn loader(&self) -> &'static str {
        "none"
    }
    fn prepare<'a>(
        &'a self,
        _client: &'a Client,
        _settings: &'a Settings,
        _flavor: Flavor,
        _how: TableUse,
    ) -> BoxFuture<'a, ysql_bench::Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

static NO_TABLES: NoTables = NoTables;

fn no_build(_: &'static Spec, _: &Settings) -> ysql_bench::Result<Box<dyn Workload>> {
    unreachable!("the fake is built by the test")
}

static FAKE: Spec = Spec {
    name: "fake",
    aliases: &[],
    about: "test units",
    role: Role::Query,
    paced: true,
    writes: false,
    drops: false,
    unit: "unit",
    units: "units",
    build: no_build,
};

struct Fake {
    behaviour: Behaviour,
    counts: Arc<Counts>,
    facts: Facts,
    /// Interrupted as by Ctrl-C once the operation ended, while its
    /// checks run.
    interrupt_after: Option<Control>,
}

/// Two types, and no table to create or check.
fn fake_facts() -> Facts {
    Facts {
        types: vec!["even", "odd"],
        needs_tables: false,
        ..Facts::new(&FAKE, TableName::new("none").unwrap())
    }
}

impl Workload for Fake {
    fn spec(&self) -> &'static Spec {
        &FAKE
    }
    fn facts(&self) -> &Facts {
        &self.facts
    }
    fn tables(&self) -> &'static dyn TableSet {
        &NO_TABLES
    }
    fn set_up<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, ysql_bench::Result<()>> {
        self.counts.set_ups.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::ready(Ok(())))
    }
    fn checks<'a>(
        &'a self,
        _client: &'a Client,
    ) -> BoxFuture<'a, ysql_bench::Result<Vec<ysql_bench::workload::Check>>> {
        if let Some(c) = &self.interrupt_after {
            c.interrupt();
        }
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        Box::new(FakeOp {
            thread,
            n: 0,
            tries: 0,
            behaviour: self.behaviour,
            counts: self.counts.clone(),
        })
    }
}

struct FakeOp {
    thread: usize,
    n: u64,
    /// Tries of the staged unit so far.
    tries: u32,
    behaviour: Behaviour,
    counts: Arc<Counts>,
}

impl Operation for FakeOp {
    async fn prepare(&mut self, _conn: &mut WireConn) -> ysql_bench::Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        self.n += 1;
        self.tries = 0;
        true
    }

    fn unit_type(&self) -> usize {
        (self.n % 2) as usize
    }

    async fn execute(&mut self, conn: &mut WireConn) -> ysql_bench::Result<Outcome> {
        self.tries += 1;
        match self.behaviour {
            Behaviour::Hangs if self.thread == 0 => {
                ysql_bench::rt::time::sleep(Duration::from_secs(3600)).await;
            }
            Behaviour::Conflicts if self.n.is_multiple_of(3) && self.tries == 1 => {
                conn.simple_query(
                    "do $$ begin raise exception 'fake conflict' using errcode = '40001'; end $$",
                )
                .await
                .map_err(|e| ysql_bench::Error::wire("fake unit", e))?;
                unreachable!("the server raised an error");
            }
            _ => ysql_bench::rt::time::sleep(Duration::from_micros(200)).await,
        }
        if self.tries > 1 {
            self.counts.conflicted.fetch_add(1, Ordering::Relaxed);
        }
        self.counts.done[self.unit_type()].fetch_add(1, Ordering::Relaxed);
        Ok(Outcome {
            rows: 1,
            missing: 0,
        })
    }
}

async fn run_fake(
    sb: &ysql_bench::db::sandbox::Sandbox,
    behaviour: Behaviour,
    args: &[&str],
) -> (RunReport, String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let fake = Fake {
        behaviour,
        counts: counts.clone(),
        facts: fake_facts(),
        interrupt_after: None,
    };
    let mut all = vec!["-o", "select"];
    all.extend_from_slice(args);
    let mut out = Vec::new();
    let report = ysql_bench::app::run_workloads(
        plan(sb, &all),
        vec![Box::new(fake)],
        &mut out,
        Control::default(),
    )
    .await
    .expect("the run completes");
    (report, String::from_utf8(out).unwrap(), counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_unit_is_counted_once_in_its_type_and_its_interval() {
    let sb = sandbox();
    let (r, s, counts) = run_fake(
        &sb,
        Behaviour::Quick,
        &["-t", "5", "--time", "2s", "-P", "0.5"],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let op = &r.operations[0];
    for (i, t) in op.types.iter().enumerate() {
        let done = counts.done[i].load(Ordering::Relaxed);
        assert!(done > 100, "{s}");
        // Units still in flight at the end of --time are counted too, so
        // the fake's count and the runner's agree exactly.
        assert_eq!(t.stats.ops, done, "{}: {s}", t.name);
        assert_eq!(t.intervals.iter().map(|f| f.ops).sum::<u64>(), done);
    }
    assert_eq!(
        op.total.ops,
        op.types.iter().map(|t| t.stats.ops).sum::<u64>()
    );
    assert_eq!(op.intervals.len(), 4, "{s}");
    for (i, f) in op.intervals.iter().enumerate() {
        let per_type: u64 = op.types.iter().map(|t| t.intervals[i].ops).sum();
        assert_eq!(f.ops, per_type, "interval {i}");
    }
    assert!(
        s.contains("[even] latency") && s.contains("[odd] latency"),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_unit_counts_once_with_its_retries() {
    let sb = sandbox();
    let (r, s, counts) = run_fake(
        &sb,
        Behaviour::Conflicts,
        &["-t", "2", "--time", "1s", "--max-tries", "3"],
    )
    .await;
    assert!(r.succeeded(), "{s}");
    let t = &r.operations[0].total;
    let conflicted = counts.conflicted.load(Ordering::Relaxed);
    assert!(conflicted > 10, "{s}");
    assert_eq!(t.retried, conflicted, "{s}");
    assert_eq!(t.retries, conflicted, "{s}");
    assert_eq!(t.failed(), 0, "{s}");
    let done: u64 = counts.done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
    assert_eq!(t.ops, done, "{s}");
    // Without retries the same units fail, counted by SQLSTATE.
    let (r, s, counts) = run_fake(&sb, Behaviour::Conflicts, &["-t", "2", "--time", "1s"]).await;
    let t = &r.operations[0].total;
    assert!(t.errors.get("40001").is_some_and(|n| *n > 10), "{s}");
    assert_eq!(counts.conflicted.load(Ordering::Relaxed), 0);
    assert_eq!(t.retries, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_that_never_ends_is_abandoned_and_the_others_keep_their_figures() {
    let sb = sandbox();
    let started = Instant::now();
    let (r, s, counts) = run_fake(&sb, Behaviour::Hangs, &["-t", "3", "--time", "1s"]).await;
    let took = started.elapsed();
    // --time, then the grace, then the cancel's wait: not an hour.
    assert!(took < Duration::from_secs(30), "{took:?}\n{s}");
    let op = &r.operations[0];
    let why = op.failure.clone().unwrap_or_default();
    assert!(why.starts_with("1 worker(s) did not end"), "{why}\n{s}");
    // The two quick workers' units are all there.
    let done: u64 = counts.done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
    assert!(done > 50, "{s}");
    assert_eq!(op.total.ops, done, "{s}");
    // And the wallclock is the asked time, not the wait for the stuck one.
    assert!(op.wallclock < Duration::from_millis(1500), "{s}");
}

/// Ctrl-C between two operations starts no other: its set-up (a load's
/// truncate) would run after the interrupt. The operation that ended is
/// reported, and the run is interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_between_two_operations_starts_no_other() {
    let sb = sandbox();
    let control = Control::default();
    let fake = |interrupt_after: Option<Control>| {
        let counts = Arc::new(Counts::default());
        let f = Fake {
            behaviour: Behaviour::Quick,
            counts: counts.clone(),
            facts: fake_facts(),
            interrupt_after,
        };
        (Box::new(f) as Box<dyn Workload>, counts)
    };
    let (first, _) = fake(Some(control.clone()));
    let (second, second_counts) = fake(None);
    let mut out = Vec::new();
    let report = ysql_bench::app::run_workloads(
        plan(&sb, &["-o", "select", "--time", "300ms"]),
        vec![first, second],
        &mut out,
        control,
    )
    .await
    .expect("the run completes");
    let text = String::from_utf8(out).unwrap();
    assert!(report.interrupted, "{text}");
    assert_eq!(report.operations.len(), 1, "{text}");
    assert!(report.operations[0].total.ops > 0, "{text}");
    assert_eq!(second_counts.set_ups.load(Ordering::Relaxed), 0, "{text}");
}
