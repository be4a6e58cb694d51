//! pgbench's script files, parsed and compiled before anything runs.
//!
//! A script is a sequence of SQL commands and backslash meta-commands, as
//! pgbench reads it: an SQL command ends at a `;` outside quotes,
//! comments and parentheses (so it may span lines), or at the end of the
//! file, or at a `\gset`/`\aset` that stands in for its `;`; a
//! meta-command is a line starting with a backslash, continued on the next
//! line by a backslash at its end. `:name` in an SQL command is a variable,
//! bound as a parameter of the prepared statement (each occurrence its own
//! `$n`, as pgbench does) or, with `--no-prepared`, written into the text
//! as a literal; `::` is a cast. Unlike pgbench, nothing inside quotes,
//! quoted identifiers, dollar quotes or comments is taken for a variable,
//! and a script that writes a variable it sets inside quotes (`':aid'`) is
//! refused rather than run with the literal text. In an array subscript,
//! a `:name` that nothing sets stays in the text, a slice bound (`a[1:n]`),
//! as pgbench sends a name that is no variable.
//!
//! A `\;` joins two statements into one command (pgbench's compound
//! command), sent as one simple query: the run refuses it under prepared
//! statements, as the server does. A `\gset` after it reads the last
//! statement that returns rows; an `\aset` after it, which in pgbench
//! stores each statement's last row, is refused (the driver keeps one row
//! set).
//!
//! Meta-commands: `\set`, `\sleep`, `\if`/`\elif`/`\else`/`\endif`,
//! `\gset`/`\aset` (after an SQL command), and pipelines:
//! `\startpipeline`, `\syncpipeline` (pgbench 17's), `\endpipeline`.
//! `\setshell` and `\shell` are refused (no shell commands per
//! transaction). What pgbench 15 finds wrong in a pipeline only when a
//! client meets it (a nested `\startpipeline`, an `\endpipeline` outside
//! one, a `\gset` inside one, a script that ends with one open) is an
//! error here before the run, and so is a pipeline that an `\if` branch
//! opens without closing or closes without opening: whether a pipeline is
//! open must not depend on the branch taken.
//!
//! Every error names the file, line and column; the caller turns it into
//! a usage error (exit 2) before any connection is made. Among them: a
//! variable read (`:name` in SQL, an expression, `\sleep`) that nothing
//! can set, neither a `\set` of any script (all the scripts of a client
//! share its variables, and a later line may have set it in an earlier
//! transaction), nor a `\gset`/`\aset` column, nor `-D`, nor the automatic
//! variables; the message offers the nearest name that is set (never one
//! the reading line computes from the read) and always `-D NAME=VALUE`.
//! A read counts wherever it stands, in a `\if` branch that no run takes
//! too: pgbench runs such a script until the day the branch is taken and
//! then aborts the client; here it is refused before the run, and `-D`
//! is how to run it as it is (the rule is about what no line can set,
//! not about what a run reaches). A `\gset` whose columns the text
//! does not say for certain ([`super::columns`]) may set any name with
//! its prefix, so no such name is refused; a bound in an array subscript
//! that only such a `\gset` may set is sent as the variable when the run
//! has set it, else left as written ([`Sql::optional`]), as pgbench's
//! simple mode does. What only the run can tell (a `\set` in a branch not
//! taken) is the interpreter's to stop.
//!
//! `\if` chains are compiled into conditional and plain jumps, expressions
//! into trees ([`super::expr`]), variable names into slots shared by all
//! the scripts of a run, so the interpreter ([`super::exec`]) never looks
//! a name up.

use std::collections::{HashMap, HashSet};

use super::expr::{Expr, ExprError, is_name_byte, parse_expr};

/// The variables every client has, in their slots 0..4.
pub const CLIENT_ID: usize = 0;
pub const SCALE: usize = 1;
pub const RANDOM_SEED: usize = 2;
pub const DEFAULT_SEED: usize = 3;
const AUTOMATIC: [&str; 4] = ["client_id", "scale", "random_seed", "default_seed"];

/// A compiled set of scripts and what their clients share.
#[derive(Debug)]
pub struct Program {
    pub scripts: Vec<Script>,
    /// Variable names by slot.
    pub names: Vec<String>,
    index: HashMap<String, usize>,
    /// `random_zipfian` call sites in all.
    pub zipf_sites: usize,
    /// Per-statement figures' names, by index.
    pub statements: Vec<&'static str>,
    /// The most parameters one SQL command binds.
    pub max_params: usize,
    /// Where the first `\startpipeline` of any script is ("file:line"),
    /// if one has any.
    pub pipeline: Option<String>,
    /// Where the first command of statements joined by `\\;` is.
    pub compound: Option<String>,
}

impl Program {
    /// The slot of a variable name, if any script or `-D` names it (a
    /// `\gset` column no one reads has none, and is not kept).
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }
}

/// One script, as `--script` or `--builtin` gave it.
#[derive(Debug)]
pub struct Script {
    /// Its name in reports: the file's name, or the builtin's.
    pub name: &'static str,
    /// Where it was read from, as messages name it.
    pub file: String,
    pub weight: u64,
    pub commands: Vec<Command>,
    /// The place of its first command among all the program's (the
    /// scripts' commands one after another): an interpreter keeps what it
    /// has per command in one vector by that place.
    pub base: usize,
}

/// One step of a compiled script.
#[derive(Debug)]
pub enum Command {
    Sql(Sql),
    Set {
        slot: usize,
        expr: Expr,
        /// "file:line", for messages and debug().
        at: String,
    },
    Sleep {
        amount: SleepAmount,
        /// Nanoseconds per unit of the amount.
        unit_ns: u64,
        stat: usize,
        at: String,
    },
    /// `\if`/`\elif`: go on when the condition holds, else jump.
    Test {
        cond: Expr,
        on_false: usize,
        at: String,
    },
    /// The end of a taken branch: to the command after `\endif`.
    Jump(usize),
    /// `\startpipeline`: the SQL commands up to the matching
    /// `\endpipeline` ([`Sql::pipelined`]) are sent without waiting for
    /// their results (extended protocol, no Sync after each).
    StartPipeline {
        at: String,
    },
    /// `\syncpipeline` (pgbench 17's): a Sync inside the pipeline, which
    /// stays open; the results sent so far come back before `\endpipeline`.
    SyncPipeline {
        stat: usize,
        at: String,
    },
    /// `\endpipeline`: a Sync, then every result of the pipeline is read,
    /// and pipeline mode ends. Its statistic is that wait, as pgbench times
    /// it (a pipelined SQL command's own is only its sending).
    EndPipeline {
        stat: usize,
        at: String,
    },
}

#[derive(Debug, PartialEq, Eq)]
pub enum SleepAmount {
    Const(i64),
    Var(usize),
}

/// How an SQL command moves the session's transaction, by its first
/// words: the interpreter rolls back a transaction a failed unit left open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnEffect {
    None,
    Begin,
    End,
}

impl TxnEffect {
    /// Updates `in_txn` (whether a transaction is open) for a command of
    /// this effect that ran.
    pub fn apply(self, in_txn: &mut bool) {
        match self {
            TxnEffect::Begin => *in_txn = true,
            TxnEffect::End => *in_txn = false,
            TxnEffect::None => {}
        }
    }
}

/// Where `\gset` or `\aset` puts the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gset {
    /// `\aset`: every row may be absent or many (the last is kept).
    pub all_rows: bool,
    pub prefix: String,
}

/// An SQL command.
#[derive(Debug)]
pub struct Sql {
    /// As written, for messages.
    pub text: String,
    /// With `$1`, `$2`, … for the variables, to prepare.
    pub prepared: String,
    /// The text around the variables, for `--no-prepared`: one more part
    /// than there are parameters.
    pub parts: Vec<String>,
    /// The variable of each parameter.
    pub params: Vec<usize>,
    /// Per parameter: a bound in an array subscript (`a[1:n]`) that only
    /// a `\gset` of columns the text does not say may set. pgbench leaves
    /// `:n` as written when no variable has the name; so does the
    /// interpreter, for each run of the command, when it is not set.
    pub optional: Vec<bool>,
    pub into: Option<Gset>,
    pub txn: TxnEffect,
    /// Statements joined by `\\;` (pgbench's compound command): one simple
    /// query, whose `\\gset` takes the row of the last statement that
    /// returns rows (no `\\aset`).
    pub compound: bool,
    /// Inside `\startpipeline` … `\endpipeline`: sent, its result read at
    /// the next `\syncpipeline` or `\endpipeline`.
    pub pipelined: bool,
    /// "file:line".
    pub at: String,
    pub stat: usize,
}

/// A parse error: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

/// Line starts of a text, to turn byte offsets into lines and columns.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    /// 1-based line and column (in characters) of byte `offset`.
    fn at(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let end = offset.min(text.len());
        let col = text.get(start..end).map_or(1, |s| s.chars().count() + 1);
        (line, col)
    }
}

