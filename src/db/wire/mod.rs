//! The one data-plane driver: the PostgreSQL connection every workload's
//! units run on, written on `postgres-protocol`'s message encoders and
//! SCRAM/MD5 authentication, over TCP (plain or TLS on rustls) or a
//! Unix-domain socket. tokio-postgres serves only the control connections
//! (set-up, checks, the server's statistics, the barrier).
//!
//! Why a driver of our own: against pgbench (select by primary key, prepared,
//! PostgreSQL 15 on the same machine), the client's user CPU per query was
//! 2.6 µs against pgbench's 1.0 µs, with the same syscalls (one send, one
//! receive). Callgrind put 18.1k user instructions on each query, about
//! 12k of them in tokio-postgres: the Bind/Execute/Sync encoded into a
//! buffer under a mutex, an mpsc request channel and a fresh response
//! channel per query, the `Connection` future's framed codec, the
//! response stream, and a `Vec<Row>` (about 2.4k instructions of malloc
//! and free per query). None of that is needed to send one prepared
//! statement and count what comes back.
//!
//! So this connection is one struct that the worker owns and awaits
//! directly: no task, no channel, no allocation per query for a statement
//! that needs no rows back. It keeps one
//! write buffer and one read buffer, both starting at a few hundred bytes
//! and growing only when a message needs it (a thousand connections must
//! cost kilobytes each, not tens). A unit is Bind+Execute+Sync written in
//! one `write`, and the answer is parsed in place in the read buffer:
//! DataRows counted, the rows affected taken from CommandComplete, an
//! ErrorResponse turned into a [`WireError`] with its SQLSTATE, message,
//! detail and hint. Reads go through the socket's `poll_read`
//! (`crate::rt::net`), which marks it drained after a short read, so that a
//! query costs one `recvfrom`.
//!
//! The connection is made as the connection string asks for it (TLS in
//! every sslmode, keepalives, tcp_user_timeout, target_session_attrs:
//! `connect.rs` says how), logged in by trust, cleartext password, MD5 or
//! SCRAM-SHA-256 (bound to the TLS connection when there is one), and
//! ended by a polite Terminate; a cancel request goes to the same server
//! the same way. What runs on it is `query.rs`'s.

mod connect;
mod decode;
mod encode;
mod pipeline;
mod query;

use std::fmt;
use std::io;

use bytes::BytesMut;
use postgres_protocol::message::frontend;

pub use connect::{CancelKey, Peer, supports};
pub use decode::Rows;
#[doc(hidden)]
pub use decode::frame_stream;
pub use decode::{parse_error, tag_rows};
pub use encode::Param;
pub use query::{Protocol, Sql, Stmt, inline};

use connect::Stream;
use decode::ReadBuf;

const FIRST_WRITE: usize = 256;

/// A server error, as the server sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbError {
    pub severity: String,
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

/// What can go wrong on a lean connection.
#[derive(Debug)]
pub enum WireError {
    /// The server's ErrorResponse.
    Db(Box<DbError>),
    /// The connection is gone (closed by the server, reset, or broken by
    /// an I/O error): the worker must reconnect.
    Closed(Option<io::Error>),
    /// No connection could be made.
    Connect(io::Error),
    /// TLS could not be set up: the handshake failed (a certificate
    /// refused), or the server does not accept TLS where the sslmode
    /// requires it.
    Tls(io::Error),
    /// The server asks for a password and none was given.
    NoPassword,
    /// Authentication could not proceed on the client's side (a method
    /// this driver does not know, a server SCRAM does not trust).
    Auth(String),
    /// A parameter type or value this driver cannot encode: the
    /// statement runs on tokio-postgres instead.
    Unsupported(String),
    /// A pipelined statement of a group of several before one Sync that
    /// another statement of the group failed: the group is one implicit
    /// transaction, so the server rolled this one back, or skipped it
    /// without an answer (see `pipeline.rs`). Given by the caller, which
    /// knows the groups; the connection stays in step.
    BatchFailed,
    /// The server sent what the protocol does not allow here: a message
    /// out of place, a length its type cannot have, a body that is not
    /// what its type says. The connection is closed after it (nothing
    /// read after it could be trusted to be in step).
    Protocol(String),
}

impl crate::error::DriverFailure for WireError {
    fn sqlstate(&self) -> Option<&str> {
        self.code()
    }

