//! The five TPC-C transactions of clause 2, run for the terminals
//! ([`super::terminals`]) by one [`Driver`] per worker connection.
//!
//! `ready` takes the earliest ready terminal (the wait is untimed: the
//! terminal's keying and think times, or its wait for a free connection,
//! which is in its latency). `stage` (untimed) stages the transaction the
//! terminal drew from its shuffled deck of 100 cards in the mix
//! 45/43/4/4/4 (clause 5.2.4.2 allows a deck; it keeps every window of
//! 100 transactions at the exact mix) and all its inputs by the input
//! rules of clauses 2.4.1–2.8.1: NURand with the run's constants, the
//! terminal's home warehouse, 1% remote order lines, 15% remote payments,
//! 60% of customers by last name, 1% of New-Orders ending on an unused
//! item. `execute` (timed, each statement too, by kind: [`STATEMENTS`])
//! sends it between BEGIN and COMMIT;
//! on an error it rolls back and returns the error, and the runner retries
//! the whole transaction. A New-Order that reaches its unused item rolls
//! back as the specification wants and is a success of the tool, counted
//! as a "missing" row of its type and reported apart from tpmC.
//!
//! Statements are prepared once per connection; with `-M extended` each
//! is sent as the unnamed statement, with `-M simple` (`--no-prepared`)
//! as text with its values written in (arrays of order lines, money in
//! cents as parameters either way), so that a pooler in transaction mode
//! keeps nothing of them. Where the specification
//! reads a row and then updates it, one `UPDATE … RETURNING` does both
//! (the same effect on the database, one round trip fewer); money is kept
//! exact by passing cents and computing in `numeric` on the server.

use std::future::Future;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::load::last_name;
use super::terminals::{TerminalState, Terminals};
use super::{CUSTOMERS, DISTRICTS, ITEMS, WarehouseRange, nurand};
use crate::db::wire::{Param, Protocol, Rows, Sql, WireConn};
use crate::error::{Error, Result};
use crate::workload::{BoxFuture, Operation, Outcome, StatementTimes, worker_seed};

/// The transaction types, in the order of [`crate::workload::Facts::types`].
pub const TYPES: [&str; 5] = [
    "new-order",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
];
pub const NEW_ORDER: usize = 0;
pub const PAYMENT: usize = 1;
const ORDER_STATUS: usize = 2;
const DELIVERY: usize = 3;
const STOCK_LEVEL: usize = 4;

/// Cards per deck of 100 for each type, in the order of [`TYPES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix(pub [u32; 5]);

/// The standard mix (clause 5.2.3).
pub const MIX: Mix = Mix([45, 43, 4, 4, 4]);

impl Mix {
    /// Parses `--tpcc-mix`, e.g. `new-order=50,payment=50`: shares in
    /// percent that add up to 100; types not named get none.
    pub fn parse(s: &str) -> std::result::Result<Mix, String> {
        let mut cards = [0u32; 5];
        let mut named = [false; 5];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, n) = part
                .split_once('=')
                .ok_or_else(|| format!("'{part}' is not TYPE=PERCENT"))?;
            let ty = TYPES
                .iter()
                .position(|t| *t == name.trim())
                .ok_or_else(|| {
                    format!(
                        "no type '{}': the types are {}",
                        name.trim(),
                        TYPES.join(", ")
                    )
                })?;
            if std::mem::replace(&mut named[ty], true) {
                return Err(format!(
                    "'{}' is named twice: give each type once",
                    TYPES[ty]
                ));
            }
            cards[ty] = n
                .trim()
                .parse()
                .map_err(|_| format!("'{}' is not a whole percent", n.trim()))?;
        }
        let sum: u32 = cards.iter().sum();
        if sum != 100 {
            return Err(format!("the shares add up to {sum}, not 100"));
        }
        Ok(Mix(cards))
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = TYPES
            .iter()
            .zip(self.0)
            .map(|(t, n)| format!("{t} {n}%"))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// The run's NURand constants (clause 2.1.6), one set for all terminals.
#[derive(Clone, Copy, Debug)]
pub struct Constants {
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl Constants {
    /// Drawn from the seed; C for c_last differs from the load's by 65..=119
    /// but not 96 or 112 (clause 2.1.6.1).
    pub fn for_run(seed: u64, c_load_last: u32) -> Self {
        let mut rng = SmallRng::seed_from_u64(worker_seed(seed, 0, 0x7C_C0C0));
        let delta = loop {
            let d = rng.random_range(65..=119u32);
            if d != 96 && d != 112 {
                break d;
            }
        };
        Constants {
            c_last: (c_load_last + 256 - delta) % 256,
            c_id: rng.random_range(0..=1023),
            ol_i_id: rng.random_range(0..=8191),
        }
    }
}

/// How a customer is looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Customer {
    Id(i32),
    Last(String),
}

/// The inputs of one transaction.
#[derive(Clone, Debug)]
enum Staged {
    NewOrder {
        d: i32,
        c: i32,
        /// (item, supplying warehouse, quantity) per line.
        lines: Vec<(i32, i32, i32)>,
        rollback: bool,
    },
    Payment {
        d: i32,
        c_w: i32,
        c_d: i32,
        customer: Customer,
        cents: i64,
    },
    OrderStatus {
        d: i32,
        customer: Customer,
    },
    Delivery {
        carrier: i32,
    },
    StockLevel {
        threshold: i32,
    },
}

