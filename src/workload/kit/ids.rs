//! Seeds and keys of a worker: each worker of a run draws its own ids,
//! reproducibly from the run's seed.

use super::keys;

/// A 64-bit mix of the run's seed and a worker's index, so that workers of
/// one run draw different ids while the run stays reproducible.
pub fn worker_seed(seed: u64, thread: usize, salt: u64) -> u64 {
    let mut z = seed
        .wrapping_add((thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws the keys a query workload looks for, from its own seeded
/// generator and key distribution.
pub struct IdPicker {
    rng: rand::rngs::SmallRng,
    keys: keys::KeyPicker,
}

impl IdPicker {
    pub fn new(
        seed: u64,
        thread: usize,
        threads: usize,
        rows: u64,
        dist: keys::KeyDistribution,
    ) -> Self {
        use rand::SeedableRng;
        let rows = rows.max(1);
        let start = (rows as u128 * thread as u128 / threads.max(1) as u128) as u64;
        IdPicker {
            rng: rand::rngs::SmallRng::seed_from_u64(worker_seed(seed, thread, 1)),
            keys: keys::KeyPicker::new(dist, rows, start),
        }
    }

    /// The next key, 0..rows.
    pub fn next_key(&mut self) -> u64 {
        self.keys.next(&mut self.rng)
    }

    /// The next id, as test_table's int column wants it.
    pub fn next_id(&mut self) -> i32 {
        // rows <= 2^31 is checked in the plan, so the id fits in an i32.
        self.next_key() as i32
    }

    /// The generator, for operations that also need random text.
    pub fn rng(&mut self) -> &mut rand::rngs::SmallRng {
        &mut self.rng
    }
}
