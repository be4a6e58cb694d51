//! The lean driver: a PostgreSQL connection for the hot path of select and
//! update, written on `postgres-protocol`'s message encoders and SCRAM/MD5
//! authentication, over a plain TCP or Unix-domain socket.
//!
//! Why a second driver: against pgbench (select by primary key, prepared,
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
//! directly: no task, no channel, no allocation per query. It keeps one
//! write buffer and one read buffer, both starting at a few hundred bytes
//! and growing only when a message needs it (a thousand connections must
//! cost kilobytes each, not tens). A unit is Bind+Execute+Sync written in
//! one `write`, and the answer is parsed in place in the read buffer:
//! DataRows counted, the rows affected taken from CommandComplete, an
//! ErrorResponse turned into a [`WireError`] with its SQLSTATE, message,
//! detail and hint. Reads go through tokio's `poll_read`, which marks the
//! socket drained after a short read, so that a query costs one `recvfrom`.
//!
//! Only what select and update need is here: start-up and authentication
//! (trust, cleartext password, MD5, SCRAM-SHA-256 without channel
//! binding), the simple query protocol for session settings, named
//! prepared statements with int and text parameters encoded in binary as
//! their declared types say, the cancel request and a polite Terminate.
//! TLS, COPY, transactions and anything else stay on tokio-postgres
//! ([`supports`] says when this driver may be used at all).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::BytesMut;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, UnixStream};
use tokio_postgres::Config;
use tokio_postgres::config::{ChannelBinding as ChannelBindingSetting, Host, TargetSessionAttrs};

/// What the buffers start with: enough for a point select's answer and an
/// update's Bind with four short text fields.
const FIRST_READ: usize = 512;
/// The read buffer grows to this while reads keep filling it (answers of
/// many rows: an oltp range select is about 13 KB), so that a large
/// answer takes a few reads, not one per 512 bytes.
const MOST_READ: usize = 64 * 1024;
const FIRST_WRITE: usize = 256;

/// The number in the next prepared statement's name.
static NEXT_STATEMENT: AtomicU64 = AtomicU64::new(0);

/// Type OIDs the driver can encode parameters for.
const INT2: u32 = 21;
const INT4: u32 = 23;
const INT8: u32 = 20;
const TEXT: u32 = 25;
const VARCHAR: u32 = 1043;
const BPCHAR: u32 = 1042;
const NAME: u32 = 19;
const UNKNOWN: u32 = 705;

/// Whether the lean driver can connect as `config` says; the reason when
/// not (the connection then stays on tokio-postgres). TLS is decided by
/// the caller: this driver speaks plain text only.
pub fn supports(config: &Config) -> Result<(), &'static str> {
    if config.get_target_session_attrs() != TargetSessionAttrs::Any {
        return Err("target_session_attrs is set");
    }
    if config.get_channel_binding() == ChannelBindingSetting::Require {
        return Err("channel_binding=require needs TLS");
    }
    if config.get_tcp_user_timeout().is_some() {
        return Err("tcp_user_timeout is set");
    }
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err("no host is given");
    }
    Ok(())
}

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
    /// The server asks for a password and none was given.
    NoPassword,
    /// Authentication could not proceed on the client's side (a method
    /// this driver does not know, a server SCRAM does not trust).
    Auth(String),
    /// A parameter type or value this driver cannot encode: the
    /// statement runs on tokio-postgres instead.
    Unsupported(String),
    /// The server sent what the protocol does not allow here.
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
            WireError::NoPassword => f.write_str(crate::error::NO_PASSWORD),
            WireError::Auth(why) => write!(f, "authentication error: {why}"),
            WireError::Unsupported(why) => write!(f, "not supported by the lean driver: {why}"),
            WireError::Protocol(why) => write!(f, "unexpected message from server: {why}"),
        }
    }
}

impl std::error::Error for WireError {}

/// A parameter of a unit, as the operation has it; encoded as the
/// statement's declared type says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    Int(i64),
    Text(&'a str),
}

/// What the server answered to one execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// DataRows received.
    pub rows: u64,
    /// The count of CommandComplete (`UPDATE 1`, `SELECT 1`), 0 if none.
    pub affected: u64,
}

/// Where the connection went, for a cancel request to the same server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// What it takes to cancel what a lean connection is running: where it
/// is, and the backend key the server gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelKey {
    pub peer: Peer,
    pub process_id: i32,
    pub secret_key: i32,
}

