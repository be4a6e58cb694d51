//! A flight-booking transaction, after OnGres' PostgreSQL-vs-MongoDB
//! benchmark: `booking-load`, `booking` and `booking-check`.
//!
//! Tables `aircraft`, `schedule` (15000 flights, made from `--seed`),
//! `seat` (primary key user, flight, day), `payment` and `audit` (primary
//! key flight, day; the seats occupied). One unit books a seat: it picks
//! a flight (`--key-distribution`, uniform by default) and a day within
//! `--day-range` (fewer days, hotter audit rows: the contention knob),
//! takes a user id that no other worker uses (one counter, started past
//! every user in the table), and in one transaction at repeatable read
//! (unless `--isolation` says otherwise) inserts the seat, inserts the
//! payment and adds one to the audit row, then commits. A serialization
//! failure or deadlock rolls back and books again, without limit by
//! default, as the original; latency includes the retries, and the
//! successful attempt alone is reported beside it.
//!
//! After `booking`, and as `-o booking-check`, the tables are checked:
//! the seats of each flight and day equal its audit counter, and each
//! seat has exactly one payment. A broken check fails the run.

pub mod args;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::db::dialect::Flavor;
use crate::db::schema::{self, TableDef};
use crate::db::sql::Isolation;
use crate::db::sql::TableName;
use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::kit::check_only::CheckOnly;
use crate::workload::kit::copy_load::{CopyLoad, Lines};
use crate::workload::kit::keys::{KeyDistribution, KeyPicker};
use crate::workload::{
    BoxFuture, Check, DynOperation, Facts, Operation, Outcome, Role, Settings, Spec,
    StatementStats, TableSet, Tables, Workload, worker_seed,
};

/// Flights in `schedule`, as in the original benchmark (about 15000).
pub const FLIGHTS: u64 = 15_000;
/// Aircraft types.
const AIRCRAFT: [(&str, i32); 6] = [
    ("A320", 180),
    ("A321", 220),
    ("B737", 189),
    ("B787", 296),
    ("E190", 100),
    ("A350", 325),
];
/// Airports flights go between.
const AIRPORTS: [&str; 16] = [
    "MAD", "BCN", "LHR", "CDG", "FRA", "AMS", "JFK", "SFO", "NRT", "SIN", "DXB", "GRU", "SYD",
    "YYZ", "MEX", "JNB",
];
/// The first day of the booking calendar.
const FIRST_DAY: &str = "2027-01-01";

/// The booking flags.
#[derive(Clone, Debug)]
pub struct BookingSettings {
    pub day_range: u32,
}

impl Default for BookingSettings {
    fn default() -> Self {
        BookingSettings { day_range: 30 }
    }
}

fn name(t: &str) -> TableName {
    TableName::new(t).unwrap_or_else(|_| unreachable!("a fixed, valid name"))
}

