//! What a connection's bytes travel over: TCP, or TLS over TCP (rustls, driven
//! sans-I/O here so the connection keeps its own reads, writes and timers).
//!
//! A [`Stream`] is a connection on a thread's reactor; a `Parked` one is off any
//! reactor, to move between threads (a thread model's waiting room and its threads,
//! an upgraded connection leaving a thread). Both carry the TLS session with them.
//!
//! The TLS handshake is not a step of its own: the first reads drive it, bounded by the
//! first request's header deadline like any slow head, so a client that never
//! finishes it holds its place no longer than one that never sends a request.

#[cfg(any(feature = "client", feature = "redis", feature = "tls"))]
mod provider;
#[cfg(feature = "tls")]
mod tls;
#[cfg(not(feature = "tls"))]
#[path = "no_tls.rs"]
mod tls;

#[cfg(any(feature = "client", feature = "redis", feature = "tls"))]
pub use self::provider::provider;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

pub(crate) use self::tls::ServerConfig;

/// The ALPN protocol of ACME's TLS-ALPN-01 challenge (RFC 8737): a connection that
/// agreed on it is a CA's check, answered by its handshake alone.
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Where decrypted bytes go: a connection's read buffer, or an `AsyncRead` caller's.
pub(crate) trait Plain {
    #[cfg_attr(
        not(feature = "tls"),
        expect(dead_code, reason = "only TLS sessions call it")
    )]
    fn put(&mut self, bytes: &[u8]);
}

impl Plain for BytesMut {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Plain for tokio::io::ReadBuf<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.put_slice(bytes);
    }
}

/// A socket's look at its first byte without taking it.
pub(crate) trait Peek {
    #[cfg_attr(
        not(feature = "tls"),
        expect(dead_code, reason = "only TLS sessions call it")
    )]
    fn peek(&self, buf: &mut [u8]) -> io::Result<usize>;
}

/// A connection's byte stream: plain TCP, or TLS over it.
///
/// Implements tokio's `AsyncRead` and `AsyncWrite`, which is all an upgraded
/// connection's protocol needs (see [`Upgraded`](crate::http::upgrade::Upgraded)).
#[derive(Debug)]
pub struct Stream {
    tcp: TcpStream,
    tls: Option<Box<tls::Session>>,
}

/// A connection off any reactor, with its TLS session if it has one.
#[derive(Debug)]
pub(crate) struct Parked {
    pub(crate) tcp: std::net::TcpStream,
    tls: Option<Box<tls::Session>>,
}

impl Parked {
    /// A connection just accepted: TLS begins on it when `tls` says so.
    pub(crate) fn accepted(tcp: std::net::TcpStream, tls: Option<&Arc<ServerConfig>>) -> Self {
        Self {
            tcp,
            tls: tls.and_then(tls::session),
        }
    }

    /// Puts the connection on this thread's reactor.
    pub(crate) fn resume(self) -> io::Result<Stream> {
        self.tcp.set_nonblocking(true)?;
        Ok(Stream {
            tcp: TcpStream::from_std(self.tcp)?,
            tls: self.tls,
        })
    }

    /// Reads what the (non-blocking) socket has now, its plaintext onto `read`.
    pub(crate) fn read_now(&mut self, read: &mut BytesMut, max: usize) -> io::Result<usize> {
        match &mut self.tls {
            None => {
                let mut chunk = [0u8; 4096];
                let n = io::Read::read(&mut &self.tcp, &mut chunk[..max.min(4096)])?;
                read.extend_from_slice(&chunk[..n]);
                Ok(n)
            }
            Some(tls) => tls::read(tls, &mut StdIo(&self.tcp), read, max),
        }
    }
}

impl Stream {
    /// Takes the connection off this thread's reactor, to move it.
    pub(crate) fn park(mut self) -> io::Result<Parked> {
        self.free_buffers();
        Ok(Parked {
            tcp: self.tcp.into_std()?,
            tls: self.tls,
        })
    }

    /// Whether TLS holds buffers allocated, which a connection going idle frees.
    pub(crate) fn holds_buffers(&self) -> bool {
        self.tls.as_ref().is_some_and(|tls| tls.held() > 0)
    }

    /// Frees what TLS holds and has no use for now: the encrypted-output buffer, once
    /// written (the others free themselves when emptied).
    pub(crate) fn free_buffers(&mut self) {
        if let Some(tls) = &mut self.tls {
            tls::trim(tls);
        }
    }

