//! An open WebSocket: reads the peer's frames into messages and writes the send
//! queue's, on one task, with keep-alive, the close handshake and shutdown's 1001.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use crate::transport::Stream;
use bytes::{Buf as _, BufMut as _, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::time::{Instant, Sleep};
use tungstenite::protocol::frame::FrameHeader;
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};

use super::deflate::{Deflate, Deflater, Inflater};
use super::message::{CloseCode, Message};
use super::outbox::{Outbox, Sender, SlowReader};
use super::read::{Reader, Violation};
use crate::http::GoingAway;
use crate::http::intake::Budget;

/// How far off a timer that is not to fire is set: a year.
const NEVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// Queued messages are framed into one write until it holds this much.
const WRITE_BATCH: usize = 64 * 1024;

/// How much room a read is given between frames, and at most inside a large frame
/// (4 KiB reads made a 16 KiB echo cost 15 % more server CPU than tungstenite's
/// 128 KiB buffer; bench/websocket.sh).
const READ_ROOM: usize = 4096;
const READ_ROOM_MOST: usize = 64 * 1024;

/// Why a socket failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebSocketError {
    /// The peer broke the protocol or a limit; it was sent `code` and the socket is
    /// closing.
    #[error("the peer broke the protocol ({code}): {reason}")]
    Violation {
        /// The close code sent.
        code: CloseCode,
        /// What was broken.
        reason: &'static str,
    },
    /// The peer read too slowly for what it was fed: its send queue overflowed and
    /// the socket is closing with 1008.
    #[error("the peer reads too slowly for its feed")]
    TooSlow,
    /// The socket is closed or closing: nothing more can be sent.
    #[error("the WebSocket is closed")]
    Closed,
    /// The connection failed.
    #[error("websocket: {0}")]
    Io(#[from] io::Error),
}

/// How a socket's settings reach it from its handshake.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) max_message: usize,
    pub(super) max_frame: usize,
    pub(super) keep_alive: Option<Duration>,
    pub(super) close_timeout: Duration,
    pub(super) send_queue: usize,
    pub(super) slow_reader: SlowReader,
}

/// Where the close handshake stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// This side sent its close and reads until the peer's comes.
    Closing,
    /// The peer broke the protocol; what it sends is dropped until it closes.
    Failed,
    Closed,
}

/// An open WebSocket on a switched connection.
#[derive(Debug)]
pub struct WebSocket {
    conn: Conn,
    /// Set when the server's shutdown begins.
    going_away: GoingAway,
    settings: Settings,
    /// In the open state the keep-alive interval's timer, armed once and re-armed
    /// when it fires — never per message (a timer registered and dropped per
    /// message would cost each of them); once closing, the close handshake's deadline.
    timer: Pin<Box<Sleep>>,
    /// Whether a frame has come since the timer last fired.
    heard: bool,
    /// Whether a ping is out and nothing has come since.
    pinged: bool,
}

/// The connection and what reads and writes it.
#[derive(Debug)]
struct Conn {
    stream: Stream,
    read_buf: BytesMut,
    /// Framed bytes not yet written.
    write_buf: BytesMut,
    reader: Reader,
    deflater: Option<Deflater>,
    outbox: Arc<Outbox>,
    state: State,
    /// Fed messages wait and the socket has let the loop take its turn once before
    /// writing them (see [`Io::Fed`]).
    deferred: bool,
}

/// What one turn of reading and writing came to.
enum Io {
    /// Messages were fed to an idle socket: it lets the rest of the loop run once
    /// before writing them, so that posts arriving meanwhile go out in the same
    /// `write`. Without it a publisher posting back to back woke every socket for
    /// each post and each delivery cost a `write` of its own (4.7 µs a delivery at
    /// 1,000 subscribers; bench/feeds.sh).
    Fed,
    Message(Message),
    Violation(Violation),
    Overflow,
    Eof,
    Failed(io::Error),
}

