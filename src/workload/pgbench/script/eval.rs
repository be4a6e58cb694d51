//! Evaluating pgbench expressions: values, operators, functions.
//!
//! The semantics are pgbench's (PostgreSQL 15), checked against the real
//! pgbench with `\set v debug(...)` (see the tests at the end): integers
//! are 64-bit and an overflowing `+ - * /` is an error, as is an integer
//! division or modulo by zero; a double operand makes the arithmetic
//! double (IEEE: `1.0 / 0` is Infinity); `%`, the bitwise operators and
//! `int()` round a double to the nearest integer (ties to even); `AND`,
//! `OR` and `NOT` take booleans (an integer is refused), lazily from the
//! left, and a NULL on the left is their result (pgbench's rule, not SQL's
//! three-valued logic: `NULL AND false` is NULL), while `\if` and `CASE`
//! take any value as true when it is not zero, false or NULL; comparisons
//! do not chain.
//!
//! Why it is shaped so: an expression is compiled once, at parse time,
//! into a tree ([`super::expr::Expr`]), and evaluated per transaction by a
//! recursive walk over it that allocates nothing. [`Value`] is `Copy`;
//! variables live in a slice indexed by slot, not in a map of names;
//! `random_zipfian` keeps its sampler per call site and rebuilds it only
//! when its bounds or exponent change.

use rand::rngs::SmallRng;
use rand::{Rng, RngExt};

use super::expr::{BinOp, Expr, Func, IsTest};
use crate::workload::kit::keys::ZipfSampler;

/// A value of pgbench's expression language.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl Value {
    fn type_name(self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
        }
    }

    /// As `\if` and `CASE WHEN` read a value: NULL, false and zero are
    /// false, anything else true.
    pub fn truth(self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
        }
    }

    /// The value as an integer: a double is rounded to the nearest (ties
    /// to even) and refused when it does not fit.
    pub fn to_int(self) -> Result<i64, EvalError> {
        match self {
            Value::Int(i) => Ok(i),
            Value::Double(d) => {
                let r = d.round_ties_even();
                // 2^63: i64::MAX as f64 rounds up to it, and it does not fit.
                const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                if !(-TWO_63..TWO_63).contains(&r) {
                    Err(EvalError::new(format!(
                        "double to int overflow for {}",
                        format_double(d)
                    )))
                } else {
                    Ok(r as i64)
                }
            }
            other => Err(EvalError::new(format!(
                "cannot coerce {} to int",
                other.type_name()
            ))),
        }
    }

    pub fn to_double(self) -> Result<f64, EvalError> {
        match self {
            Value::Int(i) => Ok(i as f64),
            Value::Double(d) => Ok(d),
            other => Err(EvalError::new(format!(
                "cannot coerce {} to double",
                other.type_name()
            ))),
        }
    }

    /// A boolean for AND, OR and NOT: only a boolean is one (NULL is
    /// handled by the caller).
    fn to_bool(self) -> Result<bool, EvalError> {
        match self {
            Value::Bool(b) => Ok(b),
            other => Err(EvalError::new(format!(
                "cannot coerce {} to boolean",
                other.type_name()
            ))),
        }
    }

    /// The text pgbench gives the value when it is bound to a statement
    /// or printed: integers in decimal, doubles as C's `%.15g`, booleans
    /// as `true`/`false`. None for NULL.
    pub fn write_text(self, out: &mut String) -> bool {
        match self {
            Value::Null => return false,
            Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            Value::Int(i) => {
                let mut buf = itoa::Buffer::new();
                out.push_str(buf.format(i));
            }
            Value::Double(d) => write_double(d, out),
        }
        true
    }
}

/// What went wrong while evaluating; the interpreter adds the script and
/// line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError(pub String);

impl EvalError {
    pub fn new(msg: impl Into<String>) -> Self {
        EvalError(msg.into())
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an expression reads besides its constants: the variables, the
/// worker's random generator for this transaction, and the per-call-site
/// zipfian samplers.
pub struct Env<'a> {
    pub vars: &'a [super::exec::Var],
    /// The variable names, for messages.
    pub names: &'a [String],
    pub rng: &'a mut SmallRng,
    pub zipf: &'a mut [Option<ZipfSampler>],
    /// Where `debug()` says it was called from ("script=a.sql,line=3").
    pub debug_at: &'a str,
}

impl Env<'_> {
    fn var(&self, slot: usize) -> Result<Value, EvalError> {
        let name = || self.names.get(slot).map_or("?", |s| s.as_str());
        match self.vars.get(slot) {
            Some(v) => v.value().map_err(|e| match e {
                VarError::Undefined => EvalError::new(format!("undefined variable \"{}\"", name())),
                VarError::Malformed(text) => EvalError::new(format!(
                    "malformed variable \"{}\" value: \"{text}\"",
                    name()
                )),
            }),
            None => Err(EvalError::new(format!("undefined variable \"{}\"", name()))),
        }
    }
}

/// Why a variable has no value for an expression.
pub enum VarError<'a> {
    Undefined,
    Malformed(&'a str),
}

/// The value of a variable that holds text (from `-D` or `\gset`), read
/// as pgbench 15 reads it: `null`; a boolean word, case-insensitive:
/// `true` and `yes` or any beginning of them (`t`, `ye`), `on`, and for
/// false `false` and `no` or any beginning of them, `off` and `of` (but
/// not `o`, which begins both `on` and `off`); an integer, which must
/// fit; else a double as C's `strtod` reads it. Spaces may lead a number
/// but not follow it, and a double out of range (`1e400`, `1e-310`) is
/// no value, as pgbench says "malformed".
pub fn parse_text_value(text: &str) -> Option<Value> {
    let t = text;
    if t.is_empty() {
        return None;
    }
    if t.eq_ignore_ascii_case("null") {
        return Some(Value::Null);
    }
    let prefix_of = |word: &str| t.len() <= word.len() && word[..t.len()].eq_ignore_ascii_case(t);
    if prefix_of("true") || prefix_of("yes") || t.eq_ignore_ascii_case("on") {
        return Some(Value::Bool(true));
    }
    if prefix_of("false")
        || prefix_of("no")
        || t.eq_ignore_ascii_case("off")
        || t.eq_ignore_ascii_case("of")
    {
        return Some(Value::Bool(false));
    }
    // C's isspace: what strtol and strtod skip.
    let number = t.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let digits = number.strip_prefix(['+', '-']).unwrap_or(number);
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        // Looks like an integer (a lone sign too): it must be one.
        return number
            .strip_prefix('+')
            .unwrap_or(number)
            .parse::<i64>()
            .ok()
            .map(Value::Int);
    }
    strtod(number).map(Value::Double)
}

