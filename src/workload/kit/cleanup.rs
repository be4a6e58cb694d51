//! Clean-ups: `cleanup` drops everything the tool created in the database,
//! and each family's own (`table-cleanup`, `ycsb-cleanup`, `oltp-cleanup`,
//! `booking-cleanup`, `tpcc-cleanup`, `pgbench-cleanup`) drops that
//! family's tables; none drops anything else.
//!
//! What the tool created is what carries its mark: every table is
//! commented `created by ysql-bench` when it is created (a load adds its
//! state after those words), the procedure load's function and procedure
//! too, and the barrier table of `--clients` runs carries a comment of its
//! own. Every version of this tool has marked its tables, so the mark is
//! the whole test: a table of the same name without it (the user's own
//! `usertable`, the `pgbench_accounts` of `pgbench -i`, the original
//! ysql-bench's `test_table`) is left, and the summary says so and why.
//! `--force` lets a family's clean-up drop such a table when it has the
//! family's columns, as it lets a load write into one; `cleanup` never
//! drops an unmarked table. Routines were marked later than tables: one
//! without the mark whose body is byte for byte the tool's is the tool's.
//!
//! Tables are looked for in the schemas of the connection's search_path,
//! where the tool creates and finds them; a marked table in another schema
//! is listed, not dropped (connect with that search_path to drop it).
//! Every statement names the table with its schema, so that the table
//! judged is the table dropped, whatever shadows it on the path. Nothing is
//! dropped with CASCADE: a table that another object depends on (a view, a
//! foreign key) is reported, and the clean-up fails.
//!
//! A clean-up's work is its set-up; no unit is timed. What it dropped (with
//! its rows, counted up to a bound before the drop) and what it left are
//! its [`Finding`]s, in the summary and the JSON report.

use std::sync::Mutex;

use tokio_postgres::Client;

use crate::db::dialect::{
    BARRIER_MARK, BARRIER_TABLE, Flavor, LOAD_PROCEDURE, LOAD_PROCEDURE_BODY, RANDOM_TEXT,
    RANDOM_TEXT_BODY, TABLE_MARK,
};
use crate::db::schema::{self, Relation, Routine, TableDef};
use crate::db::sql::TableName;
use crate::error::{Error, Result};
use crate::workload::{
    BoxFuture, DynOperation, Facts, Finding, Role, Settings, Spec, TableSet, Tables, Workload,
};

/// Rows counted at most per dropped table: enough to say what went,
/// without reading a table of a billion rows before dropping it.
pub const COUNT_CAP: u64 = 1_000_000;

/// The tables of one family, as its clean-up knows them.
pub struct Family {
    /// What its tables are called in messages ("YCSB").
    pub name: &'static str,
    pub tables: &'static Tables,
    /// More names of its tables, dropped when marked (sbtestN beyond
    /// `--tables`).
    pub more: Option<fn(&str) -> bool>,
    /// Whether the procedure load's function and procedure are the
    /// family's.
    pub routines: bool,
}

/// The spec of a clean-up: no unit, no pacing, it drops.
pub const fn spec(
    name: &'static str,
    about: &'static str,
    build: fn(&'static Spec, &Settings) -> Result<Box<dyn Workload>>,
) -> Spec {
    Spec {
        name,
        aliases: &[],
        about,
        role: Role::Load,
        paced: false,
        writes: true,
        drops: true,
        unit: "table",
        units: "tables",
        build,
    }
}

/// Builds the clean-up of `family`, or of every family of `all`
/// (`cleanup`, whose list the workload layer's `cleanup` module keeps,
/// the first family's tables standing for all). The names
/// (`--table-name`) are checked now, before any connection.
pub fn build(
    spec: &'static Spec,
    s: &Settings,
    family: Option<&'static Family>,
    all: &'static [&'static Family],
) -> Result<Box<dyn Workload>> {
    let families: Vec<&Family> = match family {
        Some(f) => vec![f],
        None => all.to_vec(),
    };
    let mut defs = Vec::new();
    for f in families {
        // The columns are the same for both flavours; only the DDL, unused
        // here, differs.
        defs.extend((f.tables.defs)(s, Flavor::Postgres)?);
    }
    // What the summary names as the operation's table: the first of the
    // family's (`--tables 0` leaves sysbench's none: then its set's name).
    let Some(tables) = family.or(all.first().copied()).map(|f| f.tables) else {
        return Err(Error::run("a clean-up of no family: nothing to drop"));
    };
    let table = match defs.first() {
        Some(d) => d.name.clone(),
        None => TableName::new(s.table_name.as_deref().unwrap_or(tables.key()))?,
    };
    Ok(Box::new(Cleanup {
        spec,
        // No unit: its work is its set-up. The tables are gone after it:
        // nothing for the server's statistics to read.
        facts: Facts {
            has_units: false,
            stat_tables: Vec::new(),
            ..Facts::new(spec, table)
        },
        defs,
        family,
        tables,
        force: s.force,
        several_clients: s.client.clients > 1,
        findings: Mutex::new(Vec::new()),
    }))
}

