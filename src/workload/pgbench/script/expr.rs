//! pgbench's expression language, as `\set`, `\if` and `\elif` take it:
//! the lexer and the parser that compile an expression into an [`Expr`]
//! tree once, at parse time.
//!
//! The grammar is pgbench's (PostgreSQL 15), from the loosest binding to
//! the tightest: `OR`; `AND`; `NOT`; `IS [NOT] NULL|TRUE|FALSE`, `ISNULL`,
//! `NOTNULL`; the comparisons `= <> != < <= > >=` (which do not chain);
//! the bitwise `| # & << >>` and prefix `~`, all on one level; `+ -`;
//! `* / %`; prefix `+ -`. Integers are 64-bit (`-9223372036854775808` is
//! one), doubles are written with a point or an exponent, `TRUE`, `FALSE`
//! and `NULL` are constants, `:name` is a variable, and `CASE WHEN … THEN
//! … [ELSE …] END` and the functions of `FUNCTIONS` complete it. Keywords
//! and function names are case-insensitive. There are no comments inside
//! an expression (`--3` is 3, as in pgbench).
//!
//! Parsing is a precedence climb over the tokens; every error carries the
//! byte offset of the token it is about, which the script parser turns into
//! a line and column.

use super::eval::Value;

/// A compiled expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Value),
    /// A variable, by slot.
    Var(usize),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    BitNot(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// `e IS [NOT] NULL|TRUE|FALSE`; the flag is NOT.
    Is(Box<Expr>, IsTest, bool),
    /// `CASE WHEN c THEN v … ELSE e END`; no ELSE is ELSE NULL.
    Case(Vec<(Expr, Expr)>, Box<Expr>),
    Func(Func, Vec<Expr>),
    /// `random_zipfian(lb, ub, s)` and the index of its call site, which
    /// keeps the sampler for the last (lb, ub, s).
    Zipf(Box<[Expr; 3]>, usize),
    /// `debug(e)`: e, also written to stderr.
    Debug(Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsTest {
    Null,
    True,
    False,
}

/// The functions, besides `random_zipfian` and `debug` (their own nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Double,
    Int,
    Exp,
    Ln,
    Sqrt,
    Pi,
    Pow,
    Mod,
    Least,
    Greatest,
    Random,
    RandomExponential,
    RandomGaussian,
    HashFnv1a,
    HashMurmur2,
    Permute,
}

/// How many arguments a function takes.
#[derive(Clone, Copy)]
enum Arity {
    Exactly(usize),
    /// At least one (least, greatest).
    Some,
    /// Between the two; a missing seed is `:default_seed`.
    Seeded(usize, usize),
}

/// What a function name means.
#[derive(Clone, Copy)]
enum Callee {
    Plain(Func),
    Zipf,
    Debug,
}

/// pgbench's functions, by name.
const FUNCTIONS: [(&str, Callee, Arity); 21] = [
    ("abs", Callee::Plain(Func::Abs), Arity::Exactly(1)),
    ("debug", Callee::Debug, Arity::Exactly(1)),
    ("double", Callee::Plain(Func::Double), Arity::Exactly(1)),
    ("exp", Callee::Plain(Func::Exp), Arity::Exactly(1)),
    ("greatest", Callee::Plain(Func::Greatest), Arity::Some),
    (
        "hash",
        Callee::Plain(Func::HashMurmur2),
        Arity::Seeded(1, 2),
    ),
    (
        "hash_fnv1a",
        Callee::Plain(Func::HashFnv1a),
        Arity::Seeded(1, 2),
    ),
    (
        "hash_murmur2",
        Callee::Plain(Func::HashMurmur2),
        Arity::Seeded(1, 2),
    ),
    ("int", Callee::Plain(Func::Int), Arity::Exactly(1)),
    ("least", Callee::Plain(Func::Least), Arity::Some),
    ("ln", Callee::Plain(Func::Ln), Arity::Exactly(1)),
    ("mod", Callee::Plain(Func::Mod), Arity::Exactly(2)),
    ("permute", Callee::Plain(Func::Permute), Arity::Seeded(2, 3)),
    ("pi", Callee::Plain(Func::Pi), Arity::Exactly(0)),
    ("pow", Callee::Plain(Func::Pow), Arity::Exactly(2)),
    ("power", Callee::Plain(Func::Pow), Arity::Exactly(2)),
    ("random", Callee::Plain(Func::Random), Arity::Exactly(2)),
    (
        "random_exponential",
        Callee::Plain(Func::RandomExponential),
        Arity::Exactly(3),
    ),
    (
        "random_gaussian",
        Callee::Plain(Func::RandomGaussian),
        Arity::Exactly(3),
    ),
    ("random_zipfian", Callee::Zipf, Arity::Exactly(3)),
    ("sqrt", Callee::Plain(Func::Sqrt), Arity::Exactly(1)),
];

/// The names of the functions, for messages.
pub fn function_names() -> Vec<&'static str> {
    FUNCTIONS.iter().map(|f| f.0).collect()
}

