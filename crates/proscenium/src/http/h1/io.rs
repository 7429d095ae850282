//! A connection's socket I/O: reads into the read buffer, writes with one `send(2)`
//! per batch of answers, `sendfile(2)` for file regions, the lingering close — each
//! wait bounded by the connection's one timer.
//!
//! Every wait is a `poll_fn`, not an `async fn`, so that its state is not stored twice
//! in the connection's task; the timer is set only once the socket has to wait (most
//! reads and writes complete at once).

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::time::{Instant, Sleep};

use crate::http::body::FileRegion;
use crate::rt::pace::Pace;
use crate::transport::{Stream, poll_io};

/// Bytes of a file read at once to be sent over TLS (encrypted in user space, so not
/// by sendfile): four TLS records.
const FILE_CHUNK: usize = 64 * 1024;

/// How long a closing connection keeps reading (and discarding) what the client sends.
const LINGER: Duration = Duration::from_secs(2);

/// A connection's socket, the one timer of every wait on it (idle, head, body, send),
/// set anew for each, and the bounds on a write.
pub(super) struct Socket {
    pub(super) stream: Stream,
    pub(super) timer: Pin<Box<Sleep>>,
    /// How long a write may make no progress (`timeouts.body`).
    stall: Duration,
    /// The pace a write must keep.
    pace: Pace,
}

impl Socket {
    pub(super) fn new(stream: Stream, stall: Duration, pace: Pace) -> Self {
        Self {
            stream,
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            stall,
            pace,
        }
    }

