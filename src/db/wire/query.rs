//! Running statements on a lean connection: the simple query protocol,
//! prepared statements, and reading their answers.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use postgres_protocol::message::frontend;

use super::decode::{Body, parse_error, tag_rows, unexpected};
use super::encode::{encode_param, type_supported};
use super::{Answer, DbError, Param, Prepared, WireConn, WireError, encode_err};

/// The number in the next prepared statement's name.
static NEXT_STATEMENT: AtomicU64 = AtomicU64::new(0);

impl WireConn {
    /// Writes the write buffer out and empties it.
    pub(super) async fn flush(&mut self) -> Result<(), WireError> {
        self.unanswered = true;
        let r = self.stream.write_all(&self.wbuf).await;
        self.wbuf.clear();
        r.map_err(|e| self.lost(Some(e)))
    }

    pub(super) fn lost(&mut self, e: Option<io::Error>) -> WireError {
        self.broken = true;
        WireError::Closed(e)
    }

    /// The next whole message: its tag and where its body lies in the
    /// read buffer (valid until the next call). Bytes that are not a
    /// message the server may send are [`WireError::Protocol`], and the
    /// connection is then out of step (see `unanswered`).
    pub(super) async fn next_message(&mut self) -> Result<(u8, usize, usize), WireError> {
        loop {
            if let Some(m) = self.rbuf.next()? {
                self.unanswered &= m.0 != b'Z';
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
    pub(super) async fn answer(&mut self) -> Result<Answer, WireError> {
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
                // BindComplete, ParseComplete, CloseComplete, NoData,
                // EmptyQuery, RowDescription, ParameterDescription,
                // PortalSuspended, notices, parameter changes,
                // notifications.
                b'1' | b'2' | b'3' | b'n' | b'I' | b'T' | b't' | b's' | b'N' | b'S' | b'A' => {}
                // COPY, authentication, a key: the driver would wait for a
                // ReadyForQuery that does not come (a COPY waits for data).
                other => return Err(unexpected(other, "in the answer to a query")),
            }
        }
    }

    /// Runs `sql` with the simple query protocol (session settings).
    pub async fn simple_query(&mut self, sql: &str) -> Result<Answer, WireError> {
        self.usable()?;
        frontend::query(sql, &mut self.wbuf).map_err(|e| self.unwritten(e))?;
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
        frontend::parse(&name, sql, std::iter::empty(), &mut self.wbuf)
            .map_err(|e| self.unwritten(e))?;
        frontend::describe(b'S', &name, &mut self.wbuf).map_err(|e| self.unwritten(e))?;
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
                // ParseComplete, NoData, RowDescription, notices,
                // parameter changes, notifications.
                b'1' | b'n' | b'T' | b'N' | b'S' | b'A' => {}
                other => return Err(unexpected(other, "in the answer to a Parse")),
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
}
