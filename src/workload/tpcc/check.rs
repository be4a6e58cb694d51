//! The consistency conditions of clause 3.3.2, checked after `tpcc` and
//! as `-o tpcc-check`.
//!
//! Each is one query that counts the warehouses, districts, orders or
//! customers that break it, so a broken condition says how far it is
//! broken; sums over `history`, which has no index on PostgreSQL (the
//! specification gives it no key), are grouped in one pass rather than
//! looked up per warehouse or district, which over a thousand districts
//! would read the table a thousand times. All twelve are checked, on every warehouse or, with
//! `--check-sample N`, on N warehouses drawn at random (every district,
//! order and customer of them): over thousands of warehouses the whole
//! check takes minutes, a sample seconds, and a condition a run breaks
//! it breaks in most warehouses. Remote order lines and payments reach
//! other warehouses, but every condition is about rows of one warehouse
//! (its districts, orders, customers, history by the customer's or the
//! paying warehouse), so a sample checks whole warehouses, not halves.
//!
//! Condition 11 is checked in a form that differs from the clause's text.
//! As written, count(ORDER) - count(NEW-ORDER) = 2100 per district, it is
//! the initial population's (clause 4.3.3.1: 3000 orders, 900 new orders)
//! and breaks at the first Delivery, which removes a new order and keeps
//! its order. What the transactions keep is the difference: a New-Order
//! adds one order and one new order (no change), a Delivery removes one
//! new order and adds one to its customer's C_DELIVERY_CNT (one more on
//! each side). So it is checked as count(ORDER) - count(NEW-ORDER) - 2100
//! = sum(C_DELIVERY_CNT): the clause's equation on the initial population
//! (every C_DELIVERY_CNT 0), kept by every transaction after it, broken
//! when one does half its work.

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use tokio_postgres::Client;

use crate::db::unnamed;
use crate::error::{Error, Result};
use crate::workload::Check;

// Condition 11's 2100: the orders of a district loaded as delivered.
const _: () = assert!(super::NEW_ORDERS_FROM - 1 == 2100);

