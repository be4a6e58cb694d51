//! Which key an operation touches next: uniform, YCSB-style zipfian, latest,
//! hotspot or sequential draws over the keys 0..n.
//!
//! A benchmark's key distribution decides how much contention and caching it
//! measures, so the shapes follow YCSB's core workloads where users will
//! compare against them (facts in `shared/peers.md`). What is built here is
//! pure arithmetic; workloads turn the numbers into ids or key strings.
//!
//! Why it is shaped so:
//! - **One picker per worker.** A [`KeyPicker`] is precomputed state plus a
//!   cursor; each worker owns a clone and passes its own RNG, so a draw takes
//!   no lock, allocates nothing and costs a few floating-point operations.
//!   YCSB shares one generator between threads and synchronises on it when the
//!   key count changes; here nothing is shared.
//! - **Zipfian is scrambled.** A plain zipfian makes keys 0, 1, 2… the hot
//!   ones, so they sit side by side in one range of the primary key (one
//!   tablet, one page). As in YCSB, ranks are drawn from a zipfian over 10^10
//!   items with exponent theta and spread over the key space with
//!   [`fnv1a_64`]`(rank) % n`. The hottest key then takes 1/ζ(10^10, θ) of the
//!   draws, about 3.8% at θ = 0.99, whatever n is; a plain zipfian over 20,000
//!   keys would give its first key about 9%.
//! - **No start-up cost.** YCSB sums ζ(n, θ) term by term (it ships the value
//!   for 10^10 items and θ = 0.99 precomputed because that sum takes minutes).
//!   [`zeta`] adds the first [`ZETA_HEAD`] terms and gets the rest from the
//!   Euler–Maclaurin formula, within 1e-14 relative for any n. So a
//!   picker for any θ is built in microseconds, and `latest` can follow a
//!   growing key count with an O(1) update instead of adding terms.
//! - **The draw method follows theta.** For θ < 1 the method of Gray et al.
//!   ("Quickly generating billion-record synthetic databases", SIGMOD 1994),
//!   as YCSB uses it, so that a θ = 0.99 run skews like YCSB's. It is exact
//!   for the first two ranks and approximate after them (at θ = 0.99 rank 3
//!   is drawn about 18% more often than a true zipfian would, rank 10 about
//!   3%). For θ > 1, where that method does not apply, the exact
//!   rejection-inversion method of Hörmann and Derflinger ("Rejection-inversion
//!   to generate variates from monotone discrete distributions", 1996), which
//!   is bounded to n by construction and needs about one try per draw.

use rand::{Rng, RngExt};

/// YCSB's zipfian constant, the default of `--zipf-theta` for every
/// zipfian and `latest` key distribution.
pub const ZIPF_THETA: f64 = 0.99;

/// How many items YCSB's scrambled zipfian draws ranks from before hashing
/// them into the key space (its `ScrambledZipfianGenerator.ITEM_COUNT`, the
/// count its precomputed ζ = 26.46902820178302 for θ = 0.99 belongs to).
pub const SCRAMBLED_ITEMS: u64 = 10_000_000_000;

/// How many leading terms [`zeta`] adds one by one before the
/// Euler–Maclaurin tail takes over. With corrections up to the fifth
/// derivative, the first neglected term at 64 is below 1e-16 of the sum for
/// every theta (it falls as 64^-(θ+7)), so a larger head would only cost time.
pub const ZETA_HEAD: u64 = 64;

/// How keys are drawn (`--key-distribution`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDistribution {
    Uniform,
    /// YCSB's scrambled zipfian: a zipfian draw over 10^10 items with
    /// exponent theta, then `fnv1a_64(draw) % n`.
    Zipfian {
        theta: f64,
    },
    /// Favours the most recently inserted keys: newest - 1 - zipfian(theta)
    /// over the current key count (YCSB's SkewedLatest idea).
    Latest {
        theta: f64,
    },
    /// `fraction` of the keys (the first ones) take `ops` of the draws,
    /// uniform within the hot and the cold set.
    Hotspot {
        fraction: f64,
        ops: f64,
    },
    /// Each picker walks the key space in order from its own start, wrapping.
    Sequential,
}

