//! Several client machines, one run (`--clients W --client-index I`).
//!
//! The clients meet at a barrier kept in the database itself, in a small
//! table of the tool's (`ysql_bench_barrier`), so that no service other
//! than the database under test is needed. [`Gate`] is the runner's
//! [`StartBarrier`]: the runner calls it at each step of an operation's
//! life. Client 0 (the leader) alone creates, drops and truncates tables
//! and marks loads; the others (followers) wait for it at each step and
//! never write before it says so.
//!
//! 1. **open**: the leader deletes the run id's rows of an earlier attempt
//!    and writes an `open` row with a fresh random generation. A follower
//!    registers for the newest fresh `open` it sees (not older than the
//!    barrier timeout, not `closed`); should the leader open again (an
//!    earlier attempt's row was still there), the follower registers anew,
//!    so leftover rows of an earlier run with the same id never mix in.
//! 2. **hello** ([`Gate::exchange`]): each follower's arrival carries what
//!    it brings ([`Hello`]): its own settings (threads, `--client-rate`,
//!    machine, version) and the flags every client must give alike. The
//!    leader compares each arrival's flags with its own as soon as it sees
//!    it; a difference calls the run off at once (a `refused` row naming
//!    it, which every client prints, exit 2) rather than letting two
//!    runs wait for each other. When all are here and agree, its `go`
//!    carries every client's [`Member`] (the leader's own first), from
//!    which each client takes its share of the ids and of `--rate` in
//!    proportion to threads. This comes before any table is touched. The
//!    default run id hashes only some of the flags that must agree (see
//!    [`crate::config`]), so that clients whose flags differ still meet
//!    and are told so.
//! 3. **steps**: every step (`tables`, then per operation `prep:N` before
//!    its set-up, `start:N` before its first unit and, after a load,
//!    `done:N`) is an `arrive` row of each follower and a `go` row of the
//!    leader, all of one generation. The leader waits for every
//!    follower's arrival, does its part (the tables, a load's truncate,
//!    the load mark), then writes `go`; for `start:N` the `go` carries an
//!    instant on the database's clock a little ahead, at which every
//!    client starts its workers. Each client translates the instant to its
//!    own clock through a round trip, and measures afterwards how far from
//!    it it really started (its start skew). At `done:N` each follower's
//!    arrival says whether its share of the load finished and how many
//!    rows it wrote, so that the leader marks the table loaded with the
//!    whole count once every share is in ([`StartBarrier::gather`]).
//! 4. A client missing at a step ends the wait after `--barrier-timeout`:
//!    the leader names the missing indexes and writes an `abort` row,
//!    which the followers read and report; everyone exits 1. A follower
//!    that gives up names the others it cannot see, never itself. The
//!    first meeting comes before any table is touched, so nothing is
//!    written.
//!
//! Work is split by [`crate::workload::kit::partition::ClientShare`] (loads,
//! inserted keys) and by the plan (`--rate` over the clients' threads,
//! seeds per client); see [`crate::config`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio_postgres::Client;

use crate::db::endpoint::Endpoint;
use crate::db::{connect, unnamed};
use crate::error::{Error, Result};
use crate::runner::barrier::{Notes, StartBarrier};

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
    /// What this client brings to the run: its own settings.
    pub me: Member,
    /// The flags every client must give alike, each as written (`-r`,
    /// `6000`): compared at the first meeting.
    pub terms: Vec<(String, String)>,
    /// `--rate`: the whole run's target, which the clients without a
    /// `--client-rate` share in proportion to their threads.
    pub whole_rate: Option<f64>,
    /// Every client's threads in index order, once the clients met
    /// (empty before): the shares of `--rate` and of each `--find-max`
    /// step's target follow them.
    pub threads_of: Vec<usize>,
}

/// One client as the others see it: what is its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub index: usize,
    /// `-t`: the client's share of loads and of `--rate` follows it.
    pub threads: usize,
    /// `--client-rate`: the client's own pace in place of a share of
    /// `--rate`.
    pub client_rate: Option<f64>,
    /// The machine (its host name), for the messages.
    pub host: String,
    /// The tool's version and commit.
    pub version: String,
}

/// What a follower brings to the first meeting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub member: Member,
    pub terms: Vec<(String, String)>,
}

