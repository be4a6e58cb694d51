//! `-o script`: pgbench-compatible custom scripts (`--script FILE[@WEIGHT]`,
//! `--builtin NAME[@WEIGHT]`, `-D NAME=VALUE`), with everything else the
//! tool measures: percentiles per script and per statement, intervals,
//! `--rate` from the scheduled start, retries, JSON and pictures.
//!
//! Each unit is one pgbench transaction: a script drawn by weight (in
//! `stage`, untimed, with the seed of its random draws, so that a retry
//! draws the same values), then run by the interpreter (`execute`, timed).
//! Every script is a transaction type of its own, so a weighted mix is
//! reported per script; every SQL command and `\sleep` keeps its latency
//! (`--per-statement`, and always in JSON), named after its script and
//! line.
//!
//! The files: [`parse`] reads scripts into commands (file:line:column
//! errors, exit 2 before any connection, among them a variable that no
//! line of any script, no `-D` and nothing automatic can set; [`columns`]
//! says which variables a `\gset` can set), [`expr`] is pgbench's
//! expression grammar and [`eval`] its semantics and functions, [`exec`]
//! the interpreter, [`bind`] how variables go to the server (a `\gset`'s
//! columns come back as text, read as [`eval::parse_text_value`] says).
//! pgbench's built-in scripts are here as text, written from the
//! transactions pgbench's documentation describes; `-o pgbench-init`
//! makes their tables ([`super::init`]).
//!
//! A server's error fails the unit and is counted by SQLSTATE, as in any
//! workload. A script's own error at run time (a variable not set yet, an
//! expression's error, a `\gset` without its one row) stops the run at
//! the first, as pgbench aborts the client on it: repeated, it would fail
//! as fast as the client can loop, without a server to wait for.
//!
//! Scripts work on whatever tables they name: there is no table set to
//! create or check, and the tool's table safety does not apply to them (as
//! with pgbench, a script may write where its author says).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use futures_util::future::Either;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use crate::db::dialect::Flavor;
use crate::db::sql::TableName;
use crate::db::unnamed;
use crate::db::wire::WireConn;
use crate::error::{Error, Result};
use crate::workload::{
    BoxFuture, DynOperation, Facts, Operation, Outcome, Role, Settings, Spec, StatementTimes,
    TableSet, Workload, worker_seed,
};

pub mod bind;
pub mod columns;
pub mod eval;
pub mod exec;
pub mod expr;
pub mod parse;

use exec::{Folds, Interp, Var};
use parse::{Compiler, Program};

/// PostgreSQL's limit on the parameters of one statement.
pub const MAX_PARAMS: usize = 65_535;

/// pgbench's TPC-B-like transaction (`--builtin tpcb-like`), as its
/// documentation describes it: an account, a teller, a branch and a
/// delta drawn at random; the three balances changed by the delta, the
/// account's read back, a history row written; one transaction.
pub const TPCB_LIKE: &str = "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

/// `--builtin simple-update`: the TPC-B-like transaction without the
/// teller and branch updates.
pub const SIMPLE_UPDATE: &str = "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

/// `--builtin select-only`: one account read.
pub const SELECT_ONLY: &str = "\
\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

/// pgbench's built-in scripts, by name.
pub const BUILTINS: [(&str, &str); 3] = [
    ("tpcb-like", TPCB_LIKE),
    ("simple-update", SIMPLE_UPDATE),
    ("select-only", SELECT_ONLY),
];

/// The script flags.
#[derive(Clone, Debug, Default)]
pub struct ScriptSettings {
    /// `--script FILE[@WEIGHT]`, as given.
    pub scripts: Vec<String>,
    /// `--builtin NAME[@WEIGHT]`, as given.
    pub builtins: Vec<String>,
    /// `-D NAME=VALUE`, in order (a later one wins).
    pub defines: Vec<(String, String)>,
    /// `-s`: pgbench-init's scale, and `:scale` of custom scripts.
    pub scale: Option<u64>,
}

/// `-o script`.
pub static SPEC: Spec = Spec {
    name: "script",
    aliases: &[],
    about: "pgbench-compatible scripts: --script FILE[@W], --builtin tpcb-like|simple-update|select-only[@W], -D NAME=VALUE",
    role: Role::Query,
    paced: true,
    writes: true,
    drops: false,
    unit: "txn",
    units: "txns",
    build,
};

