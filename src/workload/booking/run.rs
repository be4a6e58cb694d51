//! `booking` as a [`Workload`]: its facts, the user ids of a run, the
//! check that the flights are loaded, and the workers it makes.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::Client;

use super::check::run_checks;
use super::schema::{BOOKING_TABLES, name};
use super::unit::{BookingOp, STEPS};
use super::{BookingSettings, FLIGHTS};
use crate::db::sql::Isolation;
use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::kit::keys::{KeyDistribution, KeyPicker};
use crate::workload::{
    BoxFuture, Check, DynOperation, Facts, Settings, Spec, StatementTimes, TableSet, Workload,
    worker_seed,
};

pub(super) fn build_booking(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
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
            protocol: s.protocol,
            st: None,
            staged: (0, 0, 0, 0.0),
            stats: StatementTimes::new(STEPS, crate::workload::kit::query_class),
        })
    }
}