/// A whole text as C's `strtod` reads it, None where it would stop
/// before the end or say the value is out of range: decimal and
/// hexadecimal (`0x1p3`) forms, `inf`, `infinity` and `nan`.
fn strtod(text: &str) -> Option<f64> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let hex = body
        .get(..2)
        .filter(|p| p.eq_ignore_ascii_case("0x"))
        .map(|_| &body[2..]);
    let magnitude = match hex {
        Some(h) => hex_float(h)?,
        None => {
            // Rust's parser reads what strtod reads in decimal, and no
            // sign here (one was taken above).
            if body.starts_with(['+', '-']) {
                return None;
            }
            let d: f64 = body.parse().ok()?;
            let special = body
                .bytes()
                .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E');
            if !special && out_of_range(d, body) {
                return None;
            }
            d
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Whether a finite decimal text read as `d` lies out of a double's
/// range, as strtod says with ERANGE: infinite, or below the smallest
/// normal double while its digits are not all zero.
fn out_of_range(d: f64, text: &str) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    let zero = mantissa.bytes().all(|b| b == b'0' || b == b'.');
    d.is_infinite() || (!zero && d.abs() < f64::MIN_POSITIVE)
}

/// The hexadecimal form after its `0x`: hex digits with an optional
/// point, then an optional binary exponent `p[+-]N`.
fn hex_float(text: &str) -> Option<f64> {
    let (digits, exponent) = match text.find(['p', 'P']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int_part.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1f64 / 16.0;
    for c in frac_part.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let shift: i32 = match exponent {
        Some(e) => {
            let n = e.strip_prefix('+').unwrap_or(e);
            if n.is_empty()
                || !n
                    .trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            {
                return None;
            }
            n.parse::<i32>().unwrap_or(if n.starts_with('-') {
                i32::MIN
            } else {
                i32::MAX
            })
        }
        None => 0,
    };
    let d = value * 2f64.powi(shift.clamp(-2000, 2000));
    if d.is_infinite() || (value != 0.0 && d.abs() < f64::MIN_POSITIVE) {
        return None;
    }
    Some(d)
}

/// The amount of a `\\sleep :name`, as pgbench 15 reads the variable: C's
/// `atoi` of its text (an integer's digits, a double as `%.15g` writes it:
/// 2.7 sleeps 2, 1e+20 sleeps 1), an error when that reads 0 from a text
/// that does not start with a digit (`abc`, `true`, ` 0`).
pub fn sleep_amount(var: &super::exec::Var, name: &str) -> Result<i64, String> {
    let mut buf = String::new();
    let text = match var {
        super::exec::Var::Unset => return Err(format!("undefined variable \"{name}\"")),
        super::exec::Var::Text(t) => t.as_str(),
        // Its digits: the common case, without writing them.
        super::exec::Var::Value(Value::Int(i)) => return Ok(*i),
        super::exec::Var::Value(Value::Null) => "NULL",
        super::exec::Var::Value(v) => {
            v.write_text(&mut buf);
            buf.as_str()
        }
    };
    let n = atoi(text);
    if n == 0 && !text.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "invalid sleep time \"{text}\" in variable \"{name}\": not a whole number"
        ));
    }
    Ok(n)
}

/// C's `atoi`: spaces, a sign, then digits as far as they go; 0 when there
/// are none. Saturates where C's would overflow.
fn atoi(text: &str) -> i64 {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if negative { -n } else { n }
}

/// Evaluates `e`.
pub fn eval(e: &Expr, env: &mut Env<'_>) -> Result<Value, EvalError> {
    match e {
        Expr::Const(v) => Ok(*v),
        Expr::Var(slot) => env.var(*slot),
        Expr::Bin(op, a, b) => {
            let a = eval(a, env)?;
            let b = eval(b, env)?;
            // The common case without the general path's conversions: two
            // integers that add, subtract or multiply without overflow.
            if let (Value::Int(x), Value::Int(y)) = (a, b) {
                let r = match op {
                    BinOp::Add => x.checked_add(y),
                    BinOp::Sub => x.checked_sub(y),
                    BinOp::Mul => x.checked_mul(y),
                    _ => None,
                };
                if let Some(r) = r {
                    return Ok(Value::Int(r));
                }
            }
            binary(*op, a, b)
        }
        Expr::Not(a) => match eval(a, env)? {
            Value::Null => Ok(Value::Null),
            v => Ok(Value::Bool(!v.to_bool()?)),
        },
        Expr::BitNot(a) => Ok(Value::Int(!eval(a, env)?.to_int()?)),
        // As pgbench 15, not SQL: a NULL on the left is the result, the
        // right side unread (`NULL AND false` is NULL); else the left
        // decides when it can, and the right is the result.
        Expr::And(a, b) => match eval(a, env)? {
            Value::Null => Ok(Value::Null),
            v if !v.to_bool()? => Ok(Value::Bool(false)),
            _ => match eval(b, env)? {
                Value::Null => Ok(Value::Null),
                v => Ok(Value::Bool(v.to_bool()?)),
            },
        },
        Expr::Or(a, b) => match eval(a, env)? {
            Value::Null => Ok(Value::Null),
            v if v.to_bool()? => Ok(Value::Bool(true)),
            _ => match eval(b, env)? {
                Value::Null => Ok(Value::Null),
                v => Ok(Value::Bool(v.to_bool()?)),
            },
        },
        Expr::Is(a, test, negated) => {
            let v = eval(a, env)?;
            let holds = match test {
                IsTest::Null => v == Value::Null,
                IsTest::True => v == Value::Bool(true),
                IsTest::False => v == Value::Bool(false),
            };
            Ok(Value::Bool(holds != *negated))
        }
        Expr::Case(arms, otherwise) => {
            for (cond, then) in arms {
                if eval(cond, env)?.truth() {
                    return eval(then, env);
                }
            }
            eval(otherwise, env)
        }
        // The builtins' draw, its bounds folded (see [`fold`]): checked
        // as `call` checks them, without going through it.
        Expr::Func(Func::Random, args)
            if let [Expr::Const(Value::Int(lb)), Expr::Const(Value::Int(ub))] = args.as_slice()
                && lb <= ub
                && (*ub as i128 - *lb as i128) < i64::MAX as i128 =>
        {
            Ok(Value::Int(env.rng.random_range(*lb..=*ub)))
        }
        Expr::Func(f, args) => call(*f, args, env),
        Expr::Zipf(args, site) => {
            let (lb, ub) = bounds(eval(&args[0], env)?, eval(&args[1], env)?)?;
            let s = eval(&args[2], env)?.to_double()?;
            if !(s.is_finite() && s > 0.0 && s != 1.0 && s <= 1000.0) {
                return Err(EvalError::new(format!(
                    "zipfian parameter must be above 0, at most 1000 and not 1 (not {})",
                    format_double(s)
                )));
            }
            let n = (ub as i128 - lb as i128 + 1) as u64;
            let slot = env
                .zipf
                .get_mut(*site)
                .ok_or_else(|| EvalError::new("internal: no zipfian sampler for this call"))?;
            let sampler = match slot {
                Some(z) if z.is_for(n, s) => z,
                _ => slot.insert(ZipfSampler::new(n, s)),
            };
            Ok(Value::Int(lb.wrapping_add(sampler.draw(env.rng) as i64)))
        }
        Expr::Debug(a) => {
            let v = eval(a, env)?;
            let mut text = String::new();
            v.write_text(&mut text);
            crate::say!(
                "debug({}): {}{}{}",
                env.debug_at,
                v.type_name(),
                if v == Value::Null { "" } else { " " },
                text
            );
            Ok(v)
        }
    }
}