/// Splits `ARG@WEIGHT` (weight 1 when absent). A path may hold an `@`:
/// only digits after the last one make a weight.
fn split_weight(arg: &str, flag: &str) -> Result<(String, u64)> {
    if let Some((name, w)) = arg.rsplit_once('@')
        && !w.is_empty()
        && w.bytes().all(|b| b.is_ascii_digit())
    {
        let weight: u64 = w
            .parse()
            .ok()
            .filter(|&w| w <= i32::MAX as u64)
            .ok_or_else(|| {
                Error::usage(format!(
                    "{flag} {arg}: the weight {w} is too large (at most {})",
                    i32::MAX
                ))
            })?;
        return Ok((name.to_string(), weight));
    }
    Ok((arg.to_string(), 1))
}

/// A builtin by its name or an unambiguous beginning of it, as pgbench.
fn find_builtin(name: &str) -> Result<(&'static str, &'static str)> {
    let names: Vec<&str> = BUILTINS.iter().map(|b| b.0).collect();
    if name == "list" {
        return Err(Error::usage(format!(
            "the built-in scripts are {}",
            names.join(", ")
        )));
    }
    if let Some(b) = BUILTINS.iter().find(|b| b.0 == name) {
        return Ok(*b);
    }
    let matches: Vec<&(&str, &str)> = BUILTINS.iter().filter(|b| b.0.starts_with(name)).collect();
    match matches.as_slice() {
        [one] if !name.is_empty() => Ok(**one),
        [] | [_] => Err(Error::usage(format!(
            "--builtin {name}: no such built-in script; use {}",
            names.join(", ")
        ))),
        many => Err(Error::usage(format!(
            "--builtin {name} is ambiguous: it begins {}",
            many.iter().map(|b| b.0).collect::<Vec<_>>().join(" and ")
        ))),
    }
}

/// Whether a `-D`, `\set` or `\gset` name is one pgbench 15 accepts:
/// ASCII letters, digits and `_` and any non-ASCII character, not
/// starting with a digit.
pub fn valid_name(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| !b.is_ascii_digit()) && name.bytes().all(expr::is_name_byte)
}

