//! `COPY ... FROM STDIN` as every load that copies sends it (copy-mem,
//! copy-file, the YCSB, oltp, booking, TPC-C and pgbench loaders): one
//! function, so that the way through a pooler in transaction mode is
//! written once.

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio_postgres::{Client, Statement};

use crate::error::{Error, PREPARED_STATEMENT_TAKEN, Result};

/// Runs `COPY ... FROM STDIN` with the prepared `statement`, or else with
/// `sql` inside BEGIN/COMMIT, and sends `chunks`; returns the rows copied.
///
/// tokio-postgres always parses COPY as a named statement and binds it in
/// a second round trip (it has no unnamed COPY). Through a pooler in
/// transaction mode (PgBouncer) the two may land on different server
/// connections, where the statement does not exist, and a name left on a
/// server connection collides with the next client's; the explicit
/// transaction keeps parse, copy and close on one, and the statement is
/// closed before the transaction ends (see [`crate::db::unnamed`]), so it
/// leaves nothing behind. Names that other clients left there (a run
/// without --no-prepared through the same pooler) are skipped, see
/// [`begin_and_parse`]. Used by every load that copies. (On YugabyteDB a
/// COPY outside a transaction block commits every
/// yb_default_copy_from_rows_per_transaction rows, 20000 by default; a
/// batch is one transaction either way up to that size.)
pub async fn copy_in<S>(
    client: &Client,
    statement: Option<&Statement>,
    sql: &str,
    chunks: S,
) -> Result<u64>
where
    S: futures_util::Stream<Item = Result<Bytes>>,
{
    let fail = |e| Error::db("COPY FROM STDIN failed", e);
    if let Some(statement) = statement {
        return send_copy(client, statement, chunks).await;
    }
    let own = begin_and_parse(client, sql).await?;
    let copied = send_copy(client, &own, chunks).await;
    // Its Close goes out now, ahead of the COMMIT or ROLLBACK.
    drop(own);
    let done = match copied {
        Ok(rows) => client
            .batch_execute("commit")
            .await
            .map(|_| rows)
            .map_err(fail),
        Err(e) => Err(e),
    };
    if done.is_err() && !client.is_closed() {
        // Leave the connection usable (a retry, the next unit): out of the
        // failed transaction.
        let _ = client.batch_execute("rollback").await;
    }
    done
}

/// How many taken names [`begin_and_parse`] skips before it gives up.
const TAKEN_NAMES_SKIPPED: usize = 1000;

/// Opens a transaction and parses `sql` in it as a named statement.
///
/// Under a pooler in transaction mode a server connection may hold names
/// that other clients left (tokio-postgres numbers them s0, s1, … in every
/// process): a Parse of one of them fails with 42P05. Nobody can use such
/// a leftover (its maker's next transaction lands anywhere), so the name
/// is skipped: the transaction is rolled back and the next name tried
/// (each Parse takes a number higher), at most [`TAKEN_NAMES_SKIPPED`]
/// times in one call.
async fn begin_and_parse(client: &Client, sql: &str) -> Result<Statement> {
    let fail = |e| Error::db("COPY FROM STDIN failed", e);
    let mut skipped = 0;
    loop {
        client.batch_execute("begin").await.map_err(fail)?;
        let e = match client.prepare(sql).await {
            Ok(statement) => return Ok(statement),
            Err(e) => e,
        };
        if !client.is_closed() {
            let _ = client.batch_execute("rollback").await;
        }
        let taken = e.code().map(|c| c.code()) == Some(PREPARED_STATEMENT_TAKEN);
        if !taken || skipped == TAKEN_NAMES_SKIPPED {
            return Err(fail(e));
        }
        skipped += 1;
    }
}

async fn send_copy<S>(client: &Client, statement: &Statement, chunks: S) -> Result<u64>
where
    S: futures_util::Stream<Item = Result<Bytes>>,
{
    let fail = |e| Error::db("COPY FROM STDIN failed", e);
    let sink = client.copy_in(statement).await.map_err(fail)?;
    futures_util::pin_mut!(sink, chunks);
    while let Some(chunk) = chunks.next().await {
        sink.send(chunk?).await.map_err(fail)?;
    }
    sink.as_mut().finish().await.map_err(fail)
}