impl KeyDistribution {
    /// The name the option and the reports use.
    pub fn name(&self) -> &'static str {
        match self {
            KeyDistribution::Uniform => "uniform",
            KeyDistribution::Zipfian { .. } => "zipfian",
            KeyDistribution::Latest { .. } => "latest",
            KeyDistribution::Hotspot { .. } => "hotspot",
            KeyDistribution::Sequential => "sequential",
        }
    }

    /// Refuses parameters no picker can draw from, with a message that says
    /// what to give instead.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            KeyDistribution::Zipfian { theta } | KeyDistribution::Latest { theta } => {
                let name = self.name();
                if !theta.is_finite() || theta <= 0.0 {
                    Err(format!(
                        "{name}: theta must be a number above 0 (YCSB uses 0.99), got {theta}"
                    ))
                } else if theta == 1.0 {
                    Err(format!(
                        "{name}: theta 1 is not supported, use a value just below or above it \
                         (0.99 as YCSB, or 1.01)"
                    ))
                } else {
                    Ok(())
                }
            }
            KeyDistribution::Hotspot { fraction, ops } => {
                if !(fraction > 0.0 && fraction < 1.0) {
                    Err(format!(
                        "hotspot: the hot fraction of the keys must lie strictly between 0 and 1 \
                         (YCSB uses 0.2), got {fraction}"
                    ))
                } else if !(ops > 0.0 && ops < 1.0) {
                    Err(format!(
                        "hotspot: the fraction of operations on hot keys must lie strictly \
                         between 0 and 1 (YCSB uses 0.8), got {ops}"
                    ))
                } else {
                    Ok(())
                }
            }
            KeyDistribution::Uniform | KeyDistribution::Sequential => Ok(()),
        }
    }
}

/// YCSB's 64-bit FNV-1a hash of a long (`Utils.fnvhash64`): the eight bytes
/// of `v`, lowest first, each xored into the state and multiplied by the FNV
/// prime, then the absolute value of the result read as a signed number.
/// Used to scramble zipfian ranks and for YCSB key names ("user" + hash).
///
/// The one state whose absolute value does not fit (i64::MIN) is returned as
/// 2^63, where Java's `Math.abs` leaves it negative.
pub fn fnv1a_64(v: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let h = v
        .to_le_bytes()
        .iter()
        .fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    (h as i64).unsigned_abs()
}

/// ζ(n, θ) = Σ_{k=1..n} k^-θ, the normalising sum of a zipfian over n items.
/// Exact summation for the first [`ZETA_HEAD`] terms, Euler–Maclaurin beyond:
/// O(1) whatever n is. Against mpmath's Hurwitz zeta for θ from 0.001 to 30
/// and n up to 2^53 the relative error was at most 5e-15 (at n = 2^53 and
/// tiny θ, where the sum nears 10^16).
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_after_head(partial_zeta(n.min(ZETA_HEAD), theta), n, theta)
}

/// Σ_{k=1..n} k^-θ term by term, smallest terms first.
fn partial_zeta(n: u64, theta: f64) -> f64 {
    (1..=n).rev().map(|k| (k as f64).powf(-theta)).sum()
}

/// ζ(n, θ) given `head` = ζ(min(n, ZETA_HEAD), θ), so that a zipfian whose
/// item count changes pays only for the tail.
fn zeta_after_head(head: f64, n: u64, theta: f64) -> f64 {
    if n <= ZETA_HEAD {
        head
    } else {
        head + euler_maclaurin_tail(ZETA_HEAD, n, theta)
    }
}

/// Σ_{k=m+1..n} k^-θ for 1 <= m < n, by the Euler–Maclaurin formula on
/// f(x) = x^-θ over [m, n]: the integral, half the end terms, and the
/// Bernoulli corrections B2/2!, B4/4!, B6/6! times the odd derivatives'
/// differences. The formula counts f(m) by half, hence -f(m)/2 below.
fn euler_maclaurin_tail(m: u64, n: u64, theta: f64) -> f64 {
    let (a, b) = (m as f64, n as f64);
    let one_minus = 1.0 - theta;
    // ∫_a^b x^-θ dx = (b^(1-θ) - a^(1-θ)) / (1-θ), written with expm1 so
    // that θ close to 1 does not cancel away the digits.
    let integral = a.powf(one_minus) * (one_minus * (b / a).ln()).exp_m1() / one_minus;
    let (fa, fb) = (a.powf(-theta), b.powf(-theta));
    let mut sum = integral + (fb - fa) / 2.0;
    // f^(2j-1)(x) = -θ(θ+1)…(θ+2j-2) x^(-θ-2j+1); `rising` holds the product.
    const BERNOULLI_OVER_FACTORIAL: [f64; 3] = [1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0];
    let mut rising = theta;
    let (mut pa, mut pb) = (fa / a, fb / b);
    for (j, c) in BERNOULLI_OVER_FACTORIAL.iter().enumerate() {
        sum += c * (-rising) * (pb - pa);
        let t = theta + 2.0 * j as f64;
        rising *= (t + 1.0) * (t + 2.0);
        pa /= a * a;
        pb /= b * b;
    }
    sum
}

/// A zipfian over ranks 0..items, rank 0 the most likely, by the method that
/// suits theta (see the module doc).
#[derive(Clone, Debug)]
enum Zipf {
    Gray(Gray),
    Rejection(RejectionInversion),
}