struct Cleanup {
    spec: &'static Spec,
    facts: Facts,
    /// None: every family.
    family: Option<&'static Family>,
    /// The table set the operation names: the family's, or the first
    /// family's for `cleanup`.
    tables: &'static Tables,
    /// The tables of the family (of every family), under this run's names.
    defs: Vec<TableDef>,
    force: bool,
    /// This run is one of several clients, which meet at the barrier
    /// table: it is in use.
    several_clients: bool,
    findings: Mutex<Vec<Finding>>,
}

/// What a clean-up does with one object.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    /// Not its business: another family's, or nobody's it knows.
    Ignore,
    /// Drop it; `forced` when it is not the tool's and --force said so.
    Drop { forced: bool },
    /// Leave it, for this reason.
    Leave(String),
}

fn marked(comment: &str) -> bool {
    comment.starts_with(TABLE_MARK)
}

impl Cleanup {
    fn named(&self, name: &str) -> Option<&TableDef> {
        self.defs.iter().find(|d| d.name.as_str() == name)
    }

    fn is_barrier(&self, r: &Relation) -> bool {
        self.family.is_none()
            && r.name == BARRIER_TABLE
            && (r.comment == BARRIER_MARK || marked(&r.comment))
    }

    /// What to do with a relation the catalog query found.
    fn judge(&self, r: &Relation, path: &[String]) -> Verdict {
        let ours = marked(&r.comment) || self.is_barrier(r);
        let known = self.named(&r.name).is_some();
        let relevant = match self.family {
            None => ours || known,
            Some(f) => known || (ours && f.more.is_some_and(|more| more(&r.name))),
        };
        if !relevant {
            return Verdict::Ignore;
        }
        if !r.on_path {
            return if ours {
                Verdict::Leave(format!(
                    "schema {} is not on this connection's search_path ({}): connect with it on the path (options=-csearch_path={}) to drop it",
                    r.schema,
                    path.join(", "),
                    r.schema
                ))
            } else {
                Verdict::Ignore
            };
        }
        if !r.is_table() {
            return Verdict::Leave(format!(
                "it is a {}, not a table ysql-bench created",
                r.kind_name()
            ));
        }
        if self.is_barrier(r) && self.several_clients {
            return Verdict::Leave("this --clients run meets at it".to_string());
        }
        if ours {
            return Verdict::Drop { forced: false };
        }
        let not_ours =
            format!("it was not created by ysql-bench (its comment is not '{TABLE_MARK}')");
        match (self.family, self.named(&r.name)) {
            (Some(_), Some(def)) if r.columns != def.columns => {
                let have: Vec<String> = r.columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
                Verdict::Leave(format!(
                    "{not_ours}, and it has other columns ({}) than ysql-bench's ({}): not dropped, even with --force",
                    have.join(", "),
                    def.shape
                ))
            }
            (Some(_), Some(_)) if self.force => Verdict::Drop { forced: true },
            (Some(_), Some(_)) => Verdict::Leave(format!(
                "{not_ours}; add --force to drop it anyway (its rows are lost)"
            )),
            _ => Verdict::Leave(not_ours),
        }
    }

    /// What to do with a routine of the procedure load's names.
    fn judge_routine(&self, r: &Routine, path: &[String]) -> Verdict {
        let body = if r.name == RANDOM_TEXT {
            RANDOM_TEXT_BODY
        } else {
            LOAD_PROCEDURE_BODY
        };
        let ours = marked(&r.comment) || r.body == body;
        match (ours, r.on_path) {
            (true, true) => Verdict::Drop { forced: false },
            (true, false) => Verdict::Leave(format!(
                "schema {} is not on this connection's search_path ({}): connect with it on the path to drop it",
                r.schema,
                path.join(", ")
            )),
            (false, true) => Verdict::Leave(format!(
                "it was not created by ysql-bench (its comment is not '{TABLE_MARK}', and its body is not ysql-bench's)"
            )),
            (false, false) => Verdict::Ignore,
        }
    }

