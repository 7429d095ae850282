//! One HTTP/1.1 connection: read what is there, answer every complete request in it,
//! write all the answers at once, repeat — a loop over one explicit [`Phase`].
//!
//! Idle between requests, a connection follows the idle policy (`idle`: idle
//! timeout, shutdown, buffers freed, shelving); inside a head it is bounded by the
//! header deadline (408); inside a body by the body timeout between reads (408). Every
//! refusal is answered and the connection closed with a lingering close, so the client
//! reads the answer instead of a reset. The socket's side of each step is `io`'s.
//!
//! Every wait is a `poll_fn` over the socket and the connection's one timer: an idle
//! connection's task then holds little beyond the connection itself (see
//! docs/performance.md for its size and memory per idle connection).

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::Poll;

use bytes::{Buf, BytesMut};
use http::Method;
use http_body_util::BodyExt;
use tokio::time::Instant;

use super::answer::{self, Persistence, Terms, Unsent};
use super::decode::{Decoder, Fed, Message};
use super::encode::{self, ResponseFraming};
use super::error::ParseError;
use super::idle::{self, Idle, Waiting};
use super::io::Socket;
use super::service::Http1Loop;
use super::upgraded;
use crate::http::Response;
use crate::http::Soon;
use crate::http::body::Repr;
use crate::http::invoke::{self, Guarded};
use crate::http::meter::Mark;
use crate::http::trace::RequestSpan;
use crate::http::upgrade::{OnUpgrade, Run};
use crate::rt::pace::Pace;
use crate::rt::watchdog;
use crate::rt::{Left, Progress, Ticket, Visit};
use crate::transport::Stream;

/// Bytes a read asks for at least.
const READ_CHUNK: usize = 8 * 1024;
/// Bytes one read takes in at most: what a read buffer holds beyond a partial head,
/// whatever it grew to, so one read cannot take in megabytes of pipelined requests.
const READ_MAX: usize = 64 * 1024;
/// Answers and streamed bodies are written whenever this much is buffered: a client
/// that pipelines without reading holds at most this (plus one answer) of the
/// server's memory, not every answer to one read.
const WRITE_FLUSH: usize = 64 * 1024;

/// How a connection comes to its task.
pub(crate) enum Start {
    /// On a loop: new (`served` 0), or back from the loop's shelf; its `ticket` is its
    /// place in the loop's count and under the connection cap, dropped when it closes.
    Loop { served: u64, ticket: Ticket },
    /// On a thread, from its model's waiting room, with the start of a request.
    Thread(Progress),
}

/// Serves one connection until it closes, is shelved (on a loop), goes back to the
/// waiting room, or is upgraded (on a thread: what is left of it returned; on a loop
/// an upgraded connection runs here). (The connection is built before
/// the future, not in it, and the ticket is held by the connection rather than by a
/// wrapping future: each saves the task from holding the same bytes twice.)
pub(crate) fn serve(
    stream: Stream,
    peer: SocketAddr,
    shared: Rc<Http1Loop>,
    start: Start,
) -> impl Future<Output = Left> {
    let socket = Socket::new(
        stream,
        shared.timeouts.body,
        Pace::new(&shared.limits, &shared.timeouts),
    );
    let (served, ticket, rbuf, head_deadline, pace) = match start {
        // A new connection's first head is due a header timeout after the accept:
        // one that sends nothing holds its place no longer (issue 15).
        Start::Loop { served, ticket } => (
            served,
            Some(ticket),
            BytesMut::new(),
            (served == 0).then(|| Instant::now() + shared.timeouts.header),
            None,
        ),
        Start::Thread(Progress {
            served,
            read,
            since,
            due,
        }) => {
            let bytes = read.len() as u64;
            (served, None, read, Some(due), Some((since, bytes)))
        }
    };
    let mut conn = Conn {
        socket,
        peer,
        rbuf,
        wbuf: BytesMut::new(),
        decoder: Decoder::new(),
        served,
        head_deadline,
        pace,
        phase: Phase::Idle,
        shared,
        ticket,
        upgrade: None,
    };
    async move {
        // Boxed, each phase's future is freed when it ends: an upgraded connection
        // (a WebSocket, open for hours) keeps no room for the HTTP one it was.
        match Box::pin(conn.run()).await {
            Ok(Ended::Closed) => Left::Closed,
            Ok(Ended::Idle(due)) => conn.put_away(due).map_or(Left::Closed, Left::Waiting),
            Ok(Ended::Upgraded) => Box::pin(conn.hand_over()).await,
            Ok(Ended::Http2) => conn.http2().await,
            Err(e) => {
                tracing::debug!(
                    "connection from {} ended while {:?}: {e}",
                    conn.peer,
                    conn.phase
                );
                Left::Closed
            }
        }
    }
}

