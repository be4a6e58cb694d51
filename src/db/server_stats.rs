//! The SQL that reads the server's own statistics, and the parsing of its
//! answers: `pg_stat_database`, `pg_stat_user_tables`,
//! `pg_stat_statements` and the sample of `pg_stat_activity`.
//!
//! Kept apart from [`super::server_watch`] (which decides when to read
//! them) so that the text sent to each kind of server can be tested
//! without one: YugabyteDB 2.x is built on PostgreSQL 11, whose
//! pg_stat_statements names its columns `total_time` and `max_time` where
//! PostgreSQL 13 and later say `total_exec_time` and `max_exec_time`;
//! everything else read here has the same names in both.
//!
//! Every query is a single statement without parameters sent in one
//! round trip, so that each costs the server exactly one transaction,
//! which the watcher counts and takes out of the figures.

use crate::db::sql::quote_literal;
use crate::stats::server::{DbCounters, TableCounters};

/// `pg_stat_database` of the connection's database.
pub fn database_sql() -> String {
    format!(
        "select {} from pg_stat_database where datname = current_database()",
        int8_columns(DbCounters::COLUMNS, "")
    )
}

/// `pg_stat_user_tables` of the tables named (as the user wrote them,
/// unquoted: they are quoted here), one row per table that exists.
pub fn tables_sql(tables: &[String]) -> String {
    let names: Vec<String> = tables
        .iter()
        .map(|t| quote_literal(&crate::db::sql::quote_ident(t)))
        .collect();
    format!(
        "select relname::text, {} from pg_stat_user_tables where relid in (select to_regclass(n) from unnest(array[{}]::text[]) n)",
        int8_columns(TableCounters::COLUMNS, ""),
        names.join(", ")
    )
}