/// A name of a transaction type that no other script of the run has:
/// leaked, as the reports keep type names as `&'static str`.
fn unique_name(base: &str, taken: &[&'static str]) -> &'static str {
    let mut name = base.to_string();
    let mut n = 2;
    while taken.contains(&name.as_str()) {
        name = format!("{base}#{n}");
        n += 1;
    }
    Box::leak(name.into_boxed_str())
}

/// Reads and compiles the scripts of the flags; a usage error names the
/// file, line and column of anything wrong.
fn compile(s: &ScriptSettings) -> Result<(Program, bool)> {
    let mut c = Compiler::new();
    for (name, _) in &s.defines {
        if !valid_name(name) {
            return Err(Error::usage(format!(
                "-D {name}=...: '{name}' is not a variable name (letters, digits and _, not starting with a digit)"
            )));
        }
        c.define(name);
    }
    let mut taken: Vec<&'static str> = Vec::new();
    let mut builtin_used = false;
    for arg in &s.scripts {
        let (path, weight) = split_weight(arg, "--script")?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::usage(format!("--script {path}: cannot read the file: {e}")))?;
        let base = std::path::Path::new(&path)
            .file_name()
            .map_or(path.clone(), |f| f.to_string_lossy().into_owned());
        let name = unique_name(&base, &taken);
        taken.push(name);
        c.add(name, &path, &text, weight)
            .map_err(|e| Error::usage(e.to_string()))?;
    }
    for arg in &s.builtins {
        let (which, weight) = split_weight(arg, "--builtin")?;
        let (bname, text) = find_builtin(&which)?;
        let name = unique_name(bname, &taken);
        taken.push(name);
        builtin_used = true;
        c.add(name, &format!("builtin {bname}"), text, weight)
            .map_err(|e| Error::usage(e.to_string()))?;
    }
    let program = c.finish().map_err(|e| Error::usage(e.to_string()))?;
    if program.scripts.is_empty() {
        return Err(Error::usage(
            "-o script needs a script: give --script FILE or --builtin tpcb-like (or simple-update, select-only)",
        ));
    }
    if program.scripts.iter().map(|s| s.weight).sum::<u64>() == 0 {
        return Err(Error::usage(
            "the scripts' weights add up to 0: give at least one a weight above 0 (FILE@1)",
        ));
    }
    Ok((program, builtin_used))
}

fn build(spec: &'static Spec, s: &Settings) -> Result<Box<dyn Workload>> {
    let (program, builtin_used) = compile(&s.family::<ScriptSettings>())?;
    let simple = s.protocol == crate::db::wire::Protocol::Simple;
    if let Some(at) = program.compound.as_ref().filter(|_| !simple) {
        // As pgbench -M prepared and extended: the server parses one
        // statement at a time.
        return Err(Error::usage(format!(
            "{at}: statements joined by \\; go as one simple query, which the extended protocol cannot carry: give -M simple (pgbench's default) or end each statement with ;"
        )));
    }
    if let Some(at) = program.pipeline.as_ref().filter(|_| simple) {
        // As pgbench -M simple: a pipeline needs the extended protocol.
        return Err(Error::usage(format!(
            "{at}: \\startpipeline needs the extended protocol, and -M simple sends simple queries: give -M prepared or extended"
        )));
    }
    let table = TableName::new(&guess_table(&program, builtin_used))?;
    let mut cumulative = Vec::with_capacity(program.scripts.len());
    let mut acc = 0u64;
    for sc in &program.scripts {
        acc += sc.weight;
        cumulative.push(acc);
    }
    let facts = Facts {
        // Each script is a type of its own.
        types: program.scripts.iter().map(|s| s.name).collect(),
        // The tables are the user's: none is created or checked.
        needs_tables: false,
        batch_text: program
            .scripts
            .iter()
            .map(|s| format!("{}@{}", s.name, s.weight))
            .collect::<Vec<_>>()
            .join(", "),
        histogram_note: "transaction (one run of a script)".to_string(),
        ..Facts::new(spec, table)
    };
    Ok(Box::new(ScriptRun {
        spec,
        facts,
        straight: exec::straight_scripts(&program, s.protocol).into(),
        program: Arc::new(program),
        cumulative: cumulative.into(),
        builtin_used,
        settings: s.clone(),
        scale: Arc::new(AtomicI64::new(
            s.family::<ScriptSettings>().scale.unwrap_or(1) as i64,
        )),
        shown: FirstErrors::default(),
        folds: Folds::default(),
    }))
}

/// The table a run reports as its own (the JSON's `table`,
/// `--show-rowsize`): pgbench_accounts for the builtins, else the first
/// table the first SQL command names after FROM, UPDATE or INTO.
fn guess_table(program: &Program, builtin_used: bool) -> String {
    const DEFAULT: &str = "pgbench_accounts";
    if builtin_used {
        return DEFAULT.to_string();
    }
    let first = program
        .scripts
        .iter()
        .flat_map(|s| &s.commands)
        .find_map(|c| match c {
            parse::Command::Sql(sql) => Some(sql.text.as_str()),
            _ => None,
        });
    let Some(text) = first else {
        return DEFAULT.to_string();
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| ["from", "update", "into"].contains(&w[0].to_ascii_lowercase().as_str()))
        .map(|w| {
            w[1].trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .to_string()
        })
        .filter(|t| !t.is_empty() && t.len() <= crate::db::sql::MAX_IDENTIFIER_LEN)
        .unwrap_or_else(|| DEFAULT.to_string())
}

/// sysbench's query class of a script statement, whose name is
/// "script:line TEXT": read, write or other, by the statement's verb. None
/// for a name of another shape (another workload's statement kind).
pub fn query_class(name: &str) -> Option<&'static str> {
    let (at, text) = name.split_once(' ')?;
    let (_, line) = at.rsplit_once(':')?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let verb = text
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    Some(match verb.as_str() {
        "SELECT" | "WITH" | "VALUES" | "TABLE" | "SHOW" | "FETCH" => "read",
        "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "COPY" => "write",
        _ => "other",
    })
}

/// Scripts of the user's need no tables of the tool's: nothing to create
/// or check (the tool cannot know what they read). The built-in ones read
/// pgbench's tables ([`super::init::PGBENCH_TABLES`]), which are
/// checked, never created.
pub struct NoTables;

pub static NO_TABLES: NoTables = NoTables;

impl TableSet for NoTables {
    fn key(&self) -> &'static str {
        "script"
    }

    fn loader(&self) -> &'static str {
        "pgbench-init"
    }

    fn prepare<'a>(
        &'a self,
        _client: &'a Client,
        _settings: &'a Settings,
        _flavor: Flavor,
        _how: crate::workload::TableUse,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