struct Conn {
    socket: Socket,
    peer: SocketAddr,
    rbuf: BytesMut,
    wbuf: BytesMut,
    decoder: Decoder,
    served: u64,
    /// When the head being read must be complete (the first one's: from the accept).
    head_deadline: Option<Instant>,
    /// The request being read: since when it is paced, and the bytes read since.
    pace: Option<(Instant, u64)>,
    phase: Phase,
    shared: Rc<Http1Loop>,
    ticket: Option<Ticket>,
    /// What runs on the connection once its `101` is written (`http::upgrade`).
    upgrade: Option<Run>,
}

/// Where a connection stands, set at each step of [`Conn::run`]: the reading phases
/// choose the deadline of a wait, a connection that fails says in which phase, and
/// the step after each phase is fixed — reading until a request is complete, invoking
/// the app, writing what could not be buffered at
/// once, then reading again or closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between requests with nothing buffered: the idle policy's.
    Idle,
    /// Inside a head: bounded by the header deadline.
    ReadingHead,
    /// Inside a body: bounded by the body timeout between reads.
    ReadingBody,
    /// A complete request is with the app.
    Calling,
    /// Waiting for an answer to write: the handler's, or room to send a body or the
    /// answers buffered.
    Writing,
    /// Answering no more: a refusal (if any) is answered, then the connection
    /// flushes, half-closes and lingers.
    Closing,
}

/// How a connection's task ended.
enum Ended {
    Closed,
    /// Answered `101 Switching Protocols`: the connection is the next protocol's.
    Upgraded,
    /// Waiting long enough to be put away (see [`ReadEnd::PutAway`]).
    Idle(Instant),
    /// The client speaks HTTP/2: agreed by TLS, or opening with its preface.
    Http2,
}

/// What a wait for more bytes ended with.
enum ReadEnd {
    Data,
    Closed,
    /// Waiting long enough to be put away: on a loop, idle and shelved; on a thread,
    /// idle or inside a head, and handed back to the waiting room. When its next
    /// request (or the head) is due.
    PutAway(Instant),
    Refused(ParseError),
}

impl Conn {
    async fn run(&mut self) -> std::io::Result<Ended> {
        loop {
            if self.served == 0 && self.speaks_http2() {
                return Ok(Ended::Http2);
            }
            // Reading: a request from what is buffered, or wait for more.
            let app = &self.shared.app;
            let message = match self.decoder.decode(
                &mut self.rbuf,
                &self.shared.limits,
                &self.shared.bodies,
                |req| app.streams(req),
            ) {
                Ok(Some(message)) => message,
                Ok(None) => {
                    self.phase = self.reading();
                    match self.read().await? {
                        ReadEnd::Data => continue,
                        ReadEnd::Closed => return Ok(Ended::Closed),
                        ReadEnd::PutAway(due) => return Ok(Ended::Idle(due)),
                        ReadEnd::Refused(e) => return Box::pin(self.close(Some(e))).await,
                    }
                }
                Err(e) => return Box::pin(self.close(Some(e))).await,
            };
            self.phase = Phase::Calling;
            self.head_deadline = None;
            self.pace = None;
            let next = match self.answer_now(message) {
                Ok(next) => next,
                Err(later) => {
                    self.phase = Phase::Writing;
                    Box::pin(self.answer_later(later)).await?
                }
            };
            if self.upgrade.is_some() {
                self.phase = Phase::Writing;
                Box::pin(self.flush()).await?;
                return Ok(Ended::Upgraded);
            }
            if self.wbuf.len() >= WRITE_FLUSH {
                self.phase = Phase::Writing;
                Box::pin(self.flush()).await?;
            }
            if next == Persistence::Close {
                return Box::pin(self.close(None)).await;
            }
        }
    }

