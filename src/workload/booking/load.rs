//! `booking-load`: the aircraft in the set-up, the flights by COPY over
//! the workers.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::FLIGHTS;
use super::schema::{AIRCRAFT, AIRPORTS, BOOKING_TABLES, name};
use crate::db::schema;
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::kit::copy_load::{CopyLoad, Lines};
use crate::workload::{
    BoxFuture, DynOperation, Facts, Settings, Spec, TableSet, Workload, worker_seed,
};

pub(super) fn build_load(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
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
}
