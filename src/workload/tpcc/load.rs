//! `tpcc-load`: the initial database population of clause 4.3.3.1, made
//! from `--seed` and sent by COPY.
//!
//! The work is cut into chunks that never span two tables: a slice of
//! `item`, one warehouse row, its ten districts, a slice of its stock, and
//! per district its customers, history, orders, order lines and new
//! orders. Warehouses are shared out over the workers by
//! [`thread_range`], so a worker writes whole warehouses; the item slices
//! go round the workers. With fewer warehouses than workers, every chunk
//! goes round the workers instead, so none is left idle. Several clients
//! (`--clients`) deal the chunks over all their threads as one client
//! would; `--warehouse-range` loads those warehouses alone, and `item`
//! only with the range that starts at 1. Each chunk's random generator is
//! seeded from the run's seed and the chunk's identity (warehouse,
//! district, order), never from the worker or the client, so the data
//! depends on `--seed` alone and not on `-t` or `--clients`.
//! Lines are made in `stage`, outside the timed section, as for the other
//! loads.

use std::collections::VecDeque;
use std::io::Write as _;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::schema::copy_sql;
use super::{
    C_LOAD_LAST, CUSTOMERS, DISTRICTS, ITEMS, NEW_ORDERS_FROM, ORDERS, WarehouseRange, nurand,
};
use crate::db::wire::WireConn;
use crate::error::Result;
use crate::workload::kit::copy_in::copy_all;
use crate::workload::kit::partition::thread_range;
use crate::workload::{Operation, Outcome, worker_seed};

/// Rows of `item` or `stock` per COPY.
const SLICE: u32 = 10_000;

/// One COPY's worth of rows, of one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Chunk {
    /// Items `from..to` (ids 1-based, end excluded).
    Items {
        from: u32,
        to: u32,
    },
    Warehouse {
        w: u32,
    },
    Districts {
        w: u32,
    },
    Stock {
        w: u32,
        from: u32,
        to: u32,
    },
    Customers {
        w: u32,
        d: u32,
    },
    History {
        w: u32,
        d: u32,
    },
    Orders {
        w: u32,
        d: u32,
    },
    OrderLines {
        w: u32,
        d: u32,
    },
    NewOrders {
        w: u32,
        d: u32,
    },
}

impl Chunk {
    pub fn table(&self) -> &'static str {
        match self {
            Chunk::Items { .. } => "item",
            Chunk::Warehouse { .. } => "warehouse",
            Chunk::Districts { .. } => "district",
            Chunk::Stock { .. } => "stock",
            Chunk::Customers { .. } => "customer",
            Chunk::History { .. } => "history",
            Chunk::Orders { .. } => "orders",
            Chunk::OrderLines { .. } => "order_line",
            Chunk::NewOrders { .. } => "new_order",
        }
    }
}

/// The chunks worker `t` of `threads` loads, for warehouses `ws` and,
/// with `items`, the `item` table: whole warehouses when there are at
/// least as many as workers; otherwise every chunk is dealt round the
/// workers, so that a worker is not left with the items alone while
/// another writes the one warehouse.
pub fn worker_chunks(ws: WarehouseRange, items: bool, threads: usize, t: usize) -> VecDeque<Chunk> {
    let threads = threads.max(1);
    let item_slices = if items { item_chunks() } else { Vec::new() };
    if (ws.len() as usize) < threads {
        return item_slices
            .into_iter()
            .chain(warehouse_chunks(ws.ids()))
            .enumerate()
            .filter(|(k, _)| k % threads == t)
            .map(|(_, c)| c)
            .collect();
    }
    let mut out: VecDeque<Chunk> = item_slices
        .into_iter()
        .enumerate()
        .filter(|(k, _)| k % threads == t)
        .map(|(_, c)| c)
        .collect();
    let mine = thread_range(u64::from(ws.len()), threads, t);
    out.extend(warehouse_chunks(
        ws.first + mine.start as u32..ws.first + mine.end as u32,
    ));
    out
}