    /// Whether a connection that has had no request yet speaks HTTP/2 (and the
    /// server does): TLS agreed on it, or its first bytes are HTTP/2's preface.
    fn speaks_http2(&self) -> bool {
        let stream = &self.socket.stream;
        self.shared.http2.enabled
            && (stream.alpn() == Some(crate::http::h2::ALPN)
                || (!stream.is_tls() && self.rbuf.starts_with(crate::http::h2::PREFACE_HEAD)))
    }

    /// Whether the bytes refused may have been meant as HTTP/2's cleartext preface: the
    /// first line of a connection to a cleartext port that speaks HTTP/2 by prior
    /// knowledge. An invalid preface is a connection error (RFC 9113 §3.4), and an
    /// HTTP/1.1 answer would only confuse an HTTP/2 client: such a connection is closed
    /// without one (over TLS, or after a first request, such a line gets its 400).
    fn may_be_http2_preface(&self) -> bool {
        self.served == 0 && self.shared.http2.enabled && !self.socket.stream.is_tls()
    }

    /// The reading phase the decoder and the read buffer are in.
    fn reading(&self) -> Phase {
        if self.decoder.is_reading_body() {
            Phase::ReadingBody
        } else if self.decoder.is_between_messages() && self.rbuf.is_empty() {
            Phase::Idle
        } else {
            Phase::ReadingHead
        }
    }

    /// Flushes what is buffered and waits for more bytes, within the timeout of the
    /// reading phase and the pace of a request.
    async fn read(&mut self) -> std::io::Result<ReadEnd> {
        if self.decoder.take_continue() {
            self.wbuf.extend_from_slice(encode::CONTINUE);
        }
        self.flush().await?;
        let timeouts = &self.shared.timeouts;
        let on_thread = self.ticket.is_none();
        let deadline = match self.phase {
            Phase::Idle => {
                let Some(deadline) = idle::deadline(&self.shared, self.served) else {
                    return Ok(ReadEnd::Closed);
                };
                // Only a connection that is never shelved (the thread models, TLS) may
                // wait less than the idle timeout: shelving counts from it. A TLS
                // handshake is bounded as a first head is.
                let handshaking = self.socket.stream.is_handshaking();
                let deadline = match self.head_deadline {
                    Some(due) if on_thread || handshaking => due.min(deadline),
                    _ => deadline,
                };
                if !on_thread {
                    let waiting = Waiting {
                        socket: &mut self.socket,
                        rbuf: &mut self.rbuf,
                        wbuf: &mut self.wbuf,
                        shared: &self.shared,
                        served: self.served,
                    };
                    match idle::wait(waiting, deadline).await? {
                        Idle::Readable => {}
                        Idle::Close => return Ok(ReadEnd::Closed),
                        Idle::Shelve => return Ok(ReadEnd::PutAway(deadline)),
                    }
                }
                deadline
            }
            reading => {
                let due = match reading {
                    Phase::ReadingBody => Instant::now() + timeouts.body,
                    _ => *self
                        .head_deadline
                        .get_or_insert_with(|| Instant::now() + timeouts.header),
                };
                let (since, bytes) = *self.pace.get_or_insert_with(|| (Instant::now(), 0));
                Pace::new(&self.shared.limits, &self.shared.timeouts).bound(due, since, bytes)
            }
        };
        // On a thread, a wait for a request or the rest of its head is short: then the
        // connection goes back to the waiting room, and the thread to the next one.
        let hand_back = (on_thread && self.phase != Phase::ReadingBody)
            .then(|| Instant::now() + idle::HAND_BACK_AFTER)
            .filter(|&at| at < deadline);
        self.rbuf.reserve(READ_CHUNK);
        let room = (self.rbuf.capacity() - self.rbuf.len()).min(READ_MAX);
        let read = self
            .socket
            .read(&mut self.rbuf, room, hand_back.unwrap_or(deadline))
            .await;
        Ok(match read {
            None if hand_back.is_some() => ReadEnd::PutAway(deadline),
            None if self.phase == Phase::Idle => ReadEnd::Closed,
            None => ReadEnd::Refused(ParseError::Timeout),
            Some(read) => match read? {
                0 => ReadEnd::Closed,
                n => {
                    if n < room {
                        self.socket.forget_readable();
                    }
                    if let Some((_, bytes)) = &mut self.pace {
                        *bytes += n as u64;
                    }
                    ReadEnd::Data
                }
            },
        })
    }

