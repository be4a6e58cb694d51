//! A u64 in JSON as a string of digits, so that every reader keeps it exact.
//!
//! JSON numbers are doubles to JavaScript and to jq (before 1.7): above
//! 2^53 they are rounded, and a seed read back that way repeats another
//! run. Written as `"18446744073709551615"`, the value survives any reader.
//! Reading accepts both forms, so reports written before this change (a
//! plain number) still load.
//!
//! Use with `#[serde(with = "crate::stats::exact_u64")]`.

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Text(t) => t.trim().parse().map_err(|_| {
            serde::de::Error::custom(format!("'{t}' is not a whole number from 0 to 2^64-1"))
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Doc {
        #[serde(with = "super")]
        seed: u64,
    }

    /// Issue 17: a drawn seed above 2^53, written as a JSON number, came
    /// back from jq or JavaScript as another seed.
    #[test]
    fn a_seed_above_2_pow_53_is_written_as_exact_text() {
        let doc = Doc { seed: u64::MAX };
        let json = serde_json::to_string(&doc).unwrap();
        assert_eq!(json, r#"{"seed":"18446744073709551615"}"#);
        // Read as a double, as jq and JavaScript do, the text keeps it.
        let as_js: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(as_js["seed"].as_str(), Some("18446744073709551615"));
        let back: Doc = serde_json::from_str(&json).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn both_the_old_number_and_the_new_text_are_read() {
        let old: Doc = serde_json::from_str(r#"{"seed": 42}"#).unwrap();
        assert_eq!(old.seed, 42);
        let new: Doc = serde_json::from_str(r#"{"seed": "9007199254740993"}"#).unwrap();
        assert_eq!(new.seed, 9_007_199_254_740_993);
        assert!(serde_json::from_str::<Doc>(r#"{"seed": "-1"}"#).is_err());
        assert!(serde_json::from_str::<Doc>(r#"{"seed": 1.5}"#).is_err());
    }
}
