//! The listener: one task on the run's tokio runtime that accepts
//! scrapes, reads each request's head, answers with the rendered board and
//! closes the connection. Each connection is its own task, bounded in
//! time and in what it reads, so a stuck or hostile client cannot hold
//! the listener or grow memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use super::render;
use crate::error::{Error, Result};
use crate::stats::live::Live;

/// The longest a request head may be; a scrape's is a few hundred bytes.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request and read the answer.
const CONN_TIMEOUT: Duration = Duration::from_secs(10);

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What the listener and the run share.
struct Shared {
    registry: Registry,
    live: Live,
    /// Scrapes answered once the run had ended (its final figures).
    final_scrapes: AtomicU64,
    scraped: Notify,
}

/// The live metrics' endpoint of a run.
pub struct Exporter {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Exporter {
    /// Binds `addr` (HOST:PORT, names resolved) and starts serving `live`.
    /// An address that cannot be bound (a port in use, an address not of
    /// this machine, a name that does not resolve) is a usage error: the
    /// run has not connected to anything yet.
    pub async fn bind(addr: &str, live: Live) -> Result<Exporter> {
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            Error::usage(format!(
                "--metrics-addr {addr}: cannot listen there: {e} (is the port in use, or the address not this machine's? give another HOST:PORT)"
            ))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::usage(format!("--metrics-addr {addr}: {e}")))?;
        let shared = Arc::new(Shared {
            registry: render::registry(live.clone()),
            live,
            final_scrapes: AtomicU64::new(0),
            scraped: Notify::new(),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Exporter { addr, shared, task })
    }

    /// The address bound (the port chosen, for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// After the run, its reports written: marks the figures final and
    /// serves until one scrape has read them, at most `most`, or until
    /// `stop` (Ctrl-C) is set. True when a scrape read the final figures.
    pub async fn linger(&self, most: Duration, stop: &AtomicBool) -> bool {
        let before = self.shared.final_scrapes.load(Ordering::Relaxed);
        self.shared.live.end_run();
        let deadline = tokio::time::Instant::now() + most;
        loop {
            if self.shared.final_scrapes.load(Ordering::Relaxed) > before {
                return true;
            }
            if stop.load(Ordering::Relaxed) || tokio::time::Instant::now() >= deadline {
                return false;
            }
            // The stop flag is looked at every 100 ms: a signal sets it
            // and wakes nothing.
            let tick = tokio::time::Instant::now() + Duration::from_millis(100);
            tokio::select! {
                _ = self.shared.scraped.notified() => {}
                _ = tokio::time::sleep_until(tick.min(deadline)) => {}
            }
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CONN_TIMEOUT, answer(stream, &shared)).await;
                });
            }
            // Out of file descriptors and the like: wait, then go on.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics,
    NotFound,
    Bad,
}

/// The request line of a head: GET (or HEAD) of `/metrics` or `/`.
fn asked(head: &[u8]) -> Asked {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Asked::Bad;
    };
    if method != "GET" && method != "HEAD" {
        return Asked::Bad;
    }
    let path = target.split('?').next().unwrap_or_default();
    match path {
        "/metrics" | "/" => Asked::Metrics,
        _ => Asked::NotFound,
    }
}

/// Reads the request head (up to an empty line), answers, closes.
async fn answer(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            )
            .await;
        }
    }
    let is_head = head.starts_with(b"HEAD ");
    match asked(&head) {
        Asked::Metrics => {
            let ended = shared.live.read(|b| b.ended);
            let body = render::text(&shared.registry);
            let body = if is_head { &[][..] } else { body.as_bytes() };
            respond(&mut stream, "200 OK", CONTENT_TYPE, body).await?;
            if ended {
                shared.final_scrapes.fetch_add(1, Ordering::Relaxed);
                shared.scraped.notify_waiters();
            }
            Ok(())
        }
        Asked::NotFound => {
            respond(
                &mut stream,
                "404 Not Found",
                "text/plain",
                b"the metrics are at /metrics\n",
            )
            .await
        }
        Asked::Bad => respond(&mut stream, "400 Bad Request", "text/plain", b"").await,
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_of_the_metrics_path_is_answered_with_metrics() {
        assert_eq!(
            asked(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Asked::Metrics
        );
        assert_eq!(asked(b"GET /metrics?x=1 HTTP/1.1\r\n\r\n"), Asked::Metrics);
        assert_eq!(asked(b"HEAD / HTTP/1.0\r\n\r\n"), Asked::Metrics);
        assert_eq!(asked(b"GET /other HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(asked(b"POST /metrics HTTP/1.1\r\n\r\n"), Asked::Bad);
        assert_eq!(asked(b"\xff\xfe\r\n\r\n"), Asked::Bad);
    }

    #[tokio::test]
    async fn a_port_in_use_is_refused_and_a_scrape_ends_the_linger() {
        let live = Live::default();
        let a = Exporter::bind("127.0.0.1:0", live.clone()).await.unwrap();
        let port = a.local_addr().port();
        let e = Exporter::bind(&format!("127.0.0.1:{port}"), live)
            .await
            .err()
            .unwrap();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("--metrics-addr"), "{e}");
        let scrape = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut got = String::new();
            s.read_to_string(&mut got).await.unwrap();
            got
        });
        assert!(
            a.linger(Duration::from_secs(20), &AtomicBool::new(false))
                .await
        );
        let got = scrape.await.unwrap();
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(
            got.contains("ysql_bench_run_ended{run_id=\"\",client=\"0\"} 1.0"),
            "{got}"
        );
        assert!(got.ends_with("# EOF\n"));
    }
}
