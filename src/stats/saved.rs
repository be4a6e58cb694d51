//! How [`Stats`] and their HDR histograms are written in a saved report
//! and read back.
//!
//! A saved report keeps the counts, the percentiles of each histogram (for
//! readers without an HDR library) and the histograms themselves,
//! serialised in HdrHistogram's V2 compressed encoding and base64 (the
//! encoding of HdrHistogram log files). Reading a report back makes the
//! same `Stats` from the histograms, so that `merge` adds what the runs
//! measured with [`Stats::add`], and `show` and `compare` print what the
//! run printed. One field is not kept: `left_out_retries` (retries of
//! units the end of the run left out), which only the live run's check
//! that something succeeded reads; it reads back as 0.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use super::{Percentiles, Stats, nanos};
use crate::error::{Error, Result};

/// [`Stats`] as the report writes them: the counts, the percentiles of
/// each histogram (for readers without an HDR library) and the histograms
/// themselves, from which reading a report back makes the same `Stats`,
/// so that `merge` adds what the runs measured with [`Stats::add`] and
/// `show` and `compare` print what the run printed. Field names are the
/// README's; `busy_ns`, `lag_total_ns` and the retried histograms came
/// later, and a report without them reads as having none.
impl Serialize for Stats {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeStruct};
        let enc = |h: &Histogram<u64>| encode_histogram(h).map_err(S::Error::custom);
        let mut m = ser.serialize_struct("Stats", 23)?;
        m.serialize_field("units", &self.ops)?;
        m.serialize_field("rows", &self.rows)?;
        m.serialize_field("missing_rows", &self.missing)?;
        m.serialize_field("failed", &self.failed())?;
        m.serialize_field("errors", &self.errors)?;
        m.serialize_field("latency_ns", &Percentiles::of(&self.latency))?;
        m.serialize_field("service_ns", &Percentiles::of(&self.service))?;
        m.serialize_field("attempt_ns", &Percentiles::of(&self.attempt()))?;
        let per_row = !self.row_latency.is_empty();
        m.serialize_field(
            "row_latency_ns",
            &per_row.then(|| Percentiles::of(&self.row_latency)),
        )?;
        m.serialize_field("busy_ns", &nanos(self.busy))?;
        m.serialize_field(
            "lag_avg_ns",
            &nanos(self.lag_total).checked_div(self.ops).unwrap_or(0),
        )?;
        m.serialize_field("lag_total_ns", &nanos(self.lag_total))?;
        m.serialize_field("lag_max_ns", &nanos(self.lag_max))?;
        m.serialize_field("late", &self.late)?;
        m.serialize_field("skipped", &self.skipped)?;
        m.serialize_field("retried", &self.retried)?;
        m.serialize_field("retries", &self.retries)?;
        m.serialize_field("reconnects", &self.reconnects)?;
        m.serialize_field("failed_units", &self.failed_units)?;
        m.serialize_field("schedule_wait_ns", &nanos(self.schedule_wait))?;
        m.serialize_field("pause_wait_ns", &nanos(self.pause_wait))?;
        let retried = !self.retried_service.is_empty();
        m.serialize_field(
            "histograms",
            &SavedHistograms {
                latency: enc(&self.latency)?,
                service: enc(&self.service)?,
                row_latency: if per_row {
                    Some(enc(&self.row_latency)?)
                } else {
                    None
                },
                retried_service: if retried {
                    Some(enc(&self.retried_service)?)
                } else {
                    None
                },
                retried_attempt: if retried {
                    Some(enc(&self.retried_attempt)?)
                } else {
                    None
                },
            },
        )?;
        m.end()
    }
}