    fn is_closed(&self) -> bool {
        WireError::is_closed(self)
    }
}

impl WireError {
    /// The SQLSTATE of a server error.
    pub fn code(&self) -> Option<&str> {
        match self {
            WireError::Db(db) => Some(&db.code),
            _ => None,
        }
    }

    pub fn as_db(&self) -> Option<&DbError> {
        match self {
            WireError::Db(db) => Some(db),
            _ => None,
        }
    }

    /// Whether the connection is gone, as tokio-postgres's `is_closed`.
    pub fn is_closed(&self) -> bool {
        matches!(self, WireError::Closed(_))
    }
}

/// Phrased as [`crate::error::describe_pg`] phrases tokio-postgres's
/// errors, so that users read the same either way.
impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Db(db) => f.write_str(&crate::error::describe_db(
                &db.message,
                &db.code,
                db.detail.as_deref(),
                db.hint.as_deref(),
            )),
            WireError::Closed(None) => f.write_str("connection closed"),
            WireError::Closed(Some(e)) => write!(f, "connection closed: {e}"),
            WireError::Connect(e) => write!(f, "error connecting to server: {e}"),
            WireError::Tls(e) => write!(f, "error performing TLS handshake: {e}"),
            WireError::NoPassword => f.write_str(crate::error::NO_PASSWORD),
            WireError::Auth(why) => write!(f, "authentication error: {why}"),
            WireError::Unsupported(why) => write!(f, "not supported by the lean driver: {why}"),
            WireError::Protocol(why) => write!(f, "unexpected message from server: {why}"),
            WireError::BatchFailed => f.write_str(
                "another statement of its pipeline batch failed: rolled back or not run",
            ),
        }
    }
}

impl std::error::Error for WireError {}

/// What the server answered to one execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// DataRows received.
    pub rows: u64,
    /// The count of CommandComplete (`UPDATE 1`, `SELECT 1`), 0 if none.
    pub affected: u64,
}

/// A prepared statement of a lean connection.
pub(crate) struct Prepared {
    pub(crate) name: String,
    /// The declared types of its parameters (OIDs).
    pub(crate) types: Vec<u32>,
    /// The names of its columns.
    pub(crate) names: Vec<String>,
}

/// One lean connection to a server.
///
/// In declaration order (`repr(C)`): what every statement touches first,
/// in about 140 bytes, and the pipeline's partial answer and the cancel
/// key, which a unit sent alone never reads, behind it. In the compiler's
/// order those two lay between the socket and the write buffer, and a
/// statement touched three cache lines of the connection rather than two
/// or three adjacent ones (at hundreds of connections a thread, each a
/// miss; see the runner's `Worker`).
#[repr(C)]
pub struct WireConn {
    stream: Stream,
    rbuf: ReadBuf,
    wbuf: BytesMut,
    statements: Vec<Prepared>,
    /// The connection failed or was closed by the server: nothing more can
    /// be sent on it.
    broken: bool,
    /// The transaction status of the last ReadyForQuery: `I` idle, `T`
    /// in a transaction, `E` in a failed one.
    status: u8,
    /// What was read so far of a pipelined unit's answer (see
    /// `pipeline.rs`).
    part: pipeline::Partial,
    key: CancelKey,
}

impl WireConn {
    fn usable(&self) -> Result<(), WireError> {
        if self.broken {
            Err(WireError::Closed(None))
        } else {
            Ok(())
        }
    }

    /// Whether the connection is gone: nothing more can run on it.
    pub fn is_closed(&self) -> bool {
        self.broken
    }

    /// How to cancel what this connection runs.
    pub fn cancel_key(&self) -> CancelKey {
        self.key.clone()
    }

    /// Says goodbye (Terminate) and closes the socket.
    pub async fn close(mut self) {
        if self.broken {
            return;
        }
        frontend::terminate(&mut self.wbuf);
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
    }
}

/// A message the client could not encode (a NUL inside a string): the
/// client's failure, not the server's ([`WireError::Protocol`] is the
/// server's).
fn encode_err(e: io::Error) -> WireError {
    WireError::Unsupported(format!("cannot encode a message: {e}"))
}

#[cfg(test)]
mod tests {
    use super::decode::*;
    use super::encode::*;
    use super::*;