fn cols(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The five tables, with their DDL for the flavour (primary keys
/// hash-sharded on their first column on YugabyteDB).
pub fn table_defs(flavor: Flavor, tablets: Option<u32>) -> Vec<TableDef> {
    let pk = |cols: &str| match flavor {
        Flavor::Postgres => format!("primary key ({cols})"),
        Flavor::Yugabyte => {
            let mut it = cols.split(", ");
            let first = it.next().unwrap_or(cols);
            let rest: Vec<&str> = it.collect();
            if rest.is_empty() {
                format!("primary key ({first} hash)")
            } else {
                format!("primary key ({first} hash, {})", rest.join(", "))
            }
        }
    };
    let split = match (flavor, tablets) {
        (Flavor::Yugabyte, Some(n)) => format!(" split into {n} tablets"),
        _ => String::new(),
    };
    vec![
        TableDef {
            name: name("aircraft"),
            columns: cols(&[
                ("aircraft_id", "integer"),
                ("model", "text"),
                ("seats", "integer"),
            ]),
            shape: "aircraft_id integer, model text, seats integer",
            ddl: format!(
                "create table aircraft (aircraft_id integer, model text, seats integer, {})",
                pk("aircraft_id")
            ),
        },
        TableDef {
            name: name("schedule"),
            columns: cols(&[
                ("schedule_id", "integer"),
                ("origin", "text"),
                ("destination", "text"),
                ("departure", "time without time zone"),
                ("aircraft_id", "integer"),
                ("price", "numeric(10,2)"),
            ]),
            shape: "schedule_id integer, origin, destination, departure, aircraft_id, price",
            ddl: format!(
                "create table schedule (schedule_id integer, origin text, destination text, \
                 departure time, aircraft_id integer, price numeric(10,2), {}){split}",
                pk("schedule_id")
            ),
        },
        TableDef {
            name: name("seat"),
            columns: cols(&[
                ("user_id", "bigint"),
                ("schedule_id", "integer"),
                ("day", "date"),
                ("booked_at", "timestamp with time zone"),
            ]),
            shape: "user_id bigint, schedule_id integer, day date, booked_at",
            ddl: format!(
                "create table seat (user_id bigint, schedule_id integer, day date, \
                 booked_at timestamptz not null default now(), {}){split}",
                pk("user_id, schedule_id, day")
            ),
        },
        TableDef {
            name: name("payment"),
            columns: cols(&[
                ("user_id", "bigint"),
                ("schedule_id", "integer"),
                ("day", "date"),
                ("amount", "numeric(10,2)"),
                ("paid_at", "timestamp with time zone"),
            ]),
            shape: "user_id bigint, schedule_id integer, day date, amount, paid_at",
            ddl: format!(
                "create table payment (user_id bigint, schedule_id integer, day date, \
                 amount numeric(10,2) not null, paid_at timestamptz not null default now(), {}){split}",
                pk("user_id, schedule_id, day")
            ),
        },
        TableDef {
            name: name("audit"),
            columns: cols(&[
                ("schedule_id", "integer"),
                ("day", "date"),
                ("seats_occupied", "integer"),
            ]),
            shape: "schedule_id integer, day date, seats_occupied integer",
            ddl: format!(
                "create table audit (schedule_id integer, day date, seats_occupied integer not null, {}){split}",
                pk("schedule_id, day")
            ),
        },
    ]
}

/// The booking tables.
pub static BOOKING_TABLES: Tables = Tables {
    key: "booking",
    loader: "booking-load",
    defs: |s, flavor| Ok(table_defs(flavor, s.tablets)),
    // A load leaves no booking behind.
    left_empty: &["seat", "payment", "audit"],
    load_flags: |_| Vec::new(),
};

/// `-o booking-cleanup`.
pub static CLEANUP: Spec = crate::workload::cleanup::spec(
    "booking-cleanup",
    "flight booking: drop its five tables, those ysql-bench created",
    |spec, s| crate::workload::cleanup::build(spec, s, Some(&crate::workload::cleanup::BOOKING)),
);

/// `-o booking-load`.
pub static LOAD: Spec = Spec {
    name: "booking-load",
    aliases: &[],
    about: "flight booking: load aircraft and 15000 flights, empty seats, payments, audit",
    role: Role::Load,
    paced: true,
    writes: true,
    drops: false,
    unit: "batch",
    units: "batches",
    build: build_load,
};
/// `-o booking`.
pub static BOOKING: Spec = Spec {
    name: "booking",
    aliases: &[],
    about: "flight booking: seat + payment + audit counter in one transaction, then checked",
    role: Role::Query,
    paced: true,
    writes: true,
    drops: false,
    unit: "booking",
    units: "bookings",
    build: build_booking,
};
/// `-o booking-check`.
pub static CHECK: Spec = Spec {
    name: "booking-check",
    aliases: &[],
    about: "flight booking: check seats against the audit counters and the payments",
    role: Role::Query,
    paced: false,
    writes: false,
    drops: false,
    unit: "check",
    units: "checks",
    build: build_check,
};

// ---------------------------------------------------------------- load

fn build_load(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Load {
        spec,
        facts: Facts {
            batch_text: format!("{} flights per COPY", s.batch_size),
            ..Facts::new(spec, name("schedule"))
        },
        settings: s.clone(),
        schedule: name("schedule"),
    }))
}

struct Load {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    schedule: TableName,
}