impl Zipf {
    fn new(items: u64, theta: f64) -> Zipf {
        if theta < 1.0 {
            Zipf::Gray(Gray::new(items, theta))
        } else {
            Zipf::Rejection(RejectionInversion::new(items, theta))
        }
    }

    fn items(&self) -> u64 {
        match self {
            Zipf::Gray(g) => g.items,
            Zipf::Rejection(r) => r.items,
        }
    }

    /// Changes the number of items, in O(1).
    fn resize(&mut self, items: u64) {
        if items != self.items() {
            match self {
                Zipf::Gray(g) => g.resize(items),
                Zipf::Rejection(r) => r.resize(items),
            }
        }
    }

    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            Zipf::Gray(g) => g.draw(rng),
            Zipf::Rejection(r) => r.draw(rng),
        }
    }
}

/// A plain zipfian over ranks 0..items, rank 0 the most likely, unscrambled:
/// what pgbench's `random_zipfian(lb, ub, s)` draws (its value is `lb` plus
/// the rank). Unlike [`KeyDistribution::Zipfian`], nothing is hashed, so the
/// low ranks stay together. Any exponent above 0 other than 1: Gray et al.
/// below 1 (approximate beyond the first two ranks, see the module doc),
/// rejection-inversion above 1 (exact). Built in about 70 `powf` calls, so
/// a caller that draws with the same bounds again keeps it rather than
/// building a new one per draw.
#[derive(Clone, Debug)]
pub struct ZipfSampler {
    items: u64,
    theta: f64,
    zipf: Zipf,
}

impl ZipfSampler {
    /// A sampler over `items` ranks (0 is taken as 1); `theta` must pass
    /// [`KeyDistribution::validate`] (above 0, finite, not 1).
    pub fn new(items: u64, theta: f64) -> ZipfSampler {
        ZipfSampler {
            items: items.max(1),
            theta,
            zipf: Zipf::new(items, theta),
        }
    }

    /// Whether this sampler draws over `items` ranks with exponent `theta`.
    pub fn is_for(&self, items: u64, theta: f64) -> bool {
        self.items == items.max(1) && self.theta == theta
    }

    /// A rank in 0..items. No allocation.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.zipf.draw(rng)
    }
}

/// Gray et al.'s zipfian for 0 < θ < 1: one uniform number per draw, rank 0
/// and 1 by their exact probabilities, the rest from a closed-form
/// approximation of the inverse distribution function.
#[derive(Clone, Debug)]
struct Gray {
    items: u64,
    theta: f64,
    /// 1 / (1 - θ).
    alpha: f64,
    /// ζ(min(items, ZETA_HEAD), θ) is recomputed only if items drops below
    /// the head; above it, a new item count costs the tail alone.
    head: f64,
    /// ζ(2, θ) = 1 + 2^-θ: below it (scaled by ζ(n)) a draw is rank 1.
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

impl Gray {
    fn new(items: u64, theta: f64) -> Gray {
        let items = items.max(1);
        let mut g = Gray {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            head: partial_zeta(items.min(ZETA_HEAD), theta),
            zeta2: 1.0 + 0.5f64.powf(theta),
            zetan: 0.0,
            eta: 0.0,
        };
        g.update();
        g
    }

    fn resize(&mut self, items: u64) {
        let items = items.max(1);
        if items.min(ZETA_HEAD) != self.items.min(ZETA_HEAD) {
            self.head = partial_zeta(items.min(ZETA_HEAD), self.theta);
        }
        self.items = items;
        self.update();
    }

    /// ζ(items) and eta for the current item count. (YCSB, when its count
    /// grows, recomputes eta with the count it was built with; here both use
    /// the current one.)
    fn update(&mut self) {
        self.zetan = zeta_after_head(self.head, self.items, self.theta);
        let n = self.items as f64;
        self.eta = (1.0 - (2.0 / n).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan);
    }

    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.zeta2 {
            return 1;
        }
        let x = self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        // The float may round up to `items` for u just below 1; a NaN (only
        // possible with two items, where this line is not reached in exact
        // arithmetic) casts to 0.
        (x as u64).min(self.items - 1)
    }
}

/// Hörmann and Derflinger's rejection-inversion for θ > 1: invert the
/// integral H of the hat x^-θ over [0.5, items + 0.5], round to the nearest
/// integer k, and keep k when the point falls in the part of k's slice that
/// is exactly k^-θ wide (the slice is at least that wide because x^-θ is
/// convex). The first slice is cut to that part, so k = 1 is always kept.
#[derive(Clone, Debug)]
struct RejectionInversion {
    items: u64,
    theta: f64,
    /// H(1.5) - 1: the bottom of the range the uniform point is drawn from.
    lo: f64,
    /// H(items + 0.5): the top.
    hi: f64,
}

