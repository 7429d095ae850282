//! One HTTP/1.1 connection on a loop: read what is there, answer every complete request
//! in it, write all the answers at once, repeat.
//!
//! States: between requests the connection is idle (idle timeout; shutdown closes it,
//! unless its first request has yet to come);
//! inside a head it is bounded by the header deadline (408); inside a body by the body
//! timeout between reads (408). Every refusal is answered and the connection closed
//! with a lingering close, so the client reads the answer instead of a reset.
//!
//! Every wait is a `poll_fn` over the socket and the connection's one timer: an idle
//! connection's task then holds little beyond the connection itself (its future was
//! 1,056 bytes with a `Sleep` and a shutdown future in each waiting state; see
//! docs/performance.md for memory per idle connection).

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use http::{Method, Version};
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use super::decode::{Decoder, Message};
use super::dispatch::{self, Answer};
use super::encode::{self, Framing};
use super::error::ParseError;
use crate::app::Response;
use crate::http::body::{FileRegion, Kind};
use crate::rt::event_loop::Ticket;
use crate::rt::shelf::{SHELVE_AFTER, Shelved};
use crate::rt::{LoopShared, Shelf, Sleeping};

/// How long a connection accepted just before shutdown, with no request yet, may take
/// to send its first: a request already on the wire arrives well within it, while a
/// silent preconnect holds up shutdown no longer.
const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(1);

/// How long an idle connection keeps its buffers before it frees them.
const HOLD_BUFFERS: Duration = Duration::from_millis(50);

/// Bytes a read asks for at least.
const READ_CHUNK: usize = 8 * 1024;
/// Bodies larger than this are written from their own buffer instead of being copied.
const COPY_LIMIT: usize = 64 * 1024;
/// How long a closing connection keeps reading (and discarding) what the client sends.
const LINGER: Duration = Duration::from_secs(2);

/// Serves one connection, which has served `served` requests before (on a task it
/// left for the loop's shelf), until it closes or is shelved. A connection with a
/// `ticket` may be shelved; its ticket is dropped when it closes. (The connection is
/// built before the future, not in it, and the ticket is held by the connection rather
/// than by a wrapping future: each saves the task from holding the same bytes twice.)
pub(crate) fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    served: u64,
    shared: Rc<LoopShared>,
    ticket: Option<Ticket>,
) -> impl Future<Output = ()> {
    let mut conn = Conn {
        stream,
        peer,
        rbuf: BytesMut::new(),
        wbuf: BytesMut::new(),
        decoder: Decoder::new(),
        served,
        head_deadline: None,
        timer: Box::pin(tokio::time::sleep_until(Instant::now())),
        shared,
        ticket,
    };
    async move {
        match conn.run().await {
            Ok(Ended::Closed) => {}
            Ok(Ended::Idle(deadline)) => conn.shelve(deadline),
            Err(e) => tracing::debug!("connection from {} ended: {e}", conn.peer),
        }
    }
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    rbuf: BytesMut,
    wbuf: BytesMut,
    decoder: Decoder,
    served: u64,
    /// When the head being read must be complete.
    head_deadline: Option<Instant>,
    /// The one timer of every wait (idle, head, body, send), set anew for each.
    timer: Pin<Box<Sleep>>,
    shared: Rc<LoopShared>,
    ticket: Option<Ticket>,
}

/// How a connection's task ended.
enum Ended {
    Closed,
    /// Idle long enough to be shelved; its idle deadline.
    Idle(Instant),
}

/// What a wait for more bytes ended with.
enum Read {
    Data,
    Closed,
    /// Idle long enough to be shelved; its idle deadline.
    Shelve(Instant),
    Refused(ParseError),
}

/// What an idle connection's wait ended with.
enum Idle {
    Readable,
    Close,
    Shelve,
}

/// What to do after answering a request.
#[derive(PartialEq, Eq)]
enum Next {
    KeepAlive,
    Close,
}

/// How to answer a request, noted before the app takes it.
struct Reply {
    version: Version,
    head_only: bool,
    /// The request's `Accept`, for an error page.
    accept: Option<http::HeaderValue>,
    keep_alive: bool,
}

/// An answer the connection has to wait for: the handler's, or room to send a body
/// too large to buffer.
enum Later {
    Handler(dispatch::Guarded, Reply),
    Body(Unsent),
}

/// A response whose head is buffered and whose body is to be sent, not copied.
struct Unsent {
    next: Next,
    kind: Kind,
    framing: Framing,
}