impl CancelKey {
    /// Sends the cancel request on a new connection and waits until the
    /// server closes it (as libpq does; see [`super::cancel`] for why).
    pub async fn cancel(&self) -> io::Result<()> {
        let mut buf = BytesMut::with_capacity(16);
        frontend::cancel_request(self.process_id, self.secret_key, &mut buf);
        let mut scratch = [0u8; 64];
        match &self.peer {
            Peer::Tcp(addr) => {
                let mut s = TcpStream::connect(addr).await?;
                s.write_all(&buf).await?;
                while s.read(&mut scratch).await? > 0 {}
            }
            Peer::Unix(path) => {
                let mut s = UnixStream::connect(path).await?;
                s.write_all(&buf).await?;
                while s.read(&mut scratch).await? > 0 {}
            }
        }
        Ok(())
    }
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
        }
    }

    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
        }
    }
}

/// The read buffer: bytes `start..end` of `buf` are received and not yet
/// parsed. Messages are parsed where they lie; the buffer is compacted or
/// grown only when a message does not fit behind what is parsed.
struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    fn new() -> Self {
        ReadBuf {
            buf: vec![0; FIRST_READ],
            start: 0,
            end: 0,
        }
    }

    /// The next whole message in the buffer: its tag and where its body
    /// lies. None when more bytes are needed.
    fn next(&mut self) -> Option<(u8, usize, usize)> {
        let have = &self.buf[self.start..self.end];
        if have.len() < 5 {
            return None;
        }
        // The length counts itself: below 4 the server (or what answers
        // in its place) is not speaking the protocol. Read as a body that
        // ends where it starts, so that no slice runs backwards; the
        // message is unknown or fails to parse as what its tag says.
        let len = (u32::from_be_bytes([have[1], have[2], have[3], have[4]]) as usize).max(4);
        if have.len() < 1 + len {
            return None;
        }
        let tag = have[0];
        let body = self.start + 5;
        let end = self.start + 1 + len;
        self.start = end;
        if self.start == self.end {
            // All parsed: the next read starts at the front again. The
            // body is still there until then.
            self.start = 0;
            self.end = 0;
        }
        Some((tag, body, end))
    }

    /// `n` bytes were read into the free space: a read that filled it
    /// says more is waiting, and the buffer doubles (up to [`MOST_READ`])
    /// so that the rest takes fewer reads.
    fn read(&mut self, n: usize) {
        let filled = self.end + n == self.buf.len();
        self.end += n;
        if filled && self.buf.len() < MOST_READ {
            let size = (self.buf.len() * 2).min(MOST_READ);
            self.buf.resize(size, 0);
        }
    }

    /// Room for at least the rest of the message that starts at `start`:
    /// compacts, and grows when the message is larger than the buffer.
    fn make_room(&mut self) {
        let have = self.end - self.start;
        let need = if have >= 5 {
            let b = &self.buf[self.start..];
            1 + u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize
        } else {
            5
        };
        let short = |r: &ReadBuf| r.buf.len() - r.start < need || r.end == r.buf.len();
        if self.start > 0 && short(self) {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = have;
        }
        if short(self) {
            let size = need.max(self.buf.len() * 2).next_power_of_two();
            self.buf.resize(size, 0);
        }
    }
}

/// A prepared statement of a lean connection.
struct Prepared {
    name: String,
    /// The declared types of its parameters (OIDs).
    types: Vec<u32>,
}

/// One lean connection to a server.
pub struct WireConn {
    stream: Stream,
    wbuf: BytesMut,
    rbuf: ReadBuf,
    key: CancelKey,
    statements: Vec<Prepared>,
    /// The connection failed or was closed by the server: nothing more can
    /// be sent on it.
    broken: bool,
}

/// A message body's fields, for the parsers below.
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn i32(&mut self) -> Result<i32, WireError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<4>()
            .ok_or_else(|| WireError::Protocol("a message ends early".into()))?;
        self.0 = rest;
        Ok(i32::from_be_bytes(*head))
    }

    fn i16(&mut self) -> Result<i16, WireError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<2>()
            .ok_or_else(|| WireError::Protocol("a message ends early".into()))?;
        self.0 = rest;
        Ok(i16::from_be_bytes(*head))
    }

    fn cstr(&mut self) -> Result<&'a str, WireError> {
        let nul = self
            .0
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| WireError::Protocol("a string is not terminated".into()))?;
        let s = std::str::from_utf8(&self.0[..nul])
            .map_err(|_| WireError::Protocol("a string is not UTF-8".into()))?;
        self.0 = &self.0[nul + 1..];
        Ok(s)
    }
}

