//! pgbench's script language (`src/workload/pgbench/script/`) on input
//! no one would write: arbitrary text, real scripts cut and spliced at
//! random, expressions built at random from the grammar, and extremes
//! (the edges of bigint, division by zero, nesting thousands deep).
//! Compiling must give a program or an error that names a line and
//! column (a usage error, exit 2); evaluating, a value or an error (the
//! run's script error): never a panic, never an overflowed stack.

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use ysql_bench::workload::pgbench::script::eval::{Env, Value, eval};
use ysql_bench::workload::pgbench::script::exec::Var;
use ysql_bench::workload::pgbench::script::expr::{function_names, parse_expr};
use ysql_bench::workload::pgbench::script::parse::{Compiler, ParseError, Program};
use ysql_bench::workload::pgbench::script::{BUILTINS, TPCB_LIKE};

/// A script that uses most of the language: meta-commands, branches,
/// `\gset`, quotes of every kind, comments, casts, array subscripts.
const RICH: &str = r#"-- a comment
\set n random(1, 1000 * :scale) + abs(-3) % 7
\set d random_zipfian(1, 100, 1.5) * 2.0 / pi()
\set g random_gaussian(1, 10, 2.5) + random_exponential(1, 10, 3)
\set h hash(:n, 5) # hash_fnv1a(1) # hash_murmur2(2, 3) << 2 >> 1
\set p permute(:n, 1000, 7) + greatest(1, 2.5, :n) - least(3, :n)
\if :n > 10 and not (:n is null) or case when :n = 1 then true else false end
  SELECT ':q', $$ :q $$, "col:q", x::int, a[1:2], :n /* :n */ FROM t WHERE k = :n \gset r_
\elif :n <> 2
  \sleep 1 ms
\else
  \sleep :n us
\endif
BEGIN;
UPDATE t SET v = v + :d WHERE k = :p;
END;
\set e sqrt(pow(2, 10)) + ln(exp(1)) + int(3.9) + double(2)
"#;

/// The scripts that mutations start from.
fn seeds() -> Vec<&'static str> {
    let mut all: Vec<&str> = BUILTINS.iter().map(|b| b.1).collect();
    all.push(TPCB_LIKE);
    all.push(RICH);
    all
}

fn compile(text: &str) -> Result<Program, ParseError> {
    let mut c = Compiler::new();
    c.add("s", "s.sql", text, 1)?;
    c.finish()
}

/// Compiles `text` and checks that an error names a place in it.
fn compiles_or_says_where(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = compile(text) {
        let lines = text.split('\n').count();
        prop_assert_eq!(&e.file, "s.sql");
        prop_assert!(
            (1..=lines).contains(&e.line),
            "line {} of {}: {}",
            e.line,
            lines,
            e
        );
        prop_assert!(e.column >= 1, "{}", e);
        prop_assert!(!e.message.is_empty());
    }
    Ok(())
}

/// A random edit of a script: cut a range, insert a snippet, repeat a
/// range, or replace a character.
#[derive(Clone, Debug)]
enum Edit {
    Cut(usize, usize),
    Insert(usize, String),
    Repeat(usize, usize),
    Replace(usize, char),
}

/// Snippets of the language's own syntax, so that edits make text that
/// is nearly a script, where the parser's corners are.
const SNIPPETS: &[&str] = &[
    "\\",
    "\\set ",
    "\\if ",
    "\\elif ",
    "\\else",
    "\\endif",
    "\\gset",
    "\\aset",
    "\\sleep ",
    "\\setshell",
    "\\startpipeline",
    ":",
    "::",
    ":x",
    ": ",
    ";",
    "'",
    "\"",
    "$$",
    "$a$",
    "--",
    "/*",
    "*/",
    "(",
    ")",
    "[",
    "]",
    "\n",
    "\\\n",
    " ",
    "9223372036854775808",
    "-9223372036854775808",
    "1e400",
    "random(",
    "case when",
    " then ",
    " end",
    ",",
    "é",
    "\0",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(at, n)| Edit::Cut(at, n)),
        (
            any::<usize>(),
            prop_oneof![
                prop::sample::select(SNIPPETS).prop_map(str::to_string),
                ".{0,8}",
            ]
        )
            .prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), 1usize..60).prop_map(|(at, n)| Edit::Repeat(at, n)),
        (any::<usize>(), any::<char>()).prop_map(|(at, c)| Edit::Replace(at, c)),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(s: &str, at: usize) -> usize {
    let mut i = at % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut s = text.to_string();
    for e in edits {
        match e {
            Edit::Cut(at, n) => {
                let a = boundary(&s, *at);
                let b = boundary(&s, a + n);
                if b >= a {
                    s.replace_range(a..b, "");
                }
            }
            Edit::Insert(at, t) => {
                let a = boundary(&s, *at);
                s.insert_str(a, t);
            }
            Edit::Repeat(at, n) => {
                let a = boundary(&s, *at);
                let b = boundary(&s, a + n);
                if b >= a {
                    let piece = s[a..b].to_string();
                    s.insert_str(b, &piece);
                }
            }
            Edit::Replace(at, c) => {
                let a = boundary(&s, *at);
                if let Some(old) = s[a..].chars().next() {
                    s.replace_range(a..a + old.len_utf8(), &c.to_string());
                }
            }
        }
    }
    s
}

