//! Keying and think times (`--tpcc-wait`), as clause 5.2.5 of the
//! specification defines them for an emulated terminal.
//!
//! A terminal waits its keying time before each transaction (the operator
//! typing the input screen) and its think time after it (reading the
//! output). Neither is work for the database nor holds a connection: a
//! terminal waits them in the queue of [`super::terminals`], its next
//! transaction due at their end, so no latency contains them, and the
//! stop or the end of `--time` ends them at once. They are what bounds a warehouse to 12.86 tpmC with ten
//! terminals: [`new_orders_per_minute`] derives that figure from the
//! times below.

use std::time::Duration;

use rand::RngExt;
use rand::rngs::SmallRng;

/// Clause 5.2.5.2: the keying time is constant per transaction type, at
/// least 18 s for New-Order, 3 s for Payment and 2 s each for
/// Order-Status, Delivery and Stock-Level. In the order of
/// [`super::txn::TYPES`].
pub const KEYING_S: [f64; 5] = [18.0, 3.0, 2.0, 2.0, 2.0];

/// Clause 5.2.5.7: the least mean think time per type, 12 s for New-Order
/// and Payment, 10 s for Order-Status, 5 s for Delivery and Stock-Level.
pub const THINK_MEAN_S: [f64; 5] = [12.0, 12.0, 10.0, 5.0, 5.0];

/// Clause 5.2.5.4: each think time distribution may be truncated at ten
/// times its mean.
pub const THINK_TRUNCATION: f64 = 10.0;

/// The keying time of transaction type `ty`.
pub fn keying_time(ty: usize) -> Duration {
    Duration::from_secs_f64(KEYING_S.get(ty).copied().unwrap_or(0.0))
}

/// A think time for type `ty` (clause 5.2.5.4): Tt = -ln(r) × μ with r
/// uniform in (0, 1] and μ the type's mean, at most 10 μ.
pub fn think_time(rng: &mut SmallRng, ty: usize) -> Duration {
    let mean = THINK_MEAN_S.get(ty).copied().unwrap_or(0.0);
    // random::<f64>() is in [0, 1): 1 - it is in (0, 1], so ln is finite.
    let r = 1.0 - rng.random::<f64>();
    Duration::from_secs_f64((-r.ln()).min(THINK_TRUNCATION) * mean)
}

/// The mean of a think time truncated at 10 μ: μ (1 - e^-10).
pub fn truncated_mean_s(ty: usize) -> f64 {
    THINK_MEAN_S.get(ty).copied().unwrap_or(0.0) * (1.0 - (-THINK_TRUNCATION).exp())
}

/// New-Orders a terminal completes per minute in the mix `cards` (per
/// 100) when its transactions take no time: what the keying and think
/// times alone allow. With the standard mix it is 1.286, so ten
/// terminals per warehouse give the 12.86 tpmC of clause 5.4.1's bound;
/// response times lengthen each cycle and bring it below.
pub fn new_orders_per_minute(cards: [u32; 5]) -> f64 {
    let total: f64 = cards.iter().map(|&n| f64::from(n)).sum();
    if total == 0.0 {
        return 0.0;
    }
    let cycle_s: f64 = (0..5)
        .map(|ty| f64::from(cards[ty]) / total * (KEYING_S[ty] + truncated_mean_s(ty)))
        .sum();
    60.0 / cycle_s * f64::from(cards[super::txn::NEW_ORDER]) / total
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn think_times_have_the_clauses_mean_and_are_truncated_at_ten_times_it() {
        let mut rng = SmallRng::seed_from_u64(11);
        let n = 400_000;
        let (mut sum, mut max, mut at_cap, mut above_mean) = (0.0, 0.0f64, 0, 0);
        for _ in 0..n {
            let t = think_time(&mut rng, 0).as_secs_f64();
            sum += t;
            max = max.max(t);
            at_cap += i32::from((t - 120.0).abs() < 1e-9);
            above_mean += i32::from(t > 12.0);
            assert!(t >= 0.0);
        }
        let mean = sum / f64::from(n);
        assert!((mean - 12.0).abs() < 0.1, "mean {mean}");
        assert!(max <= 120.0 + 1e-9, "max {max}");
        // P(-ln r > 10) = e^-10: about 18 of 400000 are cut at 10 μ.
        assert!((5..=40).contains(&at_cap), "{at_cap} at the cap");
        // Exponential: P(T > μ) = e^-1.
        let share = f64::from(above_mean) / f64::from(n);
        assert!((share - (-1.0f64).exp()).abs() < 0.005, "{share}");
        // The other types' means.
        for (ty, want) in [(1, 12.0), (2, 10.0), (3, 5.0), (4, 5.0)] {
            let m: f64 = (0..100_000)
                .map(|_| think_time(&mut rng, ty).as_secs_f64())
                .sum::<f64>()
                / 100_000.0;
            assert!((m - want).abs() < want * 0.02, "type {ty}: {m}");
        }
    }

    #[test]
    fn keying_times_are_the_clauses() {
        assert_eq!(keying_time(0), Duration::from_secs(18));
        assert_eq!(keying_time(1), Duration::from_secs(3));
        for ty in 2..5 {
            assert_eq!(keying_time(ty), Duration::from_secs(2));
        }
    }

    #[test]
    fn ten_terminals_per_warehouse_make_the_12_86_tpmc_bound() {
        let per_terminal = new_orders_per_minute(super::super::txn::MIX.0);
        assert!(
            (per_terminal * 10.0 - super::super::MAX_TPMC_PER_WAREHOUSE).abs() < 0.005,
            "{per_terminal}"
        );
        assert_eq!(new_orders_per_minute([0, 100, 0, 0, 0]), 0.0);
    }
}
