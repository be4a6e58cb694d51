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
//!
//! A file an idea: the flag ([`args`]), the tables (`schema`), the load
//! (`load`), the checks (`check`), the booking workload (`run`) and a
//! worker's transaction (`unit`).

pub mod args;
mod check;
mod load;
mod run;
mod schema;
mod unit;

pub use check::run_checks;
pub use schema::{BOOKING_TABLES, table_defs};

use crate::workload::{Role, Spec};
use check::build_check;
use load::build_load;
use run::build_booking;

/// Flights in `schedule`, as in the original benchmark (about 15000).
pub const FLIGHTS: u64 = 15_000;

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

/// `-o booking-cleanup`.
pub static CLEANUP: Spec = crate::workload::kit::cleanup::spec(
    "booking-cleanup",
    "flight booking: drop its five tables, those ysql-bench created",
    |spec, s| crate::workload::kit::cleanup::build(spec, s, Some(&FAMILY), &[]),
);

/// The family's tables, as the clean-ups know them.
pub static FAMILY: crate::workload::kit::cleanup::Family = crate::workload::kit::cleanup::Family {
    name: "booking",
    tables: &BOOKING_TABLES,
    more: None,
    routines: false,
};

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