    /// Hands the connection to what its `101` answer named, with the bytes read past
    /// the request: on a loop it runs here, counting against the cap until it ends; on
    /// a thread it is returned, to run without the thread (`rt/upgraded.rs`).
    async fn hand_over(self) -> Left {
        let Self {
            socket,
            peer,
            rbuf,
            wbuf,
            decoder,
            ticket,
            upgrade,
            shared,
            ..
        } = self;
        // What the HTTP connection held is let go now, not when the protocol ends:
        // its buffers, and the read buffer but for the bytes past the request.
        drop((wbuf, decoder));
        let read = bytes::Bytes::copy_from_slice(&rbuf);
        drop(rbuf);
        let Some(run) = upgrade else {
            return Left::Closed;
        };
        // WebSocket messages draw on the budget of bodies in memory.
        let memory = shared.bodies.memory.clone();
        let Some(ticket) = ticket else {
            let next = move |stream, begun| upgraded::run_here(run, stream, read, memory, begun);
            return upgraded::moved(socket.stream, peer, next).map_or(Left::Closed, Left::Upgraded);
        };
        // Told when shutdown begins, as idle connections are.
        upgraded::run_here(run, socket.stream, read, memory, shared.shutdown_begun()).await;
        drop(ticket);
        Left::Closed
    }

    /// Serves the connection as HTTP/2 from what is read: on a loop here, counting
    /// against the cap until it ends; on a thread it is returned, its frames to be
    /// read and written without the thread (`rt/upgraded.rs`), each stream's call
    /// coming back for one.
    async fn http2(self) -> Left {
        let Self {
            socket,
            peer,
            rbuf,
            shared,
            ticket,
            ..
        } = self;
        let read = rbuf.freeze();
        let Some(ticket) = ticket else {
            let protocol = shared.protocol();
            let next =
                move |stream, begun| upgraded::http2_here(protocol, stream, read, peer, begun);
            return upgraded::moved(socket.stream, peer, next).map_or(Left::Closed, Left::Upgraded);
        };
        crate::http::h2::serve(socket.stream, read, peer, shared).await;
        drop(ticket);
        Left::Closed
    }

    /// Puts away a connection waiting since before `due` minus the idle timeout (on
    /// a loop: its shelf; its task ends), or until `due` for the rest of a head (on a
    /// thread: returned, for the waiting room).
    fn put_away(self, due: Instant) -> Option<Visit> {
        let Self {
            socket,
            peer,
            served,
            shared,
            ticket,
            rbuf,
            pace,
            ..
        } = self;
        if ticket.is_some() {
            idle::shelve(socket.stream, peer, served, &shared, ticket, due);
            return None;
        }
        let stream = socket
            .stream
            .park()
            .inspect_err(|e| tracing::debug!("closing connection from {peer}: {e}"))
            .ok()?;
        // The waiting room holds connections by the thousand: only the bytes of a
        // started request go with one, not the buffer they were read into.
        let progress = Progress {
            served,
            since: pace.map_or_else(Instant::now, |(since, _)| since),
            read: BytesMut::from(&rbuf[..]),
            due,
        };
        Some(Visit {
            stream,
            peer,
            progress,
        })
    }

