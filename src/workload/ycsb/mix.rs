//! The mixes: YCSB's five transaction types, the shares of each mix as
//! YCSB defines them, and as `--ycsb-proportions` and the key flags change
//! them.

use super::{YcsbSettings, ZIPF_THETA};
use crate::workload::Settings;
use crate::workload::kit::keys::KeyDistribution;

/// The transaction types, in the order reports show them.
pub const TYPES: [&str; 5] = ["read", "update", "insert", "scan", "read-modify-write"];

/// Proportions of the five types, in the order of [`TYPES`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix(pub [f64; 5]);

impl Mix {
    /// Parses `read=0.9,update=0.1`: types not named get 0.
    pub fn parse(text: &str) -> std::result::Result<Mix, String> {
        let mut p = [0.0; 5];
        for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                format!("'{part}' is not TYPE=SHARE: write e.g. read=0.9,update=0.1")
            })?;
            let name = name.trim();
            let i = TYPES.iter().position(|t| *t == name).ok_or_else(|| {
                format!("'{name}' is not a YCSB operation: use {}", TYPES.join(", "))
            })?;
            let v: f64 = value.trim().parse().map_err(|_| {
                format!("'{value}' is not a share: write a number such as 0.5 for {name}")
            })?;
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{name}={value}: a share is a number of 0 or more"));
            }
            p[i] += v;
        }
        if p.iter().sum::<f64>() <= 0.0 {
            return Err("the shares add up to 0: give at least one positive, e.g. read=1".into());
        }
        Ok(Mix(p))
    }

    pub(super) fn total(&self) -> f64 {
        self.0.iter().sum()
    }
}

/// What a mix of `-o` is, before the flags change it.
pub(super) struct MixDef {
    pub(super) mix: [f64; 5],
    pub(super) keys: KeyDistribution,
}

/// Mix `name` as YCSB defines it, its zipfian (or `latest`) of exponent
/// `theta`.
fn mix_def(name: &str, theta: f64) -> MixDef {
    let zipf = KeyDistribution::Zipfian { theta };
    let (mix, keys) = match name {
        "ycsb-a" => ([0.5, 0.5, 0.0, 0.0, 0.0], zipf),
        "ycsb-b" => ([0.95, 0.05, 0.0, 0.0, 0.0], zipf),
        "ycsb-c" => ([1.0, 0.0, 0.0, 0.0, 0.0], zipf),
        "ycsb-d" => (
            [0.95, 0.0, 0.05, 0.0, 0.0],
            KeyDistribution::Latest { theta },
        ),
        "ycsb-e" => ([0.0, 0.0, 0.05, 0.95, 0.0], zipf),
        _ => ([0.5, 0.0, 0.0, 0.0, 0.5], zipf),
    };
    MixDef { mix, keys }
}

/// Mix `name` as the flags make it: `--key-distribution` replaces its
/// keys; else its own zipfian or `latest` takes `--zipf-theta` when given,
/// as YCSB's `zipfian_constant` changes every mix.
pub(super) fn mix_of(name: &str, s: &Settings) -> MixDef {
    let def = mix_def(name, s.zipf_theta.unwrap_or(ZIPF_THETA));
    MixDef {
        mix: s
            .family::<YcsbSettings>()
            .proportions
            .map_or(def.mix, |m| m.0),
        keys: s.keys.unwrap_or(def.keys),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportions_parse_and_refuse_what_they_cannot_use() {
        assert_eq!(
            Mix::parse("read=0.9, update=0.1").unwrap(),
            Mix([0.9, 0.1, 0.0, 0.0, 0.0])
        );
        assert_eq!(
            Mix::parse("read-modify-write=1").unwrap(),
            Mix([0.0, 0.0, 0.0, 0.0, 1.0])
        );
        assert!(
            Mix::parse("delete=1")
                .unwrap_err()
                .contains("not a YCSB operation")
        );
        assert!(Mix::parse("read").unwrap_err().contains("TYPE=SHARE"));
        assert!(Mix::parse("read=-1").unwrap_err().contains("0 or more"));
        assert!(Mix::parse("read=0").unwrap_err().contains("add up to 0"));
    }

    #[test]
    fn the_standard_mixes_have_ycsb_shares() {
        assert_eq!(mix_def("ycsb-a", ZIPF_THETA).mix, [0.5, 0.5, 0.0, 0.0, 0.0]);
        assert_eq!(
            mix_def("ycsb-e", ZIPF_THETA).mix,
            [0.0, 0.0, 0.05, 0.95, 0.0]
        );
        assert!(matches!(
            mix_def("ycsb-d", ZIPF_THETA).keys,
            KeyDistribution::Latest { .. }
        ));
        assert_eq!(mix_def("ycsb-f", ZIPF_THETA).mix, [0.5, 0.0, 0.0, 0.0, 0.5]);
    }
}
