//! The names of the columns a query returns, when its text says them for
//! certain: what a `\gset` or `\aset` after it can set.
//!
//! The script parser refuses a script that reads a variable nothing can
//! set ([`super::parse`]), and a valid script must never be refused, so
//! this module answers "cannot know" whenever in doubt. A name is listed
//! only where PostgreSQL certainly gives the column that name: an explicit
//! `AS name`, a bare column reference (`a`, `t.a`, `a[1]`) or a function
//! call (`count(*)`, `pg_catalog.max(x)`), in the target list of a
//! `SELECT` (also after `WITH`) or in a `RETURNING` list. Anything else,
//! `*`, an expression without an alias (`1`, `x::int`, `a + 1`), SQL's
//! special forms whose names differ from their words (`trim(…)` is
//! "btrim", `extract(…)` "date_part" before PostgreSQL 14), `VALUES`,
//! `SHOW`, `CALL`, makes the whole result unknown; then every variable
//! that starts with the `\gset` prefix counts as settable.
//!
//! It reads the text as the server's lexer would at the top level (quotes,
//! quoted identifiers, dollar quotes, nested comments, parentheses and
//! brackets as one group each), which is all the target list needs; it
//! does not parse SQL.

/// PostgreSQL's longest identifier (NAMEDATALEN - 1 bytes); a longer
/// alias is cut by the server, so its name is not the text's.
const MAX_NAME: usize = 63;

/// A top-level token.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// An unquoted word, ASCII letters folded to lower case.
    Word(String),
    /// A quoted identifier, as the server reads it.
    Quoted(String),
    /// `( … )` or `[ … ]`.
    Group,
    Comma,
    Dot,
    /// Anything else: literals, numbers, operators, `:variables`.
    Other,
}

/// The columns of `sql`'s result, in order, when its text says every one
/// of their names for certain; None when it does not (or when the
/// statement returns no rows that the text shows).
pub fn result_columns(sql: &str) -> Option<Vec<String>> {
    let toks = top_level(sql.as_bytes())?;
    let is = |i: usize, w: &str| matches!(toks.get(i), Some(Tok::Word(x)) if x == w);
    let list = match toks.first() {
        Some(Tok::Word(w)) if w == "select" => select_list(&toks, 1),
        Some(Tok::Word(w)) if w == "with" => {
            // The main statement is the first of these words outside the
            // common table expressions' parentheses.
            const MAIN: [&str; 7] = [
                "select", "insert", "update", "delete", "merge", "values", "table",
            ];
            let main = (1..toks.len()).find(|&i| MAIN.iter().any(|w| is(i, w)))?;
            if is(main, "select") {
                select_list(&toks, main + 1)
            } else {
                returning_list(&toks, main)
            }
        }
        Some(Tok::Word(w)) if ["insert", "update", "delete", "merge"].contains(&w.as_str()) => {
            returning_list(&toks, 1)
        }
        _ => None,
    }?;
    if list.is_empty() {
        // `SELECT FROM t`: rows without columns.
        return Some(Vec::new());
    }
    list.split(|t| *t == Tok::Comma).map(item_name).collect()
}

