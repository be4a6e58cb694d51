//! Reading `\gset` and `\aset` results back into variables.
//!
//! pgbench reads results as text. tokio-postgres asks for every column of
//! a prepared statement's result in the binary format, so the common types
//! are decoded here into what pgbench's text would have become: integers
//! and doubles as numbers, booleans as booleans, and numeric, text, json,
//! uuid, date and timestamp as the text the server would have printed.
//! A column of another type is refused with a message that says to cast it
//! to text in the query. Decoding allocates only for text-like values,
//! into the variable's own buffer.

use tokio_postgres::types::{FromSql, Type};

use super::eval::Value;
use super::exec::Var;

/// One column of a row as the server sent it, whatever its type.
pub struct RawCell<'a> {
    pub ty: Type,
    pub raw: Option<&'a [u8]>,
}

impl<'a> FromSql<'a> for RawCell<'a> {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawCell {
            ty: ty.clone(),
            raw: Some(raw),
        })
    }

    fn from_sql_null(ty: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawCell {
            ty: ty.clone(),
            raw: None,
        })
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// Stores a binary cell into `var`; Err says why the type cannot be read.
pub fn store(cell: &RawCell<'_>, var: &mut Var) -> Result<(), String> {
    let Some(raw) = cell.raw else {
        *var = Var::Value(Value::Null);
        return Ok(());
    };
    let bad = || format!("a {} value of {} bytes is malformed", cell.ty, raw.len());
    let be = |n: usize| -> Result<[u8; 8], String> {
        if raw.len() != n {
            return Err(bad());
        }
        let mut b = [0u8; 8];
        b[8 - n..].copy_from_slice(raw);
        Ok(b)
    };
    let ty = &cell.ty;
    if *ty == Type::BOOL {
        *var = Var::Value(Value::Bool(raw.first().is_some_and(|&b| b != 0)));
    } else if *ty == Type::INT2 {
        let b = be(2)?;
        *var = Var::Value(Value::Int(i16::from_be_bytes([b[6], b[7]]) as i64));
    } else if *ty == Type::INT4 {
        let b = be(4)?;
        *var = Var::Value(Value::Int(
            i32::from_be_bytes([b[4], b[5], b[6], b[7]]) as i64
        ));
    } else if *ty == Type::INT8 {
        *var = Var::Value(Value::Int(i64::from_be_bytes(be(8)?)));
    } else if *ty == Type::OID {
        let b = be(4)?;
        *var = Var::Value(Value::Int(
            u32::from_be_bytes([b[4], b[5], b[6], b[7]]) as i64
        ));
    } else if *ty == Type::FLOAT4 {
        let b = be(4)?;
        *var = Var::Value(Value::Double(
            f32::from_be_bytes([b[4], b[5], b[6], b[7]]) as f64
        ));
    } else if *ty == Type::FLOAT8 {
        *var = Var::Value(Value::Double(f64::from_be_bytes(be(8)?)));
    } else if [
        Type::TEXT,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::NAME,
        Type::UNKNOWN,
        Type::JSON,
        Type::XML,
        Type::CHAR,
    ]
    .contains(ty)
    {
        let s = std::str::from_utf8(raw).map_err(|_| bad())?;
        var.set_text(s);
    } else if *ty == Type::JSONB {
        let s = raw
            .split_first()
            .filter(|(v, _)| **v == 1)
            .and_then(|(_, t)| std::str::from_utf8(t).ok())
            .ok_or_else(bad)?;
        var.set_text(s);
    } else if *ty == Type::NUMERIC {
        let s = numeric_text(raw).ok_or_else(bad)?;
        var.set_text(&s);
    } else if *ty == Type::UUID {
        if raw.len() != 16 {
            return Err(bad());
        }
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        var.set_text(&format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        ));
    } else if *ty == Type::DATE {
        let b = be(4)?;
        let days = i32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        var.set_text(&date_text(days));
    } else if *ty == Type::TIMESTAMP {
        var.set_text(&timestamp_text(i64::from_be_bytes(be(8)?)));
    } else {
        return Err(format!(
            "its type {ty} cannot be read back by ysql-bench: cast the column to text in the query (e.g. col::text)"
        ));
    }
    Ok(())
}

