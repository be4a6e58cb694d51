//! The interpreter: runs one compiled script on a worker's connection.
//!
//! One call of [`Interp::run`] (or `Interp::run_straight`) is one pgbench
//! transaction: every command of the chosen script in order, `\if` branches
//! by jumps, `\sleep` inside the unit (its time counts, as in pgbench). The
//! random values of a run come from a generator seeded per unit, so a unit
//! that the runner tries again (`--retry-on`, `--max-tries`) draws the same
//! values again, as pgbench's retries do. When a command fails inside
//! `BEGIN … COMMIT`, the transaction is rolled back before the error goes
//! back to the runner; a script that ends with its transaction still open
//! is an error too. The script's own errors (a variable not set yet, an
//! expression's error, a `\gset` without its one row, a column it cannot
//! read) are [`Error::Script`], on which the runner stops the run, as
//! pgbench aborts the client; the server's errors are counted and the run
//! goes on.
//!
//! A script of `\set`s and prepared SQL commands alone, without `\gset`
//! (the builtins, most scripts: "straight") runs on a loop of its own,
//! `Interp::run_straight`; the others on the general one,
//! [`Interp::run`], whose state machine is several times larger (the caller
//! boxes it: one allocation a unit). Per unit nothing is looked up by name
//! and, once the buffers have grown, nothing else is allocated by the
//! interpreter itself for an SQL command outside a pipeline (with at most
//! `FEW_PARAMS` parameters), a `\set` or an `\if`: variables are a vector
//! indexed by slot, each SQL command's prepared statement is kept per
//! connection, and parameters are written into reused strings. (The driver
//! allocates its own messages and rows; a command queued in a pipeline
//! keeps its name, a string, until its result is read.) The paths few
//! transactions take, a failure's rollback, a pipeline's start and sync, a
//! `\sleep`, a statement prepared at its first use, are boxed futures (see
//! `rare`), one allocation each where they run, to keep their code out of
//! the common path's. Every SQL command and `\sleep` is timed as a
//! statement kind of its own (the runner keeps their histograms, see
//! [`StatementTimes`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::FirstErrors;
use super::bind::write_literal;
use super::eval::{Env, Value, VarError, eval, fold, parse_text_value, sleep_amount};
use super::expr::Expr;
use super::parse::{Command, Program, Script, SleepAmount, Sql, TxnEffect};
use crate::db::wire::{Answer, Param, Protocol, Rows, Stmt, WireConn, WireError};
use crate::error::{Error, Result};
use crate::workload::kit::keys::ZipfSampler;
use crate::workload::{Outcome, StatementTimes};

/// A variable of one client.
#[derive(Clone, Debug, PartialEq)]
pub enum Var {
    /// Never set: reading it is an error.
    Unset,
    Value(Value),
    /// Text from `-D` or a result, read as a number when an expression
    /// needs one.
    Text(String),
}

impl Var {
    /// The value an expression sees.
    pub fn value(&self) -> std::result::Result<Value, VarError<'_>> {
        match self {
            Var::Unset => Err(VarError::Undefined),
            Var::Value(v) => Ok(*v),
            Var::Text(t) => parse_text_value(t).ok_or(VarError::Malformed(t)),
        }
    }

    /// Sets text, reusing the buffer when the variable already holds text.
    pub fn set_text(&mut self, s: &str) {
        match self {
            Var::Text(buf) => {
                buf.clear();
                buf.push_str(s);
            }
            _ => *self = Var::Text(s.to_string()),
        }
    }
}

/// SQLSTATE classes of an object that does not exist (yet): a statement
/// naming a table the script itself creates is prepared at first use.
const UNDEFINED_OBJECT: [&str; 4] = ["42P01", "42703", "42883", "3F000"];

/// One worker's interpreter.
///
/// In declaration order (`repr(C)`): what a straight script's unit
/// touches first (the draws, the statements, the parameters, the
/// variables, the times), then the rest (see `ScriptOp`).
#[repr(C)]
pub struct Interp {
    /// The random draws of the unit under way (seeded by [`Interp::run`] or
    /// [`Interp::run_straight`]). Here rather than in `run`'s locals, as is
    /// `queued`: the runner boxes each unit's future, and that future was at
    /// 1,032 bytes, the largest size glibc's per-thread cache of freed
    /// blocks serves; past it every unit's allocation took malloc's slow
    /// path (about 330 instructions and 18 instruction-cache misses per
    /// transaction, callgrind).
    rng: SmallRng,
    /// The prepared statement of each command, per connection, by the
    /// command's place in the program (its script's
    /// [`base`](super::parse::Script::base) + its index; None: not an SQL
    /// command, or prepared at first use).
    statements: Vec<Option<Stmt>>,
    /// The parameters of the SQL command under way, reused.
    params: Vec<ParamText>,
    vars: Vec<Var>,
    stats: StatementTimes,
    /// By the command's place in the program, as `statements`: the `\set`
    /// expression or `\if` condition folded for this client's variables
    /// that no command changes (see [`fold`]); None for the other
    /// commands. Shared by the clients whose folds are the same (see
    /// [`Folds`]).
    folded: Arc<[Option<Expr>]>,
    zipf: Vec<Option<ZipfSampler>>,
    program: Arc<Program>,
    /// How SQL commands are sent (`-M`).
    protocol: Protocol,
    /// The statement text under `--no-prepared`, reused.
    sql_buf: String,
    /// A variable name being put together (`\gset` prefix + column).
    name_buf: String,
    /// The rows of a `\gset` or `\aset` command, reused.
    rows: Rows,
    /// The commands of the unit's pipeline queued and not read yet (each
    /// one's effect on the transaction, and what it is called).
    queued: Vec<(TxnEffect, String)>,
}

