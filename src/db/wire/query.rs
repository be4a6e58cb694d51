//! Running statements on a connection: the simple query protocol, the
//! extended protocol with named (prepared) and unnamed statements, COPY
//! FROM STDIN, and pipelines, with their answers read in place.
//!
//! Every way of running a statement is the same three steps: messages
//! queued in the write buffer, one write, answers read up to what ends
//! them. A one-shot statement is the three in a row (one `sendto`, one
//! `recvfrom`); a pipeline queues many, writes once and reads each
//! statement's result as it comes ([`WireConn::result`]), then the
//! Sync's ReadyForQuery ([`WireConn::synced`]).
//!
//! Results come in text format, as psql and pgbench get them: a workload
//! that reads a value parses the digits it needs ([`Rows::get`]), and no
//! decoder per type is needed here.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use postgres_protocol::message::frontend;

use super::decode::{Rows, out_of_place, parameter_types, parse_error, row_names, tag_rows};
use super::encode::{binary, encode_param, literal};
use super::{Answer, DbError, Param, Prepared, WireConn, WireError, encode_err};

/// The number in the next prepared statement's name.
static NEXT_STATEMENT: AtomicU64 = AtomicU64::new(0);

/// A statement prepared on one connection (it means nothing on another).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stmt(pub(super) usize);

/// How a statement with parameters is sent: pgbench's `-M`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// The simple query protocol, the values written into the text.
    Simple,
    /// The extended protocol with an unnamed statement, parsed each time.
    Extended,
    /// The extended protocol with a named statement, parsed once per
    /// connection.
    #[default]
    Prepared,
}

impl Protocol {
    pub fn parse(s: &str) -> Option<Protocol> {
        Some(match s {
            "simple" => Protocol::Simple,
            "extended" => Protocol::Extended,
            "prepared" => Protocol::Prepared,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// A workload's statement, sent as the run's protocol says (`-M`):
/// prepared once per connection; as the unnamed statement each time (so
/// that nothing of it outlives the round trip, as a pooler in transaction
/// mode needs); or with its values written into the text (the simple
/// protocol). A workload writes its statement once, with `$n`
/// parameters, whatever the protocol.
#[derive(Clone, Debug)]
pub struct Sql {
    text: String,
    protocol: Protocol,
    st: Option<Stmt>,
}

impl Sql {
    /// `text`, prepared on `conn` when the protocol prepares.
    pub async fn new(
        conn: &mut WireConn,
        text: String,
        protocol: Protocol,
    ) -> Result<Sql, WireError> {
        let st = if protocol == Protocol::Prepared {
            Some(conn.prepare(&text).await?)
        } else {
            None
        };
        Ok(Sql { text, protocol, st })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Runs it, counting what it returns.
    pub async fn execute(
        &self,
        conn: &mut WireConn,
        params: &[Param<'_>],
    ) -> Result<Answer, WireError> {
        conn.run(self.protocol, &self.text, self.st, params, None)
            .await
    }

    /// Runs it, keeping its rows.
    pub async fn query(
        &self,
        conn: &mut WireConn,
        params: &[Param<'_>],
        rows: &mut Rows,
    ) -> Result<Answer, WireError> {
        conn.run(self.protocol, &self.text, self.st, params, Some(rows))
            .await
    }

    /// Queues it into a pipeline (prepared or unnamed; the simple
    /// protocol has no pipeline).
    pub fn queue(&self, conn: &mut WireConn, params: &[Param<'_>]) -> Result<(), WireError> {
        match self.st {
            Some(st) => conn.queue(st, params),
            None if self.protocol == Protocol::Extended => {
                conn.queue_unnamed(&self.text, params, false)
            }
            None => Err(WireError::Unsupported(
                "the simple query protocol cannot be pipelined".into(),
            )),
        }
    }
}

impl WireConn {
    /// Writes the write buffer out and empties it.
    pub(super) fn flush(&mut self) -> impl Future<Output = Result<(), WireError>> + Send + '_ {
        // A poll in place of nested futures (see `Stream::poll_read`).
        let mut done = 0;
        std::future::poll_fn(move |cx| {
            let r = match self.stream.poll_write_all(cx, &self.wbuf, &mut done) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => r,
            };
            self.wbuf.clear();
            Poll::Ready(r.map_err(|e| self.lost(Some(e))))
        })
    }

    pub(super) fn lost(&mut self, e: Option<io::Error>) -> WireError {
        self.broken = true;
        WireError::Closed(e)
    }

    /// A message the protocol does not allow where it came: the
    /// connection cannot be trusted to be in step any more, so it ends.
    pub(super) fn unexpected(&mut self, tag: u8, waiting_for: &str) -> WireError {
        self.broken = true;
        out_of_place(tag, &format!("while {waiting_for}"))
    }

    /// The next whole message: its tag and where its body lies in the
    /// read buffer (valid until the next call). Bytes that are not a
    /// message the server may send, or a message whose body is not what
    /// its type says, end the connection as [`WireError::Protocol`]
    /// (see `decode.rs`).
    pub(super) fn next_message(
        &mut self,
    ) -> impl Future<Output = Result<(u8, usize, usize), WireError>> + Send + '_ {
        std::future::poll_fn(move |cx| self.poll_message(cx))
    }

    /// [`Self::next_message`] as a poll (see `Stream::poll_read`).
    fn poll_message(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(u8, usize, usize), WireError>> {
        loop {
            match self.rbuf.next() {
                Ok(Some(m)) => return Poll::Ready(Ok(m)),
                Ok(None) => {}
                Err(e) => {
                    self.broken = true;
                    return Poll::Ready(Err(e));
                }
            }
            self.rbuf.make_room();
            let end = self.rbuf.end;
            let n = match self.stream.poll_read(cx, &mut self.rbuf.buf[end..]) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(self.lost(None))),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.lost(Some(e)))),
            };
            self.rbuf.read(n);
        }
    }

    /// Reads up to ReadyForQuery: the rows (into `rows`, if given: those
    /// of the last statement that returned rows) and the count of what
    /// was executed, or the first error the server sent. An error
    /// followed by the end of the connection (the server shutting down)
    /// is the server's error, and the connection is broken.
    fn until_ready<'a>(
        &'a mut self,
        rows: Option<&'a mut Rows>,
    ) -> impl Future<Output = Result<Answer, WireError>> + Send + 'a {
        self.read_answer(false, rows)
    }