/// The text of a binary numeric: the base-10000 digits, the weight of the
/// first, the sign and the display scale.
fn numeric_text(raw: &[u8]) -> Option<String> {
    let word =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*raw.get(i)?, *raw.get(i + 1)?])) };
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i16 as i64;
    let sign = word(4)?;
    let dscale = word(6)? as usize;
    match sign {
        0xC000 => return Some("NaN".to_string()),
        0xD000 => return Some("Infinity".to_string()),
        0xF000 => return Some("-Infinity".to_string()),
        _ => {}
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|k| word(8 + 2 * k))
        .collect::<Option<_>>()?;
    // The base-10000 digit worth 10000^g: the first digit is worth
    // 10000^weight, the next one power less, and so on.
    let group = |g: i64| -> u16 {
        let idx = weight - g;
        if idx < 0 {
            0
        } else {
            digits.get(idx as usize).copied().unwrap_or(0)
        }
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for g in (0..=weight).rev() {
            let d = group(g);
            if g == weight {
                s.push_str(&d.to_string());
            } else {
                s.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut g = -1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", group(g)));
            g -= 1;
        }
        frac.truncate(dscale);
        s.push_str(&frac);
    }
    Some(s)
}

/// Year, month, day of a day count from 1970-01-01 (proleptic Gregorian).
fn civil(days_since_1970: i64) -> (i64, u32, u32) {
    let z = days_since_1970 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
const PG_EPOCH_DAYS: i64 = 10_957;

fn ymd(y: i64, m: u32, d: u32) -> String {
    if y <= 0 {
        format!("{:04}-{m:02}-{d:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".to_string(),
        i32::MIN => "-infinity".to_string(),
        d => {
            let (y, m, dd) = civil(d as i64 + PG_EPOCH_DAYS);
            ymd(y, m, dd)
        }
    }
}

fn timestamp_text(us: i64) -> String {
    match us {
        i64::MAX => "infinity".to_string(),
        i64::MIN => "-infinity".to_string(),
        t => {
            let day_us = 86_400_000_000i64;
            let days = t.div_euclid(day_us);
            let rest = t.rem_euclid(day_us);
            let (y, m, d) = civil(days + PG_EPOCH_DAYS);
            let secs = rest / 1_000_000;
            let micros = rest % 1_000_000;
            let mut s = format!(
                "{} {:02}:{:02}:{:02}",
                ymd(y, m, d),
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            );
            if micros > 0 {
                let f = format!("{micros:06}");
                s.push('.');
                s.push_str(f.trim_end_matches('0'));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            v.extend_from_slice(&d.to_be_bytes());
        }
        v
    }

    #[test]
    fn numerics_print_as_the_server_prints_them() {
        // 12345.678 = [1, 2345, 6780], weight 1, scale 3.
        assert_eq!(
            numeric_text(&num(3, 1, 0, 3, &[1, 2345, 6780])).unwrap(),
            "12345.678"
        );
        assert_eq!(
            numeric_text(&num(1, -1, 0x4000, 2, &[5000])).unwrap(),
            "-0.50"
        );
        assert_eq!(numeric_text(&num(1, 2, 0, 0, &[7])).unwrap(), "700000000");
        assert_eq!(numeric_text(&num(0, 0, 0, 2, &[])).unwrap(), "0.00");
        assert_eq!(
            numeric_text(&num(1, -2, 0, 6, &[1200])).unwrap(),
            "0.000012"
        );
        assert_eq!(numeric_text(&num(0, 0, 0xC000, 0, &[])).unwrap(), "NaN");
    }

    #[test]
    fn dates_and_timestamps_print_in_iso_form() {
        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(9497), "2026-01-01");
        assert_eq!(date_text(-1), "1999-12-31");
        assert_eq!(timestamp_text(0), "2000-01-01 00:00:00");
        assert_eq!(
            timestamp_text(86_400_000_000 + 3_723_500_000),
            "2000-01-02 01:02:03.5"
        );
        assert_eq!(timestamp_text(-1), "1999-12-31 23:59:59.999999");
    }
}