impl WebSocket {
    pub(super) fn new(
        stream: Stream,
        read: &[u8],
        going_away: GoingAway,
        settings: Settings,
        deflate: Option<Deflate>,
        memory: Arc<Budget>,
    ) -> Self {
        let first = Instant::now() + settings.keep_alive.unwrap_or(NEVER);
        let inflater = deflate.as_ref().map(Inflater::new);
        Self {
            conn: Conn {
                stream,
                read_buf: BytesMut::from(read),
                write_buf: BytesMut::new(),
                reader: Reader::new(settings.max_frame, settings.max_message, inflater, memory),
                deflater: deflate.as_ref().map(Deflater::new),
                outbox: Arc::new(Outbox::new(settings.send_queue, settings.slow_reader)),
                state: State::Open,
                deferred: false,
            },
            going_away,
            settings,
            timer: Box::pin(tokio::time::sleep_until(first)),
            heard: false,
            pinged: false,
        }
    }

    /// A handle that feeds this socket from anywhere without waiting (a publisher's,
    /// say): its messages are written while this socket's owner waits in
    /// [`recv`](Self::recv), in their order, bounded by the send queue.
    pub fn sender(&self) -> Sender {
        self.conn.outbox.sender()
    }

    /// Waits for the next message; `None` once the socket is closed. Meanwhile what
    /// [`Sender`]s fed is written. A breach of the protocol or of a limit closes the
    /// socket with its code (1002, 1007, 1009) and is returned; so is a feed overflow
    /// under [`SlowReader::Close`](super::SlowReader::Close) (1008). Pings are
    /// answered. When the server's shutdown begins the socket is closed with 1001
    /// (going away), and what the peer sends until it answers still comes here. A
    /// peer silent for a whole keep-alive interval (so for one to two of them) is
    /// pinged; silent for another, it is taken for gone: the socket is closed with
    /// 1001 and `None` returned.
    pub async fn recv(&mut self) -> Option<Result<Message, WebSocketError>> {
        loop {
            let io = match self.conn.state {
                State::Closed => return None,
                State::Open => tokio::select! {
                    io = poll_fn(|cx| self.conn.poll_io(cx)) => io,
                    () = self.going_away.wait() => {
                        let _ = self.close(CloseCode::Away, "the server is going away").await;
                        continue;
                    }
                    () = self.timer.as_mut() => {
                        if self.silent_for_an_interval() {
                            self.conn.encode_close(CloseCode::Away, "no answer to a ping");
                            self.finish().await;
                            return None;
                        }
                        continue;
                    }
                },
                State::Closing | State::Failed => tokio::select! {
                    io = poll_fn(|cx| self.conn.poll_io(cx)) => io,
                    () = self.timer.as_mut() => {
                        self.finish().await;
                        return None;
                    }
                },
            };
            if !matches!(io, Io::Fed) {
                self.heard = true;
                self.pinged = false;
            }
            match io {
                Io::Fed => tokio::task::yield_now().await,
                Io::Message(Message::Ping(payload)) => {
                    self.conn.encode_control(Control::Pong, &payload);
                    // Answered at once, whether or not the owner reads again soon.
                    poll_fn(|cx| {
                        let _ = self.conn.poll_flush(cx);
                        Poll::Ready(())
                    })
                    .await;
                    return Some(Ok(Message::Ping(payload)));
                }
                Io::Message(Message::Close(frame)) => {
                    if self.conn.state == State::Open {
                        let code = frame.as_ref().map(|(code, _)| *code);
                        self.conn.encode_close_frame(code, "");
                    }
                    self.finish().await;
                    return Some(Ok(Message::Close(frame)));
                }
                Io::Message(message) => return Some(Ok(message)),
                Io::Violation(violation) => {
                    if self.conn.state == State::Open {
                        self.conn.encode_close(violation.code, violation.reason);
                    }
                    self.conn.state = State::Failed;
                    self.close_by_deadline();
                    // Written before the error returns: an owner that stops at an
                    // error drops the socket next.
                    let _ = self.flush_by_deadline().await;
                    return Some(Err(WebSocketError::Violation {
                        code: violation.code,
                        reason: violation.reason,
                    }));
                }
                Io::Overflow => {
                    // Not waited for: the reader too slow to take its feed is too
                    // slow for this too; the close deadline ends it.
                    self.conn
                        .encode_close(CloseCode::Policy, "reading too slowly for the feed");
                    self.close_by_deadline();
                    return Some(Err(WebSocketError::TooSlow));
                }
                Io::Eof => {
                    self.conn.close();
                    return None;
                }
                Io::Failed(error) => {
                    self.conn.close();
                    return Some(Err(error.into()));
                }
            }
        }
    }