/// The fields of an ErrorResponse (or NoticeResponse) body.
pub fn parse_error(body: &[u8]) -> Result<DbError, WireError> {
    let mut b = Body(body);
    let mut e = DbError {
        severity: String::new(),
        code: String::new(),
        message: String::new(),
        detail: None,
        hint: None,
    };
    let mut severity_v = None;
    while let Some((&kind, rest)) = b.0.split_first() {
        if kind == 0 {
            break;
        }
        b.0 = rest;
        let value = b.cstr()?;
        match kind {
            b'S' => e.severity = value.to_string(),
            b'V' => severity_v = Some(value.to_string()),
            b'C' => e.code = value.to_string(),
            b'M' => e.message = value.to_string(),
            b'D' => e.detail = Some(value.to_string()),
            b'H' => e.hint = Some(value.to_string()),
            _ => {}
        }
    }
    if let Some(v) = severity_v {
        e.severity = v;
    }
    if e.code.is_empty() {
        return Err(WireError::Protocol("an error without a SQLSTATE".into()));
    }
    Ok(e)
}

/// The row count at the end of a CommandComplete tag (`UPDATE 3`,
/// `INSERT 0 1`); 0 for tags without one.
pub fn tag_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    if last.is_empty() || !last.iter().all(u8::is_ascii_digit) || last.len() == tag.len() {
        return 0;
    }
    last.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    })
}

/// Whether a parameter of type `oid` can be encoded.
pub fn type_supported(oid: u32) -> bool {
    matches!(
        oid,
        INT2 | INT4 | INT8 | TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN
    )
}

/// Writes `p` in binary as type `oid` wants it.
pub fn encode_param(
    p: Param<'_>,
    oid: u32,
    buf: &mut BytesMut,
) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    use bytes::BufMut;
    match (p, oid) {
        (Param::Int(v), INT2) => buf.put_i16(i16::try_from(v)?),
        (Param::Int(v), INT4) => buf.put_i32(i32::try_from(v)?),
        (Param::Int(v), INT8) => buf.put_i64(v),
        (Param::Text(s), TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN) => {
            buf.extend_from_slice(s.as_bytes())
        }
        (p, oid) => return Err(format!("cannot send {p:?} as a value of type {oid}").into()),
    }
    Ok(IsNull::No)
}

/// Writes the start-up message for `config`.
fn startup(config: &Config, buf: &mut BytesMut) -> io::Result<()> {
    let mut params = vec![("client_encoding", "UTF8")];
    if let Some(u) = config.get_user() {
        params.push(("user", u));
    }
    if let Some(d) = config.get_dbname() {
        params.push(("database", d));
    }
    if let Some(o) = config.get_options() {
        params.push(("options", o));
    }
    if let Some(a) = config.get_application_name() {
        params.push(("application_name", a));
    }
    frontend::startup_message(params, buf)
}

fn encode_err(e: io::Error) -> WireError {
    WireError::Protocol(format!("cannot encode a message: {e}"))
}

