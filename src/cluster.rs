//! Several client machines, one run (`--clients W --client-index I`).
//!
//! The clients meet at a barrier kept in the database itself, in a small
//! table of the tool's (`ysql_bench_barrier`), so that no service other
//! than the database under test is needed. [`Gate`] is the runner's
//! [`StartBarrier`]: the runner calls it at each step of an operation's
//! life. Client 0 (the leader) alone creates, drops and truncates tables
//! and marks a load as begun; the others (followers) wait for it at each
//! step and never write before it says so. No client marks a load as
//! finished: each knows only its share, so the table stays marked as
//! being loaded (a later run warns) rather than marked wrongly.
//!
//! 1. **open**: the leader deletes the run id's rows of an earlier attempt
//!    and writes an `open` row with a fresh random generation. A follower
//!    registers for the newest fresh `open` it sees (not older than the
//!    barrier timeout, not `closed`); should the leader open again (an
//!    earlier attempt's row was still there), the follower registers anew,
//!    so leftover rows of an earlier run with the same id never mix in.
//! 2. **steps**: every step (`tables`, then per operation `prep:N` before
//!    its set-up and `start:N` before its first unit) is an `arrive` row of
//!    each follower and a `go` row of the leader, all of one generation.
//!    The leader waits for every follower's arrival, does its part (the
//!    tables, a load's truncate), then writes `go`; for `start:N` the `go`
//!    carries an instant on the database's clock a little ahead, at which
//!    every client starts its workers. Each client translates the instant
//!    to its own clock through a round trip, and measures afterwards how
//!    far from it it really started (its start skew).
//! 3. A client missing at a step ends the wait after `--barrier-timeout`:
//!    the leader names the missing indexes and writes an `abort` row,
//!    which the followers read and report; everyone exits 1. The first
//!    meeting comes before any table is touched, so nothing is written.
//!
//! Work is split by [`crate::workload::kit::partition::ClientShare`] (loads,
//! inserted keys) and by the plan (`--rate` over the clients, seeds per
//! client); see [`crate::config`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use futures_util::future::BoxFuture;
use tokio_postgres::Client;

use crate::db::endpoint::Endpoint;
use crate::db::{connect, unnamed};
use crate::error::{Error, Result};
use crate::runner::barrier::StartBarrier;

use crate::db::dialect::BARRIER_MARK;
/// The barrier table.
pub use crate::db::dialect::BARRIER_TABLE;

/// How often a waiting client looks at the barrier table.
const POLL: Duration = Duration::from_millis(20);

/// How far ahead of the leader's clock the common start is set: room for
/// every follower's next poll and a round trip.
const START_LEAD: Duration = Duration::from_millis(400);

/// The default `--barrier-timeout`.
pub const DEFAULT_BARRIER_TIMEOUT: Duration = Duration::from_secs(60);

/// Which client this is of how many, in which run.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterPlan {
    pub clients: usize,
    /// 0-based; client 0 leads.
    pub index: usize,
    /// Names the run in the barrier table and in the reports.
    pub run_id: String,
    pub barrier_timeout: Duration,
    /// The seed of the whole run (each client's own is derived from it).
    pub run_seed: u64,
}

impl ClusterPlan {
    pub fn leader(&self) -> bool {
        self.index == 0
    }
}

/// A run id from what every client's command line shares (not the
/// connection, which may differ per client): `ysql-bench-` and 12 hex
/// digits of an FNV-1a hash of `key`.
pub fn default_run_id(key: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("ysql-bench-{:012x}", h & 0xffff_ffff_ffff)
}

/// Checks a `--run-id`: printable, at most 100 characters.
pub fn check_run_id(id: &str) -> std::result::Result<String, String> {
    let t = id.trim();
    if t.is_empty() || t.len() > 100 || t.chars().any(|c| c.is_control()) {
        return Err(format!(
            "'{id}' is not a run id: give 1 to 100 printable characters, e.g. tpcb-2026-11-23"
        ));
    }
    Ok(t.to_string())
}