/// Builds a [`Program`] from scripts added one by one.
pub struct Compiler {
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// Names given a value by `\set` or `-D`, or automatic.
    assigned: HashSet<String>,
    /// `:name` written inside quotes: refused if the name is assigned.
    quoted: Vec<ParseError>,
    /// Every variable read: refused in [`Compiler::finish`] when nothing
    /// can set it.
    reads: Vec<Read>,
    /// Variables read in an array subscript: where nothing sets one, its
    /// `:name` stays in the SQL text (`a[1:n]`, a slice), as pgbench
    /// leaves it.
    subscript_reads: Vec<String>,
    /// Names a `\gset` or `\aset` sets: prefix and a column the text names.
    gset_names: HashSet<String>,
    /// The prefixes of those (for the hint that a read lacks one).
    gset_prefixes: Vec<String>,
    /// The prefixes of those whose columns the text does not say: any
    /// name with one of them may be set.
    gset_open: Vec<String>,
    zipf_sites: usize,
    statements: Vec<&'static str>,
    scripts: Vec<Script>,
    max_params: usize,
    /// The first `\startpipeline`'s "file:line".
    pipeline: Option<String>,
    /// The first compound command's "file:line".
    compound: Option<String>,
}

impl Default for Compiler {
    fn default() -> Self {
        Compiler::new()
    }
}

impl Compiler {
    pub fn new() -> Compiler {
        let mut c = Compiler {
            names: Vec::new(),
            index: HashMap::new(),
            assigned: AUTOMATIC.iter().map(|s| s.to_string()).collect(),
            quoted: Vec::new(),
            reads: Vec::new(),
            subscript_reads: Vec::new(),
            gset_names: HashSet::new(),
            gset_prefixes: Vec::new(),
            gset_open: Vec::new(),
            zipf_sites: 0,
            statements: Vec::new(),
            scripts: Vec::new(),
            max_params: 0,
            pipeline: None,
            compound: None,
        };
        for name in AUTOMATIC {
            c.slot(name);
        }
        c
    }

    fn slot(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// Leaves in the SQL text each `:name` of an array subscript that
    /// nothing sets: a slice bound (`a[1:n]`), not a variable; and marks
    /// [`Sql::optional`] each that only a `\gset` of unknown columns may
    /// set, for the run to tell.
    ///
    /// Such a command goes as text in a run where the bound is not set,
    /// which a pipeline cannot carry: inside one it is refused.
    fn unbind_slice_bounds(&mut self) -> Result<(), ParseError> {
        let mut scripts = std::mem::take(&mut self.scripts);
        for (file, cmd) in scripts
            .iter_mut()
            .flat_map(|s| s.commands.iter_mut().map(|c| (s.file.clone(), c)))
        {
            let Command::Sql(sql) = cmd else { continue };
            let scan = scan_sql(sql.text.as_bytes(), 0);
            let (vars, joins) = (scan.vars, scan.joins);
            if !vars.iter().any(|v| v.in_subscript) {
                continue;
            }
            let vars: Vec<SqlVar> = vars
                .into_iter()
                .filter(|v| !v.in_subscript || self.settable(&v.name))
                .collect();
            sql.optional = vars
                .iter()
                .map(|v| v.in_subscript && !self.certain(&v.name))
                .collect();
            if sql.pipelined
                && let Some(v) = vars.iter().zip(&sql.optional).find(|(_, o)| **o)
            {
                let line = sql.at.rsplit_once(':').map_or("1", |(_, l)| l);
                return Err(ParseError {
                    file,
                    line: line.parse().unwrap_or(1),
                    column: 1,
                    message: format!(
                        "the bound :{} in a subscript is set only by a \\gset of columns the text does not name, so the command would go as text where it is not set, which a pipeline cannot carry: set {} with \\set or -D, or name the \\gset's columns",
                        v.0.name, v.0.name
                    ),
                });
            }
            (sql.prepared, sql.parts, sql.params) = bind_vars(self, &sql.text, &vars, &joins);
        }
        self.scripts = scripts;
        Ok(())
    }

    /// Whether `name` is given a value by a `\set`, `-D`, the tool, or a
    /// `\gset` column the text names (not only, perhaps, by one whose
    /// columns it does not say).
    fn certain(&self, name: &str) -> bool {
        self.assigned.contains(name) || self.gset_names.contains(name)
    }

    /// Whether some line, `-D` or the tool may give `name` a value.
    fn settable(&self, name: &str) -> bool {
        self.assigned.contains(name)
            || self.gset_names.contains(name)
            || self.gset_open.iter().any(|p| name.starts_with(p.as_str()))
    }

    /// The error for a read of a variable nothing sets, with the nearest
    /// name that is set when one is close enough to be a typo.
    ///
    /// Never offered: a name the reading line itself sets (`\set record
    /// … :records` is no typo of `record`), and, by edit distance, any
    /// name for a read of one or two characters (every short name is
    /// near every other). `-D` is always offered: a read in a branch no
    /// run takes is refused too (the run would stop the day it is taken),
    /// and `-D` is how to run such a script as it is.
    fn undefined(&self, read: &Read) -> ParseError {
        let name = &read.at.message;
        let offered = |k: &String| !read.sets.contains(k);
        let mut known: Vec<&String> = self
            .assigned
            .iter()
            .chain(&self.gset_names)
            .filter(|k| offered(k))
            .collect();
        known.sort();
        let length = name.chars().count();
        let limit = match length {
            0..=2 => 0,
            3..=4 => 1,
            _ => 2,
        };
        // The name with a \gset's prefix first, then the nearest by typos.
        let prefixed = self
            .gset_prefixes
            .iter()
            .map(|p| format!("{p}{name}"))
            .find(|k| self.gset_names.contains(k) && offered(k));
        let nearest = known
            .into_iter()
            .map(|k| (edit_distance(name, k), k.clone()))
            .filter(|(d, _)| (1..=limit).contains(d))
            .min_by_key(|(d, _)| *d);
        let hint = match prefixed.map(|k| (0, k)).or(nearest) {
            Some((_, k)) => format!("did you mean :{k}? or give -D {name}=VALUE"),
            None => format!("set it with \\set {name} EXPRESSION, or give -D {name}=VALUE"),
        };
        let branch = if read.in_branch {
            " (it is read inside \\if: a branch no run takes is checked too, as the run would stop the day it is taken)"
        } else {
            ""
        };
        ParseError {
            message: format!(
                "undefined variable \"{name}\": no \\set, \\gset or \\aset of any script sets it, nor -D; {hint}{branch}"
            ),
            ..read.at.clone()
        }
    }

    /// A `-D NAME=VALUE` variable: its slot.
    pub fn define(&mut self, name: &str) -> usize {
        self.assigned.insert(name.to_string());
        self.slot(name)
    }

    /// Parses `text` (from `file`, as messages name it) as the script
    /// `name` of weight `weight`.
    pub fn add(
        &mut self,
        name: &'static str,
        file: &str,
        text: &str,
        weight: u64,
    ) -> Result<(), ParseError> {
        let commands = ScriptParser {
            c: self,
            name,
            file,
            text,
            bytes: text.as_bytes(),
            lines: Lines::new(text),
            commands: Vec::new(),
            ifs: Vec::new(),
            pipeline: None,
            last_sql: false,
            sql_reads: 0,
        }
        .run()?;
        if commands.is_empty() {
            return Err(ParseError {
                file: file.to_string(),
                line: 1,
                column: 1,
                message: "the script has no command".to_string(),
            });
        }
        let base = self.scripts.iter().map(|s| s.commands.len()).sum();
        self.scripts.push(Script {
            name,
            file: file.to_string(),
            weight,
            commands,
            base,
        });
        Ok(())
    }

    /// The program, once every script is added; refuses a script that
    /// writes a variable it sets inside quotes, and one that reads a
    /// variable nothing can set.
    pub fn finish(mut self) -> Result<Program, ParseError> {
        if let Some(e) = self
            .quoted
            .iter()
            .find(|e| self.assigned.contains(&e.message))
        {
            let name = &e.message;
            return Err(ParseError {
                message: format!(
                    ":{name} is inside quotes, where ysql-bench does not replace it (it binds variables as parameters): write :{name} outside the quotes, e.g. 'x' || :{name}"
                ),
                ..e.clone()
            });
        }
        if let Some(e) = self.reads.iter().find(|r| !self.settable(&r.at.message)) {
            return Err(self.undefined(e));
        }
        if self.subscript_reads.iter().any(|n| !self.certain(n)) {
            self.unbind_slice_bounds()?;
        }
        Ok(Program {
            scripts: self.scripts,
            names: self.names,
            index: self.index,
            zipf_sites: self.zipf_sites,
            statements: self.statements,
            max_params: self.max_params,
            pipeline: self.pipeline,
            compound: self.compound,
        })
    }
}

/// A variable read, for [`Compiler::finish`] to refuse if nothing sets it.
struct Read {
    /// Where; the message is the name.
    at: ParseError,
    /// The names the reading line sets (a `\set`'s, its `\gset`'s
    /// columns): they are computed from the read, so never its hint.
    sets: Vec<String>,
    /// Inside a `\if` branch (or an `\elif`'s condition).
    in_branch: bool,
}

/// An open `\if` while parsing.
struct IfFrame {
    /// The Test whose false branch is not yet known.
    test: Option<usize>,
    /// Jumps to the command after `\endif`.
    to_end: Vec<usize>,
    has_else: bool,
    offset: usize,
    /// The pipeline open at the `\if` (its `\startpipeline`'s offset):
    /// each branch must leave it as it found it.
    pipeline: Option<usize>,
}

struct ScriptParser<'a> {
    c: &'a mut Compiler,
    name: &'static str,
    file: &'a str,
    text: &'a str,
    bytes: &'a [u8],
    lines: Lines,
    commands: Vec<Command>,
    ifs: Vec<IfFrame>,
    /// The open pipeline: its `\startpipeline`'s offset.
    pipeline: Option<usize>,
    /// The last command was SQL (a `\gset` may follow).
    last_sql: bool,
    /// The first of the last SQL command's reads in `c.reads`.
    sql_reads: usize,
}