impl WireConn {
    /// Connects to the first host of `config` that answers (libpq's
    /// failover), authenticates and waits for the server to be ready.
    /// The caller bounds the whole of it with the connect timeout.
    pub async fn connect(config: &Config) -> Result<WireConn, WireError> {
        let hosts = config.get_hosts();
        let addrs = config.get_hostaddrs();
        let n = hosts.len().max(addrs.len());
        let ports = config.get_ports();
        let mut last = WireError::Connect(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no host to connect to",
        ));
        for i in 0..n {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match Self::connect_one(config, hosts.get(i), addrs.get(i).copied(), port).await {
                Ok(c) => return Ok(c),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn connect_one(
        config: &Config,
        host: Option<&Host>,
        addr: Option<std::net::IpAddr>,
        port: u16,
    ) -> Result<WireConn, WireError> {
        let (stream, peer) = match (host, addr) {
            (_, Some(ip)) => {
                let a = SocketAddr::new(ip, port);
                (Stream::Tcp(tcp(a).await?), Peer::Tcp(a))
            }
            (Some(Host::Unix(dir)), None) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                let s = UnixStream::connect(&path)
                    .await
                    .map_err(WireError::Connect)?;
                (Stream::Unix(s), Peer::Unix(path))
            }
            (Some(Host::Tcp(name)), None) => {
                let mut last = None;
                let mut made = None;
                let found = tokio::net::lookup_host((name.as_str(), port))
                    .await
                    .map_err(WireError::Connect)?;
                for a in found {
                    match tcp(a).await {
                        Ok(s) => {
                            made = Some((Stream::Tcp(s), Peer::Tcp(a)));
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                match made {
                    Some(m) => m,
                    None => {
                        return Err(last.unwrap_or_else(|| {
                            WireError::Connect(io::Error::new(
                                io::ErrorKind::NotFound,
                                format!("{name} has no address"),
                            ))
                        }));
                    }
                }
            }
            (None, None) => {
                return Err(WireError::Connect(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no host to connect to",
                )));
            }
        };
        let mut conn = WireConn {
            stream,
            wbuf: BytesMut::with_capacity(FIRST_WRITE),
            rbuf: ReadBuf::new(),
            key: CancelKey {
                peer,
                process_id: 0,
                secret_key: 0,
            },
            statements: Vec::new(),
            broken: false,
        };
        conn.start_up(config).await?;
        Ok(conn)
    }

    /// Start-up and authentication, until the first ReadyForQuery.
    async fn start_up(&mut self, config: &Config) -> Result<(), WireError> {
        startup(config, &mut self.wbuf).map_err(encode_err)?;
        self.flush().await?;
        let user = config.get_user().unwrap_or_default().as_bytes();
        let password = || {
            config
                .get_password()
                .filter(|p| !p.is_empty())
                .ok_or(WireError::NoPassword)
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, b0, b1) = self.next_message().await?;
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'R' => {
                    let mut b = Body(body);
                    match b.i32()? {
                        0 => {}
                        3 => {
                            let pw = password()?;
                            frontend::password_message(pw, &mut self.wbuf).map_err(encode_err)?;
                            self.flush().await?;
                        }
                        5 => {
                            let salt: [u8; 4] = b
                                .0
                                .get(..4)
                                .and_then(|s| s.try_into().ok())
                                .ok_or_else(|| WireError::Protocol("MD5 without salt".into()))?;
                            let hash = md5_hash(user, password()?, salt);
                            frontend::password_message(hash.as_bytes(), &mut self.wbuf)
                                .map_err(encode_err)?;
                            self.flush().await?;
                        }
                        10 => {
                            let mut offered = false;
                            while let Ok(m) = b.cstr() {
                                if m.is_empty() {
                                    break;
                                }
                                offered |= m == SCRAM_SHA_256;
                            }
                            if !offered {
                                return Err(WireError::Auth(
                                    "the server offers no SASL mechanism this client knows".into(),
                                ));
                            }
                            let s = ScramSha256::new(password()?, ChannelBinding::unsupported());
                            frontend::sasl_initial_response(
                                SCRAM_SHA_256,
                                s.message(),
                                &mut self.wbuf,
                            )
                            .map_err(encode_err)?;
                            scram = Some(s);
                            self.flush().await?;
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL continue without a start".into())
                            })?;
                            s.update(b.0).map_err(|e| WireError::Auth(e.to_string()))?;
                            frontend::sasl_response(s.message(), &mut self.wbuf)
                                .map_err(encode_err)?;
                            self.flush().await?;
                        }
                        12 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL final without a start".into())
                            })?;
                            s.finish(b.0).map_err(|e| WireError::Auth(e.to_string()))?;
                        }
                        other => {
                            return Err(WireError::Auth(format!(
                                "the server asks for authentication method {other}, which the lean driver does not speak"
                            )));
                        }
                    }
                }
                b'K' => {
                    let mut b = Body(body);
                    self.key.process_id = b.i32()?;
                    self.key.secret_key = b.i32()?;
                }
                b'E' => {
                    let e = parse_error(body)?;
                    self.broken = true;
                    return Err(WireError::Db(Box::new(e)));
                }
                b'Z' => return Ok(()),
                // ParameterStatus, NoticeResponse, NegotiateProtocolVersion.
                _ => {}
            }
        }
    }

    /// Writes the write buffer out and empties it.
    async fn flush(&mut self) -> Result<(), WireError> {
        let r = self.stream.write_all(&self.wbuf).await;
        self.wbuf.clear();
        r.map_err(|e| self.lost(Some(e)))
    }

    fn lost(&mut self, e: Option<io::Error>) -> WireError {
        self.broken = true;
        WireError::Closed(e)
    }

    /// The next whole message: its tag and where its body lies in the
    /// read buffer (valid until the next call).
    async fn next_message(&mut self) -> Result<(u8, usize, usize), WireError> {
        loop {
            if let Some(m) = self.rbuf.next() {
                return Ok(m);
            }
            self.rbuf.make_room();
            let end = self.rbuf.end;
            match self.stream.read(&mut self.rbuf.buf[end..]).await {
                Ok(0) => return Err(self.lost(None)),
                Ok(n) => self.rbuf.read(n),
                Err(e) => return Err(self.lost(Some(e))),
            }
        }
    }

    /// Reads up to ReadyForQuery: the rows and the count of what was
    /// executed, or the first error the server sent. An error followed
    /// by the end of the connection (the server shutting down) is the
    /// server's error, and the connection is broken.
    async fn answer(&mut self) -> Result<Answer, WireError> {
        let mut answer = Answer::default();
        let mut failed: Option<DbError> = None;
        loop {
            let (tag, b0, b1) = match self.next_message().await {
                Ok(m) => m,
                Err(e) => {
                    return Err(match failed {
                        Some(db) => WireError::Db(Box::new(db)),
                        None => e,
                    });
                }
            };
            match tag {
                b'D' => answer.rows += 1,
                b'C' => answer.affected = tag_rows(&self.rbuf.buf[b0..b1]),
                b'E' => {
                    let e = parse_error(&self.rbuf.buf[b0..b1])?;
                    if e.severity == "FATAL" || e.severity == "PANIC" {
                        self.broken = true;
                    }
                    failed.get_or_insert(e);
                }
                b'Z' => {
                    return match failed {
                        Some(db) => Err(WireError::Db(Box::new(db))),
                        None => Ok(answer),
                    };
                }
                // BindComplete, ParseComplete, NoData, EmptyQuery,
                // RowDescription, notices, parameter changes,
                // notifications.
                _ => {}
            }
        }
    }

    /// Runs `sql` with the simple query protocol (session settings).
    pub async fn simple_query(&mut self, sql: &str) -> Result<Answer, WireError> {
        self.usable()?;
        frontend::query(sql, &mut self.wbuf).map_err(encode_err)?;
        self.flush().await?;
        self.answer().await
    }

    /// Prepares `sql` as the connection's next statement; returns its
    /// index for [`WireConn::execute`]. A parameter of a type the driver
    /// cannot encode makes it [`WireError::Unsupported`].
    pub async fn prepare(&mut self, sql: &str) -> Result<usize, WireError> {
        self.usable()?;
        // Unique in the process, as tokio-postgres names its statements:
        // behind a pooler, server connections are shared by clients.
        let name = format!("lean{}", NEXT_STATEMENT.fetch_add(1, Ordering::Relaxed));
        frontend::parse(&name, sql, std::iter::empty(), &mut self.wbuf).map_err(encode_err)?;
        frontend::describe(b'S', &name, &mut self.wbuf).map_err(encode_err)?;
        frontend::sync(&mut self.wbuf);
        self.flush().await?;
        let mut types = Vec::new();
        let mut failed: Option<DbError> = None;
        loop {
            let (tag, b0, b1) = match self.next_message().await {
                Ok(m) => m,
                Err(e) => return Err(failed.map_or(e, |db| WireError::Db(Box::new(db)))),
            };
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b't' => {
                    let mut b = Body(body);
                    let n = b.i16()?;
                    types = (0..n)
                        .map(|_| b.i32().map(|t| t as u32))
                        .collect::<Result<_, _>>()?;
                }
                b'E' => {
                    failed.get_or_insert(parse_error(body)?);
                }
                b'Z' => break,
                _ => {}
            }
        }
        if let Some(db) = failed {
            return Err(WireError::Db(Box::new(db)));
        }
        if let Some(t) = types.iter().find(|&&t| !type_supported(t)) {
            return Err(WireError::Unsupported(format!(
                "a parameter of type OID {t} in: {sql}"
            )));
        }
        self.statements.push(Prepared { name, types });
        Ok(self.statements.len() - 1)
    }

    /// Executes prepared statement `index` with parameters `param(0..n)`,
    /// as one Bind+Execute+Sync, and reads its answer.
    pub async fn execute<'p>(
        &mut self,
        index: usize,
        param: impl Fn(usize) -> Param<'p>,
    ) -> Result<Answer, WireError> {
        self.usable()?;
        let st = self
            .statements
            .get(index)
            .ok_or_else(|| WireError::Protocol(format!("no statement {index}")))?;
        let types = &st.types;
        let bound = frontend::bind(
            "",
            &st.name,
            Some(1),
            0..types.len(),
            |i, buf| encode_param(param(i), types[i], buf),
            Some(1),
            &mut self.wbuf,
        );
        if let Err(e) = bound {
            self.wbuf.clear();
            let why = match e {
                frontend::BindError::Conversion(e) => e.to_string(),
                frontend::BindError::Serialization(e) => e.to_string(),
            };
            return Err(WireError::Unsupported(why));
        }
        frontend::execute("", 0, &mut self.wbuf).map_err(encode_err)?;
        frontend::sync(&mut self.wbuf);
        self.flush().await?;
        self.answer().await
    }

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
        let _ = match &mut self.stream {
            Stream::Tcp(s) => s.shutdown().await,
            Stream::Unix(s) => s.shutdown().await,
        };
    }
}