    /// [`Self::until_ready`], after writing what is queued when `flush`:
    /// one state machine for both (see `Stream::poll_read`).
    async fn read_answer(
        &mut self,
        flush: bool,
        mut rows: Option<&mut Rows>,
    ) -> Result<Answer, WireError> {
        if flush {
            self.flush().await?;
        }
        let mut answer = Answer::default();
        // Boxed: a server error is 120 bytes, and this future is part of
        // every unit's state, which a unit reads on as few cache lines as
        // it can (see `Stream::poll_read`).
        let mut failed: Option<Box<DbError>> = None;
        loop {
            let (tag, b0, b1) = match self.next_message().await {
                Ok(m) => m,
                Err(e) => return Err(failed.map_or(e, WireError::Db)),
            };
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'D' => {
                    answer.rows += 1;
                    if let Some(r) = rows.as_deref_mut() {
                        // The rest of the answer is left unread: the
                        // connection ends.
                        r.push(body).map_err(|e| garbled(&mut self.broken, e))?;
                    }
                }
                b'T' => {
                    if let Some(r) = rows.as_deref_mut() {
                        r.clear();
                        r.set_names(row_names(body)?);
                    }
                    answer.rows = 0;
                }
                b'C' => answer.affected = tag_rows(body),
                b'E' => {
                    let e = server_error(&mut self.broken, body)?;
                    failed.get_or_insert_with(|| Box::new(e));
                }
                b'Z' => {
                    self.status = body.first().copied().unwrap_or(b'I');
                    return match failed {
                        Some(db) => Err(WireError::Db(db)),
                        None => Ok(answer),
                    };
                }
                // ParseComplete, BindComplete, CloseComplete, NoData,
                // EmptyQuery, PortalSuspended, ParameterDescription,
                // notices, parameter changes, notifications.
                b'1' | b'2' | b'3' | b'n' | b'I' | b's' | b't' | b'N' | b'S' | b'A' => {}
                // COPY from a statement run as a query: refuse it (the
                // server then ends the COPY with an error).
                b'G' => {
                    frontend::copy_fail("COPY is not expected here", &mut self.wbuf)
                        .map_err(encode_err)?;
                    self.flush().await?;
                }
                b'H' | b'W' => {}
                b'd' | b'c' => {}
                other => return Err(self.unexpected(other, "waiting for an answer")),
            }
        }
    }

    /// Runs `sql` with the simple query protocol (session settings,
    /// BEGIN, COMMIT), counting what it returns.
    pub async fn simple_query(&mut self, sql: &str) -> Result<Answer, WireError> {
        self.usable()?;
        written(&mut self.wbuf, |b| frontend::query(sql, b))?;
        self.read_answer(true, None).await
    }

    /// Runs `sql` with the simple query protocol and keeps the rows of
    /// its last statement that returned rows.
    pub async fn simple_rows(&mut self, sql: &str, rows: &mut Rows) -> Result<Answer, WireError> {
        rows.clear();
        self.usable()?;
        written(&mut self.wbuf, |b| frontend::query(sql, b))?;
        self.read_answer(true, Some(rows)).await
    }

    /// Prepares `sql` as a named statement of this connection, learning
    /// its parameters' types (to send keys in binary) and its columns'
    /// names.
    pub async fn prepare(&mut self, sql: &str) -> Result<Stmt, WireError> {
        self.usable()?;
        // Unique in the process, as tokio-postgres names its statements:
        // behind a pooler, server connections are shared by clients.
        let name = format!("lean{}", NEXT_STATEMENT.fetch_add(1, Ordering::Relaxed));
        written(&mut self.wbuf, |b| {
            frontend::parse(&name, sql, std::iter::empty(), b)?;
            frontend::describe(b'S', &name, b)
        })?;
        frontend::sync(&mut self.wbuf);
        self.flush().await?;
        let mut types = Vec::new();
        let mut names = Vec::new();
        let mut failed: Option<DbError> = None;
        loop {
            let (tag, b0, b1) = match self.next_message().await {
                Ok(m) => m,
                Err(e) => return Err(failed.map_or(e, |db| WireError::Db(Box::new(db)))),
            };
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b't' => types = parameter_types(body)?,
                b'T' => names = row_names(body)?,
                b'E' => {
                    let e = server_error(&mut self.broken, body)?;
                    failed.get_or_insert(e);
                }
                b'Z' => {
                    self.status = body.first().copied().unwrap_or(b'I');
                    break;
                }
                b'1' | b'n' | b'N' | b'S' | b'A' => {}
                other => return Err(self.unexpected(other, "preparing a statement")),
            }
        }
        if let Some(db) = failed {
            return Err(WireError::Db(Box::new(db)));
        }
        self.statements.push(Prepared { name, types, names });
        Ok(Stmt(self.statements.len() - 1))
    }

    /// The columns' names of a prepared statement.
    pub fn columns(&self, st: Stmt) -> &[String] {
        self.statements.get(st.0).map_or(&[], |p| &p.names)
    }

    /// Queues a Bind and an Execute of `st` with `params`.
    pub fn queue(&mut self, st: Stmt, params: &[Param<'_>]) -> Result<(), WireError> {
        self.usable()?;
        let Some(prepared) = self.statements.get(st.0) else {
            return Err(WireError::Protocol(format!(
                "statement {} is not prepared on this connection",
                st.0
            )));
        };
        bind(&mut self.wbuf, &prepared.name, &prepared.types, params)?;
        execute_unnamed(&mut self.wbuf);
        Ok(())
    }

    /// Queues `sql` as an unnamed statement: Parse, Bind, Describe (for
    /// the columns' names when `describe`) and Execute.
    pub fn queue_unnamed(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        describe: bool,
    ) -> Result<(), WireError> {
        self.usable()?;
        // All four or none: a Parse queued without its Bind would go out
        // ahead of the next statement.
        let mark = self.wbuf.len();
        let mut queue = || {
            written(&mut self.wbuf, |b| {
                frontend::parse("", sql, std::iter::empty(), b)
            })?;
            bind(&mut self.wbuf, "", &[], params)?;
            written(&mut self.wbuf, |b| {
                if describe {
                    frontend::describe(b'P', "", b)?;
                }
                frontend::execute("", 0, b)
            })
        };
        let queued = queue();
        if queued.is_err() {
            self.wbuf.truncate(mark);
        }
        queued
    }

    /// Queues a Sync: the end of a pipeline's part (or of a one-shot
    /// statement). The server answers it with ReadyForQuery.
    pub fn queue_sync(&mut self) {
        frontend::sync(&mut self.wbuf);
    }

    /// Writes what is queued.
    pub async fn send(&mut self) -> Result<(), WireError> {
        self.usable()?;
        self.flush().await
    }

    /// Reads the result of the next queued statement: its rows (into
    /// `rows`, if given) and count; or the server's error, after which the
    /// server skips everything up to the next Sync ([`Self::synced`]).
    pub async fn result(&mut self, mut rows: Option<&mut Rows>) -> Result<Answer, WireError> {
        let mut answer = Answer::default();
        loop {
            let (tag, b0, b1) = self.next_message().await?;
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'D' => {
                    answer.rows += 1;
                    if let Some(r) = rows.as_deref_mut() {
                        // The rest of the answer is left unread: the
                        // connection ends.
                        r.push(body).map_err(|e| garbled(&mut self.broken, e))?;
                    }
                }
                b'T' => {
                    if let Some(r) = rows.as_deref_mut() {
                        r.set_names(row_names(body)?);
                    }
                }
                b'C' => {
                    answer.affected = tag_rows(body);
                    return Ok(answer);
                }
                b'I' | b's' => return Ok(answer),
                b'E' => {
                    let e = server_error(&mut self.broken, body)?;
                    return Err(WireError::Db(Box::new(e)));
                }
                b'1' | b'2' | b'n' | b'N' | b'S' | b'A' => {}
                other => return Err(self.unexpected(other, "waiting for a statement's result")),
            }
        }
    }

    /// Reads up to the ReadyForQuery that answers a Sync, past whatever
    /// results are left before it.
    pub async fn synced(&mut self) -> Result<(), WireError> {
        self.until_ready(None)
            .await
            .map(|_| ())
            .or_else(|e| match e {
                // An error here belongs to a statement whose result the caller
                // did not read; the connection is still in step.
                WireError::Db(_) if !self.broken => Ok(()),
                e => Err(e),
            })
    }

    /// Runs prepared statement `st` with `params` as one
    /// Bind+Execute+Sync (one write, one read), counting what it returns.
    pub async fn execute(&mut self, st: Stmt, params: &[Param<'_>]) -> Result<Answer, WireError> {
        self.queue(st, params)?;
        self.run_queued().await
    }

    /// Sends what is queued (one statement's Bind and Execute) with a
    /// Sync and reads its answer up to ReadyForQuery, counting what it
    /// returns. (Apart from [`Self::synced_answer`], which keeps rows:
    /// this is the path of most units, kept to the few lines it runs.)
    pub fn run_queued(&mut self) -> impl Future<Output = Result<Answer, WireError>> + Send + '_ {
        self.queue_sync();
        self.read_answer(true, None)
    }

    /// Sends what is queued (one statement's Bind and Execute, after
    /// [`Self::queue`] or [`Self::queue_unnamed`]) with a Sync and reads
    /// its answer up to ReadyForQuery: the rows into `rows` if given,
    /// named as prepared statement `st`'s columns (or, with None, as the
    /// RowDescription a described unnamed statement gets back). With the
    /// parameters bound as it is queued, a caller need not keep them
    /// across the wait.
    pub async fn synced_answer(
        &mut self,
        st: Option<Stmt>,
        mut rows: Option<&mut Rows>,
    ) -> Result<Answer, WireError> {
        self.queue_sync();
        self.flush().await?;
        if let Some(r) = rows.as_deref_mut() {
            match st.and_then(|st| self.statements.get(st.0)) {
                // names_from copies the names only when they changed.
                Some(p) => {
                    r.clear_rows();
                    r.names_from(&p.names);
                }
                None => r.clear(),
            }
        }
        self.until_ready(rows).await
    }

    /// As [`Self::execute`], keeping the rows, named as the statement's
    /// columns.
    pub async fn query(
        &mut self,
        st: Stmt,
        params: &[Param<'_>],
        rows: &mut Rows,
    ) -> Result<Answer, WireError> {
        self.queue(st, params)?;
        self.synced_answer(Some(st), Some(rows)).await
    }

    /// Runs `sql` with `params` as the protocol says: prepared (then `st`
    /// must be its statement), as an unnamed statement, or with the values
    /// written into the text. The rows go to `rows` if given.
    pub async fn run(
        &mut self,
        protocol: Protocol,
        sql: &str,
        st: Option<Stmt>,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> Result<Answer, WireError> {
        match (protocol, st) {
            (Protocol::Prepared, Some(st)) => match rows {
                Some(r) => self.query(st, params, r).await,
                None => self.execute(st, params).await,
            },
            (Protocol::Simple, _) => {
                let text = inline(sql, params);
                match rows {
                    Some(r) => self.simple_rows(&text, r).await,
                    None => self.simple_query(&text).await,
                }
            }
            _ => {
                self.queue_unnamed(sql, params, rows.is_some())?;
                self.synced_answer(None, rows).await
            }
        }
    }

    /// Starts `COPY … FROM STDIN`: after this, [`Self::copy_send`] the
    /// data and [`Self::copy_finish`] (or [`Self::copy_abort`]).
    pub async fn copy_start(&mut self, sql: &str) -> Result<(), WireError> {
        self.usable()?;
        written(&mut self.wbuf, |b| frontend::query(sql, b))?;
        self.flush().await?;
        let mut failed: Option<DbError> = None;
        loop {
            let (tag, b0, b1) = match self.next_message().await {
                Ok(m) => m,
                Err(e) => return Err(failed.map_or(e, |db| WireError::Db(Box::new(db)))),
            };
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'G' => return Ok(()),
                b'E' => {
                    failed.get_or_insert(parse_error(body)?);
                }
                b'Z' => {
                    self.status = body.first().copied().unwrap_or(b'I');
                    return Err(match failed {
                        Some(db) => WireError::Db(Box::new(db)),
                        None => WireError::Protocol(format!("'{sql}' is not a COPY FROM STDIN")),
                    });
                }
                b'N' | b'S' | b'A' | b'T' | b'D' | b'C' | b'I' => {}
                other => return Err(self.unexpected(other, "starting a COPY")),
            }
        }
    }

    /// Sends `data` (whole rows or not: the server joins them) as COPY
    /// data; written out once a few hundred KB are queued.
    pub async fn copy_send(&mut self, data: &[u8]) -> Result<(), WireError> {
        self.usable()?;
        frontend::CopyData::new(data)
            .map_err(encode_err)?
            .write(&mut self.wbuf);
        if self.wbuf.len() >= COPY_WRITE {
            self.flush().await?;
        }
        Ok(())
    }

    /// Ends the COPY and reads the server's answer: the rows it took.
    pub async fn copy_finish(&mut self) -> Result<Answer, WireError> {
        self.usable()?;
        frontend::copy_done(&mut self.wbuf);
        self.read_answer(true, None).await
    }

    /// Ends the COPY with a failure: the server rolls it back.
    pub async fn copy_abort(&mut self, why: &str) -> Result<(), WireError> {
        self.usable()?;
        frontend::copy_fail(why, &mut self.wbuf).map_err(encode_err)?;
        match self.read_answer(true, None).await {
            Ok(_) | Err(WireError::Db(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Whether the server said at its last ReadyForQuery that a
    /// transaction is open (or failed and waiting for its rollback).
    pub fn in_transaction(&self) -> bool {
        matches!(self.status, b'T' | b'E')
    }
}

/// What COPY data is queued before it is written out.
const COPY_WRITE: usize = 256 * 1024;

/// Runs `write` on the write buffer; when it fails (a NUL inside a
/// string), takes back what it wrote: half a message sent ahead of the
/// next request is a protocol violation, and the server ends the
/// connection.
fn written(
    buf: &mut bytes::BytesMut,
    write: impl FnOnce(&mut bytes::BytesMut) -> io::Result<()>,
) -> Result<(), WireError> {
    let mark = buf.len();
    write(buf).map_err(|e| {
        buf.truncate(mark);
        encode_err(e)
    })
}

/// `e` met half-way through an answer, whose rest is left unread: the
/// connection (whose `broken` this is) ends.
/// An ErrorResponse's fields; a FATAL or PANIC one ends the connection
/// (the server closes it after sending it).
pub(super) fn server_error(broken: &mut bool, body: &[u8]) -> Result<DbError, WireError> {
    let e = parse_error(body)?;
    if e.severity == "FATAL" || e.severity == "PANIC" {
        *broken = true;
    }
    Ok(e)
}

fn garbled(broken: &mut bool, e: WireError) -> WireError {
    *broken = true;
    e
}

/// Writes a Bind of statement `name` (declared parameter types `types`,
/// empty for an unnamed one) with `params`, results in text; nothing
/// when a value cannot be sent.
///
/// Framed here rather than by `postgres_protocol::message::frontend::bind`:
/// that one takes two iterators and a closure per value, and writes
/// through `BufMut` with a length patched per value and per message. The
/// Bind is on every unit's path, and the generic version cost about 500
/// instructions and 50 first-level instruction-cache misses per query
/// (callgrind, issue 24); this one writes the same bytes (the unit test
/// below compares them) with a fraction of the code.
fn bind(
    buf: &mut bytes::BytesMut,
    name: &str,
    types: &[u32],
    params: &[Param<'_>],
) -> Result<(), WireError> {
    let mark = buf.len();
    let written = write_bind(buf, name, types, params);
    if written.is_err() {
        buf.truncate(mark);
    }
    written
}

fn write_bind(
    buf: &mut bytes::BytesMut,
    name: &str,
    types: &[u32],
    params: &[Param<'_>],
) -> Result<(), WireError> {
    use bytes::BufMut;
    let oid = |i: usize| types.get(i).copied().unwrap_or(0);
    let count = i16::try_from(params.len())
        .map_err(|_| WireError::Unsupported(format!("{} parameters are too many", params.len())))?;
    let start = buf.len();
    buf.reserve(16 + name.len() + 8 * params.len());
    buf.put_u8(b'B');
    buf.put_i32(0);
    // The unnamed portal, then the statement.
    buf.put_u8(0);
    buf.put_slice(name.as_bytes());
    buf.put_u8(0);
    buf.put_i16(count);
    for (i, p) in params.iter().enumerate() {
        buf.put_i16(i16::from(binary(p, oid(i))));
    }
    buf.put_i16(count);
    for (i, p) in params.iter().enumerate() {
        let at = buf.len();
        buf.put_i32(0);
        let len = match encode_param(p, oid(i), buf) {
            Ok(true) => length(buf.len() - at - 4)?,
            Ok(false) => -1,
            Err(e) => return Err(WireError::Unsupported(e)),
        };
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    // One result format for every column: text.
    buf.put_i16(1);
    buf.put_i16(0);
    let len = length(buf.len() - start - 1)?;
    buf[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// A length as the protocol writes it, or why it cannot be sent.
fn length(n: usize) -> Result<i32, WireError> {
    i32::try_from(n).map_err(|_| WireError::Unsupported("value too large to transmit".into()))
}

/// Writes an Execute of the unnamed portal, all its rows.
fn execute_unnamed(buf: &mut bytes::BytesMut) {
    buf.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
}

/// `sql` with `$1`, `$2`, … replaced by `params` as literals (for the
/// simple protocol). A `$n` inside a quoted string or identifier is left
/// alone; one beyond the parameters too (the server then says so).
pub fn inline(sql: &str, params: &[Param<'_>]) -> String {
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let bytes = sql.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'$'
                && !(i > 0
                    && (bytes[i - 1].is_ascii_alphanumeric()
                        || bytes[i - 1] == b'_'
                        || bytes[i - 1] == b'$')) =>
            {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let n: Option<usize> = sql[i + 1..i + 1 + digits].parse().ok();
                if let Some(p) = n.and_then(|n| n.checked_sub(1)).and_then(|n| params.get(n)) {
                    literal(p, &mut out);
                    i += 1 + digits;
                    continue;
                }
            }
            None => {}
        }
        // Copy one whole character.
        let len = sql[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&sql[i..i + len]);
        i += len;
    }
    out
}

/// A Bind and an Execute, for the tests of how messages are framed.
#[cfg(test)]
pub(super) fn bind_for_test(
    buf: &mut bytes::BytesMut,
    name: &str,
    types: &[u32],
    params: &[Param<'_>],
) {
    bind(buf, name, types, params).expect("bind");
    frontend::execute("", 0, buf).expect("execute");
}

#[cfg(test)]
mod tests {
    use super::*;

    use postgres_protocol::IsNull;

    /// The Bind and Execute written here are byte for byte those of
    /// postgres_protocol's generic writers, for every kind of value.
    #[test]
    fn bind_and_execute_are_framed_as_the_protocol_crate_frames_them() {
        use super::super::encode::{BOOL, FLOAT8, INT4, INT8, TEXT};
        let params = [
            Param::Int(7),
            Param::Int(-3),
            Param::Text("héllo"),
            Param::Null,
            Param::Bool(true),
            Param::Float(2.5),
            Param::Int(42),
            Param::Ints(&[1, 2]),
        ];
        let types = [INT4, INT8, TEXT, INT4, BOOL, FLOAT8, 0];
        for (name, types) in [("lean7", &types[..]), ("", &[][..])] {
            let mut ours = bytes::BytesMut::new();
            bind(&mut ours, name, types, &params).unwrap();
            execute_unnamed(&mut ours);
            let mut theirs = bytes::BytesMut::new();
            let oid = |i: usize| types.get(i).copied().unwrap_or(0);
            frontend::bind(
                "",
                name,
                params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| i16::from(binary(p, oid(i)))),
                params.iter().enumerate(),
                |(i, p), buf| match encode_param(p, oid(i), buf) {
                    Ok(true) => Ok(IsNull::No),
                    Ok(false) => Ok(IsNull::Yes),
                    Err(e) => Err(e.into()),
                },
                Some(0),
                &mut theirs,
            )
            .map_err(|_| "postgres_protocol could not write the Bind")
            .unwrap();
            frontend::execute("", 0, &mut theirs).unwrap();
            assert_eq!(&ours[..], &theirs[..], "statement {name:?}");
        }
    }

    /// A value that cannot be sent leaves nothing queued.
    #[test]
    fn a_value_that_cannot_be_sent_writes_nothing() {
        use super::super::encode::INT2;
        let mut buf = bytes::BytesMut::from(&b"kept"[..]);
        let err = bind(&mut buf, "s", &[INT2], &[Param::Int(1 << 20)]).unwrap_err();
        assert!(err.to_string().contains("does not fit a smallint"), "{err}");
        assert_eq!(&buf[..], b"kept");
    }

    #[test]
    fn values_are_written_into_the_text_outside_quotes_and_identifiers() {
        let p = [Param::Int(5), Param::Text("o'k")];
        assert_eq!(
            inline("select $1, '$1', \"$2\", $2, $3, $12é, x$1", &p),
            "select 5, '$1', \"$2\", 'o''k', $3, $12é, x$1"
        );
    }
}