struct ScriptRun {
    spec: &'static Spec,
    facts: Facts,
    program: Arc<Program>,
    /// Running totals of the weights, in script order.
    cumulative: Arc<[u64]>,
    /// Per script, whether it is straight (see [`exec::straight_scripts`]).
    straight: Arc<[bool]>,
    builtin_used: bool,
    settings: Settings,
    /// `:scale`, known after set-up.
    scale: Arc<AtomicI64>,
    shown: FirstErrors,
    /// The clients' folded expressions, one copy where they are the same.
    folds: Folds,
}

impl ScriptRun {
    fn defined(&self, name: &str) -> bool {
        self.settings
            .family::<ScriptSettings>()
            .defines
            .iter()
            .any(|(n, _)| n == name)
    }
}

impl Workload for ScriptRun {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        if self.builtin_used {
            &super::init::PGBENCH_TABLES
        } else {
            &NO_TABLES
        }
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            // As pgbench: the builtins take :scale from pgbench_branches,
            // custom scripts from -s (1 when not given).
            if !self.builtin_used || self.defined("scale") {
                return Ok(());
            }
            // The run checked before it began that the tables are there
            // and loaded; this is for one emptied since.
            let load = format!(
                "-o pgbench-init,script -s {}",
                super::init::scale(&self.settings)
            );
            let n: i64 = match unnamed::query_one(
                client,
                "select count(*) from pgbench_branches",
                &[],
            )
            .await
            {
                Ok(row) => row.get(0),
                Err(e) if e.code().is_some_and(|c| c.code() == "42P01") => {
                    return Err(Error::usage(format!(
                        "the built-in scripts need pgbench's tables and pgbench_branches does not exist: load them first, e.g. {load} (or pgbench -i)"
                    )));
                }
                Err(e) => return Err(Error::db("cannot read the scale from pgbench_branches", e)),
            };
            if n <= 0 {
                return Err(Error::usage(format!(
                    "pgbench_branches is empty, so the built-in scripts have no scale: load it first, e.g. {load} (or pgbench -i)"
                )));
            }
            if let Some(given) = self.settings.family::<ScriptSettings>().scale
                && given as i64 != n
            {
                crate::say!(
                    "warning: -s {given} is ignored by the built-in scripts: pgbench_branches holds {n} branches, so :scale is {n} (as pgbench)"
                );
            }
            self.scale.store(n, Ordering::Relaxed);
            Ok(())
        })
    }

    /// `:scale` as the set-up read it (pgbench's scale factor), when a
    /// built-in script or `-s` gives it a meaning; `-r` is not used.
    fn scale(&self) -> Option<String> {
        let meant = self.builtin_used || self.settings.family::<ScriptSettings>().scale.is_some();
        Some(if meant {
            format!("scale {}", self.scale.load(Ordering::Relaxed))
        } else {
            String::new()
        })
    }

    fn worker(&self, thread: usize) -> Box<dyn DynOperation> {
        let p = &self.program;
        let mut vars = vec![Var::Unset; p.names.len()];
        for (name, value) in &self.settings.family::<ScriptSettings>().defines {
            if let Some(v) = p.slot(name).and_then(|slot| vars.get_mut(slot)) {
                *v = Var::Text(value.clone());
            }
        }
        let seed = self.settings.seed;
        if let Some(v) = vars.get_mut(parse::CLIENT_ID) {
            *v = Var::Value(eval::Value::Int(thread as i64));
        }
        let automatic = [
            ("scale", parse::SCALE, self.scale.load(Ordering::Relaxed)),
            ("random_seed", parse::RANDOM_SEED, seed as i64),
            // The same for every client, as pgbench's.
            (
                "default_seed",
                parse::DEFAULT_SEED,
                worker_seed(seed, 0, 31) as i64,
            ),
        ];
        for (name, slot, value) in automatic {
            if !self.defined(name)
                && let Some(v) = vars.get_mut(slot)
            {
                *v = Var::Value(eval::Value::Int(value));
            }
        }
        Box::new(ScriptOp {
            interp: Interp::new(p.clone(), vars, self.settings.protocol, &self.folds),
            program: p.clone(),
            shown: self.shown.clone(),
            rng: SmallRng::seed_from_u64(worker_seed(seed, thread, 29)),
            cumulative: self.cumulative.clone(),
            straight: self.straight.clone(),
            chosen: 0,
            unit_seed: 0,
        })
    }
}