/// How `other`'s flags differ from `mine`, in the words of the command
/// line: `client 1 runs -r 6000, client 0 -r 5000`. None when they agree.
pub fn difference(mine: &Hello, other: &Hello) -> Option<String> {
    let value = |h: &Hello, flag: &str| {
        h.terms
            .iter()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.clone())
    };
    let mut flags: Vec<&str> = mine.terms.iter().map(|(f, _)| f.as_str()).collect();
    for (f, _) in &other.terms {
        if !flags.contains(&f.as_str()) {
            flags.push(f);
        }
    }
    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    for flag in flags {
        let (a, b) = (value(other, flag), value(mine, flag));
        if a != b {
            theirs.push(spell(flag, a.as_deref()));
            ours.push(spell(flag, b.as_deref()));
        }
    }
    if theirs.is_empty() {
        return None;
    }
    Some(format!(
        "client {} runs {}, client {} {}",
        other.member.index,
        theirs.join(" "),
        mine.member.index,
        ours.join(" ")
    ))
}

/// A flag with its value as a user writes it: `-r 6000`, `--drop`,
/// `without --seed`.
fn spell(flag: &str, value: Option<&str>) -> String {
    match value {
        None | Some("none" | "false") => format!("without {flag}"),
        Some("true") => flag.to_string(),
        Some(v) => format!("{flag} {v}"),
    }
}

/// "1 thread" / "6 threads".
fn threads_text(n: usize) -> String {
    if n == 1 {
        "1 thread".to_string()
    } else {
        format!("{n} threads")
    }
}

