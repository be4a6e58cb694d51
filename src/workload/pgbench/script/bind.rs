//! How a script's variables go to the server: as text parameters of a
//! prepared statement, or as literals in the SQL text (`--no-prepared`).
//!
//! pgbench sends every parameter as text with no type, so the server
//! reads it as whatever the statement's context wants (an integer for
//! `aid = $1`, a date for `day = $2`, text where nothing says). ysql-bench
//! does the same (the executor binds each value as a text parameter), so a
//! script behaves as under `pgbench -M prepared`.
//!
//! Under `--no-prepared` pgbench pastes the variable's text into the
//! statement as it is, which breaks on a quote in the value and turns
//! `a - :x` with x = -5 into the comment `a --5`. Here numbers are written
//! as numbers (negative ones in parentheses), anything else as a quoted
//! literal, so a value can never change the statement's syntax.

use super::eval::{Value, write_double};
use super::exec::Var;

/// Writes `v` as an SQL literal that cannot change the statement around
/// it. Returns false for a variable that has no value.
pub fn write_literal(v: &Var, out: &mut String) -> bool {
    match v {
        Var::Unset => false,
        Var::Value(Value::Null) => {
            out.push_str("NULL");
            true
        }
        Var::Value(Value::Bool(b)) => {
            out.push_str(if *b { "true" } else { "false" });
            true
        }
        Var::Value(Value::Int(i)) => {
            let mut buf = itoa::Buffer::new();
            write_number(buf.format(*i), out);
            true
        }
        Var::Value(Value::Double(d)) => {
            if d.is_finite() {
                let mut s = String::new();
                write_double(*d, &mut s);
                write_number(&s, out);
            } else {
                // 'NaN', 'Infinity': the server casts the quoted text.
                out.push('\'');
                write_double(*d, out);
                out.push('\'');
            }
            true
        }
        Var::Text(t) => {
            if is_plain_number(t) {
                write_number(t, out);
            } else {
                quote(t, out);
            }
            true
        }
    }
}

/// A number as a literal: in parentheses when negative, so that `a - :x`
/// does not become a comment.
fn write_number(text: &str, out: &mut String) {
    if text.starts_with('-') {
        out.push('(');
        out.push_str(text);
        out.push(')');
    } else {
        out.push_str(text);
    }
}

/// Whether text reads as the same number written bare: an optional minus,
/// digits without a leading zero (but 0 itself), an optional fraction.
/// `00123` is not one (bare, it would lose its zeros).
fn is_plain_number(t: &str) -> bool {
    let body = t.strip_prefix('-').unwrap_or(t);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(int) && (int == "0" || !int.starts_with('0')) && frac.is_none_or(digits)
}

/// A quoted string literal: quotes doubled, and in E'' form when it holds
/// a backslash, so that it reads the same whatever
/// standard_conforming_strings says.
fn quote(t: &str, out: &mut String) {
    if t.contains('\\') {
        out.push_str("E'");
        for c in t.chars() {
            match c {
                '\'' => out.push_str("''"),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
    } else {
        out.push('\'');
        for c in t.chars() {
            if c == '\'' {
                out.push('\'');
            }
            out.push(c);
        }
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(v: Var) -> String {
        let mut s = String::new();
        assert!(write_literal(&v, &mut s));
        s
    }

    #[test]
    fn literals_cannot_change_the_statement() {
        assert_eq!(lit(Var::Value(Value::Int(5))), "5");
        assert_eq!(lit(Var::Value(Value::Int(-5))), "(-5)");
        assert_eq!(lit(Var::Value(Value::Double(1.5))), "1.5");
        assert_eq!(lit(Var::Value(Value::Double(-1e20))), "(-1e+20)");
        assert_eq!(lit(Var::Value(Value::Double(f64::NAN))), "'NaN'");
        assert_eq!(lit(Var::Value(Value::Bool(true))), "true");
        assert_eq!(lit(Var::Value(Value::Null)), "NULL");
        assert_eq!(lit(Var::Text("42".into())), "42");
        assert_eq!(lit(Var::Text("-7.25".into())), "(-7.25)");
        assert_eq!(lit(Var::Text("00123".into())), "'00123'");
        assert_eq!(lit(Var::Text("it's".into())), "'it''s'");
        assert_eq!(lit(Var::Text("a\\b'c".into())), "E'a\\\\b''c'");
        assert_eq!(lit(Var::Text("1e5".into())), "'1e5'");
        assert_eq!(lit(Var::Text("".into())), "''");
        assert!(!write_literal(&Var::Unset, &mut String::new()));
    }
}
