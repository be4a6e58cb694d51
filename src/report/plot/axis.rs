//! The pictures' axes: where the ticks go and how they read.
//!
//! plotters chooses ticks and leaves their text to a function of one value,
//! which cannot know how many decimals its neighbours need (`0.00`, `0.50`,
//! `1.0`, `10`), and its logarithmic axis labels powers of ten alone, so a
//! range inside one decade gets one label or none. So the ticks are chosen
//! here, once per axis, and every tick of an axis is written the same way:
//! time in seconds and latency in milliseconds with the decimals the step
//! needs, rates with `k` and `M` once they are large; on a log axis each
//! tick with its own significant digits (0.2, 1, 50).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged};

/// What an axis measures, which decides how its ticks are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Seconds since the start.
    Seconds,
    /// Latency in milliseconds.
    Millis,
    /// Units or rows per second.
    Rate,
    /// A share, 0 to 100.
    Percent,
}

/// One axis: its range, its ticks and how they are written. The values
/// drawn on it are in its own unit (seconds, milliseconds, per second).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    kind: Kind,
    /// Labelled ticks, ascending, inside `lo..=hi`.
    ticks: Vec<f64>,
    /// Grid lines between the ticks.
    minor: Vec<f64>,
    /// Decimals of every label (linear axes).
    decimals: usize,
    /// Labels in thousands (1) or millions (2) of the value.
    thousands: u32,
}

/// A step of 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