/// A `:name` in SQL text.
#[derive(Clone, Debug)]
struct SqlVar {
    /// Of the colon.
    offset: usize,
    name: String,
    /// Inside an array subscript (`a[1:n]`), where pgbench, when no
    /// variable has the name, leaves the text as written: a slice.
    in_subscript: bool,
}

/// Where a scan of SQL text stopped.
struct SqlScan {
    /// The end of the command's text (before its `;` or backslash).
    end: usize,
    /// Where parsing goes on.
    next: usize,
    vars: Vec<SqlVar>,
    /// `:name` inside quotes.
    quoted: Vec<(usize, String)>,
    /// Where a `\\;` joins two statements into one command: the offsets
    /// of their backslashes, which the text sent leaves out.
    joins: Vec<usize>,
}

impl ScriptParser<'_> {
    fn err(&self, offset: usize, message: impl Into<String>) -> ParseError {
        let (line, column) = self.lines.at(self.text, offset);
        ParseError {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// Notes a read of `name` at `offset`.
    fn read(&mut self, offset: usize, name: &str) {
        let at = self.err(offset, name);
        let in_branch = !self.ifs.is_empty();
        self.c.reads.push(Read {
            at,
            sets: Vec::new(),
            in_branch,
        });
    }

    fn at(&self, offset: usize) -> String {
        format!("{}:{}", self.name, self.lines.at(self.text, offset).0)
    }

    fn expr_err(&self, e: ExprError) -> ParseError {
        self.err(e.offset, e.message)
    }

    fn run(mut self) -> Result<Vec<Command>, ParseError> {
        let mut pos = 0;
        loop {
            pos = self.skip_space_and_comments(pos);
            if pos >= self.bytes.len() {
                break;
            }
            pos = if self.bytes[pos] == b'\\' && self.bytes.get(pos + 1) != Some(&b';') {
                self.meta(pos)?
            } else {
                self.sql(pos)?
            };
        }
        if let Some(f) = self.ifs.last() {
            return Err(self.err(f.offset, "\\if without a matching \\endif"));
        }
        if let Some(open) = self.pipeline {
            // pgbench aborts the client at the end of the script.
            return Err(self.err(
                open,
                "\\startpipeline without a matching \\endpipeline: the script would end with the pipeline open",
            ));
        }
        Ok(self.commands)
    }

    fn skip_space_and_comments(&self, mut pos: usize) -> usize {
        let b = self.bytes;
        while pos < b.len() {
            if b[pos].is_ascii_whitespace() {
                pos += 1;
            } else if b[pos] == b'-' && b.get(pos + 1) == Some(&b'-') {
                while pos < b.len() && b[pos] != b'\n' {
                    pos += 1;
                }
            } else if b[pos] == b'/' && b.get(pos + 1) == Some(&b'*') {
                pos = skip_block_comment(b, pos);
            } else {
                break;
            }
        }
        pos
    }

    // ------------------------------------------------------------- SQL

    fn sql(&mut self, start: usize) -> Result<usize, ParseError> {
        let scan = scan_sql(self.bytes, start);
        // ASCII whitespace only (with the vertical tab, which pgbench's
        // isspace() skips too), as the byte scanner and the server see it:
        // a Unicode space (U+2000) may end a variable's name.
        let text = self.text[start..scan.end]
            .trim_end_matches(|c: char| c.is_ascii_whitespace() || c == '\x0B');
        if text.is_empty() {
            // A lone `;`.
            return Ok(scan.next);
        }
        for (off, name) in &scan.quoted {
            let e = self.err(*off, name.clone());
            self.c.quoted.push(e);
        }
        self.sql_reads = self.c.reads.len();
        for v in &scan.vars {
            if v.in_subscript {
                self.c.subscript_reads.push(v.name.clone());
            } else {
                self.read(v.offset, &v.name);
            }
        }
        let vars: Vec<SqlVar> = scan
            .vars
            .iter()
            .map(|v| SqlVar {
                offset: v.offset - start,
                ..v.clone()
            })
            .collect();
        let joins: Vec<usize> = scan.joins.iter().map(|j| j - start).collect();
        let (prepared, parts, params) = bind_vars(self.c, text, &vars, &joins);
        let optional = vec![false; params.len()];
        if params.len() > super::MAX_PARAMS {
            return Err(self.err(
                start,
                format!(
                    "the command binds {} variables; PostgreSQL takes at most {}",
                    params.len(),
                    super::MAX_PARAMS
                ),
            ));
        }
        self.c.max_params = self.c.max_params.max(params.len());
        if !joins.is_empty() && self.c.compound.is_none() {
            self.c.compound = Some(format!(
                "{}:{}",
                self.file,
                self.lines.at(self.text, start).0
            ));
        }
        let at = self.at(start);
        let stat = self.statement_name(&at, text);
        self.commands.push(Command::Sql(Sql {
            text: text.to_string(),
            prepared,
            parts,
            params,
            optional,
            into: None,
            txn: compound_txn_effect(text, &joins),
            compound: !joins.is_empty(),
            pipelined: self.pipeline.is_some(),
            at,
            stat,
        }));
        self.last_sql = true;
        Ok(scan.next)
    }

    fn statement_name(&mut self, at: &str, text: &str) -> usize {
        const SHOWN: usize = 60;
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut shown = words.join(" ");
        if shown.chars().count() > SHOWN {
            shown = shown.chars().take(SHOWN - 1).collect::<String>() + "…";
        }
        // Leaked once per script command and run: the reports keep
        // statement names as &'static str.
        let name: &'static str = Box::leak(format!("{at} {shown}").into_boxed_str());
        self.c.statements.push(name);
        self.c.statements.len() - 1
    }

    // ------------------------------------------------------------- meta

    /// The end of a meta-command's line (continued by a backslash at the
    /// end of a line), and where the next command starts.
    fn line_end(&self, mut pos: usize) -> (usize, usize) {
        let b = self.bytes;
        while pos < b.len() {
            if b[pos] == b'\n' {
                let continued = pos >= 1
                    && (b[pos - 1] == b'\\'
                        || (b[pos - 1] == b'\r' && pos >= 2 && b[pos - 2] == b'\\'));
                if !continued {
                    let end = if pos >= 1 && b[pos - 1] == b'\r' {
                        pos - 1
                    } else {
                        pos
                    };
                    return (end, pos + 1);
                }
            }
            pos += 1;
        }
        (b.len(), b.len())
    }

    fn meta(&mut self, start: usize) -> Result<usize, ParseError> {
        let b = self.bytes;
        let mut i = start + 1;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = self.text[start + 1..i].to_ascii_lowercase();
        let (end, next) = self.line_end(i);
        let was_sql = std::mem::replace(&mut self.last_sql, false);
        match name.as_str() {
            "set" => self.set(start, i, end)?,
            "sleep" => self.sleep(start, i, end)?,
            "if" => {
                let cond = self.expression(i, end, "\\if")?;
                self.ifs.push(IfFrame {
                    test: Some(self.commands.len()),
                    to_end: Vec::new(),
                    has_else: false,
                    offset: start,
                    pipeline: self.pipeline,
                });
                let at = self.at(start);
                self.commands.push(Command::Test {
                    cond,
                    on_false: usize::MAX,
                    at,
                });
            }
            "elif" | "else" => {
                let is_elif = name == "elif";
                let cond = if is_elif {
                    Some(self.expression(i, end, "\\elif")?)
                } else {
                    self.no_arguments(&name, i, end)?;
                    None
                };
                let Some(frame) = self.ifs.last() else {
                    return Err(self.err(start, format!("\\{name} without \\if")));
                };
                if frame.has_else {
                    return Err(self.err(start, format!("\\{name} after \\else")));
                }
                self.same_pipeline(frame.pipeline, start, &name)?;
                let jump = self.commands.len();
                self.commands.push(Command::Jump(usize::MAX));
                let here = self.commands.len();
                let test = self.ifs.last_mut().and_then(|f| {
                    f.to_end.push(jump);
                    f.has_else = !is_elif;
                    f.test.take()
                });
                self.patch_test(test, here);
                if let Some(cond) = cond {
                    let at = self.at(start);
                    self.commands.push(Command::Test {
                        cond,
                        on_false: usize::MAX,
                        at,
                    });
                    if let Some(f) = self.ifs.last_mut() {
                        f.test = Some(here);
                    }
                }
            }
            "endif" => {
                self.no_arguments(&name, i, end)?;
                let Some(frame) = self.ifs.pop() else {
                    return Err(self.err(start, "\\endif without \\if"));
                };
                self.same_pipeline(frame.pipeline, start, &name)?;
                let here = self.commands.len();
                self.patch_test(frame.test, here);
                for j in frame.to_end {
                    if let Some(Command::Jump(t)) = self.commands.get_mut(j) {
                        *t = here;
                    }
                }
            }
            "gset" | "aset" => {
                let words: Vec<&str> = self.text[i..end].split_whitespace().collect();
                if words.len() > 1 {
                    return Err(self.err(
                        i,
                        format!(
                            "\\{name} takes at most one argument, a prefix of the variable names"
                        ),
                    ));
                }
                let prefix = words.first().copied().unwrap_or("").to_string();
                let prefix_at = i + self.text[i..end].find(&prefix).unwrap_or(0);
                if let Some(bad) = prefix.bytes().position(|c| !is_name_byte(c)) {
                    return Err(self.err(
                        prefix_at + bad,
                        format!("\\{name}: '{prefix}' is not a variable name prefix (letters, digits and _)"),
                    ));
                }
                if prefix.starts_with(|c: char| c.is_ascii_digit()) {
                    return Err(self.err(
                        prefix_at,
                        format!("\\{name}: '{prefix}' cannot begin a variable name: a name may not start with a digit"),
                    ));
                }
                match self.commands.last_mut() {
                    // pgbench aborts the client on it: the results come
                    // back only at the end of the pipeline.
                    Some(Command::Sql(sql)) if was_sql && sql.pipelined => {
                        return Err(self.err(
                            start,
                            format!("\\{name} is not allowed inside a pipeline: its results are read only at \\endpipeline; end the pipeline before this command"),
                        ));
                    }
                    // pgbench stores each joined statement's last row;
                    // the driver keeps the last row set only.
                    Some(Command::Sql(sql)) if was_sql && sql.compound && name == "aset" => {
                        return Err(self.err(
                            start,
                            "\\aset after statements joined by \\; is not supported (pgbench stores the last row of each): give each statement its own \\aset",
                        ));
                    }
                    Some(Command::Sql(sql)) if was_sql && sql.into.is_none() => {
                        // Of statements joined by \; the text's columns
                        // are not read: any name may come of them.
                        let known = if sql.compound {
                            None
                        } else {
                            super::columns::result_columns(&sql.text)
                        };
                        match known {
                            Some(cols) => {
                                // As pgbench, a column whose name is no
                                // variable name fails the \gset: here
                                // before the run, when the text says it.
                                if let Some(bad) = cols
                                    .iter()
                                    .find(|c| !super::valid_name(&format!("{prefix}{c}")))
                                {
                                    return Err(self.err(
                                        start,
                                        format!(
                                            "\\{name} would store the column \"{bad}\" into the variable \"{prefix}{bad}\", which is no variable name (letters, digits and _, not starting with a digit): name the column with AS"
                                        ),
                                    ));
                                }
                                let c = &mut *self.c;
                                let names: Vec<String> =
                                    cols.iter().map(|col| format!("{prefix}{col}")).collect();
                                for r in c.reads.iter_mut().skip(self.sql_reads) {
                                    r.sets.extend(names.iter().cloned());
                                }
                                c.gset_names.extend(names);
                                c.gset_prefixes.push(prefix.clone());
                            }
                            None => self.c.gset_open.push(prefix.clone()),
                        }
                        sql.into = Some(Gset {
                            all_rows: name == "aset",
                            prefix,
                        });
                    }
                    _ => {
                        return Err(self.err(start, format!("\\{name} must follow an SQL command")));
                    }
                }
            }
            "setshell" | "shell" => {
                return Err(self.err(
                    start,
                    format!(
                        "\\{name} runs a shell command per transaction; ysql-bench does not run shell commands: compute the value with \\set or in SQL"
                    ),
                ));
            }
            "startpipeline" => {
                self.no_arguments(&name, i, end)?;
                if let Some(open) = self.pipeline {
                    let line = self.lines.at(self.text, open).0;
                    return Err(self.err(
                        start,
                        format!("\\startpipeline inside the pipeline started at line {line}: pipelines do not nest"),
                    ));
                }
                self.pipeline = Some(start);
                let at = self.at(start);
                if self.c.pipeline.is_none() {
                    self.c.pipeline = Some(format!(
                        "{}:{}",
                        self.file,
                        self.lines.at(self.text, start).0
                    ));
                }
                self.commands.push(Command::StartPipeline { at });
            }
            "syncpipeline" | "endpipeline" => {
                self.no_arguments(&name, i, end)?;
                if self.pipeline.is_none() {
                    return Err(self.err(
                        start,
                        format!(
                            "\\{name} outside a pipeline: it needs a \\startpipeline before it"
                        ),
                    ));
                }
                let at = self.at(start);
                let stat = self.statement_name(&at, &format!("\\{name}"));
                self.commands.push(if name == "endpipeline" {
                    self.pipeline = None;
                    Command::EndPipeline { stat, at }
                } else {
                    Command::SyncPipeline { stat, at }
                });
            }
            "" => {
                return Err(self.err(
                    start,
                    "a backslash must be followed by a meta-command name, e.g. \\set",
                ));
            }
            other => {
                return Err(self.err(
                    start,
                    format!(
                        "unknown meta-command \\{other}: use \\set, \\sleep, \\if, \\elif, \\else, \\endif, \\gset or \\aset"
                    ),
                ));
            }
        }
        Ok(next)
    }

    /// A branch of `\if` ends (at `\elif`, `\else` or `\endif`) with the
    /// pipeline as it was at the `\if`: a pipeline started in a branch
    /// ends in it, and one open at the `\if` is not ended in a branch, so
    /// that whether a pipeline is open never depends on the branch taken.
    fn same_pipeline(
        &self,
        at_if: Option<usize>,
        start: usize,
        name: &str,
    ) -> Result<(), ParseError> {
        if self.pipeline == at_if {
            return Ok(());
        }
        let why = match self.pipeline {
            Some(open) => format!(
                "the pipeline started at line {} inside this \\if branch must end in it, before \\{name}",
                self.lines.at(self.text, open).0
            ),
            None => format!(
                "this \\if branch ends the pipeline that was open at its \\if; end it before the \\if or after the \\endif (found \\{name})"
            ),
        };
        Err(self.err(start, why))
    }

    fn patch_test(&mut self, test: Option<usize>, target: usize) {
        if let Some(t) = test
            && let Some(Command::Test { on_false, .. }) = self.commands.get_mut(t)
        {
            *on_false = target;
        }
    }

    fn no_arguments(&self, name: &str, from: usize, end: usize) -> Result<(), ParseError> {
        let rest = &self.text[from..end];
        match rest.find(|c: char| !c.is_whitespace() && c != '\\') {
            Some(k) => Err(self.err(from + k, format!("\\{name} takes no argument"))),
            None => Ok(()),
        }
    }

    fn expression(&mut self, from: usize, end: usize, what: &str) -> Result<Expr, ParseError> {
        let c = &mut *self.c;
        let mut sites = c.zipf_sites;
        let mut reads = Vec::new();
        let mut intern = |n: &str, at: usize| -> usize {
            reads.push((at, n.to_string()));
            if let Some(&i) = c.index.get(n) {
                return i;
            }
            c.names.push(n.to_string());
            c.index.insert(n.to_string(), c.names.len() - 1);
            c.names.len() - 1
        };
        let r = parse_expr(self.text, from, end, &mut intern, &mut sites);
        self.c.zipf_sites = sites;
        for (at, name) in reads {
            self.read(at, &name);
        }
        r.map_err(|e| {
            let mut pe = self.expr_err(e);
            if pe.message == "an expression is missing" {
                pe.message = format!("{what} needs an expression");
            }
            pe
        })
    }

    fn set(&mut self, start: usize, from: usize, end: usize) -> Result<(), ParseError> {
        let b = self.bytes;
        let mut i = from;
        while i < end && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        let name_start = i;
        while i < end && is_name_byte(b[i]) {
            i += 1;
        }
        if i == name_start {
            return Err(self.err(
                name_start.min(end),
                "\\set needs a variable name and an expression, e.g. \\set aid random(1, 100000)",
            ));
        }
        let name = self.text[name_start..i].to_string();
        if !super::valid_name(&name) {
            // pgbench fails the \set when it runs.
            return Err(self.err(
                name_start,
                format!("\\set {name}: a variable name may not start with a digit"),
            ));
        }
        let first = self.c.reads.len();
        let expr = self.expression(i, end, "\\set")?;
        for r in self.c.reads.iter_mut().skip(first) {
            r.sets.push(name.clone());
        }
        self.c.assigned.insert(name.clone());
        let slot = self.c.slot(&name);
        let at = self.at(start);
        self.commands.push(Command::Set { slot, expr, at });
        Ok(())
    }

    fn sleep(&mut self, start: usize, from: usize, end: usize) -> Result<(), ParseError> {
        let args = &self.text[from..end];
        let first = args.find(|c: char| !c.is_whitespace()).map(|k| from + k);
        let Some(first) = first else {
            return Err(self.err(start, "\\sleep needs a duration, e.g. \\sleep 10 ms"));
        };
        let rest = &self.text[first..end];
        // The amount: an integer, or :variable; the unit may follow at once.
        let (amount, after) = if let Some(v) = rest.strip_prefix(':') {
            let n = v.bytes().take_while(|&c| is_name_byte(c)).count();
            if n == 0 {
                return Err(self.err(first, "\\sleep: a variable name must follow ':'"));
            }
            self.read(first, &v[..n]);
            (SleepAmount::Var(self.c.slot(&v[..n])), first + 1 + n)
        } else {
            let digits = rest
                .char_indices()
                .take_while(|(k, c)| c.is_ascii_digit() || (*k == 0 && (*c == '-' || *c == '+')))
                .count();
            let num = &rest[..digits];
            match num.parse::<i64>() {
                Ok(n) => (SleepAmount::Const(n), first + digits),
                Err(_) => {
                    return Err(self.err(
                        first,
                        "\\sleep takes a whole number or a :variable, and a unit (us, ms or s)",
                    ));
                }
            }
        };
        let unit_words: Vec<&str> = self.text[after..end].split_whitespace().collect();
        let unit_ns = match unit_words.as_slice() {
            [] => 1_000_000_000,
            [u] => match u.to_ascii_lowercase().as_str() {
                "us" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                _ => {
                    let off = after + self.text[after..end].find(u).unwrap_or(0);
                    return Err(
                        self.err(off, format!("\\sleep: unknown unit '{u}': use us, ms or s"))
                    );
                }
            },
            _ => {
                return Err(self.err(after, "\\sleep takes a duration and at most one unit"));
            }
        };
        let at = self.at(start);
        let shown = self.text[start..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let stat = self.statement_name(&at, &shown);
        self.commands.push(Command::Sleep {
            amount,
            unit_ns,
            stat,
            at,
        });
        Ok(())
    }
}

/// The optimal string alignment distance of two names: insertions,
/// deletions, substitutions and swaps of neighbours, one each (`idd` is
/// 1 from `id`, `detla` 1 from `delta`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: two back, one back, this one.
    let mut back2 = vec![0; b.len() + 1];
    let mut back1: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (back1[j] + 1).min(row[j - 1] + 1).min(back1[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(back2[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut back2, &mut back1);
        std::mem::swap(&mut back1, &mut row);
    }
    back1[b.len()]
}

/// How a command of statements joined by `\\;` (at `joins`) moves the
/// transaction: as its last statement that moves it.
fn compound_txn_effect(text: &str, joins: &[usize]) -> TxnEffect {
    let mut effect = TxnEffect::None;
    let mut from = 0;
    for &to in joins.iter().chain(std::iter::once(&text.len())) {
        match txn_effect(&text[from..to]) {
            TxnEffect::None => {}
            e => effect = e,
        }
        from = (to + 2).min(text.len());
    }
    effect
}

/// How an SQL command moves the transaction, from its first words.
fn txn_effect(text: &str) -> TxnEffect {
    let mut words = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase);
    match (words.next().as_deref(), words.next().as_deref()) {
        (Some("BEGIN" | "START"), _) => TxnEffect::Begin,
        (Some("ROLLBACK"), Some("TO")) => TxnEffect::None,
        (Some("COMMIT" | "END" | "ROLLBACK" | "ABORT"), _) => TxnEffect::End,
        (Some("PREPARE"), Some("TRANSACTION")) => TxnEffect::End,
        _ => TxnEffect::None,
    }
}

fn skip_block_comment(b: &[u8], mut pos: usize) -> usize {
    // Block comments nest in PostgreSQL.
    let mut depth = 0;
    while pos < b.len() {
        if b[pos] == b'/' && b.get(pos + 1) == Some(&b'*') {
            depth += 1;
            pos += 2;
        } else if b[pos] == b'*' && b.get(pos + 1) == Some(&b'/') {
            depth -= 1;
            pos += 2;
            if depth == 0 {
                return pos;
            }
        } else {
            pos += 1;
        }
    }
    pos
}

/// Scans one SQL command from `start`: to a `;` outside quotes, comments
/// and parentheses, a backslash outside quotes, or the end.
fn scan_sql(b: &[u8], start: usize) -> SqlScan {
    let mut vars = Vec::new();
    let mut quoted = Vec::new();
    let mut joins = Vec::new();
    let mut depth = 0i32;
    // Open brackets: true for a subscript, false for ARRAY[...].
    let mut brackets: Vec<bool> = Vec::new();
    let mut i = start;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    while i < b.len() {
        match b[i] {
            b'[' => {
                brackets.push(!follows_array(&b[start..i]));
                i += 1;
            }
            b']' => {
                brackets.pop();
                i += 1;
            }
            b';' if depth <= 0 => {
                return SqlScan {
                    end: i,
                    next: i + 1,
                    vars,
                    quoted,
                    joins,
                };
            }
            // `\;`: the command goes on with another statement (pgbench's
            // compound command, one simple query).
            b'\\' if b.get(i + 1) == Some(&b';') => {
                joins.push(i);
                i += 2;
            }
            b'\\' => {
                return SqlScan {
                    end: i,
                    next: i,
                    vars,
                    quoted,
                    joins,
                };
            }
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth -= 1;
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_block_comment(b, i),
            b'\'' => {
                let escapes =
                    i >= 1 && (b[i - 1] == b'E' || b[i - 1] == b'e') && (i < 2 || !ident(b[i - 2]));
                i = skip_quoted(b, i, b'\'', escapes, &mut quoted);
            }
            b'"' => i = skip_quoted(b, i, b'"', false, &mut quoted),
            b'$' if i >= 1 && ident(b[i - 1]) => i += 1,
            b'$' => {
                // $1 is a parameter; $tag$ … $tag$ a dollar quote.
                let mut j = i + 1;
                if j < b.len() && b[j].is_ascii_digit() {
                    i = j;
                    continue;
                }
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' {
                    let tag = &b[i..=j];
                    let body = j + 1;
                    let close = b[body..]
                        .windows(tag.len())
                        .position(|w| w == tag)
                        .map_or(b.len(), |k| body + k + tag.len());
                    i = close;
                } else {
                    i += 1;
                }
            }
            b':' if b.get(i + 1) == Some(&b':') => i += 2,
            // As pgbench: a name starts with a letter, `_` or a non-ASCII
            // character; `:1` is text (a slice `a[1:2]`).
            b':' if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) => i += 1,
            b':' => {
                let mut j = i + 1;
                while j < b.len() && is_name_byte(b[j]) {
                    j += 1;
                }
                if j > i + 1 {
                    vars.push(SqlVar {
                        offset: i,
                        name: String::from_utf8_lossy(&b[i + 1..j]).into_owned(),
                        in_subscript: brackets.last() == Some(&true),
                    });
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
    SqlScan {
        end: b.len(),
        next: b.len(),
        vars,
        quoted,
        joins,
    }
}

/// Whether `before` ends with the word ARRAY (and spaces): the bracket
/// after it opens an array, not a subscript.
fn follows_array(before: &[u8]) -> bool {
    let t = before.trim_ascii_end();
    let n = t.len();
    n >= 5
        && t[n - 5..].eq_ignore_ascii_case(b"array")
        && (n == 5 || !(t[n - 6].is_ascii_alphanumeric() || t[n - 6] == b'_' || t[n - 6] >= 0x80))
}

/// The statement of an SQL command's `text` with its variables bound:
/// the text to prepare (`$1`, `$2`, …), the pieces around the variables
/// (for `--no-prepared`) and each parameter's slot. A `:name` not among
/// `vars` stays in the text as written; the backslash of each `\\;` at
/// `joins` (offsets in `text`) is left out.
fn bind_vars(
    c: &mut Compiler,
    text: &str,
    vars: &[SqlVar],
    joins: &[usize],
) -> (String, Vec<String>, Vec<usize>) {
    let piece = |from: usize, to: usize| -> String {
        let mut s = String::with_capacity(to - from);
        let mut at = from;
        for &j in joins.iter().filter(|&&j| j >= from && j < to) {
            s.push_str(&text[at..j]);
            at = j + 1;
        }
        s.push_str(&text[at..to]);
        s
    };
    let mut prepared = String::with_capacity(text.len());
    let mut parts = Vec::with_capacity(vars.len() + 1);
    let mut params = Vec::with_capacity(vars.len());
    let mut last = 0;
    for v in vars {
        let p = piece(last, v.offset);
        prepared.push_str(&p);
        prepared.push('$');
        prepared.push_str(&(params.len() + 1).to_string());
        parts.push(p);
        params.push(c.slot(&v.name));
        last = v.offset + 1 + v.name.len();
    }
    let tail = piece(last, text.len());
    prepared.push_str(&tail);
    parts.push(tail);
    (prepared, parts, params)
}

/// Skips a quoted string or identifier starting at `i`; notes `:name`
/// inside it whose name starts with a letter or underscore.
fn skip_quoted(
    b: &[u8],
    mut i: usize,
    q: u8,
    escapes: bool,
    quoted: &mut Vec<(usize, String)>,
) -> usize {
    i += 1;
    while i < b.len() {
        let c = b[i];
        if escapes && c == b'\\' {
            i += 2;
            continue;
        }
        if c == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        if c == b':'
            && b.get(i + 1)
                .is_some_and(|&n| n.is_ascii_alphabetic() || n == b'_')
            && (i == 0 || b[i - 1] != b':')
        {
            let mut j = i + 1;
            while j < b.len() && is_name_byte(b[j]) {
                j += 1;
            }
            quoted.push((i, String::from_utf8_lossy(&b[i + 1..j]).into_owned()));
        }
        i += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Result<Program, ParseError> {
        defining(&[], text)
    }

    /// With `-D` of each of `names`.
    fn defining(names: &[&str], text: &str) -> Result<Program, ParseError> {
        let mut c = Compiler::new();
        for n in names {
            c.define(n);
        }
        c.add("t", "t.sql", text, 1)?;
        c.finish()
    }

    fn error(text: &str) -> String {
        compile(text).expect_err(text).to_string()
    }

    fn sqls(p: &Program) -> Vec<&Sql> {
        p.scripts[0]
            .commands
            .iter()
            .filter_map(|c| match c {
                Command::Sql(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn tpcb_like_compiles_into_its_commands() {
        let p = compile(super::super::TPCB_LIKE).unwrap();
        let cmds = &p.scripts[0].commands;
        assert_eq!(cmds.len(), 11);
        assert!(matches!(cmds[0], Command::Set { .. }));
        let s = sqls(&p);
        assert_eq!(s[0].text, "BEGIN");
        assert_eq!(s[0].txn, TxnEffect::Begin);
        assert_eq!(
            s[1].prepared,
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
        );
        assert_eq!(
            s[1].params,
            vec![p.slot("delta").unwrap(), p.slot("aid").unwrap()]
        );
        assert_eq!(s[1].parts.len(), 3);
        assert_eq!(s[6].text, "END");
        assert_eq!(s[6].txn, TxnEffect::End);
        assert_eq!(s[5].params.len(), 4);
        assert!(s[1].at.ends_with(":6"), "{}", s[1].at);
    }

    #[test]
    fn commands_end_at_semicolons_outside_quotes_comments_and_parentheses() {
        let p = compile(
            "select ';' as a, \"x;y\" -- c;\n from t where f(1; 2) and $$;$$ = $q$;$q$;\n\
             /* a; /* nested; */ b; */ select E'it\\'s; :v';select 2",
        )
        .unwrap();
        let s = sqls(&p);
        assert_eq!(s.len(), 3, "{s:#?}");
        assert!(s[0].text.ends_with("$q$;$q$"), "{}", s[0].text);
        assert_eq!(s[1].text, "select E'it\\'s; :v'");
        assert!(s[1].params.is_empty());
        assert_eq!(s[2].text, "select 2");
    }

    #[test]
    fn variables_become_parameters_but_not_casts_or_quoted_text() {
        let p = defining(&["a"], "select :a::int, ':b', \":c\", :a, $1 -- :d\n").unwrap();
        let s = sqls(&p);
        // The comment stays in the text (the server skips it); its :d is
        // no parameter.
        assert_eq!(s[0].prepared, "select $1::int, ':b', \":c\", $2, $1 -- :d");
        assert_eq!(s[0].params.len(), 2);
        assert_eq!(
            s[0].parts,
            vec!["select ", "::int, ':b', \":c\", ", ", $1 -- :d"]
        );
    }

    #[test]
    fn gset_and_aset_end_the_command_before_them() {
        let p = compile("select 1 as one \\gset p_\nselect 2 as two;\n\\aset\nselect 3\n\\gset")
            .unwrap();
        let s = sqls(&p);
        assert_eq!(s[0].text, "select 1 as one");
        assert_eq!(
            s[0].into,
            Some(Gset {
                all_rows: false,
                prefix: "p_".into()
            })
        );
        assert!(
            s[1].into
                .as_ref()
                .is_some_and(|i| i.all_rows && i.prefix.is_empty())
        );
        assert!(s[2].into.is_some());
    }

    #[test]
    fn if_chains_compile_into_jumps() {
        let p = defining(
            &["a"],
            "\\if :a = 1\n\\set x 1\n\\elif :a = 2\n\\set x 2\n\\else\n\\set x 3\n\\endif\nselect :x;",
        )
        .unwrap();
        let c = &p.scripts[0].commands;
        // Test(→3) Set Jump(→7) Test(→6) Set Jump(→7) Set Sql
        assert!(matches!(c[0], Command::Test { on_false: 3, .. }), "{c:#?}");
        assert!(matches!(c[2], Command::Jump(7)));
        assert!(matches!(c[3], Command::Test { on_false: 6, .. }));
        assert!(matches!(c[5], Command::Jump(7)));
        assert!(matches!(c[7], Command::Sql(_)));
        let p = compile("\\if true\n\\if false\nselect 1;\n\\endif\n\\endif\nselect 2;").unwrap();
        let c = &p.scripts[0].commands;
        assert!(matches!(c[0], Command::Test { on_false: 3, .. }), "{c:#?}");
        assert!(matches!(c[1], Command::Test { on_false: 3, .. }));
    }

    #[test]
    fn sleep_takes_units_and_variables() {
        let p = defining(
            &["d"],
            "\\sleep 10 ms\n\\sleep :d us\n\\sleep 2\n\\sleep 3ms",
        )
        .unwrap();
        let c = &p.scripts[0].commands;
        let units: Vec<(i64, u64)> = c
            .iter()
            .filter_map(|c| match c {
                Command::Sleep {
                    amount: SleepAmount::Const(n),
                    unit_ns,
                    ..
                } => Some((*n, *unit_ns)),
                Command::Sleep { unit_ns, .. } => Some((-1, *unit_ns)),
                _ => None,
            })
            .collect();
        assert_eq!(
            units,
            [
                (10, 1_000_000),
                (-1, 1_000),
                (2, 1_000_000_000),
                (3, 1_000_000)
            ]
        );
    }

    #[test]
    fn continued_meta_commands_span_lines() {
        let p = compile("\\set x 1 + \\\n  2\nselect :x;").unwrap();
        assert_eq!(p.scripts[0].commands.len(), 2);
    }

    #[test]
    fn errors_name_the_file_line_and_column() {
        assert_eq!(
            error("select 1;\n\\set x 1 +* 2\n"),
            "t.sql:2:11: syntax error: unexpected '*'"
        );
        assert!(error("\n\n  \\foo bar").starts_with("t.sql:3:3: unknown meta-command \\foo"));
        assert!(error("\\set x frob(1)").starts_with("t.sql:1:8: unknown function 'frob'"));
        assert!(error("\\setshell x echo 1").contains("does not run shell commands"));
        assert!(error("\\shell ls").starts_with("t.sql:1:1: \\shell runs a shell command"));
        assert!(error("\\startpipeline").contains("without a matching \\endpipeline"));
        assert!(error("\\gset").contains("must follow an SQL command"));
        assert!(error("\\set x 1\n\\gset").contains("t.sql:2:1: \\gset must follow"));
        assert!(error("select 1 \\gset a b").contains("at most one argument"));
        assert!(
            error("\\if true\nselect 1;").starts_with("t.sql:1:1: \\if without a matching \\endif")
        );
        assert!(error("\\else").contains("\\else without \\if"));
        assert!(error("\\endif").contains("\\endif without \\if"));
        assert!(
            error("\\if 1\n\\else\n\\elif 2\n\\endif").contains("t.sql:3:1: \\elif after \\else")
        );
        assert!(error("\\else x").contains("takes no argument"));
        assert!(error("\\set").contains("needs a variable name"));
        assert!(error("\\set x").contains("\\set needs an expression"));
        assert!(error("\\sleep 1 hour").contains("unknown unit 'hour'"));
        assert!(error("\\sleep soon").contains("whole number"));
        assert!(error("-- nothing\n").contains("no command"));
        assert!(
            error("\\set aid 1\nselect ':aid';").starts_with("t.sql:2:9: :aid is inside quotes")
        );
    }

    #[test]
    fn a_variable_nothing_sets_is_refused_where_it_is_read() {
        // Issue 22: the misspelt name used to fail at run time, millions
        // of times.
        assert_eq!(
            error("\\set id random(1, 10)\nselect * from t where id = :idd;"),
            "t.sql:2:28: undefined variable \"idd\": no \\set, \\gset or \\aset of any script sets it, nor -D; did you mean :id? or give -D idd=VALUE"
        );
        assert!(
            error("\\set delta 1\n\\set x :detla * 2")
                .contains("t.sql:2:8: undefined variable \"detla\"")
        );
        assert!(
            error("\\set delta 1\n\\set x :detla * 2")
                .ends_with("did you mean :delta? or give -D detla=VALUE")
        );
        assert!(error("\\if :go\n\\endif").starts_with("t.sql:1:5: undefined variable \"go\""));
        assert!(error("\\sleep :nap ms").starts_with("t.sql:1:8: undefined variable \"nap\""));
        assert!(error("select :nothing_like_it;").ends_with(
            "set it with \\set nothing_like_it EXPRESSION, or give -D nothing_like_it=VALUE"
        ));
        // The automatic variables are close too.
        assert!(error("select :scael;").ends_with("did you mean :scale? or give -D scael=VALUE"));
        // A \gset whose columns the text names sets only those.
        assert!(
            error("select 1 as one, t.two from t \\gset p_\nselect :p_one, :p_two, :p_three;")
                .starts_with("t.sql:2:24: undefined variable \"p_three\"")
        );
        assert!(
            error("select count(*) from t \\gset\nselect :cnt;")
                .starts_with("t.sql:2:8: undefined variable \"cnt\"")
        );
        // Its prefix is part of the name.
        assert!(
            error("select a from t \\gset p_\nselect :a;")
                .ends_with("did you mean :p_a? or give -D a=VALUE")
        );
        // Unknown columns with a prefix: only names without it are refused.
        assert!(
            error("select * from t \\aset r_\nselect :r_x, :r_y, :x;")
                .starts_with("t.sql:2:20: undefined variable \"x\"")
        );
    }

    #[test]
    fn a_read_in_a_branch_never_taken_is_refused_and_the_message_says_how_to_run_it() {
        // The auditor's script: pgbench runs it while :scale stays small.
        let e = error(
            "\\set aid random(1, 100000 * :scale)\n\\if :scale > 1000000\n\\set aid random(1, :accounts)\n\\endif\nselect abalance from pgbench_accounts where aid = :aid;",
        );
        assert!(
            e.starts_with("t.sql:3:20: undefined variable \"accounts\""),
            "{e}"
        );
        assert!(e.contains("or give -D accounts=VALUE"), "{e}");
        assert!(e.contains("read inside \\if"), "{e}");
        // With -D it compiles.
        defining(
            &["accounts"],
            "\\if :scale > 1000000\n\\set aid random(1, :accounts)\n\\endif",
        )
        .unwrap();
        // Outside a branch, no word of branches.
        assert!(!error("select :accounts;").contains("\\if"));
    }

    #[test]
    fn the_hint_never_offers_what_the_reading_line_sets_nor_guesses_short_names() {
        // examples/ycsb-a.sql without -D records=N.
        let ycsb = "\\set rank random(1, 10)\n\\set record abs(hash_fnv1a(:rank, 0)) % :records\nselect :record;";
        let e = error(ycsb);
        assert!(
            e.starts_with("t.sql:2:41: undefined variable \"records\""),
            "{e}"
        );
        assert!(!e.contains("did you mean"), "{e}");
        assert!(e.ends_with("or give -D records=VALUE"), "{e}");
        // Nor a column of the reading command's own \gset.
        let e = error("select :totals + 1 as total \\gset\nselect :total;");
        assert!(!e.contains("did you mean"), "{e}");
        // Set by another line, the near name is offered.
        let e = error("\\set record 1\n\\set x :records + :record");
        assert!(
            e.contains("did you mean :record? or give -D records=VALUE"),
            "{e}"
        );
        // One or two characters: every short name is near every other.
        for (text, name) in [
            ("\\set x 1\nselect :y;", "y"),
            ("\\set ab 1\nselect :ac;", "ac"),
        ] {
            let e = error(text);
            assert!(!e.contains("did you mean"), "{e}");
            assert!(e.ends_with(&format!("or give -D {name}=VALUE")), "{e}");
        }
    }

    #[test]
    fn a_subscript_bound_only_an_unknown_gset_may_set_is_optional() {
        // The auditor's script: the \gset's second column has no name the
        // text says, so any name may be set, m among them.
        let p = compile(
            "select 1 as Foo, (select max(bid) from b) \\gset\nselect (array[[1, 2, 3]])[1][1:m], a[:k] from (select 2 as m) s;\n\\set k 1",
        )
        .unwrap();
        let s = sqls(&p);
        assert_eq!(
            s[1].prepared,
            "select (array[[1, 2, 3]])[1][1$1], a[$2] from (select 2 as m) s"
        );
        assert_eq!(s[1].params, [p.slot("m").unwrap(), p.slot("k").unwrap()]);
        // m may be set or not: the run tells; k is set for certain.
        assert_eq!(s[1].optional, [true, false]);
        assert_eq!(s[0].optional, [] as [bool; 0]);
        // Outside a subscript such a name is an ordinary parameter.
        let p = compile("select * from t \\gset\nselect :m;").unwrap();
        assert_eq!(sqls(&p)[1].optional, [false]);
    }

    #[test]
    fn a_variable_any_line_can_set_is_accepted() {
        for text in [
            // Set by a later line: in an earlier transaction, perhaps.
            "\\if :started\nselect :x;\n\\endif\n\\set x 1\n\\set started 1",
            // A \gset or \aset column, before or after.
            "select :aid;\nselect 1 as aid \\gset",
            "select 1 as one, abalance from t \\gset p_\nselect :p_one + :p_abalance;",
            "select * from t \\gset r_\n\\set y :r_anything + 1",
            "select count(*) + 0 from t \\aset\n\\sleep :n ms\nselect :whatever;",
            "select count(*) from t \\gset\n\\sleep :count ms",
            // The automatic ones.
            "select :client_id, :scale, :random_seed, :default_seed;",
            // Inside quotes, comments and casts, nothing is read.
            "select ':nope', \":nope\", 1::int -- :nope\n",
        ] {
            if let Err(e) = defining(&["started"], text) {
                panic!("{text}: {e}");
            }
        }
        // -D, and another script of the run.
        defining(&["given"], "select :given;").unwrap();
        let mut c = Compiler::new();
        c.add("a", "a.sql", "select :from_b;", 1).unwrap();
        c.add("b", "b.sql", "\\set from_b 1", 1).unwrap();
        c.finish().unwrap();
    }

    #[test]
    fn a_subscript_bound_nothing_sets_stays_sql_as_pgbench_leaves_it() {
        // pgbench sends `:n` as written when no variable has the name:
        // here a slice to the column n.
        let p = compile("select (a)[1:n], a[:n] from t where k = :k;\n\\set k 1").unwrap();
        let s = sqls(&p);
        assert_eq!(s[0].prepared, "select (a)[1:n], a[:n] from t where k = $1");
        assert_eq!(s[0].parts, ["select (a)[1:n], a[:n] from t where k = ", ""]);
        assert_eq!(s[0].params, [p.slot("k").unwrap()]);
        // A bound something sets is a variable, in a subscript too.
        let p = compile("\\set i 2\nselect a[:i], b[lo:hi] from t;").unwrap();
        assert_eq!(sqls(&p)[0].prepared, "select a[$1], b[lo:hi] from t");
        // An ARRAY constructor holds values, not bounds: a typo there is
        // still refused.
        assert!(
            error("\\set id 1\nselect array[:id, :idd];")
                .starts_with("t.sql:2:19: undefined variable \"idd\"")
        );
        assert!(error("select ARRAY [1, :x];").starts_with("t.sql:1:18: undefined variable \"x\""));
        assert!(follows_array(b"select array"));
        assert!(follows_array(b"select ARRAY  "));
        assert!(!follows_array(b"select myarray"));
        assert!(!follows_array(b"select a"));
    }

    #[test]
    fn names_follow_pgbench_15_a_digit_never_starts_one() {
        // pgbench fails `\set 1a 5` and a \gset into "?column?" or
        // "bad name!" when they run; here before the run.
        assert_eq!(
            error("\\set 1a 5"),
            "t.sql:1:6: \\set 1a: a variable name may not start with a digit"
        );
        let e = error("select 1 as \"bad name!\" \\gset");
        assert!(
            e.starts_with("t.sql:1:25: \\gset would store the column \"bad name!\""),
            "{e}"
        );
        assert!(error("select 1 as \"1a\" \\aset").contains("\"1a\", which is no variable name"));
        assert!(
            error("select 1 as a \\gset 1p_").contains("t.sql:1:21: \\gset: '1p_' cannot begin")
        );
        // With a prefix the name is valid.
        let p = compile("select 1 as \"1a\" \\gset p_\nselect :p_1a;").unwrap();
        assert!(p.slot("p_1a").is_some());
        // In SQL, `:1` is text, as pgbench sends it: no variable to set.
        let p = compile("select (array[1, 2, 3])[2:3], :1a;").unwrap();
        assert_eq!(sqls(&p)[0].prepared, "select (array[1, 2, 3])[2:3], :1a");
        assert!(sqls(&p)[0].params.is_empty());
        // Non-ASCII names are names.
        compile("\\set é1 1\nselect :é1;").unwrap();
    }

    #[test]
    fn a_pipeline_compiles_into_its_commands_with_its_sql_marked() {
        let p = defining(
            &["x"],
            "\\startpipeline\nselect 1;\n\\set y :x + 1\nselect :y;\n\\syncpipeline\nbegin;\n\\sleep 1 ms\nend;\n\\endpipeline\nselect 2;",
        )
        .unwrap();
        let c = &p.scripts[0].commands;
        assert!(matches!(c[0], Command::StartPipeline { .. }), "{c:#?}");
        assert!(matches!(c[4], Command::SyncPipeline { .. }), "{c:#?}");
        assert!(matches!(c[8], Command::EndPipeline { .. }), "{c:#?}");
        let pipelined: Vec<bool> = sqls(&p).iter().map(|s| s.pipelined).collect();
        assert_eq!(pipelined, [true, true, true, true, false]);
        assert_eq!(p.pipeline.as_deref(), Some("t.sql:1"));
        let Command::EndPipeline { stat, .. } = &c[8] else {
            unreachable!()
        };
        assert_eq!(p.statements[*stat], "t:9 \\endpipeline");
        // A pipeline inside one branch, or around a whole \if, is whole.
        compile("\\if 1\n\\startpipeline\nselect 1;\n\\endpipeline\n\\else\nselect 2;\n\\endif")
            .unwrap();
        compile("\\startpipeline\n\\if 1\nselect 1;\n\\else\nselect 2;\n\\endif\n\\endpipeline")
            .unwrap();
        assert_eq!(compile("select 1;").unwrap().pipeline, None);
    }

    #[test]
    fn pipelines_are_checked_as_pgbench_15_fails_them_but_before_the_run() {
        // pgbench 15 aborts the client on these when it meets them.
        assert_eq!(
            error("\\startpipeline\nselect 1;\n\\startpipeline\n"),
            "t.sql:3:1: \\startpipeline inside the pipeline started at line 1: pipelines do not nest"
        );
        assert_eq!(
            error("select 1;\n\\endpipeline\n"),
            "t.sql:2:1: \\endpipeline outside a pipeline: it needs a \\startpipeline before it"
        );
        assert!(
            error("\\syncpipeline").starts_with("t.sql:1:1: \\syncpipeline outside a pipeline")
        );
        assert_eq!(
            error("select 0;\n\\startpipeline\nselect 1;\n"),
            "t.sql:2:1: \\startpipeline without a matching \\endpipeline: the script would end with the pipeline open"
        );
        let e = error("\\startpipeline\nselect 1 \\gset f\n\\endpipeline\n");
        assert!(
            e.starts_with("t.sql:2:10: \\gset is not allowed inside a pipeline"),
            "{e}"
        );
        assert!(
            error("\\startpipeline\nselect 1 as a \\aset\n\\endpipeline\n")
                .contains("\\aset is not allowed inside a pipeline")
        );
        // As pgbench's parser: no arguments.
        assert!(
            error("\\startpipeline x\nselect 1;\n\\endpipeline")
                .contains("t.sql:1:16: \\startpipeline takes no argument")
        );
        assert!(
            error("\\startpipeline\n\\endpipeline now").contains("\\endpipeline takes no argument")
        );
        // Whether a pipeline is open never depends on the branch taken
        // (pgbench decides it at run time, and fails in one branch).
        let e = error("\\if 1\n\\startpipeline\n\\endif\nselect 1;\n\\endpipeline");
        assert!(
            e.starts_with(
                "t.sql:3:1: the pipeline started at line 2 inside this \\if branch must end in it"
            ),
            "{e}"
        );
        let e = error("\\startpipeline\n\\if 1\n\\endpipeline\n\\else\nselect 1;\n\\endif");
        assert!(
            e.starts_with(
                "t.sql:4:1: this \\if branch ends the pipeline that was open at its \\if"
            ),
            "{e}"
        );
        // A command that may go as text cannot be pipelined.
        let e = error(
            "select 2 as m, (select 1) \\gset\n\\startpipeline\nselect (array[1, 2])[1:m];\n\\endpipeline",
        );
        assert!(
            e.starts_with("t.sql:3:1: the bound :m in a subscript"),
            "{e}"
        );
    }

    #[test]
    fn statements_joined_by_backslash_semicolon_are_one_command_as_in_pgbench() {
        // pgbench's own \gset test: the command runs on, and its \gset
        // takes the last statement's row.
        let p = compile("\\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\nselect :i5;")
            .unwrap();
        let s = sqls(&p);
        assert_eq!(s.len(), 2, "{s:#?}");
        assert!(s[0].compound && !s[1].compound);
        assert_eq!(s[0].prepared, "; ; SELECT 0 AS i5 ; SELECT 5 AS i5 ; ;");
        assert!(s[0].into.is_some());
        assert_eq!(p.compound.as_deref(), Some("t.sql:1"));
        // Variables in each statement; a \; inside quotes is text.
        let p = defining(&["a", "b"], "select :a, '\\;' \\; select :b;").unwrap();
        let s = sqls(&p);
        assert_eq!(s[0].prepared, "select $1, '\\;' ; select $2");
        assert_eq!(s[0].parts, ["select ", ", '\\;' ; select ", ""]);
        // The transaction's state is the last statement's that moves it.
        let p = compile("BEGIN \\; select 1 \\; COMMIT;\nselect 2 \\; commit \\; begin;\nend;")
            .unwrap();
        let effects: Vec<TxnEffect> = sqls(&p).iter().map(|s| s.txn).collect();
        assert_eq!(effects, [TxnEffect::End, TxnEffect::Begin, TxnEffect::End]);
        // Of joined statements the columns are not read: any name may be set.
        compile("select 1 as a \\; select 2 as b \\gset p_\nselect :p_b, :p_c;").unwrap();
        assert!(
            error("select 1 as a \\; select 2 as b \\aset")
                .starts_with("t.sql:1:32: \\aset after statements joined by \\; is not supported")
        );
        assert_eq!(compile("select 1;").unwrap().compound, None);
    }

    #[test]
    fn edit_distance_counts_swaps_as_one() {
        assert_eq!(edit_distance("idd", "id"), 1);
        assert_eq!(edit_distance("detla", "delta"), 1);
        assert_eq!(edit_distance("aid", "bid"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("café", "cafe"), 1);
    }

    #[test]
    fn non_ascii_text_is_read_and_pointed_at_by_character() {
        let p = compile("\\set café 1\nselect 'né', :café;").unwrap();
        assert_eq!(sqls(&p)[0].prepared, "select 'né', $1");
        assert_eq!(
            error("\\set x 'é'\n"),
            "t.sql:1:8: unexpected character '''"
        );
        assert_eq!(
            error("\\set é 1 € 2\n"),
            "t.sql:1:10: unexpected character '€'"
        );
    }

    #[test]
    fn the_transaction_effect_comes_from_the_first_words() {
        assert_eq!(
            txn_effect("begin isolation level serializable"),
            TxnEffect::Begin
        );
        assert_eq!(txn_effect("START TRANSACTION"), TxnEffect::Begin);
        assert_eq!(txn_effect("End"), TxnEffect::End);
        assert_eq!(txn_effect("rollback to savepoint a"), TxnEffect::None);
        assert_eq!(txn_effect("ROLLBACK"), TxnEffect::End);
        assert_eq!(txn_effect("select 1"), TxnEffect::None);
    }

    #[test]
    fn statement_names_say_script_line_and_text() {
        let p = compile("\\set aid 1\nUPDATE   pgbench_accounts\n  SET abalance = 0 WHERE aid = :aid;\n\\sleep 1 ms").unwrap();
        assert_eq!(
            p.statements[0],
            "t:2 UPDATE pgbench_accounts SET abalance = 0 WHERE aid = :aid"
        );
        assert_eq!(p.statements[1], "t:4 \\sleep 1 ms");
    }
}