    fn note(&self, label: &str, text: String) {
        if let Ok(mut f) = self.findings.lock() {
            f.push(Finding {
                label: label.to_string(),
                text,
            });
        }
    }

    /// What the clean-up is of, for its last line.
    fn what(&self) -> String {
        match self.family {
            Some(f) => format!("no {} table", f.name),
            None => "no table".to_string(),
        }
    }

    async fn clean(&self, client: &Client) -> Result<()> {
        let path = schema::search_path(client).await?;
        let mut names: Vec<String> = self
            .defs
            .iter()
            .map(|d| d.name.as_str().to_string())
            .collect();
        if self.family.is_none() {
            names.push(BARRIER_TABLE.to_string());
        }
        let relations = schema::find_relations(client, TABLE_MARK, &[BARRIER_MARK], &names).await?;
        let routines = if self.family.is_none_or(|f| f.routines) {
            schema::find_routines(client, &[RANDOM_TEXT, LOAD_PROCEDURE]).await?
        } else {
            Vec::new()
        };
        let mut tally = Tally::default();
        for r in &relations {
            let q = r.qualified();
            match self.judge(r, &path) {
                Verdict::Ignore => {}
                Verdict::Leave(why) => {
                    tally.left += 1;
                    self.note("left", format!("{} {q}: {why}", r.kind_name()));
                }
                Verdict::Drop { forced } => {
                    let rows = schema::count_rows_upto(client, &q, COUNT_CAP).await.ok();
                    let rows_text = rows_text(rows);
                    crate::say!(">> drop table {q} ({rows_text})");
                    match schema::drop_object(client, "table", &q).await {
                        Ok(()) => {
                            tally.tables += 1;
                            tally.add_rows(rows);
                            let forced = if forced {
                                ", not created by ysql-bench: dropped as --force says"
                            } else {
                                ""
                            };
                            self.note("dropped", format!("table {q} ({rows_text}){forced}"));
                        }
                        Err(e) => tally.failed(self, e),
                    }
                }
            }
        }
        for r in &routines {
            let q = r.qualified();
            let kind = r.kind_name();
            match self.judge_routine(r, &path) {
                Verdict::Ignore => {}
                Verdict::Leave(why) => {
                    tally.left += 1;
                    self.note("left", format!("{kind} {q}: {why}"));
                }
                Verdict::Drop { .. } => {
                    crate::say!(">> drop {kind} {q}");
                    match schema::drop_object(client, kind, &q).await {
                        Ok(()) => {
                            tally.routines += 1;
                            self.note("dropped", format!("{kind} {q}"));
                        }
                        Err(e) => tally.failed(self, e),
                    }
                }
            }
        }
        self.note("in all", tally.summary(&self.what(), &path));
        match tally.first_failure {
            None => Ok(()),
            Some(first) => Err(Error::run(format!(
                "{first}{}",
                match tally.failures {
                    0 | 1 => String::new(),
                    n => format!(" (and {} more, listed in the summary)", n - 1),
                }
            ))),
        }
    }
}

/// "1000 rows", or "more than 1000000 rows" past [`COUNT_CAP`].
fn rows_text(rows: Option<u64>) -> String {
    match rows {
        None => "rows not counted".to_string(),
        Some(n) if n > COUNT_CAP => format!("more than {COUNT_CAP} rows"),
        Some(n) => count(n, "row"),
    }
}

/// "1 table", "2 tables".
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// What a clean-up did, counted.
#[derive(Default)]
struct Tally {
    tables: u64,
    routines: u64,
    rows: u64,
    /// Some table had more rows than were counted.
    rows_more: bool,
    left: u64,
    failures: u64,
    first_failure: Option<String>,
}

impl Tally {
    fn add_rows(&mut self, rows: Option<u64>) {
        match rows {
            Some(n) if n > COUNT_CAP => {
                self.rows += COUNT_CAP;
                self.rows_more = true;
            }
            Some(n) => self.rows += n,
            None => self.rows_more = true,
        }
    }

    /// A drop failed; `e` says what and why ("cannot drop table ...").
    fn failed(&mut self, cleanup: &Cleanup, e: Error) {
        cleanup.note("not dropped", e.to_string());
        self.failures += 1;
        self.first_failure.get_or_insert(e.to_string());
    }