/// `e` with what cannot change during a run worked out once, for one
/// client: a variable that no command sets and that has a value becomes
/// that value (`known`), and an operator (`+`, `=`, `AND`, `NOT`, `IS`,
/// …) whose operands are all constants becomes its result. The builtins'
/// `random(1, 100000 * :scale)` thus multiplies once per client, not per
/// transaction. Functions are never folded (the random ones draw, and
/// `debug` writes), nor is an operator whose evaluation fails: it stays,
/// to fail at run time with the same message as without folding.
pub fn fold(e: &Expr, known: &dyn Fn(usize) -> Option<Value>) -> Expr {
    let f = |e: &Expr| Box::new(fold(e, known));
    let folded = match e {
        Expr::Const(v) => return Expr::Const(*v),
        Expr::Var(slot) => return known(*slot).map_or(Expr::Var(*slot), Expr::Const),
        Expr::Bin(op, a, b) => Expr::Bin(*op, f(a), f(b)),
        Expr::Not(a) => Expr::Not(f(a)),
        Expr::BitNot(a) => Expr::BitNot(f(a)),
        Expr::And(a, b) => Expr::And(f(a), f(b)),
        Expr::Or(a, b) => Expr::Or(f(a), f(b)),
        Expr::Is(a, test, negated) => Expr::Is(f(a), *test, *negated),
        Expr::Case(arms, otherwise) => {
            let arms = arms
                .iter()
                .map(|(c, v)| (fold(c, known), fold(v, known)))
                .collect();
            return Expr::Case(arms, f(otherwise));
        }
        Expr::Func(func, args) => {
            return Expr::Func(*func, args.iter().map(|a| fold(a, known)).collect());
        }
        Expr::Zipf(args, site) => {
            let [a, b, c] = &**args;
            return Expr::Zipf(
                Box::new([fold(a, known), fold(b, known), fold(c, known)]),
                *site,
            );
        }
        Expr::Debug(a) => return Expr::Debug(f(a)),
    };
    let constant = |e: &Expr| matches!(e, Expr::Const(_));
    let operands_constant = match &folded {
        Expr::Bin(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => constant(a) && constant(b),
        Expr::Not(a) | Expr::BitNot(a) | Expr::Is(a, ..) => constant(a),
        _ => false,
    };
    if !operands_constant {
        return folded;
    }
    // Constants only, and none of these operators draws or reads a
    // variable: the environment is never touched.
    let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(0);
    let mut env = Env {
        vars: &[],
        names: &[],
        rng: &mut rng,
        zipf: &mut [],
        debug_at: "",
    };
    match eval(&folded, &mut env) {
        Ok(v) => Expr::Const(v),
        Err(_) => folded,
    }
}

fn overflow(what: &str) -> EvalError {
    EvalError::new(format!("bigint {what} out of range"))
}

/// Both operands as numbers of one kind: doubles when either is one.
enum Pair {
    Ints(i64, i64),
    Doubles(f64, f64),
}

fn numeric_pair(a: Value, b: Value) -> Result<Pair, EvalError> {
    if matches!(a, Value::Double(_)) || matches!(b, Value::Double(_)) {
        Ok(Pair::Doubles(a.to_double()?, b.to_double()?))
    } else {
        Ok(Pair::Ints(a.to_int()?, b.to_int()?))
    }
}

fn binary(op: BinOp, a: Value, b: Value) -> Result<Value, EvalError> {
    if a == Value::Null || b == Value::Null {
        return Ok(Value::Null);
    }
    use BinOp::*;
    match op {
        Add | Sub | Mul | Div => match numeric_pair(a, b)? {
            Pair::Ints(x, y) => {
                let r = match op {
                    Add => x.checked_add(y).ok_or_else(|| overflow("add"))?,
                    Sub => x.checked_sub(y).ok_or_else(|| overflow("sub"))?,
                    Mul => x.checked_mul(y).ok_or_else(|| overflow("mul"))?,
                    _ => {
                        if y == 0 {
                            return Err(EvalError::new("division by zero"));
                        }
                        x.checked_div(y).ok_or_else(|| overflow("div"))?
                    }
                };
                Ok(Value::Int(r))
            }
            Pair::Doubles(x, y) => Ok(Value::Double(match op {
                Add => x + y,
                Sub => x - y,
                Mul => x * y,
                _ => x / y,
            })),
        },
        Mod => {
            let (x, y) = (a.to_int()?, b.to_int()?);
            if y == 0 {
                return Err(EvalError::new("division by zero"));
            }
            // i64::MIN % -1 is 0, not an overflow.
            Ok(Value::Int(x.checked_rem(y).unwrap_or(0)))
        }
        Eq | Ne | Lt | Le | Gt | Ge => {
            let ord = match numeric_pair(a, b)? {
                Pair::Ints(x, y) => x.partial_cmp(&y),
                Pair::Doubles(x, y) => x.partial_cmp(&y),
            };
            use std::cmp::Ordering::*;
            let r = match (op, ord) {
                (Eq, o) => o == Some(Equal),
                (Ne, o) => o != Some(Equal),
                (Lt, o) => o == Some(Less),
                (Le, o) => matches!(o, Some(Less | Equal)),
                (Gt, o) => o == Some(Greater),
                (_, o) => matches!(o, Some(Greater | Equal)),
            };
            Ok(Value::Bool(r))
        }
        BitAnd | BitOr | BitXor | Shl | Shr => {
            let (x, y) = (a.to_int()?, b.to_int()?);
            Ok(Value::Int(match op {
                BitAnd => x & y,
                BitOr => x | y,
                BitXor => x ^ y,
                // As C on the machines pgbench runs on: the count is taken
                // modulo 64, and >> keeps the sign.
                Shl => x.wrapping_shl(y as u32),
                _ => x.wrapping_shr(y as u32),
            }))
        }
    }
}

/// The bounds of a random function: integers, not empty, and a range that
/// fits in 64 bits.
fn bounds(lb: Value, ub: Value) -> Result<(i64, i64), EvalError> {
    let (lb, ub) = (lb.to_int()?, ub.to_int()?);
    if lb > ub {
        return Err(EvalError::new("empty range given to random"));
    }
    if ub as i128 - lb as i128 + 1 > i64::MAX as i128 {
        return Err(EvalError::new("random range is too large"));
    }
    Ok((lb, ub))
}

fn call(f: Func, args: &[Expr], env: &mut Env<'_>) -> Result<Value, EvalError> {
    // At most three arguments, checked at parse time (least and greatest
    // fold as they go).
    let arg = |i: usize, env: &mut Env<'_>| -> Result<Value, EvalError> {
        match args.get(i) {
            Some(a) => eval(a, env),
            None => Err(EvalError::new("internal: missing argument")),
        }
    };
    match f {
        Func::Abs => Ok(match arg(0, env)? {
            // As pgbench: abs of the smallest integer is itself.
            Value::Int(i) => Value::Int(i.wrapping_abs()),
            Value::Null => Value::Null,
            v => Value::Double(v.to_double()?.abs()),
        }),
        Func::Double => Ok(match arg(0, env)? {
            Value::Null => Value::Null,
            v => Value::Double(v.to_double()?),
        }),
        Func::Int => Ok(match arg(0, env)? {
            Value::Null => Value::Null,
            v => Value::Int(v.to_int()?),
        }),
        Func::Exp | Func::Ln | Func::Sqrt => Ok(match arg(0, env)? {
            Value::Null => Value::Null,
            v => {
                let x = v.to_double()?;
                Value::Double(match f {
                    Func::Exp => x.exp(),
                    Func::Ln => x.ln(),
                    _ => x.sqrt(),
                })
            }
        }),
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Pow => {
            let (a, b) = (arg(0, env)?, arg(1, env)?);
            if a == Value::Null || b == Value::Null {
                return Ok(Value::Null);
            }
            Ok(Value::Double(a.to_double()?.powf(b.to_double()?)))
        }
        Func::Mod => binary(BinOp::Mod, arg(0, env)?, arg(1, env)?),
        Func::Least | Func::Greatest => {
            let mut best: Option<Value> = None;
            let mut all_ints = true;
            let mut any_null = false;
            for a in args {
                let v = eval(a, env)?;
                match v {
                    Value::Null => any_null = true,
                    Value::Int(_) => {}
                    Value::Double(_) => all_ints = false,
                    other => {
                        return Err(EvalError::new(format!(
                            "cannot coerce {} to double",
                            other.type_name()
                        )));
                    }
                }
                if v == Value::Null {
                    continue;
                }
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let least = f == Func::Least;
                        let better = match numeric_pair(v, b)? {
                            Pair::Ints(x, y) => {
                                if least {
                                    x < y
                                } else {
                                    x > y
                                }
                            }
                            Pair::Doubles(x, y) => {
                                if least {
                                    x < y
                                } else {
                                    x > y
                                }
                            }
                        };
                        if better { v } else { b }
                    }
                });
            }
            if any_null {
                return Ok(Value::Null);
            }
            let Some(b) = best else {
                return Ok(Value::Null);
            };
            Ok(if all_ints {
                Value::Int(b.to_int()?)
            } else {
                Value::Double(b.to_double()?)
            })
        }
        Func::Random => {
            let (lb, ub) = bounds(arg(0, env)?, arg(1, env)?)?;
            Ok(Value::Int(env.rng.random_range(lb..=ub)))
        }
        Func::RandomExponential => {
            let (lb, ub) = bounds(arg(0, env)?, arg(1, env)?)?;
            let p = arg(2, env)?.to_double()?;
            if p.is_nan() || p <= 0.0 {
                return Err(EvalError::new(format!(
                    "exponential parameter must be greater than zero (not {})",
                    format_double(p)
                )));
            }
            Ok(Value::Int(random_exponential(env.rng, lb, ub, p)))
        }
        Func::RandomGaussian => {
            let (lb, ub) = bounds(arg(0, env)?, arg(1, env)?)?;
            let p = arg(2, env)?.to_double()?;
            if p.is_nan() || p < 2.0 {
                return Err(EvalError::new(format!(
                    "gaussian parameter must be at least 2 (not {})",
                    format_double(p)
                )));
            }
            Ok(Value::Int(random_gaussian(env.rng, lb, ub, p)))
        }
        Func::HashFnv1a | Func::HashMurmur2 => {
            let v = arg(0, env)?.to_int()?;
            let seed = arg(1, env)?.to_int()? as u64;
            Ok(Value::Int(if f == Func::HashFnv1a {
                hash_fnv1a(v, seed)
            } else {
                hash_murmur2(v, seed)
            }))
        }
        Func::Permute => {
            let v = arg(0, env)?.to_int()?;
            let size = arg(1, env)?.to_int()?;
            let seed = arg(2, env)?.to_int()?;
            if size <= 0 {
                return Err(EvalError::new(
                    "permute size parameter must be greater than zero",
                ));
            }
            Ok(Value::Int(permute(v, size, seed)))
        }
    }
}