/// Leaves of random expressions: the edges of bigint and of doubles,
/// the variables `:x` (5), `:s` (text "abc"), `:big` (i64::MAX) and
/// `:nothing` (unset).
const LEAVES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "63",
    "64",
    "1000",
    "9223372036854775807",
    "-9223372036854775808",
    "0.0",
    "-0.0",
    "1.5",
    "1e308",
    "-1e308",
    "1e-308",
    ":x",
    ":s",
    ":big",
    ":nothing",
    "true",
    "false",
    "null",
    "pi()",
];

const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "=", "<>", "!=", "<", "<=", ">", ">=", "&", "|", "#", "<<", ">>",
    "and", "or",
];

/// Expression text drawn from the grammar, up to a few levels deep.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(LEAVES).prop_map(str::to_string),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>()
            .prop_filter("finite", |d| d.is_finite())
            .prop_map(|d| format!("{d:e}")),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(BINARY), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (
                prop::sample::select(&["-", "+", "not ", "~"][..]),
                inner.clone()
            )
                .prop_map(|(op, a)| format!("{op}({a})")),
            (
                inner.clone(),
                prop::sample::select(&["is null", "is not null", "is true", "isnull"][..])
            )
                .prop_map(|(a, t)| format!("({a} {t})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, t, e)| format!("case when {c} then {t} else {e} end")),
            (
                prop::sample::select(
                    function_names()
                        .into_iter()
                        .filter(|f| *f != "debug")
                        .collect::<Vec<_>>()
                ),
                prop::collection::vec(inner, 0..4)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
        ]
    })
}

/// Parses and evaluates `text` as the interpreter would: a value, or the
/// parser's or the evaluator's error as text.
fn evaluate(text: &str) -> Result<Value, String> {
    let mut names: Vec<String> = ["x", "s", "big", "nothing", "default_seed"]
        .map(String::from)
        .to_vec();
    let mut intern = |n: &str, _at: usize| match names.iter().position(|x| x == n) {
        Some(i) => i,
        None => {
            names.push(n.to_string());
            names.len() - 1
        }
    };
    let mut sites = 0;
    let e = parse_expr(text, 0, text.len(), &mut intern, &mut sites)
        .map_err(|e| format!("parse: {}", e.message))?;
    let mut vars = vec![
        Var::Value(Value::Int(5)),
        Var::Text("abc".to_string()),
        Var::Value(Value::Int(i64::MAX)),
        Var::Unset,
        Var::Value(Value::Int(0)),
    ];
    vars.resize_with(names.len(), || Var::Unset);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut zipf = vec![None; sites];
    let mut env = Env {
        vars: &vars,
        names: &names,
        rng: &mut rng,
        zipf: &mut zipf,
        debug_at: "test",
    };
    eval(&e, &mut env).map_err(|e| e.0)
}

proptest! {
    #[test]
    fn arbitrary_text_compiles_or_says_where_it_is_wrong(text in any::<String>()) {
        compiles_or_says_where(&text)?;
    }

    #[test]
    fn text_of_script_syntax_compiles_or_says_where_it_is_wrong(
        pieces in prop::collection::vec(
            prop_oneof![prop::sample::select(SNIPPETS).prop_map(str::to_string), "[a-z0-9 ]{0,6}"],
            0..60,
        ),
    ) {
        compiles_or_says_where(&pieces.concat())?;
    }

    #[test]
    fn real_scripts_cut_and_spliced_compile_or_say_where(
        which in 0usize..5,
        edits in prop::collection::vec(edit(), 1..8),
    ) {
        let seeds = seeds();
        let text = apply(seeds[which % seeds.len()], &edits);
        compiles_or_says_where(&text)?;
    }

    #[test]
    fn random_expressions_evaluate_or_fail_cleanly(text in expression()) {
        let _ = evaluate(&text);
    }

    #[test]
    fn random_expressions_compile_in_a_set_or_fail_cleanly(text in expression()) {
        compiles_or_says_where(&format!("\\set v {text}\nselect :v;\n"))?;
    }
}

