//! Units in flight (`--pipeline`): each unit queued as its own
//! Bind/Execute, several written at once, their answers read in the order
//! they were queued.
//!
//! The caller ends a group of units with a Sync (`--pipeline-sync`). A
//! Sync per unit makes a failed one cost the server nothing but that
//! unit's messages: the others run and answer as if alone, and the unit's
//! answer is everything up to the Sync's ReadyForQuery. Several units
//! before one Sync are one implicit transaction, as in pgbench's
//! `\startpipeline` … `\endpipeline`: each unit's answer ends with its
//! CommandComplete, the last one's with the ReadyForQuery, and after an
//! error the server skips the group's remaining units, so the failed
//! unit's answer reads on to the ReadyForQuery and the caller ends the
//! skipped ones without reading ([`WireConn::answer`]'s `through_sync`).
//!
//! The worker waits for an answer and for the next unit's due time at
//! once (`--rate`), dropping the wait for the answer when the due time
//! comes first. So reading an answer must lose nothing when its future is
//! dropped: the only await is one `read` into the read buffer (which keeps
//! what it got), and what was parsed of the answer so far lives in the
//! connection ([`Partial`]), not in the future. A dropped wait resumes
//! where it stopped.
//!
//! A unit that fails with an error its retry policy names is queued again
//! as it was: [`WireConn::queued_since`] copies its messages after they
//! were queued, [`WireConn::queue_again`] puts them back, on the same
//! connection only (the statements' names are the connection's).

use super::decode::tag_rows;
use super::query::server_error;
use super::{Answer, DbError, WireConn, WireError};

/// What was read so far of the oldest unit's answer.
#[derive(Debug, Default)]
pub(super) struct Partial {
    answer: Answer,
    failed: Option<DbError>,
}

impl WireConn {
    /// How many bytes are queued and not yet written: a mark for
    /// [`Self::queued_since`].
    pub fn queued_len(&self) -> usize {
        self.wbuf.len()
    }

    /// The messages queued since `mark` ([`Self::queued_len`]), to queue
    /// them again with [`Self::queue_again`] on this connection.
    pub fn queued_since(&self, mark: usize) -> &[u8] {
        self.wbuf.get(mark..).unwrap_or(&[])
    }

    /// Queues again messages that [`Self::queued_since`] gave on this
    /// connection (a unit tried again).
    pub fn queue_again(&mut self, messages: &[u8]) -> Result<(), WireError> {
        self.usable()?;
        self.wbuf.extend_from_slice(messages);
        Ok(())
    }

    /// Reads the answer of the oldest unit in flight (one Bind/Execute):
    /// the rows it returned and its count, or the server's error. With
    /// `through_sync` (a Sync follows the unit) it reads on to the Sync's
    /// ReadyForQuery; without, it ends at the unit's CommandComplete, and
    /// reads on only after an error, since the server then skips the rest
    /// of the group. Cancel-safe: see the module's doc.
    pub async fn answer(&mut self, through_sync: bool) -> Result<Answer, WireError> {
        loop {
            if let Some(answer) = self.buffered_answer(through_sync) {
                return answer;
            }
            if let Err(e) = self.fill().await {
                // An error and then the end of the connection (a server
                // shutting down): the server's error says why.
                let part = std::mem::take(&mut self.part);
                return Err(part.failed.map_or(e, |db| WireError::Db(Box::new(db))));
            }
        }
    }

    /// The oldest unit's answer if what was read holds the rest of it;
    /// reads nothing from the socket. Several answers that came in one
    /// read are taken this way, without a syscall each. `through_sync` as
    /// in [`Self::answer`].
    pub fn buffered_answer(&mut self, through_sync: bool) -> Option<Result<Answer, WireError>> {
        if self.broken {
            let part = std::mem::take(&mut self.part);
            let e = part
                .failed
                .map_or(WireError::Closed(None), |db| WireError::Db(Box::new(db)));
            return Some(Err(e));
        }
        loop {
            let (tag, b0, b1) = match self.rbuf.next() {
                Ok(Some(m)) => m,
                Ok(None) => return None,
                // Bytes that are no message: the stream is out of step.
                Err(e) => {
                    self.broken = true;
                    return Some(Err(e));
                }
            };
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'D' => self.part.answer.rows += 1,
                b'C' => {
                    self.part.answer.affected = tag_rows(body);
                    if !through_sync && self.part.failed.is_none() {
                        return Some(Ok(std::mem::take(&mut self.part).answer));
                    }
                }
                // EmptyQuery and PortalSuspended end a unit as its
                // CommandComplete would.
                b'I' | b's' if !through_sync && self.part.failed.is_none() => {
                    return Some(Ok(std::mem::take(&mut self.part).answer));
                }
                b'E' => match server_error(&mut self.broken, body) {
                    Ok(e) => {
                        self.part.failed.get_or_insert(e);
                    }
                    Err(e) => {
                        self.broken = true;
                        return Some(Err(e));
                    }
                },
                b'Z' => {
                    self.status = body.first().copied().unwrap_or(b'I');
                    let part = std::mem::take(&mut self.part);
                    return Some(match part.failed {
                        Some(db) => Err(WireError::Db(Box::new(db))),
                        None => Ok(part.answer),
                    });
                }
                // ParseComplete (an unnamed statement), BindComplete,
                // RowDescription, NoData, EmptyQuery, PortalSuspended,
                // notices, parameter changes, notifications.
                b'1' | b'2' | b'T' | b'n' | b'I' | b's' | b'N' | b'S' | b'A' => {}
                other => {
                    return Some(Err(
                        self.unexpected(other, "waiting for a pipelined unit's answer")
                    ));
                }
            }
        }
    }

    /// One read from the socket into the read buffer (which keeps what it
    /// got if the future is dropped).
    async fn fill(&mut self) -> Result<(), WireError> {
        self.rbuf.make_room();
        let end = self.rbuf.end;
        match self.stream.read(&mut self.rbuf.buf[end..]).await {
            Ok(0) => Err(self.lost(None)),
            Ok(n) => {
                self.rbuf.read(n);
                Ok(())
            }
            Err(e) => Err(self.lost(Some(e))),
        }
    }
}