/// A draw over lb..=ub of an exponential distribution truncated to the
/// range: the value lb + k is drawn with probability proportional to
/// exp(-p·k/n) over its slot, n = ub - lb + 1, by inverting the
/// distribution function of the truncated density.
fn random_exponential(rng: &mut SmallRng, lb: i64, ub: i64, p: f64) -> i64 {
    let n = (ub as i128 - lb as i128 + 1) as f64;
    let cut = (-p).exp();
    // u in (0, 1], so that ln never sees 0.
    let u = 1.0 - rng.random::<f64>();
    let r = -(cut + (1.0 - cut) * u).ln() / p;
    let k = ((n * r) as i128).clamp(0, n as i128 - 1);
    (lb as i128 + k) as i64
}

/// A draw over lb..=ub of a normal distribution centred on the middle of
/// the range and truncated at ±p standard deviations from it, each
/// integer taking the slot of width 2p/n it falls in.
fn random_gaussian(rng: &mut SmallRng, lb: i64, ub: i64, p: f64) -> i64 {
    let n = (ub as i128 - lb as i128 + 1) as f64;
    let z = loop {
        let z = standard_normal(rng);
        if (-p..p).contains(&z) {
            break z;
        }
    };
    let r = (z + p) / (2.0 * p);
    let k = ((n * r) as i128).clamp(0, n as i128 - 1);
    (lb as i128 + k) as i64
}