    /// The TCP socket under it (for socket options; never read or write it directly
    /// when it speaks TLS).
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// The client's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.peer_addr()
    }

    /// Whether the connection speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether its TLS handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        self.tls.as_ref().is_some_and(|tls| tls.is_handshaking())
    }

    /// The application protocol TLS agreed on (ALPN), if any.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.tls.as_ref()?.alpn()
    }

    /// Reads what the connection has, `max` bytes at most, onto `read`, once it has
    /// something (0: the client closed).
    pub(crate) fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        read: &mut BytesMut,
        max: usize,
    ) -> Poll<io::Result<usize>> {
        loop {
            let got = match &mut self.tls {
                None => {
                    ready!(self.tcp.poll_read_ready(cx))?;
                    // Room is taken once there are bytes (a no-op for a buffer that has
                    // it already): a connection waiting holds none.
                    read.reserve(max);
                    self.tcp.try_read_buf(&mut (&mut *read).limit(max))
                }
                Some(_) => return self.poll_read_tls(cx, read, max),
            };
            match got {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }

    /// [`poll_read_into`](Self::poll_read_into) over TLS, the plaintext put into `out`
    /// (a read buffer, or an `AsyncRead` caller's: no copy between them).
    fn poll_read_tls(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut dyn Plain,
        max: usize,
    ) -> Poll<io::Result<usize>> {
        let Some(tls) = &mut self.tls else {
            return Poll::Ready(Err(io::Error::other("not a TLS connection")));
        };
        loop {
            let got = tls::read(tls, &mut TokioIo(&self.tcp), out, max);
            // What the handshake answers (or the session tickets after it) may have
            // found the socket full: it goes once there is room, whether or not this
            // read waits (the client waits for it).
            if let Poll::Ready(Err(e)) = poll_flush_tls(&self.tcp, tls, cx) {
                return Poll::Ready(Err(e));
            }
            match got {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(self.tcp.poll_read_ready(cx))?;
                }
                done => return Poll::Ready(done),
            }
        }
    }

    /// Resolves once the connection has something to read: bytes from the client, or
    /// over TLS plaintext (or the client's close, or an error). Over TLS what the socket
    /// has is decrypted here: a socket readable with no plaintext behind it (a session
    /// ticket's acknowledgement, the rest of a record, or a readiness left from a read
    /// that took a request without draining the socket) is waited on again, rather than
    /// woken for, so that an idle connection waits holding no read buffer.
    pub(crate) fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(tls) = &mut self.tls else {
            return self.tcp.poll_read_ready(cx);
        };
        loop {
            if tls::has_plaintext(tls) {
                return Poll::Ready(Ok(()));
            }
            ready!(self.tcp.poll_read_ready(cx))?;
            match tls::pull(tls, &mut TokioIo(&self.tcp)) {
                Ok(true) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The client closed, its first bytes are to be looked at, or the session
                // failed: the read that follows says which.
                Ok(false) | Err(_) => return Poll::Ready(Ok(())),
            }
        }
    }

    /// Writes some of `bytes` (how many it took), once the socket has room.
    pub(crate) fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.tls {
            None => poll_io(&self.tcp, cx, Interest::WRITABLE, || {
                self.tcp.try_write(bytes)
            }),
            Some(tls) => {
                // What is encrypted is bounded: what the last send left goes first.
                ready!(poll_flush_tls(&self.tcp, tls, cx))?;
                let n = tls::send(tls, bytes)?;
                let _ = tls::flush(tls, &mut TokioIo(&self.tcp));
                Poll::Ready(Ok(n))
            }
        }
    }

    /// Writes what TLS holds encrypted; ready at once for plain TCP.
    pub(crate) fn poll_flush_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.tls {
            None => Poll::Ready(Ok(())),
            Some(tls) => poll_flush_tls(&self.tcp, tls, cx),
        }
    }

    /// Sends TLS's close_notify (if TLS) and half-closes the socket.
    pub(crate) fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(tls) = &mut self.tls {
            tls::close(tls);
            ready!(poll_flush_tls(&self.tcp, tls, cx))?;
        }
        Poll::Ready(socket2::SockRef::from(&self.tcp).shutdown(std::net::Shutdown::Write))
    }
}

/// Writes what `tls` holds encrypted, once the socket has room.
fn poll_flush_tls(
    tcp: &TcpStream,
    tls: &mut tls::Session,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    if !tls.wants_write() {
        return Poll::Ready(Ok(()));
    }
    poll_io(tcp, cx, Interest::WRITABLE, || {
        tls::flush(tls, &mut TokioIo(tcp))
    })
    .map_ok(|_| ())
}

/// Runs `io` (a `try_` call, which clears the readiness tokio cached when it would
/// block) once the socket is ready for `interest`.
pub(crate) fn poll_io<T>(
    tcp: &TcpStream,
    cx: &mut Context<'_>,
    interest: Interest,
    mut io: impl FnMut() -> io::Result<T>,
) -> Poll<io::Result<T>> {
    loop {
        if interest.is_writable() {
            ready!(tcp.poll_write_ready(cx))?;
        } else {
            ready!(tcp.poll_read_ready(cx))?;
        }
        match io() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            result => return Poll::Ready(result),
        }
    }
}

/// A tokio socket as `Read` and `Write`: `try_read` and `try_write`, which clear the
/// readiness tokio cached when they would block.
struct TokioIo<'a>(&'a TcpStream);

impl io::Read for TokioIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl io::Write for TokioIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Peek for TokioIo<'_> {
    fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_io(Interest::READABLE, || {
            nix::sys::socket::recv(
                std::os::fd::AsRawFd::as_raw_fd(self.0),
                buf,
                nix::sys::socket::MsgFlags::MSG_PEEK,
            )
            .map_err(io::Error::from)
        })
    }
}

/// A non-blocking std socket as `Read` and `Write`.
struct StdIo<'a>(&'a std::net::TcpStream);

impl io::Read for StdIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        io::Read::read(&mut &*self.0, buf)
    }
}

impl io::Write for StdIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::Write::write(&mut &*self.0, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Peek for StdIo<'_> {
    fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.peek(buf)
    }
}

impl From<TcpStream> for Stream {
    /// A plain TCP stream.
    fn from(tcp: TcpStream) -> Self {
        Self { tcp, tls: None }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.tls.is_none() {
            return Pin::new(&mut this.tcp).poll_read(cx, buf);
        }
        let max = buf.remaining();
        ready!(this.poll_read_tls(cx, buf, max))?;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_send(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush_out(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_close(cx)
    }
}