/// The decimals that write every multiple of `step` exactly.
fn decimals_of(step: f64) -> usize {
    (0..=9usize)
        .find(|&d| {
            let scaled = step * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(9)
}

impl Axis {
    /// A linear axis over `lo..hi` with at most `max_ticks` labelled ticks
    /// at a step of 1, 2 or 5 times a power of ten.
    pub fn linear(lo: f64, hi: f64, kind: Kind, max_ticks: usize) -> Axis {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        let step = nice_step((hi - lo) / max_ticks.max(2) as f64);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let ticks: Vec<f64> = (first..=last).map(|i| i as f64 * step).collect();
        // Four grid lines per step when the step is 2 (every 0.5), else
        // five (every 0.2 of a 1-step) or two.
        let per = {
            let m = (step / 10f64.powf(step.log10().floor())).round() as i64;
            if m == 2 { 4 } else { 5 }
        };
        let minor = (first - 1..=last)
            .flat_map(|i| (1..per).map(move |j| (i as f64 + j as f64 / per as f64) * step))
            .filter(|v| (lo..=hi).contains(v))
            .collect();
        let top = ticks.last().copied().unwrap_or(hi).abs().max(lo.abs());
        let thousands = match kind {
            Kind::Rate if top >= 10_000_000.0 => 2,
            Kind::Rate if top >= 10_000.0 => 1,
            _ => 0,
        };
        let decimals = decimals_of(step / 1000f64.powi(thousands as i32));
        Axis {
            lo,
            hi,
            log: false,
            kind,
            ticks,
            minor,
            decimals,
            thousands,
        }
    }

    /// A logarithmic axis over `lo..hi` (both above 0): ticks at 1, 2 and
    /// 5 times the powers of ten, or at the powers alone over many
    /// decades, or more (1, 1.5, 2, 3, 5, 7) inside less than one.
    pub fn log(lo: f64, hi: f64, kind: Kind) -> Axis {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1e-3 };
        let hi = if hi > lo && hi.is_finite() {
            hi
        } else {
            lo * 10.0
        };
        let decades = (hi / lo).log10();
        let mantissas: &[f64] = if decades > 6.0 {
            &[1.0]
        } else if decades > 1.5 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]
        };
        let at = |ms: &[f64]| -> Vec<f64> {
            let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
            (k0..=k1)
                .flat_map(|k| ms.iter().map(move |m| m * 10f64.powi(k)))
                .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
                .collect()
        };
        let ticks = at(mantissas);
        let minor = at(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        Axis {
            lo,
            hi,
            log: true,
            kind,
            ticks,
            minor,
            decimals: 0,
            thousands: 0,
        }
    }

    pub fn is_log(&self) -> bool {
        self.log
    }

    pub fn ticks(&self) -> &[f64] {
        &self.ticks
    }

    pub fn lo(&self) -> f64 {
        self.lo
    }

    pub fn hi(&self) -> f64 {
        self.hi
    }

    /// `v` moved inside the axis (what is drawn beyond an edge is drawn
    /// at it).
    pub fn clamp(&self, v: f64) -> f64 {
        v.clamp(self.lo, self.hi)
    }

    /// The text of a tick at `v`.
    pub fn label(&self, v: f64) -> String {
        let text = if self.log {
            // Three significant digits at most, trailing zeros dropped.
            let d = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
            let s = format!("{v:.d$}");
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        } else {
            let scaled = v / 1000f64.powi(self.thousands as i32);
            let s = format!("{scaled:.*}", self.decimals);
            // -0.0 reads as 0.
            let s = if s
                .trim_start_matches('-')
                .chars()
                .all(|c| c == '0' || c == '.')
            {
                s.trim_start_matches('-').to_string()
            } else {
                s
            };
            match self.thousands {
                _ if self.thousands > 0 && scaled == 0.0 => "0".to_string(),
                1 => format!("{s}k"),
                2 => format!("{s}M"),
                _ => s,
            }
        };
        match self.kind {
            Kind::Percent => format!("{text}%"),
            _ => text,
        }
    }

    fn pos(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.lo * 1e-3);
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let p = self.pos(*value);
        let px = f64::from(limit.0) + p * f64::from(limit.1 - limit.0);
        px.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.ticks.clone(),
            KeyPointWeight::Any => {
                let mut all: Vec<f64> = self.ticks.iter().chain(&self.minor).copied().collect();
                all.sort_by(f64::total_cmp);
                all
            }
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(a: &Axis) -> Vec<String> {
        a.ticks().iter().map(|&v| a.label(v)).collect()
    }

    #[test]
    fn a_linear_axis_writes_every_tick_with_the_same_decimals() {
        let a = Axis::linear(0.0, 0.55, Kind::Seconds, 10);
        assert_eq!(labels(&a), ["0.0", "0.1", "0.2", "0.3", "0.4", "0.5"]);
        let a = Axis::linear(0.0, 0.55, Kind::Seconds, 12);
        assert_eq!(
            labels(&a),
            [
                "0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30", "0.35", "0.40", "0.45",
                "0.50", "0.55"
            ]
        );
        let a = Axis::linear(0.0, 10.2, Kind::Seconds, 12);
        assert_eq!(
            labels(&a),
            ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
        );
        let a = Axis::linear(0.0, 2.6, Kind::Millis, 6);
        assert_eq!(labels(&a), ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]);
        let a = Axis::linear(0.0, 140.0, Kind::Millis, 8);
        assert_eq!(
            labels(&a),
            ["0", "20", "40", "60", "80", "100", "120", "140"]
        );
    }

    #[test]
    fn large_rates_are_written_in_thousands() {
        let a = Axis::linear(0.0, 45_000.0, Kind::Rate, 6);
        assert_eq!(labels(&a), ["0", "10k", "20k", "30k", "40k"]);
        let a = Axis::linear(0.0, 4_200.0, Kind::Rate, 9);
        assert_eq!(
            labels(&a),
            [
                "0", "500", "1000", "1500", "2000", "2500", "3000", "3500", "4000"
            ]
        );
        let a = Axis::linear(0.0, 2_500_000.0, Kind::Rate, 5);
        assert_eq!(
            labels(&a),
            ["0", "500k", "1000k", "1500k", "2000k", "2500k"]
        );
        let a = Axis::linear(0.0, 15_000.0, Kind::Rate, 6);
        assert_eq!(labels(&a), ["0", "5k", "10k", "15k"]);
        let a = Axis::linear(0.0, 12_000.0, Kind::Rate, 24);
        assert_eq!(labels(&a)[..3], ["0", "0.5k", "1.0k"]);
    }

    #[test]
    fn a_log_axis_labels_more_than_the_powers_of_ten() {
        // Inside one decade: several labels, not one or none.
        let a = Axis::log(0.3, 2.5, Kind::Millis);
        assert_eq!(labels(&a), ["0.3", "0.5", "0.7", "1", "1.5", "2"]);
        let a = Axis::log(4.0, 1200.0, Kind::Rate);
        assert_eq!(
            labels(&a),
            ["5", "10", "20", "50", "100", "200", "500", "1000"]
        );
        let a = Axis::log(0.001, 100_000.0, Kind::Millis);
        assert!(
            labels(&a).iter().all(|l| !l.contains('2')),
            "{:?}",
            labels(&a)
        );
        assert!(a.is_log());
    }

    #[test]
    fn ticks_map_inside_the_pixels_in_order() {
        for a in [
            Axis::linear(0.0, 7.3, Kind::Seconds, 10),
            Axis::log(0.05, 300.0, Kind::Millis),
        ] {
            let px: Vec<i32> = a.ticks().iter().map(|v| a.map(v, (10, 500))).collect();
            assert!(px.windows(2).all(|w| w[0] < w[1]), "{px:?}");
            assert!(px.iter().all(|p| (10..=500).contains(p)), "{px:?}");
        }
    }
}
