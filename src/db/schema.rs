//! The server and the table: detect the flavour, create, check, truncate
//! and drop the benchmark table, measure its row size, and find what a
//! clean-up may drop.
//!
//! The tool only ever truncates or drops a table it created itself (marked
//! with a table comment at creation) and whose columns have the expected
//! shape; any other table is refused before the first write unless the user
//! says `--force`. A benchmark must never destroy data it does not own.

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Row};

use super::dialect::{self, Flavor, TABLE_MARK};
use super::unnamed;
use crate::db::sql::{TableName, quote_ident};
use crate::error::{Error, Result};

/// What the run learned about the server.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerInfo {
    pub flavor: Flavor,
    /// The full `version()` string.
    pub version: String,
    /// The tool's own connection, as the server saw it: "TLSv1.3
    /// (TLS_AES_256_GCM_SHA384)", "none", or "unknown" when the server
    /// has no pg_stat_ssl (or through a pooler, which shows its own link).
    pub encryption: String,
}

// Every query here is an unnamed statement (`query_typed`, or
// [`unnamed`] where the parameters' types follow from the values): parsed,
// bound and run in one round trip, which leaves nothing on the server
// connection that a pooler in transaction mode (PgBouncer) hands the next
// client.

/// The one row a query must return.
fn one_row(rows: Vec<Row>) -> std::result::Result<Row, &'static str> {
    rows.into_iter().next().ok_or("the query returned no row")
}

/// Asks the server what it is.
pub async fn detect(client: &Client) -> Result<ServerInfo> {
    let rows = client
        .query_typed("select version()", &[])
        .await
        .map_err(|e| Error::db("cannot read the server version", e))?;
    let row = one_row(rows)
        .map_err(|why| Error::run(format!("cannot read the server version: {why}")))?;
    let version: String = row.get(0);
    Ok(ServerInfo {
        flavor: Flavor::from_version(&version),
        version,
        encryption: encryption(client).await,
    })
}

/// Whether this connection is encrypted, from pg_stat_ssl; not knowing is
/// no reason to stop.
async fn encryption(client: &Client) -> String {
    let sql = "select ssl, coalesce(version, ''), coalesce(cipher, '') from pg_stat_ssl where pid = pg_backend_pid()";
    let Ok(rows) = client.query_typed(sql, &[]).await else {
        return "unknown".to_string();
    };
    let Some(row) = rows.into_iter().next() else {
        return "unknown".to_string();
    };
    let (ssl, version, cipher): (bool, String, String) = (row.get(0), row.get(1), row.get(2));
    if ssl {
        format!("{version} ({cipher})")
    } else {
        "none".to_string()
    }
}

/// What stands under the table's name.
#[derive(Debug, PartialEq, Eq)]
pub enum TableState {
    Missing,
    /// Created by ysql-bench, with the expected columns.
    Ours,
    /// Another table: why it is not ours.
    Foreign {
        shape_ok: bool,
        why: String,
    },
}

/// A table a workload needs: its name, the columns it must have (name
/// and `format_type`), and the DDL that creates it.
pub struct TableDef {
    pub name: TableName,
    pub columns: Vec<(String, String)>,
    /// The columns as messages say them ("id integer, f1..f4 text").
    pub shape: &'static str,
    pub ddl: String,
}

/// Looks at the table without touching it.
pub async fn inspect(client: &Client, def: &TableDef) -> Result<TableState> {
    let table = &def.name;
    let ctx = || format!("cannot inspect table {}", table.quoted());
    let row = client
        .query_typed(
            "select c.oid, coalesce(obj_description(c.oid, 'pg_class'), ''), c.relkind::text \
             from pg_class c where c.oid = to_regclass($1)",
            &[(&table.quoted(), Type::TEXT)],
        )
        .await
        .map_err(|e| Error::db(ctx(), e))?
        .into_iter()
        .next();
    let Some(row) = row else {
        return Ok(TableState::Missing);
    };
    let oid: u32 = row.get(0);
    let comment: String = row.get(1);
    let relkind: String = row.get(2);
    let columns: Vec<(String, String)> = client
        .query_typed(
            "select attname::text, format_type(atttypid, atttypmod) from pg_attribute \
             where attrelid = $1 and attnum > 0 and not attisdropped order by attnum",
            &[(&oid, Type::OID)],
        )
        .await
        .map_err(|e| Error::db(ctx(), e))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    Ok(classify(def, &relkind, &columns, &comment))
}