/// The real scripts compile as they are (the mutations start from text
/// that works).
#[test]
fn the_seed_scripts_compile() {
    for s in seeds() {
        compile(s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    }
}

/// A Unicode space at the end of an SQL command, right after a variable:
/// the byte scanner takes it into the name (bytes above 0x7f are name
/// bytes, as in the server's scanner), so the text must not be trimmed of
/// it either. Found by the property test above (`":\u{2000}"`), which
/// panicked on a subtraction that overflowed.
#[test]
fn a_unicode_space_after_a_variable_does_not_panic() {
    for text in [":\u{2000}", "select :a\u{2000}", "select 1, :x\u{3000};\n"] {
        compiles_or_says_where(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

/// A segment of nothing but ASCII white space after the last `;`,
/// vertical tab included, is no statement: pgbench skips it too.
#[test]
fn trailing_white_space_makes_no_statement() {
    for tail in ["\x0B\n", " \t\x0C\r\n", "\x0B"] {
        let text = format!("select 1;{tail}");
        let program = compile(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let again = compile("select 1;\n").unwrap();
        assert_eq!(
            format!("{:?}", program.scripts),
            format!("{:?}", again.scripts),
            "{text:?} makes another program than without its tail"
        );
    }
}

/// Overflow and division by zero are the script's errors, as pgbench
/// makes them, not panics or wrapped values.
#[test]
fn bigint_edges_and_division_by_zero_are_errors() {
    for text in [
        "9223372036854775807 + 1",
        "-9223372036854775808 - 1",
        "9223372036854775807 * 2",
        "-9223372036854775808 * -1",
        "-9223372036854775808 / -1",
        "-(-9223372036854775808)",
        "1 / 0",
        "1 % 0",
        "mod(1, 0)",
        "int(1e300)",
        "int(-1e300)",
        "random(1, 0)",
        "random(-9223372036854775808, 9223372036854775807)",
        "random_gaussian(1, 10, 1)",
        "random_exponential(1, 10, 0)",
        "random_zipfian(1, 10, 1)",
        "permute(1, 0)",
        ":s + 1",
        ":nothing",
    ] {
        assert!(evaluate(text).is_err(), "{text} gives {:?}", evaluate(text));
    }
    // What the edges do give, as pgbench gives them.
    assert_eq!(
        evaluate("abs(-9223372036854775808)"),
        Ok(Value::Int(i64::MIN)),
        "pgbench's rule"
    );
    assert_eq!(
        evaluate("-9223372036854775808 % -1"),
        Ok(Value::Int(0)),
        "pgbench's rule"
    );
    // Shifts of 64 and more, and negative ones, give what they give
    // without a panic.
    for text in ["1 << 64", "1 >> 64", "1 << -1", "-1 >> 1000"] {
        let _ = evaluate(text);
    }
}

/// Expressions `n` levels deep, of each shape that recurses.
fn deep(n: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "parentheses",
            format!("{}1{}", "(".repeat(n), ")".repeat(n)),
        ),
        ("unary minus", format!("{}1", "-".repeat(n))),
        ("not", format!("{}true", "not ".repeat(n))),
        (
            "a function",
            format!("{}1{}", "abs(".repeat(n), ")".repeat(n)),
        ),
        (
            "case",
            format!("{}1{}", "case when true then ".repeat(n), " end".repeat(n)),
        ),
        ("a sum", format!("1{}", " + 1".repeat(n))),
        (
            "sums in parentheses",
            format!("{}1{}", "(".repeat(n / 4), " + 1)".repeat(n / 4)),
        ),
        ("and", format!("true{}", " and true".repeat(n))),
    ]
}

/// Runs `f` on a thread with the stack of a worker thread (2 MiB).
fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("a thread")
        .join()
        .expect("no panic")
}

/// Bug: the parser, the evaluator and the tree's drop recurse without a
/// bound, so that a few thousand nested parentheses (or a sum of 100,000
/// terms) overflowed the stack and aborted the process: a script file
/// could crash the tool. Now a parse error that says how deep is too deep.
#[test]
fn an_expression_nested_too_deeply_is_a_parse_error_not_a_stack_overflow() {
    for (shape, text) in deep(100_000) {
        let script = format!("\\set v {text}\nselect :v;\n");
        let e = on_worker_stack(move || compile(&script).map(drop).map_err(|e| e.to_string()));
        let e = e.expect_err(shape);
        assert!(
            e.contains("levels deep") || e.contains("operators deep"),
            "{shape}: {e}"
        );
    }
}

/// Up to the limits, every shape parses and evaluates on a worker's stack,
/// even in an unoptimised build.
#[test]
fn expressions_up_to_the_limits_evaluate_on_a_worker_stack() {
    use ysql_bench::workload::pgbench::script::expr::{MAX_DEPTH, MAX_NESTING};
    for (shape, text) in deep(MAX_NESTING - 1) {
        let r = on_worker_stack(move || evaluate(&text));
        assert!(r.is_ok(), "{shape}: {r:?}");
    }
    let sum = format!("1{}", " + 1".repeat(MAX_DEPTH - 1));
    let r = on_worker_stack(move || evaluate(&sum));
    assert_eq!(r, Ok(Value::Int(MAX_DEPTH as i64)));
    let one_more = format!("1{}", " + 1".repeat(MAX_DEPTH));
    let r = on_worker_stack(move || evaluate(&one_more));
    assert!(r.is_err_and(|e| e.contains("operators deep")));
    let nested = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
    let r = on_worker_stack(move || evaluate(&nested));
    assert!(r.is_err_and(|e| e.contains("levels deep")));
}