impl Workload for Load {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &BOOKING_TABLES
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let filled = [name("aircraft"), self.schedule.clone()];
            schema::require_privileges(client, &filled, &["INSERT"], self.spec.name).await?;
            client
                .batch_execute("truncate table aircraft, schedule, seat, payment, audit")
                .await
                .map_err(|e| Error::db("cannot empty the booking tables", e))?;
            schema::mark_loading(client, &self.schedule).await?;
            let mut sql = String::from("insert into aircraft (aircraft_id, model, seats) values ");
            for (i, (model, seats)) in AIRCRAFT.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("({}, '{model}', {seats})", i + 1));
            }
            client
                .batch_execute(&sql)
                .await
                .map_err(|e| Error::db("cannot load the aircraft", e))
        })
    }

    fn finish_load<'a>(&'a self, client: &'a Client, rows: u64) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            client
                .batch_execute("analyze aircraft; analyze schedule")
                .await
                .map_err(|e| Error::db("cannot analyze the booking tables", e))?;
            schema::mark_loaded(client, &self.schedule, rows).await
        })
    }

    /// This client's share of the 15000 flights, whatever `-r` says.
    fn load_rows(&self) -> Option<u64> {
        let s = &self.settings;
        Some(
            (0..s.threads.max(1))
                .map(|t| {
                    let r = s.share(FLIGHTS, t);
                    r.end - r.start
                })
                .sum(),
        )
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        Box::new(CopyLoad::new(
            "copy schedule (schedule_id, origin, destination, departure, aircraft_id, price) from stdin"
                .to_string(),
            s.share(FLIGHTS, thread),
            s.batch_size,
            Flights { seed: s.seed },
            s.prepared,
        ))
    }
}

/// The flights of `schedule`, as COPY lines.
struct Flights {
    seed: u64,
}

impl Lines for Flights {
    fn line(&self, n: u64, out: &mut Vec<u8>) {
        let mut text = String::with_capacity(48);
        flight_line(self.seed, n, &mut text);
        out.extend_from_slice(text.as_bytes());
    }

    fn what(&self) -> &'static str {
        "flights"
    }
}

/// Flight `n` (0-based) as a COPY line: schedule id n+1, a route, a
/// departure time, an aircraft and a price, all from (seed, n).
fn flight_line(seed: u64, n: u64, out: &mut String) {
    use std::fmt::Write as _;
    let mut rng = SmallRng::seed_from_u64(worker_seed(seed, n as usize, 19));
    let from = rng.random_range(0..AIRPORTS.len());
    let to = (from + rng.random_range(1..AIRPORTS.len())) % AIRPORTS.len();
    let minutes = rng.random_range(0..24 * 12) * 5;
    let aircraft = rng.random_range(1..=AIRCRAFT.len());
    let cents: u32 = rng.random_range(4_900..=99_900);
    let _ = writeln!(
        out,
        "{}\t{}\t{}\t{:02}:{:02}:00\t{aircraft}\t{}.{:02}",
        n + 1,
        AIRPORTS[from],
        AIRPORTS[to],
        minutes / 60,
        minutes % 60,
        cents / 100,
        cents % 100
    );
}

// ---------------------------------------------------------------- checks

/// The consistency conditions of the booking tables.
pub async fn run_checks(client: &Client) -> Result<Vec<Check>> {
    let count = |sql: &'static str| async move {
        unnamed::query_one(client, sql, &[])
            .await
            .map(|r| r.get::<_, i64>(0))
            .map_err(|e| Error::db("cannot check the booking tables", e))
    };
    let seats = count("select count(*) from seat").await?;
    let differ = count(
        "select count(*) from (select schedule_id, day, count(*) as n from seat group by 1, 2) s \
         full join audit a using (schedule_id, day) \
         where coalesce(s.n, 0) <> coalesce(a.seats_occupied, 0)",
    )
    .await?;
    let pairs = count("select count(*) from audit").await?;
    let unpaid = count(
        "select count(*) from seat s where (select count(*) from payment p \
         where p.user_id = s.user_id and p.schedule_id = s.schedule_id and p.day = s.day) <> 1",
    )
    .await?;
    let stray = count(
        "select count(*) from payment p where not exists (select 1 from seat s \
         where s.user_id = p.user_id and s.schedule_id = p.schedule_id and s.day = p.day)",
    )
    .await?;
    Ok(vec![
        Check {
            name: "seats equal the audit counters".to_string(),
            held: differ == 0,
            detail: format!(
                "{differ} of {pairs} (flight, day) counters differ from the seats booked"
            ),
        },
        Check {
            name: "one payment per seat".to_string(),
            held: unpaid == 0 && stray == 0,
            detail: format!(
                "{seats} seats: {unpaid} without exactly one payment, {stray} payments without a seat"
            ),
        },
    ])
}

fn build_check(spec: &'static Spec, _s: &Settings) -> Result<Box<dyn Workload>> {
    Ok(Box::new(CheckOnly::new(
        spec,
        &BOOKING_TABLES,
        name("schedule"),
        |client| Box::pin(run_checks(client)),
    )))
}