struct Statements {
    warehouse_tax: Sql,
    next_order: Sql,
    customer_credit: Sql,
    insert_order: Sql,
    insert_new_order: Sql,
    items: Sql,
    /// One per district: the stock update returns `s_dist_<d>`.
    stock: Vec<Sql>,
    insert_lines: Sql,
    pay_warehouse: Sql,
    pay_district: Sql,
    by_last: Sql,
    pay_customer: Sql,
    insert_history: Sql,
    status_customer: Sql,
    last_order: Sql,
    order_lines: Sql,
    oldest_new_order: Sql,
    any_new_order: Sql,
    carrier: Sql,
    deliver_lines: Sql,
    deliver_customer: Sql,
    next_o_id: Sql,
    low_stock: Sql,
}

/// Where a client's terminals live: their home warehouses, and all the
/// database's warehouses, which remote order lines and payments draw from.
#[derive(Clone, Copy, Debug)]
pub struct Homes {
    pub homes: WarehouseRange,
    pub warehouses: u32,
}

/// The statement kinds inside the five transactions, with their query
/// class, in the order the per-statement figures list them. The names
/// are also what an error says failed.
pub const STATEMENTS: [(&str, &str); 27] = [
    ("begin", "other"),
    ("commit", "other"),
    ("rollback", "other"),
    ("new-order: warehouse", "read"),
    ("new-order: district", "write"),
    ("new-order: customer", "read"),
    ("new-order: insert orders", "write"),
    ("new-order: insert new_order", "write"),
    ("new-order: items", "read"),
    ("new-order: stock", "write"),
    ("new-order: insert order_line", "write"),
    ("payment: warehouse", "write"),
    ("payment: district", "write"),
    ("payment: customer by last name", "read"),
    ("payment: customer", "write"),
    ("payment: history", "write"),
    ("order-status: customer by last name", "read"),
    ("order-status: customer", "read"),
    ("order-status: orders", "read"),
    ("order-status: order lines", "read"),
    ("delivery: new_order", "write"),
    ("delivery: any new_order left", "read"),
    ("delivery: orders", "write"),
    ("delivery: order lines", "write"),
    ("delivery: customer", "write"),
    ("stock-level: district", "read"),
    ("stock-level: stock", "read"),
];

/// Indexes of [`STATEMENTS`].
mod kind {
    pub const BEGIN: usize = 0;
    pub const COMMIT: usize = 1;
    pub const ROLLBACK: usize = 2;
    pub const NO_WAREHOUSE: usize = 3;
    pub const NO_DISTRICT: usize = 4;
    pub const NO_CUSTOMER: usize = 5;
    pub const NO_ORDERS: usize = 6;
    pub const NO_NEW_ORDER: usize = 7;
    pub const NO_ITEMS: usize = 8;
    pub const NO_STOCK: usize = 9;
    pub const NO_LINES: usize = 10;
    pub const PAY_WAREHOUSE: usize = 11;
    pub const PAY_DISTRICT: usize = 12;
    pub const PAY_BY_LAST: usize = 13;
    pub const PAY_CUSTOMER: usize = 14;
    pub const PAY_HISTORY: usize = 15;
    pub const OS_BY_LAST: usize = 16;
    pub const OS_CUSTOMER: usize = 17;
    pub const OS_ORDERS: usize = 18;
    pub const OS_LINES: usize = 19;
    pub const DL_NEW_ORDER: usize = 20;
    pub const DL_ANY: usize = 21;
    pub const DL_ORDERS: usize = 22;
    pub const DL_LINES: usize = 23;
    pub const DL_CUSTOMER: usize = 24;
    pub const SL_DISTRICT: usize = 25;
    pub const SL_STOCK: usize = 26;
}

/// The name of statement kind `k`, as an error says what failed.
fn named(k: usize) -> &'static str {
    STATEMENTS.get(k).map_or("statement", |s| s.0)
}

/// Times one statement (its future `f`) as kind `k`, failed or not, so
/// that the kinds' times add up to the transactions' service time.
async fn timed<T>(times: &mut StatementTimes, k: usize, f: impl Future<Output = T>) -> T {
    let began = Instant::now();
    let out = f.await;
    times.record(k, began.elapsed());
    out
}

/// What a terminal's inputs are drawn with (clauses 2.4.1 … 2.8.1): its
/// random generator, this transaction's warehouse, all the database's
/// warehouses (remote ones are any of them), the run's NURand constants.
struct Inputs<'a> {
    rng: &'a mut SmallRng,
    w: i32,
    warehouses: i32,
    k: Constants,
}