/// (condition, what it says, query counting the rows that break it, what
/// the rows are).
const CONDITIONS: &[(u32, &str, &str, &str)] = &[
    (
        1,
        "W_YTD = sum(D_YTD)",
        "select count(*) from warehouse w where W[w.w_id] and w.w_ytd <> \
         (select sum(d_ytd) from district where d_w_id = w.w_id)",
        "warehouses",
    ),
    (
        2,
        "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
        "select count(*) from district d where W[d.d_w_id] and (d.d_next_o_id - 1 <> \
         (select max(o_id) from orders where o_w_id = d.d_w_id and o_d_id = d.d_id) \
         or d.d_next_o_id - 1 <> coalesce((select max(no_o_id) from new_order \
         where no_w_id = d.d_w_id and no_d_id = d.d_id), d.d_next_o_id - 1))",
        "districts",
    ),
    (
        3,
        "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in new_order",
        "select count(*) from (select max(no_o_id) - min(no_o_id) + 1 as span, count(*) as n \
         from new_order where W[no_w_id] group by no_w_id, no_d_id) x where span <> n",
        "districts",
    ),
    (
        4,
        "sum(O_OL_CNT) = rows in order_line",
        "select count(*) from (select o_w_id, o_d_id, sum(o_ol_cnt) as n from orders \
         where W[o_w_id] group by 1, 2) o full join (select ol_w_id, ol_d_id, count(*) as n \
         from order_line where W[ol_w_id] group by 1, 2) l on o.o_w_id = l.ol_w_id and o.o_d_id = l.ol_d_id \
         where coalesce(o.n, 0) <> coalesce(l.n, 0)",
        "districts",
    ),
    (
        5,
        "O_CARRIER_ID is null exactly for the orders in new_order",
        "select count(*) from orders o left join new_order n on n.no_w_id = o.o_w_id \
         and n.no_d_id = o.o_d_id and n.no_o_id = o.o_id \
         where W[o.o_w_id] and (o.o_carrier_id is null) <> (n.no_o_id is not null)",
        "orders",
    ),
    (
        6,
        "O_OL_CNT = the order's rows in order_line",
        "select count(*) from orders o left join (select ol_w_id, ol_d_id, ol_o_id, count(*) as n \
         from order_line where W[ol_w_id] group by 1, 2, 3) l on l.ol_w_id = o.o_w_id \
         and l.ol_d_id = o.o_d_id and l.ol_o_id = o.o_id \
         where W[o.o_w_id] and coalesce(l.n, 0) <> o.o_ol_cnt",
        "orders",
    ),
    (
        7,
        "OL_DELIVERY_D is null exactly when O_CARRIER_ID is",
        "select count(*) from order_line l join orders o on o.o_w_id = l.ol_w_id \
         and o.o_d_id = l.ol_d_id and o.o_id = l.ol_o_id \
         where W[l.ol_w_id] and (l.ol_delivery_d is null) <> (o.o_carrier_id is null)",
        "order lines",
    ),
    (
        8,
        "W_YTD = sum(H_AMOUNT)",
        "select count(*) from warehouse w left join (select h_w_id, sum(h_amount) as s \
         from history where W[h_w_id] group by 1) h on h.h_w_id = w.w_id \
         where W[w.w_id] and w.w_ytd <> coalesce(h.s, 0)",
        "warehouses",
    ),
    (
        9,
        "D_YTD = sum(H_AMOUNT)",
        "select count(*) from district d left join (select h_w_id, h_d_id, sum(h_amount) as s \
         from history where W[h_w_id] group by 1, 2) h on h.h_w_id = d.d_w_id \
         and h.h_d_id = d.d_id where W[d.d_w_id] and d.d_ytd <> coalesce(h.s, 0)",
        "districts",
    ),
    (
        10,
        "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)",
        "select count(*) from customer c \
         left join (select o_w_id, o_d_id, o_c_id, sum(ol_amount) as s from orders \
         join order_line on ol_w_id = o_w_id and ol_d_id = o_d_id and ol_o_id = o_id \
         where W[o_w_id] and ol_delivery_d is not null group by 1, 2, 3) ol \
         on ol.o_w_id = c.c_w_id and ol.o_d_id = c.c_d_id and ol.o_c_id = c.c_id \
         left join (select h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) as s from history \
         where W[h_c_w_id] group by 1, 2, 3) h on h.h_c_w_id = c.c_w_id and h.h_c_d_id = c.c_d_id and h.h_c_id = c.c_id \
         where W[c.c_w_id] and c.c_balance <> coalesce(ol.s, 0) - coalesce(h.s, 0)",
        "customers",
    ),
    (
        11,
        "count(ORDER) - count(NEW-ORDER) - 2100 = sum(C_DELIVERY_CNT) (the 2100 orders loaded as delivered taken out)",
        "select count(*) from district d \
         left join (select o_w_id, o_d_id, count(*) as n from orders where W[o_w_id] group by 1, 2) o \
         on o.o_w_id = d.d_w_id and o.o_d_id = d.d_id \
         left join (select no_w_id, no_d_id, count(*) as n from new_order where W[no_w_id] group by 1, 2) n \
         on n.no_w_id = d.d_w_id and n.no_d_id = d.d_id \
         left join (select c_w_id, c_d_id, sum(c_delivery_cnt) as n from customer where W[c_w_id] group by 1, 2) c \
         on c.c_w_id = d.d_w_id and c.c_d_id = d.d_id \
         where W[d.d_w_id] and coalesce(o.n, 0) - coalesce(n.n, 0) - 2100 <> coalesce(c.n, 0)",
        "districts",
    ),
    (
        12,
        "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)",
        "select count(*) from customer c \
         left join (select o_w_id, o_d_id, o_c_id, sum(ol_amount) as s from orders \
         join order_line on ol_w_id = o_w_id and ol_d_id = o_d_id and ol_o_id = o_id \
         where W[o_w_id] and ol_delivery_d is not null group by 1, 2, 3) ol \
         on ol.o_w_id = c.c_w_id and ol.o_d_id = c.c_d_id and ol.o_c_id = c.c_id \
         where W[c.c_w_id] and c.c_balance + c.c_ytd_payment <> coalesce(ol.s, 0)",
        "customers",
    ),
];

/// The warehouses a check covers: all of them, or `--check-sample`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    All(i64),
    /// The sampled ids, of the warehouses there are.
    Sample(Vec<i32>, usize),
}