impl RejectionInversion {
    fn new(items: u64, theta: f64) -> RejectionInversion {
        let items = items.max(1);
        let mut r = RejectionInversion {
            items,
            theta,
            lo: 0.0,
            hi: 0.0,
        };
        r.lo = r.big_h(1.5) - 1.0;
        r.hi = r.big_h(items as f64 + 0.5);
        r
    }

    fn resize(&mut self, items: u64) {
        self.items = items.max(1);
        self.hi = self.big_h(self.items as f64 + 0.5);
    }

    /// H(x) = -x^(1-θ) / (θ-1), an antiderivative of x^-θ. It rises towards
    /// 0 as x grows, where floats are densest, so the slices of large k keep
    /// their width.
    fn big_h(&self, x: f64) -> f64 {
        -x.powf(1.0 - self.theta) / (self.theta - 1.0)
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        ((1.0 - self.theta) * y).powf(1.0 / (1.0 - self.theta))
    }

    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            // Measured down from `hi`, so that points near the top (the
            // rare large k) keep their precision.
            let u = self.hi + rng.random::<f64>() * (self.lo - self.hi);
            let x = self.big_h_inv(u);
            let k = ((x + 0.5).floor() as u64).clamp(1, self.items);
            let kf = k as f64;
            if u >= self.big_h(kf + 0.5) - kf.powf(-self.theta) {
                return k - 1;
            }
        }
    }
}

/// Precomputed state for one distribution over `n` keys plus the cursor of
/// a sequential walk; built once and cloned into each worker.
#[derive(Clone, Debug)]
pub struct KeyPicker {
    /// The key count `next` draws below (for `latest`, the count last given
    /// to `next_latest`).
    n: u64,
    draw: Draw,
}

#[derive(Clone, Debug)]
enum Draw {
    Uniform,
    /// Ranks over [`SCRAMBLED_ITEMS`], hashed into the key space.
    Scrambled(Zipf),
    /// Ranks over the current key count, counted back from the newest key.
    Latest(Zipf),
    Hotspot {
        fraction: f64,
        ops: f64,
    },
    /// The key the walk returns next.
    Sequential {
        next: u64,
    },
}

impl KeyPicker {
    /// A picker over the keys 0..n (n = 0 is taken as 1). `start` is where a
    /// sequential picker begins (e.g. thread * n / threads), taken modulo n.
    ///
    /// Cost: about 70 `powf` calls for zipfian and latest, whatever n
    /// (ζ(10^10, θ) included): 0.7 µs in a release build and 2 µs in a debug
    /// one on the 2-core development machine, so no need to share pickers or
    /// cache ζ; cloning one is as good.
    pub fn new(dist: KeyDistribution, n: u64, start: u64) -> KeyPicker {
        let n = n.max(1);
        let draw = match dist {
            KeyDistribution::Uniform => Draw::Uniform,
            KeyDistribution::Zipfian { theta } => {
                Draw::Scrambled(Zipf::new(SCRAMBLED_ITEMS, theta))
            }
            KeyDistribution::Latest { theta } => Draw::Latest(Zipf::new(n, theta)),
            KeyDistribution::Hotspot { fraction, ops } => Draw::Hotspot { fraction, ops },
            KeyDistribution::Sequential => Draw::Sequential { next: start % n },
        };
        KeyPicker { n, draw }
    }

