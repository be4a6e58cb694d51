//! Writing parameters: in binary where the statement's declared type and
//! the value agree on a simple binary form (integers, floats, booleans,
//! text), as text otherwise, so that any type the server can parse from
//! text (numeric, dates, arrays, types unknown until the server infers
//! them) takes a parameter without a codec here.
//!
//! Binary where it is cheap to be exact saves the server a parse of each
//! key; text everywhere else is what psql and pgbench send, and keeps this
//! driver free of one encoder per PostgreSQL type.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};

/// Type OIDs with a binary form written here.
pub(super) const BOOL: u32 = 16;
pub(super) const INT2: u32 = 21;
pub(super) const INT4: u32 = 23;
pub(super) const INT8: u32 = 20;
pub(super) const FLOAT4: u32 = 700;
pub(super) const FLOAT8: u32 = 701;
pub(super) const TEXT: u32 = 25;
pub(super) const VARCHAR: u32 = 1043;
pub(super) const BPCHAR: u32 = 1042;
pub(super) const NAME: u32 = 19;
pub(super) const UNKNOWN: u32 = 705;

/// A parameter of a statement, as the workload has it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(&'a str),
    /// An array of integers (`= any($1)`), sent as text: `{1,2,3}`.
    Ints(&'a [i32]),
    /// An array of floats, sent as text.
    Floats(&'a [f64]),
    /// An array of texts, sent as text with each element quoted.
    Texts(&'a [String]),
}

impl From<i16> for Param<'_> {
    fn from(v: i16) -> Self {
        Param::Int(v.into())
    }
}
impl From<i32> for Param<'_> {
    fn from(v: i32) -> Self {
        Param::Int(v.into())
    }
}
impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}
impl From<u32> for Param<'_> {
    fn from(v: u32) -> Self {
        Param::Int(v.into())
    }
}
impl From<f64> for Param<'_> {
    fn from(v: f64) -> Self {
        Param::Float(v)
    }
}
impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Bool(v)
    }
}
impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}
impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}
impl<'a> From<&'a [i32]> for Param<'a> {
    fn from(v: &'a [i32]) -> Self {
        Param::Ints(v)
    }
}
impl<'a> From<&'a [f64]> for Param<'a> {
    fn from(v: &'a [f64]) -> Self {
        Param::Floats(v)
    }
}
impl<'a> From<&'a [String]> for Param<'a> {
    fn from(v: &'a [String]) -> Self {
        Param::Texts(v)
    }
}
impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

/// Whether `p` goes in binary to a parameter declared as `oid` (0: not
/// declared, the server infers it from the text).
pub fn binary(p: &Param<'_>, oid: u32) -> bool {
    matches!(
        (p, oid),
        (Param::Int(_), INT2 | INT4 | INT8)
            | (Param::Float(_), FLOAT4 | FLOAT8)
            | (Param::Bool(_), BOOL)
            | (Param::Text(_), TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN)
    )
}

/// Writes `p` as a Bind message's value: binary as [`binary`] decides,
/// text otherwise. `None` for SQL NULL.
pub fn encode_param(p: &Param<'_>, oid: u32, buf: &mut BytesMut) -> Result<bool, String> {
    if binary(p, oid) {
        match (*p, oid) {
            (Param::Int(v), INT2) => buf.put_i16(
                i16::try_from(v).map_err(|_| format!("{v} does not fit a smallint parameter"))?,
            ),
            (Param::Int(v), INT4) => buf.put_i32(
                i32::try_from(v).map_err(|_| format!("{v} does not fit an integer parameter"))?,
            ),
            (Param::Int(v), _) => buf.put_i64(v),
            (Param::Float(v), FLOAT4) => buf.put_f32(v as f32),
            (Param::Float(v), _) => buf.put_f64(v),
            (Param::Bool(v), _) => buf.put_u8(u8::from(v)),
            (Param::Text(s), _) => buf.extend_from_slice(s.as_bytes()),
            _ => {}
        }
        return Ok(true);
    }
    match *p {
        Param::Null => return Ok(false),
        Param::Int(v) => {
            let _ = write!(Text(buf), "{v}");
        }
        Param::Float(v) => {
            let _ = write!(Text(buf), "{v}");
        }
        Param::Bool(v) => buf.put_u8(if v { b't' } else { b'f' }),
        Param::Text(s) => buf.extend_from_slice(s.as_bytes()),
        Param::Ints(_) | Param::Floats(_) | Param::Texts(_) => {
            let mut s = String::new();
            array_text(p, &mut s);
            buf.extend_from_slice(s.as_bytes());
        }
    }
    Ok(true)
}