/// A standard normal draw by the Box–Muller transform.
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// pgbench's `hash_fnv1a(v, seed)`: 64-bit FNV-1a over the eight bytes of
/// v, lowest first, starting from the FNV offset basis xor the seed.
pub fn hash_fnv1a(v: i64, seed: u64) -> i64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    (v as u64)
        .to_le_bytes()
        .iter()
        .fold(OFFSET_BASIS ^ seed, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(PRIME)
        }) as i64
}

/// pgbench's `hash_murmur2(v, seed)` (and `hash`): MurmurHash64A of the
/// eight bytes of v, as one 64-bit block.
pub fn hash_murmur2(v: i64, seed: u64) -> i64 {
    const M: u64 = 0xC6A4_A793_5BD1_E995;
    const R: u32 = 47;
    let mut h = seed ^ 8u64.wrapping_mul(M);
    let mut k = v as u64;
    k = k.wrapping_mul(M);
    k ^= k >> R;
    k = k.wrapping_mul(M);
    h ^= k;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h as i64
}

/// PostgreSQL's own generator (`pg_prng`), which pgbench's `permute`
/// draws its rounds from: xoroshiro128** seeded by two SplitMix64 steps.
/// Only `permute` needs it bit for bit; the random functions use the
/// worker's own generator.
struct PgPrng {
    s0: u64,
    s1: u64,
}

impl PgPrng {
    fn new(seed: u64) -> PgPrng {
        let mut state = seed;
        let mut split = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let (s0, s1) = (split(), split());
        if s0 == 0 && s1 == 0 {
            // The generator must not start from all zeros.
            PgPrng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            }
        } else {
            PgPrng { s0, s1 }
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// Uniform in lo..=hi, by taking the top bits and rejecting values
    /// past the range.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let range = hi - lo;
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return lo + v;
            }
        }
    }
}

/// pgbench's `permute(v, size, seed)`: where v (taken modulo size) lands in
/// a pseudorandom permutation of 0..size chosen by the seed. Six rounds,
/// each an odd multiplication, an xor and a one-bit rotation modulo the
/// largest power of two not above size, applied to the lower and then the
/// upper overlapping part of the range, and a random offset modulo size.
pub fn permute(v: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let size = size as u64;
    let mut v = (v as u64) % size;
    let mut prng = PgPrng::new(seed as u64);
    let bits = 63 - size.leading_zeros();
    let mask = (1u64 << bits) - 1;
    let rotate = |x: u64| ((x << 1) & mask) | (x >> (bits - 1));
    for _ in 0..6 {
        let m = (prng.next_u64() & mask) | 1;
        let r = prng.next_u64() & mask;
        if v <= mask {
            v = rotate((v.wrapping_mul(m) ^ r) & mask);
        }
        let m = (prng.next_u64() & mask) | 1;
        let r = prng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - rotate((t.wrapping_mul(m) ^ r) & mask);
        }
        v = (v + prng.range(0, size - 1)) % size;
    }
    v as i64
}

/// `d` as C's `printf("%.15g")` writes it, as pgbench shows and binds
/// doubles.
pub fn format_double(d: f64) -> String {
    let mut s = String::new();
    write_double(d, &mut s);
    s
}

