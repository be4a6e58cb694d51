//! Cancelling the statement a connection is running, as psql's Ctrl-C does.
//!
//! The runner cancels a long unit (a procedure CALL, a server-side COPY)
//! when the run is stopped or `--time` is up. PostgreSQL's cancel protocol
//! is a 16-byte CancelRequest on a new connection, which the server closes
//! once it has handled it. libpq waits for that close before closing its
//! own side; tokio-postgres's `cancel_query` closes at once. A pooler in
//! between forwards the request on a server connection of its own, and
//! PgBouncer 1.18 (Debian 12's) exits with "disconnect_client(): bad client
//! state: 0" when the cancelling client is gone before that forwarded
//! request is done (PgBouncer issue 801, fixed in 1.19): one Ctrl-C of a
//! benchmark would take down the pooler of every other client. So the
//! request is sent here on a stream that then waits for the peer to close
//! ([`AwaitClose`]), as libpq does, bounded by the connect timeout.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::Host;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{CancelToken, Config, NoTls};

use super::tls::Tls;
use crate::error::{Error, Result};

/// Asks the server behind `config` to cancel what `token`'s connection is
/// running, and waits until the server has closed the cancel connection.
/// `config` names the host the connection went to; with several hosts
/// (libpq failover) the one in use is not known here, and tokio-postgres's
/// own cancel, which knows it, is used.
pub async fn cancel(
    config: &Config,
    tls: &Tls,
    token: &CancelToken,
    limit: Duration,
) -> Result<()> {
    let stock = || async {
        match tls {
            Tls::Plain => token.cancel_query(NoTls).await.map_err(pg),
            Tls::Rustls { connect, .. } => token.cancel_query(connect.clone()).await.map_err(pg),
        }
    };
    let send = async {
        match single_host(config) {
            Some(Target::Tcp {
                connect,
                name,
                port,
            }) => match one_server(&connect, port).await {
                Some(addr) => send_tcp(addr, name, tls, token).await,
                // A name for several servers (round-robin DNS): only
                // tokio-postgres knows which address the connection took.
                None => stock().await,
            },
            Some(Target::Unix { dir, port }) => send_unix(dir, port, token).await,
            None => stock().await,
        }
    };
    match tokio::time::timeout(limit, send).await {
        Ok(r) => r.map_err(|e| Error::run(format!("cannot cancel the statement in flight: {e}"))),
        Err(_) => Err(Error::run(format!(
            "cannot cancel the statement in flight: no answer within {} s",
            limit.as_secs_f64()
        ))),
    }
}

fn pg(e: tokio_postgres::Error) -> io::Error {
    io::Error::other(e)
}

/// Where a one-host configuration connects.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    /// TCP: the address to connect to (hostaddr, else the host name) and
    /// the name TLS verifies.
    Tcp {
        connect: String,
        name: &'a str,
        port: u16,
    },
    /// A Unix-domain socket directory.
    Unix { dir: &'a Path, port: u16 },
}

fn single_host(config: &Config) -> Option<Target<'_>> {
    let hosts = config.get_hosts();
    let addrs = config.get_hostaddrs();
    if hosts.len() > 1 || addrs.len() > 1 || config.get_ports().len() > 1 {
        return None;
    }
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match (hosts.first(), addrs.first()) {
        (Some(Host::Unix(dir)), _) => Some(Target::Unix { dir, port }),
        (Some(Host::Tcp(name)), addr) => Some(Target::Tcp {
            connect: addr.map_or_else(|| name.clone(), |a| a.to_string()),
            name,
            port,
        }),
        (None, Some(addr)) => Some(Target::Tcp {
            connect: addr.to_string(),
            name: "",
            port,
        }),
        (None, None) => None,
    }
}

/// The address to send a cancel to when `host` means one server: an IP
/// address, or a name whose addresses are one, or all on this machine
/// (`localhost`: 127.0.0.1 and ::1 reach the same server). None otherwise.
async fn one_server(host: &str, port: u16) -> Option<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, port));
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await.ok()?.collect();
    let first = *addrs.first()?;
    (addrs.len() == 1 || addrs.iter().all(|a| a.ip().is_loopback())).then_some(first)
}

