//! The rows: made the same way by copy-mem, insert and csv_generator.
//!
//! A row's content is a pure function of (seed, id): each row seeds its own
//! Xoshiro256++ generator from a mix of the two. So the same `--seed` gives
//! the same table whatever the thread count, batch size or load method, and
//! csv_generator's files hold exactly the rows copy-mem would have sent.
//! Fields are alphanumeric, so neither COPY text nor CSV needs escaping.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};

/// The 62 characters fields are made of.
pub const ALPHANUMERIC: &[u8; 62] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Fields per row.
pub const FIELDS: usize = 4;

/// Appends `n` random alphanumeric bytes to `out`. Uses six bits per
/// character and rejects the two values above 61, so every character is
/// equally likely; one 64-bit draw gives up to ten characters.
///
/// Written for speed (it makes every byte that copy-mem, insert, update and
/// csv_generator send): each draw's ten characters are stored without a
/// branch, a rejected one being overwritten by the next, into room made
/// beforehand, and the excess is cut off at the end. The output and the
/// generator's state afterwards are those of the plain loop that pushes
/// accepted characters one by one and stops at `n` (see the tests).
pub fn fill_alphanumeric<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>, n: usize) {
    /// ALPHANUMERIC, padded to 64 entries: the two rejected values map to
    /// a byte that is always overwritten or cut off.
    const TABLE: [u8; 64] = {
        let mut t = [b'?'; 64];
        let mut i = 0;
        while i < ALPHANUMERIC.len() {
            t[i] = ALPHANUMERIC[i];
            i += 1;
        }
        t
    };
    let start = out.len();
    // Ten characters of room past the end for the last draw.
    out.resize(start + n + 10, 0);
    let dst = &mut out[start..];
    let mut i = 0;
    while i < n {
        let mut bits = rng.next_u64();
        for _ in 0..10 {
            let v = (bits & 63) as usize;
            bits >>= 6;
            dst[i] = TABLE[v];
            i += usize::from(v < ALPHANUMERIC.len());
        }
    }
    out.truncate(start + n);
}

/// Makes the fields of any row from the seed and the row's id.
#[derive(Clone, Copy, Debug)]
pub struct RowGen {
    seed: u64,
    field_len: usize,
}

impl RowGen {
    pub fn new(seed: u64, field_len: usize) -> Self {
        RowGen { seed, field_len }
    }

    pub fn field_len(&self) -> usize {
        self.field_len
    }

    fn rng_for(&self, id: u64) -> Xoshiro256PlusPlus {
        // SplitMix64's finaliser spreads neighbouring ids over the whole
        // seed space before Xoshiro's own seeding.
        let mut z = self.seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31))
    }

    /// Appends the four fields of row `id`, each `field_len` bytes, with
    /// `sep` before each field (none when `sep` is `None`).
    fn push_fields(&self, id: u64, sep: Option<u8>, out: &mut Vec<u8>) {
        let mut rng = self.rng_for(id);
        for _ in 0..FIELDS {
            if let Some(s) = sep {
                out.push(s);
            }
            fill_alphanumeric(&mut rng, out, self.field_len);
        }
    }

    /// Appends the four fields of row `id` back to back (4 x field_len bytes).
    pub fn fields(&self, id: u64, out: &mut Vec<u8>) {
        self.push_fields(id, None, out);
    }

    /// Appends row `id` in COPY text format: `id\tf1\tf2\tf3\tf4\n`.
    pub fn copy_text_row(&self, id: u64, out: &mut Vec<u8>) {
        self.delimited_row(id, b'\t', out);
    }

    /// Appends row `id` as a CSV line: `id,f1,f2,f3,f4\n`.
    pub fn csv_row(&self, id: u64, out: &mut Vec<u8>) {
        self.delimited_row(id, b',', out);
    }

    fn delimited_row(&self, id: u64, sep: u8, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        self.push_fields(id, Some(sep), out);
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_a_function_of_seed_and_id() {
        let g = RowGen::new(42, 24);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        g.fields(7, &mut a);
        g.fields(7, &mut b);
        RowGen::new(43, 24).fields(7, &mut c);
        assert_eq!(a.len(), 96);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|ch| ch.is_ascii_alphanumeric()));
    }

    #[test]
    fn text_and_csv_rows_hold_the_same_fields() {
        let g = RowGen::new(1, 5);
        let mut text = Vec::new();
        let mut csv = Vec::new();
        let mut plain = Vec::new();
        g.copy_text_row(12, &mut text);
        g.csv_row(12, &mut csv);
        g.fields(12, &mut plain);
        let text = String::from_utf8(text).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert_eq!(text.replace('\t', ","), csv);
        let parts: Vec<&str> = csv.trim_end().split(',').collect();
        assert_eq!(parts[0], "12");
        assert_eq!(parts[1..].concat().as_bytes(), &plain[..]);
        assert!(parts[1..].iter().all(|p| p.len() == 5));
    }

    /// The plain version of [`fill_alphanumeric`], which defines its output.
    fn fill_plain<R: Rng + ?Sized>(rng: &mut R, out: &mut Vec<u8>, n: usize) {
        let mut left = n;
        while left > 0 {
            let mut bits = rng.next_u64();
            for _ in 0..10 {
                let v = (bits & 63) as usize;
                bits >>= 6;
                if v < ALPHANUMERIC.len() {
                    out.push(ALPHANUMERIC[v]);
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
            }
        }
    }

    #[test]
    fn the_fast_fill_makes_what_the_plain_loop_makes() {
        let mut fast = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut plain = fast.clone();
        let (mut a, mut b) = (b"prefix".to_vec(), b"prefix".to_vec());
        for n in [0, 1, 9, 10, 11, 24, 63, 1000, 3] {
            fill_alphanumeric(&mut fast, &mut a, n);
            fill_plain(&mut plain, &mut b, n);
            assert_eq!(a, b, "after n = {n}");
        }
        // The generators end in the same state, so the next row is the same too.
        assert_eq!(fast.next_u64(), plain.next_u64());
    }

    #[test]
    fn characters_are_spread_over_the_whole_alphabet() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut out = Vec::new();
        fill_alphanumeric(&mut rng, &mut out, 62_000);
        let mut counts = [0u32; 256];
        for b in &out {
            counts[*b as usize] += 1;
        }
        for ch in ALPHANUMERIC {
            let c = counts[*ch as usize];
            // Expected 1000 each; 5 standard deviations is about 160.
            assert!(
                (800..1200).contains(&c),
                "{} appeared {c} times",
                *ch as char
            );
        }
        assert_eq!(out.len(), 62_000);
    }
}