/// A parse error at a byte offset of the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub offset: usize,
    pub message: String,
}

fn fail<T>(offset: usize, message: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError {
        offset,
        message: message.into(),
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    /// 9223372036854775808: only valid after a minus sign.
    MaxPlusOne,
    Double(f64),
    Word(String),
    Var(String),
    Op(&'static str),
    End,
}

/// Whether `b` may be part of a variable name (as pgbench: ASCII letters,
/// digits, underscore, and any byte of a non-ASCII character).
pub fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    end: usize,
}

impl Lexer<'_> {
    fn skip_space(&mut self) {
        while self.pos < self.end {
            let b = self.src[self.pos];
            if b == b' ' || b == b'\t' || b == b'\r' || b == b'\n' || b == 0x0c {
                self.pos += 1;
            } else if b == b'\\' && self.src.get(self.pos + 1) == Some(&b'\n') {
                // A meta-command continued on the next line.
                self.pos += 2;
            } else if b == b'\\'
                && self.src.get(self.pos + 1) == Some(&b'\r')
                && self.src.get(self.pos + 2) == Some(&b'\n')
            {
                self.pos += 3;
            } else {
                break;
            }
        }
    }

    /// The next token and the offset where it starts.
    fn next(&mut self) -> Result<(Tok, usize), ExprError> {
        self.skip_space();
        let start = self.pos;
        if self.pos >= self.end {
            return Ok((Tok::End, start));
        }
        let b = self.src[self.pos];
        let at = |i: usize| self.src.get(i).copied().filter(|_| i < self.end);
        if b.is_ascii_digit() || (b == b'.' && at(self.pos + 1).is_some_and(|c| c.is_ascii_digit()))
        {
            return self.number(start).map(|t| (t, start));
        }
        if b.is_ascii_alphabetic() || b == b'_' {
            let mut i = self.pos;
            while i < self.end && (self.src[i].is_ascii_alphanumeric() || self.src[i] == b'_') {
                i += 1;
            }
            self.pos = i;
            return Ok((Tok::Word(self.text[start..i].to_ascii_lowercase()), start));
        }
        if b == b':' {
            let mut i = self.pos + 1;
            while i < self.end && is_name_byte(self.src[i]) {
                i += 1;
            }
            if i == self.pos + 1 {
                return fail(start, "a variable name must follow ':'");
            }
            self.pos = i;
            return Ok((Tok::Var(self.text[start + 1..i].to_string()), start));
        }
        let two = (b, at(self.pos + 1));
        let op: &'static str = match two {
            (b'<', Some(b'=')) => "<=",
            (b'>', Some(b'=')) => ">=",
            (b'<', Some(b'>')) => "<>",
            (b'!', Some(b'=')) => "!=",
            (b'<', Some(b'<')) => "<<",
            (b'>', Some(b'>')) => ">>",
            (b'+', _) => "+",
            (b'-', _) => "-",
            (b'*', _) => "*",
            (b'/', _) => "/",
            (b'%', _) => "%",
            (b'(', _) => "(",
            (b')', _) => ")",
            (b',', _) => ",",
            (b'<', _) => "<",
            (b'>', _) => ">",
            (b'=', _) => "=",
            (b'&', _) => "&",
            (b'|', _) => "|",
            (b'#', _) => "#",
            (b'~', _) => "~",
            _ => {
                let ch = self
                    .text
                    .get(start..)
                    .and_then(|t| t.chars().next())
                    .unwrap_or('?');
                return fail(start, format!("unexpected character '{ch}'"));
            }
        };
        self.pos += op.len();
        Ok((Tok::Op(op), start))
    }

    fn number(&mut self, start: usize) -> Result<Tok, ExprError> {
        let digits = |s: &Self, mut i: usize| {
            while i < s.end && s.src[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        let mut i = digits(self, self.pos);
        let mut is_double = false;
        if i < self.end && self.src[i] == b'.' {
            is_double = true;
            i = digits(self, i + 1);
        }
        if i < self.end && (self.src[i] == b'e' || self.src[i] == b'E') {
            let mut j = i + 1;
            if j < self.end && (self.src[j] == b'+' || self.src[j] == b'-') {
                j += 1;
            }
            if j < self.end && self.src[j].is_ascii_digit() {
                is_double = true;
                i = digits(self, j);
            }
        }
        self.pos = i;
        let text = &self.text[start..i];
        if is_double {
            let d: f64 = text.parse().map_err(|_| ExprError {
                offset: start,
                message: format!("malformed number ({text})"),
            })?;
            // Out of range either way, as strtod says: infinite, or below
            // the smallest normal double from digits that are not all zero.
            let zero_digits = text
                .split(['e', 'E'])
                .next()
                .is_some_and(|m| m.bytes().all(|b| b == b'0' || b == b'.'));
            if d.is_infinite() || (d.abs() < f64::MIN_POSITIVE && !zero_digits) {
                return fail(start, format!("double constant overflow ({text})"));
            }
            return Ok(Tok::Double(d));
        }
        match text.parse::<i64>() {
            Ok(v) => Ok(Tok::Int(v)),
            Err(_) if text.trim_start_matches('0') == "9223372036854775808" => Ok(Tok::MaxPlusOne),
            Err(_) => fail(start, format!("bigint constant overflow ({text})")),
        }
    }
}

/// Compiles the expression in `src[start..end]`. `var` gives the slot of
/// a variable name (interning it), told the byte offset where the name is
/// read (the parser checks later that something sets it); `zipf_sites`
/// counts the
/// `random_zipfian` call sites of the whole program, so that each gets
/// its own index.
pub fn parse_expr(
    src: &str,
    start: usize,
    end: usize,
    var: &mut dyn FnMut(&str, usize) -> usize,
    zipf_sites: &mut usize,
) -> Result<Expr, ExprError> {
    let mut p = Parser {
        lex: Lexer {
            src: src.as_bytes(),
            text: src,
            pos: start,
            end: end.min(src.len()),
        },
        tok: Tok::End,
        at: start,
        var,
        zipf_sites,
        nesting: 0,
    };
    p.advance()?;
    if p.tok == Tok::End {
        return fail(p.at, "an expression is missing");
    }
    let (e, _) = p.expr(0)?;
    if p.tok != Tok::End {
        return fail(p.at, format!("syntax error: unexpected {}", p.describe()));
    }
    Ok(e)
}

struct Parser<'a, 'v> {
    lex: Lexer<'a>,
    tok: Tok,
    at: usize,
    var: &'v mut dyn FnMut(&str, usize) -> usize,
    zipf_sites: &'v mut usize,
    /// Calls of [`Parser::expr`] under way: the parser's recursion.
    nesting: usize,
}

/// How deep the parser may recurse (parentheses, function calls, unary
/// operators, CASE inside one another), and how deep the tree it builds
/// may be (`1 + 1 + … + 1` is one node deeper per operator). The parser,
/// the evaluator and the tree's drop all recurse, on a worker thread's
/// stack (2 MiB): without a bound, a script of a few thousand nested
/// parentheses overflowed it and aborted the process. An unoptimised
/// build takes about 10 KB of stack per level of nesting, 3 KB per level
/// of tree; hand-written expressions nest a few levels.
pub const MAX_NESTING: usize = 64;
pub const MAX_DEPTH: usize = 256;

/// Binding powers (left, right) of the infix operators.
fn infix(tok: &Tok) -> Option<(u8, u8, Infix)> {
    Some(match tok {
        Tok::Word(w) if w == "or" => (2, 3, Infix::Or),
        Tok::Word(w) if w == "and" => (4, 5, Infix::And),
        Tok::Word(w) if w == "is" || w == "isnull" || w == "notnull" => (8, 9, Infix::Is),
        Tok::Op(op) => match *op {
            "=" => (10, 11, Infix::Cmp(BinOp::Eq)),
            "<>" | "!=" => (10, 11, Infix::Cmp(BinOp::Ne)),
            "<" => (10, 11, Infix::Cmp(BinOp::Lt)),
            "<=" => (10, 11, Infix::Cmp(BinOp::Le)),
            ">" => (10, 11, Infix::Cmp(BinOp::Gt)),
            ">=" => (10, 11, Infix::Cmp(BinOp::Ge)),
            "|" => (12, 13, Infix::Bin(BinOp::BitOr)),
            "#" => (12, 13, Infix::Bin(BinOp::BitXor)),
            "&" => (12, 13, Infix::Bin(BinOp::BitAnd)),
            "<<" => (12, 13, Infix::Bin(BinOp::Shl)),
            ">>" => (12, 13, Infix::Bin(BinOp::Shr)),
            "+" => (14, 15, Infix::Bin(BinOp::Add)),
            "-" => (14, 15, Infix::Bin(BinOp::Sub)),
            "*" => (16, 17, Infix::Bin(BinOp::Mul)),
            "/" => (16, 17, Infix::Bin(BinOp::Div)),
            "%" => (16, 17, Infix::Bin(BinOp::Mod)),
            _ => return None,
        },
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Infix {
    Or,
    And,
    Is,
    Cmp(BinOp),
    Bin(BinOp),
}

/// The operand of prefix NOT binds everything tighter than AND; of `~`,
/// everything tighter than the bitwise level; of unary `+ -`, nothing.
const NOT_OPERAND: u8 = 6;
const BITNOT_OPERAND: u8 = 13;
const UNARY_OPERAND: u8 = 18;

impl Parser<'_, '_> {
    fn advance(&mut self) -> Result<(), ExprError> {
        let (t, at) = self.lex.next()?;
        self.tok = t;
        self.at = at;
        Ok(())
    }

    fn describe(&self) -> String {
        match &self.tok {
            Tok::Int(i) => format!("number {i}"),
            Tok::MaxPlusOne => "number 9223372036854775808".to_string(),
            Tok::Double(_) => "number".to_string(),
            Tok::Word(w) => format!("'{w}'"),
            Tok::Var(v) => format!("variable :{v}"),
            Tok::Op(o) => format!("'{o}'"),
            Tok::End => "end of the expression".to_string(),
        }
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(&self.tok, Tok::Word(x) if x == w)
    }

    fn expect_op(&mut self, op: &'static str) -> Result<(), ExprError> {
        if self.tok == Tok::Op(op) {
            self.advance()
        } else {
            fail(
                self.at,
                format!("syntax error: expected '{op}', found {}", self.describe()),
            )
        }
    }

    fn expect_word(&mut self, w: &str) -> Result<(), ExprError> {
        if self.is_word(w) {
            self.advance()
        } else {
            fail(
                self.at,
                format!(
                    "syntax error: expected {}, found {}",
                    w.to_ascii_uppercase(),
                    self.describe()
                ),
            )
        }
    }

    /// An expression of operators binding at least `min`, and the depth
    /// of its tree.
    fn expr(&mut self, min: u8) -> Result<(Expr, usize), ExprError> {
        if self.nesting == MAX_NESTING {
            return fail(
                self.at,
                format!(
                    "the expression nests more than {MAX_NESTING} levels deep (parentheses, function calls, unary operators, CASE)"
                ),
            );
        }
        self.nesting += 1;
        let e = self.operators(min);
        self.nesting -= 1;
        e
    }

    /// One more node above a tree `depth` deep: the new depth, or the
    /// error past [`MAX_DEPTH`].
    fn above(&self, depth: usize) -> Result<usize, ExprError> {
        if depth >= MAX_DEPTH {
            return fail(
                self.at,
                format!(
                    "the expression is more than {MAX_DEPTH} operators deep: compute parts of it into variables with \\set"
                ),
            );
        }
        Ok(depth + 1)
    }

    fn operators(&mut self, min: u8) -> Result<(Expr, usize), ExprError> {
        let (mut lhs, mut depth) = self.prefix()?;
        // Comparisons and IS do not chain: `1 < 2 < 3` is an error.
        let mut last: Option<Infix> = None;
        while let Some((lbp, rbp, op)) = infix(&self.tok) {
            if lbp < min {
                break;
            }
            let chained = matches!(
                (last, op),
                (Some(Infix::Cmp(_)), Infix::Cmp(_)) | (Some(Infix::Is), Infix::Is)
            );
            if chained {
                return fail(
                    self.at,
                    format!(
                        "syntax error: {} cannot follow a comparison without parentheses",
                        self.describe()
                    ),
                );
            }
            let at = self.at;
            let word = if let Tok::Word(w) = &self.tok {
                w.clone()
            } else {
                String::new()
            };
            self.advance()?;
            let rhs = match op {
                Infix::Is => None,
                _ => {
                    let (rhs, d) = self.expr(rbp)?;
                    depth = depth.max(d);
                    Some(Box::new(rhs))
                }
            };
            depth = self.above(depth)?;
            lhs = match (op, rhs) {
                (Infix::Or, Some(rhs)) => Expr::Or(Box::new(lhs), rhs),
                (Infix::And, Some(rhs)) => Expr::And(Box::new(lhs), rhs),
                (Infix::Cmp(b) | Infix::Bin(b), Some(rhs)) => Expr::Bin(b, Box::new(lhs), rhs),
                _ => match word.as_str() {
                    "isnull" => Expr::Is(Box::new(lhs), IsTest::Null, false),
                    "notnull" => Expr::Is(Box::new(lhs), IsTest::Null, true),
                    _ => {
                        let negated = self.is_word("not");
                        if negated {
                            self.advance()?;
                        }
                        let test = match &self.tok {
                            Tok::Word(w) if w == "null" => IsTest::Null,
                            Tok::Word(w) if w == "true" => IsTest::True,
                            Tok::Word(w) if w == "false" => IsTest::False,
                            _ => {
                                return fail(
                                    self.at.max(at),
                                    format!(
                                        "syntax error: IS takes NULL, TRUE or FALSE, found {}",
                                        self.describe()
                                    ),
                                );
                            }
                        };
                        self.advance()?;
                        Expr::Is(Box::new(lhs), test, negated)
                    }
                },
            };
            last = Some(op);
        }
        Ok((lhs, depth))
    }

    /// An operand, and the depth of its tree.
    fn prefix(&mut self) -> Result<(Expr, usize), ExprError> {
        let at = self.at;
        let tok = std::mem::replace(&mut self.tok, Tok::End);
        match tok {
            Tok::Int(i) => {
                self.advance()?;
                Ok((Expr::Const(Value::Int(i)), 1))
            }
            Tok::Double(d) => {
                self.advance()?;
                Ok((Expr::Const(Value::Double(d)), 1))
            }
            Tok::MaxPlusOne => fail(at, "bigint constant overflow (9223372036854775808)"),
            Tok::Var(name) => {
                self.advance()?;
                Ok((Expr::Var((self.var)(&name, at)), 1))
            }
            Tok::Op("(") => {
                self.advance()?;
                let e = self.expr(0)?;
                self.expect_op(")")?;
                Ok(e)
            }
            Tok::Op("+") => {
                self.advance()?;
                self.expr(UNARY_OPERAND)
            }
            Tok::Op("-") => {
                self.advance()?;
                if self.tok == Tok::MaxPlusOne {
                    self.advance()?;
                    return Ok((Expr::Const(Value::Int(i64::MIN)), 1));
                }
                // As pgbench: 0 - x, so -(0.0) is 0 and -(i64::MIN) overflows.
                let (e, d) = self.expr(UNARY_OPERAND)?;
                let zero = Box::new(Expr::Const(Value::Int(0)));
                Ok((Expr::Bin(BinOp::Sub, zero, Box::new(e)), self.above(d)?))
            }
            Tok::Op("~") => {
                self.advance()?;
                let (e, d) = self.expr(BITNOT_OPERAND)?;
                Ok((Expr::BitNot(Box::new(e)), self.above(d)?))
            }
            Tok::Word(w) => match w.as_str() {
                "true" => {
                    self.advance()?;
                    Ok((Expr::Const(Value::Bool(true)), 1))
                }
                "false" => {
                    self.advance()?;
                    Ok((Expr::Const(Value::Bool(false)), 1))
                }
                "null" => {
                    self.advance()?;
                    Ok((Expr::Const(Value::Null), 1))
                }
                "not" => {
                    self.advance()?;
                    let (e, d) = self.expr(NOT_OPERAND)?;
                    Ok((Expr::Not(Box::new(e)), self.above(d)?))
                }
                "case" => {
                    self.advance()?;
                    self.case(at)
                }
                _ => {
                    self.advance()?;
                    if self.tok != Tok::Op("(") {
                        return fail(
                            at,
                            format!(
                                "syntax error: unexpected word '{w}' (a variable is written :{w}, a function call {w}(...))"
                            ),
                        );
                    }
                    self.call(&w, at)
                }
            },
            other => {
                self.tok = other;
                fail(at, format!("syntax error: unexpected {}", self.describe()))
            }
        }
    }

    fn case(&mut self, at: usize) -> Result<(Expr, usize), ExprError> {
        let mut arms = Vec::new();
        let mut depth = 1;
        while self.is_word("when") {
            self.advance()?;
            let (cond, c) = self.expr(0)?;
            self.expect_word("then")?;
            let (then, t) = self.expr(0)?;
            depth = depth.max(c).max(t);
            arms.push((cond, then));
        }
        if arms.is_empty() {
            return fail(at, "syntax error: CASE needs at least one WHEN … THEN …");
        }
        let otherwise = if self.is_word("else") {
            self.advance()?;
            let (e, d) = self.expr(0)?;
            depth = depth.max(d);
            e
        } else {
            Expr::Const(Value::Null)
        };
        self.expect_word("end")?;
        Ok((Expr::Case(arms, Box::new(otherwise)), self.above(depth)?))
    }

    fn call(&mut self, name: &str, at: usize) -> Result<(Expr, usize), ExprError> {
        let Some(&(fname, callee, arity)) = FUNCTIONS.iter().find(|f| f.0 == name) else {
            return fail(
                at,
                format!(
                    "unknown function '{name}': pgbench's functions are {}",
                    function_names().join(", ")
                ),
            );
        };
        self.expect_op("(")?;
        let mut args = Vec::new();
        let mut depth = 1;
        if self.tok != Tok::Op(")") {
            loop {
                let (arg, d) = self.expr(0)?;
                depth = depth.max(d);
                args.push(arg);
                if self.tok == Tok::Op(",") {
                    self.advance()?;
                    continue;
                }
                break;
            }
        }
        self.expect_op(")")?;
        let n = args.len();
        let ok = match arity {
            Arity::Exactly(k) => n == k,
            Arity::Some => n >= 1,
            Arity::Seeded(lo, hi) => (lo..=hi).contains(&n),
        };
        if !ok {
            let want = match arity {
                Arity::Exactly(0) => "no argument".to_string(),
                Arity::Exactly(1) => "1 argument".to_string(),
                Arity::Exactly(k) => format!("{k} arguments"),
                Arity::Some => "at least 1 argument".to_string(),
                Arity::Seeded(lo, hi) => format!("{lo} or {hi} arguments"),
            };
            return fail(at, format!("{fname}() takes {want}, not {n}"));
        }
        if let Arity::Seeded(_, hi) = arity
            && n < hi
        {
            args.push(Expr::Var((self.var)("default_seed", at)));
        }
        let depth = self.above(depth)?;
        let e = match callee {
            Callee::Plain(f) => Expr::Func(f, args),
            Callee::Debug => Expr::Debug(Box::new(args.remove(0))),
            Callee::Zipf => {
                let site = *self.zipf_sites;
                *self.zipf_sites += 1;
                let mut it = args.into_iter();
                match (it.next(), it.next(), it.next()) {
                    (Some(a), Some(b), Some(c)) => Expr::Zipf(Box::new([a, b, c]), site),
                    _ => return fail(at, "random_zipfian() takes 3 arguments"),
                }
            }
        };
        Ok((e, depth))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Expr, ExprError> {
        let mut names: Vec<String> = Vec::new();
        let mut intern = |n: &str, _at: usize| match names.iter().position(|x| x == n) {
            Some(i) => i,
            None => {
                names.push(n.to_string());
                names.len() - 1
            }
        };
        let mut sites = 0;
        parse_expr(text, 0, text.len(), &mut intern, &mut sites)
    }

    fn error(text: &str) -> (usize, String) {
        let e = parse(text).expect_err(text);
        (e.offset, e.message)
    }

    #[test]
    fn precedence_follows_pgbench() {
        use BinOp::*;
        let c = |i| Box::new(Expr::Const(Value::Int(i)));
        assert_eq!(
            parse("1 + 2 * 3").unwrap(),
            Expr::Bin(Add, c(1), Box::new(Expr::Bin(Mul, c(2), c(3))))
        );
        assert_eq!(
            parse("1 << 3 + 1").unwrap(),
            Expr::Bin(Shl, c(1), Box::new(Expr::Bin(Add, c(3), c(1))))
        );
        assert_eq!(
            parse("~1 + 1").unwrap(),
            Expr::BitNot(Box::new(Expr::Bin(Add, c(1), c(1))))
        );
        assert_eq!(
            parse("~1 | 2").unwrap(),
            Expr::Bin(BitOr, Box::new(Expr::BitNot(c(1))), c(2))
        );
        assert!(matches!(
            parse("not 1 < 2 and true").unwrap(),
            Expr::And(..)
        ));
        assert!(matches!(parse("not false is true").unwrap(), Expr::Not(..)));
        assert!(matches!(parse("1 = 1 is true").unwrap(), Expr::Is(..)));
        assert_eq!(
            parse("-9223372036854775808").unwrap(),
            Expr::Const(Value::Int(i64::MIN))
        );
        assert_eq!(parse("1e3").unwrap(), Expr::Const(Value::Double(1000.0)));
        assert_eq!(parse("1.").unwrap(), Expr::Const(Value::Double(1.0)));
        assert_eq!(parse(".5").unwrap(), Expr::Const(Value::Double(0.5)));
        assert!(parse("CASE WHEN :a THEN 1 ELSE 2 END").is_ok());
        assert!(parse("Random(1, 10)").is_ok());
        assert!(parse("1 +\\\n 2").is_ok(), "a continued line");
    }

    #[test]
    fn errors_say_where_and_what() {
        // As pgbench: comparisons do not chain.
        assert_eq!(error("1 < 2 < 3").0, 6);
        assert!(error("1 = 1 = true").1.contains("comparison"));
        let (at, msg) = error("abs(1) + foo(1)");
        assert_eq!(at, 9);
        assert!(msg.contains("unknown function 'foo'"), "{msg}");
        assert!(msg.contains("random_zipfian"), "{msg}");
        assert!(
            error("abs(1, 2)")
                .1
                .contains("abs() takes 1 argument, not 2")
        );
        assert!(error("least()").1.contains("at least 1"));
        assert!(error("hash(1, 2, 3)").1.contains("1 or 2"));
        assert!(
            error("9223372036854775808")
                .1
                .contains("bigint constant overflow")
        );
        assert!(
            error("99999999999999999999")
                .1
                .contains("bigint constant overflow")
        );
        assert!(error("1e400").1.contains("double constant overflow"));
        assert!(error("1.0e-400").1.contains("double constant overflow"));
        // Subnormal: pgbench 15.20 says overflow too.
        assert!(error("1e-320").1.contains("double constant overflow"));
        assert!(parse("0.0e-400").is_ok());
        assert_eq!(error("2 ^ 3"), (2, "unexpected character '^'".to_string()));
        assert!(error("(1 + 2").1.contains("expected ')'"));
        assert!(error("1 2").1.contains("unexpected number 2"));
        assert!(error("aid + 1").1.contains(":aid"));
        assert!(error("").1.contains("missing"));
        assert!(error("1 is 2").1.contains("NULL, TRUE or FALSE"));
        assert!(error("case 1 end").1.contains("WHEN"));
    }

    #[test]
    fn seeds_and_zipfian_sites_are_filled_in() {
        let mut names: Vec<String> = Vec::new();
        let mut intern = |n: &str, _at: usize| {
            names.push(n.to_string());
            names.len() - 1
        };
        let mut sites = 0;
        let text = "hash(1) + random_zipfian(1, 10, 0.99) + random_zipfian(1, 5, 2)";
        let e = parse_expr(text, 0, text.len(), &mut intern, &mut sites).unwrap();
        assert_eq!(sites, 2);
        assert_eq!(names, ["default_seed"]);
        let Expr::Bin(_, left, _) = e else { panic!() };
        let Expr::Bin(_, hash, _) = *left else {
            panic!()
        };
        assert_eq!(
            *hash,
            Expr::Func(
                Func::HashMurmur2,
                vec![Expr::Const(Value::Int(1)), Expr::Var(0)]
            )
        );
    }
}