/// A TCP connection with what tokio-postgres sets: no Nagle delay, TCP
/// keepalive on.
async fn tcp(addr: SocketAddr) -> Result<TcpStream, WireError> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(WireError::Connect)?;
    socket.set_keepalive(true).map_err(WireError::Connect)?;
    socket.set_nodelay(true).map_err(WireError::Connect)?;
    socket.connect(addr).await.map_err(WireError::Connect)
}

#[cfg(test)]
mod tests {
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
    fn parameters_are_encoded_as_their_declared_types_say() {
        let mut b = BytesMut::new();
        encode_param(Param::Int(7), INT4, &mut b).unwrap();
        encode_param(Param::Int(7), INT8, &mut b).unwrap();
        encode_param(Param::Int(-2), INT2, &mut b).unwrap();
        encode_param(Param::Text("ab"), VARCHAR, &mut b).unwrap();
        assert_eq!(
            &b[..],
            &[0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xfe, b'a', b'b']
        );
        assert!(encode_param(Param::Int(1 << 40), INT4, &mut b).is_err());
        assert!(encode_param(Param::Text("x"), INT4, &mut b).is_err());
        assert!(encode_param(Param::Int(1), 1700, &mut b).is_err());
        assert!(type_supported(INT4) && type_supported(TEXT) && !type_supported(1700));
    }