    fn error_body(fields: &[(u8, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (k, v) in fields {
            b.push(*k);
            b.extend_from_slice(v.as_bytes());
            b.push(0);
        }
        b.push(0);
        b
    }

    #[test]
    fn an_error_response_gives_its_sqlstate_message_detail_and_hint() {
        let body = error_body(&[
            (b'S', "ERREUR"),
            (b'V', "ERROR"),
            (b'C', "42P01"),
            (b'M', "relation \"t\" does not exist"),
            (b'D', "some detail"),
            (b'H', "some hint"),
            (b'P', "15"),
        ]);
        let e = parse_error(&body).unwrap();
        assert_eq!(e.severity, "ERROR");
        assert_eq!(e.code, "42P01");
        assert_eq!(e.message, "relation \"t\" does not exist");
        assert_eq!(e.detail.as_deref(), Some("some detail"));
        assert_eq!(e.hint.as_deref(), Some("some hint"));
        let shown = WireError::Db(Box::new(e)).to_string();
        assert_eq!(
            shown,
            "relation \"t\" does not exist (SQLSTATE 42P01); detail: some detail; hint: some hint"
        );
        assert!(parse_error(&error_body(&[(b'M', "no code")])).is_err());
    }

    #[test]
    fn command_tags_give_their_row_counts() {
        assert_eq!(tag_rows(b"UPDATE 3\0"), 3);
        assert_eq!(tag_rows(b"SELECT 1\0"), 1);
        assert_eq!(tag_rows(b"INSERT 0 200\0"), 200);
        assert_eq!(tag_rows(b"SET\0"), 0);
        assert_eq!(tag_rows(b"BEGIN"), 0);
        assert_eq!(tag_rows(b""), 0);
    }

    #[test]
    fn a_bind_execute_sync_is_one_buffer_of_three_messages() {
        let mut b = BytesMut::new();
        let params = [Param::Int(5), Param::Text("x")];
        query::bind_for_test(&mut b, "s0", &[INT4, TEXT], &params);
        frontend::sync(&mut b);
        // Framed by hand: the read buffer takes only what a server sends.
        let mut tags = Vec::new();
        let mut rest = &b[..];
        while let Some(&[tag, l0, l1, l2, l3]) = rest.first_chunk::<5>() {
            tags.push(tag);
            rest = &rest[1 + u32::from_be_bytes([l0, l1, l2, l3]) as usize..];
        }
        assert_eq!(tags, b"BES");
    }

    #[test]
    fn the_read_buffer_grows_for_a_large_message_and_compacts_otherwise() {
        let mut r = ReadBuf::new();
        // A whole small message, then the head of one larger than the
        // buffer.
        let small = [b'2', 0, 0, 0, 4];
        r.buf[..5].copy_from_slice(&small);
        r.buf[5] = b'D';
        r.buf[6..10].copy_from_slice(&(3000u32).to_be_bytes());
        r.end = 10;
        assert_eq!(r.next().ok().flatten().map(|m| m.0), Some(b'2'));
        assert!(matches!(r.next(), Ok(None)));
        // A length below 4 is not the protocol: an error, not a slice
        // that runs backwards.
        let mut bad = ReadBuf::new();
        bad.buf[..5].copy_from_slice(&[b'E', 0, 0, 0, 1]);
        bad.end = 5;
        assert!(matches!(bad.next(), Err(WireError::Protocol(_))));
        r.make_room();
        assert_eq!(r.start, 0, "compacted");
        assert!(r.buf.len() >= 3001, "grown to {}", r.buf.len());
        assert_eq!(r.buf[0], b'D');
        // Full of unparsed bytes with room for the message: no growth.
        let mut r = ReadBuf::new();
        r.buf[..5].copy_from_slice(&[b'D', 0, 0, 0, 100]);
        r.end = 5;
        r.make_room();
        assert_eq!(r.buf.len(), FIRST_READ);
        // A read that fills the buffer doubles it, up to MOST_READ; one
        // that does not leaves it.
        let mut r = ReadBuf::new();
        r.read(100);
        assert_eq!(r.buf.len(), FIRST_READ);
        r.read(FIRST_READ - 100);
        assert_eq!(r.buf.len(), 2 * FIRST_READ);
        for _ in 0..20 {
            let room = r.buf.len() - r.end;
            r.read(room);
        }
        assert_eq!(r.buf.len(), MOST_READ);
    }
}