/// Decides from the catalog facts whether the table is ours.
fn classify(
    def: &TableDef,
    relkind: &str,
    columns: &[(String, String)],
    comment: &str,
) -> TableState {
    let expected = &def.columns;
    if relkind != "r" && relkind != "p" {
        return TableState::Foreign {
            shape_ok: false,
            why: "it is not a table (a view, sequence or index has that name)".to_string(),
        };
    }
    if columns != expected.as_slice() {
        let have: Vec<String> = columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
        return TableState::Foreign {
            shape_ok: false,
            why: format!(
                "it has other columns ({}) than ysql-bench's ({})",
                have.join(", "),
                def.shape
            ),
        };
    }
    if !comment.starts_with(TABLE_MARK) {
        return TableState::Foreign {
            shape_ok: true,
            why: format!("it was not created by ysql-bench (its comment is not '{TABLE_MARK}')"),
        };
    }
    TableState::Ours
}

/// Drops (with `--drop`) and creates the table as the plan says, refusing
/// any table that is not ours before anything is written. `writes` tells
/// whether the operations will write into an existing table; `filled`
/// whether a load of the run fills it: only then is it created or
/// dropped (a table that queries alone read was checked to be there and
/// hold rows, and stays as it is).
pub async fn prepare_table(
    client: &Client,
    def: &TableDef,
    drop: bool,
    force: bool,
    writes: bool,
    filled: bool,
) -> Result<()> {
    let t = def.name.quoted();
    let mut state = inspect(client, def).await?;
    if !filled && state == TableState::Missing {
        // The run checked before it began that the tables its queries
        // read are there: this one was dropped since. A query still
        // never creates a table.
        return Err(Error::run(format!(
            "table {t} does not exist (it did when the run began), and only a load creates it"
        )));
    }
    let drop = drop && filled;
    let refuse = |why: &str, action: &str| {
        Error::usage(format!(
            "refusing to {action} table {t}: {why}; use another --table-name, or add --force if its data may be lost"
        ))
    };
    if drop && state != TableState::Missing {
        if let TableState::Foreign { why, .. } = &state
            && !force
        {
            return Err(refuse(why, "drop"));
        }
        crate::say!(">> drop table {t}");
        client
            .batch_execute(&format!("drop table {t}"))
            .await
            .map_err(|e| Error::db(format!("cannot drop table {t}"), e))?;
        state = TableState::Missing;
    }
    match state {
        TableState::Missing => {
            crate::say!(">> create table {t}");
            client
                .batch_execute(&def.ddl)
                .await
                .map_err(|e| Error::db(format!("cannot create table {t}"), e))?;
            client
                .batch_execute(&dialect::comment_table(&def.name))
                .await
                .map_err(|e| Error::db(format!("cannot mark table {t}"), e))?;
        }
        TableState::Ours => {}
        TableState::Foreign { shape_ok, why } => {
            if !shape_ok {
                return Err(Error::usage(format!(
                    "refusing to use table {t}: {why}; use another --table-name, or --drop --force to replace it"
                )));
            }
            if writes && !force {
                return Err(refuse(&why, "write into"));
            }
        }
    }
    Ok(())
}

/// What the table's mark says about its last load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadState {
    /// Created, never loaded to the end (or not marked at all).
    Unknown,
    /// A load started and did not finish: rows are missing.
    Incomplete,
    /// The last load wrote this many rows and finished.
    Loaded(u64),
}

const LOADING: &str = "load incomplete";

/// Reads the load state from the table's comment.
pub fn parse_load_state(comment: &str) -> LoadState {
    let Some(rest) = comment.strip_prefix(TABLE_MARK) else {
        return LoadState::Unknown;
    };
    let rest = rest.trim_start_matches(';').trim();
    if rest == LOADING {
        return LoadState::Incomplete;
    }
    rest.strip_prefix("loaded ")
        .and_then(|r| r.strip_suffix(" rows"))
        .and_then(|n| n.parse().ok())
        .map_or(LoadState::Unknown, LoadState::Loaded)
}

async fn set_comment(client: &Client, table: &TableName, text: &str) -> Result<()> {
    client
        .batch_execute(&format!(
            "comment on table {} is {}",
            table.quoted(),
            crate::db::sql::quote_literal(text)
        ))
        .await
        .map_err(|e| Error::db(format!("cannot mark table {}", table.quoted()), e))
}

/// SQLSTATE insufficient_privilege: here, a role that may write the
/// table but does not own it, so may not comment on it.
const INSUFFICIENT_PRIVILEGE: &str = "42501";