/// What reading [`Stats`] back needs of the written fields; the derived
/// ones (percentiles, `failed`) are made again from these.
#[derive(Deserialize)]
struct SavedStats {
    units: u64,
    rows: u64,
    missing_rows: u64,
    #[serde(default)]
    errors: BTreeMap<String, u64>,
    #[serde(default)]
    busy_ns: Option<u64>,
    #[serde(default)]
    lag_avg_ns: u64,
    #[serde(default)]
    lag_total_ns: Option<u64>,
    #[serde(default)]
    lag_max_ns: u64,
    #[serde(default)]
    late: u64,
    #[serde(default)]
    skipped: u64,
    #[serde(default)]
    retried: u64,
    #[serde(default)]
    retries: u64,
    #[serde(default)]
    reconnects: u64,
    #[serde(default)]
    failed_units: Vec<String>,
    #[serde(default)]
    schedule_wait_ns: u64,
    #[serde(default)]
    pause_wait_ns: u64,
    histograms: SavedHistograms,
}

/// The HDR histograms of a [`Stats`], base64 of the V2 compressed form.
#[derive(Debug, Serialize, Deserialize)]
struct SavedHistograms {
    latency: String,
    service: String,
    /// Loads only, as `row_latency_ns`.
    #[serde(default)]
    row_latency: Option<String>,
    /// Of the units that succeeded after retries: all their tries, and
    /// the successful one alone (absent when nothing was retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retried_service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retried_attempt: Option<String>,
}

impl<'de> Deserialize<'de> for Stats {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let s = SavedStats::deserialize(de)?;
        let dec = |h: &str| decode_histogram(h).map_err(D::Error::custom);
        // A decoded histogram is as wide as the values it held: each goes
        // into one of the run's own shape, so that later sums fit.
        let widen = |h: Option<&String>| -> std::result::Result<Histogram<u64>, D::Error> {
            let mut out = super::new_histogram();
            if let Some(h) = h {
                out.add(dec(h)?)
                    .map_err(|e| D::Error::custom(format!("cannot add the histograms: {e:?}")))?;
            }
            Ok(out)
        };
        let h = &s.histograms;
        let service = widen(Some(&h.service))?;
        // Older reports kept no busy time: the service times' sum is it,
        // within the histogram's precision.
        let busy = match s.busy_ns {
            Some(ns) => Duration::from_nanos(ns),
            None => Duration::from_nanos((service.mean() * service.len() as f64) as u64),
        };
        Ok(Stats {
            ops: s.units,
            rows: s.rows,
            missing: s.missing_rows,
            busy,
            latency: widen(Some(&h.latency))?,
            service,
            row_latency: widen(h.row_latency.as_ref())?,
            lag_total: Duration::from_nanos(
                s.lag_total_ns
                    .unwrap_or(s.lag_avg_ns.saturating_mul(s.units)),
            ),
            lag_max: Duration::from_nanos(s.lag_max_ns),
            late: s.late,
            skipped: s.skipped,
            errors: s.errors,
            retried: s.retried,
            retries: s.retries,
            // The run's own check read them; reports do not keep them.
            left_out_retries: 0,
            retried_service: widen(h.retried_service.as_ref())?,
            retried_attempt: widen(h.retried_attempt.as_ref())?,
            reconnects: s.reconnects,
            failed_units: s.failed_units,
            conns: Default::default(),
            schedule_wait: Duration::from_nanos(s.schedule_wait_ns),
            pause_wait: Duration::from_nanos(s.pause_wait_ns),
        })
    }
}