impl Conn {
    async fn run(&mut self) -> std::io::Result<Ended> {
        loop {
            match self
                .decoder
                .decode(&mut self.rbuf, &self.shared.config.limits)
            {
                Ok(Some(message)) => {
                    self.head_deadline = None;
                    let next = match self.answer_now(message) {
                        Ok(next) => next,
                        Err(later) => Box::pin(self.answer_later(later)).await?,
                    };
                    if next == Next::Close {
                        return Box::pin(self.close()).await.map(|()| Ended::Closed);
                    }
                }
                Ok(None) => {
                    if self.decoder.take_continue() {
                        self.wbuf.extend_from_slice(encode::CONTINUE);
                    }
                    self.flush().await?;
                    match self.read().await? {
                        Read::Data => {}
                        Read::Closed => return Ok(Ended::Closed),
                        Read::Shelve(deadline) => return Ok(Ended::Idle(deadline)),
                        Read::Refused(e) => {
                            return Box::pin(self.refuse(&e)).await.map(|()| Ended::Closed);
                        }
                    }
                }
                Err(e) => return Box::pin(self.refuse(&e)).await.map(|()| Ended::Closed),
            }
        }
    }

    /// Waits for more bytes, within the timeout of the connection's state.
    async fn read(&mut self) -> std::io::Result<Read> {
        let timeouts = &self.shared.config.timeouts;
        let idle = self.decoder.is_between_messages() && self.rbuf.is_empty();
        let deadline = if idle {
            // A connection that has not had its first request yet is no idle
            // keep-alive: its request may be on the way (accepted just as shutdown
            // began), so it gets a short grace to arrive.
            if self.shared.closing() {
                if self.served > 0 {
                    return Ok(Read::Closed);
                }
                Instant::now() + FIRST_REQUEST_GRACE.min(timeouts.header)
            } else {
                Instant::now() + timeouts.idle
            }
        } else if self.decoder.is_reading_body() {
            Instant::now() + timeouts.body
        } else {
            *self
                .head_deadline
                .get_or_insert_with(|| Instant::now() + timeouts.header)
        };
        if idle {
            match self.wait_idle(deadline).await? {
                Idle::Readable => {}
                Idle::Close => return Ok(Read::Closed),
                Idle::Shelve => return Ok(Read::Shelve(deadline)),
            }
        }
        self.rbuf.reserve(READ_CHUNK);
        let room = self.rbuf.capacity() - self.rbuf.len();
        let (stream, rbuf) = (&self.stream, &mut self.rbuf);
        let read = until(&mut self.timer, deadline, |cx| poll_read(stream, rbuf, cx)).await;
        Ok(match read {
            None if idle => Read::Closed,
            None => Read::Refused(ParseError::Timeout),
            Some(read) => match read? {
                0 => Read::Closed,
                n => {
                    if n < room {
                        self.forget_readable();
                    }
                    Read::Data
                }
            },
        })
    }