/// Marks a load as started: until [`mark_loaded`], the table is known to
/// be incomplete, also to a later run. A role that may write the table but
/// does not own it (a common set-up for a benchmark role) cannot set the
/// mark: the load goes on without it, with a warning. Whether the table
/// may be emptied was decided before, from the mark the owner left, so
/// skipping it here weakens no safety check.
pub async fn mark_loading(client: &Client, table: &TableName) -> Result<()> {
    match set_comment(client, table, &format!("{TABLE_MARK}; {LOADING}")).await {
        Err(e) if e.sqlstate() == Some(INSUFFICIENT_PRIVILEGE) => {
            crate::say!(
                "warning: {e}: the load goes on unmarked (only the table's owner may mark it), so a later select or update cannot tell whether this load finished"
            );
            Ok(())
        }
        other => other,
    }
}

/// Marks a load as finished with `rows` rows; skipped for a role that may
/// not mark the table ([`mark_loading`] said so already).
pub async fn mark_loaded(client: &Client, table: &TableName, rows: u64) -> Result<()> {
    match set_comment(client, table, &format!("{TABLE_MARK}; loaded {rows} rows")).await {
        Err(e) if e.sqlstate() == Some(INSUFFICIENT_PRIVILEGE) => Ok(()),
        other => other,
    }
}

/// The load state of the table.
pub async fn load_state(client: &Client, table: &TableName) -> Result<LoadState> {
    let row = unnamed::query_one(
        client,
        "select coalesce(obj_description(to_regclass($1), 'pg_class'), '')",
        &[&table.quoted()],
    )
    .await
    .map_err(|e| Error::db(format!("cannot inspect table {}", table.quoted()), e))?;
    Ok(parse_load_state(&row.get::<_, String>(0)))
}

/// Whether the table holds no row at all.
pub async fn is_empty(client: &Client, table: &TableName) -> Result<bool> {
    let sql = format!("select not exists (select 1 from {})", table.quoted());
    let row = unnamed::query_one(client, &sql, &[])
        .await
        .map_err(|e| Error::db(format!("cannot read {}", table.quoted()), e))?;
    Ok(row.get(0))
}

/// What a workload that looks rows up finds in its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    Missing,
    Empty,
    HasRows,
}

/// Whether the table exists and holds at least one row, without touching
/// it (and without creating it).
pub async fn contents(client: &Client, table: &TableName) -> Result<Contents> {
    let rows = client
        .query_typed(
            "select to_regclass($1) is not null",
            &[(&table.quoted(), Type::TEXT)],
        )
        .await
        .map_err(|e| Error::db(format!("cannot inspect table {}", table.quoted()), e))?;
    let exists = one_row(rows)
        .map_err(|why| Error::run(format!("cannot inspect table {}: {why}", table.quoted())))?
        .get::<_, bool>(0);
    if !exists {
        return Ok(Contents::Missing);
    }
    Ok(if is_empty(client, table).await? {
        Contents::Empty
    } else {
        Contents::HasRows
    })
}

/// Refuses a load before it empties anything when the role lacks one of
/// `privileges` (e.g. "INSERT") on one of `tables`: a load that may
/// truncate (a privilege of its own, or the owner's) but not insert would
/// empty its tables and then fail on its first row. `load` names it in
/// the message.
pub async fn require_privileges(
    client: &Client,
    tables: &[TableName],
    privileges: &[&str],
    load: &str,
) -> Result<()> {
    for table in tables {
        let t = table.quoted();
        let what = || format!("cannot read the privileges on table {t}");
        for privilege in privileges {
            let rows = client
                .query_typed(
                    "select has_table_privilege($1, $2), current_user::text",
                    &[(&t, Type::TEXT), (privilege, Type::TEXT)],
                )
                .await
                .map_err(|e| Error::db(what(), e))?;
            let row = one_row(rows).map_err(|why| Error::run(format!("{}: {why}", what())))?;
            let (may, role): (bool, String) = (row.get(0), row.get(1));
            if !may {
                let role = crate::db::sql::quote_ident(&role);
                let p = privilege.to_lowercase();
                return Err(Error::run(format!(
                    "role {role} has no {privilege} privilege on table {t}, so {load} could not load it (nothing was emptied): grant it with `grant {p} on {t} to {role}`, or connect as the table's owner"
                )));
            }
        }
    }
    Ok(())
}

/// Empties the table before a load.
pub async fn truncate(client: &Client, table: &TableName) -> Result<()> {
    let t = table.quoted();
    client
        .batch_execute(&format!("truncate table {t}"))
        .await
        .map_err(|e| Error::db(format!("cannot truncate table {t}"), e))
}