impl Inputs<'_> {
    fn district(&mut self) -> i32 {
        self.rng.random_range(1..=DISTRICTS) as i32
    }

    fn other_warehouse(&mut self) -> i32 {
        // Uniform over the W - 1 others.
        let x = self.rng.random_range(1..self.warehouses);
        if x >= self.w { x + 1 } else { x }
    }

    /// 60% by last name (NURand(255, 0, 999)), else NURand(1023, 1, 3000).
    fn customer(&mut self) -> Customer {
        if self.rng.random_range(1..=100) <= 60 {
            Customer::Last(last_name(nurand(self.rng, 255, self.k.c_last, 0, 999)))
        } else {
            Customer::Id(nurand(self.rng, 1023, self.k.c_id, 1, CUSTOMERS) as i32)
        }
    }

    /// The inputs of a transaction of type `ty` (clauses 2.4.1 … 2.8.1).
    fn of(&mut self, ty: usize) -> Staged {
        match ty {
            NEW_ORDER => {
                let d = self.district();
                let c = nurand(self.rng, 1023, self.k.c_id, 1, CUSTOMERS) as i32;
                let n = self.rng.random_range(5..=15);
                let rollback = self.rng.random_range(1..=100) == 1;
                let mut lines = Vec::with_capacity(n);
                for i in 0..n {
                    let item = if rollback && i == n - 1 {
                        // An unused item (clause 2.4.1.4).
                        ITEMS as i32 + 1
                    } else {
                        nurand(self.rng, 8191, self.k.ol_i_id, 1, ITEMS) as i32
                    };
                    let remote = self.warehouses > 1 && self.rng.random_range(1..=100) == 1;
                    let supply = if remote {
                        self.other_warehouse()
                    } else {
                        self.w
                    };
                    lines.push((item, supply, self.rng.random_range(1..=10)));
                }
                Staged::NewOrder {
                    d,
                    c,
                    lines,
                    rollback,
                }
            }
            PAYMENT => {
                let d = self.district();
                let (c_w, c_d) = if self.warehouses > 1 && self.rng.random_range(1..=100) > 85 {
                    (self.other_warehouse(), self.district())
                } else {
                    (self.w, d)
                };
                Staged::Payment {
                    d,
                    c_w,
                    c_d,
                    customer: self.customer(),
                    cents: self.rng.random_range(100..=500_000),
                }
            }
            ORDER_STATUS => Staged::OrderStatus {
                d: self.district(),
                customer: self.customer(),
            },
            DELIVERY => Staged::Delivery {
                carrier: self.rng.random_range(1..=10),
            },
            _ => Staged::StockLevel {
                threshold: self.rng.random_range(10..=20),
            },
        }
    }
}

/// One transaction, staged: the terminal's warehouse for it and its
/// district (Stock-Level's), the inputs.
struct Txn {
    w: i32,
    d: i32,
    what: Staged,
}

/// What every driver of a run shares: the terminals, where they draw
/// their inputs, how a transaction begins.
#[derive(Clone)]
pub struct Shared {
    pub terminals: std::sync::Arc<Terminals>,
    /// All the database's warehouses.
    pub warehouses: u32,
    pub k: Constants,
    /// `--all-warehouses`: each transaction's warehouse drawn from these.
    pub spread: Option<WarehouseRange>,
    /// `begin`, with the isolation level of `--isolation`.
    pub begin: String,
}

/// One worker's connection and the terminal it is running a transaction
/// for: takes the earliest ready terminal ([`Terminals::take`]), runs
/// its transaction, hands it back.
pub struct Driver {
    shared: Shared,
    /// The terminal of the staged transaction, until it is handed back
    /// before the next is taken.
    terminal: Option<TerminalState>,
    /// When its transaction's last try ended.
    ended: Option<Instant>,
    /// How the statements are sent (`-M`).
    protocol: Protocol,
    st: Option<Statements>,
    staged: Option<Txn>,
    times: StatementTimes,
}

impl Driver {
    pub fn new(shared: Shared) -> Self {
        Driver {
            shared,
            terminal: None,
            ended: None,
            protocol: Protocol::Prepared,
            st: None,
            staged: None,
            times: StatementTimes::new(STATEMENTS.iter().map(|s| s.0), |name| {
                STATEMENTS
                    .iter()
                    .find(|s| s.0 == name)
                    .map_or("other", |s| s.1)
            }),
        }
    }

    /// How the statements are sent (`-M`): with extended or simple
    /// nothing of them stays on a server connection, as a pooler in
    /// transaction mode needs.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }
}