/// Encodes a histogram as base64 of its V2 compressed form.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| Error::run(format!("cannot encode a histogram: {e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// Decodes what [`encode_histogram`] made.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| Error::run(format!("a histogram is not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| Error::run(format!("cannot decode a histogram: {e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, record_ns};

    #[test]
    fn histograms_survive_the_round_trip() {
        let mut h = new_histogram();
        for v in [1_000u64, 2_500, 50_000, 50_000, 9_000_000_000] {
            record_ns(&mut h, v);
        }
        let back = decode_histogram(&encode_histogram(&h).unwrap()).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert!(decode_histogram("not base64!").is_err());
    }

    fn measured() -> Stats {
        let mut s = Stats::default();
        for (i, v) in [900u64, 1_200, 5_000, 70_000, 3_000_000]
            .into_iter()
            .enumerate()
        {
            let latency = std::time::Duration::from_nanos(v + 100 * i as u64);
            let service = std::time::Duration::from_nanos(v);
            s.record(
                crate::stats::Timing { latency, service },
                crate::stats::outcome::Outcome {
                    rows: 2,
                    missing: 1,
                },
            );
        }
        s.record_retried(
            std::time::Duration::from_micros(50),
            std::time::Duration::from_micros(20),
        );
        s.retried = 1;
        s.retries = 3;
        s.reconnects = 2;
        s.late = 1;
        s.schedule_wait = std::time::Duration::from_micros(1234);
        s.pause_wait = std::time::Duration::from_micros(56);
        s.record_error("40001", Some("ids 1..2".to_string()));
        s
    }

    fn same(a: &Stats, b: &Stats) {
        assert_eq!(
            (a.ops, a.rows, a.missing, a.busy, a.lag_total, a.lag_max),
            (b.ops, b.rows, b.missing, b.busy, b.lag_total, b.lag_max)
        );
        assert_eq!(
            (a.late, a.skipped, a.retried, a.retries),
            (b.late, b.skipped, b.retried, b.retries)
        );
        assert_eq!(
            (&a.errors, &a.failed_units, a.reconnects),
            (&b.errors, &b.failed_units, b.reconnects)
        );
        assert_eq!(
            (a.schedule_wait, a.pause_wait),
            (b.schedule_wait, b.pause_wait)
        );
        assert_eq!(a.latency, b.latency);
        assert_eq!(a.service, b.service);
        assert_eq!(a.row_latency, b.row_latency);
        assert_eq!(a.retried_service, b.retried_service);
        assert_eq!(a.retried_attempt, b.retried_attempt);
        assert_eq!(Percentiles::of(&a.attempt()), Percentiles::of(&b.attempt()));
    }

    #[test]
    fn stats_read_back_are_the_stats_written() {
        let s = measured();
        let text = serde_json::to_string(&s).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // The README's fields, derived ones included.
        assert_eq!(v["units"], 5);
        assert_eq!(v["failed"], 1);
        assert_eq!(v["missing_rows"], 5);
        assert_eq!(v["latency_ns"]["max"].as_u64(), Some(s.latency.max()));
        assert!(v["row_latency_ns"].is_object());
        assert!(v["histograms"]["retried_attempt"].is_string());
        let back: Stats = serde_json::from_str(&text).unwrap();
        same(&s, &back);
        // Two read back add up as the runs' own do (what merge does).
        let mut sum = back;
        sum.add(&serde_json::from_str(&text).unwrap());
        let mut twice = measured();
        twice.add(&measured());
        same(&sum, &twice);
    }

    #[test]
    fn a_report_written_before_busy_and_retried_histograms_still_reads() {
        let s = measured();
        let mut v = serde_json::to_value(&s).unwrap();
        let m = v.as_object_mut().unwrap();
        m.remove("busy_ns");
        m.remove("lag_total_ns");
        m.remove("schedule_wait_ns");
        m.remove("pause_wait_ns");
        let h = m["histograms"].as_object_mut().unwrap();
        h.remove("retried_service");
        h.remove("retried_attempt");
        let back: Stats = serde_json::from_value(v).unwrap();
        assert_eq!(back.ops, 5);
        assert_eq!(back.latency, s.latency);
        // The busy time from the service times, within HDR's precision.
        let (b, e) = (back.busy.as_nanos() as f64, s.busy.as_nanos() as f64);
        assert!((b - e).abs() / e < 0.002, "{b} vs {e}");
        assert!(back.retried_attempt.is_empty());
    }
}