/// The average stored row size over a sample of at most `sample` rows, or
/// `None` for an empty table.
pub async fn average_row_size(
    client: &Client,
    table: &TableName,
    sample: i64,
) -> Result<Option<(f64, i64)>> {
    let t = table.quoted();
    let rows = client
        .query_typed(
            &format!(
                "select avg(pg_column_size(s.*))::float8, count(*) from (select * from {t} limit $1) s"
            ),
            &[(&sample, Type::INT8)],
        )
        .await
        .map_err(|e| Error::db(format!("cannot measure the row size of {t}"), e))?;
    let row = one_row(rows)
        .map_err(|why| Error::run(format!("cannot measure the row size of {t}: {why}")))?;
    let avg: Option<f64> = row.get(0);
    let n: i64 = row.get(1);
    Ok(avg.map(|a| (a, n)))
}

/// A relation a clean-up looks at: one that carries a mark of the tool's,
/// or has the name of one of its tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relation {
    pub schema: String,
    pub name: String,
    /// `pg_class.relkind`: r a table, p a partitioned table, v a view, ...
    pub relkind: String,
    pub comment: String,
    /// Its columns, name and `format_type`, in order.
    pub columns: Vec<(String, String)>,
    /// Whether its schema is on the connection's search_path.
    pub on_path: bool,
}

impl Relation {
    /// `"schema"."name"`: the one relation meant, whatever the search_path.
    pub fn qualified(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(&self.name))
    }

    /// Whether it is a table (plain or partitioned), not a view or other.
    pub fn is_table(&self) -> bool {
        self.relkind == "r" || self.relkind == "p"
    }

    /// What it is, for messages: "table", "view", ...
    pub fn kind_name(&self) -> &'static str {
        match self.relkind.as_str() {
            "r" | "p" => "table",
            "v" => "view",
            "m" => "materialized view",
            "f" => "foreign table",
            _ => "relation",
        }
    }
}

/// The schemas of the connection's search_path that exist, in order: where
/// the tool creates its tables (the first) and finds them.
pub async fn search_path(client: &Client) -> Result<Vec<String>> {
    let rows = client
        .query_typed("select current_schemas(false)::text[]", &[])
        .await
        .map_err(|e| Error::db("cannot read the search_path", e))?;
    let row =
        one_row(rows).map_err(|why| Error::run(format!("cannot read the search_path: {why}")))?;
    Ok(row.get(0))
}

/// The relations, in every schema but the system's, whose comment starts
/// with `mark` or is one of `comments`, or whose name is one of `names`;
/// those on the search_path first, in its order.
pub async fn find_relations(
    client: &Client,
    mark: &str,
    comments: &[&str],
    names: &[String],
) -> Result<Vec<Relation>> {
    let sql = "select n.nspname::text, c.relname::text, c.relkind::text, \
               coalesce(d.description, ''), \
               coalesce(n.nspname = any(current_schemas(false)), false), \
               array(select a.attname::text from pg_attribute a \
                     where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped \
                     order by a.attnum), \
               array(select format_type(a.atttypid, a.atttypmod) from pg_attribute a \
                     where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped \
                     order by a.attnum) \
               from pg_class c \
               join pg_namespace n on n.oid = c.relnamespace \
               left join pg_description d \
                 on d.objoid = c.oid and d.classoid = 'pg_class'::regclass and d.objsubid = 0 \
               where c.relkind in ('r', 'p', 'v', 'm', 'f') \
                 and n.nspname not in ('pg_catalog', 'information_schema') \
                 and n.nspname !~ '^pg_(toast|temp_|toast_temp_)' \
                 and (left(coalesce(d.description, ''), length($1)) = $1 \
                      or d.description = any($2) or c.relname = any($3)) \
               order by array_position(current_schemas(false), n.nspname), n.nspname, c.relname";
    let comments: Vec<&str> = comments.to_vec();
    let rows = client
        .query_typed(
            sql,
            &[
                (&mark, Type::TEXT),
                (&comments, Type::TEXT_ARRAY),
                (&names, Type::TEXT_ARRAY),
            ],
        )
        .await
        .map_err(|e| Error::db("cannot list the tables", e))?;
    Ok(rows
        .iter()
        .map(|r| {
            let names: Vec<String> = r.get(5);
            let types: Vec<String> = r.get(6);
            Relation {
                schema: r.get(0),
                name: r.get(1),
                relkind: r.get(2),
                comment: r.get(3),
                on_path: r.get(4),
                columns: names.into_iter().zip(types).collect(),
            }
        })
        .collect())
}

/// A function or procedure a clean-up looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routine {
    pub schema: String,
    pub name: String,
    /// Its arguments as `DROP` takes them ("len integer").
    pub args: String,
    pub procedure: bool,
    pub comment: String,
    /// `pg_proc.prosrc`: the body as the server keeps it.
    pub body: String,
    pub on_path: bool,
}

