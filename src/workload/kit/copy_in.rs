//! `COPY ... FROM STDIN` as every load that copies sends it (copy-mem,
//! copy-file, the YCSB, oltp, booking, TPC-C and pgbench loaders): one
//! function, so that starting, streaming and ending a COPY, and leaving
//! the connection usable when the data fails, are written once.
//!
//! The COPY goes as one simple-protocol Query: no named statement, so
//! nothing to prepare and nothing a pooler in transaction mode (PgBouncer)
//! could separate from the data that follows. (On YugabyteDB a COPY
//! outside a transaction block commits every
//! yb_default_copy_from_rows_per_transaction rows, 20000 by default; a
//! batch is one transaction either way up to that size.)

use bytes::Bytes;
use futures_util::StreamExt;

use crate::db::wire::WireConn;
use crate::error::{Error, Result};

/// Runs `sql` (a `COPY ... FROM STDIN`) and sends `chunks`; returns the
/// rows the server says it copied. A chunk that fails (a file that cannot
/// be read) ends the COPY on the server with that failure, so nothing of
/// it is committed and the connection stays usable.
pub async fn copy_in<S>(conn: &mut WireConn, sql: &str, chunks: S) -> Result<u64>
where
    S: futures_util::Stream<Item = Result<Bytes>>,
{
    let fail = |e| Error::wire("COPY FROM STDIN failed", e);
    conn.copy_start(sql).await.map_err(fail)?;
    futures_util::pin_mut!(chunks);
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(data) => conn.copy_send(&data).await.map_err(fail)?,
            Err(e) => {
                let _ = conn.copy_abort(&e.to_string()).await;
                return Err(e);
            }
        }
    }
    Ok(conn.copy_finish().await.map_err(fail)?.affected)
}

/// Runs `sql` (a `COPY ... FROM STDIN`) with `data` as its whole input.
pub async fn copy_all(conn: &mut WireConn, sql: &str, data: &[u8]) -> Result<u64> {
    let fail = |e| Error::wire("COPY FROM STDIN failed", e);
    conn.copy_start(sql).await.map_err(fail)?;
    conn.copy_send(data).await.map_err(fail)?;
    Ok(conn.copy_finish().await.map_err(fail)?.affected)
}
