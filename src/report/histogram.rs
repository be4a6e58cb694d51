//! The ASCII histogram of `-p/--print-histogram`, in the original tool's
//! layout: a header of sample count, min, max, mean, standard deviation and
//! variance, then one row per bucket, `start .. end [ count ]: ∎∎∎`.
//!
//! Buckets are built from the HDR histogram (so from every unit, not a
//! sample). Values are microseconds. Log buckets, the default, grow by a
//! constant factor from the min to the max, so the bulk of the units
//! spreads over several rows and the tail keeps rows of its own. Linear
//! buckets (the original tool's) are of equal width between the min and
//! the max: a few stalls a hundred times the median put nearly every unit
//! in the first row, which is why they are no longer the default.

use std::io::{self, Write};

use hdrhistogram::Histogram;

/// The longest bar, in characters.
pub const BAR_WIDTH: u64 = 60;

/// Bucket spacing of the ASCII histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Keeps a long tail from squashing everything into the first row.
    Log,
}

/// Bucket edges in microseconds: `buckets + 1` increasing values from
/// `min` to just past `max` (every value v falls in `edges[i] <= v < edges[i+1]`).
pub fn edges(min_us: u64, max_us: u64, buckets: usize, scale: Scale) -> Vec<u64> {
    let buckets = buckets.max(1) as u64;
    let span = max_us - min_us + 1;
    match scale {
        Scale::Linear => {
            let width = span.div_ceil(buckets).max(1);
            (0..=buckets).map(|i| min_us + i * width).collect()
        }
        Scale::Log => {
            let lo = min_us.max(1) as f64;
            let hi = (max_us + 1) as f64;
            let ratio = (hi / lo).powf(1.0 / buckets as f64);
            let mut e = vec![min_us];
            for i in 1..=buckets {
                let v = (lo * ratio.powi(i as i32)).ceil() as u64;
                let prev = *e.last().unwrap_or(&0);
                e.push(v.max(prev + 1));
            }
            if let Some(last) = e.last_mut() {
                *last = (*last).max(max_us + 1);
            }
            e
        }
    }
}

/// Writes the histogram of `h` (nanoseconds) with its header.
pub fn write_histogram(
    w: &mut dyn Write,
    h: &Histogram<u64>,
    buckets: usize,
    scale: Scale,
) -> io::Result<()> {
    if h.is_empty() {
        writeln!(w, "# Number of samples = 0")?;
        return Ok(());
    }
    let us = |ns: u64| ns / 1000;
    let (min, max) = (us(h.min()), us(h.max()));
    let edges = edges(min, max, buckets, scale);
    let n = edges.len() - 1;
    let mut counts = vec![0u64; n];
    for v in h.iter_recorded() {
        let x = us(h.median_equivalent(v.value_iterated_to()));
        let i = edges.partition_point(|e| *e <= x).saturating_sub(1);
        counts[i.min(n - 1)] += v.count_at_value();
    }
    let biggest = counts.iter().copied().max().unwrap_or(0);
    let per_mark = biggest.div_ceil(BAR_WIDTH).max(1);
    let mean = h.mean() / 1000.0;
    let stdev = h.stdev() / 1000.0;
    writeln!(w, "# Number of samples = {}", h.len())?;
    writeln!(w, "# Min = {min} us")?;
    writeln!(w, "# Max = {max} us")?;
    writeln!(w, "#")?;
    writeln!(w, "# Mean = {mean:.3} us")?;
    writeln!(w, "# Standard deviation = {stdev:.3} us")?;
    writeln!(w, "# Variance = {:.3} us^2", stdev * stdev)?;
    writeln!(w, "#")?;
    writeln!(w, "# Each ∎ is a count of {per_mark}")?;
    writeln!(w, "#")?;
    let wid_edge = edges.iter().map(|e| e.to_string().len()).max().unwrap_or(1);
    let wid_count = biggest.to_string().len();
    for (i, c) in counts.iter().enumerate() {
        writeln!(
            w,
            "{:>wid_edge$} .. {:>wid_edge$} [ {:>wid_count$} ]: {}",
            edges[i],
            edges[i + 1],
            c,
            "∎".repeat((c / per_mark) as usize)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, record_ns};

    fn hist(us_values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = new_histogram();
        for (v, n) in us_values {
            for _ in 0..*n {
                record_ns(&mut h, v * 1000);
            }
        }
        h
    }

    #[test]
    fn linear_histogram_golden_text() {
        // Mean 384/13 = 29.538 us and population deviation 27.05 us by
        // hand; HDR counts each value at the middle of its bucket, a few
        // nanoseconds up at three significant digits.
        let h = hist(&[(10, 3), (15, 1), (20, 6), (55, 2), (109, 1)]);
        let mut out = Vec::new();
        write_histogram(&mut out, &h, 5, Scale::Linear).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expected = "\
# Number of samples = 13
# Min = 10 us
# Max = 109 us
#
# Mean = 29.544 us
# Standard deviation = 27.054 us
# Variance = 731.902 us^2
#
# Each ∎ is a count of 1
#
 10 ..  30 [ 10 ]: ∎∎∎∎∎∎∎∎∎∎
 30 ..  50 [  0 ]: 
 50 ..  70 [  2 ]: ∎∎
 70 ..  90 [  0 ]: 
 90 .. 110 [  1 ]: ∎
";
        assert_eq!(text, expected);
    }

    #[test]
    fn bars_scale_down_to_the_width() {
        let h = hist(&[(100, 600), (200, 30)]);
        let mut out = Vec::new();
        write_histogram(&mut out, &h, 2, Scale::Linear).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("# Each ∎ is a count of 10"));
        let longest = text.lines().map(|l| l.matches('∎').count()).max().unwrap();
        assert_eq!(longest, 60);
    }

    #[test]
    fn log_buckets_spread_a_long_tail() {
        let e = edges(100, 99_999, 3, Scale::Log);
        assert_eq!(e, vec![100, 1000, 10_000, 100_000]);
        let h = hist(&[(100, 1000), (1500, 10), (50_000, 1)]);
        let mut out = Vec::new();
        write_histogram(&mut out, &h, 3, Scale::Log).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("..")).collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[0].contains("[ 1000 ]"), "{text}");
        assert!(rows[1].contains("[   10 ]"), "{text}");
        assert!(rows[2].contains("[    1 ]"), "{text}");
    }

    #[test]
    fn every_sample_lands_in_a_bucket() {
        for scale in [Scale::Linear, Scale::Log] {
            let h = hist(&[(1, 5), (7, 5), (333, 5), (4096, 5), (70_000, 5)]);
            let mut out = Vec::new();
            write_histogram(&mut out, &h, 7, scale).unwrap();
            let text = String::from_utf8(out).unwrap();
            let total: u64 = text
                .lines()
                .filter_map(|l| {
                    l.split('[')
                        .nth(1)?
                        .split(']')
                        .next()?
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .sum();
            assert_eq!(total, 25, "{scale:?}\n{text}");
        }
    }
}