    /// Answers one request without waiting when it can — the handler answered at once
    /// with a body that fits the write buffer, as most do — and returns whether the
    /// connection stays open; otherwise returns what is left to wait for. (No future
    /// per request on that path: boxing one, and moving it into its box, was the
    /// largest single cost of a pipelined request.)
    // The Err, 128 bytes since a request's terms carry its metrics mark, is the
    // waiting path, which boxes a future anyway; the usual Ok path writes one byte.
    #[allow(clippy::result_large_err)]
    fn answer_now(
        &mut self,
        message: Message,
    ) -> Result<Persistence, Soon<Unsent, (Guarded, Terms)>> {
        let Message {
            mut req,
            keep_alive,
            accept,
            accept_encoding,
            ..
        } = message;
        self.served += 1;
        let limit = self.shared.limits.max_requests_per_conn;
        req.set_peer(self.peer);
        let id = self
            .shared
            .ids
            .as_ref()
            .map(|ids| ids.assign(&mut req, self.peer.ip()));
        let mut terms = Terms {
            version: req.version(),
            head_only: req.method() == Method::HEAD,
            accept,
            accept_encoding,
            keep_alive: keep_alive && self.served < limit,
            line: self
                .shared
                .log
                .as_ref()
                .map(|log| log.note(self.peer, Some(&req))),
            mark: self.shared.meter().map(|_| Mark::now(req.method())),
            span: RequestSpan::open(&req, id.as_ref()),
            id,
        };
        let max_inflight = self.shared.limits.max_inflight;
        let called = terms
            .span
            .in_scope(|| invoke::call(&self.shared.app, req, max_inflight));
        match called {
            Soon::Ready(res) => self.buffer(res, &mut terms).map_err(Soon::Ready),
            Soon::Later(guarded) => Err(Soon::Later((guarded, terms))),
        }
    }

    /// Waits for what [`answer_now`](Self::answer_now) could not finish.
    async fn answer_later(
        &mut self,
        later: Soon<Unsent, (Guarded, Terms)>,
    ) -> std::io::Result<Persistence> {
        let unsent = match later {
            Soon::Ready(unsent) => unsent,
            Soon::Later((mut guarded, mut terms)) => {
                let shared = self.shared.clone();
                // Poll once: if the answer is not ready, send the earlier pipelined
                // answers now rather than holding them behind this one.
                let res = match poll_fn(|cx| {
                    Poll::Ready(terms.span.in_scope(|| guarded.poll_with(cx, &*shared.app)))
                })
                .await
                {
                    Poll::Ready(res) => res,
                    Poll::Pending => {
                        self.flush().await?;
                        // A client that hangs up meanwhile takes its request with it:
                        // the handler is dropped (a CGI script it runs is killed), as
                        // it is when the body it streams is refused.
                        let route = guarded.route();
                        let res = tokio::select! {
                            res = terms.span.instrument(guarded.finish(&*shared.app)) => res,
                            ended = self.beside_the_app() => match ended {
                                Ok(refused) => {
                                    tracing::info!("refused request body from {}: {refused} ({})", self.peer, refused.status());
                                    watchdog::set_route(route);
                                    terms.keep_alive = false;
                                    refusal(&refused)
                                }
                                Err(gone) => {
                                    if let (Some(log), Some(line)) = (&shared.log, terms.line.take()) {
                                        log.record(*line, CLIENT_GONE, Some(0));
                                    }
                                    watchdog::set_route(route);
                                    terms.count(shared.meter(), CLIENT_GONE);
                                    terms.span.close(CLIENT_GONE, &*shared.app);
                                    return Err(gone);
                                }
                            }
                        };
                        self.phase = Phase::Writing;
                        res
                    }
                };
                match self.buffer(res, &mut terms) {
                    Ok(next) => return Ok(next),
                    Err(unsent) => unsent,
                }
            }
        };
        self.send_unsent(unsent).await
    }