impl Interp {
    /// An interpreter whose variables start as `vars` (one per slot).
    pub fn new(program: Arc<Program>, vars: Vec<Var>, protocol: Protocol, folds: &Folds) -> Interp {
        let stats = StatementTimes::new(program.statements.iter().copied(), |name| {
            super::query_class(name).unwrap_or("other")
        });
        let n = program.max_params;
        let folded = folds.share(fold_program(&program, &vars));
        // The vectors are allocated here one after another at the size
        // they keep (see `prepare` and `bind_params`), not grown by the
        // first unit among every other connection's blocks: glibc tends
        // to serve consecutive small requests from neighbouring memory, so
        // a unit at many connections finds more of them on lines it has
        // touched (callgrind: see bench/RESULTS.md, twelfth session).
        let commands = program.scripts.iter().map(|s| s.commands.len()).sum();
        Interp {
            zipf: vec![None; program.zipf_sites],
            statements: Vec::with_capacity(commands),
            params: (0..n).map(|_| ParamText::with_capacity(24)).collect(),
            sql_buf: String::new(),
            name_buf: String::new(),
            rows: Rows::new(),
            folded,
            rng: SmallRng::seed_from_u64(0),
            queued: Vec::new(),
            program,
            vars,
            stats,
            protocol,
        }
    }

    /// Prepares every SQL command on a new connection. A statement on an
    /// object that does not exist yet (the script may create it) is
    /// prepared at its first use instead.
    pub async fn prepare(&mut self, conn: &mut WireConn) -> Result<()> {
        self.statements.clear();
        for script in &self.program.scripts {
            for c in &script.commands {
                let st = match c {
                    // A command with an optional slice bound is prepared
                    // when it first runs with the bound set, if ever.
                    Command::Sql(sql)
                        if self.protocol == Protocol::Prepared && !sql.optional.contains(&true) =>
                    {
                        match conn.prepare(&sql.prepared).await {
                            Ok(st) => Some(st),
                            Err(e) if e.code().is_some_and(|c| UNDEFINED_OBJECT.contains(&c)) => {
                                None
                            }
                            Err(e) => {
                                return Err(Error::wire(
                                    format!("{}: cannot prepare '{}'", sql.at, sql.text),
                                    e,
                                ));
                            }
                        }
                    }
                    _ => None,
                };
                self.statements.push(st);
            }
        }
        Ok(())
    }

    /// The times of its SQL commands and `\sleep`s.
    pub fn times(&mut self) -> &mut StatementTimes {
        &mut self.stats
    }