    #[test]
    fn a_bind_execute_sync_is_one_buffer_of_three_messages() {
        let mut b = BytesMut::new();
        let types = [INT4, TEXT];
        let params = [Param::Int(5), Param::Text("x")];
        frontend::bind(
            "",
            "s0",
            Some(1),
            0..2,
            |i, buf| encode_param(params[i], types[i], buf),
            Some(1),
            &mut b,
        )
        .map_err(|_| "bind failed")
        .unwrap();
        frontend::execute("", 0, &mut b).unwrap();
        frontend::sync(&mut b);
        let mut r = ReadBuf::new();
        r.buf[..b.len()].copy_from_slice(&b);
        r.end = b.len();
        let tags: Vec<u8> = std::iter::from_fn(|| r.next().map(|m| m.0)).collect();
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
        assert_eq!(r.next().map(|m| m.0), Some(b'2'));
        assert_eq!(r.next(), None);
        // A length below 4 (not the protocol) gives an empty body, not a
        // slice that runs backwards.
        let mut bad = ReadBuf::new();
        bad.buf[..5].copy_from_slice(&[b'E', 0, 0, 0, 1]);
        bad.end = 5;
        let (_, b0, b1) = bad.next().expect("a message");
        assert!(b0 <= b1);
        assert!(parse_error(&bad.buf[b0..b1]).is_err());
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