    /// Waits until an idle connection has bytes to read; says when it should close
    /// instead (idle timeout, shutdown), or be shelved (idle for [`SHELVE_AFTER`], on a
    /// loop with a shelf).
    ///
    /// A connection that has served more than one request keeps its buffers for
    /// [`HOLD_BUFFERS`], then frees them; others free them at once. Idle
    /// keep-alive connections are most of a busy server's connections: freeing their
    /// buffers cut resident memory per idle connection from 14 KiB to the figure in
    /// docs/performance.md, and shelving them cuts it further. A connection in use
    /// comes back sooner and finds its buffers, grown to its answers: freeing them at
    /// every wait cost a malloc, a free and a chain of reallocs per request or
    /// pipelined batch (see docs/performance.md).
    ///
    /// A `poll_fn`, not an `async fn`: it is what an idle connection's task holds.
    fn wait_idle(&mut self, deadline: Instant) -> impl Future<Output = std::io::Result<Idle>> + '_ {
        let may_shelve = self.ticket.is_some()
            && self.shared.shelf.get().is_some_and(Shelf::is_open)
            && self.shared.config.timeouts.idle > SHELVE_AFTER;
        // `deadline` is the idle timeout from now: no clock read for the others.
        let began = deadline - self.shared.config.timeouts.idle;
        let end = if may_shelve {
            began + SHELVE_AFTER
        } else {
            deadline
        };
        let Self {
            stream,
            rbuf,
            wbuf,
            timer,
            shared,
            served,
            ..
        } = self;
        let shared: &LoopShared = shared;
        let served = *served;
        let mut sleeping = Sleeping::new(&shared.sleepers);
        let mut waited = false;
        let mut graced = false;
        let holds = |rbuf: &BytesMut, wbuf: &BytesMut| rbuf.capacity() + wbuf.capacity() > 0;
        let free = |rbuf: &mut BytesMut, wbuf: &mut BytesMut| {
            *rbuf = BytesMut::new();
            *wbuf = BytesMut::new();
        };
        poll_fn(move |cx| {
            if let Poll::Ready(ready) = stream.poll_read_ready(cx) {
                return Poll::Ready(ready.map(|()| Idle::Readable));
            }
            if !waited {
                waited = true;
                // A connection on its first request may be one of a storm of new
                // ones, each asking once: it keeps nothing.
                let first = if served > 1 && holds(rbuf, wbuf) {
                    (began + HOLD_BUFFERS).min(end)
                } else {
                    free(rbuf, wbuf);
                    end
                };
                timer.as_mut().reset(first);
            }
            if shared.closing() && !graced {
                if served > 0 {
                    return Poll::Ready(Ok(Idle::Close));
                }
                // No request yet: the grace for a first request starts now, and the
                // connection is not shelved.
                graced = true;
                free(rbuf, wbuf);
                let grace = Instant::now() + FIRST_REQUEST_GRACE;
                timer.as_mut().reset(grace.min(deadline));
            }
            while timer.as_mut().poll(cx).is_ready() {
                if holds(rbuf, wbuf) {
                    free(rbuf, wbuf);
                    timer.as_mut().reset(end);
                    continue;
                }
                let shelve = may_shelve && !graced && !shared.closing();
                return Poll::Ready(Ok(if shelve { Idle::Shelve } else { Idle::Close }));
            }
            sleeping.park(cx.waker());
            Poll::Pending
        })
    }

    /// Gives the connection, idle since before `deadline - the idle timeout`, to its
    /// loop's shelf; its task ends.
    fn shelve(self, deadline: Instant) {
        let Self {
            stream,
            peer,
            served,
            shared,
            ticket,
            ..
        } = self;
        let (Some(shelf), Some(ticket)) = (shared.shelf.get(), ticket) else {
            return;
        };
        match stream.into_std() {
            Ok(stream) => shelf.put(
                Shelved {
                    stream,
                    peer,
                    served,
                    ticket,
                },
                deadline,
            ),
            Err(e) => tracing::debug!("closing idle connection from {peer}: {e}"),
        }
    }

    /// Marks the socket not readable after a short read, which drained it.
    ///
    /// Without this the next read is a `recv` that fails with EAGAIN before the loop
    /// waits for epoll: one wasted syscall per request. Safe because epoll is
    /// edge-triggered and tokio ignores a clear older than the last readiness event, so
    /// bytes that arrive meanwhile still wake the connection. Measured on `hello`
    /// plaintext, 64 keep-alive connections, one loop: see docs/performance.md.
    fn forget_readable(&self) {
        let _ = self.stream.try_io(Interest::READABLE, || {
            Err::<(), _>(std::io::Error::from(std::io::ErrorKind::WouldBlock))
        });
    }

    /// Answers one request without waiting when it can — the handler answered at once
    /// with a body that fits the write buffer, as most do — and returns whether the
    /// connection stays open; otherwise returns what is left to wait for. (No future
    /// per request on that path: boxing one, and moving it into its box, was the
    /// largest single cost of a pipelined request.)
    fn answer_now(&mut self, message: Message) -> Result<Next, Later> {
        let Message {
            mut req,
            keep_alive,
            accept,
            ..
        } = message;
        self.served += 1;
        let limit = self.shared.config.limits.max_requests_per_conn;
        let reply = Reply {
            version: req.version(),
            head_only: req.method() == Method::HEAD,
            accept,
            keep_alive: keep_alive && self.served < limit,
        };
        req.set_peer(self.peer);
        let max_inflight = self.shared.config.limits.max_inflight;
        match dispatch::call(&self.shared.app, req, max_inflight) {
            Answer::Ready(res) => self.buffer_response(res, &reply).map_err(Later::Body),
            Answer::Later(guarded) => Err(Later::Handler(guarded, reply)),
        }
    }

    /// Waits for what [`answer_now`](Self::answer_now) could not finish.
    async fn answer_later(&mut self, later: Later) -> std::io::Result<Next> {
        let unsent = match later {
            Later::Body(unsent) => unsent,
            Later::Handler(mut guarded, reply) => {
                let shared = self.shared.clone();
                // Poll once: if the answer is not ready, send the earlier pipelined
                // answers now rather than holding them behind this one.
                let res = match poll_fn(|cx| Poll::Ready(guarded.poll_with(cx, &shared.app))).await
                {
                    Poll::Ready(res) => res,
                    Poll::Pending => {
                        self.flush().await?;
                        guarded.finish(&shared.app).await
                    }
                };
                match self.buffer_response(res, &reply) {
                    Ok(next) => return Ok(next),
                    Err(unsent) => unsent,
                }
            }
        };
        self.send_unsent(unsent).await
    }

    /// Buffers a response's head, and its body (the error page for a bodiless error)
    /// when it fits; returns whether the connection stays open, or the body still to
    /// send.
    fn buffer_response(&mut self, mut res: Response, reply: &Reply) -> Result<Next, Unsent> {
        dispatch::fill_error_body(&mut res, reply.accept.as_ref());
        // Read the shutdown flag after the handler: a request that was in flight when
        // shutdown began announces the close in its answer.
        let keep_alive = reply.keep_alive && !self.shared.closing();
        let (parts, body) = res.into_parts();
        let framing = Framing::choose(parts.status, body.exact_len(), reply.version);
        let keep_alive = encode::head(
            &mut self.wbuf,
            parts.status,
            &parts.headers,
            framing,
            keep_alive,
            reply.version,
        );
        crate::http::spare::keep(parts.headers);
        let next = if keep_alive {
            Next::KeepAlive
        } else {
            Next::Close
        };
        if reply.head_only || framing == Framing::None {
            return Ok(next);
        }
        match body.kind {
            Kind::Full(bytes) if bytes.len() <= COPY_LIMIT => {
                self.wbuf.extend_from_slice(&bytes);
                Ok(next)
            }
            kind => Err(Unsent {
                next,
                kind,
                framing,
            }),
        }
    }

    /// Sends a body too large to buffer: a large one from its own buffer, a file with
    /// sendfile, a stream as it comes.
    async fn send_unsent(&mut self, unsent: Unsent) -> std::io::Result<Next> {
        match unsent.kind {
            Kind::Full(bytes) => {
                self.flush().await?;
                let timeout = self.shared.config.timeouts.body;
                send_all(&self.stream, &mut self.timer, timeout, &bytes).await?;
            }
            Kind::File(region) => {
                // Corked, the head and the file leave in full segments instead of the
                // head alone first (nodelay): measured 2.3x nginx's CPU per 300 KB
                // response without it, see docs/performance.md.
                self.set_cork(true)?;
                self.flush().await?;
                let sent = Box::pin(self.send_file(region)).await;
                self.set_cork(false)?;
                sent?;
            }
            Kind::Stream(stream) => Box::pin(self.send_stream(stream, unsent.framing)).await?,
        }
        Ok(unsent.next)
    }

    /// Sends a streamed body chunk by chunk, flushing whenever the stream must wait.
    async fn send_stream(
        &mut self,
        mut body: http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, crate::http::BoxError>,
        framing: Framing,
    ) -> std::io::Result<()> {
        let mut sent = 0u64;
        loop {
            let frame = match futures_util::FutureExt::now_or_never(body.frame()) {
                Some(frame) => frame,
                None => {
                    self.flush().await?;
                    body.frame().await
                }
            };
            let data = match frame {
                None => break,
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue, // trailers are not sent
                },
                Some(Err(e)) => {
                    return Err(std::io::Error::other(format!("response body failed: {e}")));
                }
            };
            sent += data.len() as u64;
            match framing {
                Framing::Chunked => encode::chunk(&mut self.wbuf, &data),
                _ => self.wbuf.extend_from_slice(&data),
            }
            if self.wbuf.len() > COPY_LIMIT {
                self.flush().await?;
            }
        }
        match framing {
            Framing::Chunked => encode::last_chunk(&mut self.wbuf),
            Framing::Length(n) if n != sent => {
                return Err(std::io::Error::other(format!(
                    "response body was {sent} bytes, declared {n}"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn set_cork(&self, cork: bool) -> std::io::Result<()> {
        socket2::SockRef::from(&self.stream).set_tcp_cork(cork)
    }

    /// Sends a file region with sendfile(2): the kernel copies page cache to socket.
    async fn send_file(&mut self, region: FileRegion) -> std::io::Result<()> {
        let mut offset = i64::try_from(region.offset).map_err(std::io::Error::other)?;
        let end = offset.saturating_add(i64::try_from(region.len).map_err(std::io::Error::other)?);
        let timeout = self.shared.config.timeouts.body;
        let stream = &self.stream;
        while offset < end {
            let count = usize::try_from(end - offset)
                .unwrap_or(usize::MAX)
                .min(1 << 30);
            let sendfile = |cx: &mut Context<'_>| {
                poll_write_with(stream, cx, || {
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
            let sent = until(&mut self.timer, Instant::now() + timeout, sendfile)
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

    /// Writes everything buffered, within the send timeout.
    async fn flush(&mut self) -> std::io::Result<()> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let timeout = self.shared.config.timeouts.body;
        let result = send_all(&self.stream, &mut self.timer, timeout, &self.wbuf).await;
        self.wbuf.clear();
        result
    }

    /// Answers a request the server refuses, then closes.
    async fn refuse(&mut self, e: &ParseError) -> std::io::Result<()> {
        let partial = !self.decoder.is_between_messages() || !self.rbuf.is_empty();
        if *e == ParseError::Timeout && !partial {
            return Ok(());
        }
        tracing::info!("refused request from {}: {e} ({})", self.peer, e.status());
        let res = crate::app::error(e.status(), e.to_string());
        self.rbuf.clear();
        let reply = Reply {
            version: Version::HTTP_11,
            head_only: false,
            accept: None,
            keep_alive: false,
        };
        if let Err(unsent) = self.buffer_response(res, &reply) {
            self.send_unsent(unsent).await?;
        }
        self.close().await
    }

    /// Flushes, half-closes, and reads until the client closes too (or a while passes),
    /// so that unread request bytes do not turn the close into a reset that destroys
    /// the answer before the client reads it.
    async fn close(&mut self) -> std::io::Result<()> {
        self.flush().await?;
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
        self.rbuf.advance(self.rbuf.len());
        Ok(())
    }
}

/// Polls `io` until it is ready (`Some`), or until `deadline` passes on `timer`
/// (`None`). The timer is set only once `io` has to wait: most reads and writes
/// complete at once. (A `poll_fn`, not an `async fn`, so that its state is not stored
/// twice in the connection's task.)
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

/// Writes all of `bytes`, failing when the client takes nothing for `timeout`: a slow
/// reader may take as long as it keeps reading, a stalled one is dropped. The timer is
/// read and set only when the socket is full. Uses `send(2)` (`try_write`), not the
/// vectored path (writev(2) through the VFS layer) for what is always one buffer.
fn send_all<'a>(
    stream: &'a TcpStream,
    timer: &'a mut Pin<Box<Sleep>>,
    timeout: Duration,
    mut bytes: &'a [u8],
) -> impl Future<Output = std::io::Result<()>> + 'a {
    let mut waiting = false;
    poll_fn(move |cx| {
        while !bytes.is_empty() {
            match poll_write_with(stream, cx, || stream.try_write(bytes)) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => {
                    bytes = &bytes[n..];
                    waiting = false;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    if !waiting {
                        waiting = true;
                        timer.as_mut().reset(Instant::now() + timeout);
                    }
                    if timer.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Err(stalled()));
                    }
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(()))
    })
}

/// Reads what the socket has into `rbuf`, once it is readable.
fn poll_read(
    stream: &TcpStream,
    rbuf: &mut BytesMut,
    cx: &mut Context<'_>,
) -> Poll<std::io::Result<usize>> {
    loop {
        ready!(stream.poll_read_ready(cx))?;
        match stream.try_read_buf(rbuf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            result => return Poll::Ready(result),
        }
    }
}

/// Runs the write `io` (a `try_` call of the stream, which clears the readiness tokio
/// had cached when it would block) once the socket is writable.
fn poll_write_with(
    stream: &TcpStream,
    cx: &mut Context<'_>,
    mut io: impl FnMut() -> std::io::Result<usize>,
) -> Poll<std::io::Result<usize>> {
    loop {
        ready!(stream.poll_write_ready(cx))?;
        match io() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            result => return Poll::Ready(result),
        }
    }
}

fn stalled() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "client stopped reading")
}