    /// Sends `message` after those queued before it, returning once it is written to
    /// the connection. The socket's owner waits here, so its own messages are never
    /// dropped for a slow reader; a feed goes through a [`Sender`] instead.
    ///
    /// # Errors
    ///
    /// The socket is closed or closing, or the connection failed.
    pub async fn send(&mut self, message: Message) -> Result<(), WebSocketError> {
        if let Message::Close(frame) = message {
            let (code, reason) = frame.unwrap_or((1000, String::new()));
            return self.close_with(Some(code), &reason).await;
        }
        if self.conn.state != State::Open {
            return Err(WebSocketError::Closed);
        }
        let place = self
            .conn
            .outbox
            .push(message, false)
            .map_err(|_| WebSocketError::Closed)?;
        poll_fn(|cx| {
            let flushed = self.conn.poll_flush(cx)?;
            let written = self.conn.outbox.taken() >= place && self.conn.write_buf.is_empty();
            if written || flushed.is_ready() {
                return Poll::Ready(Ok(()));
            }
            Poll::Pending
        })
        .await
        .map_err(WebSocketError::Io)
    }

    /// Starts the close handshake with `code` and `reason` (cut to fit a control
    /// frame); what the peer sends until it answers still comes from
    /// [`recv`](Self::recv), which returns `None` once it has, or after the close
    /// deadline.
    ///
    /// # Errors
    ///
    /// The socket is closed or closing already, or the connection failed.
    pub async fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), WebSocketError> {
        self.close_with(Some(code.into()), reason).await
    }

    async fn close_with(&mut self, code: Option<u16>, reason: &str) -> Result<(), WebSocketError> {
        if self.conn.state != State::Open {
            return Err(WebSocketError::Closed);
        }
        self.conn.encode_close_frame(code, reason);
        self.close_by_deadline();
        Ok(self.flush_by_deadline().await?)
    }

    /// Writes what waits, giving up at the close deadline: a peer that does not read
    /// is ended by [`recv`](Self::recv) then, or by the socket's drop.
    async fn flush_by_deadline(&mut self) -> io::Result<()> {
        let deadline = self.timer.deadline();
        let flushed = poll_fn(|cx| self.conn.poll_flush(cx));
        tokio::time::timeout_at(deadline, flushed)
            .await
            .unwrap_or(Ok(()))
    }

    /// The close handshake ends by the close deadline, answered or not.
    fn close_by_deadline(&mut self) {
        if self.conn.state == State::Open {
            self.conn.state = State::Closing;
        }
        self.conn.outbox.close();
        let deadline = Instant::now() + self.settings.close_timeout;
        self.timer.as_mut().reset(deadline);
    }

    /// Writes what is left (the last close frame), by the close deadline, and ends
    /// the connection: the server closes TCP first (RFC 6455 §7.1.1).
    async fn finish(&mut self) {
        let conn = &mut self.conn;
        let _ = tokio::time::timeout(self.settings.close_timeout, async {
            poll_fn(|cx| conn.poll_flush(cx)).await?;
            conn.stream.shutdown().await
        })
        .await;
        self.conn.close();
    }

    /// The keep-alive timer fired: a peer heard from since is fine; one silent since
    /// is pinged, or taken for gone if it was pinged already. Returns whether it is.
    fn silent_for_an_interval(&mut self) -> bool {
        let interval = self.settings.keep_alive.unwrap_or(NEVER);
        self.timer.as_mut().reset(Instant::now() + interval);
        if std::mem::take(&mut self.heard) {
            return false;
        }
        if self.pinged {
            return true;
        }
        self.pinged = true;
        self.conn.encode_control(Control::Ping, b"");
        false
    }
}

impl Drop for WebSocket {
    fn drop(&mut self) {
        self.conn.outbox.close();
    }
}

impl Conn {
    /// Writes what waits, then reads until a message, a breach or the end.
    fn poll_io(&mut self, cx: &mut Context<'_>) -> Poll<Io> {
        if !self.deferred && self.write_buf.is_empty() && self.outbox.is_waiting() {
            self.deferred = true;
            return Poll::Ready(Io::Fed);
        }
        if let Poll::Ready(Err(error)) = self.poll_flush(cx) {
            return Poll::Ready(Io::Failed(error));
        }
        if self.state == State::Open && self.outbox.overflowed() {
            return Poll::Ready(Io::Overflow);
        }
        loop {
            if self.state != State::Failed {
                match self.reader.next(&mut self.read_buf) {
                    Ok(Some(message)) => return Poll::Ready(Io::Message(message)),
                    Ok(None) => {}
                    Err(violation) => return Poll::Ready(Io::Violation(violation)),
                }
            } else {
                self.read_buf.clear();
            }
            let frame = usize::try_from(self.reader.remaining()).unwrap_or(usize::MAX);
            match ready!(self.poll_read(cx, frame.clamp(READ_ROOM, READ_ROOM_MOST))) {
                Ok(0) => return Poll::Ready(Io::Eof),
                Ok(_) => {}
                Err(error) => return Poll::Ready(Io::Failed(error)),
            }
        }
    }