    /// Reads what the socket has, `max` bytes at most, into `rbuf`: the bytes read (0
    /// when the client closed), or `None` when `deadline` passed first.
    pub(super) fn read<'a>(
        &'a mut self,
        rbuf: &'a mut BytesMut,
        max: usize,
        deadline: Instant,
    ) -> impl Future<Output = Option<std::io::Result<usize>>> + 'a {
        let stream = &mut self.stream;
        until(&mut self.timer, deadline, move |cx| {
            stream.poll_read_into(cx, rbuf, max)
        })
    }

    /// Marks the socket not readable after a short read, which drained it.
    ///
    /// Without this the next read is a `recv` that fails with EAGAIN before the loop
    /// waits for epoll: one wasted syscall per request. Safe because epoll is
    /// edge-triggered and tokio ignores a clear older than the last readiness event, so
    /// bytes that arrive meanwhile still wake the connection. Measured on `hello`
    /// plaintext, 64 keep-alive connections, one loop: see docs/performance.md.
    /// (Not over TLS: a short read there may have left decrypted bytes behind.)
    pub(super) fn forget_readable(&self) {
        if self.stream.is_tls() {
            return;
        }
        let _ = self.stream.tcp().try_io(Interest::READABLE, || {
            Err::<(), _>(std::io::Error::from(std::io::ErrorKind::WouldBlock))
        });
    }

    /// Resolves when the client hangs up — its end of stream, or a reset — while the
    /// connection waits for something else: a handler, a streamed body's next chunk.
    /// Bytes the client sent meanwhile (a pipelined request) are left unread, and the
    /// wait then never resolves: the client still wants its answers.
    ///
    /// An end of stream may also be a client that only shut down its writing side,
    /// which HTTP/1.1 clients do not do before their answer (nginx and Go's server take
    /// it for a client gone, too).
    pub(super) fn hung_up(&self) -> impl Future<Output = ()> + '_ {
        let mut pipelined = false;
        poll_fn(move |cx| {
            if pipelined {
                return Poll::Pending;
            }
            let mut byte = [0u8; 1];
            let mut peeked = tokio::io::ReadBuf::new(&mut byte);
            match ready!(self.stream.tcp().poll_peek(cx, &mut peeked)) {
                Ok(0) | Err(_) => Poll::Ready(()),
                Ok(_) => {
                    pipelined = true;
                    Poll::Pending
                }
            }
        })
    }

    /// Writes all of `bytes` (and, over TLS, all the session holds encrypted),
    /// failing when the client takes nothing for the stall timeout or falls behind the
    /// pace: a slow reader may take as long as it keeps the pace, a stalled one is
    /// dropped. Uses `send(2)` (`try_write`), not the vectored path (writev(2) through
    /// the VFS layer) for what is always one buffer.
    pub(super) fn send<'a>(
        &'a mut self,
        mut bytes: &'a [u8],
    ) -> impl Future<Output = std::io::Result<()>> + 'a {
        let Self {
            stream,
            timer,
            stall,
            pace,
        } = self;
        let mut waiting = false;
        // The pace counts from the write's first wait, and the bytes sent after it
        // (what the kernel took at once costs it nothing); the clock is read only then,
        // and most writes never wait.
        let mut since = None;
        let mut sent = 0u64;
        poll_fn(move |cx| {
            loop {
                let wrote = if bytes.is_empty() {
                    match stream.poll_flush_out(cx) {
                        Poll::Ready(Ok(())) => return Poll::Ready(Ok(())),
                        other => other.map_ok(|()| 0),
                    }
                } else {
                    stream.poll_send(cx, bytes)
                };
                match wrote {
                    Poll::Ready(Ok(0)) if !bytes.is_empty() => {
                        return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                    }
                    Poll::Ready(Ok(n)) => {
                        bytes = &bytes[n..];
                        sent += n as u64;
                        waiting = false;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {
                        if !waiting {
                            waiting = true;
                            let now = Instant::now();
                            let (began, before) = *since.get_or_insert((now, sent));
                            timer
                                .as_mut()
                                .reset(pace.bound(now + *stall, began, sent - before));
                        }
                        if timer.as_mut().poll(cx).is_ready() {
                            return Poll::Ready(Err(stalled()));
                        }
                        return Poll::Pending;
                    }
                }
            }
        })
    }

    /// Sets `TCP_CORK`: while set, the kernel sends only full segments.
    pub(super) fn set_cork(&self, cork: bool) -> std::io::Result<()> {
        socket2::SockRef::from(self.stream.tcp()).set_tcp_cork(cork)
    }

    /// Sends a file region with sendfile(2): the kernel copies page cache to socket.
    /// Bounded as [`send`](Self::send), the pace counting from the start.
    /// Over TLS the file is read and sent through the session a chunk at a time.
    pub(super) async fn send_file(&mut self, region: FileRegion) -> std::io::Result<()> {
        if self.stream.is_tls() {
            return self.send_file_encrypted(region).await;
        }
        let began = Instant::now();
        let start = i64::try_from(region.offset).map_err(std::io::Error::other)?;
        let mut offset = start;
        let end = offset.saturating_add(i64::try_from(region.len).map_err(std::io::Error::other)?);
        let stream = self.stream.tcp();
        while offset < end {
            let count = usize::try_from(end - offset)
                .unwrap_or(usize::MAX)
                .min(1 << 30);
            let moved = u64::try_from(offset - start).unwrap_or(0);
            let deadline = self.pace.bound(Instant::now() + self.stall, began, moved);
            let sendfile = |cx: &mut Context<'_>| {
                poll_io(stream, cx, Interest::WRITABLE, || {
                    stream.try_io(Interest::WRITABLE, || {
                        nix::sys::sendfile::sendfile64(
                            stream,
                            &region.file,
                            Some(&mut offset),
                            count,
                        )
                        .map_err(std::io::Error::from)
                    })
                })
            };
            let sent = until(&mut self.timer, deadline, sendfile)
                .await
                .ok_or_else(stalled)??;
            if sent == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "file shrank while sent",
                ));
            }
        }
        Ok(())
    }

    /// Sends a file region through TLS: read with pread(2) a chunk at a time, each
    /// chunk bounded as [`send`](Self::send).
    async fn send_file_encrypted(&mut self, region: FileRegion) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut chunk =
            vec![0u8; FILE_CHUNK.min(usize::try_from(region.len).unwrap_or(FILE_CHUNK))];
        let mut offset = region.offset;
        let end = region.offset.saturating_add(region.len);
        while offset < end {
            let want = usize::try_from(end - offset)
                .unwrap_or(usize::MAX)
                .min(chunk.len());
            let n = region.file.read_at(&mut chunk[..want], offset)?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "file shrank while sent",
                ));
            }
            self.send(&chunk[..n]).await?;
            offset += n as u64;
        }
        Ok(())
    }

    /// Half-closes, and reads until the client closes too (or a while passes), so that
    /// unread request bytes do not turn the close into a reset that destroys the answer
    /// before the client reads it.
    pub(super) async fn linger(&mut self) -> std::io::Result<()> {
        self.stream.shutdown().await?;
        let linger = async {
            let mut discard = [0u8; 4096];
            let mut left = 1usize << 20;
            while left > 0 {
                match self.stream.read(&mut discard).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left = left.saturating_sub(n),
                }
            }
        };
        let _ = tokio::time::timeout(LINGER, linger).await;
        Ok(())
    }
}

/// Polls `io` until it is ready (`Some`), or until `deadline` passes on `timer`
/// (`None`). The timer is set only once `io` has to wait.
fn until<'a, T>(
    timer: &'a mut Pin<Box<Sleep>>,
    deadline: Instant,
    mut io: impl FnMut(&mut Context<'_>) -> Poll<T> + 'a,
) -> impl Future<Output = Option<T>> + 'a {
    let mut set = false;
    poll_fn(move |cx| {
        if let Poll::Ready(out) = io(cx) {
            return Poll::Ready(Some(out));
        }
        if !set {
            set = true;
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
}

fn stalled() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "client stopped reading")
}