    /// While the app answers: passes the body it streams on to it as it takes it,
    /// and notices a client that hangs up (when nothing else is buffered to read).
    /// Returns only when the wait must end: the body refused (`Ok`, the reason), or
    /// the client gone (`Err`).
    async fn beside_the_app(&mut self) -> std::io::Result<ParseError> {
        while self.decoder.is_streaming() {
            match self.decoder.feed(&mut self.rbuf, &self.shared.limits) {
                Ok(Fed::Whole) => break,
                Ok(Fed::More) => {}
                Err(e) => return Ok(e),
            }
            poll_fn(|cx| self.decoder.poll_room(cx)).await;
            self.phase = Phase::ReadingBody;
            let read = self.read().await;
            self.phase = Phase::Writing;
            match read? {
                ReadEnd::Data => {}
                ReadEnd::Refused(e) => return Ok(e),
                ReadEnd::Closed | ReadEnd::PutAway(_) => return Err(client_gone()),
            }
        }
        if !self.rbuf.is_empty() {
            return std::future::pending().await;
        }
        self.socket.hung_up().await;
        Err(client_gone())
    }

    /// Buffers an answer (see [`answer::buffer`]). Reads the shutdown flag after the
    /// handler: a request that was in flight when shutdown began announces the close in
    /// its answer; a client still waiting for `100 Continue` is closed on.
    fn buffer(&mut self, mut res: Response, terms: &mut Terms) -> Result<Persistence, Unsent> {
        if let Some(run) = OnUpgrade::take(&mut res) {
            self.upgrade = Some(run);
        }
        if self.decoder.awaits_continue() {
            terms.keep_alive = false;
        }
        let closing = self.shared.closing();
        answer::buffer(
            &mut self.wbuf,
            res,
            terms,
            closing,
            &self.shared.answering(),
        )
    }

    /// Sends a body too large to buffer: a large one from its own buffer, a file with
    /// sendfile, a stream as it comes.
    async fn send_unsent(&mut self, unsent: Unsent) -> std::io::Result<Persistence> {
        match unsent.repr {
            Repr::Full(bytes) => {
                self.flush().await?;
                self.socket.send(&bytes).await?;
            }
            Repr::File(region) => {
                // Corked, the head and the file leave in full segments instead of the
                // head alone first (nodelay), which cost CPU per response for every
                // file (docs/performance.md, what each measured change bought).
                self.socket.set_cork(true)?;
                self.flush().await?;
                let sent = Box::pin(self.socket.send_file(region)).await;
                self.socket.set_cork(false)?;
                sent?;
            }
            Repr::Stream(stream) => {
                let ended = Box::pin(self.send_stream(stream, unsent.framing, unsent.endless));
                if ended.await? != StreamEnd::Done {
                    return Ok(Persistence::Close);
                }
            }
        }
        Ok(unsent.next)
    }