    /// The last line: what went and what stayed.
    fn summary(&self, none: &str, path: &[String]) -> String {
        if self.tables == 0 && self.routines == 0 && self.left == 0 && self.failures == 0 {
            return format!(
                "nothing to drop: {none} ysql-bench created is in the schemas of the search_path ({})",
                path.join(", ")
            );
        }
        let rows = if self.rows_more {
            format!("more than {}", count(self.rows, "row"))
        } else {
            count(self.rows, "row")
        };
        let mut text = match (self.tables, self.routines) {
            (0, 0) => "dropped nothing".to_string(),
            (t, 0) => format!("dropped {} ({rows})", count(t, "table")),
            (0, r) => format!("dropped {}", count(r, "function")),
            (t, r) => format!(
                "dropped {} ({rows}) and {}",
                count(t, "table"),
                count(r, "function")
            ),
        };
        text.push_str(&format!("; left {}", self.left));
        if self.failures > 0 {
            text.push_str(&format!("; {} could not be dropped", self.failures));
        }
        text
    }
}

impl Workload for Cleanup {
    fn spec(&self) -> &'static Spec {
        self.spec
    }

    fn facts(&self) -> &Facts {
        &self.facts
    }

    fn tables(&self) -> &'static dyn TableSet {
        self.tables
    }

    fn set_up<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.clean(client))
    }

    fn findings(&self) -> Vec<Finding> {
        self.findings.lock().map(|f| f.clone()).unwrap_or_default()
    }

    fn worker(&self, _thread: usize) -> Box<dyn DynOperation> {
        Box::new(crate::workload::NoUnits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::cleanup::{FAMILIES, SPEC};
    use crate::workload::{oltp, pgbench, tpcc, ycsb};

    fn settings() -> Settings {
        crate::config::RunPlan::from_cli(
            <crate::cli::Cli as clap::Parser>::try_parse_from([
                "ysql-bench",
                "--sandbox",
                "-o",
                "cleanup",
            ])
            .unwrap(),
        )
        .unwrap()
        .workload
    }

    fn cleanup(family: Option<&'static Family>, force: bool, clients: usize) -> Cleanup {
        let mut s = settings();
        s.force = force;
        s.client.clients = clients;
        let spec = match family {
            None => &SPEC,
            Some(_) => &ycsb::CLEANUP,
        };
        let mut defs = Vec::new();
        for f in family.map_or(FAMILIES.to_vec(), |f| vec![f]) {
            defs.extend((f.tables.defs)(&s, Flavor::Postgres).unwrap());
        }
        Cleanup {
            spec,
            facts: Facts::new(spec, defs[0].name.clone()),
            family,
            tables: family.unwrap_or(FAMILIES[0]).tables,
            defs,
            force,
            several_clients: clients > 1,
            findings: Mutex::new(Vec::new()),
        }
    }

    fn rel(name: &str, comment: &str, columns: &[(&str, &str)]) -> Relation {
        Relation {
            schema: "public".to_string(),
            name: name.to_string(),
            relkind: "r".to_string(),
            comment: comment.to_string(),
            columns: columns
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
            on_path: true,
        }
    }

    fn path() -> Vec<String> {
        vec!["public".to_string()]
    }

    const BRANCHES: [(&str, &str); 3] = [
        ("bid", "integer"),
        ("bbalance", "integer"),
        ("filler", "character(88)"),
    ];

    #[test]
    fn only_a_marked_table_is_dropped_by_cleanup() {
        let all = cleanup(None, true, 1);
        let drop = Verdict::Drop { forced: false };
        let loaded = "created by ysql-bench; loaded 10 rows";
        assert_eq!(
            all.judge(&rel("pgbench_branches", loaded, &BRANCHES), &path()),
            drop
        );
        // Any name the tool gave it (--table-name of an earlier run).
        assert_eq!(all.judge(&rel("bench_t", TABLE_MARK, &[]), &path()), drop);
        // pgbench -i's own: left, even with --force.
        match all.judge(&rel("pgbench_branches", "", &BRANCHES), &path()) {
            Verdict::Leave(why) => assert!(why.contains("not created by ysql-bench"), "{why}"),
            v => panic!("{v:?}"),
        }
        // A table nobody of the tool's names: not its business.
        assert_eq!(
            all.judge(&rel("orders_2024", "", &[]), &path()),
            Verdict::Ignore
        );
        // A view of a table's name is not a table.
        let mut view = rel("usertable", "", &[]);
        view.relkind = "v".to_string();
        assert!(matches!(all.judge(&view, &path()), Verdict::Leave(w) if w.contains("a view")));
    }

    #[test]
    fn a_marked_table_off_the_search_path_is_left_and_said() {
        let all = cleanup(None, false, 1);
        let mut r = rel("usertable", TABLE_MARK, &[]);
        r.schema = "bench2".to_string();
        r.on_path = false;
        match all.judge(&r, &path()) {
            Verdict::Leave(why) => {
                assert!(
                    why.contains("bench2") && why.contains("search_path"),
                    "{why}"
                )
            }
            v => panic!("{v:?}"),
        }
        r.comment.clear();
        assert_eq!(all.judge(&r, &path()), Verdict::Ignore);
    }

    #[test]
    fn a_family_drops_its_own_and_with_force_a_table_of_its_shape() {
        let fam = cleanup(Some(&pgbench::init::FAMILY), false, 1);
        let drop = Verdict::Drop { forced: false };
        assert_eq!(
            fam.judge(&rel("pgbench_branches", TABLE_MARK, &BRANCHES), &path()),
            drop
        );
        // Another family's marked table is not this family's.
        assert_eq!(
            fam.judge(&rel("usertable", TABLE_MARK, &[]), &path()),
            Verdict::Ignore
        );
        match fam.judge(&rel("pgbench_branches", "", &BRANCHES), &path()) {
            Verdict::Leave(why) => assert!(why.contains("--force"), "{why}"),
            v => panic!("{v:?}"),
        }
        let forced = cleanup(Some(&pgbench::init::FAMILY), true, 1);
        assert_eq!(
            forced.judge(&rel("pgbench_branches", "", &BRANCHES), &path()),
            Verdict::Drop { forced: true }
        );
        // Other columns: somebody else's table, whatever --force says.
        match forced.judge(&rel("pgbench_branches", "", &[("id", "integer")]), &path()) {
            Verdict::Leave(why) => assert!(why.contains("even with --force"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn oltp_cleanup_drops_every_marked_sbtest_whatever_tables_says() {
        let fam = cleanup(Some(&oltp::FAMILY), false, 1);
        let drop = Verdict::Drop { forced: false };
        assert_eq!(fam.judge(&rel("sbtest7", TABLE_MARK, &[]), &path()), drop);
        assert_eq!(
            fam.judge(&rel("sbtest7", "", &[]), &path()),
            Verdict::Ignore
        );
        assert_eq!(
            fam.judge(&rel("sbtestx", TABLE_MARK, &[]), &path()),
            Verdict::Ignore
        );
    }

    #[test]
    fn the_barrier_is_dropped_unless_this_run_meets_at_it() {
        let barrier = rel(BARRIER_TABLE, BARRIER_MARK, &[]);
        assert_eq!(
            cleanup(None, false, 1).judge(&barrier, &path()),
            Verdict::Drop { forced: false }
        );
        assert!(matches!(
            cleanup(None, false, 2).judge(&barrier, &path()),
            Verdict::Leave(_)
        ));
        assert_eq!(
            cleanup(Some(&tpcc::FAMILY), false, 1).judge(&barrier, &path()),
            Verdict::Ignore
        );
    }

    #[test]
    fn a_routine_is_the_tools_by_its_mark_or_its_body() {
        let all = cleanup(None, false, 1);
        let routine = |comment: &str, body: &str| Routine {
            schema: "public".to_string(),
            name: LOAD_PROCEDURE.to_string(),
            args: String::new(),
            procedure: true,
            comment: comment.to_string(),
            body: body.to_string(),
            on_path: true,
        };
        let drop = Verdict::Drop { forced: false };
        assert_eq!(all.judge_routine(&routine(TABLE_MARK, "x"), &path()), drop);
        assert_eq!(
            all.judge_routine(&routine("", LOAD_PROCEDURE_BODY), &path()),
            drop
        );
        assert!(matches!(
            all.judge_routine(&routine("", "begin null; end"), &path()),
            Verdict::Leave(_)
        ));
    }

    #[test]
    fn rows_are_counted_up_to_the_cap() {
        assert_eq!(rows_text(Some(1)), "1 row");
        assert_eq!(rows_text(Some(10)), "10 rows");
        assert_eq!(rows_text(Some(COUNT_CAP + 1)), "more than 1000000 rows");
        let mut t = Tally::default();
        t.add_rows(Some(5));
        t.add_rows(Some(COUNT_CAP + 1));
        t.tables = 2;
        assert_eq!(
            t.summary("no table", &path()),
            "dropped 2 tables (more than 1000005 rows); left 0"
        );
        assert!(
            Tally::default()
                .summary("no YCSB table", &path())
                .starts_with("nothing to drop")
        );
    }
}