/// An array parameter as PostgreSQL's array input reads it: `{1,2}`,
/// `{"a","b \"c\""}`.
fn array_text(p: &Param<'_>, out: &mut String) {
    out.push('{');
    match *p {
        Param::Ints(v) => {
            for (i, n) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{n}");
            }
        }
        Param::Floats(v) => {
            for (i, n) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{n}");
            }
        }
        Param::Texts(v) => {
            for (i, t) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('"');
                for c in t.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
        }
        _ => {}
    }
    out.push('}');
}

/// `p` as SQL text, for the simple query protocol (pgbench -M simple puts
/// values into the statement's text): a literal, quoted where needed.
pub fn literal(p: &Param<'_>, out: &mut String) {
    match *p {
        Param::Null => out.push_str("NULL"),
        // A negative number in parentheses: `a -$1` must not become the
        // comment `a --5`.
        Param::Int(v) if v < 0 => {
            let _ = write!(out, "({v})");
        }
        Param::Float(v) if v.is_sign_negative() => {
            let _ = write!(out, "({v})");
        }
        Param::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Param::Float(v) => {
            let _ = write!(out, "{v}");
        }
        Param::Bool(v) => out.push_str(if v { "true" } else { "false" }),
        Param::Text(s) => {
            out.push('\'');
            for c in s.chars() {
                if c == '\'' {
                    out.push('\'');
                }
                out.push(c);
            }
            out.push('\'');
        }
        Param::Ints(_) | Param::Floats(_) | Param::Texts(_) => {
            let mut s = String::new();
            array_text(p, &mut s);
            literal(&Param::Text(&s), out);
        }
    }
}

/// `fmt::Write` into a byte buffer.
struct Text<'a>(&'a mut BytesMut);

impl std::fmt::Write for Text<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_in_binary_where_the_declared_type_agrees_and_as_text_otherwise() {
        let mut b = BytesMut::new();
        assert!(encode_param(&Param::Int(7), INT4, &mut b).unwrap());
        assert!(encode_param(&Param::Int(7), INT8, &mut b).unwrap());
        assert!(encode_param(&Param::Int(-2), INT2, &mut b).unwrap());
        assert!(encode_param(&Param::Text("ab"), VARCHAR, &mut b).unwrap());
        assert_eq!(
            &b[..],
            &[0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xfe, b'a', b'b']
        );
        assert!(encode_param(&Param::Int(1 << 40), INT4, &mut b).is_err());
        // Numeric (1700) and undeclared parameters take text.
        let mut b = BytesMut::new();
        assert!(!binary(&Param::Int(1), 1700));
        encode_param(&Param::Int(12), 1700, &mut b).unwrap();
        encode_param(&Param::Float(0.25), 0, &mut b).unwrap();
        encode_param(&Param::Ints(&[1, 2]), 1007, &mut b).unwrap();
        encode_param(&Param::Bool(true), 0, &mut b).unwrap();
        let texts = ["a\"b".to_string(), "c".to_string()];
        encode_param(&Param::Texts(&texts), 0, &mut b).unwrap();
        assert_eq!(&b[..], b"120.25{1,2}t{\"a\\\"b\",\"c\"}");
        assert!(!encode_param(&Param::Null, INT4, &mut b).unwrap());
        assert!(!binary(&Param::Text("x"), INT4));
    }

    #[test]
    fn literals_are_quoted_for_the_simple_protocol() {
        let mut s = String::new();
        for p in [
            Param::Int(-3),
            Param::Text("it's"),
            Param::Null,
            Param::Ints(&[4, 5]),
            Param::Float(1.5),
        ] {
            literal(&p, &mut s);
            s.push(' ');
        }
        assert_eq!(s, "(-3) 'it''s' NULL '{4,5}' 1.5 ");
    }
}