    /// Reads what the socket has, into `room` bytes made once it has something: a
    /// socket waiting with nothing half-read keeps no read buffer at all.
    fn poll_read(&mut self, cx: &mut Context<'_>, room: usize) -> Poll<io::Result<usize>> {
        if self.stream.poll_read_ready(cx)?.is_pending() {
            if self.read_buf.is_empty() {
                self.read_buf = BytesMut::new();
            }
            return Poll::Pending;
        }
        self.read_buf.reserve(room);
        self.stream.poll_read_into(cx, &mut self.read_buf, room)
    }

    /// Writes the framed bytes, framing queued messages as room allows; ready once
    /// nothing waits.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            while !self.write_buf.is_empty() {
                let written = ready!(Pin::new(&mut self.stream).poll_write(cx, &self.write_buf))?;
                if written == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                self.write_buf.advance(written);
            }
            // All written: a socket between writes keeps no write buffer.
            self.write_buf = BytesMut::new();
            if self.state != State::Open {
                return Poll::Ready(Ok(()));
            }
            self.outbox.register(cx.waker());
            let mut framed = false;
            while self.write_buf.len() < WRITE_BATCH {
                let Some(message) = self.outbox.pop() else {
                    break;
                };
                self.encode(message);
                framed = true;
            }
            self.deferred = false;
            if !framed {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// Frames a queued message, compressing data if that was negotiated.
    fn encode(&mut self, message: Message) {
        let (data, payload) = match message {
            Message::Text(text) => (Data::Text, text.into_bytes()),
            Message::Binary(bytes) => (Data::Binary, bytes),
            Message::Ping(bytes) => return self.encode_control(Control::Ping, &bytes),
            Message::Pong(bytes) => return self.encode_control(Control::Pong, &bytes),
            Message::Close(frame) => {
                let (code, reason) = frame.unwrap_or((1000, String::new()));
                return self.encode_close_frame(Some(code), &reason);
            }
        };
        match &mut self.deflater {
            Some(deflater) => {
                let compressed = deflater.compress(&payload);
                self.frame(OpCode::Data(data), true, &compressed);
            }
            None => self.frame(OpCode::Data(data), false, &payload),
        }
    }

    fn encode_control(&mut self, control: Control, payload: &[u8]) {
        let end = payload.len().min(125);
        self.frame(OpCode::Control(control), false, &payload[..end]);
    }

    fn encode_close(&mut self, code: CloseCode, reason: &str) {
        self.encode_close_frame(Some(code.into()), reason);
    }

    /// Frames a close with `code` (none: an empty close) and as much of `reason` as
    /// fits, whole characters; this side sends nothing after it.
    fn encode_close_frame(&mut self, code: Option<u16>, reason: &str) {
        let mut payload = Vec::with_capacity(125);
        if let Some(code) = code {
            payload.extend(code.to_be_bytes());
            let mut end = reason.len().min(123);
            while !reason.is_char_boundary(end) {
                end -= 1;
            }
            payload.extend_from_slice(&reason.as_bytes()[..end]);
        }
        self.frame(OpCode::Control(Control::Close), false, &payload);
        if self.state == State::Open {
            self.state = State::Closing;
        }
    }

    fn frame(&mut self, opcode: OpCode, compressed: bool, payload: &[u8]) {
        let header = FrameHeader {
            is_final: true,
            rsv1: compressed,
            rsv2: false,
            rsv3: false,
            opcode,
            mask: None,
        };
        header
            .format(payload.len() as u64, &mut (&mut self.write_buf).writer())
            .expect("a header is written to memory");
        self.write_buf.extend_from_slice(payload);
    }

    /// The socket is done: nothing more is read or queued.
    fn close(&mut self) {
        self.state = State::Closed;
        self.outbox.close();
    }
}