    /// The start of a unit: its draws seeded by `seed`, and script `index`
    /// of `program` (this interpreter's).
    fn begin<'p>(&mut self, program: &'p Program, index: usize, seed: u64) -> Result<&'p Script> {
        debug_assert!(std::ptr::eq(program, &*self.program), "another program");
        self.rng = SmallRng::seed_from_u64(seed);
        program
            .scripts
            .get(index)
            .ok_or_else(|| Error::run(format!("internal: no script {index}")))
    }

    /// Runs straight script `index` of `program` (see [`straight_scripts`]) as
    /// [`Interp::run`] would, on a path of its own. The general one's state
    /// machine (branches, pipelines, sleeps, the other protocols) spreads the
    /// lines a transaction runs over more of the instruction cache, and its
    /// future (about a kilobyte) sets the size of the block every unit's future
    /// is moved into; at 256 connections those blocks, one per connection,
    /// missed the caches on every unit (callgrind, select-only: 37 last-level
    /// misses a transaction before, 20 after; see bench/RESULTS.md, twelfth
    /// session).
    ///
    /// A failure is said through `shown` (see [`FirstErrors`]) before it
    /// is returned: the operation returns this future as its unit's own,
    /// with nothing around it (see `ScriptOp::execute`).
    pub(super) async fn run_straight(
        &mut self,
        program: &Program,
        conn: &mut WireConn,
        index: usize,
        seed: u64,
        shown: &FirstErrors,
    ) -> Result<Outcome> {
        let script = self
            .begin(program, index, seed)
            .map_err(|e| shown.said(e))?;
        let mut rows = 0;
        let mut in_txn = false;
        for (k, command) in script.commands.iter().enumerate() {
            let i = script.base + k;
            let done = match command {
                Command::Set { slot, expr, at } => {
                    match self.eval_command(&program.names, i, expr, at) {
                        Ok(v) => {
                            if let Some(var) = self.vars.get_mut(*slot) {
                                *var = Var::Value(v);
                            }
                            Ok(0)
                        }
                        Err(e) => Err(e),
                    }
                }
                Command::Sql(sql) => match self.statements.get(i).copied().flatten() {
                    // Queued and answered around the one await, not in
                    // an `async fn` of its own: one state machine fewer
                    // per statement (see the runner's `Worker`).
                    Some(st) => match self.queue_prepared(conn, st, sql) {
                        Ok(began) => {
                            let answer = conn.run_queued().await;
                            self.answered(sql, began, answer)
                        }
                        Err(e) => Err(e),
                    },
                    // Prepared at its first use.
                    None => rare(self.sql(conn, i, sql)).await,
                },
                _ => Err(Error::run(format!(
                    "internal: script {index} is not straight"
                ))),
            };
            match done {
                Ok(n) => rows += n,
                Err(e) => return Err(shown.said(rare(leave(conn, in_txn, e)).await)),
            }
            if let Command::Sql(sql) = command {
                sql.txn.apply(&mut in_txn);
            }
        }
        if in_txn {
            return Err(shown.said(rare(leave(conn, true, unfinished(script))).await));
        }
        Ok(Outcome { rows, missing: 0 })
    }

    /// Queues a straight script's SQL command on its prepared statement
    /// `st`, for `conn.run_queued()`; when it began.
    fn queue_prepared(&mut self, conn: &mut WireConn, st: Stmt, sql: &Sql) -> Result<Instant> {
        let began = Instant::now();
        self.bind_params(sql)?;
        self.queue_bound(conn, Some(st), sql, false)
            .map_err(|e| wire_error(sql, e))?;
        Ok(began)
    }

    /// The answer to a command queued by [`Self::queue_prepared`] at
    /// `began`: its time recorded, the rows it returned or changed.
    fn answered(
        &mut self,
        sql: &Sql,
        began: Instant,
        answer: std::result::Result<Answer, WireError>,
    ) -> Result<u64> {
        let answer = answer.map_err(|e| wire_error(sql, e))?;
        self.stats.record(sql.stat, began.elapsed());
        Ok(answer.affected.max(answer.rows))
    }

    /// Runs script `index` of `program` (this interpreter's) once; `seed`
    /// seeds its random draws. Returns the rows its SQL commands returned
    /// or changed.
    ///
    /// The program is the caller's borrow rather than a clone of
    /// `self.program`: a clone and its drop per unit were an atomic
    /// increment and decrement of one count that every worker of every
    /// thread writes, a cache line that moved between the cores each
    /// transaction.
    pub async fn run(
        &mut self,
        program: &Program,
        conn: &mut WireConn,
        index: usize,
        seed: u64,
    ) -> Result<u64> {
        let script = self.begin(program, index, seed)?;
        let commands = &script.commands;
        let base = script.base;
        let mut pc = 0;
        let mut rows = 0;
        let mut in_txn = false;
        // Inside a pipeline (its commands queued in `self.queued`, which
        // a unit that failed inside one may have left filled).
        let mut in_pipeline = false;
        self.queued.clear();
        while pc < commands.len() {
            match &commands[pc] {
                Command::Set { slot, expr, at } => {
                    let v = match self.eval_command(&program.names, base + pc, expr, at) {
                        Ok(v) => v,
                        Err(e) => return Err(rare(leave(conn, in_txn, e)).await),
                    };
                    if let Some(var) = self.vars.get_mut(*slot) {
                        *var = Var::Value(v);
                    }
                }
                Command::Test { cond, on_false, at } => {
                    let holds = match self.eval_command(&program.names, base + pc, cond, at) {
                        Ok(v) => v.truth(),
                        Err(e) => return Err(rare(leave(conn, in_txn, e)).await),
                    };
                    if !holds {
                        pc = *on_false;
                        continue;
                    }
                }
                Command::Jump(target) => {
                    pc = *target;
                    continue;
                }
                Command::StartPipeline { .. } => {
                    if let Err(e) = rare(self.start_pipeline(conn, base, commands, pc)).await {
                        return Err(rare(leave(conn, in_txn, e)).await);
                    }
                    in_pipeline = true;
                }
                Command::SyncPipeline { stat, .. } | Command::EndPipeline { stat, .. } => {
                    match rare(self.sync_pipeline(conn, &mut in_txn, *stat)).await {
                        Ok(n) => rows += n,
                        Err(e) => return Err(rare(leave(conn, in_txn, e)).await),
                    }
                    if matches!(commands[pc], Command::EndPipeline { .. }) {
                        in_pipeline = false;
                    }
                }
                Command::Sleep {
                    amount,
                    unit_ns,
                    stat,
                    at,
                } => {
                    if let Err(e) = rare(self.sleep(amount, *unit_ns, *stat, at)).await {
                        return Err(rare(leave(conn, in_txn, e)).await);
                    }
                }
                Command::Sql(sql) if in_pipeline => {
                    if let Err(e) = self.queue_sql(conn, base + pc, sql).await {
                        let e = rare(abandon_pipeline(conn, &mut self.queued, e)).await;
                        return Err(rare(leave(conn, in_txn, e)).await);
                    }
                    self.queued
                        .push((sql.txn, format!("{} ({})", sql.at, short(&sql.text))));
                }
                Command::Sql(sql) => {
                    match self.sql(conn, base + pc, sql).await {
                        Ok(n) => rows += n,
                        Err(e) => return Err(rare(leave(conn, in_txn, e)).await),
                    }
                    sql.txn.apply(&mut in_txn);
                }
            }
            pc += 1;
        }
        if in_txn {
            return Err(rare(leave(conn, true, unfinished(script))).await);
        }
        Ok(rows)
    }

    /// `\sleep`: its amount (a constant or a variable), then the wait,
    /// timed as the command's statement kind. (Through [`rare`]: it waits
    /// anyway.)
    async fn sleep(
        &mut self,
        amount: &SleepAmount,
        unit_ns: u64,
        stat: usize,
        at: &str,
    ) -> Result<()> {
        let n = match amount {
            SleepAmount::Const(n) => *n,
            SleepAmount::Var(slot) => {
                let v = self.vars.get(*slot).unwrap_or(&Var::Unset);
                let name = self.program.names.get(*slot).map_or("?", |n| n.as_str());
                sleep_amount(v, name)
                    .map_err(|why| Error::script(format!("{at}: \\sleep: {why}")))?
            }
        };
        let ns = (n.max(0) as u64).saturating_mul(unit_ns);
        let began = Instant::now();
        crate::rt::time::sleep(Duration::from_nanos(ns)).await;
        self.stats.record(stat, began.elapsed());
        Ok(())
    }

    /// The value of the expression of command `i` of the program (`expr`
    /// as written): this client's folded form of it where there is one
    /// (see `fold_program`), else `expr` itself.
    fn eval_command(&mut self, names: &[String], i: usize, expr: &Expr, at: &str) -> Result<Value> {
        let expr = self.folded.get(i).and_then(Option::as_ref).unwrap_or(expr);
        Self::eval(expr, &self.vars, names, &mut self.zipf, &mut self.rng, at)
    }

    /// Evaluates `e`, which may be borrowed from `self.folded` (hence
    /// the fields one by one).
    fn eval(
        e: &Expr,
        vars: &[Var],
        names: &[String],
        zipf: &mut [Option<ZipfSampler>],
        rng: &mut SmallRng,
        at: &str,
    ) -> Result<Value> {
        let mut env = Env {
            vars,
            names,
            rng,
            zipf,
            debug_at: at,
        };
        eval(e, &mut env).map_err(|err| Error::script(format!("{at}: {err}")))
    }

    /// Runs one SQL command; returns the rows it returned or changed.
    async fn sql(&mut self, conn: &mut WireConn, i: usize, sql: &Sql) -> Result<u64> {
        let began = Instant::now();
        // An optional slice bound not set stays `:name` in the text, which
        // no prepared statement can hold: this run of the command goes as
        // text, as pgbench's simple mode sends it.
        let bound_unset = sql
            .optional
            .iter()
            .zip(&sql.params)
            .any(|(&o, &slot)| o && matches!(self.vars.get(slot), None | Some(Var::Unset)));
        let rows = if self.protocol != Protocol::Simple && !bound_unset {
            self.sql_prepared(conn, i, sql).await?
        } else {
            self.sql_simple(conn, sql).await?
        };
        self.stats.record(sql.stat, began.elapsed());
        Ok(rows)
    }

    fn undefined(&self, sql: &Sql, slot: usize) -> Error {
        let name = self.program.names.get(slot).map_or("?", |s| s.as_str());
        Error::script(format!("{}: undefined variable \"{name}\"", sql.at))
    }

    /// The prepared statement of command `i` of the program (made now if
    /// it is not yet), or None under `-M extended`.
    async fn statement_for(
        &mut self,
        conn: &mut WireConn,
        i: usize,
        sql: &Sql,
    ) -> Result<Option<Stmt>> {
        match self.known_statement(i) {
            Some(st) => Ok(st),
            None => rare(self.prepare_now(conn, i, sql)).await.map(Some),
        }
    }

    /// The statement of command `i` of the program when nothing has to be
    /// prepared for it (Some(None): `-M extended`, the unnamed statement,
    /// parsed each time), None when it must be prepared first.
    fn known_statement(&self, i: usize) -> Option<Option<Stmt>> {
        let known = self.statements.get(i).copied().flatten();
        match known {
            Some(st) => Some(Some(st)),
            None if self.protocol == Protocol::Prepared => None,
            None => Some(None),
        }
    }

    /// Prepares command `i` of the program at its first use, and keeps it
    /// for the connection.
    async fn prepare_now(&mut self, conn: &mut WireConn, i: usize, sql: &Sql) -> Result<Stmt> {
        let st = conn
            .prepare(&sql.prepared)
            .await
            .map_err(|e| wire_error(sql, e))?;
        if let Some(slot) = self.statements.get_mut(i) {
            *slot = Some(st);
        }
        Ok(st)
    }

    /// Writes the command's variables into the parameter texts.
    fn bind_params(&mut self, sql: &Sql) -> Result<()> {
        for (i, &slot) in sql.params.iter().enumerate() {
            let Some(p) = self.params.get_mut(i) else {
                return Err(Error::run(format!("internal: no parameter {i}")));
            };
            p.text.clear();
            p.null = match self.vars.get(slot) {
                Some(Var::Value(v)) => !v.write_text(&mut p.text),
                Some(Var::Text(t)) => {
                    p.text.push_str(t);
                    false
                }
                _ => return Err(self.undefined(sql, slot)),
            };
        }
        Ok(())
    }

    /// Queues command `sql` with the parameters [`Interp::bind_params`]
    /// wrote: on prepared statement `st`, or as the unnamed statement
    /// (described when `describe`, for its columns' names). The driver
    /// encodes them as it queues, so they are built here on the stack
    /// (when there are at most [`FEW_PARAMS`]) rather than in a vector
    /// kept across the wait: a line of memory less that each unit of each
    /// connection touches.
    fn queue_bound(
        &self,
        conn: &mut WireConn,
        st: Option<Stmt>,
        sql: &Sql,
        describe: bool,
    ) -> std::result::Result<(), WireError> {
        let n = sql.params.len();
        let param = |i: usize| match self.params.get(i) {
            Some(p) if !p.null => Param::Text(&p.text),
            _ => Param::Null,
        };
        let mut queue = |params: &[Param<'_>]| match st {
            Some(st) => conn.queue(st, params),
            None => conn.queue_unnamed(&sql.prepared, params, describe),
        };
        if n <= FEW_PARAMS {
            let mut params = [Param::Null; FEW_PARAMS];
            for (i, p) in params.iter_mut().take(n).enumerate() {
                *p = param(i);
            }
            queue(&params[..n])
        } else {
            queue(&(0..n).map(param).collect::<Vec<_>>())
        }
    }

    async fn sql_prepared(&mut self, conn: &mut WireConn, i: usize, sql: &Sql) -> Result<u64> {
        let st = self.statement_for(conn, i, sql).await?;
        self.bind_params(sql)?;
        self.queue_bound(conn, st, sql, sql.into.is_some())
            .map_err(|e| wire_error(sql, e))?;
        let rows = sql.into.as_ref().map(|_| &mut self.rows);
        let answer = conn.synced_answer(st, rows).await;
        let answer = answer.map_err(|e| wire_error(sql, e))?;
        let Some(into) = &sql.into else {
            return Ok(answer.affected.max(answer.rows));
        };
        self.store_rows(sql, into)?;
        Ok(answer.rows)
    }

    /// `\startpipeline`: prepares every statement of the pipeline that is
    /// not prepared yet (a Parse's own Sync cannot go in the middle of the
    /// pipeline), as pgbench does. (`base`: the script's
    /// [`base`](super::parse::Script::base), `commands` its commands.)
    async fn start_pipeline(
        &mut self,
        conn: &mut WireConn,
        base: usize,
        commands: &[Command],
        pc: usize,
    ) -> Result<()> {
        for (i, c) in commands.iter().enumerate().skip(pc + 1) {
            match c {
                Command::EndPipeline { .. } => break,
                Command::Sql(sql) if sql.pipelined => {
                    self.statement_for(conn, base + i, sql).await?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A command inside a pipeline: bound and queued (Bind and Execute, no
    /// Sync), not sent; its result is read at the next Sync.
    async fn queue_sql(&mut self, conn: &mut WireConn, i: usize, sql: &Sql) -> Result<()> {
        let began = Instant::now();
        let st = self.statement_for(conn, i, sql).await?;
        self.bind_params(sql)?;
        self.queue_bound(conn, st, sql, false)
            .map_err(|e| wire_error(sql, e))?;
        self.stats.record(sql.stat, began.elapsed());
        Ok(())
    }

    /// `\syncpipeline` or `\endpipeline`: a Sync, sent with everything
    /// queued, then each queued command's result in order (its rows, its
    /// effect on the transaction), then the Sync's ReadyForQuery. On the
    /// first server error the server skips the rest up to the Sync: the
    /// error is returned once the connection is in step again.
    async fn sync_pipeline(
        &mut self,
        conn: &mut WireConn,
        in_txn: &mut bool,
        stat: usize,
    ) -> Result<u64> {
        let began = Instant::now();
        conn.queue_sync();
        let mut rows = 0;
        let mut failed = None;
        if let Err(e) = conn.send().await {
            failed = Some(Error::wire("pipeline failed", e));
        }
        for (effect, what) in self.queued.drain(..) {
            if failed.is_some() {
                break;
            }
            match conn.result(None).await {
                Ok(a) => {
                    rows += a.affected.max(a.rows);
                    effect.apply(in_txn);
                }
                Err(e) => failed = Some(Error::wire(what, e)),
            }
        }
        self.queued.clear();
        if !conn.is_closed()
            && let Err(e) = conn.synced().await
        {
            failed.get_or_insert(Error::wire("pipeline failed", e));
        }
        self.stats.record(stat, began.elapsed());
        match failed {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }

    async fn sql_simple(&mut self, conn: &mut WireConn, sql: &Sql) -> Result<u64> {
        let fail = |e: WireError| wire_error(sql, e);
        self.sql_buf.clear();
        for (i, part) in sql.parts.iter().enumerate() {
            self.sql_buf.push_str(part);
            if let Some(&slot) = sql.params.get(i) {
                let var = self.vars.get(slot).unwrap_or(&Var::Unset);
                if !write_literal(var, &mut self.sql_buf) {
                    if !sql.optional.get(i).copied().unwrap_or(false) {
                        return Err(self.undefined(sql, slot));
                    }
                    let name = self.program.names.get(slot).map_or("?", |s| s.as_str());
                    self.sql_buf.push(':');
                    self.sql_buf.push_str(name);
                }
            }
        }
        let Some(into) = &sql.into else {
            let answer = conn.simple_query(&self.sql_buf).await.map_err(fail)?;
            return Ok(answer.affected);
        };
        let answer = conn
            .simple_rows(&self.sql_buf, &mut self.rows)
            .await
            .map_err(fail)?;
        self.store_rows(sql, into)?;
        Ok(answer.rows)
    }

    /// `\gset` (one row) or `\aset` (the last row of any): each column into
    /// the variable of its name (with the command's prefix), as text, as
    /// pgbench reads results; NULL as NULL.
    fn store_rows(&mut self, sql: &Sql, into: &super::parse::Gset) -> Result<()> {
        let count = self.rows.len();
        if !into.all_rows && count != 1 {
            return Err(Error::script(format!(
                "{}: \\gset expects one row, the query returned {count}",
                sql.at
            )));
        }
        let Some(last) = count.checked_sub(1) else {
            return Ok(());
        };
        for i in 0..self.rows.width() {
            self.name_buf.clear();
            self.name_buf.push_str(&into.prefix);
            self.name_buf
                .push_str(self.rows.names().get(i).map_or("?column?", |n| n.as_str()));
            let Some(slot) = gset_slot(&self.program, &self.name_buf, sql)? else {
                continue;
            };
            if let Some(var) = self.vars.get_mut(slot) {
                match self.rows.text(last, i) {
                    Some(text) => var.set_text(text),
                    None => *var = Var::Value(Value::Null),
                }
            }
        }
        Ok(())
    }
}

/// The error of a script that ended with its transaction open.
fn unfinished(script: &Script) -> Error {
    Error::script(format!(
        "script {} ended inside a transaction (BEGIN without COMMIT or END)",
        script.name
    ))
}

/// Per script of `program`, whether it is straight, which
/// `Interp::run_straight` runs: only `\set`s and SQL commands, under `-M
/// prepared`, outside pipelines, without `\gset` or `\aset`, statements
/// joined by `\;` or a subscript bound only a `\gset` may set (most
/// scripts, the builtins among them). One copy for all clients: read each
/// unit, it stays in the cache, where a vector per client did not (at
/// 256 connections, a miss a transaction; perf).
pub fn straight_scripts(program: &Program, protocol: Protocol) -> Vec<bool> {
    (program.scripts.iter())
        .map(|s| protocol == Protocol::Prepared && s.commands.iter().all(straight_command))
        .collect()
}

/// Whether [`Interp::run_straight`] can run the command (under `-M
/// prepared`).
fn straight_command(c: &Command) -> bool {
    match c {
        Command::Set { .. } => true,
        Command::Sql(sql) => {
            sql.into.is_none() && !sql.pipelined && !sql.compound && !sql.optional.contains(&true)
        }
        _ => false,
    }
}

/// A path few units take (a failure's rollback, a pipeline's start, sync
/// or abandon, a `\sleep`, a statement prepared at its first use; the
/// commands queued inside a pipeline are not boxed) as a boxed `dyn`
/// future, as the worker loop's `cold` does: with fat LTO every `async fn`
/// the interpreter awaits is inlined into the poll function of
/// [`Interp::run`] (23 KB, most of it those paths), so that the lines a
/// transaction runs were spread over more of the 32 KB first-level
/// instruction cache than they fill. Behind a vtable their code stays
/// out; the price is an allocation where such a path runs.
fn rare<'a, T>(
    f: impl std::future::Future<Output = T> + Send + 'a,
) -> crate::workload::BoxFuture<'a, T> {
    Box::pin(f)
}

/// Leaves a failed unit's transaction before its error goes back to
/// the runner, so that the next unit (or the retry) starts clean.
async fn leave(conn: &mut WireConn, in_txn: bool, e: Error) -> Error {
    if (in_txn || conn.in_transaction()) && !conn.is_closed() {
        // The unit's error is what counts; a failed rollback (a lost
        // connection) adds nothing to it.
        let _ = conn.simple_query("ROLLBACK").await;
    }
    e
}

/// A script error with commands of a pipeline queued: they are sent
/// with a Sync and their results read and dropped, so that the
/// connection is in step for the rollback and the next unit.
async fn abandon_pipeline(
    conn: &mut WireConn,
    queued: &mut Vec<(TxnEffect, String)>,
    e: Error,
) -> Error {
    queued.clear();
    if !conn.is_closed() {
        conn.queue_sync();
        if conn.send().await.is_ok() {
            let _ = conn.synced().await;
        }
    }
    e
}

/// The variable a `\gset` or `\aset` stores a column into: None when no
/// line reads it (nothing to keep). A column whose name (with the prefix)
/// is no variable name, such as `?column?` of `select 1`, is the script's
/// error, as pgbench fails the command.
fn gset_slot(program: &Program, name: &str, sql: &Sql) -> Result<Option<usize>> {
    if !super::valid_name(name) {
        let what = match &sql.into {
            Some(g) if g.all_rows => "\\aset",
            _ => "\\gset",
        };
        return Err(Error::script(format!(
            "{}: {what} cannot store a column into \"{name}\": it is no variable name (letters, digits and _, not starting with a digit); name the column with AS",
            sql.at
        )));
    }
    Ok(program.slot(name))
}

/// A parameter of an SQL command as bound: text, as pgbench binds them
/// (the server reads each as its parameter's type), or NULL.
#[derive(Clone, Debug, Default)]
struct ParamText {
    text: String,
    null: bool,
}

impl ParamText {
    fn with_capacity(n: usize) -> ParamText {
        ParamText {
            text: String::with_capacity(n),
            null: false,
        }
    }
}

/// The parameters [`Interp::queue_bound`] builds on the stack; a command
/// with more collects them into a vector.
const FEW_PARAMS: usize = 8;

/// A driver's error of SQL command `sql`, named by its place and start.
fn wire_error(sql: &Sql, e: WireError) -> Error {
    Error::wire(format!("{} ({})", sql.at, short(&sql.text)), e)
}

/// Whose variables a command may change: the target of a `\set`, and
/// every variable a `\gset` or `\aset` could name (each one whose name
/// starts with its prefix, as the columns are only known at run time).
fn changed_slots(program: &Program) -> Vec<bool> {
    let mut changed = vec![false; program.names.len()];
    for c in program.scripts.iter().flat_map(|s| &s.commands) {
        match c {
            Command::Set { slot, .. } => {
                if let Some(x) = changed.get_mut(*slot) {
                    *x = true;
                }
            }
            Command::Sql(Sql {
                into: Some(into), ..
            }) => {
                for (x, name) in changed.iter_mut().zip(&program.names) {
                    *x |= name.starts_with(into.prefix.as_str());
                }
            }
            _ => {}
        }
    }
    changed
}

/// Each `\set` expression and `\if` condition of `program` folded for a
/// client whose variables start as `vars` (see [`fold`]): a variable no
/// command changes keeps its first value for the whole run.
fn fold_program(program: &Program, vars: &[Var]) -> Vec<Option<Expr>> {
    let changed = changed_slots(program);
    let known = |slot: usize| {
        if changed.get(slot).copied().unwrap_or(true) {
            return None;
        }
        vars.get(slot).and_then(|v| v.value().ok())
    };
    program
        .scripts
        .iter()
        .flat_map(|s| &s.commands)
        .map(|c| match c {
            Command::Set { expr, .. } => Some(fold(expr, &known)),
            Command::Test { cond, .. } => Some(fold(cond, &known)),
            _ => None,
        })
        .collect()
}

/// The folded expressions of a run's clients, one copy for those whose
/// folds are the same: each client folds its own (its `:client_id`
/// differs), but most scripts read no per-client value, and with one
/// copy for all the expressions a unit evaluates stay in the cache from
/// one worker's unit to the next's rather than one copy per connection
/// (at 256 connections, a few cache misses a transaction).
#[derive(Default)]
pub struct Folds(std::sync::Mutex<Vec<Kept>>);

/// A fold kept for sharing, and its text to compare (`{:?}`: `==` on the
/// constants would take -0.0 for 0.0, which a parameter writes apart).
struct Kept {
    text: String,
    folded: Arc<[Option<Expr>]>,
}

impl Folds {
    /// Distinct folds kept; a client whose fold is none of them keeps its
    /// own (a script whose conditions read `:client_id` everywhere).
    const MAX: usize = 8;

    /// `folded`, as the copy already kept when that is the same.
    fn share(&self, folded: Vec<Option<Expr>>) -> Arc<[Option<Expr>]> {
        let Ok(mut kept) = self.0.lock() else {
            return folded.into();
        };
        let text = format!("{folded:?}");
        if let Some(k) = kept.iter().find(|k| k.text == text) {
            return k.folded.clone();
        }
        let folded: Arc<[Option<Expr>]> = folded.into();
        if kept.len() < Self::MAX {
            kept.push(Kept {
                text,
                folded: folded.clone(),
            });
        }
        folded
    }
}

/// The start of a statement, for error messages.
fn short(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let s = words.join(" ");
    if s.chars().count() > 60 {
        s.chars().take(59).collect::<String>() + "…"
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::pgbench::script::parse::Compiler;

    fn program(text: &str) -> Program {
        let mut c = Compiler::new();
        // As -D gives them: read by the script, set by none of it.
        for name in ["b", "c", "pfx_y", "pfyx"] {
            c.define(name);
        }
        c.add("t", "t.sql", text, 1).unwrap();
        c.finish().unwrap()
    }

    fn changed(p: &Program, name: &str) -> bool {
        changed_slots(p)[p.slot(name).unwrap()]
    }

    #[test]
    fn a_set_and_every_name_a_gset_prefix_could_make_are_changed() {
        let p = program(
            "\\set a :b + 1\n\
             select :c, :pfx_y, :pfyx;\n\
             select * from t \\gset pfx_\n",
        );
        assert!(changed(&p, "a"), "the target of a \\set");
        assert!(!changed(&p, "b"), "only read");
        assert!(!changed(&p, "c"), "only read");
        assert!(changed(&p, "pfx_y"), "a \\gset pfx_ of columns not known");
        assert!(!changed(&p, "pfyx"), "does not start with the prefix");
    }

    #[test]
    fn a_variable_another_script_sets_is_changed_in_all() {
        let mut c = Compiler::new();
        c.define("b");
        c.add("one", "one.sql", "select :a, :b, :p_x;\n", 1)
            .unwrap();
        c.add("two", "two.sql", "\\set a 1\nselect 1;\n", 1)
            .unwrap();
        c.add("three", "three.sql", "select 1 as x \\gset p_\n", 1)
            .unwrap();
        let p = c.finish().unwrap();
        assert!(changed(&p, "a"), "set by the second script");
        assert!(changed(&p, "p_x"), "set by the third script's \\gset");
        assert!(!changed(&p, "b"), "set by none");
    }

    #[test]
    fn clients_share_a_fold_only_when_it_is_the_same_to_the_bit() {
        let folds = Folds::default();
        let fold = |x: f64| vec![Some(Expr::Const(Value::Double(x))), None];
        let a = folds.share(fold(0.0));
        let b = folds.share(fold(0.0));
        assert!(Arc::ptr_eq(&a, &b), "the same fold, one copy");
        let minus = folds.share(fold(-0.0));
        assert!(!Arc::ptr_eq(&a, &minus), "-0.0 is written apart from 0.0");
        assert_eq!(format!("{:?}", minus[0]), format!("{:?}", fold(-0.0)[0]));
        let again = folds.share(fold(-0.0));
        assert!(Arc::ptr_eq(&minus, &again), "a second fold is kept too");
    }

    #[test]
    fn an_aset_without_a_prefix_may_change_every_variable() {
        let p = program("\\set a :b + 1\nselect :c;\nselect 1 as x \\aset\n");
        for name in ["a", "b", "c"] {
            assert!(changed(&p, name), "{name}");
        }
    }
}
