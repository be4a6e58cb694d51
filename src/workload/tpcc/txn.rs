//! The five TPC-C transactions of clause 2, as one operation per terminal.
//!
//! `stage` (untimed) draws the next transaction from a shuffled deck of
//! 100 cards in the mix 45/43/4/4/4 (clause 5.2.4.2 allows a deck; it
//! keeps every window of 100 transactions at the exact mix) and all its
//! inputs by the input rules of clauses 2.4.1–2.8.1: NURand with the run's
//! constants, the terminal's home warehouse, 1% remote order lines, 15%
//! remote payments, 60% of customers by last name, 1% of New-Orders ending
//! on an unused item. `execute` (timed) sends it between BEGIN and COMMIT;
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

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use super::load::last_name;
use super::{CUSTOMERS, DISTRICTS, ITEMS, WarehouseRange, nurand, wait};
use crate::db::wire::{Param, Protocol, Rows, Sql, WireConn};
use crate::error::{Error, Result};
use crate::workload::{Operation, Outcome, Pauses, worker_seed};

/// The transaction types, in the order of [`crate::workload::Facts::types`].
pub const TYPES: [&str; 5] = [
    "new-order",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
];
pub const NEW_ORDER: usize = 0;
const PAYMENT: usize = 1;
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
    /// One per district: the stock update returns s_dist_<d>.
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

/// One terminal: a home warehouse, a district for Stock-Level.
pub struct Terminal {
    rng: SmallRng,
    w: i32,
    /// Stock-Level's district, fixed per terminal (clause 2.8.1.1).
    d_stock: i32,
    warehouses: i32,
    k: Constants,
    deck: Vec<usize>,
    next_card: usize,
    begin: String,
    /// `--tpcc-wait`: keying and think times around each transaction.
    wait: bool,
    pauses: Pauses,
    /// How the statements are sent (`-M`).
    protocol: Protocol,
    st: Option<Statements>,
    staged: Option<Staged>,
}

impl Terminal {
    /// Terminal `thread`: home warehouse number `thread % n` of the `n`
    /// home warehouses, so terminals spread evenly, several per warehouse
    /// when there are more; remote warehouses are any of all `warehouses`.
    pub fn new(
        seed: u64,
        thread: usize,
        at: Homes,
        mix: Mix,
        k: Constants,
        begin: String,
        wait: bool,
    ) -> Self {
        let n = at.homes.len().max(1);
        let w = at.homes.first + thread as u32 % n;
        let d_stock = ((thread as u32 / n) % DISTRICTS) + 1;
        let mut deck = Vec::with_capacity(100);
        for (ty, n) in mix.0.iter().enumerate() {
            deck.extend(std::iter::repeat_n(ty, *n as usize));
        }
        Terminal {
            // The home range in the seed: clients on other machines that
            // share --seed (as they must, for one set of NURand constants)
            // have terminals of the same numbers, which would otherwise
            // draw the very same inputs in the same order.
            rng: SmallRng::seed_from_u64(worker_seed(
                seed,
                thread,
                0x7C_C7E7 + (u64::from(at.homes.first) << 32),
            )),
            w: w as i32,
            d_stock: d_stock as i32,
            warehouses: at.warehouses.max(at.homes.last).max(1) as i32,
            k,
            next_card: deck.len(),
            deck,
            begin,
            wait,
            pauses: Pauses::default(),
            protocol: Protocol::Prepared,
            st: None,
            staged: None,
        }
    }

