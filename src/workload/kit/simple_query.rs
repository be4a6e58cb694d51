//! What the simple query protocol's answers say, for the units that send
//! their SQL as text (`--no-prepared`, COPY, scripts).

use tokio_postgres::SimpleQueryMessage;

/// The row count of the last command in a simple-query response.
pub fn command_rows(messages: &[SimpleQueryMessage]) -> u64 {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .unwrap_or(0)
}