/// The first server error of each kind, said once on stderr: the summary
/// counts failures by SQLSTATE, but only the message says which line of
/// which script failed and why. (A script's own error, such as a division
/// by zero in `\set`, ends the run and is said once as its failure.)
#[derive(Clone, Default)]
struct FirstErrors(Arc<std::sync::Mutex<Vec<String>>>);

impl FirstErrors {
    /// How many kinds are said; later ones are only counted.
    const MAX: usize = 10;

    /// `e`, said if it is the first of its kind (a failure that ends the
    /// run is said as the run's failure, not here).
    fn said(&self, e: Error) -> Error {
        if !e.ends_run() {
            self.show(&e);
        }
        e
    }

    fn show(&self, e: &Error) {
        let text = e.to_string();
        // The kind: where it happened and what class of error (the part
        // before the message, which may hold values).
        let kind = format!(
            "{} {}",
            text.split(": ").next().unwrap_or(""),
            e.sqlstate().unwrap_or("client")
        );
        let Ok(mut seen) = self.0.lock() else {
            return;
        };
        if seen.len() >= Self::MAX || seen.contains(&kind) {
            return;
        }
        seen.push(kind);
        crate::say!(
            "warning: a script failed (the first failure of its kind; later ones are not shown): {text}"
        );
    }
}

/// In declaration order (`repr(C)`): what staging and sending a unit read
/// first, then the interpreter, whose busy part comes first too (see the
/// runner's `Worker`: with hundreds of connections a thread, every line a
/// unit touches is a miss).
#[repr(C)]
struct ScriptOp {
    /// The staged unit's script, and the seed of its random draws.
    chosen: usize,
    unit_seed: u64,
    rng: SmallRng,
    cumulative: Arc<[u64]>,
    /// Per script, whether it is straight (see [`exec::straight_scripts`]).
    straight: Arc<[bool]>,
    /// The interpreter's program, lent to each run (see [`Interp::run`]).
    program: Arc<Program>,
    interp: Interp,
    shown: FirstErrors,
}