    /// How the statements are sent (`-M`): with extended or simple
    /// nothing of them stays on a server connection, as a pooler in
    /// transaction mode needs.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    fn draw_type(&mut self) -> usize {
        if self.next_card >= self.deck.len() {
            self.deck.shuffle(&mut self.rng);
            self.next_card = 0;
        }
        self.next_card += 1;
        self.deck[self.next_card - 1]
    }

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
            Customer::Last(last_name(nurand(&mut self.rng, 255, self.k.c_last, 0, 999)))
        } else {
            Customer::Id(nurand(&mut self.rng, 1023, self.k.c_id, 1, CUSTOMERS) as i32)
        }
    }

    /// The inputs of a transaction of type `ty` (clauses 2.4.1 … 2.8.1).
    fn inputs(&mut self, ty: usize) -> Staged {
        match ty {
            NEW_ORDER => {
                let d = self.district();
                let c = nurand(&mut self.rng, 1023, self.k.c_id, 1, CUSTOMERS) as i32;
                let n = self.rng.random_range(5..=15);
                let rollback = self.rng.random_range(1..=100) == 1;
                let mut lines = Vec::with_capacity(n);
                for i in 0..n {
                    let item = if rollback && i == n - 1 {
                        // An unused item (clause 2.4.1.4).
                        ITEMS as i32 + 1
                    } else {
                        nurand(&mut self.rng, 8191, self.k.ol_i_id, 1, ITEMS) as i32
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

    async fn run(&self, conn: &mut WireConn, st: &Statements, staged: &Staged) -> Result<Outcome> {
        let w = self.w;
        let fail = |what: &'static str| move |e| Error::wire(format!("tpcc: {what} failed"), e);
        // One row expected: none is the database's inconsistency, said
        // as the statement's failure.
        let one = |what: &'static str, rows: &Rows| {
            if rows.is_empty() {
                Err(Error::run(format!("tpcc: {what} found no row")))
            } else {
                Ok(())
            }
        };
        let mut rows = Rows::new();
        conn.simple_query(&self.begin)
            .await
            .map_err(fail("begin"))?;
        let mut outcome = Outcome {
            rows: 1,
            missing: 0,
        };
        match staged {
            Staged::NewOrder {
                d,
                c,
                lines,
                rollback,
            } => {
                let (d, c) = (*d, *c);
                // Clause 2.4.2.2.
                let what = "new-order: warehouse";
                st.warehouse_tax
                    .query(conn, &[w.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let w_tax: f64 = rows.get(0, 0).map_err(fail(what))?;
                let what = "new-order: district";
                st.next_order
                    .query(conn, &[w.into(), d.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let o_id: i32 = rows.get(0, 0).map_err(fail(what))?;
                let d_tax: f64 = rows.get(0, 1).map_err(fail(what))?;
                let what = "new-order: customer";
                st.customer_credit
                    .query(conn, &[w.into(), d.into(), c.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let discount: f64 = rows.get(0, 0).map_err(fail(what))?;
                let all_local = i32::from(lines.iter().all(|l| l.1 == w));
                let count = lines.len() as i32;
                st.insert_order
                    .execute(
                        conn,
                        &[
                            o_id.into(),
                            d.into(),
                            w.into(),
                            c.into(),
                            count.into(),
                            all_local.into(),
                        ],
                    )
                    .await
                    .map_err(fail("new-order: insert orders"))?;
                st.insert_new_order
                    .execute(conn, &[o_id.into(), d.into(), w.into()])
                    .await
                    .map_err(fail("new-order: insert new_order"))?;
                let ids: Vec<i32> = lines.iter().map(|l| l.0).collect();
                let what = "new-order: items";
                st.items
                    .query(conn, &[ids.as_slice().into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                let mut prices = std::collections::HashMap::with_capacity(rows.len());
                for r in 0..rows.len() {
                    let id: i32 = rows.get(r, 0).map_err(fail(what))?;
                    let price: f64 = rows.get(r, 1).map_err(fail(what))?;
                    prices.insert(id, price);
                }
                let unused = ids.iter().any(|i| !prices.contains_key(i));
                if unused && !*rollback {
                    conn.simple_query("rollback")
                        .await
                        .map_err(fail("new-order: rollback"))?;
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
                let what = "new-order: stock";
                for i in order {
                    let (item, supply, qty) = lines[i];
                    let remote = i32::from(supply != w);
                    stock
                        .query(
                            conn,
                            &[supply.into(), item.into(), qty.into(), remote.into()],
                            &mut rows,
                        )
                        .await
                        .map_err(fail(what))?;
                    one(what, &rows)?;
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
                st.insert_lines
                    .execute(conn, &p)
                    .await
                    .map_err(fail("new-order: insert order_line"))?;
                if unused {
                    conn.simple_query("rollback")
                        .await
                        .map_err(fail("new-order: rollback"))?;
                    outcome.missing = 1;
                    return Ok(outcome);
                }
                // The total the terminal shows (clause 2.4.2.2), not stored.
                let total: f64 =
                    amounts.iter().sum::<f64>() * (1.0 - discount) * (1.0 + w_tax + d_tax);
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
                let what = "payment: warehouse";
                st.pay_warehouse
                    .query(conn, &[w.into(), cents.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let w_name = rows.text(0, 0).unwrap_or_default().to_string();
                let what = "payment: district";
                st.pay_district
                    .query(conn, &[w.into(), d.into(), cents.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let d_name = rows.text(0, 0).unwrap_or_default().to_string();
                let c_id = self
                    .find_customer(conn, st, c_w, c_d, customer, &mut rows)
                    .await?;
                let what = "payment: customer";
                st.pay_customer
                    .query(
                        conn,
                        &[
                            c_w.into(),
                            c_d.into(),
                            c_id.into(),
                            cents.into(),
                            d.into(),
                            w.into(),
                        ],
                        &mut rows,
                    )
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
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
                st.insert_history
                    .execute(conn, &p)
                    .await
                    .map_err(fail("payment: history"))?;
            }
            Staged::OrderStatus { d, customer } => {
                let d = *d;
                // Clause 2.6.2.2.
                let c_id = self
                    .find_customer(conn, st, w, d, customer, &mut rows)
                    .await?;
                let what = "order-status: customer";
                st.status_customer
                    .query(conn, &[w.into(), d.into(), c_id.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let what = "order-status: orders";
                st.last_order
                    .query(conn, &[w.into(), d.into(), c_id.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                if !rows.is_empty() {
                    let o_id: i32 = rows.get(0, 0).map_err(fail(what))?;
                    st.order_lines
                        .query(conn, &[w.into(), d.into(), o_id.into()], &mut rows)
                        .await
                        .map_err(fail("order-status: order lines"))?;
                }
            }
            Staged::Delivery { carrier } => {
                // Clause 2.7.4.2: each district's oldest undelivered order.
                let mut delivered = 0;
                let what = "delivery: new_order";
                for d in 1..=DISTRICTS as i32 {
                    // Skipped only when the district has no new order left
                    // (clause 2.7.4.2). Under read committed, a delivery
                    // that meets the row another one just took finds none
                    // and takes the next oldest (a new statement, a new
                    // snapshot); under the stricter levels it fails with
                    // 40001 and is retried.
                    let mut o_id = None;
                    for _ in 0..100 {
                        st.oldest_new_order
                            .query(conn, &[w.into(), d.into()], &mut rows)
                            .await
                            .map_err(fail(what))?;
                        if !rows.is_empty() {
                            o_id = Some(rows.get::<i32>(0, 0).map_err(fail(what))?);
                            break;
                        }
                        st.any_new_order
                            .query(conn, &[w.into(), d.into()], &mut rows)
                            .await
                            .map_err(fail(what))?;
                        one(what, &rows)?;
                        if rows.text(0, 0) != Some("t") {
                            break;
                        }
                    }
                    let Some(o_id) = o_id else {
                        continue;
                    };
                    let what = "delivery: orders";
                    st.carrier
                        .query(
                            conn,
                            &[w.into(), d.into(), o_id.into(), (*carrier).into()],
                            &mut rows,
                        )
                        .await
                        .map_err(fail(what))?;
                    one(what, &rows)?;
                    let c_id: i32 = rows.get(0, 0).map_err(fail(what))?;
                    st.deliver_lines
                        .execute(conn, &[w.into(), d.into(), o_id.into()])
                        .await
                        .map_err(fail("delivery: order lines"))?;
                    st.deliver_customer
                        .execute(conn, &[w.into(), d.into(), o_id.into(), c_id.into()])
                        .await
                        .map_err(fail("delivery: customer"))?;
                    delivered += 1;
                }
                outcome.rows = delivered;
            }
            Staged::StockLevel { threshold } => {
                // Clause 2.8.2.2.
                let d = self.d_stock;
                let what = "stock-level: district";
                st.next_o_id
                    .query(conn, &[w.into(), d.into()], &mut rows)
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
                let next: i32 = rows.get(0, 0).map_err(fail(what))?;
                let what = "stock-level: stock";
                st.low_stock
                    .query(
                        conn,
                        &[w.into(), d.into(), next.into(), (*threshold).into()],
                        &mut rows,
                    )
                    .await
                    .map_err(fail(what))?;
                one(what, &rows)?;
            }
        }
        conn.simple_query("commit").await.map_err(fail("commit"))?;
        Ok(outcome)
    }

    /// The customer's id: given, or the one in the middle of those with
    /// the last name ordered by first name (clause 2.5.2.2, position n/2
    /// rounded up).
    async fn find_customer(
        &self,
        conn: &mut WireConn,
        st: &Statements,
        w: i32,
        d: i32,
        customer: &Customer,
        rows: &mut Rows,
    ) -> Result<i32> {
        match customer {
            Customer::Id(c) => Ok(*c),
            Customer::Last(last) => {
                let fail = |e| Error::wire("tpcc: customer by last name failed", e);
                st.by_last
                    .query(conn, &[w.into(), d.into(), last.into()], rows)
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
}

const STOCK: &str = "update stock set s_quantity = case when s_quantity >= $3 + 10 \
     then s_quantity - $3 else s_quantity - $3 + 91 end, s_ytd = s_ytd + $3, \
     s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $4 \
     where s_w_id = $1 and s_i_id = $2 returning s_dist_DD::text, s_data";

impl Operation for Terminal {
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

    fn stage(&mut self) -> bool {
        let ty = self.draw_type();
        self.staged = Some(self.inputs(ty));
        if self.wait {
            // Clause 5.2.5.2 before the transaction, 5.2.5.4 after it.
            self.pauses = Pauses {
                before: wait::keying_time(ty),
                after: wait::think_time(&mut self.rng, ty),
            };
        }
        true
    }

    fn pauses(&self) -> Pauses {
        self.pauses
    }

    fn unit_type(&self) -> usize {
        match &self.staged {
            Some(Staged::NewOrder { .. }) | None => NEW_ORDER,
            Some(Staged::Payment { .. }) => PAYMENT,
            Some(Staged::OrderStatus { .. }) => ORDER_STATUS,
            Some(Staged::Delivery { .. }) => DELIVERY,
            Some(Staged::StockLevel { .. }) => STOCK_LEVEL,
        }
    }

    fn unit_label(&self) -> Option<String> {
        let ty = TYPES[self.unit_type()];
        Some(format!("{ty} on warehouse {}", self.w))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let (Some(st), Some(staged)) = (&self.st, &self.staged) else {
            return Err(Error::run(
                "tpcc: a transaction ran before its statements were prepared",
            ));
        };
        match self.run(conn, st, staged).await {
            Ok(o) => Ok(o),
            Err(e) => {
                // The error is the unit's; a failed rollback on a lost
                // connection adds nothing to it.
                if !conn.is_closed() {
                    let _ = conn.simple_query("rollback").await;
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terminal(thread: usize, w: u32) -> Terminal {
        Terminal::new(
            3,
            thread,
            Homes {
                homes: WarehouseRange::all(w),
                warehouses: w,
            },
            MIX,
            Constants::for_run(3, 157),
            "begin".into(),
            false,
        )
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
    fn the_deck_deals_the_standard_mix() {
        let mut t = terminal(0, 2);
        let mut n = [0u32; 5];
        for _ in 0..1000 {
            n[t.draw_type()] += 1;
        }
        assert_eq!(n, [450, 430, 40, 40, 40]);
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
        let mut t = Terminal::new(
            1,
            0,
            Homes {
                homes: WarehouseRange::all(1),
                warehouses: 1,
            },
            Mix([0, 0, 0, 0, 100]),
            Constants::for_run(1, 157),
            "begin".into(),
            false,
        );
        assert!((0..200).all(|_| t.draw_type() == STOCK_LEVEL));
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
            } = t.inputs(NEW_ORDER)
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
            } = t.inputs(PAYMENT)
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
            let Staged::Payment { c_w, .. } = t.inputs(PAYMENT) else {
                unreachable!()
            };
            assert_eq!(c_w, 1);
        }
    }

    #[test]
    fn terminals_spread_over_their_range_and_remote_ones_over_all() {
        let at = Homes {
            homes: WarehouseRange { first: 3, last: 4 },
            warehouses: 6,
        };
        let new = |thread| {
            Terminal::new(
                5,
                thread,
                at,
                MIX,
                Constants::for_run(5, 157),
                "begin".into(),
                false,
            )
        };
        let homes: Vec<i32> = (0..5).map(|t| new(t).w).collect();
        assert_eq!(homes, [3, 4, 3, 4, 3]);
        let mut t = new(1);
        let mut remote = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            if let Staged::Payment { c_w, .. } = t.inputs(PAYMENT) {
                remote.insert(c_w);
            }
        }
        // Home 4; remote payments reach every other warehouse, in the
        // range or not.
        assert_eq!(remote.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn clients_with_one_seed_on_other_ranges_draw_other_inputs() {
        let at = |first| Homes {
            homes: WarehouseRange { first, last: first },
            warehouses: 2,
        };
        let k = Constants::for_run(6, 157);
        let mut a = Terminal::new(6, 0, at(1), MIX, k, "begin".into(), false);
        let mut b = Terminal::new(6, 0, at(2), MIX, k, "begin".into(), false);
        let deck = |t: &mut Terminal| (0..100).map(|_| t.draw_type()).collect::<Vec<_>>();
        assert_ne!(deck(&mut a), deck(&mut b));
    }

    #[test]
    fn with_waits_each_transaction_has_its_keying_and_a_think_time() {
        let mut t = Terminal::new(
            2,
            0,
            Homes {
                homes: WarehouseRange::all(1),
                warehouses: 1,
            },
            MIX,
            Constants::for_run(2, 157),
            "begin".into(),
            true,
        );
        let mut think = [0.0f64; 5];
        let mut n = [0u32; 5];
        for _ in 0..20_000 {
            assert!(t.stage());
            let ty = t.unit_type();
            let p = t.pauses();
            assert_eq!(p.before, wait::keying_time(ty));
            assert!(p.after <= std::time::Duration::from_secs_f64(wait::THINK_MEAN_S[ty] * 10.0));
            think[ty] += p.after.as_secs_f64();
            n[ty] += 1;
        }
        for ty in [NEW_ORDER, PAYMENT] {
            let mean = think[ty] / f64::from(n[ty]);
            assert!((mean - 12.0).abs() < 0.6, "{ty}: {mean}");
        }
        // Off by default: no pause at all.
        let mut t = terminal(0, 1);
        t.stage();
        assert_eq!(t.pauses(), Pauses::default());
    }
}
