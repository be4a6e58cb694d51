//! What differs between YugabyteDB YSQL and PostgreSQL, as generated SQL.
//!
//! The tool speaks one SQL dialect with two flavours of DDL: YugabyteDB
//! wants a hash-sharded primary key and may pre-split the table into
//! tablets; PostgreSQL wants a plain primary key. Everything here is pure
//! text generation, so it is unit-tested without a server (no YugabyteDB
//! server can run in the test environment).

use crate::db::sql::TableName;

/// The kind of server, detected from `version()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    Postgres,
    Yugabyte,
}

impl Flavor {
    /// YugabyteDB's `version()` reads like `PostgreSQL 11.2-YB-2.20.1.0-b0 on ...`.
    pub fn from_version(version: &str) -> Flavor {
        if version.contains("-YB-") {
            Flavor::Yugabyte
        } else {
            Flavor::Postgres
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Flavor::Postgres => "PostgreSQL",
            Flavor::Yugabyte => "YugabyteDB",
        }
    }
}

/// The comment that marks a table as created by ysql-bench: only such a
/// table is truncated or dropped without `--force`.
pub const TABLE_MARK: &str = "created by ysql-bench";

/// The table where the clients of a `--clients` run meet, and its comment:
/// the mark by which a clean-up knows it.
pub const BARRIER_TABLE: &str = "ysql_bench_barrier";
pub const BARRIER_MARK: &str = "ysql-bench: the barrier of --clients runs";

/// The table's columns, in order; the shape a table must have to be ours.
pub const COLUMNS: [(&str, &str); 5] = [
    ("id", "integer"),
    ("f1", "text"),
    ("f2", "text"),
    ("f3", "text"),
    ("f4", "text"),
];

/// `CREATE TABLE` for the flavour. `tablets` applies to YugabyteDB only.
pub fn create_table(flavor: Flavor, table: &TableName, tablets: Option<u32>) -> String {
    let t = table.quoted();
    match flavor {
        Flavor::Postgres => {
            format!("create table {t} (id int primary key, f1 text, f2 text, f3 text, f4 text)")
        }
        Flavor::Yugabyte => {
            let mut sql = format!(
                "create table {t} (id int, f1 text, f2 text, f3 text, f4 text, primary key (id hash))"
            );
            if let Some(n) = tablets {
                sql.push_str(&format!(" split into {n} tablets"));
            }
            sql
        }
    }
}

/// Marks the table as ours.
pub fn comment_table(table: &TableName) -> String {
    format!("comment on table {} is '{TABLE_MARK}'", table.quoted())
}

/// The setting that makes YugabyteDB skip distributed transactions for
/// writes (`--nontransactional`).
pub fn nontransactional_setting() -> &'static str {
    "set yb_disable_transactional_writes = on"
}

/// The server-side generator used by the `procedure` load: a function that
/// makes an alphanumeric string of a given length (md5 hex digits, so no
/// extension is needed), and a procedure that inserts a range of ids and
/// commits every `batch` rows. Plain plpgsql that YugabyteDB (PostgreSQL
/// 11 based) and PostgreSQL 11+ both run.
pub fn procedure_ddl() -> [String; 2] {
    [
        format!(
            "create or replace function {RANDOM_TEXT}(len int) returns text \
             language sql volatile as $f${RANDOM_TEXT_BODY}$f$"
        ),
        format!(
            "create or replace procedure {LOAD_PROCEDURE}(tbl text, first_id bigint, end_id bigint, batch int, len int) \
             language plpgsql as $p${LOAD_PROCEDURE_BODY}$p$"
        ),
    ]
}

/// The names of the procedure load's function and procedure.
pub const RANDOM_TEXT: &str = "ysql_bench_random_text";
pub const LOAD_PROCEDURE: &str = "ysql_bench_load";

/// Their bodies, as the server keeps them (`pg_proc.prosrc`): a clean-up
/// knows an unmarked routine of an older ysql-bench by its body.
pub const RANDOM_TEXT_BODY: &str = " \
    select left(string_agg(md5(random()::text), ''), len) \
    from generate_series(1, (len + 31) / 32) ";