/// Says who is in the run, and warns of versions that differ.
pub fn describe_members(run_id: &str, members: &[Member]) -> Vec<String> {
    let all: usize = members.iter().map(|m| m.threads).sum();
    let each: Vec<String> = members
        .iter()
        .map(|m| {
            let rate = m
                .client_rate
                .map(|r| format!(", --client-rate {r}"))
                .unwrap_or_default();
            format!(
                "client {} {} on {}{rate}",
                m.index,
                threads_text(m.threads),
                m.host
            )
        })
        .collect();
    let mut lines = vec![format!(
        ">> run {run_id}: all {} clients are here, {} in all: {}",
        members.len(),
        threads_text(all),
        each.join("; ")
    )];
    if let Some(first) = members.first() {
        for m in members.iter().filter(|m| m.version != first.version) {
            lines.push(format!(
                "warning: run {run_id}: client {} runs ysql-bench {}, client {} {}: their reports may not merge",
                m.index, m.version, first.index, first.version
            ));
        }
    }
    lines
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
        self.meet_with(step, None).await.map(|(at, _)| at)
    }

    /// [`Gate::meet`], a follower's arrival carrying `note`: the leader
    /// gets every follower's (index, note), a follower the leader's `go`
    /// note.
    async fn meet_with(&self, step: &str, note: Option<&str>) -> Result<(f64, Notes)> {
        let client = connect::get(&self.pool, &self.target).await?;
        let waited = if self.plan.leader() {
            self.wait_arrivals(&client, step, &|_| Ok(()))
                .await
                .map(|notes| (0.0, notes))
        } else {
            self.wait_go(&client, step, note)
                .await
                .map(|(at, go)| (at, vec![(0, go)]))
        };
        if let Err(e) = &waited
            && self.plan.leader()
        {
            self.abort(&client, "abort", &e.to_string()).await;
        }
        waited
    }

    /// The first meeting: every client says what it brings. The leader
    /// checks each follower's flags against its own as soon as it arrives
    /// and refuses a difference for everyone; once all are here it hands
    /// every client the list of all of them. Returns that list, in
    /// index order.
    pub async fn exchange(&self) -> Result<Vec<Member>> {
        const STEP: &str = "hello";
        let mine = Hello {
            member: self.plan.me.clone(),
            terms: self.plan.terms.clone(),
        };
        if !self.plan.leader() {
            let note = serde_json::to_string(&mine)
                .map_err(|e| Error::run(format!("cannot write this client's hello: {e}")))?;
            let (_, notes) = self.meet_with(STEP, Some(&note)).await?;
            let go = notes.into_iter().find_map(|(_, n)| n).unwrap_or_default();
            let members: Vec<Member> = serde_json::from_str(&go).map_err(|e| {
                Error::run(format!(
                    "run {}: client 0's list of the clients cannot be read ({e}): is it another version of ysql-bench?",
                    self.plan.run_id
                ))
            })?;
            self.passed();
            return Ok(members);
        }
        let client = connect::get(&self.pool, &self.target).await?;
        let check = |notes: &Notes| self.check_hellos(&mine, notes);
        let notes = match self.wait_arrivals(&client, STEP, &check).await {
            Ok(n) => n,
            Err(e) => {
                let phase = if matches!(e, Error::Usage(_)) {
                    "refused"
                } else {
                    "abort"
                };
                self.abort(&client, phase, &e.to_string()).await;
                return Err(e);
            }
        };
        let mut members = vec![mine.member.clone()];
        for (_, note) in &notes {
            if let Some(h) = note
                .as_deref()
                .and_then(|n| serde_json::from_str::<Hello>(n).ok())
            {
                members.push(h.member);
            }
        }
        members.sort_by_key(|m| m.index);
        let note = serde_json::to_string(&members)
            .map_err(|e| Error::run(format!("cannot write the list of the clients: {e}")))?;
        let g = self.generation();
        insert(
            &client,
            &self.plan.run_id,
            0,
            "go:hello",
            g,
            0.0,
            Some(&note),
        )
        .await?;
        self.passed();
        Ok(members)
    }

    /// The leader: the followers' hellos so far, each against its own
    /// flags; a usage error naming the first difference.
    fn check_hellos(&self, mine: &Hello, notes: &Notes) -> Result<()> {
        for (index, note) in notes {
            let Some(theirs) = note
                .as_deref()
                .and_then(|n| serde_json::from_str::<Hello>(n).ok())
            else {
                return Err(Error::usage(format!(
                    "run {}: client {index} speaks another version of the barrier: run the same ysql-bench on every client",
                    self.plan.run_id
                )));
            };
            if let Some(d) = difference(mine, &theirs) {
                return Err(Error::usage(format!(
                    "run {}: the clients' flags differ: {d}: give every client the same flags but its own (-t, --client-rate, --client-index, the connection and the reports)",
                    self.plan.run_id
                )));
            }
        }
        Ok(())
    }

    /// The leader only: lets the followers past `step`, at `at_s` on the
    /// database's clock (0: at once).
    pub async fn release(&self, step: &str, at_s: f64) -> Result<()> {
        self.release_with(step, at_s, None).await
    }

    /// [`Gate::release`], the `go` row carrying `note` to every follower.
    pub async fn release_with(&self, step: &str, at_s: f64, note: Option<&str>) -> Result<()> {
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
            note,
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
            self.abort(&client, "abort", why).await;
        }
    }

    /// Calls the run off for the followers: `abort` (a failure, exit 1)
    /// or `refused` (flags that differ, exit 2), with why; then closes
    /// the run, so that a client of a later attempt under the same run id
    /// does not register for this one and read its end.
    async fn abort(&self, client: &Client, phase: &str, why: &str) {
        let g = self.generation();
        let id = &self.plan.run_id;
        let _ = insert(client, id, 0, phase, g, 0.0, Some(why)).await;
        let _ = insert(client, id, 0, "closed", g, 0.0, None).await;
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

    /// The leader: waits until every follower has arrived at `step`;
    /// their (index, note). `check` sees the arrivals at every look and
    /// may end the wait with an error.
    async fn wait_arrivals(
        &self,
        client: &Client,
        step: &str,
        check: &(dyn Fn(&Notes) -> Result<()> + Sync),
    ) -> Result<Notes> {
        let phase = format!("arrive:{step}");
        let generation = self.generation();
        let deadline = Instant::now() + self.timeout();
        let want = self.plan.clients - 1;
        loop {
            let rows = unnamed::query(
                client,
                &format!(
                    "select client, note from {BARRIER_TABLE} where run_id = $1 and phase = $2 and generation = $3 order by client"
                ),
                &[&self.plan.run_id, &phase, &generation],
            )
            .await
                .map_err(|e| Error::db("cannot read the barrier", e))?;
            let here: Notes = rows
                .iter()
                .filter_map(|r| {
                    let c = usize::try_from(r.try_get::<_, i32>(0).ok()?).ok()?;
                    Some((c, r.try_get::<_, Option<String>>(1).ok().flatten()))
                })
                .collect();
            check(&here)?;
            if here.len() >= want {
                return Ok(here);
            }
            if Instant::now() >= deadline {
                let missing: Vec<String> = (1..self.plan.clients)
                    .filter(|c| !here.iter().any(|(h, _)| h == c))
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

    /// A follower: arrives at `step` (with `note`) and waits for the
    /// leader's `go`; its instant and note.
    async fn wait_go(
        &self,
        client: &Client,
        step: &str,
        note: Option<&str>,
    ) -> Result<(f64, Option<String>)> {
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
                     and phase in ('open', 'closed', 'abort', 'refused', $2)"
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
                insert(client, &self.plan.run_id, me, &arrive, current, 0.0, note).await?;
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
                if r.phase == "refused" {
                    return Err(Error::usage(r.note.clone().unwrap_or_default()));
                }
                if r.phase == go {
                    return Ok((r.at_s, r.note.clone()));
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
        // This client is here: it names only the others it cannot see.
        let missing: Vec<String> = (0..self.plan.clients)
            .filter(|&c| c != self.plan.index)
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

/// The runner's view of the gate: the steps it meets at around each
/// operation; the leader's release lets the followers past at once.
impl StartBarrier for Gate {
    fn leads(&self) -> bool {
        self.plan.leader()
    }
    fn meet<'a>(&'a self, step: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { Gate::meet(self, step).await.map(|_| ()) })
    }
    fn gather<'a>(&'a self, step: &'a str, note: &'a str) -> BoxFuture<'a, Result<Notes>> {
        Box::pin(async move {
            // The leader: every follower's note; a follower: the note of
            // the leader's release, as (0, note).
            let (_, notes) = self.meet_with(step, Some(note)).await?;
            Ok(notes)
        })
    }
    fn release<'a>(&'a self, step: &'a str, note: Option<&'a str>) -> BoxFuture<'a, Result<()>> {
        Box::pin(Gate::release_with(self, step, 0.0, note))
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

    fn hello(index: usize, terms: &[(&str, &str)]) -> Hello {
        Hello {
            member: Member {
                index,
                threads: index + 1,
                client_rate: None,
                host: format!("h{index}"),
                version: "0.2.0 (x)".to_string(),
            },
            terms: terms
                .iter()
                .map(|(f, v)| (f.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_difference_is_named_as_the_command_lines_say_it() {
        let leader = hello(0, &[("-o", "select"), ("-r", "5000"), ("--drop", "false")]);
        let same = hello(1, &[("-o", "select"), ("-r", "5000"), ("--drop", "false")]);
        // Threads and hosts are each client's own.
        assert_eq!(difference(&leader, &same), None);
        let rows = hello(1, &[("-o", "select"), ("-r", "6000"), ("--drop", "false")]);
        assert_eq!(
            difference(&leader, &rows).as_deref(),
            Some("client 1 runs -r 6000, client 0 -r 5000")
        );
        let two = hello(2, &[("-o", "select"), ("-r", "6000"), ("--drop", "true")]);
        assert_eq!(
            difference(&leader, &two).as_deref(),
            Some("client 2 runs -r 6000 --drop, client 0 -r 5000 without --drop")
        );
        // A flag one version knows and the other does not.
        let newer = hello(
            1,
            &[
                ("-o", "select"),
                ("-r", "5000"),
                ("--drop", "false"),
                ("--seed", "7"),
            ],
        );
        assert_eq!(
            difference(&leader, &newer).as_deref(),
            Some("client 1 runs --seed 7, client 0 without --seed")
        );
    }

    #[test]
    fn the_members_line_counts_every_clients_threads() {
        let m: Vec<Member> = (0..3).map(|i| hello(i, &[]).member).collect();
        let lines = describe_members("r", &m);
        assert_eq!(
            lines[0],
            ">> run r: all 3 clients are here, 6 threads in all: client 0 1 thread on h0; client 1 2 threads on h1; client 2 3 threads on h2"
        );
        assert_eq!(lines.len(), 1);
        let mut old = m.clone();
        old[2].version = "0.1.0 (y)".to_string();
        assert!(describe_members("r", &old)[1].contains("client 2 runs ysql-bench 0.1.0 (y)"));
    }
}