    /// Sends a streamed body chunk by chunk, flushing whenever the stream must wait.
    /// An `endless` one (an event stream) is ended where it stands when shutdown
    /// begins, if it is waiting for its next chunk then.
    async fn send_stream(
        &mut self,
        mut body: http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, crate::http::BoxError>,
        framing: ResponseFraming,
        endless: bool,
    ) -> std::io::Result<StreamEnd> {
        let mut sent = 0u64;
        let mut end = StreamEnd::Done;
        loop {
            let frame = match futures_util::FutureExt::now_or_never(body.frame()) {
                Some(frame) => frame,
                None => {
                    self.flush().await?;
                    let watch = self.rbuf.is_empty();
                    tokio::select! {
                        frame = body.frame() => frame,
                        () = self.shared.shutdown_begun(), if endless => {
                            end = StreamEnd::Shutdown;
                            break;
                        }
                        () = self.socket.hung_up(), if watch => return Err(client_gone()),
                    }
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
            match framing {
                ResponseFraming::Chunked => encode::chunk(&mut self.wbuf, &data),
                ResponseFraming::Length(n) if data.len() as u64 > n - sent => {
                    // Bytes past the declared length would be read as the next
                    // answer on the connection: cut here, and close (issue 33).
                    let room = usize::try_from(n - sent).unwrap_or(usize::MAX);
                    self.wbuf.extend_from_slice(&data[..room]);
                    tracing::warn!(
                        "response to {} longer than its declared {n} bytes: cut there, connection closed",
                        self.peer
                    );
                    return Ok(StreamEnd::Cut);
                }
                _ => self.wbuf.extend_from_slice(&data),
            }
            sent += data.len() as u64;
            if self.wbuf.len() > WRITE_FLUSH {
                self.flush().await?;
            }
        }
        match framing {
            ResponseFraming::Chunked => encode::last_chunk(&mut self.wbuf),
            ResponseFraming::Length(n) if n != sent => {
                // The client sees a message shorter than announced, then the close:
                // never a desynchronised connection.
                tracing::warn!(
                    "response to {} ended at {sent} of its declared {n} bytes: connection closed",
                    self.peer
                );
                return Ok(StreamEnd::Cut);
            }
            _ => {}
        }
        Ok(end)
    }

    /// Writes everything buffered, within the send timeout and the pace.
    async fn flush(&mut self) -> std::io::Result<()> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let result = self.socket.send(&self.wbuf).await;
        self.wbuf.clear();
        result
    }

    /// Answers the request the server `refused` (if any), then flushes and closes with
    /// a lingering close.
    async fn close(&mut self, refused: Option<ParseError>) -> std::io::Result<Ended> {
        self.phase = Phase::Closing;
        // A streamed body refused while drained: its request has had its answer.
        if let Some(e) = refused.filter(|_| !self.decoder.is_streaming()) {
            let partial = !self.decoder.is_between_messages() || !self.rbuf.is_empty();
            if e == ParseError::Timeout && !partial {
                return Ok(Ended::Closed);
            }
            if e == ParseError::NotHttp1 && self.may_be_http2_preface() {
                tracing::info!(
                    "closed connection from {}: {e}, nor HTTP/2's preface",
                    self.peer
                );
                return Ok(Ended::Closed);
            }
            self.refuse(&e).await?;
        }
        self.flush().await?;
        self.socket.linger().await?;
        self.rbuf.advance(self.rbuf.len());
        Ok(Ended::Closed)
    }

    /// Buffers the answer to a request the server refuses.
    async fn refuse(&mut self, e: &ParseError) -> std::io::Result<()> {
        tracing::info!("refused request from {}: {e} ({})", self.peer, e.status());
        let line = self
            .shared
            .log
            .as_ref()
            .map(|log| log.note(self.peer, self.decoder.pending()));
        let res = refusal(e);
        self.rbuf.clear();
        let mark = self.shared.meter().map(|_| Mark::refused());
        let mut terms = Terms::refusal(line, mark, &self.shared.answering());
        watchdog::set_route(watchdog::NO_ROUTE);
        if let Err(unsent) = self.buffer(res, &mut terms) {
            self.send_unsent(unsent).await?;
        }
        Ok(())
    }
}

/// The answer to a request (or its body) the server refuses.
fn refusal(e: &ParseError) -> Response {
    if *e == ParseError::NoRoom {
        crate::http::response::unavailable(e.to_string())
    } else {
        crate::http::response::error(e.status(), e.to_string())
    }
}

/// The access log's status for a request whose client hung up before its answer
/// (nginx's).
const CLIENT_GONE: u16 = 499;

fn client_gone() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "the client hung up before its answer",
    )
}

/// How a streamed body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamEnd {
    /// As its stream ended.
    Done,
    /// Cut short as an endless body when shutdown began: the connection closes.
    Shutdown,
    /// Longer or shorter than its declared length: cut there, the connection closes.
    Cut,
}