    /// The next key in 0..n. No allocation and no lock.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.next_below(rng, self.n)
    }

    /// A key in 0..newest, where `newest` is the current number of keys
    /// (0..newest are present; 0 is taken as 1). For `latest` the most
    /// likely key is newest - 1, and a picker follows a growing count in
    /// O(1) per change; later `next` calls draw below this count. The other
    /// distributions draw from their own shape over 0..newest (the hot set
    /// is the first `fraction` of newest keys, a walk wraps at newest).
    pub fn next_latest<R: Rng + ?Sized>(&mut self, rng: &mut R, newest: u64) -> u64 {
        let newest = newest.max(1);
        if let Draw::Latest(_) = self.draw {
            self.n = newest;
        }
        self.next_below(rng, newest)
    }

    fn next_below<R: Rng + ?Sized>(&mut self, rng: &mut R, count: u64) -> u64 {
        match &mut self.draw {
            Draw::Uniform => rng.random_range(0..count),
            Draw::Scrambled(zipf) => fnv1a_64(zipf.draw(rng)) % count,
            Draw::Latest(zipf) => {
                zipf.resize(count);
                count - 1 - zipf.draw(rng)
            }
            Draw::Hotspot { fraction, ops } => {
                let hot = ((*fraction * count as f64) as u64).clamp(1, count);
                if hot == count || rng.random::<f64>() < *ops {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(hot..count)
                }
            }
            Draw::Sequential { next } => {
                let key = if *next >= count { 0 } else { *next };
                *next = key + 1;
                key
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn rng(seed: u64) -> SmallRng {
        SmallRng::seed_from_u64(seed)
    }

    /// How often each key came up in `draws` draws from `picker`.
    fn counts(picker: &mut KeyPicker, n: u64, draws: usize, seed: u64) -> Vec<u64> {
        let mut rng = rng(seed);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            let k = picker.next(&mut rng);
            assert!(k < n, "key {k} not below {n}");
            c[k as usize] += 1;
        }
        c
    }

    fn rank_counts(zipf: &Zipf, ranks: usize, draws: usize, seed: u64) -> Vec<u64> {
        let mut rng = rng(seed);
        let mut c = vec![0u64; ranks];
        for _ in 0..draws {
            let r = zipf.draw(&mut rng);
            assert!(r < zipf.items());
            if (r as usize) < ranks {
                c[r as usize] += 1;
            }
        }
        c
    }

    fn assert_close(what: &str, got: f64, want: f64, rel: f64) {
        assert!(
            (got - want).abs() <= rel * want.abs(),
            "{what}: got {got}, want {want} within {rel} relative"
        );
    }

    #[test]
    fn fnv1a_64_matches_values_worked_out_from_the_definition() {
        // Worked out with Python integers, not with this code: start at
        // 0xCBF29CE484222325; for each of the 8 bytes of v, lowest first,
        // xor it in and multiply by 1099511628211 modulo 2^64; read the
        // result as a signed 64-bit number and take its absolute value.
        // For v = 0 the state ends at 0xA8C7F832281A39C5 (negative as i64).
        assert_eq!(fnv1a_64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnv1a_64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnv1a_64(256), 2_056_600_594_528_442_646);
        // State 0x0C6D4496E17859D5 is positive: returned as it is.
        assert_eq!(fnv1a_64(0x0102_0304_0506_0708), 0x0C6D_4496_E178_59D5);
        assert_eq!(fnv1a_64(u64::MAX), 8_289_690_350_564_177_859);
        // YCSB's first record is the well-known "user6284781860667377211".
        assert_eq!(format!("user{}", fnv1a_64(0)), "user6284781860667377211");
    }

    #[test]
    fn zeta_matches_the_plain_sum_for_small_n() {
        for theta in [0.01, 0.5, 0.99, 0.9999, 1.5, 3.0, 20.0] {
            for n in [1, 2, 3, 63, 64, 65, 100, 1000, 123_457] {
                // Kahan summation, smallest terms first, as the reference.
                let (mut sum, mut carry) = (0.0f64, 0.0f64);
                for k in (1..=n).rev() {
                    let y = (k as f64).powf(-theta) - carry;
                    let t = sum + y;
                    carry = (t - sum) - y;
                    sum = t;
                }
                assert_close(&format!("zeta({n}, {theta})"), zeta(n, theta), sum, 1e-13);
            }
        }
    }

    #[test]
    fn zeta_of_ten_billion_items_matches_known_values() {
        // YCSB's precomputed ScrambledZipfianGenerator.ZETAN.
        assert_close("ycsb", zeta(SCRAMBLED_ITEMS, 0.99), 26.46902820178302, 1e-9);
        // ζ(s) - ζ(s, n+1) (Hurwitz zeta) with mpmath at 40 digits, rounded to f64.
        for (n, theta, want) in [
            (SCRAMBLED_ITEMS, 0.99, 26.469028201751478),
            (SCRAMBLED_ITEMS, 0.5, 199998.53965049118),
            (SCRAMBLED_ITEMS, 0.9999, 23.629589162315366),
            (SCRAMBLED_ITEMS, 1.5, 2.612355348685489),
            (SCRAMBLED_ITEMS, 3.0, 1.2020569031595942),
            (1_000_007, 0.99, 15.391857783080328),
            (20_000, 0.99, 10.986995136920186),
        ] {
            assert_close(&format!("zeta({n}, {theta})"), zeta(n, theta), want, 1e-13);
        }
    }

    #[test]
    fn validate_refuses_what_cannot_be_drawn() {
        let ok = [
            KeyDistribution::Uniform,
            KeyDistribution::Sequential,
            KeyDistribution::Zipfian { theta: 0.99 },
            KeyDistribution::Latest { theta: 1.5 },
            KeyDistribution::Hotspot {
                fraction: 0.2,
                ops: 0.8,
            },
        ];
        for d in ok {
            assert_eq!(d.validate(), Ok(()), "{d:?}");
        }
        let bad = [
            (KeyDistribution::Zipfian { theta: 1.0 }, "theta 1"),
            (KeyDistribution::Zipfian { theta: 0.0 }, "above 0"),
            (KeyDistribution::Latest { theta: -0.5 }, "above 0"),
            (KeyDistribution::Latest { theta: f64::NAN }, "above 0"),
            (
                KeyDistribution::Zipfian {
                    theta: f64::INFINITY,
                },
                "above 0",
            ),
            (
                KeyDistribution::Hotspot {
                    fraction: 1.0,
                    ops: 0.8,
                },
                "hot fraction",
            ),
            (
                KeyDistribution::Hotspot {
                    fraction: 0.2,
                    ops: 0.0,
                },
                "operations",
            ),
            (
                KeyDistribution::Hotspot {
                    fraction: f64::NAN,
                    ops: 0.8,
                },
                "hot fraction",
            ),
        ];
        for (d, says) in bad {
            let e = d.validate().unwrap_err();
            assert!(e.starts_with(d.name()), "{e}");
            assert!(e.contains(says), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn names_are_the_option_values() {
        let names: Vec<_> = [
            KeyDistribution::Uniform,
            KeyDistribution::Zipfian { theta: 0.99 },
            KeyDistribution::Latest { theta: 0.99 },
            KeyDistribution::Hotspot {
                fraction: 0.2,
                ops: 0.8,
            },
            KeyDistribution::Sequential,
        ]
        .iter()
        .map(KeyDistribution::name)
        .collect();
        assert_eq!(
            names,
            ["uniform", "zipfian", "latest", "hotspot", "sequential"]
        );
    }

    #[test]
    fn scrambled_zipfian_hottest_key_takes_one_over_zeta_of_ten_billion() {
        let n = 20_000;
        let draws = 400_000;
        let mut p = KeyPicker::new(KeyDistribution::Zipfian { theta: 0.99 }, n, 0);
        let c = counts(&mut p, n, draws, 1);
        let (hottest, &top) = c.iter().enumerate().max_by_key(|(_, c)| **c).unwrap();
        // Rank 0 lands where its hash says.
        assert_eq!(hottest as u64, fnv1a_64(0) % n);
        let share = top as f64 / draws as f64;
        // 1/ζ(10^10, 0.99) = 3.778%; the other ranks hashing to the same key
        // add about 0.003% (summed over the first 10^6 ranks offline).
        assert_close(
            "hottest share",
            share,
            1.0 / zeta(SCRAMBLED_ITEMS, 0.99),
            0.03,
        );
        // A plain zipfian over the 20,000 keys would give its first key 9.1%.
        let plain = 1.0 / zeta(n, 0.99);
        assert!(plain > 0.09);
        assert!(share < plain / 2.0, "share {share} vs plain {plain}");
        // The hot keys are spread out, not packed at the start.
        let second = fnv1a_64(1) % n;
        assert!(hottest.abs_diff(second as usize) > 100);
    }

    /// P(rank = k) that Gray et al.'s method gives, from the inverse of its
    /// closed form: for k >= 2, rank < k when u < 1 - (1 - (k/n)^(1-θ)) / eta.
    fn gray_probability(g: &Gray, k: u64) -> f64 {
        let below = |k: u64| {
            if k <= 2 {
                g.zeta2 / g.zetan
            } else {
                1.0 - (1.0 - (k as f64 / g.items as f64).powf(1.0 - g.theta)) / g.eta
            }
        };
        match k {
            0 => 1.0 / g.zetan,
            1 => (g.zeta2 - 1.0) / g.zetan,
            _ => below(k + 1) - below(k),
        }
    }

    #[test]
    fn plain_zipfian_top_ranks_follow_gray_et_al() {
        let (n, theta, draws) = (20_000, 0.99, 400_000);
        let zipf = Zipf::new(n, theta);
        let Zipf::Gray(g) = &zipf else {
            panic!("theta < 1 uses Gray et al.")
        };
        let c = rank_counts(&zipf, 12, draws, 2);
        let z = zeta(n, theta);
        for (k, &count) in c.iter().enumerate() {
            let got = count as f64 / draws as f64;
            let exact = 1.0 / ((k + 1) as f64).powf(theta) / z;
            let method = gray_probability(g, k as u64);
            assert_close(&format!("rank {k} vs the method"), got, method, 0.05);
            if k < 2 {
                // The first two ranks are exact: 1/(r^θ ζ) = 9.1% and 4.6%.
                assert_close(&format!("rank {k} vs zipf"), got, exact, 0.03);
            }
        }
        // The method's known bias, pinned so that a change to it shows:
        // rank 2 (the third) is ~18.5% heavier than a true zipfian's.
        let exact3 = 1.0 / 3f64.powf(theta) / z;
        assert_close("rank 2 bias", gray_probability(g, 2) / exact3, 1.185, 0.01);
    }

    #[test]
    fn zipfian_above_one_matches_its_exact_shares() {
        for (n, theta) in [(1000, 1.5), (50, 3.0), (SCRAMBLED_ITEMS, 1.5), (100, 1.01)] {
            let draws = 200_000;
            let zipf = Zipf::new(n, theta);
            assert!(matches!(zipf, Zipf::Rejection(_)));
            let c = rank_counts(&zipf, 8, draws, 3);
            let z = zeta(n, theta);
            for (k, &count) in c.iter().enumerate() {
                let p = 1.0 / ((k + 1) as f64).powf(theta) / z;
                if p * draws as f64 > 2000.0 {
                    let got = count as f64 / draws as f64;
                    assert_close(&format!("n {n} theta {theta} rank {k}"), got, p, 0.05);
                }
            }
        }
    }

    #[test]
    fn zipfian_above_one_passes_chi_square_over_all_ranks() {
        // Rejection-inversion is exact, so every rank, not only the top.
        let (n, theta, draws) = (20, 1.5, 200_000);
        let c = rank_counts(&Zipf::new(n, theta), n as usize, draws, 13);
        let z = zeta(n, theta);
        let chi2: f64 = c
            .iter()
            .enumerate()
            .map(|(k, &o)| {
                let e = draws as f64 / ((k + 1) as f64).powf(theta) / z;
                (o as f64 - e).powi(2) / e
            })
            .sum();
        // 19 degrees of freedom: mean 19, standard deviation 6.2.
        assert!(chi2 < 50.0, "chi-square {chi2}");
    }

    #[test]
    fn scrambled_zipfian_above_one_has_one_very_hot_key() {
        let n = 1000;
        let draws = 100_000;
        let mut p = KeyPicker::new(KeyDistribution::Zipfian { theta: 1.5 }, n, 0);
        let c = counts(&mut p, n, draws, 4);
        let share = c[(fnv1a_64(0) % n) as usize] as f64 / draws as f64;
        // 1/ζ(10^10, 1.5) = 38.3%.
        assert_close("hottest", share, 1.0 / zeta(SCRAMBLED_ITEMS, 1.5), 0.02);
    }

    #[test]
    fn hotspot_puts_ops_into_the_first_fraction_of_keys() {
        let n = 1000;
        let draws = 200_000;
        let dist = KeyDistribution::Hotspot {
            fraction: 0.2,
            ops: 0.8,
        };
        let c = counts(&mut KeyPicker::new(dist, n, 0), n, draws, 5);
        let hot: u64 = c[..200].iter().sum();
        assert_close("hot share", hot as f64 / draws as f64, 0.8, 0.01);
        // Uniform inside each set: 800 draws per hot key, 50 per cold key.
        let (hmin, hmax) = (c[..200].iter().min(), c[..200].iter().max());
        assert!(
            *hmin.unwrap() > 650 && *hmax.unwrap() < 950,
            "{hmin:?} {hmax:?}"
        );
        let (cmin, cmax) = (c[200..].iter().min(), c[200..].iter().max());
        assert!(
            *cmin.unwrap() > 20 && *cmax.unwrap() < 85,
            "{cmin:?} {cmax:?}"
        );
    }

    #[test]
    fn uniform_is_flat() {
        let n = 100;
        let draws = 100_000;
        let c = counts(
            &mut KeyPicker::new(KeyDistribution::Uniform, n, 0),
            n,
            draws,
            6,
        );
        let expected = draws as f64 / n as f64;
        let chi2: f64 = c
            .iter()
            .map(|&o| (o as f64 - expected).powi(2) / expected)
            .sum();
        // 99 degrees of freedom: mean 99, standard deviation 14; 170 is
        // five standard deviations out.
        assert!(chi2 < 170.0, "chi-square {chi2}");
    }

    #[test]
    fn sequential_visits_every_key_once_per_n_draws() {
        let n = 1000;
        let mut rng = rng(7);
        let mut p = KeyPicker::new(KeyDistribution::Sequential, n, 337);
        let first: Vec<u64> = (0..n).map(|_| p.next(&mut rng)).collect();
        let want: Vec<u64> = (337..n).chain(0..337).collect();
        assert_eq!(first, want);
        assert_eq!(p.next(&mut rng), 337);
        // A start past the end wraps too.
        let mut p = KeyPicker::new(KeyDistribution::Sequential, n, n + 5);
        assert_eq!(p.next(&mut rng), 5);
    }

    #[test]
    fn latest_most_frequent_key_is_the_newest() {
        let theta = 0.99;
        let draws = 100_000;
        let mut p = KeyPicker::new(KeyDistribution::Latest { theta }, 1000, 0);
        let c = counts(&mut p, 1000, draws, 8);
        let top = c.iter().enumerate().max_by_key(|(_, c)| **c).unwrap().0;
        assert_eq!(top, 999);
        assert_close(
            "newest share",
            c[999] as f64 / draws as f64,
            1.0 / zeta(1000, theta),
            0.03,
        );
        // After inserts, the new newest key takes over.
        let mut rng = rng(9);
        let mut c = vec![0u64; 5000];
        for _ in 0..draws {
            c[p.next_latest(&mut rng, 5000) as usize] += 1;
        }
        let top = c.iter().enumerate().max_by_key(|(_, c)| **c).unwrap().0;
        assert_eq!(top, 4999);
        assert_close(
            "newest share",
            c[4999] as f64 / draws as f64,
            1.0 / zeta(5000, theta),
            0.03,
        );
        // `next` now draws below the count it was last given.
        assert!((0..1000).any(|_| p.next(&mut rng) >= 1000));
    }

    #[test]
    fn latest_follows_a_growing_count_one_key_at_a_time() {
        for theta in [0.99, 1.5] {
            let mut rng = rng(10);
            let mut p = KeyPicker::new(KeyDistribution::Latest { theta }, 1, 0);
            let (mut newest_hits, mut expected) = (0u64, 0.0);
            // From 1 key (inside the exactly summed head) to well past it,
            // 20 reads per insert as in YCSB's workload D.
            for newest in 1..=3000u64 {
                for _ in 0..20 {
                    let k = p.next_latest(&mut rng, newest);
                    assert!(k < newest);
                    newest_hits += u64::from(k == newest - 1);
                    expected += 1.0 / zeta(newest, theta);
                }
            }
            assert_close("newest hits", newest_hits as f64, expected, 0.02);
            // The picker's state matches one built for the final count.
            let fresh = KeyPicker::new(KeyDistribution::Latest { theta }, 3000, 0);
            let (Draw::Latest(grown), Draw::Latest(fresh)) = (&p.draw, &fresh.draw) else {
                panic!("latest pickers")
            };
            match (grown, fresh) {
                (Zipf::Gray(a), Zipf::Gray(b)) => {
                    assert_eq!((a.zetan, a.eta), (b.zetan, b.eta));
                }
                (Zipf::Rejection(a), Zipf::Rejection(b)) => assert_eq!(a.hi, b.hi),
                _ => panic!("same method for the same theta"),
            }
        }
    }

    #[test]
    fn draws_stay_in_range_for_tiny_and_odd_key_spaces() {
        let dists = [
            KeyDistribution::Uniform,
            KeyDistribution::Sequential,
            KeyDistribution::Hotspot {
                fraction: 0.2,
                ops: 0.8,
            },
            KeyDistribution::Hotspot {
                fraction: 0.9,
                ops: 0.1,
            },
        ]
        .into_iter()
        .chain(
            [0.01, 0.5, 0.99, 0.999_999, 1.000_001, 1.5, 5.0, 50.0]
                .into_iter()
                .flat_map(|theta| {
                    [
                        KeyDistribution::Zipfian { theta },
                        KeyDistribution::Latest { theta },
                    ]
                }),
        );
        let mut rng = rng(11);
        for d in dists {
            assert_eq!(d.validate(), Ok(()));
            for n in [0, 1, 2, 3, 7, 1 << 40] {
                let mut p = KeyPicker::new(d, n, 1);
                let bound = n.max(1);
                let mut seen = vec![false; bound.min(8) as usize];
                for _ in 0..2000 {
                    let k = p.next(&mut rng);
                    assert!(k < bound, "{d:?} n {n}: {k}");
                    if let Some(s) = seen.get_mut(k as usize) {
                        *s = true;
                    }
                }
                // (A steep zipfian may rightly never draw the second key.)
                let steep = matches!(
                    d,
                    KeyDistribution::Zipfian { theta } | KeyDistribution::Latest { theta }
                        if theta > 4.0
                );
                if n == 2 && !steep {
                    assert!(seen.iter().all(|s| *s), "{d:?} never drew one of 2 keys");
                }
                for newest in [0, 1, 2, 5] {
                    let k = p.next_latest(&mut rng, newest);
                    assert!(k < newest.max(1), "{d:?} newest {newest}: {k}");
                }
            }
        }
    }

    #[test]
    fn a_cloned_picker_repeats_the_same_draws() {
        let d = KeyDistribution::Zipfian { theta: 0.99 };
        let p = KeyPicker::new(d, 1_000_000, 0);
        let (mut a, mut b) = (p.clone(), p);
        let (mut ra, mut rb) = (rng(12), rng(12));
        for _ in 0..1000 {
            assert_eq!(a.next(&mut ra), b.next(&mut rb));
        }
    }
}