/// Runs one transaction between BEGIN and COMMIT, each statement timed as
/// its kind into `times`.
async fn transaction(
    conn: &mut WireConn,
    st: &Statements,
    begin: &str,
    txn: &Txn,
    times: &mut StatementTimes,
) -> Result<Outcome> {
    let w = txn.w;
    let fail = |k: usize| move |e| Error::wire(format!("tpcc: {} failed", named(k)), e);
    // One row expected: none is the database's inconsistency, said
    // as the statement's failure.
    let one = |k: usize, rows: &Rows| {
        if rows.is_empty() {
            Err(Error::run(format!("tpcc: {} found no row", named(k))))
        } else {
            Ok(())
        }
    };
    let mut rows = Rows::new();
    timed(times, kind::BEGIN, conn.simple_query(begin))
        .await
        .map_err(fail(kind::BEGIN))?;
    let mut outcome = Outcome {
        rows: 1,
        missing: 0,
    };
    match &txn.what {
        Staged::NewOrder {
            d,
            c,
            lines,
            rollback,
        } => {
            let (d, c) = (*d, *c);
            // Clause 2.4.2.2.
            let k = kind::NO_WAREHOUSE;
            timed(
                times,
                k,
                st.warehouse_tax.query(conn, &[w.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let w_tax: f64 = rows.get(0, 0).map_err(fail(k))?;
            let k = kind::NO_DISTRICT;
            timed(
                times,
                k,
                st.next_order.query(conn, &[w.into(), d.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let o_id: i32 = rows.get(0, 0).map_err(fail(k))?;
            let d_tax: f64 = rows.get(0, 1).map_err(fail(k))?;
            let k = kind::NO_CUSTOMER;
            timed(
                times,
                k,
                st.customer_credit
                    .query(conn, &[w.into(), d.into(), c.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let discount: f64 = rows.get(0, 0).map_err(fail(k))?;
            let all_local = i32::from(lines.iter().all(|l| l.1 == w));
            let count = lines.len() as i32;
            let order: [Param<'_>; 6] = [
                o_id.into(),
                d.into(),
                w.into(),
                c.into(),
                count.into(),
                all_local.into(),
            ];
            timed(
                times,
                kind::NO_ORDERS,
                st.insert_order.execute(conn, &order),
            )
            .await
            .map_err(fail(kind::NO_ORDERS))?;
            timed(
                times,
                kind::NO_NEW_ORDER,
                st.insert_new_order
                    .execute(conn, &[o_id.into(), d.into(), w.into()]),
            )
            .await
            .map_err(fail(kind::NO_NEW_ORDER))?;
            let ids: Vec<i32> = lines.iter().map(|l| l.0).collect();
            let k = kind::NO_ITEMS;
            timed(
                times,
                k,
                st.items.query(conn, &[ids.as_slice().into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            let mut prices = std::collections::HashMap::with_capacity(rows.len());
            for r in 0..rows.len() {
                let id: i32 = rows.get(r, 0).map_err(fail(k))?;
                let price: f64 = rows.get(r, 1).map_err(fail(k))?;
                prices.insert(id, price);
            }
            let unused = ids.iter().any(|i| !prices.contains_key(i));
            if unused && !*rollback {
                timed(times, kind::ROLLBACK, conn.simple_query("rollback"))
                    .await
                    .map_err(fail(kind::ROLLBACK))?;
                return Err(Error::run(format!(
                    "tpcc: new-order found no item among {ids:?}: is the item table loaded?"
                )));
            }
            // Clause 2.4.2.3: an order with an unused item runs its
            // whole profile but the unused item's own steps (its stock
            // row, its order line), then rolls back. So the lines below
            // are the ones with a known item.
            let known: Vec<usize> = (0..lines.len())
                .filter(|&i| prices.contains_key(&lines[i].0))
                .collect();
            // Stock in (warehouse, item) order: fewer deadlocks
            // between terminals, the same rows changed.
            let mut order = known.clone();
            order.sort_by_key(|&i| (lines[i].1, lines[i].0));
            let stock = &st.stock[(d as usize - 1) % st.stock.len()];
            let mut dist = vec![String::new(); lines.len()];
            let k = kind::NO_STOCK;
            for i in order {
                let (item, supply, qty) = lines[i];
                let remote = i32::from(supply != w);
                timed(
                    times,
                    k,
                    stock.query(
                        conn,
                        &[supply.into(), item.into(), qty.into(), remote.into()],
                        &mut rows,
                    ),
                )
                .await
                .map_err(fail(k))?;
                one(k, &rows)?;
                dist[i] = rows.text(0, 0).unwrap_or_default().to_string();
            }
            let numbers: Vec<i32> = known.iter().map(|&i| i as i32 + 1).collect();
            let items: Vec<i32> = known.iter().map(|&i| lines[i].0).collect();
            let supply: Vec<i32> = known.iter().map(|&i| lines[i].1).collect();
            let qty: Vec<i32> = known.iter().map(|&i| lines[i].2).collect();
            let amounts: Vec<f64> = known
                .iter()
                .map(|&i| {
                    let l = lines[i];
                    (f64::from(l.2) * prices.get(&l.0).copied().unwrap_or(0.0) * 100.0).round()
                        / 100.0
                })
                .collect();
            let dist: Vec<String> = known.iter().map(|&i| dist[i].clone()).collect();
            let p: [Param<'_>; 9] = [
                o_id.into(),
                d.into(),
                w.into(),
                numbers.as_slice().into(),
                items.as_slice().into(),
                supply.as_slice().into(),
                qty.as_slice().into(),
                amounts.as_slice().into(),
                dist.as_slice().into(),
            ];
            timed(times, kind::NO_LINES, st.insert_lines.execute(conn, &p))
                .await
                .map_err(fail(kind::NO_LINES))?;
            if unused {
                timed(times, kind::ROLLBACK, conn.simple_query("rollback"))
                    .await
                    .map_err(fail(kind::ROLLBACK))?;
                outcome.missing = 1;
                return Ok(outcome);
            }
            // The total the terminal shows (clause 2.4.2.2), not stored.
            let total: f64 = amounts.iter().sum::<f64>() * (1.0 - discount) * (1.0 + w_tax + d_tax);
            std::hint::black_box(total);
        }
        Staged::Payment {
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => {
            let (d, c_w, c_d, cents) = (*d, *c_w, *c_d, *cents);
            // Clause 2.5.2.2.
            let k = kind::PAY_WAREHOUSE;
            timed(
                times,
                k,
                st.pay_warehouse
                    .query(conn, &[w.into(), cents.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let w_name = rows.text(0, 0).unwrap_or_default().to_string();
            let k = kind::PAY_DISTRICT;
            timed(
                times,
                k,
                st.pay_district
                    .query(conn, &[w.into(), d.into(), cents.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let d_name = rows.text(0, 0).unwrap_or_default().to_string();
            let at = (c_w, c_d, kind::PAY_BY_LAST);
            let c_id = find_customer(conn, st, at, customer, &mut rows, times).await?;
            let k = kind::PAY_CUSTOMER;
            let p: [Param<'_>; 6] = [
                c_w.into(),
                c_d.into(),
                c_id.into(),
                cents.into(),
                d.into(),
                w.into(),
            ];
            timed(times, k, st.pay_customer.query(conn, &p, &mut rows))
                .await
                .map_err(fail(k))?;
            one(k, &rows)?;
            let h_data = format!("{w_name}    {d_name}");
            let p: [Param<'_>; 7] = [
                c_id.into(),
                c_d.into(),
                c_w.into(),
                d.into(),
                w.into(),
                cents.into(),
                (&h_data).into(),
            ];
            timed(
                times,
                kind::PAY_HISTORY,
                st.insert_history.execute(conn, &p),
            )
            .await
            .map_err(fail(kind::PAY_HISTORY))?;
        }
        Staged::OrderStatus { d, customer } => {
            let d = *d;
            // Clause 2.6.2.2.
            let at = (w, d, kind::OS_BY_LAST);
            let c_id = find_customer(conn, st, at, customer, &mut rows, times).await?;
            let k = kind::OS_CUSTOMER;
            timed(
                times,
                k,
                st.status_customer
                    .query(conn, &[w.into(), d.into(), c_id.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let k = kind::OS_ORDERS;
            timed(
                times,
                k,
                st.last_order
                    .query(conn, &[w.into(), d.into(), c_id.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            if !rows.is_empty() {
                let o_id: i32 = rows.get(0, 0).map_err(fail(k))?;
                timed(
                    times,
                    kind::OS_LINES,
                    st.order_lines
                        .query(conn, &[w.into(), d.into(), o_id.into()], &mut rows),
                )
                .await
                .map_err(fail(kind::OS_LINES))?;
            }
        }
        Staged::Delivery { carrier } => {
            outcome.rows = deliver(conn, st, w, *carrier, &mut rows, times).await?;
        }
        Staged::StockLevel { threshold } => {
            // Clause 2.8.2.2, on the terminal's own district.
            let d = txn.d;
            let k = kind::SL_DISTRICT;
            timed(
                times,
                k,
                st.next_o_id.query(conn, &[w.into(), d.into()], &mut rows),
            )
            .await
            .map_err(fail(k))?;
            one(k, &rows)?;
            let next: i32 = rows.get(0, 0).map_err(fail(k))?;
            let k = kind::SL_STOCK;
            let p: [Param<'_>; 4] = [w.into(), d.into(), next.into(), (*threshold).into()];
            timed(times, k, st.low_stock.query(conn, &p, &mut rows))
                .await
                .map_err(fail(k))?;
            one(k, &rows)?;
        }
    }
    timed(times, kind::COMMIT, conn.simple_query("commit"))
        .await
        .map_err(fail(kind::COMMIT))?;
    Ok(outcome)
}

/// Delivery (clause 2.7.4.2): each district's oldest undelivered order,
/// in one transaction; the orders delivered.
async fn deliver(
    conn: &mut WireConn,
    st: &Statements,
    w: i32,
    carrier: i32,
    rows: &mut Rows,
    times: &mut StatementTimes,
) -> Result<u64> {
    let fail = |k: usize| move |e| Error::wire(format!("tpcc: {} failed", named(k)), e);
    let mut delivered = 0;
    for d in 1..=DISTRICTS as i32 {
        // Skipped only when the district has no new order left
        // (clause 2.7.4.2). Under read committed, a delivery
        // that meets the row another one just took finds none
        // and takes the next oldest (a new statement, a new
        // snapshot); under the stricter levels it fails with
        // 40001 and is retried.
        let mut o_id = None;
        for _ in 0..100 {
            let k = kind::DL_NEW_ORDER;
            timed(
                times,
                k,
                st.oldest_new_order.query(conn, &[w.into(), d.into()], rows),
            )
            .await
            .map_err(fail(k))?;
            if !rows.is_empty() {
                o_id = Some(rows.get::<i32>(0, 0).map_err(fail(k))?);
                break;
            }
            let k = kind::DL_ANY;
            timed(
                times,
                k,
                st.any_new_order.query(conn, &[w.into(), d.into()], rows),
            )
            .await
            .map_err(fail(k))?;
            if rows.is_empty() {
                return Err(Error::run(format!("tpcc: {} found no row", named(k))));
            }
            if rows.text(0, 0) != Some("t") {
                break;
            }
        }
        let Some(o_id) = o_id else {
            continue;
        };
        let k = kind::DL_ORDERS;
        let p: [Param<'_>; 4] = [w.into(), d.into(), o_id.into(), carrier.into()];
        timed(times, k, st.carrier.query(conn, &p, rows))
            .await
            .map_err(fail(k))?;
        if rows.is_empty() {
            return Err(Error::run(format!("tpcc: {} found no row", named(k))));
        }
        let c_id: i32 = rows.get(0, 0).map_err(fail(k))?;
        timed(
            times,
            kind::DL_LINES,
            st.deliver_lines
                .execute(conn, &[w.into(), d.into(), o_id.into()]),
        )
        .await
        .map_err(fail(kind::DL_LINES))?;
        let p: [Param<'_>; 4] = [w.into(), d.into(), o_id.into(), c_id.into()];
        timed(
            times,
            kind::DL_CUSTOMER,
            st.deliver_customer.execute(conn, &p),
        )
        .await
        .map_err(fail(kind::DL_CUSTOMER))?;
        delivered += 1;
    }
    Ok(delivered)
}

/// The customer's id: given, or the one in the middle of those with the
/// last name ordered by first name (clause 2.5.2.2, position n/2 rounded
/// up), looked up in warehouse and district `at.0`, `at.1` as statement
/// kind `at.2`.
async fn find_customer(
    conn: &mut WireConn,
    st: &Statements,
    at: (i32, i32, usize),
    customer: &Customer,
    rows: &mut Rows,
    times: &mut StatementTimes,
) -> Result<i32> {
    let (w, d, k) = at;
    match customer {
        Customer::Id(c) => Ok(*c),
        Customer::Last(last) => {
            let fail = |e| Error::wire(format!("tpcc: {} failed", named(k)), e);
            timed(
                times,
                k,
                st.by_last
                    .query(conn, &[w.into(), d.into(), last.into()], rows),
            )
            .await
            .map_err(fail)?;
            if rows.is_empty() {
                return Err(Error::run(format!(
                    "tpcc: no customer named {last} in warehouse {w} district {d}: is the customer table loaded?"
                )));
            }
            rows.get(rows.len().div_ceil(2) - 1, 0).map_err(fail)
        }
    }
}

const STOCK: &str = "update stock set s_quantity = case when s_quantity >= $3 + 10 \
     then s_quantity - $3 else s_quantity - $3 + 91 end, s_ytd = s_ytd + $3, \
     s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $4 \
     where s_w_id = $1 and s_i_id = $2 returning s_dist_DD::text, s_data";

impl Operation for Driver {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.st = None;
        let protocol = self.protocol;
        let mut p = async |sql: String| {
            let fail = |e| Error::wire(format!("cannot prepare '{sql}'"), e);
            Sql::new(conn, sql.clone(), protocol).await.map_err(fail)
        };
        let mut stock = Vec::with_capacity(DISTRICTS as usize);
        for d in 1..=DISTRICTS {
            stock.push(p(STOCK.replace("DD", &format!("{d:02}"))).await?);
        }
        let money = "$CC::int8::numeric / 100";
        let m = |sql: &str, n: &str| sql.replace("$CC", n);
        self.st = Some(Statements {
            warehouse_tax: p("select w_tax::float8 from warehouse where w_id = $1".into()).await?,
            next_order: p("update district set d_next_o_id = d_next_o_id + 1 \
                 where d_w_id = $1 and d_id = $2 returning d_next_o_id - 1, d_tax::float8"
                .into())
            .await?,
            customer_credit: p("select c_discount::float8, c_last, c_credit from customer \
                 where c_w_id = $1 and c_d_id = $2 and c_id = $3"
                .into())
            .await?,
            insert_order: p(
                "insert into orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, \
                 o_carrier_id, o_ol_cnt, o_all_local) \
                 values ($1, $2, $3, $4, localtimestamp, null, $5, $6)"
                    .into(),
            )
            .await?,
            insert_new_order: p(
                "insert into new_order (no_o_id, no_d_id, no_w_id) values ($1, $2, $3)".into(),
            )
            .await?,
            items: p("select i_id, i_price::float8, i_name, i_data from item \
                 where i_id = any($1::int[])"
                .into())
            .await?,
            stock,
            insert_lines: p(
                "insert into order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, \
                 ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
                 select $1, $2, $3, n, i, s, null, q, a::numeric(6,2), di \
                 from unnest($4::int[], $5::int[], $6::int[], $7::int[], $8::float8[], $9::text[]) \
                 as t(n, i, s, q, a, di)"
                    .into(),
            )
            .await?,
            pay_warehouse: p(m(
                &format!(
                    "update warehouse set w_ytd = w_ytd + {money} where w_id = $1 \
                     returning w_name, w_street_1, w_street_2, w_city, w_state, w_zip"
                ),
                "$2",
            ))
            .await?,
            pay_district: p(m(
                &format!(
                    "update district set d_ytd = d_ytd + {money} where d_w_id = $1 and d_id = $2 \
                     returning d_name, d_street_1, d_street_2, d_city, d_state, d_zip"
                ),
                "$3",
            ))
            .await?,
            by_last: p(
                "select c_id from customer where c_w_id = $1 and c_d_id = $2 \
                 and c_last = $3 order by c_first"
                    .into(),
            )
            .await?,
            pay_customer: p(m(
                &format!(
                    "update customer set c_balance = c_balance - {money}, \
                     c_ytd_payment = c_ytd_payment + {money}, c_payment_cnt = c_payment_cnt + 1, \
                     c_data = case when c_credit = 'BC' then left(c_id || ' ' || c_d_id || ' ' \
                     || c_w_id || ' ' || $5::int || ' ' || $6::int || ' ' || ({money})::text \
                     || ' | ' || c_data, 500) else c_data end \
                     where c_w_id = $1 and c_d_id = $2 and c_id = $3 \
                     returning c_first, c_middle, c_last, c_street_1, c_street_2, c_city, \
                     c_state, c_zip, c_phone, c_since::text, c_credit, c_credit_lim::float8, \
                     c_discount::float8, c_balance::float8"
                ),
                "$4",
            ))
            .await?,
            insert_history: p(m(
                &format!(
                    "insert into history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, \
                     h_amount, h_data) values ($1, $2, $3, $4, $5, localtimestamp, {money}, $7)"
                ),
                "$6",
            ))
            .await?,
            status_customer: p("select c_balance::float8, c_first, c_middle, c_last \
                 from customer where c_w_id = $1 and c_d_id = $2 and c_id = $3"
                .into())
            .await?,
            last_order: p("select o_id, o_carrier_id, o_entry_d::text from orders \
                 where o_w_id = $1 and o_d_id = $2 and o_c_id = $3 order by o_id desc limit 1"
                .into())
            .await?,
            order_lines: p(
                "select ol_i_id, ol_supply_w_id, ol_quantity, ol_amount::float8, \
                 ol_delivery_d::text from order_line \
                 where ol_w_id = $1 and ol_d_id = $2 and ol_o_id = $3"
                    .into(),
            )
            .await?,
            // Delete the oldest in one statement: a terminal that meets a
            // row another delivery just took finds none, and looks again
            // if the district has new orders left.
            oldest_new_order: p("delete from new_order where no_w_id = $1 and no_d_id = $2 \
                 and no_o_id = (select min(no_o_id) from new_order \
                 where no_w_id = $1 and no_d_id = $2) returning no_o_id"
                .into())
            .await?,
            any_new_order: p("select exists (select 1 from new_order \
                 where no_w_id = $1 and no_d_id = $2)"
                .into())
            .await?,
            carrier: p("update orders set o_carrier_id = $4 \
                 where o_w_id = $1 and o_d_id = $2 and o_id = $3 returning o_c_id"
                .into())
            .await?,
            deliver_lines: p("update order_line set ol_delivery_d = localtimestamp \
                 where ol_w_id = $1 and ol_d_id = $2 and ol_o_id = $3"
                .into())
            .await?,
            deliver_customer: p("update customer set c_balance = c_balance + \
                 (select coalesce(sum(ol_amount), 0) from order_line \
                 where ol_w_id = $1 and ol_d_id = $2 and ol_o_id = $3), \
                 c_delivery_cnt = c_delivery_cnt + 1 \
                 where c_w_id = $1 and c_d_id = $2 and c_id = $4"
                .into())
            .await?,
            next_o_id: p("select d_next_o_id from district where d_w_id = $1 and d_id = $2".into())
                .await?,
            low_stock: p("select count(distinct s_i_id) from order_line, stock \
                 where ol_w_id = $1 and ol_d_id = $2 and ol_o_id < $3 and ol_o_id >= $3 - 20 \
                 and s_w_id = $1 and s_i_id = ol_i_id and s_quantity < $4"
                .into())
            .await?,
        });
        Ok(())
    }

    /// Stages the transaction of the terminal [`Operation::ready`] took:
    /// the type it drew when it was handed back, its inputs.
    fn stage(&mut self) -> bool {
        let Some(t) = self.terminal.as_mut() else {
            // Not reached: the runner takes a terminal before staging.
            return false;
        };
        let ty = usize::from(t.next);
        let w = t.warehouse(self.shared.spread);
        let what = Inputs {
            rng: &mut t.rng,
            w,
            warehouses: self.shared.warehouses.max(1) as i32,
            k: self.shared.k,
        }
        .of(ty);
        self.staged = Some(Txn { w, d: t.d, what });
        true
    }

    /// Hands back the terminal of the last transaction, then waits for
    /// the earliest ready one and takes it.
    fn ready(&mut self) -> Option<BoxFuture<'_, Instant>> {
        if let Some(t) = self.terminal.take() {
            let ended = self.ended.take().unwrap_or_else(Instant::now);
            self.shared.terminals.hand_back(t, ended);
        }
        Some(Box::pin(async move {
            let (due, t) = self.shared.terminals.take().await;
            self.terminal = Some(t);
            due
        }))
    }

    fn unit_type(&self) -> usize {
        match self.staged.as_ref().map(|t| &t.what) {
            Some(Staged::NewOrder { .. }) | None => NEW_ORDER,
            Some(Staged::Payment { .. }) => PAYMENT,
            Some(Staged::OrderStatus { .. }) => ORDER_STATUS,
            Some(Staged::Delivery { .. }) => DELIVERY,
            Some(Staged::StockLevel { .. }) => STOCK_LEVEL,
        }
    }

    fn unit_label(&self) -> Option<String> {
        let ty = TYPES[self.unit_type()];
        let w = self.staged.as_ref().map_or(0, |t| t.w);
        let id = self.terminal.as_ref().map_or(0, |t| t.id);
        Some(format!("{ty} on warehouse {w} (terminal {})", id + 1))
    }

    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        Some(&mut self.times)
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let (Some(st), Some(txn)) = (&self.st, &self.staged) else {
            return Err(Error::run(
                "tpcc: a transaction ran before its statements were prepared",
            ));
        };
        let res = transaction(conn, st, &self.shared.begin, txn, &mut self.times).await;
        let res = match res {
            Ok(o) => Ok(o),
            Err(e) => {
                // The error is the unit's; a failed rollback on a lost
                // connection adds nothing to it.
                if !conn.is_closed() {
                    let _ = timed(
                        &mut self.times,
                        kind::ROLLBACK,
                        conn.simple_query("rollback"),
                    )
                    .await;
                }
                Err(e)
            }
        };
        self.ended = Some(Instant::now());
        if let (Ok(o), Staged::NewOrder { .. }) = (&res, &txn.what)
            && o.missing == 0
        {
            self.shared.terminals.new_order_committed();
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn homes(first: u32, last: u32, warehouses: u32) -> Homes {
        Homes {
            homes: WarehouseRange { first, last },
            warehouses,
        }
    }

    /// Terminal `id` of a client driving all of `w` warehouses.
    fn terminal(id: u32, w: u32) -> TerminalState {
        TerminalState::new(3, id, homes(1, w, w), MIX)
    }

    /// The inputs of type `ty` of terminal `t`, at its home warehouse.
    fn inputs(t: &mut TerminalState, warehouses: u32, ty: usize) -> Staged {
        Inputs {
            w: t.w,
            rng: &mut t.rng,
            warehouses: warehouses as i32,
            k: Constants::for_run(3, 157),
        }
        .of(ty)
    }

    #[test]
    fn the_run_constant_keeps_its_distance_from_the_loads() {
        for seed in 0..200 {
            let k = Constants::for_run(seed, 157);
            let delta = 157u32.abs_diff(k.c_last);
            assert!((65..=119).contains(&delta) && delta != 96 && delta != 112);
            assert!(k.c_id <= 1023 && k.ol_i_id <= 8191);
        }
    }

    #[test]
    fn a_custom_mix_parses_and_bad_ones_say_why() {
        assert_eq!(
            Mix::parse("new-order=50, payment=50").unwrap(),
            Mix([50, 50, 0, 0, 0])
        );
        assert!(
            Mix::parse("new-order=50")
                .unwrap_err()
                .contains("add up to 50")
        );
        assert!(Mix::parse("neworder=100").unwrap_err().contains("no type"));
        // A repeated type would silently override the first share.
        assert!(
            Mix::parse("new-order=50,new-order=50")
                .unwrap_err()
                .contains("'new-order' is named twice")
        );
        assert!(
            Mix::parse("payment=x")
                .unwrap_err()
                .contains("whole percent")
        );
        assert_eq!(
            MIX.to_string(),
            "new-order 45% payment 43% order-status 4% delivery 4% stock-level 4%"
        );
        let mut t = TerminalState::new(1, 0, homes(1, 1, 1), Mix([0, 0, 0, 0, 100]));
        assert_eq!(usize::from(t.next), STOCK_LEVEL);
        assert!((0..200).all(|_| usize::from(t.draw_type()) == STOCK_LEVEL));
    }

    #[test]
    fn new_order_inputs_follow_clause_2_4_1() {
        let mut t = terminal(1, 4);
        assert_eq!(t.w, 2);
        let (mut orders, mut rollbacks, mut lines, mut remote) = (0, 0, 0, 0);
        for _ in 0..20_000 {
            let Staged::NewOrder {
                d,
                c,
                lines: l,
                rollback,
            } = inputs(&mut t, 4, NEW_ORDER)
            else {
                unreachable!()
            };
            orders += 1;
            rollbacks += i32::from(rollback);
            assert!((1..=10).contains(&d) && (1..=3000).contains(&c));
            assert!((5..=15).contains(&l.len()));
            for (i, (item, supply, qty)) in l.iter().enumerate() {
                lines += 1;
                remote += i32::from(*supply != 2);
                assert!((1..=10).contains(qty));
                let unused = rollback && i == l.len() - 1;
                assert_eq!(*item == 100_001, unused);
            }
        }
        assert!((100..=300).contains(&rollbacks), "{rollbacks} of {orders}");
        let share = f64::from(remote) / f64::from(lines);
        assert!((0.005..0.015).contains(&share), "{share}");
    }

    #[test]
    fn payments_are_15_percent_remote_and_60_percent_by_name() {
        let mut t = terminal(0, 3);
        let (mut remote, mut by_name) = (0, 0);
        for _ in 0..10_000 {
            let Staged::Payment {
                c_w,
                customer,
                cents,
                ..
            } = inputs(&mut t, 3, PAYMENT)
            else {
                unreachable!()
            };
            remote += i32::from(c_w != 1);
            by_name += i32::from(matches!(customer, Customer::Last(_)));
            assert!((100..=500_000).contains(&cents));
        }
        assert!((1300..=1700).contains(&remote), "{remote}");
        assert!((5700..=6300).contains(&by_name), "{by_name}");
        // One warehouse: every payment is local.
        let mut t = terminal(0, 1);
        for _ in 0..1000 {
            let Staged::Payment { c_w, .. } = inputs(&mut t, 1, PAYMENT) else {
                unreachable!()
            };
            assert_eq!(c_w, 1);
        }
    }

    #[test]
    fn remote_warehouses_are_any_of_all_in_the_range_or_not() {
        let mut t = TerminalState::new(5, 1, homes(3, 4, 6), MIX);
        assert_eq!(t.w, 4);
        let mut remote = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            if let Staged::Payment { c_w, .. } = inputs(&mut t, 6, PAYMENT) {
                remote.insert(c_w);
            }
        }
        // Home 4; remote payments reach every other warehouse, in the
        // range or not.
        assert_eq!(remote.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn clients_with_one_seed_on_other_ranges_draw_other_inputs() {
        let mut a = TerminalState::new(6, 0, homes(1, 1, 2), MIX);
        let mut b = TerminalState::new(6, 0, homes(2, 2, 2), MIX);
        let deck = |t: &mut TerminalState| (0..100).map(|_| t.draw_type()).collect::<Vec<_>>();
        assert_ne!(deck(&mut a), deck(&mut b));
    }

    #[test]
    fn every_statement_kind_is_named_once_with_its_class() {
        let names: std::collections::BTreeSet<&str> = STATEMENTS.iter().map(|s| s.0).collect();
        assert_eq!(names.len(), STATEMENTS.len());
        assert!(
            STATEMENTS
                .iter()
                .all(|s| ["read", "write", "other"].contains(&s.1))
        );
        assert_eq!(named(kind::SL_STOCK), "stock-level: stock");
        assert_eq!(named(kind::COMMIT), "commit");
    }
}