/// The target list of a SELECT whose items start at `i`: to the first
/// word that ends it.
fn select_list(toks: &[Tok], mut i: usize) -> Option<&[Tok]> {
    const ENDS: [&str; 14] = [
        "from",
        "into",
        "where",
        "group",
        "having",
        "window",
        "order",
        "limit",
        "offset",
        "fetch",
        "for",
        "union",
        "intersect",
        "except",
    ];
    let is = |i: usize, w: &str| matches!(toks.get(i), Some(Tok::Word(x)) if x == w);
    if is(i, "all") {
        i += 1;
    } else if is(i, "distinct") {
        i += 1;
        if is(i, "on") {
            if toks.get(i + 1) != Some(&Tok::Group) {
                return None;
            }
            i += 2;
        }
    }
    let rest = toks.get(i..)?;
    let end = rest
        .iter()
        .position(|t| matches!(t, Tok::Word(w) if ENDS.contains(&w.as_str())))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The items after the statement's top-level RETURNING, if it has one.
fn returning_list(toks: &[Tok], from: usize) -> Option<&[Tok]> {
    let at = toks
        .iter()
        .skip(from)
        .position(|t| matches!(t, Tok::Word(w) if w == "returning"))?;
    toks.get(from + at + 1..)
}

/// The name PostgreSQL certainly gives one item of a target list.
fn item_name(item: &[Tok]) -> Option<String> {
    let name = match item {
        [.., Tok::Word(a), last] if a == "as" => match last {
            Tok::Word(w) | Tok::Quoted(w) => w.clone(),
            _ => return None,
        },
        // A column reference, its last name; or a function call (or a
        // subscript, `a[1]`), the function's (the column's) name.
        [chain @ .., Tok::Group] => chain_name(chain).filter(|n| !is_special_call(n))?,
        chain => chain_name(chain)?,
    };
    (!name.is_empty() && name.len() <= MAX_NAME).then_some(name)
}

/// The last name of `a.b.c`; None for anything else, and for a lone
/// word that is a constant or an SQL value function (`null`, `user`).
fn chain_name(chain: &[Tok]) -> Option<String> {
    let (first, rest) = chain.split_first()?;
    let mut last = match first {
        Tok::Word(w) if is_special_word(w) && rest.is_empty() => return None,
        Tok::Word(w) | Tok::Quoted(w) => w,
        _ => return None,
    };
    for pair in rest.chunks(2) {
        match pair {
            [Tok::Dot, Tok::Word(w) | Tok::Quoted(w)] => last = w,
            _ => return None,
        }
    }
    Some(last.clone())
}

/// The words before parentheses whose column is not named after them
/// (`trim` is "btrim", `cast` the type's name), or not in every version.
fn is_special_call(w: &str) -> bool {
    is_special_word(w)
        || ["cast", "extract", "trim", "treat"].contains(&w)
        || w.starts_with("xml")
        || w.starts_with("json")
}

/// Words that name a value rather than a column when they stand alone.
fn is_special_word(w: &str) -> bool {
    const SPECIAL: [&str; 15] = [
        "true",
        "false",
        "null",
        "user",
        "current_user",
        "session_user",
        "current_role",
        "system_user",
        "current_catalog",
        "current_schema",
        "current_date",
        "current_time",
        "current_timestamp",
        "localtime",
        "localtimestamp",
    ];
    SPECIAL.contains(&w)
}

/// The top-level tokens of `b`; None when a quote, comment or group is
/// left open (the server will say what is wrong).
fn top_level(b: &[u8]) -> Option<Vec<Tok>> {
    let mut toks = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let word_start = |c: u8| c.is_ascii_alphabetic() || c == b'_' || c >= 0x80;
    let word_byte = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    while i < b.len() {
        let c = b[i];
        let mut tok = Tok::Other;
        match c {
            _ if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = block_comment_end(b, i)?;
                continue;
            }
            b'(' | b'[' => {
                depth += 1;
                i += 1;
                continue;
            }
            b')' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
                tok = Tok::Group;
            }
            b'\'' => i = quoted_end(b, i, b'\'', false)?,
            b'"' => {
                let end = quoted_end(b, i, b'"', false)?;
                let inner = String::from_utf8_lossy(&b[i + 1..end - 1]).replace("\"\"", "\"");
                tok = Tok::Quoted(inner);
                i = end;
            }
            b'$' if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            b'$' => {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if b.get(j) == Some(&b'$') {
                    let tag = &b[i..=j];
                    let body = j + 1;
                    let k = b.get(body..)?.windows(tag.len()).position(|w| w == tag)?;
                    i = body + k + tag.len();
                } else {
                    i += 1;
                }
            }
            _ if word_start(c) => {
                let start = i;
                while i < b.len() && word_byte(b[i]) {
                    i += 1;
                }
                if b.get(i) == Some(&b'\'') {
                    // A string with a prefix: E'…', B'…', X'…', N'…', or
                    // a typed literal written without a space.
                    let escapes = i - start == 1 && (b[start] | 0x20) == b'e';
                    i = quoted_end(b, i, b'\'', escapes)?;
                } else if b.get(i) == Some(&b'&') && i - start == 1 && (b[start] | 0x20) == b'u' {
                    // U&'…' or U&"…": Unicode escapes, read as unknown.
                    i += 1;
                } else {
                    let w = String::from_utf8_lossy(&b[start..i]).to_ascii_lowercase();
                    tok = Tok::Word(w);
                }
            }
            b'0'..=b'9' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
            }
            b',' => {
                tok = Tok::Comma;
                i += 1;
            }
            b'.' if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
            }
            b'.' => {
                tok = Tok::Dot;
                i += 1;
            }
            _ => {
                // An operator, `::`, `:name`: one unknown token.
                i += 1;
            }
        }
        if depth == 0 {
            toks.push(tok);
        }
    }
    (depth == 0).then_some(toks)
}

