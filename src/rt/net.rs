//! TCP and Unix-domain streams for the data plane: on a worker thread's
//! [`LocalLoop`](super::LocalLoop), mio sockets registered with it; off
//! one, tokio's. Both are tokio's `AsyncRead` and `AsyncWrite`, so
//! tokio-rustls and the wire driver take either.
//!
//! A read that returns less than it asked for marks the socket drained (a
//! write that takes less than it was given, full), as tokio does: under
//! edge-triggered readiness the next data (or room) brings a new event,
//! and the next read waits for it instead of costing a `recvfrom` that
//! finds nothing. The socket's end is never cleared (see `exec.rs`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::exec::{Core, on_loop, with_core};

/// A socket of the thread's loop.
struct Own<S: mio::event::Source> {
    io: S,
    idx: usize,
    loop_id: u64,
}

fn off_loop() -> io::Error {
    io::Error::other("a worker thread's socket was used on another thread")
}

impl<S: mio::event::Source> Own<S> {
    fn new(mut io: S) -> io::Result<Own<S>> {
        match with_core(|core| core.register(&mut io).map(|idx| (idx, core.id()))) {
            Some(Ok((idx, loop_id))) => Ok(Own { io, idx, loop_id }),
            Some(Err(e)) => Err(e),
            None => Err(off_loop()),
        }
    }

    /// Runs `f` with the loop, if this socket is one of its own.
    fn with<R>(&self, f: impl FnOnce(&Core) -> Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        with_core(|core| {
            if core.id() == self.loop_id {
                f(core)
            } else {
                Poll::Ready(Err(off_loop()))
            }
        })
        .unwrap_or_else(|| Poll::Ready(Err(off_loop())))
    }

    /// Waits for the socket to become writable (a connect's end): the
    /// readiness assumed at registration is dropped first.
    async fn connected(&self) -> io::Result<()> {
        let _ = with_core(|core| self.not_ready(core, false));
        std::future::poll_fn(|cx| self.poll_io(cx, false, |_| Ok(((), false)))).await
    }

    /// Whether the socket has seen its end (a close, a reset, an error).
    fn ended(&self) -> bool {
        with_core(
            |core| matches!(core.sources.borrow().get(self.idx), Some(Some(s)) if s.write_closed),
        )
        .unwrap_or(true)
    }

    fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        read: bool,
        mut op: impl FnMut(&S) -> io::Result<(R, bool)>,
    ) -> Poll<io::Result<R>> {
        self.with(|core| {
            if !core.has_budget() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            loop {
                {
                    let mut sources = core.sources.borrow_mut();
                    let Some(Some(s)) = sources.get_mut(self.idx) else {
                        return Poll::Ready(Err(off_loop()));
                    };
                    let (ready, waker) = if read {
                        (s.readable || s.read_closed, &mut s.read_waker)
                    } else {
                        (s.writable || s.write_closed, &mut s.write_waker)
                    };
                    if !ready {
                        match waker {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            _ => *waker = Some(cx.waker().clone()),
                        }
                        return Poll::Pending;
                    }
                }
                match op(&self.io) {
                    Ok((r, drained)) => {
                        core.spend();
                        if drained {
                            self.not_ready(core, read);
                        }
                        return Poll::Ready(Ok(r));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.not_ready(core, read),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        })
    }

    fn not_ready(&self, core: &Core, read: bool) {
        if let Some(Some(s)) = core.sources.borrow_mut().get_mut(self.idx) {
            if read {
                s.readable = false;
            } else {
                s.writable = false;
            }
        }
    }
}

impl<S: mio::event::Source> Drop for Own<S> {
    fn drop(&mut self) {
        let _ = with_core(|core| {
            if core.id() == self.loop_id {
                core.deregister(self.idx, &mut self.io);
            }
        });
    }
}

fn poll_read_own<S>(
    own: &Own<S>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>>
where
    S: mio::event::Source,
    for<'a> &'a S: Read,
{
    let read = own.poll_io(cx, true, |mut io| {
        let unfilled = buf.initialize_unfilled();
        let want = unfilled.len();
        io.read(unfilled).map(|n| (n, n < want))
    });
    read.map_ok(|n| buf.advance(n))
}

fn poll_write_own<S>(own: &Own<S>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>>
where
    S: mio::event::Source,
    for<'a> &'a S: Write,
{
    own.poll_io(cx, false, |mut io| {
        io.write(data).map(|n| (n, n < data.len()))
    })
}

/// tokio's `AsyncRead` and `AsyncWrite` for a stream that is either
/// tokio's or the loop's, the same for TCP and Unix-domain sockets.
macro_rules! stream_io {
    ($outer:ident, $inner:ident) => {
        impl AsyncRead for $outer {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                match &mut self.get_mut().0 {
                    $inner::Tokio(s) => Pin::new(s).poll_read(cx, buf),
                    $inner::Own(s) => poll_read_own(s, cx, buf),
                }
            }
        }

        impl AsyncWrite for $outer {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                data: &[u8],
            ) -> Poll<io::Result<usize>> {
                match &mut self.get_mut().0 {
                    $inner::Tokio(s) => Pin::new(s).poll_write(cx, data),
                    $inner::Own(s) => poll_write_own(s, cx, data),
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match &mut self.get_mut().0 {
                    $inner::Tokio(s) => Pin::new(s).poll_flush(cx),
                    $inner::Own(_) => Poll::Ready(Ok(())),
                }
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match &mut self.get_mut().0 {
                    $inner::Tokio(s) => Pin::new(s).poll_shutdown(cx),
                    $inner::Own(s) => Poll::Ready(s.io.shutdown(std::net::Shutdown::Write)),
                }
            }
        }
    };
}

/// A TCP stream of the data plane.
pub struct TcpStream(Tcp);

enum Tcp {
    Tokio(tokio::net::TcpStream),
    Own(Own<mio::net::TcpStream>),
}

impl TcpStream {
    /// Connects to `addr` (no timeout here: the caller bounds it).
    pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        if !on_loop() {
            return tokio::net::TcpStream::connect(addr)
                .await
                .map(|s| TcpStream(Tcp::Tokio(s)));
        }
        let own = Own::new(mio::net::TcpStream::connect(addr)?)?;
        loop {
            own.connected().await?;
            if let Some(e) = own.io.take_error()? {
                return Err(e);
            }
            match own.io.peer_addr() {
                Ok(_) => return Ok(TcpStream(Tcp::Own(own))),
                // Woken before the connect ended: wait again, unless the
                // socket has ended (its end is never cleared, and waiting
                // again would not wait).
                Err(e) if e.kind() == io::ErrorKind::NotConnected && !own.ended() => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match &self.0 {
            Tcp::Tokio(s) => s.set_nodelay(on),
            Tcp::Own(s) => s.io.set_nodelay(on),
        }
    }
}

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.0 {
            Tcp::Tokio(s) => s.as_fd(),
            Tcp::Own(s) => s.io.as_fd(),
        }
    }
}

stream_io!(TcpStream, Tcp);

/// A Unix-domain stream of the data plane.
pub struct UnixStream(Unix);

enum Unix {
    Tokio(tokio::net::UnixStream),
    Own(Own<mio::net::UnixStream>),
}

impl UnixStream {
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        if !on_loop() {
            return tokio::net::UnixStream::connect(path)
                .await
                .map(|s| UnixStream(Unix::Tokio(s)));
        }
        let own = Own::new(mio::net::UnixStream::connect(path)?)?;
        own.connected().await?;
        if let Some(e) = own.io.take_error()? {
            return Err(e);
        }
        Ok(UnixStream(Unix::Own(own)))
    }
}

stream_io!(UnixStream, Unix);