/// When one operation started, on the database's clock, and how far this
/// client was from that instant.
#[derive(Clone, Debug, PartialEq)]
pub struct StartRecord {
    pub operation: &'static str,
    /// Seconds since the Unix epoch, on the database's clock.
    pub at_s: f64,
    /// This client's measured start minus the common instant, in ms.
    pub skew_ms: f64,
}

/// What a report keeps of a client's part in a run of several.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterRecord {
    pub plan: ClusterPlan,
    pub starts: Vec<StartRecord>,
}

/// This client's side of the barrier for one run.
pub struct Gate {
    pub plan: ClusterPlan,
    pool: Pool,
    /// What `pool` connects to, named in its errors.
    target: Endpoint,
    generation: Mutex<i64>,
    /// Operations started so far: names the next `start:N` step.
    started: AtomicUsize,
    /// When the last step was passed: a follower may be that much later
    /// at the next one (a longer share of a load) without being missing.
    last_pass: Mutex<Instant>,
    starts: Mutex<Vec<StartRecord>>,
    /// Ctrl-C: a client waiting at the barrier gives up at once.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// A row of the barrier table as a waiting client reads it.
struct Row {
    client: i32,
    phase: String,
    generation: i64,
    at_s: f64,
    note: Option<String>,
}

impl Gate {
    /// Creates the barrier table if needed and, on the leader, opens the
    /// run; a follower registers at the first step ([`Gate::meet`]).
    pub async fn open(
        plan: ClusterPlan,
        pool: Pool,
        target: Endpoint,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Gate> {
        let client = connect::get(&pool, &target).await?;
        create_table(&client).await?;
        let generation = if plan.leader() {
            let g: i64 = rand::random::<i64>() & i64::MAX;
            unnamed::execute(
                &client,
                &format!("delete from {BARRIER_TABLE} where run_id = $1"),
                &[&plan.run_id],
            )
            .await
            .map_err(|e| Error::db("cannot clear the barrier of an earlier run", e))?;
            insert(&client, &plan.run_id, 0, "open", g, 0.0, None).await?;
            g
        } else {
            -1
        };
        drop(client);
        Ok(Gate {
            plan,
            pool,
            target,
            generation: Mutex::new(generation),
            started: AtomicUsize::new(0),
            last_pass: Mutex::new(Instant::now()),
            starts: Mutex::new(Vec::new()),
            stop,
        })
    }

    /// When each operation started, so far.
    pub fn starts(&self) -> Vec<StartRecord> {
        self.starts.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn generation(&self) -> i64 {
        self.generation.lock().map(|g| *g).unwrap_or(-1)
    }

    fn timeout(&self) -> Duration {
        let since = self
            .last_pass
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        self.plan.barrier_timeout + since
    }

    fn passed(&self) {
        if let Ok(mut t) = self.last_pass.lock() {
            *t = Instant::now();
        }
    }

    /// The leader: waits until every follower has arrived at `step`. A
    /// follower: arrives and waits for the leader's `go`, returning its
    /// instant (seconds on the database's clock).
    pub async fn meet(&self, step: &str) -> Result<f64> {
        let client = connect::get(&self.pool, &self.target).await?;
        let waited = if self.plan.leader() {
            self.wait_arrivals(&client, step).await.map(|()| 0.0)
        } else {
            self.wait_go(&client, step).await
        };
        if let Err(e) = &waited
            && self.plan.leader()
        {
            self.abort(&client, &e.to_string()).await;
        }
        waited
    }

    /// The leader only: lets the followers past `step`, at `at_s` on the
    /// database's clock (0: at once).
    pub async fn release(&self, step: &str, at_s: f64) -> Result<()> {
        if !self.plan.leader() {
            return Ok(());
        }
        let client = connect::get(&self.pool, &self.target).await?;
        let phase = format!("go:{step}");
        insert(
            &client,
            &self.plan.run_id,
            0,
            &phase,
            self.generation(),
            at_s,
            None,
        )
        .await?;
        self.passed();
        Ok(())
    }

    /// The leader: tells the followers the run is off, and why.
    pub async fn fail(&self, why: &str) {
        if self.plan.leader()
            && let Ok(client) = connect::get(&self.pool, &self.target).await
        {
            self.abort(&client, why).await;
        }
    }

    async fn abort(&self, client: &Client, why: &str) {
        let _ = insert(
            client,
            &self.plan.run_id,
            0,
            "abort",
            self.generation(),
            0.0,
            Some(why),
        )
        .await;
    }

    /// The leader, at the end: the run is over, so that its `open` row is
    /// not taken for a new run's.
    pub async fn close(&self) {
        if self.plan.leader()
            && let Ok(client) = connect::get(&self.pool, &self.target).await
        {
            let _ = insert(
                &client,
                &self.plan.run_id,
                0,
                "closed",
                self.generation(),
                0.0,
                None,
            )
            .await;
        }
    }

    /// Meets the others before an operation's first unit and sleeps until
    /// the common start; records when that was and how far off this
    /// client was. Called by the runner's coordinator while the workers
    /// connect.
    pub async fn start(&self, operation: &'static str) -> Result<()> {
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        let step = format!("start:{n}");
        let client = connect::get(&self.pool, &self.target).await?;
        let at_s = if self.plan.leader() {
            self.meet(&step).await?;
            let (now, _) = db_now(&client).await?;
            let at = now + START_LEAD.as_secs_f64();
            self.release(&step, at).await?;
            at
        } else {
            let at = self.meet(&step).await?;
            self.passed();
            at
        };
        // The instant on this machine's clock: the database's time at the
        // middle of a round trip.
        let (now, mid) = db_now(&client).await?;
        let wait = at_s - now;
        if wait > 0.0 && wait < 3600.0 {
            tokio::time::sleep_until((mid + Duration::from_secs_f64(wait)).into()).await;
        }
        let woke = Instant::now();
        let (then, mid_after) = db_now(&client).await?;
        // The database's time when this client woke.
        let at_wake = then - mid_after.saturating_duration_since(woke).as_secs_f64();
        let skew_ms = (at_wake - at_s) * 1e3;
        if let Ok(mut s) = self.starts.lock() {
            s.push(StartRecord {
                operation,
                at_s,
                skew_ms,
            });
        }
        Ok(())
    }

    async fn wait_arrivals(&self, client: &Client, step: &str) -> Result<()> {
        let phase = format!("arrive:{step}");
        let generation = self.generation();
        let deadline = Instant::now() + self.timeout();
        let want = self.plan.clients - 1;
        loop {
            let rows = unnamed::query(
                client,
                &format!(
                    "select client from {BARRIER_TABLE} where run_id = $1 and phase = $2 and generation = $3"
                ),
                &[&self.plan.run_id, &phase, &generation],
            )
            .await
                .map_err(|e| Error::db("cannot read the barrier", e))?;
            let here: Vec<usize> = rows
                .iter()
                .filter_map(|r| r.try_get::<_, i32>(0).ok())
                .filter_map(|c| usize::try_from(c).ok())
                .collect();
            if here.len() >= want {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let missing: Vec<String> = (1..self.plan.clients)
                    .filter(|c| !here.contains(c))
                    .map(|c| c.to_string())
                    .collect();
                return Err(Error::run(format!(
                    "run {}: client(s) {} of {} did not arrive at the barrier ({step}) within {}; nothing was written",
                    self.plan.run_id,
                    missing.join(", "),
                    self.plan.clients,
                    humantime::format_duration(self.plan.barrier_timeout)
                )));
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted("while waiting for the other clients"));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn wait_go(&self, client: &Client, step: &str) -> Result<f64> {
        let me = self.plan.index as i32;
        let arrive = format!("arrive:{step}");
        let go = format!("go:{step}");
        let deadline = Instant::now() + self.timeout();
        let fresh_s = self.plan.barrier_timeout.as_secs_f64();
        let mut registered = -1i64;
        loop {
            let rows = unnamed::query(
                client,
                &format!(
                    "select client, phase, generation, \
                     extract(epoch from at)::float8, note, \
                     extract(epoch from clock_timestamp() - at)::float8 \
                     from {BARRIER_TABLE} where run_id = $1 and client = 0 \
                     and phase in ('open', 'closed', 'abort', $2)"
                ),
                &[&self.plan.run_id, &go],
            )
            .await
            .map_err(|e| Error::db("cannot read the barrier", e))?;
            let mut seen = Vec::new();
            for r in &rows {
                let age: f64 = r.try_get(5).unwrap_or(f64::MAX);
                seen.push((
                    Row {
                        client: r.try_get(0).unwrap_or(-1),
                        phase: r.try_get(1).unwrap_or_default(),
                        generation: r.try_get(2).unwrap_or(-1),
                        at_s: r.try_get(3).unwrap_or(0.0),
                        note: r.try_get(4).unwrap_or(None),
                    },
                    age,
                ));
            }
            let closed = |g: i64| {
                seen.iter()
                    .any(|(r, _)| r.phase == "closed" && r.generation == g)
            };
            // The leader's newest open attempt that is not over.
            let open = seen
                .iter()
                .filter(|(r, age)| {
                    r.client == 0 && r.phase == "open" && *age <= fresh_s && !closed(r.generation)
                })
                .map(|(r, _)| r.generation)
                .next();
            let current = self.generation();
            if let Some(g) = open
                && g != current
            {
                if current >= 0 && self.started.load(Ordering::Relaxed) > 0 {
                    return Err(Error::run(format!(
                        "run {}: client 0 started the run again while this client was in it",
                        self.plan.run_id
                    )));
                }
                if let Ok(mut c) = self.generation.lock() {
                    *c = g;
                }
            }
            let current = self.generation();
            if current >= 0 && registered != current {
                upsert(client, &self.plan.run_id, me, &arrive, current).await?;
                registered = current;
            }
            for (r, _) in &seen {
                if r.generation != current || current < 0 {
                    continue;
                }
                if r.phase == "abort" {
                    return Err(Error::run(format!(
                        "run {}: client 0 called the run off: {}",
                        self.plan.run_id,
                        r.note.as_deref().unwrap_or("no reason given")
                    )));
                }
                if r.phase == go {
                    return Ok(r.at_s);
                }
            }
            if Instant::now() >= deadline {
                return Err(self.missing_at(client, step, current).await);
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted("while waiting for the other clients"));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Gate {
    /// A follower's message when the leader did not let it past `step`:
    /// the clients whose arrival it cannot see (0 when the leader never
    /// opened this generation of the run).
    async fn missing_at(&self, client: &Client, step: &str, generation: i64) -> Error {
        let arrive = format!("arrive:{step}");
        let here: Vec<usize> = unnamed::query(
            client,
            &format!(
                "select client from {BARRIER_TABLE} where run_id = $1 and phase = $2 and generation = $3"
            ),
            &[&self.plan.run_id, &arrive, &generation],
        )
        .await
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| r.try_get::<_, i32>(0).ok())
                    .filter_map(|c| usize::try_from(c).ok())
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<String> = (0..self.plan.clients)
            .filter(|&c| {
                if c == 0 {
                    generation < 0
                } else {
                    !here.contains(&c)
                }
            })
            .map(|c| c.to_string())
            .collect();
        let who = if missing.is_empty() {
            "client 0 did not let the clients start".to_string()
        } else {
            format!(
                "client(s) {} of {} did not arrive",
                missing.join(", "),
                self.plan.clients
            )
        };
        Error::run(format!(
            "run {}: {who} at the barrier ({step}) within {}; nothing was written by this client",
            self.plan.run_id,
            humantime::format_duration(self.plan.barrier_timeout)
        ))
    }
}

/// The database's clock (seconds since the epoch) and the local instant
/// taken to match it: the middle of the round trip.
async fn db_now(client: &Client) -> Result<(f64, Instant)> {
    let t0 = Instant::now();
    let row = unnamed::query_one(
        client,
        "select extract(epoch from clock_timestamp())::float8",
        &[],
    )
    .await
    .map_err(|e| Error::db("cannot read the database's clock", e))?;
    let t1 = Instant::now();
    let now: f64 = row
        .try_get(0)
        .map_err(|e| Error::db("cannot read the database's clock", e))?;
    Ok((now, t0 + (t1 - t0) / 2))
}

/// Creates the barrier table. Several clients may try at once; a loser of
/// that race finds the table there.
async fn create_table(client: &Client) -> Result<()> {
    let ddl = format!(
        "create table if not exists {BARRIER_TABLE} (\
         run_id text not null, client int not null, phase text not null, \
         generation bigint not null, at timestamptz not null default clock_timestamp(), \
         note text, primary key (run_id, client, phase))"
    );
    if let Err(e) = client.batch_execute(&ddl).await {
        let exists = unnamed::query_one(
            client,
            "select to_regclass($1) is not null",
            &[&BARRIER_TABLE],
        )
        .await
        .ok()
        .and_then(|r| r.try_get::<_, bool>(0).ok())
        .unwrap_or(false);
        if !exists {
            return Err(Error::db(
                format!("cannot create the barrier table {BARRIER_TABLE}"),
                e,
            ));
        }
    }
    let _ = client
        .batch_execute(&format!(
            "comment on table {BARRIER_TABLE} is '{BARRIER_MARK}'"
        ))
        .await;
    Ok(())
}

/// Writes (or replaces) a row of the barrier; `at_s` 0 means now.
async fn insert(
    client: &Client,
    run_id: &str,
    who: i32,
    phase: &str,
    generation: i64,
    at_s: f64,
    note: Option<&str>,
) -> Result<()> {
    unnamed::execute(
        client,
        &format!(
            "insert into {BARRIER_TABLE} (run_id, client, phase, generation, at, note) \
             values ($1, $2, $3, $4, case when $5::float8 = 0 then clock_timestamp() else to_timestamp($5::float8) end, $6) \
             on conflict (run_id, client, phase) do update \
             set generation = excluded.generation, at = excluded.at, note = excluded.note"
        ),
        &[&run_id, &who, &phase, &generation, &at_s, &note],
    )
    .await
        .map_err(|e| Error::db("cannot write to the barrier", e))?;
    Ok(())
}

async fn upsert(
    client: &Client,
    run_id: &str,
    who: i32,
    phase: &str,
    generation: i64,
) -> Result<()> {
    insert(client, run_id, who, phase, generation, 0.0, None).await
}

/// The runner's view of the gate: the steps it meets at around each
/// operation; the leader's release lets the followers past at once.
impl StartBarrier for Gate {
    fn leads(&self) -> bool {
        self.plan.leader()
    }
    fn meet<'a>(&'a self, step: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { Gate::meet(self, step).await.map(|_| ()) })
    }
    fn release<'a>(&'a self, step: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(Gate::release(self, step, 0.0))
    }
    fn fail<'a>(&'a self, why: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(Gate::fail(self, why))
    }
    fn start<'a>(&'a self, operation: &'static str) -> BoxFuture<'a, Result<()>> {
        Box::pin(Gate::start(self, operation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_stable_and_checked() {
        assert_eq!(default_run_id("a"), default_run_id("a"));
        assert_ne!(default_run_id("a"), default_run_id("b"));
        assert!(default_run_id("x").starts_with("ysql-bench-"));
        assert_eq!(check_run_id(" r1 ").as_deref(), Ok("r1"));
        assert!(check_run_id("").is_err());
        assert!(check_run_id("a\nb").is_err());
    }
}
