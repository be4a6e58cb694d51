//! The words of SQL the tool writes and the protocol limits it writes
//! within: validated table names, quoting, isolation levels, the bind
//! parameter and identifier limits.
//!
//! A leaf of the crate (it imports only [`crate::error`]): the workloads,
//! the database layer and the run plan all write SQL, and none of them
//! should have to import another to quote a name.

use crate::error::{Error, Result};

/// PostgreSQL's limit on bind parameters in one statement (a 16-bit count).
pub const MAX_BIND_PARAMS: usize = 65_535;
/// PostgreSQL truncates identifiers to 63 bytes (NAMEDATALEN - 1).
pub const MAX_IDENTIFIER_LEN: usize = 63;

/// A table name, validated; [`TableName::quoted`] is the only way it enters SQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableName(String);

impl TableName {
    pub fn new(name: &str) -> Result<Self> {
        if name.is_empty() {
            return Err(Error::usage(
                "--table-name is empty: give a table name, e.g. --table-name test_table",
            ));
        }
        if name.len() > MAX_IDENTIFIER_LEN {
            return Err(Error::usage(format!(
                "--table-name is {} bytes long; PostgreSQL keeps only {MAX_IDENTIFIER_LEN}: use a shorter name",
                name.len()
            )));
        }
        if name.contains('\0') {
            return Err(Error::usage(
                "--table-name contains a NUL character: use printable characters",
            ));
        }
        Ok(TableName(name.to_string()))
    }

    /// The name as written by the user.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a quoted SQL identifier: `"my ""odd"" table"`.
    pub fn quoted(&self) -> String {
        quote_ident(&self.0)
    }
}

/// Quotes an SQL identifier, doubling embedded double quotes.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes an SQL string literal, doubling embedded single quotes.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `--isolation`: the default isolation level of every worker session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// As SQL says it: `repeatable read`.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_literals_are_quoted() {
        assert_eq!(quote_ident("test_table"), "\"test_table\"");
        assert_eq!(quote_ident("a\"b; drop"), "\"a\"\"b; drop\"");
        assert_eq!(quote_literal("/tmp/it's"), "'/tmp/it''s'");
        assert_eq!(TableName::new("My Table").unwrap().quoted(), "\"My Table\"");
    }
}