impl Operation for ScriptOp {
    async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.interp.prepare(conn).await
    }

    fn stage(&mut self) -> bool {
        // One script: no draw to choose it.
        if self.cumulative.len() > 1 {
            let total = self.cumulative.last().copied().unwrap_or(1).max(1);
            let r = self.rng.random_range(0..total);
            self.chosen = self.cumulative.partition_point(|&c| c <= r);
        }
        self.unit_seed = self.rng.random();
        true
    }

    fn unit_type(&self) -> usize {
        self.chosen
    }

    // The straight path's future itself, not an `async fn` awaiting it:
    // one state fewer that every unit reads (see the runner's `Worker`).
    fn execute<'a>(
        &'a mut self,
        conn: &'a mut WireConn,
    ) -> impl Future<Output = Result<Outcome>> + Send + 'a {
        let (program, chosen, seed) = (&self.program, self.chosen, self.unit_seed);
        if self.straight.get(chosen) == Some(&true) {
            Either::Left(
                self.interp
                    .run_straight(program, conn, chosen, seed, &self.shown),
            )
        } else {
            // Boxed, one allocation a unit: inline, its state machine
            // would make every unit's future as large as its own (about a
            // kilobyte, see the test below), and the runner boxes each
            // unit's future: at 256 connections, moving a straight
            // script's unit into a block that size missed the caches.
            let (interp, shown) = (&mut self.interp, &self.shown);
            Either::Right(Box::pin(async move {
                match interp.run(program, conn, chosen, seed).await {
                    Ok(rows) => Ok(Outcome { rows, missing: 0 }),
                    Err(e) => Err(shown.said(e)),
                }
            }))
        }
    }

    fn statement_times(&mut self) -> Option<&mut StatementTimes> {
        Some(self.interp.times())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of what `f` returns, without calling it.
    fn returned_size<A, B, R>(_f: fn(A, B) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    #[test]
    fn a_units_future_fits_glibcs_per_thread_cache() {
        // The runner boxes each unit's future (`execute_dyn`). glibc's
        // per-thread cache (tcache) serves blocks of up to 1,032 bytes by
        // default; past that every unit's malloc and free take the slow
        // path (about 330 instructions and 18 I1 misses a transaction,
        // see `Interp::rng`). A local held across an await in
        // `Interp::run_straight`, or a future it awaits without `rare`,
        // grows it (`Interp::run`'s future is boxed apart, see the next
        // test). This is the test build's layout: when this was written
        // the release build's was the same (1,000 bytes, the constant its
        // `execute_dyn` passes to malloc, before `run_straight`), but the
        // two are not bound to agree.
        let size = returned_size(<ScriptOp as Operation>::execute);
        assert!(size <= 1032, "ScriptOp::execute's future is {size} bytes");
    }

    /// The size of what `f` returns, without calling it.
    fn returned_size5<A, B, C, D, E, R>(_f: fn(A, B, C, D, E) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    /// The size of what `f` returns, without calling it.
    fn returned_size6<A, B, C, D, E, F, R>(_f: fn(A, B, C, D, E, F) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    #[test]
    fn a_straight_scripts_unit_is_not_as_large_as_the_general_interpreters() {
        // `execute` boxes the general path (`Interp::run`), so that the
        // unit of a straight script (the builtins, most scripts) is the
        // size of `run_straight`'s state, which every unit's future is
        // moved into (see `execute`).
        let unit = returned_size(<ScriptOp as Operation>::execute);
        let general = returned_size5(Interp::run);
        let straight = returned_size6(Interp::run_straight);
        assert!(
            unit < general,
            "a unit's future is {unit} bytes, Interp::run's {general}"
        );
        assert!(
            straight < general,
            "run_straight's future is {straight} bytes, Interp::run's {general}"
        );
    }

    #[test]
    fn weights_split_at_the_last_at_sign_only_before_digits() {
        assert_eq!(
            split_weight("a.sql@9", "--script").unwrap(),
            ("a.sql".into(), 9)
        );
        assert_eq!(
            split_weight("a.sql", "--script").unwrap(),
            ("a.sql".into(), 1)
        );
        assert_eq!(
            split_weight("me@host/a.sql", "--script").unwrap(),
            ("me@host/a.sql".into(), 1)
        );
        assert_eq!(
            split_weight("x@y.sql@0", "--script").unwrap(),
            ("x@y.sql".into(), 0)
        );
        assert!(split_weight("a@99999999999", "--script").is_err());
    }

    #[test]
    fn builtins_are_found_by_unambiguous_prefixes() {
        assert_eq!(find_builtin("tpcb-like").unwrap().0, "tpcb-like");
        assert_eq!(find_builtin("tpcb").unwrap().0, "tpcb-like");
        assert_eq!(find_builtin("se").unwrap().0, "select-only");
        let e = find_builtin("s").unwrap_err().to_string();
        assert!(e.contains("ambiguous"), "{e}");
        assert!(
            find_builtin("list")
                .unwrap_err()
                .to_string()
                .contains("select-only")
        );
        assert!(
            find_builtin("nope")
                .unwrap_err()
                .to_string()
                .contains("no such")
        );
    }

    #[test]
    fn every_builtin_compiles() {
        let s = ScriptSettings {
            builtins: BUILTINS.iter().map(|b| format!("{}@2", b.0)).collect(),
            ..ScriptSettings::default()
        };
        let (p, builtin) = compile(&s).unwrap();
        assert!(builtin);
        assert_eq!(p.scripts.len(), 3);
        assert_eq!(p.scripts[2].name, "select-only");
        assert!(p.scripts.iter().all(|s| s.weight == 2));
    }

    #[test]
    fn query_classes_follow_the_verb() {
        assert_eq!(query_class("t:3 SELECT abalance FROM x"), Some("read"));
        assert_eq!(query_class("a.sql:4 update x set"), Some("write"));
        assert_eq!(query_class("t:5 END"), Some("other"));
        assert_eq!(query_class("t:6 \\sleep 1 ms"), Some("other"));
        // Another workload's statement kinds.
        assert_eq!(query_class("point_select"), None);
        assert_eq!(query_class("read"), None);
    }

    #[test]
    fn the_reported_table_is_the_first_one_named() {
        let mut c = Compiler::new();
        c.add(
            "a",
            "a.sql",
            "\\set x 1\nselect * from \"usertable\" where k = :x;",
            1,
        )
        .unwrap();
        let p = c.finish().unwrap();
        assert_eq!(guess_table(&p, false), "usertable");
        assert_eq!(guess_table(&p, true), "pgbench_accounts");
    }
}