/// Appends `d` as `%.15g`: 15 significant digits, trailing zeros dropped,
/// exponent form when the exponent is below -4 or at least 15.
pub fn write_double(d: f64, out: &mut String) {
    use std::fmt::Write as _;
    if d.is_nan() {
        out.push_str("NaN");
        return;
    }
    if d.is_infinite() {
        out.push_str(if d > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    const PRECISION: usize = 15;
    // The digits and exponent after rounding to 15 significant digits.
    let sci = format!("{:.*e}", PRECISION - 1, d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= PRECISION as i32 {
        let m = trim_zeros(mantissa);
        let _ = write!(
            out,
            "{m}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    } else {
        let decimals = (PRECISION as i32 - 1 - exp).max(0) as usize;
        let fixed = format!("{d:.decimals$}");
        out.push_str(trim_zeros(&fixed));
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::pgbench::script::exec::Var;
    use crate::workload::pgbench::script::expr::parse_expr;
    use rand::SeedableRng;

    /// A variable's slot by its name, new names added to `names`.
    fn interner(names: &mut Vec<String>) -> impl FnMut(&str, usize) -> usize + '_ {
        |n: &str, _at: usize| match names.iter().position(|x| x == n) {
            Some(i) => i,
            None => {
                names.push(n.to_string());
                names.len() - 1
            }
        }
    }

    /// Evaluates `text` with the variables `:x` = 5, `:s` = "abc" and
    /// `:default_seed` = 0, both as written and folded for those values
    /// (every test of the language is also one of [`fold`]: the two must
    /// agree, errors included).
    fn ev(text: &str) -> Result<Value, String> {
        let mut names = vec!["x".to_string(), "s".to_string(), "default_seed".to_string()];
        let mut sites = 0;
        let e = parse_expr(text, 0, text.len(), &mut interner(&mut names), &mut sites)
            .map_err(|e| format!("parse: {}", e.message))?;
        let mut vars = vec![
            Var::Value(Value::Int(5)),
            Var::Text("abc".to_string()),
            Var::Value(Value::Int(0)),
        ];
        vars.resize_with(names.len(), || Var::Unset);
        let folded = fold(&e, &|slot| vars.get(slot).and_then(|v| v.value().ok()));
        let run = |e: &Expr| {
            let mut rng = SmallRng::seed_from_u64(1);
            let mut zipf = vec![None; sites];
            let mut env = Env {
                vars: &vars,
                names: &names,
                rng: &mut rng,
                zipf: &mut zipf,
                debug_at: "test",
            };
            eval(e, &mut env).map_err(|e| e.0)
        };
        let plain = run(&e);
        let same = |a: &Result<Value, String>, b: &Result<Value, String>| match (a, b) {
            // NaN is not equal to itself.
            (Ok(Value::Double(x)), Ok(Value::Double(y))) => x.to_bits() == y.to_bits(),
            _ => a == b,
        };
        let after = run(&folded);
        assert!(same(&plain, &after), "{text}: {plain:?}, folded {after:?}");
        plain
    }

    #[test]
    fn folding_works_out_constants_and_unchanging_variables_once() {
        let mut names = vec!["scale".to_string()];
        let mut sites = 0;
        let text = "random(1, 100000 * :scale) + (2 * 3 > 5 AND NOT false)";
        let e = parse_expr(text, 0, text.len(), &mut interner(&mut names), &mut sites);
        // A function is never folded, so neither is the sum.
        let Ok(e) = e else {
            panic!("parse");
        };
        let known = |slot: usize| (slot == 0).then_some(Value::Int(10));
        let Expr::Bin(BinOp::Add, random, cond) = fold(&e, &known) else {
            panic!("not a sum");
        };
        assert_eq!(*cond, Expr::Const(Value::Bool(true)));
        assert_eq!(
            *random,
            Expr::Func(
                Func::Random,
                vec![
                    Expr::Const(Value::Int(1)),
                    Expr::Const(Value::Int(1_000_000))
                ]
            )
        );
        // A variable not known stays; an operator that fails stays too.
        let e = parse_expr(
            ":other * 2 + 1 / 0",
            0,
            18,
            &mut interner(&mut names),
            &mut sites,
        );
        let Ok(e) = e else {
            panic!("parse");
        };
        assert_eq!(fold(&e, &known), e);
    }

    fn int(text: &str) -> i64 {
        match ev(text) {
            Ok(Value::Int(i)) => i,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn dbl(text: &str) -> String {
        match ev(text) {
            Ok(Value::Double(d)) => format_double(d),
            other => panic!("{text}: {other:?}"),
        }
    }

    fn err(text: &str) -> String {
        match ev(text) {
            Err(e) => e,
            other => panic!("{text}: expected an error, got {other:?}"),
        }
    }

    // The expected values below were printed by the real pgbench 15.20
    // (Debian 15.20-0+deb12u1): a script of `\set a debug(EXPR)` lines run
    // once with `pgbench -n -t 1 -f script.sql` against a local server;
    // debug() writes "int V", "double V" or "boolean V" to stderr.

    #[test]
    fn hashes_match_pgbench() {
        assert_eq!(int("hash(10, 5432)"), -5817877081768721676);
        assert_eq!(int("hash_fnv1a(10, 5432)"), -7793829335365542153);
        assert_eq!(int("hash_murmur2(10, 5432)"), -5817877081768721676);
        assert_eq!(int("hash_fnv1a(0, 0)"), -6284781860667377211);
        assert_eq!(int("hash_murmur2(-1, 7)"), -837761221932631145);
        assert_eq!(int("hash_fnv1a(123456789, -42)"), -4593267551895467025);
        assert_eq!(int("hash_murmur2(0, -1)"), -1429387546045227835);
        assert_eq!(
            int("hash(9223372036854775807, 9223372036854775807)"),
            8145970180778700614
        );
        assert_eq!(
            int("hash_fnv1a(-9223372036854775808, 12345)"),
            -1907863566463159012
        );
        // The seed defaults to :default_seed (0 in this test's variables).
        assert_eq!(int("hash_fnv1a(0)"), int("hash_fnv1a(0, 0)"));
    }

    #[test]
    fn permute_matches_pgbench() {
        for (v, size, seed, want) in [
            (0, 100, 5432, 68),
            (1, 100, 5432, 50),
            (99, 100, 5432, 26),
            (12345, 1_000_000, 42, 100143),
            (7, 3, 1, 2),
            (5, 2, 17, 0),
            (-3, 10, 99, 9),
            (123, i64::MAX, 8, 181710307463891036),
            (10, 1, 0, 0),
            (0, 2, 0, 0),
            (1, 2, 0, 1),
            (3, 7, -1, 2),
            (999999, 1_000_000, 1, 229617),
            (54321, 87654321, 777, 48641620),
        ] {
            assert_eq!(permute(v, size, seed), want, "permute({v}, {size}, {seed})");
        }
        assert!(err("permute(10, 0)").contains("greater than zero"));
    }

    #[test]
    fn permute_is_a_permutation() {
        for size in [1, 2, 3, 4, 7, 100, 1000] {
            let mut seen = vec![false; size as usize];
            for v in 0..size {
                let p = permute(v, size, 12345) as usize;
                assert!(!seen[p], "size {size}: {p} twice");
                seen[p] = true;
            }
        }
    }

    #[test]
    fn integer_and_double_arithmetic_matches_pgbench() {
        assert_eq!(int("7 / 2"), 3);
        assert_eq!(int("-7 / 2"), -3);
        assert_eq!(int("-7 % 3"), -1);
        assert_eq!(int("7 % -3"), 1);
        assert_eq!(int("-7 % -3"), -1);
        assert_eq!(int("9223372036854775807 % -1"), 0);
        assert_eq!(int("(-9223372036854775807 - 1) % -1"), 0);
        assert_eq!(dbl("7.0 / 2"), "3.5");
        assert_eq!(dbl("1.0 / 3"), "0.333333333333333");
        assert_eq!(int("1 << 3 + 1"), 16);
        assert_eq!(int("5 & 3 | 8"), 9);
        assert_eq!(int("~5"), -6);
        assert_eq!(int("~1 + 1"), -3);
        assert_eq!(int("-2 << 1"), -4);
        assert_eq!(int("10 >> 1 << 2"), 20);
        assert_eq!(int("10 # 3"), 9);
        assert_eq!(int("--3"), 3);
        assert_eq!(dbl("5 / 2 * 2.0"), "4");
        assert_eq!(int("1.5 % 2"), 0);
        assert_eq!(int("mod(5.5, 2)"), 0);
        assert_eq!(int("mod(-7, 3)"), -1);
        assert_eq!(int("1 & 0.5"), 0);
        assert_eq!(int("-9223372036854775808"), i64::MIN);
        assert_eq!(dbl("1.0 / 0"), "Infinity");
        assert_eq!(dbl("1e300 * 1e300"), "Infinity");
        assert_eq!(dbl("(1.5 + 2) * 3"), "10.5");
        assert_eq!(dbl("-0.0"), "0");
        assert_eq!(ev("null + 1"), Ok(Value::Null));
        assert_eq!(int(":x * 2"), 10);
    }

    #[test]
    fn errors_match_pgbench() {
        assert_eq!(err("9223372036854775807 + 1"), "bigint add out of range");
        assert_eq!(err("-9223372036854775808 - 1"), "bigint sub out of range");
        assert_eq!(err("9223372036854775807 * 2"), "bigint mul out of range");
        assert_eq!(err("-9223372036854775808 * -1"), "bigint mul out of range");
        assert_eq!(
            err("(-9223372036854775807 - 1) / -1"),
            "bigint div out of range"
        );
        assert_eq!(err("1 / 0"), "division by zero");
        assert_eq!(err("1 % 0"), "division by zero");
        assert_eq!(err("random(5, 1)"), "empty range given to random");
        assert_eq!(
            err("random(-9223372036854775808, 9223372036854775807)"),
            "random range is too large"
        );
        assert!(err("int(1e30)").starts_with("double to int overflow"));
        assert!(err("int(9.2233720368547758e18)").starts_with("double to int overflow"));
        assert_eq!(err("true + 1"), "cannot coerce boolean to int");
        assert_eq!(err("int(true)"), "cannot coerce boolean to int");
        assert_eq!(err("true = 1"), "cannot coerce boolean to int");
        assert_eq!(err("not 0"), "cannot coerce int to boolean");
        assert_eq!(err("2 = 2 and 3"), "cannot coerce int to boolean");
        assert_eq!(err("1.5 or 0"), "cannot coerce double to boolean");
        assert!(err("random_exponential(1, 10, 0)").contains("greater than zero"));
        assert!(err("random_gaussian(1, 10, 1.5)").contains("at least 2"));
        assert!(err("random_zipfian(1, 10, 1)").contains("not 1"));
        assert_eq!(err(":s + 1"), "malformed variable \"s\" value: \"abc\"");
    }

    #[test]
    fn functions_match_pgbench() {
        assert_eq!(int("int(2.5)"), 2);
        assert_eq!(int("int(3.5)"), 4);
        assert_eq!(int("int(-2.7)"), -3);
        assert_eq!(int("int(2.7)"), 3);
        assert_eq!(int("int(-1.5)"), -2);
        assert_eq!(int("int(-2.5)"), -2);
        assert_eq!(int("int(-0.5)"), 0);
        assert_eq!(dbl("pi()"), "3.14159265358979");
        assert_eq!(dbl("sqrt(2)"), "1.4142135623731");
        assert_eq!(dbl("pow(2, 0.5)"), "1.4142135623731");
        assert_eq!(dbl("pow(2, 1000)"), "1.07150860718627e+301");
        assert_eq!(dbl("pow(-8, 1.0/3)"), "NaN");
        assert_eq!(dbl("greatest(1, 2.5, 2)"), "2.5");
        assert_eq!(int("least(3, 1, 2)"), 1);
        assert_eq!(dbl("least(2.0, 1)"), "1");
        assert_eq!(ev("greatest(1, null)"), Ok(Value::Null));
        assert_eq!(dbl("abs(-3.5)"), "3.5");
        assert_eq!(int("abs(-5)"), 5);
        assert_eq!(int("abs(-9223372036854775807 - 1)"), i64::MIN);
        assert_eq!(dbl("exp(1)"), "2.71828182845905");
        assert_eq!(dbl("ln(10)"), "2.30258509299405");
        assert_eq!(dbl("ln(0)"), "-Infinity");
        assert_eq!(dbl("ln(-1)"), "NaN");
        assert_eq!(dbl("double(3)"), "3");
        assert_eq!(dbl("double(9223372036854775807)"), "9.22337203685478e+18");
        assert_eq!(int("random(7, 7)"), 7);
        assert_eq!(
            int("case when 1 > 2 then 10 when 2 > 1 then 20 else 30 end"),
            20
        );
        assert_eq!(int("case when 1 then 5 end"), 5);
        assert_eq!(ev("case when false then 1 end"), Ok(Value::Null));
        assert_eq!(int("case when null then 1 else 2 end"), 2);
    }

    #[test]
    fn logic_matches_pgbench() {
        let b = |t: &str| match ev(t) {
            Ok(Value::Bool(b)) => Some(b),
            Ok(Value::Null) => None,
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(b("1 + 2 * 3 = 7"), Some(true));
        assert_eq!(b("1 < 2 and 3 < 2"), Some(false));
        assert_eq!(b("null is null"), Some(true));
        assert_eq!(b("5 <> 5.0"), Some(false));
        assert_eq!(b("5 != 4"), Some(true));
        assert_eq!(b("5 = 5.0"), Some(true));
        assert_eq!(b("not true"), Some(false));
        assert_eq!(b("true and null"), None);
        assert_eq!(b("false and null"), Some(false));
        // pgbench 15.20: a NULL on the left is the result, the right unread.
        assert_eq!(b("null and false"), None);
        assert_eq!(b("null or true"), None);
        assert_eq!(b("null or false"), None);
        assert_eq!(b("null and 1 / 0 = 1"), None);
        assert_eq!(b("false or null"), None);
        assert_eq!(b("true or 1"), Some(true));
        assert_eq!(b("false and 1"), Some(false));
        assert_eq!(b("2 isnull"), Some(false));
        assert_eq!(b("5 notnull"), Some(true));
        assert_eq!(b("1 <= 1 and 2 >= 3 or 1 < 2"), Some(true));
        assert_eq!(b("1 | 2 = 3"), Some(true));
        assert_eq!(b("not 1 < 2 and true"), Some(false));
        assert_eq!(b("1 + 2 is null"), Some(false));
        assert_eq!(b("null is not true"), Some(true));
        assert_eq!(b("null is false"), Some(false));
        assert_eq!(b("null is not false"), Some(true));
        assert_eq!(b("1 = 1 is true"), Some(true));
        assert_eq!(b("not false is true"), Some(true));
        assert_eq!(b("1 is true"), Some(false));
        assert_eq!(b("0 is false"), Some(false));
        assert_eq!(b("TRUE AND NOT FALSE"), Some(true));
        assert_eq!(b("3 > 2 and null"), None);
        assert_eq!(b("3 < null"), None);
        assert_eq!(b("null = null"), None);
    }

    #[test]
    fn doubles_print_as_percent_15g() {
        for (d, want) in [
            (1e20, "1e+20"),
            (0.000012345, "1.2345e-05"),
            (1.0 / 3.0, "0.333333333333333"),
            (1.0 / 7.0, "0.142857142857143"),
            (123456789012345678.0, "1.23456789012346e+17"),
            (1e15, "1e+15"),
            (1e16, "1e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.1 + 0.2, "0.3"),
            (1000.0, "1000"),
            (1.0, "1"),
            (0.5, "0.5"),
            (123.456e-7, "1.23456e-05"),
            (-2.5, "-2.5"),
            (-0.0, "-0"),
            (999999999999999.0, "999999999999999"),
            (9999999999999999.0, "1e+16"),
        ] {
            assert_eq!(format_double(d), want, "{d:e}");
        }
    }

    #[test]
    fn text_values_are_read_as_pgbench_reads_them() {
        // Each line as pgbench 15.20 read `-D x=TEXT` in `\set r debug(:x)`.
        for (text, want) in [
            ("5", Some(Value::Int(5))),
            (" -5", Some(Value::Int(-5))),
            ("+7", Some(Value::Int(7))),
            ("00012", Some(Value::Int(12))),
            ("1.5", Some(Value::Double(1.5))),
            (" 1.5", Some(Value::Double(1.5))),
            ("1e3", Some(Value::Double(1000.0))),
            ("1.", Some(Value::Double(1.0))),
            (".5", Some(Value::Double(0.5))),
            ("0x10", Some(Value::Double(16.0))),
            ("0x1p3", Some(Value::Double(8.0))),
            ("-0X.8", Some(Value::Double(-0.5))),
            ("inf", Some(Value::Double(f64::INFINITY))),
            ("-Infinity", Some(Value::Double(f64::NEG_INFINITY))),
            ("t", Some(Value::Bool(true))),
            ("tr", Some(Value::Bool(true))),
            ("YES", Some(Value::Bool(true))),
            ("y", Some(Value::Bool(true))),
            ("On", Some(Value::Bool(true))),
            ("off", Some(Value::Bool(false))),
            ("of", Some(Value::Bool(false))),
            ("OF", Some(Value::Bool(false))),
            ("fals", Some(Value::Bool(false))),
            ("n", Some(Value::Bool(false))),
            ("NULL", Some(Value::Null)),
            // Refused: pgbench says malformed, or out of range.
            ("o", None),
            ("abc", None),
            ("truex", None),
            ("-5 ", None),
            ("1.5 ", None),
            ("+", None),
            ("-", None),
            (" ", None),
            ("1e", None),
            ("1e400", None),
            ("1e-310", None),
            ("1_000", None),
            ("0x", None),
            ("99999999999999999999", None),
            ("9223372036854775808", None),
            ("", None),
        ] {
            assert_eq!(parse_text_value(text), want, "{text:?}");
        }
        assert!(matches!(parse_text_value("nan"), Some(Value::Double(d)) if d.is_nan()));
        assert!(matches!(parse_text_value("NaN"), Some(Value::Double(d)) if d.is_nan()));
    }

    #[test]
    fn a_sleep_reads_its_variable_as_pgbench_15_does() {
        use crate::workload::pgbench::script::exec::Var;
        let text = |t: &str| sleep_amount(&Var::Text(t.to_string()), "x");
        let value = |v: Value| sleep_amount(&Var::Value(v), "x");
        // As pgbench 15.20 slept for `-D x=TEXT` and `\\sleep :x`.
        assert_eq!(text("1.0"), Ok(1));
        assert_eq!(text("2.7"), Ok(2));
        assert_eq!(text("1e+20"), Ok(1));
        assert_eq!(text("-5"), Ok(-5));
        assert_eq!(text(" 7"), Ok(7));
        assert_eq!(text("0"), Ok(0));
        assert!(
            text("abc")
                .unwrap_err()
                .contains("invalid sleep time \"abc\"")
        );
        assert!(text("true").is_err());
        assert!(text(" 0").is_err());
        // `\\set x 2.7` then `\\sleep :x s` slept 2 s.
        assert_eq!(value(Value::Double(2.7)), Ok(2));
        assert_eq!(value(Value::Int(15)), Ok(15));
        assert!(value(Value::Bool(true)).is_err());
        assert!(value(Value::Null).is_err());
        assert!(
            sleep_amount(&Var::Unset, "x")
                .unwrap_err()
                .contains("undefined")
        );
    }

    #[test]
    fn random_functions_stay_in_their_bounds() {
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..10_000 {
            let e = random_exponential(&mut rng, 1, 10, 3.0);
            assert!((1..=10).contains(&e));
            let g = random_gaussian(&mut rng, -5, 5, 2.0);
            assert!((-5..=5).contains(&g));
        }
        // Exponential: the first value is the most likely, with share
        // (1 - e^-p/n) / (1 - e^-p).
        let (n, p, draws) = (10i64, 3.0f64, 200_000);
        let first = (0..draws)
            .filter(|_| random_exponential(&mut rng, 0, n - 1, p) == 0)
            .count() as f64
            / draws as f64;
        let want = (1.0 - (-p / n as f64).exp()) / (1.0 - (-p).exp());
        assert!((first - want).abs() < 0.01, "{first} vs {want}");
        // Gaussian: symmetric around the middle.
        let mut c = [0u64; 11];
        for _ in 0..draws {
            c[(random_gaussian(&mut rng, 0, 10, 2.5)) as usize] += 1;
        }
        assert!(c[5] > c[2] && c[5] > c[8], "{c:?}");
        let (lo, hi): (u64, u64) = (c[..5].iter().sum(), c[6..].iter().sum());
        assert!((lo as f64 / hi as f64 - 1.0).abs() < 0.03, "{c:?}");
    }

    #[test]
    fn random_zipfian_takes_any_positive_parameter_and_favours_the_low_end() {
        for s in ["0.99", "0.5", "1.5", "3"] {
            let text = format!("random_zipfian(1, 1000, {s})");
            let names: Vec<String> = Vec::new();
            let mut sites = 0;
            let e =
                parse_expr(&text, 0, text.len(), &mut |_: &str, _: usize| 0, &mut sites).unwrap();
            let mut rng = SmallRng::seed_from_u64(9);
            let mut zipf = vec![None; sites];
            let mut ones = 0;
            let draws = 20_000;
            for _ in 0..draws {
                let mut env = Env {
                    vars: &[],
                    names: &names,
                    rng: &mut rng,
                    zipf: &mut zipf,
                    debug_at: "test",
                };
                let Ok(Value::Int(v)) = eval(&e, &mut env) else {
                    panic!("{text}")
                };
                assert!((1..=1000).contains(&v));
                ones += u64::from(v == 1);
            }
            let theta: f64 = s.parse().unwrap();
            let want = 1.0 / crate::workload::kit::keys::zeta(1000, theta);
            let got = ones as f64 / draws as f64;
            assert!(
                (got - want).abs() < 0.1 * want + 0.002,
                "{s}: {got} vs {want}"
            );
        }
    }
}