impl Routine {
    /// `"schema"."name"(args)`.
    pub fn qualified(&self) -> String {
        format!(
            "{}.{}({})",
            quote_ident(&self.schema),
            quote_ident(&self.name),
            self.args
        )
    }

    pub fn kind_name(&self) -> &'static str {
        if self.procedure {
            "procedure"
        } else {
            "function"
        }
    }
}

/// The functions and procedures named one of `names`, in every schema but
/// the system's, those on the search_path first.
pub async fn find_routines(client: &Client, names: &[&str]) -> Result<Vec<Routine>> {
    let sql = "select n.nspname::text, p.proname::text, \
               pg_get_function_identity_arguments(p.oid), p.prokind = 'p', \
               coalesce(obj_description(p.oid, 'pg_proc'), ''), coalesce(p.prosrc, ''), \
               coalesce(n.nspname = any(current_schemas(false)), false) \
               from pg_proc p join pg_namespace n on n.oid = p.pronamespace \
               where p.proname = any($1) and n.nspname not in ('pg_catalog', 'information_schema') \
               order by array_position(current_schemas(false), n.nspname), n.nspname, p.proname";
    let names: Vec<&str> = names.to_vec();
    let rows = client
        .query_typed(sql, &[(&names, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| Error::db("cannot list the functions", e))?;
    Ok(rows
        .iter()
        .map(|r| Routine {
            schema: r.get(0),
            name: r.get(1),
            args: r.get(2),
            procedure: r.get(3),
            comment: r.get(4),
            body: r.get(5),
            on_path: r.get(6),
        })
        .collect())
}

/// The rows of `qualified`, counted up to `cap` (more reads as `cap + 1`):
/// what a clean-up says it dropped, without reading a huge table whole.
pub async fn count_rows_upto(client: &Client, qualified: &str, cap: u64) -> Result<u64> {
    let sql = format!(
        "select count(*) from (select 1 from {qualified} limit {}) s",
        cap.saturating_add(1)
    );
    let rows = client
        .query_typed(&sql, &[])
        .await
        .map_err(|e| Error::db(format!("cannot count the rows of {qualified}"), e))?;
    let row = one_row(rows)
        .map_err(|why| Error::run(format!("cannot count the rows of {qualified}: {why}")))?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Drops one object, `kind` "table", "function" or "procedure", without
/// CASCADE: what depends on it (a view, a foreign key) makes it fail.
pub async fn drop_object(client: &Client, kind: &str, qualified: &str) -> Result<()> {
    client
        .batch_execute(&format!("drop {kind} {qualified}"))
        .await
        .map_err(|e| Error::db(format!("cannot drop {kind} {qualified}"), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::dialect::COLUMNS;

    fn def() -> TableDef {
        TableDef {
            name: TableName::new("test_table").unwrap(),
            columns: cols(&COLUMNS),
            shape: "id integer, f1..f4 text",
            ddl: String::new(),
        }
    }

    fn cols(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn the_load_state_is_read_back_from_the_mark() {
        assert_eq!(parse_load_state(TABLE_MARK), LoadState::Unknown);
        assert_eq!(
            parse_load_state("created by ysql-bench; load incomplete"),
            LoadState::Incomplete
        );
        assert_eq!(
            parse_load_state("created by ysql-bench; loaded 1001 rows"),
            LoadState::Loaded(1001)
        );
        assert_eq!(parse_load_state("someone else's"), LoadState::Unknown);
        let marked = "created by ysql-bench; loaded 5 rows";
        assert_eq!(
            classify(&def(), "r", &cols(&COLUMNS), marked),
            TableState::Ours
        );
    }

    #[test]
    fn only_a_marked_table_of_the_right_shape_is_ours() {
        let good = cols(&COLUMNS);
        assert_eq!(classify(&def(), "r", &good, TABLE_MARK), TableState::Ours);
        assert!(matches!(
            classify(&def(), "r", &good, ""),
            TableState::Foreign { shape_ok: true, .. }
        ));
        let other = cols(&[("id", "integer"), ("name", "text")]);
        match classify(&def(), "r", &other, TABLE_MARK) {
            TableState::Foreign { shape_ok, why } => {
                assert!(!shape_ok);
                assert!(why.contains("name text"));
            }
            s => panic!("{s:?}"),
        }
        assert!(matches!(
            classify(&def(), "v", &good, TABLE_MARK),
            TableState::Foreign {
                shape_ok: false,
                ..
            }
        ));
    }
}