/// `col1, col2, ...` cast to int8, NULL read as 0 (idx_scan of a table
/// without an index).
fn int8_columns(cols: &[&str], prefix: &str) -> String {
    cols.iter()
        .map(|c| format!("coalesce({prefix}{c}, 0)::int8"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where pg_stat_statements is and how its columns are named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementsView {
    /// The extension's schema, quoted.
    pub schema: String,
    /// `server_version_num`: 130000 and later name the columns
    /// `*_exec_time`.
    pub version_num: i32,
}

/// pg_stat_statements entries of this database whose text names one of
/// the tables, without the tool's own statistics queries (which name the
/// tables too, in `pg_stat_user_tables`'s filter). Columns: a key that
/// tells entries apart, the text, calls, rows, total and max time in ms.
pub fn statements_sql(view: &StatementsView, tables: &[String]) -> String {
    let (total, max) = if view.version_num >= 130_000 {
        ("total_exec_time", "max_exec_time")
    } else {
        ("total_time", "max_time")
    };
    let names: Vec<String> = tables
        .iter()
        .map(|t| format!("strpos(query, {}) > 0", quote_literal(t)))
        .collect();
    format!(
        "select coalesce(queryid::text, md5(query)) || ':' || userid::text, query, calls::int8, rows::int8, \
         {total}::float8, {max}::float8 from {}.pg_stat_statements \
         where dbid = (select oid from pg_database where datname = current_database()) \
         and ({}) and strpos(query, 'pg_stat') = 0",
        view.schema,
        names.join(" or ")
    )
}

/// Where the pg_stat_statements extension is installed in this database
/// (its schema), if it is.
pub const STATEMENTS_SCHEMA_SQL: &str = "select n.nspname::text, current_setting('server_version_num')::int4 from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_stat_statements'";

/// Whether this server flushes a backend's statistics on request
/// (PostgreSQL 15 and later): then the watcher's own queries are counted
/// exactly where they fall.
pub const HAS_FORCE_FLUSH_SQL: &str =
    "select exists (select 1 from pg_proc where proname = 'pg_stat_force_next_flush')";

/// Makes this backend publish its statistics as soon as the statement ends.
pub const FORCE_FLUSH_SQL: &str = "select pg_stat_force_next_flush()";

/// What tells two endpoints apart that are one server under two names
/// (127.0.0.1 and localhost): the same postmaster started at the same
/// microsecond, on the same port.
pub const FINGERPRINT_SQL: &str =
    "select pg_postmaster_start_time()::text || ' ' || current_setting('port')";

/// Settings that make the counters or the waits meaningless when off.
pub const TRACKING_SQL: &str =
    "select current_setting('track_counts'), current_setting('track_activities')";

/// The label of one backend in a sample: its wait event, or `CPU` when it
/// is active and waits on nothing PostgreSQL instruments, or its state.
const EVENT_SQL: &str = "case when wait_event is not null then wait_event_type || ':' || wait_event \
     when state = 'active' then 'CPU' else coalesce(state, 'unknown') end";

/// One sample: the run's backends (by `application_name`, but not the
/// sampling connection itself) counted per event as `event=n,...`, and
/// with `with_counters` the database's commits and rollbacks so far.
pub fn sample_sql(application_name: &str, with_counters: bool) -> String {
    let events = format!(
        "(select coalesce(string_agg(ev || '=' || n, ','), '') from \
         (select {EVENT_SQL} as ev, count(*) as n from pg_stat_activity \
         where application_name = {} and backend_type = 'client backend' and pid <> pg_backend_pid() \
         group by 1) s)",
        quote_literal(application_name)
    );
    if with_counters {
        format!(
            "select {events}, xact_commit::int8, xact_rollback::int8 from pg_stat_database where datname = current_database()"
        )
    } else {
        format!("select {events}, null::int8, null::int8")
    }
}

/// How many of the run's backends (other than this connection) exist.
pub fn backends_sql(application_name: &str) -> String {
    format!(
        "select count(*)::int8, count(*) filter (where state = 'active')::int8 from pg_stat_activity \
         where application_name = {} and pid <> pg_backend_pid()",
        quote_literal(application_name)
    )
}

/// Reads `event=n,event=n` as [`sample_sql`] writes it; anything else is
/// skipped rather than trusted.
pub fn parse_events(text: &str) -> Vec<(&str, u64)> {
    text.split(',')
        .filter_map(|part| {
            let (ev, n) = part.rsplit_once('=')?;
            let n = n.trim().parse().ok()?;
            (!ev.is_empty()).then_some((ev, n))
        })
        .collect()
}

/// `application_name` of the run's workers: the name asked for (the
/// URL's, or `ysql-bench`) and the run id, within PostgreSQL's 63 bytes
/// (the name is cut, never the id, which is what the sampler looks for).
pub fn run_application_name(base: Option<&str>, run_id: &str) -> String {
    const MAX: usize = 63;
    let base = base.filter(|b| !b.is_empty()).unwrap_or("ysql-bench");
    let room = MAX.saturating_sub(run_id.len() + 1);
    let mut cut = base.len().min(room);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{run_id}", &base[..cut])
}

/// A run id from the start time and the process id, and a counter for
/// runs of one process that start in the same second (tests).
pub fn run_id(started: std::time::SystemTime) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let secs = started
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    format!("{secs:x}-{}-{n}", std::process::id())
}

/// The name of the watcher's own connections: the workers' with `-stats`,
/// so that it is never counted among them.
pub fn stats_application_name(workers: &str) -> String {
    let mut cut = workers.len().min(63 - 6);
    while !workers.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-stats", &workers[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(version_num: i32) -> StatementsView {
        StatementsView {
            schema: "\"public\"".to_string(),
            version_num,
        }
    }

    #[test]
    fn pg_stat_statements_columns_follow_the_version() {
        let tables = vec!["test_table".to_string()];
        let pg15 = statements_sql(&view(150_002), &tables);
        assert!(pg15.contains("total_exec_time::float8, max_exec_time::float8"));
        assert!(pg15.contains("from \"public\".pg_stat_statements"));
        assert!(pg15.contains("strpos(query, 'test_table') > 0"));
        // YugabyteDB 2.x (PostgreSQL 11.2: server_version_num 110002).
        let yb = statements_sql(&view(110_002), &tables);
        assert!(yb.contains("total_time::float8, max_time::float8"), "{yb}");
        assert!(!yb.contains("exec_time"), "{yb}");
        // Apart from the two columns, the text is the same.
        assert_eq!(
            yb.replace("total_time", "total_exec_time")
                .replace("max_time", "max_exec_time"),
            pg15
        );
    }

    #[test]
    fn table_names_are_quoted_as_identifiers_inside_literals() {
        let sql = tables_sql(&["it's \"odd\"".to_string()]);
        assert!(
            sql.contains("array['\"it''s \"\"odd\"\"\"']::text[]"),
            "{sql}"
        );
        assert!(sql.contains("coalesce(idx_scan, 0)::int8"));
        let sql = statements_sql(&view(150_000), &["it's".to_string()]);
        assert!(sql.contains("strpos(query, 'it''s') > 0"), "{sql}");
    }

    #[test]
    fn the_sample_finds_the_runs_backends_by_name_and_labels_their_state() {
        let sql = sample_sql("ysql-bench-1-2-0", true);
        assert!(sql.contains("application_name = 'ysql-bench-1-2-0'"));
        assert!(sql.contains("pid <> pg_backend_pid()"));
        assert!(sql.contains("when state = 'active' then 'CPU'"));
        assert!(sql.contains("xact_commit"));
        let sql = sample_sql("x'y", false);
        assert!(sql.contains("'x''y'"));
        assert!(!sql.contains("pg_stat_database"));
    }

    #[test]
    fn sampled_events_parse_and_junk_is_skipped() {
        assert_eq!(
            parse_events("CPU=3,Client:ClientRead=1,Lock:relation=2"),
            vec![("CPU", 3), ("Client:ClientRead", 1), ("Lock:relation", 2)]
        );
        assert_eq!(
            parse_events("idle in transaction (aborted)=1"),
            vec![("idle in transaction (aborted)", 1)]
        );
        assert!(parse_events("").is_empty());
        assert_eq!(
            parse_events("x,=3,CPU=two,IO:WALSync=4"),
            vec![("IO:WALSync", 4)]
        );
    }

    #[test]
    fn the_application_name_keeps_the_run_id_whole() {
        assert_eq!(
            run_application_name(None, "65a-42-0"),
            "ysql-bench-65a-42-0"
        );
        assert_eq!(
            run_application_name(Some("myapp"), "65a-42-0"),
            "myapp-65a-42-0"
        );
        let long = "é".repeat(40);
        let name = run_application_name(Some(&long), "65a-42-0");
        assert!(name.len() <= 63, "{}", name.len());
        assert!(name.ends_with("-65a-42-0"));
        let stats = stats_application_name(&name);
        assert!(stats.len() <= 63 && stats.ends_with("-stats"), "{stats}");
        assert_ne!(stats, name);
        let a = run_id(std::time::SystemTime::now());
        let b = run_id(std::time::SystemTime::now());
        assert_ne!(a, b);
    }
}
