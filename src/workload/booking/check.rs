//! `booking-check`, and the checks after `booking`: the seats of each
//! flight and day equal its audit counter, each seat has one payment.

use tokio_postgres::Client;

use super::schema::{BOOKING_TABLES, name};
use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::kit::check_only::CheckOnly;
use crate::workload::{Check, Settings, Spec, Workload};

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

pub(super) fn build_check(spec: &'static Spec, _s: &Settings) -> Result<Box<dyn Workload>> {
    Ok(Box::new(CheckOnly::new(
        spec,
        &BOOKING_TABLES,
        name("schedule"),
        |client| Box::pin(run_checks(client)),
    )))
}
