//! The five booking tables: their DDL for either flavour, and the fixed
//! data (aircraft, airports, the calendar's first day).

use crate::db::dialect::Flavor;
use crate::db::schema::TableDef;
use crate::db::sql::TableName;
use crate::workload::Tables;

/// Aircraft types.
pub(super) const AIRCRAFT: [(&str, i32); 6] = [
    ("A320", 180),
    ("A321", 220),
    ("B737", 189),
    ("B787", 296),
    ("E190", 100),
    ("A350", 325),
];
/// Airports flights go between.
pub(super) const AIRPORTS: [&str; 16] = [
    "MAD", "BCN", "LHR", "CDG", "FRA", "AMS", "JFK", "SFO", "NRT", "SIN", "DXB", "GRU", "SYD",
    "YYZ", "MEX", "JNB",
];

pub(super) fn name(t: &str) -> TableName {
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

#[cfg(test)]
mod tests {
    use super::*;

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