/// The rows chunk `c` holds, without making them: the order lines of a
/// district are counted from the line counts the orders draw (30000
/// draws per warehouse, a small part of what making its 500k rows
/// takes), so the load's progress bar has the exact total.
pub fn chunk_rows(c: Chunk, seed: u64) -> u64 {
    match c {
        Chunk::Items { from, to } | Chunk::Stock { from, to, .. } => u64::from(to - from),
        Chunk::Warehouse { .. } => 1,
        Chunk::Districts { .. } => u64::from(DISTRICTS),
        Chunk::Customers { .. } | Chunk::History { .. } | Chunk::Orders { .. } => {
            u64::from(CUSTOMERS)
        }
        Chunk::OrderLines { w, d } => (1..=ORDERS)
            .map(|o| u64::from(order_shape(seed, w, d, o).0))
            .sum(),
        Chunk::NewOrders { .. } => u64::from(ORDERS - NEW_ORDERS_FROM + 1),
    }
}

/// The slices of `item`.
fn item_chunks() -> Vec<Chunk> {
    (1..=ITEMS)
        .step_by(SLICE as usize)
        .map(|from| Chunk::Items {
            from,
            to: (from + SLICE).min(ITEMS + 1),
        })
        .collect()
}

/// Every chunk of warehouses `ws`, warehouse by warehouse.
fn warehouse_chunks(ws: std::ops::Range<u32>) -> Vec<Chunk> {
    let mut out = Vec::new();
    for w in ws {
        out.push(Chunk::Warehouse { w });
        out.push(Chunk::Districts { w });
        for from in (1..=ITEMS).step_by(SLICE as usize) {
            out.push(Chunk::Stock {
                w,
                from,
                to: (from + SLICE).min(ITEMS + 1),
            });
        }
        for d in 1..=DISTRICTS {
            out.push(Chunk::Customers { w, d });
            out.push(Chunk::History { w, d });
            out.push(Chunk::Orders { w, d });
            out.push(Chunk::OrderLines { w, d });
            out.push(Chunk::NewOrders { w, d });
        }
    }
    out
}

/// The syllables of customer last names (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The last name of number `n` (0..=999): its three digits' syllables.
pub fn last_name(n: u32) -> String {
    let n = n % 1000;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[(n / 100) as usize]);
    s.push_str(SYLLABLES[(n / 10 % 10) as usize]);
    s.push_str(SYLLABLES[(n % 10) as usize]);
    s
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A random a-string of `min..=max` characters (clause 4.3.2.2).
fn astring(rng: &mut SmallRng, min: usize, max: usize, out: &mut Vec<u8>) {
    let len = rng.random_range(min..=max);
    for _ in 0..len {
        out.push(ALNUM[rng.random_range(0..ALNUM.len())]);
    }
}

/// A random n-string of `len` digits.
fn nstring(rng: &mut SmallRng, len: usize, out: &mut Vec<u8>) {
    for _ in 0..len {
        out.push(b'0' + rng.random_range(0..10u8));
    }
}