pub const LOAD_PROCEDURE_BODY: &str = " \
    declare \
      lo bigint := first_id; \
      hi bigint; \
    begin \
      while lo < end_id loop \
        hi := least(lo + batch, end_id); \
        execute format('insert into %I (id, f1, f2, f3, f4) \
          select g, ysql_bench_random_text($3), ysql_bench_random_text($3), \
                 ysql_bench_random_text($3), ysql_bench_random_text($3) \
          from generate_series($1, $2 - 1) g', tbl) using lo, hi, len; \
        commit; \
        lo := hi; \
      end loop; \
    end ";

/// Marks the function and the procedure as the tool's, as tables are.
pub fn procedure_marks() -> [String; 2] {
    [
        format!("comment on function {RANDOM_TEXT}(int) is '{TABLE_MARK}'"),
        format!(
            "comment on procedure {LOAD_PROCEDURE}(text, bigint, bigint, int, int) is '{TABLE_MARK}'"
        ),
    ]
}

/// The CALL of the procedure for one thread's range of ids.
pub fn procedure_call(
    table: &TableName,
    first_id: u64,
    end_id: u64,
    batch: usize,
    len: usize,
) -> String {
    format!(
        "call ysql_bench_load({}, {first_id}, {end_id}, {batch}, {len})",
        crate::db::sql::quote_literal(table.as_str())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str) -> TableName {
        TableName::new(name).unwrap()
    }

    #[test]
    fn flavor_comes_from_the_version_string() {
        assert_eq!(
            Flavor::from_version("PostgreSQL 11.2-YB-2.20.1.0-b0 on x86_64-pc-linux-gnu"),
            Flavor::Yugabyte
        );
        assert_eq!(
            Flavor::from_version("PostgreSQL 15.19 (Debian 15.19-0+deb12u1) on x86_64"),
            Flavor::Postgres
        );
    }

    #[test]
    fn yugabyte_ddl_is_hash_sharded_and_split() {
        assert_eq!(
            create_table(Flavor::Yugabyte, &t("test_table"), Some(6)),
            "create table \"test_table\" (id int, f1 text, f2 text, f3 text, f4 text, primary key (id hash)) split into 6 tablets"
        );
        assert!(!create_table(Flavor::Yugabyte, &t("x"), None).contains("split"));
    }

    #[test]
    fn postgres_ddl_has_a_plain_key_and_ignores_tablets() {
        assert_eq!(
            create_table(Flavor::Postgres, &t("My \"T\""), Some(6)),
            "create table \"My \"\"T\"\"\" (id int primary key, f1 text, f2 text, f3 text, f4 text)"
        );
    }

    #[test]
    fn the_procedure_call_quotes_the_table_name_as_a_literal() {
        assert_eq!(
            procedure_call(&t("it's"), 10, 20, 5, 24),
            "call ysql_bench_load('it''s', 10, 20, 5, 24)"
        );
        // The procedure itself quotes it as an identifier with %I.
        assert!(procedure_ddl()[1].contains("insert into %I"));
        assert!(procedure_ddl()[1].contains("commit;"));
    }

    /// A clean-up knows an unmarked routine of an older ysql-bench by its
    /// body: the DDL must stay, byte for byte, what every version sent.
    #[test]
    fn the_procedure_ddl_is_what_older_versions_sent() {
        let older = [
            "create or replace function ysql_bench_random_text(len int) returns text \
             language sql volatile as $f$ \
             select left(string_agg(md5(random()::text), ''), len) \
             from generate_series(1, (len + 31) / 32) $f$",
            "create or replace procedure ysql_bench_load(tbl text, first_id bigint, end_id bigint, batch int, len int) \
             language plpgsql as $p$ \
             declare \
               lo bigint := first_id; \
               hi bigint; \
             begin \
               while lo < end_id loop \
                 hi := least(lo + batch, end_id); \
                 execute format('insert into %I (id, f1, f2, f3, f4) \
                   select g, ysql_bench_random_text($3), ysql_bench_random_text($3), \
                          ysql_bench_random_text($3), ysql_bench_random_text($3) \
                   from generate_series($1, $2 - 1) g', tbl) using lo, hi, len; \
                 commit; \
                 lo := hi; \
               end loop; \
             end $p$",
        ];
        assert_eq!(procedure_ddl(), older);
        assert!(older[0].contains(&format!("$f${RANDOM_TEXT_BODY}$f$")));
        assert!(older[1].contains(&format!("$p${LOAD_PROCEDURE_BODY}$p$")));
    }
}