/// The offset after the nested block comment at `i`.
fn block_comment_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// The offset after the quoted text that opens at `i` with `q`.
fn quoted_end(b: &[u8], mut i: usize, q: u8, escapes: bool) -> Option<usize> {
    i += 1;
    while i < b.len() {
        if escapes && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(sql: &str) -> Option<Vec<String>> {
        result_columns(sql)
    }

    fn known(sql: &str) -> Vec<String> {
        cols(sql).unwrap_or_else(|| panic!("{sql}: columns should be known"))
    }

    #[test]
    fn aliases_and_column_references_name_their_columns() {
        assert_eq!(
            known("select a, t.b, s.t.c, x + 1 as Sum, count(*) AS \"N\" from t"),
            ["a", "b", "c", "sum", "N"]
        );
        assert_eq!(
            known("SELECT DISTINCT ON (a) a, cast(b as int) as b2 FROM t ORDER BY a"),
            ["a", "b2"]
        );
        assert_eq!(known("select all \"Mixed\"\"Q\" from t"), ["Mixed\"Q"]);
        assert_eq!(known("select :aid::int8 as aid, 'x;y' as s"), ["aid", "s"]);
        assert_eq!(known("select a from t union select b from u"), ["a"]);
        assert_eq!(known("select from t"), Vec::<String>::new());
        assert_eq!(
            known("with q as (select 1 as z) select z, q.z as y from q"),
            ["z", "y"]
        );
        assert_eq!(
            known("insert into t values (1) returning id, n * 2 as twice"),
            ["id", "twice"]
        );
        assert_eq!(
            known("with d as (delete from t returning *) update u set n = 0 returning u.id"),
            ["id"]
        );
        assert_eq!(known("select a -- as b\n, /* c, */ d from t"), ["a", "d"]);
        assert_eq!(
            known("select $$,$$ as dollar, E'\\',' as esc"),
            ["dollar", "esc"]
        );
        // Function calls and subscripts, as PostgreSQL 15 names them.
        assert_eq!(
            known(
                "select count(*), pg_catalog.max(a), coalesce(a, b), greatest(1, 2), exists(select 1), \
                 array[1], a[1:2], s.a[1], \"lower\"(x) from t"
            ),
            [
                "count", "max", "coalesce", "greatest", "exists", "array", "a", "a", "lower"
            ]
        );
    }

    #[test]
    fn anything_unsure_is_unknown() {
        for sql in [
            "select * from t",
            "select t.* from t",
            "select a, count(*) filter (where b) from t",
            "select row_number() over (order by a) from t",
            "select trim(a), cast(a as int), extract(year from d) from t",
            "select xmlconcat(a), json_object('{}')",
            "select current_timestamp(3)",
            "select f(a)(b) from t",
            "select 1",
            "select x::int from t",
            "select a b from t",
            "select a \"b\" from t",
            "select true",
            "select current_user",
            "select a is distinct from b as c",
            "values (1, 2)",
            "show work_mem",
            "call p()",
            "insert into t values (1)",
            "update t set a = 1",
            "table t",
            "(select a from t)",
            "select a as b from t where s = 'open",
            "select f(a from t",
            &format!("select 1 as {}", "x".repeat(64)),
            "select date'2020-01-01'",
            "select U&\"a\" from t",
        ] {
            assert_eq!(cols(sql), None, "{sql}");
        }
    }
}