impl Scope {
    /// `n` warehouses drawn at random (from `seed`) among `ids`, or all
    /// of them when `n` is none or not fewer.
    fn of(ids: Vec<i32>, n: Option<u32>, seed: u64) -> Scope {
        match n {
            Some(n) if (n as usize) < ids.len() => {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0xC4EC_5A3F);
                let all = ids.len();
                let mut picked: Vec<i32> = ids.sample(&mut rng, n as usize).copied().collect();
                picked.sort_unstable();
                Scope::Sample(picked, all)
            }
            _ => Scope::All(ids.len() as i64),
        }
    }

    /// The condition's query with its warehouse filters (`W[column]`)
    /// filled in.
    fn sql(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len() + 64);
        let mut rest = template;
        while let Some(at) = rest.find("W[") {
            out.push_str(&rest[..at]);
            let tail = &rest[at + 2..];
            let end = tail.find(']').unwrap_or(tail.len());
            match self {
                Scope::All(_) => out.push_str("true"),
                Scope::Sample(..) => {
                    out.push_str(&tail[..end]);
                    out.push_str(" = any($1::int[])");
                }
            }
            rest = tail.get(end + 1..).unwrap_or("");
        }
        out.push_str(rest);
        out
    }

    fn describe(&self) -> String {
        match self {
            Scope::All(n) => format!("all {n} warehouses"),
            Scope::Sample(ids, all) => {
                format!("{} of {all} warehouses (--check-sample)", ids.len())
            }
        }
    }
}

/// Checks every condition, on all warehouses or on `sample` of them
/// drawn from `seed`; one [`Check`] each, named "TPC-C 3.3.2.N: …". Says
/// on stderr how far it is, condition by condition: over thousands of
/// warehouses the whole check takes minutes.
pub async fn run_checks(client: &Client, sample: Option<u32>, seed: u64) -> Result<Vec<Check>> {
    let ids: Vec<i32> = unnamed::query(client, "select w_id from warehouse order by w_id", &[])
        .await
        .map_err(|e| Error::db("cannot read the warehouses to check", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let scope = Scope::of(ids, sample, seed);
    let started = std::time::Instant::now();
    let mut out = Vec::with_capacity(CONDITIONS.len());
    for (n, says, template, what) in CONDITIONS {
        let sql = scope.sql(template);
        let row = match &scope {
            Scope::All(_) => unnamed::query_one(client, &sql, &[]).await,
            Scope::Sample(ids, _) => unnamed::query_one(client, &sql, &[ids]).await,
        };
        let broken: i64 = row
            .map_err(|e| Error::db(format!("cannot check TPC-C consistency condition {n}"), e))?
            .get(0);
        crate::say!(
            ">> tpcc-check: condition {n} of {} on {}: {} ({:.1} s)",
            CONDITIONS.len(),
            scope.describe(),
            if broken == 0 { "held" } else { "BROKEN" },
            started.elapsed().as_secs_f64()
        );
        let of = match &scope {
            Scope::All(_) => String::new(),
            Scope::Sample(..) => format!(", on {}", scope.describe()),
        };
        out.push(Check {
            name: format!("TPC-C 3.3.2.{n}: {says}"),
            held: broken == 0,
            detail: format!("{broken} {what} break it{of}"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_filters_every_table_on_its_warehouses() {
        let all = Scope::of((1..=10).collect(), None, 1);
        assert_eq!(all, Scope::All(10));
        assert_eq!(Scope::of((1..=10).collect(), Some(10), 1), Scope::All(10));
        let some = Scope::of((1..=10).collect(), Some(3), 1);
        let Scope::Sample(ids, 10) = &some else {
            panic!("{some:?}")
        };
        assert_eq!(ids.len(), 3);
        assert!(ids.windows(2).all(|w| w[0] < w[1]) && ids.iter().all(|i| (1..=10).contains(i)));
        // The same seed, the same sample.
        assert_eq!(some, Scope::of((1..=10).collect(), Some(3), 1));
        for (_, _, template, _) in CONDITIONS {
            let whole = all.sql(template);
            assert!(!whole.contains("W[") && !whole.contains("$1"), "{whole}");
            let part = some.sql(template);
            assert!(!part.contains("W["), "{part}");
            // Every table read is cut to the sample.
            let tables = [
                "warehouse",
                "district",
                "new_order",
                "orders",
                "order_line",
                "customer",
                "history",
            ];
            let filters = part.matches("= any($1::int[])").count();
            let reads = tables
                .iter()
                .map(|t| {
                    part.matches(&format!("from {t} ")).count()
                        + part.matches(&format!("join {t} ")).count()
                })
                .sum::<usize>();
            assert!(filters >= 1, "{part}");
            assert!(filters <= reads, "{part}");
        }
        assert_eq!(
            some.sql("x where W[a.b] and W[c]"),
            "x where a.b = any($1::int[]) and c = any($1::int[])"
        );
        assert_eq!(all.sql("where W[a] and y"), "where true and y");
    }
}