// ---------------------------------------------------------------- booking

fn build_booking(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Booking {
        spec,
        facts: Facts {
            description: format!(
                "{FLIGHTS} flights over {} day(s); isolation {}; keys {}",
                s.family::<BookingSettings>().day_range,
                s.isolation.unwrap_or(Isolation::RepeatableRead).sql(),
                s.keys.unwrap_or(KeyDistribution::Uniform).name()
            ),
            // As the original: a booking is retried until it goes through.
            default_max_tries: 0,
            stat_tables: ["aircraft", "schedule", "seat", "payment", "audit"]
                .map(String::from)
                .to_vec(),
            ..Facts::new(spec, name("schedule"))
        },
        settings: s.clone(),
        next_user: Arc::new(AtomicI64::new(1)),
    }))
}

struct Booking {
    spec: &'static Spec,
    facts: Facts,
    settings: Settings,
    /// The next user id, shared by the workers: no two book as one user
    /// (a per-run prefix over a counter, see `set_up`).
    next_user: Arc<AtomicI64>,
}

impl Workload for Booking {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        &BOOKING_TABLES
    }

    fn set_up<'a>(&'a self, _client: &'a Client) -> BoxFuture<'a, Result<()>> {
        // User ids of this run: a random 31-bit prefix of its own over a
        // counter, so that no two workers, no two runs and no two clients
        // running at once book as one user (two runs share a prefix with
        // a chance of one in 2^31).
        let prefix = i64::from(rand::random::<u32>() >> 1) << 32;
        self.next_user.store(prefix + 1, Ordering::Relaxed);
        Box::pin(std::future::ready(Ok(())))
    }

    fn check_loaded<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let flights: i64 = unnamed::query_one(client, "select count(*) from schedule", &[])
                .await
                .map_err(|e| Error::db("cannot count the flights", e))?
                .get(0);
            Ok((flights as u64 != FLIGHTS).then(|| {
                format!(
                    "schedule holds {flights} flights, not {FLIGHTS}: run -o booking-load first"
                )
            }))
        })
    }

    fn scale(&self) -> Option<String> {
        Some(format!("{FLIGHTS} flights"))
    }

    fn checks<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<Vec<Check>>> {
        Box::pin(run_checks(client))
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let s = &self.settings;
        let keys = s.keys.unwrap_or(KeyDistribution::Uniform);
        let start = FLIGHTS * thread as u64 / s.threads.max(1) as u64;
        let isolation = s.isolation.unwrap_or(Isolation::RepeatableRead);
        Box::new(BookingOp {
            rng: SmallRng::seed_from_u64(worker_seed(s.seed, thread, 23)),
            keys: KeyPicker::new(keys, FLIGHTS, start),
            day_range: s.family::<BookingSettings>().day_range,
            begin: format!("begin isolation level {}", isolation.sql()),
            next_user: self.next_user.clone(),
            prepared: s.prepared,
            st: None,
            staged: (0, 0, 0, 0.0),
            stats: STEPS.iter().map(|n| StatementStats::new(n)).collect(),
        })
    }
}

struct Statements {
    seat: Statement,
    payment: Statement,
    audit: Statement,
}

struct BookingOp {
    rng: SmallRng,
    keys: KeyPicker,
    day_range: u32,
    begin: String,
    next_user: Arc<AtomicI64>,
    prepared: bool,
    st: Option<Statements>,
    /// user id, flight, day offset, amount.
    staged: (i64, i32, i32, f64),
    /// Per statement of the transaction, in the order of STEPS.
    stats: Vec<StatementStats>,
}

const SEAT: &str =
    "insert into seat (user_id, schedule_id, day) values ($1, $2, date '2027-01-01' + $3::int)";
const PAYMENT: &str = "insert into payment (user_id, schedule_id, day, amount) \
                       values ($1, $2, date '2027-01-01' + $3::int, $4::float8::numeric(10,2))";
const AUDIT: &str = "insert into audit (schedule_id, day, seats_occupied) \
                     values ($1, date '2027-01-01' + $2::int, 1) on conflict (schedule_id, day) \
                     do update set seats_occupied = audit.seats_occupied + 1";