/// A cancel over a Unix-domain socket (never TLS).
async fn send_unix(dir: &Path, port: u16, token: &CancelToken) -> io::Result<()> {
    let s = UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).await?;
    token
        .cancel_query_raw(AwaitClose::new(s), NoTls)
        .await
        .map_err(pg)
}

/// A cancel over TCP to `addr`, with the run's TLS (verifying `name`).
async fn send_tcp(addr: SocketAddr, name: &str, tls: &Tls, token: &CancelToken) -> io::Result<()> {
    let s = AwaitClose::new(TcpStream::connect(addr).await?);
    match tls {
        Tls::Plain => token.cancel_query_raw(s, NoTls).await.map_err(pg),
        Tls::Rustls { connect, .. } => {
            let connector = MakeTlsConnect::<AwaitClose<TcpStream>>::make_tls_connect(
                &mut connect.clone(),
                name,
            )
            .map_err(io::Error::other)?;
            token.cancel_query_raw(s, connector).await.map_err(pg)
        }
    }
}

/// A stream whose shutdown does not close the write side but waits for
/// the peer to close: the cancel request is done only when the server (or
/// the pooler) says so by closing. (A half-close right after the request,
/// as a plain shutdown does, makes PgBouncer 1.18 drop the request
/// unread.) The socket itself closes when the stream is dropped.
pub struct AwaitClose<S> {
    inner: S,
}

impl<S> AwaitClose<S> {
    pub fn new(inner: S) -> Self {
        AwaitClose { inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for AwaitClose<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for AwaitClose<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
        let mut scratch = [0u8; 64];
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match ready!(Pin::new(&mut self.inner).poll_read(cx, &mut buf)) {
                Ok(()) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Ok(()) => continue,
                // The peer closed hard: closed all the same.
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Poll::Ready(Ok(()));
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_is_cancelled_directly_a_host_list_by_tokio_postgres() {
        let c: Config = "host=db1 port=5433".parse().unwrap();
        assert_eq!(
            single_host(&c),
            Some(Target::Tcp {
                connect: "db1".into(),
                name: "db1",
                port: 5433
            })
        );
        let c: Config = "host=db1 hostaddr=10.1.2.3".parse().unwrap();
        assert_eq!(
            single_host(&c),
            Some(Target::Tcp {
                connect: "10.1.2.3".into(),
                name: "db1",
                port: 5432
            })
        );
        let c: Config = "host=/var/run/postgresql port=5439".parse().unwrap();
        assert_eq!(
            single_host(&c),
            Some(Target::Unix {
                dir: Path::new("/var/run/postgresql"),
                port: 5439
            })
        );
        let c: Config = "host=a,b port=5433".parse().unwrap();
        assert_eq!(single_host(&c), None);
    }

    #[tokio::test]
    async fn one_server_means_an_address_or_a_name_for_this_machine() {
        let a = one_server("127.0.0.1", 5433).await.unwrap();
        assert_eq!(a, "127.0.0.1:5433".parse().unwrap());
        let a = one_server("localhost", 5433).await.unwrap();
        assert!(a.ip().is_loopback() && a.port() == 5433, "{a}");
        assert_eq!(one_server("no-such-host.invalid", 5433).await, None);
    }

    /// Shutdown returns only once the peer has closed, and does not close
    /// the write side before that.
    #[tokio::test]
    async fn shutdown_waits_for_the_peer_to_close() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (closing_tx, mut closing_rx) = tokio::sync::oneshot::channel::<()>();
        let peer = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = [0u8; 6];
            s.read_exact(&mut got).await.unwrap();
            // No end of stream from the client while it waits.
            let mut more = [0u8; 1];
            let early = tokio::time::timeout(Duration::from_millis(200), s.read(&mut more)).await;
            let _ = closing_tx.send(());
            drop(s);
            (got, early.is_err())
        });
        let mut s = AwaitClose::new(TcpStream::connect(addr).await.unwrap());
        s.write_all(b"cancel").await.unwrap();
        s.shutdown().await.unwrap();
        // Had shutdown returned before the peer closed, the peer would not
        // have said it was closing yet.
        assert!(closing_rx.try_recv().is_ok());
        let (got, still_open) = peer.await.unwrap();
        assert_eq!(&got, b"cancel");
        assert!(still_open, "the client closed its side before the peer");
    }
}