/// i_data and s_data: an a-string of 26..50, in 10% of rows with
/// "ORIGINAL" at a random position (clause 4.3.3.1).
fn data_with_original(rng: &mut SmallRng, out: &mut Vec<u8>) {
    let start = out.len();
    astring(rng, 26, 50, out);
    if rng.random_range(0..10) == 0 {
        let len = out.len() - start;
        let at = start + rng.random_range(0..=len - 8);
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// Street 1, street 2, city, state, zip (clause 4.3.2.7).
fn address(rng: &mut SmallRng, out: &mut Vec<u8>) {
    for _ in 0..3 {
        astring(rng, 10, 20, out);
        out.push(b'\t');
    }
    for _ in 0..2 {
        out.push(b'A' + rng.random_range(0..26u8));
    }
    out.push(b'\t');
    nstring(rng, 4, out);
    out.extend_from_slice(b"11111");
}

/// A tax rate 0.0000..=0.2000.
fn tax(rng: &mut SmallRng, out: &mut Vec<u8>) {
    let _ = write!(out, "0.{:04}", rng.random_range(0..=2000u32));
}

fn cents(c: u64, out: &mut Vec<u8>) {
    let _ = write!(out, "{}.{:02}", c / 100, c % 100);
}

/// The random generator of one chunk (or one order), from the run's
/// seed and what it is, so that the data does not depend on `-t`.
fn rng_for(seed: u64, what: u64, w: u32, d: u32, n: u32) -> SmallRng {
    let key = ((u64::from(w) * 16 + u64::from(d)) << 20) | u64::from(n);
    SmallRng::seed_from_u64(worker_seed(seed, key as usize, 0x7C_C000 + what))
}

/// The customer ids of a district's orders: a random permutation of
/// 1..=3000 (clause 4.3.3.1, o_c_id).
fn order_customers(seed: u64, w: u32, d: u32) -> Vec<u32> {
    let mut rng = rng_for(seed, 1, w, d, 0);
    let mut ids: Vec<u32> = (1..=CUSTOMERS).collect();
    for i in (1..ids.len()).rev() {
        let j = rng.random_range(0..=i);
        ids.swap(i, j);
    }
    ids
}

/// An order's line count and carrier, drawn alike by the orders and the
/// order lines.
fn order_shape(seed: u64, w: u32, d: u32, o: u32) -> (u32, u32) {
    let mut rng = rng_for(seed, 2, w, d, o);
    (rng.random_range(5..=15), rng.random_range(1..=10))
}

/// Writes chunk `c` as COPY text lines; returns the rows written.
pub fn chunk_lines(c: Chunk, seed: u64, now: &str, out: &mut Vec<u8>) -> u64 {
    let mut rows = 0u64;
    match c {
        Chunk::Items { from, to } => {
            let mut rng = rng_for(seed, 3, 0, 0, from);
            for i in from..to {
                let _ = write!(out, "{i}\t{}\t", rng.random_range(1..=10_000u32));
                astring(&mut rng, 14, 24, out);
                out.push(b'\t');
                cents(rng.random_range(100..=10_000u64), out);
                out.push(b'\t');
                data_with_original(&mut rng, out);
                out.push(b'\n');
                rows += 1;
            }
        }
        Chunk::Warehouse { w } => {
            let mut rng = rng_for(seed, 4, w, 0, 0);
            let _ = write!(out, "{w}\t");
            astring(&mut rng, 6, 10, out);
            out.push(b'\t');
            address(&mut rng, out);
            out.push(b'\t');
            tax(&mut rng, out);
            out.extend_from_slice(b"\t300000.00\n");
            rows += 1;
        }
        Chunk::Districts { w } => {
            let mut rng = rng_for(seed, 5, w, 0, 0);
            for d in 1..=DISTRICTS {
                let _ = write!(out, "{d}\t{w}\t");
                astring(&mut rng, 6, 10, out);
                out.push(b'\t');
                address(&mut rng, out);
                out.push(b'\t');
                tax(&mut rng, out);
                let _ = writeln!(out, "\t30000.00\t{}", ORDERS + 1);
                rows += 1;
            }
        }
        Chunk::Stock { w, from, to } => {
            let mut rng = rng_for(seed, 6, w, 0, from);
            for i in from..to {
                let _ = write!(out, "{i}\t{w}\t{}\t", rng.random_range(10..=100u32));
                for _ in 0..10 {
                    astring(&mut rng, 24, 24, out);
                    out.push(b'\t');
                }
                out.extend_from_slice(b"0\t0\t0\t");
                data_with_original(&mut rng, out);
                out.push(b'\n');
                rows += 1;
            }
        }
        Chunk::Customers { w, d } => {
            let mut rng = rng_for(seed, 7, w, d, 0);
            for c in 1..=CUSTOMERS {
                let _ = write!(out, "{c}\t{d}\t{w}\t");
                astring(&mut rng, 8, 16, out);
                // Clause 4.3.3.1: the first 1000 customers take the 1000
                // names in order, the others a NURand(255, 0, 999) one.
                let last = if c <= 1000 {
                    c - 1
                } else {
                    nurand(&mut rng, 255, C_LOAD_LAST, 0, 999)
                };
                let _ = write!(out, "\tOE\t{}\t", last_name(last));
                address(&mut rng, out);
                out.push(b'\t');
                nstring(&mut rng, 16, out);
                let credit = if rng.random_range(0..10) == 0 {
                    "BC"
                } else {
                    "GC"
                };
                let _ = write!(out, "\t{now}\t{credit}\t50000.00\t0.{:04}", {
                    rng.random_range(0..=5000u32)
                });
                out.extend_from_slice(b"\t-10.00\t10.00\t1\t0\t");
                astring(&mut rng, 300, 500, out);
                out.push(b'\n');
                rows += 1;
            }
        }
        Chunk::History { w, d } => {
            let mut rng = rng_for(seed, 8, w, d, 0);
            for c in 1..=CUSTOMERS {
                let _ = write!(out, "{c}\t{d}\t{w}\t{d}\t{w}\t{now}\t10.00\t");
                astring(&mut rng, 12, 24, out);
                out.push(b'\n');
                rows += 1;
            }
        }
        Chunk::Orders { w, d } => {
            let customers = order_customers(seed, w, d);
            for (o, c) in (1..=ORDERS).zip(customers) {
                let (lines, carrier) = order_shape(seed, w, d, o);
                let _ = write!(out, "{o}\t{d}\t{w}\t{c}\t{now}\t");
                if o < NEW_ORDERS_FROM {
                    let _ = write!(out, "{carrier}");
                } else {
                    out.extend_from_slice(b"\\N");
                }
                let _ = writeln!(out, "\t{lines}\t1");
                rows += 1;
            }
        }
        Chunk::OrderLines { w, d } => {
            let mut rng = rng_for(seed, 9, w, d, 0);
            for o in 1..=ORDERS {
                let (lines, _) = order_shape(seed, w, d, o);
                let delivered = o < NEW_ORDERS_FROM;
                for n in 1..=lines {
                    let item = rng.random_range(1..=ITEMS);
                    let _ = write!(out, "{o}\t{d}\t{w}\t{n}\t{item}\t{w}\t");
                    if delivered {
                        out.extend_from_slice(now.as_bytes());
                        out.extend_from_slice(b"\t5\t0.00\t");
                    } else {
                        out.extend_from_slice(b"\\N\t5\t");
                        cents(rng.random_range(1..=999_999u64), out);
                        out.push(b'\t');
                    }
                    astring(&mut rng, 24, 24, out);
                    out.push(b'\n');
                    rows += 1;
                }
            }
        }
        Chunk::NewOrders { w, d } => {
            for o in NEW_ORDERS_FROM..=ORDERS {
                let _ = writeln!(out, "{o}\t{d}\t{w}");
                rows += 1;
            }
        }
    }
    rows
}

/// One worker's share of the load.
pub struct LoadOp {
    chunks: VecDeque<Chunk>,
    seed: u64,
    /// The load's time, for c_since, h_date, o_entry_d, ol_delivery_d.
    now: String,
    staged: Option<Chunk>,
    sql: String,
    data: Vec<u8>,
    /// Bytes of COPY text sent by every worker of the load, counted once
    /// a COPY succeeds: the load's MB/s.
    sent: Arc<AtomicU64>,
}

impl LoadOp {
    /// A worker that loads `chunks` (see [`worker_chunks`]).
    /// `sent` adds up the COPY text the workers send.
    pub fn new(chunks: VecDeque<Chunk>, seed: u64, now: String, sent: Arc<AtomicU64>) -> Self {
        LoadOp {
            chunks,
            seed,
            now,
            staged: None,
            sql: String::new(),
            data: Vec::new(),
            sent,
        }
    }
}

impl Operation for LoadOp {
    async fn prepare(&mut self, _conn: &mut WireConn) -> Result<()> {
        Ok(())
    }

    fn stage(&mut self) -> bool {
        let Some(c) = self.chunks.pop_front() else {
            return false;
        };
        self.data.clear();
        chunk_lines(c, self.seed, &self.now, &mut self.data);
        self.sql = copy_sql(c.table());
        self.staged = Some(c);
        true
    }

    fn unit_label(&self) -> Option<String> {
        self.staged.map(|c| format!("{c:?}"))
    }

    async fn execute(&mut self, conn: &mut WireConn) -> Result<Outcome> {
        let rows = copy_all(conn, &self.sql, &self.data).await?;
        self.sent
            .fetch_add(self.data.len() as u64, Ordering::Relaxed);
        Ok(Outcome { rows, missing: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(c: Chunk) -> Vec<String> {
        let mut out = Vec::new();
        let n = chunk_lines(c, 7, "2026-01-01 00:00:00", &mut out);
        let text = String::from_utf8(out).unwrap();
        let v: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(v.len() as u64, n);
        v
    }

    #[test]
    fn one_warehouse_is_shared_by_more_workers() {
        let one = WarehouseRange::all(1);
        let a = worker_chunks(one, true, 2, 0);
        let b = worker_chunks(one, true, 2, 1);
        assert!(
            a.len().abs_diff(b.len()) <= 1,
            "{} and {}",
            a.len(),
            b.len()
        );
        assert!(b.iter().any(|c| c.table() == "order_line"));
        // As many warehouses as workers: whole warehouses each.
        let a = worker_chunks(WarehouseRange::all(2), true, 2, 0);
        assert!(a.iter().all(|c| !matches!(c, Chunk::Orders { w: 2, .. })));
    }

    #[test]
    fn the_chunks_cover_every_table_once_whatever_the_threads() {
        for threads in [1, 2, 3, 4, 7] {
            let all: Vec<Chunk> = (0..threads)
                .flat_map(|t| worker_chunks(WarehouseRange::all(4), true, threads, t))
                .collect();
            let distinct: std::collections::HashSet<&Chunk> = all.iter().collect();
            assert_eq!(distinct.len(), all.len(), "{threads} workers");
            let count = |t: &str| all.iter().filter(|c| c.table() == t).count();
            assert_eq!(count("item"), 10);
            assert_eq!(count("warehouse"), 4);
            assert_eq!(count("district"), 4);
            assert_eq!(count("stock"), 40);
            for t in ["customer", "history", "orders", "order_line", "new_order"] {
                assert_eq!(count(t), 40, "{t}");
            }
        }
    }

    #[test]
    fn a_range_loads_its_warehouses_alone_and_items_only_from_1() {
        let ws = WarehouseRange { first: 3, last: 5 };
        for threads in [1, 2, 4] {
            let all: Vec<Chunk> = (0..threads)
                .flat_map(|t| worker_chunks(ws, false, threads, t))
                .collect();
            assert!(all.iter().all(|c| c.table() != "item"), "{threads}");
            let mut w: Vec<u32> = all
                .iter()
                .filter_map(|c| match c {
                    Chunk::Warehouse { w } => Some(*w),
                    _ => None,
                })
                .collect();
            w.sort();
            assert_eq!(w, [3, 4, 5], "{threads} workers");
            assert_eq!(all.iter().filter(|c| c.table() == "stock").count(), 30);
        }
        let with_items: Vec<Chunk> =
            worker_chunks(WarehouseRange { first: 1, last: 2 }, true, 1, 0)
                .into_iter()
                .collect();
        assert_eq!(
            with_items.iter().filter(|c| c.table() == "item").count(),
            10
        );
    }

    #[test]
    fn the_counted_rows_of_a_chunk_are_the_rows_it_makes() {
        let chunks = [
            Chunk::Items {
                from: 1,
                to: 10_001,
            },
            Chunk::Warehouse { w: 2 },
            Chunk::Districts { w: 2 },
            Chunk::Stock {
                w: 2,
                from: 90_001,
                to: 100_001,
            },
            Chunk::Customers { w: 2, d: 4 },
            Chunk::History { w: 2, d: 4 },
            Chunk::Orders { w: 2, d: 4 },
            Chunk::OrderLines { w: 2, d: 4 },
            Chunk::NewOrders { w: 2, d: 4 },
        ];
        for c in chunks {
            assert_eq!(chunk_rows(c, 7), lines(c).len() as u64, "{c:?}");
        }
    }

    #[test]
    fn one_warehouse_has_the_specifications_cardinalities() {
        let total = |f: &dyn Fn(u32) -> Chunk| (1..=10).map(|d| lines(f(d)).len()).sum::<usize>();
        let items: usize = worker_chunks(WarehouseRange::all(1), true, 1, 0)
            .into_iter()
            .filter(|c| c.table() == "item")
            .map(|c| lines(c).len())
            .sum();
        assert_eq!(items, 100_000);
        assert_eq!(lines(Chunk::Warehouse { w: 1 }).len(), 1);
        assert_eq!(lines(Chunk::Districts { w: 1 }).len(), 10);
        assert_eq!(total(&|d| Chunk::Customers { w: 1, d }), 30_000);
        assert_eq!(total(&|d| Chunk::History { w: 1, d }), 30_000);
        assert_eq!(total(&|d| Chunk::Orders { w: 1, d }), 30_000);
        assert_eq!(total(&|d| Chunk::NewOrders { w: 1, d }), 9_000);
        let ol = total(&|d| Chunk::OrderLines { w: 1, d });
        // 5..15 lines per order, 10 on average.
        assert!((280_000..=320_000).contains(&ol), "{ol}");
    }

    #[test]
    fn orders_and_their_lines_agree_and_follow_clause_4_3_3_1() {
        let orders = lines(Chunk::Orders { w: 2, d: 3 });
        let ol = lines(Chunk::OrderLines { w: 2, d: 3 });
        let mut want = 0usize;
        let mut customers = std::collections::HashSet::new();
        for o in &orders {
            let f: Vec<&str> = o.split('\t').collect();
            let id: u32 = f[0].parse().unwrap();
            customers.insert(f[3].to_string());
            assert_eq!(f[5] == "\\N", id >= 2101, "carrier of order {id}");
            want += f[6].parse::<usize>().unwrap();
        }
        assert_eq!(customers.len(), 3000, "o_c_id is a permutation");
        assert_eq!(ol.len(), want);
        for l in &ol {
            let f: Vec<&str> = l.split('\t').collect();
            let id: u32 = f[0].parse().unwrap();
            assert_eq!(f[6] == "\\N", id >= 2101);
            assert_eq!(f[8] == "0.00", id < 2101);
            assert_eq!(f[9].len(), 24);
        }
    }

    #[test]
    fn customers_follow_the_name_and_credit_rules() {
        let c = lines(Chunk::Customers { w: 1, d: 1 });
        let f: Vec<&str> = c[0].split('\t').collect();
        assert_eq!(f.len(), 21);
        assert_eq!(f[5], "BARBARBAR");
        let f: Vec<&str> = c[999].split('\t').collect();
        assert_eq!(f[5], "EINGEINGEING");
        let bad = c
            .iter()
            .filter(|l| l.split('\t').nth(13) == Some("BC"))
            .count();
        assert!((200..=400).contains(&bad), "{bad} of 3000 have bad credit");
        assert!(c.iter().all(|l| l.split('\t').nth(4) == Some("OE")));
    }

    #[test]
    fn about_ten_percent_of_items_are_original() {
        let items = lines(Chunk::Items {
            from: 1,
            to: 10_001,
        });
        let orig = items.iter().filter(|l| l.contains("ORIGINAL")).count();
        assert!((800..=1200).contains(&orig), "{orig}");
        assert!(items.iter().all(|l| l.split('\t').count() == 5));
    }

    #[test]
    fn the_same_seed_gives_the_same_data() {
        let a = lines(Chunk::Stock {
            w: 1,
            from: 1,
            to: 101,
        });
        let b = lines(Chunk::Stock {
            w: 1,
            from: 1,
            to: 101,
        });
        assert_eq!(a, b);
        assert_eq!(a[0].split('\t').count(), 17);
    }
}