impl BookingOp {
    /// Runs statement `k` of a booking (BEGIN, the seat, the payment,
    /// the audit counter, COMMIT), timing it into its figures.
    async fn step(&mut self, client: &Client, k: usize) -> Result<()> {
        let (user, flight, day, amount) = self.staged;
        let began = std::time::Instant::now();
        let fail = |e| Error::db(format!("booking: {} failed", STEPS[k]), e);
        match (&self.st, k) {
            (_, 0) => client.batch_execute(&self.begin).await.map_err(fail)?,
            (_, 4) => client.batch_execute("commit").await.map_err(fail)?,
            (Some(st), _) => {
                let p: Vec<&(dyn ToSql + Sync)> = match k {
                    1 => vec![&user, &flight, &day],
                    2 => vec![&user, &flight, &day, &amount],
                    _ => vec![&flight, &day],
                };
                let statement = [&st.seat, &st.payment, &st.audit][k - 1];
                client.execute(statement, &p).await.map_err(fail)?;
            }
            (None, _) => {
                let d = format!("date '{FIRST_DAY}' + {day}");
                let sql = match k {
                    1 => format!(
                        "insert into seat (user_id, schedule_id, day) values ({user}, {flight}, {d})"
                    ),
                    2 => format!(
                        "insert into payment (user_id, schedule_id, day, amount) values ({user}, {flight}, {d}, {amount:.2})"
                    ),
                    _ => format!(
                        "insert into audit (schedule_id, day, seats_occupied) values ({flight}, {d}, 1) \
                         on conflict (schedule_id, day) do update set seats_occupied = audit.seats_occupied + 1"
                    ),
                };
                client.batch_execute(&sql).await.map_err(fail)?;
            }
        }
        self.stats[k].record(began.elapsed());
        Ok(())
    }
}

/// The statements of a booking, as its per-statement figures name them.
const STEPS: [&str; 5] = ["begin", "seat", "payment", "audit", "commit"];

impl Operation for BookingOp {
    async fn prepare(&mut self, client: &Client) -> Result<()> {
        self.st = None;
        if !self.prepared {
            return Ok(());
        }
        let prep = |sql: &'static str| async move {
            client
                .prepare(sql)
                .await
                .map_err(|e| Error::db("cannot prepare the booking statements", e))
        };
        self.st = Some(Statements {
            seat: prep(SEAT).await?,
            payment: prep(PAYMENT).await?,
            audit: prep(AUDIT).await?,
        });
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let user = self.next_user.fetch_add(1, Ordering::Relaxed);
        let flight = (self.keys.next(&mut self.rng) + 1) as i32;
        let day = self.rng.random_range(0..self.day_range) as i32;
        let amount = f64::from(self.rng.random_range(4_900u32..=99_900)) / 100.0;
        self.staged = (user, flight, day, amount);
        true
    }

    fn unit_label(&self) -> Option<String> {
        Some(format!(
            "user {} on flight {} day {}",
            self.staged.0, self.staged.1, self.staged.2
        ))
    }

    async fn execute(&mut self, client: &Client) -> Result<Outcome> {
        for k in 0..STEPS.len() {
            if let Err(e) = self.step(client, k).await {
                // The error is the unit's; a failed rollback on a lost
                // connection adds nothing to it.
                let _ = client.batch_execute("rollback").await;
                return Err(e);
            }
        }
        Ok(Outcome {
            rows: 1,
            missing: 0,
        })
    }

    fn take_statements(&mut self) -> Vec<StatementStats> {
        self.stats
            .iter_mut()
            .map(|s| std::mem::replace(s, StatementStats::new(s.name)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flights_are_the_same_for_the_same_seed() {
        let (mut a, mut b) = (String::new(), String::new());
        flight_line(5, 42, &mut a);
        flight_line(5, 42, &mut b);
        assert_eq!(a, b);
        let f: Vec<&str> = a.trim_end().split('\t').collect();
        assert_eq!(f.len(), 6);
        assert_eq!(f[0], "43");
        assert_ne!(f[1], f[2], "a flight goes somewhere else");
    }

    #[test]
    fn the_ddl_hash_shards_on_yugabytedb() {
        let pg = table_defs(Flavor::Postgres, Some(3));
        assert!(
            pg[2]
                .ddl
                .contains("primary key (user_id, schedule_id, day))")
        );
        let yb = table_defs(Flavor::Yugabyte, Some(3));
        assert!(
            yb[2]
                .ddl
                .contains("primary key (user_id hash, schedule_id, day)) split into 3 tablets"),
            "{}",
            yb[2].ddl
        );
        assert!(yb[4].ddl.contains("primary key (schedule_id hash, day))"));
    }
}
