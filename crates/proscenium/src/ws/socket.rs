//! An open WebSocket: messages in and out over tungstenite's protocol, and the close
//! codes its failures are answered with.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode as Code;

use crate::http::GoingAway;

/// How far off a timer that is not to fire is set: a year.
const NEVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// A WebSocket message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Text (checked as UTF-8 on the way in).
    Text(String),
    /// Bytes.
    Binary(Bytes),
    /// A ping; the socket answers it by itself.
    Ping(Bytes),
    /// A pong.
    Pong(Bytes),
    /// The peer closes, with its code and reason if it gave them.
    Close(Option<(u16, String)>),
}

/// Close codes the server sends (RFC 6455 §7.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseCode {
    /// 1000: done.
    Normal,
    /// 1001: the server is going away.
    Away,
    /// 1002: the peer broke the protocol.
    Protocol,
    /// 1007: text that is not UTF-8.
    Invalid,
    /// 1008: the peer broke a policy (a reader too slow, say).
    Policy,
    /// 1009: a frame or message past the limit.
    Size,
    /// 1011: the server failed.
    Error,
}

impl CloseCode {
    fn code(self) -> Code {
        match self {
            Self::Normal => Code::Normal,
            Self::Away => Code::Away,
            Self::Protocol => Code::Protocol,
            Self::Invalid => Code::Invalid,
            Self::Policy => Code::Policy,
            Self::Size => Code::Size,
            Self::Error => Code::Error,
        }
    }
}

/// Why a socket failed; the peer has been sent the close code it calls for.
#[derive(Debug, thiserror::Error)]
#[error("websocket: {0}")]
pub struct WebSocketError(#[from] Error);

/// An open WebSocket on a switched connection.
#[derive(Debug)]
pub struct WebSocket {
    stream: WebSocketStream<TcpStream>,
    /// Set when the server's shutdown begins.
    going_away: GoingAway,
    /// Whether this side has sent its close frame.
    closed: bool,
    /// After this long without a frame from the peer it is pinged; after as long
    /// again, taken for gone.
    keep_alive: Option<Duration>,
    /// Fires every keep-alive interval; armed once, re-armed when it fires — never per
    /// message (a timer registered and dropped per message would cost each of them).
    timer: Pin<Box<Sleep>>,
    /// Whether a frame has come since the timer last fired.
    heard: bool,
    /// Whether a ping is out and nothing has come since.
    pinged: bool,
}

impl WebSocket {
    pub(super) fn new(
        stream: WebSocketStream<TcpStream>,
        going_away: GoingAway,
        keep_alive: Option<Duration>,
    ) -> Self {
        let first = Instant::now() + keep_alive.unwrap_or(NEVER);
        Self {
            stream,
            going_away,
            closed: false,
            keep_alive,
            timer: Box::pin(tokio::time::sleep_until(first)),
            heard: false,
            pinged: false,
        }
    }

    /// The keep-alive timer fired: a peer heard from since is fine; one silent since
    /// is pinged, or taken for gone if it was pinged already. Returns whether it is.
    async fn silent_for_an_interval(&mut self) -> bool {
        let interval = self.keep_alive.unwrap_or(NEVER);
        self.timer.as_mut().reset(Instant::now() + interval);
        if std::mem::take(&mut self.heard) {
            return false;
        }
        if self.pinged {
            return true;
        }
        self.pinged = true;
        let _ = self.stream.send(Wire::Ping(Bytes::new())).await;
        false
    }

    /// Waits for the next message; `None` once the socket is closed. A breach of the
    /// protocol or of a limit closes the socket with its code (1002, 1007, 1009) and
    /// is returned. When the server's shutdown begins the socket is closed with 1001
    /// (going away), and what the peer sends until it answers still comes here. A
    /// peer silent for a whole keep-alive interval (so for one to two of them) is
    /// pinged; silent for another, it is taken for gone: the socket is closed with
    /// 1001 and `None` returned.
    pub async fn recv(&mut self) -> Option<Result<Message, WebSocketError>> {
        loop {
            let next = if self.closed {
                self.stream.next().await
            } else {
                tokio::select! {
                    next = self.stream.next() => next,
                    () = self.going_away.wait() => {
                        let _ = self.close(CloseCode::Away, "the server is going away").await;
                        continue;
                    }
                    () = self.timer.as_mut() => {
                        if self.silent_for_an_interval().await {
                            let _ = self.close(CloseCode::Away, "no answer to a ping").await;
                            return None;
                        }
                        continue;
                    }
                }
            };
            self.heard = true;
            self.pinged = false;
            match next? {
                Ok(message) => {
                    if let Some(message) = from_wire(message) {
                        return Some(Ok(message));
                    }
                }
                Err(error) => {
                    if let Some(code) = close_code(&error) {
                        let _ = self.close(code, "").await;
                    }
                    return Some(Err(error.into()));
                }
            }
        }
    }

    /// Sends `message`.
    ///
    /// # Errors
    ///
    /// The socket is closed, or the connection failed.
    pub async fn send(&mut self, message: Message) -> Result<(), WebSocketError> {
        Ok(self.stream.send(to_wire(message)).await?)
    }

    /// Starts the close handshake with `code` and `reason`; what the peer sends until
    /// it answers still comes from [`recv`](Self::recv).
    ///
    /// # Errors
    ///
    /// The socket is closed already, or the connection failed.
    pub async fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), WebSocketError> {
        self.closed = true;
        let frame = CloseFrame {
            code: code.code(),
            reason: reason.into(),
        };
        Ok(self.stream.close(Some(frame)).await?)
    }
}

/// The close code a failure calls for, if the peer is still there to be told.
fn close_code(error: &Error) -> Option<CloseCode> {
    match error {
        Error::Capacity(CapacityError::MessageTooLong { .. } | CapacityError::TooManyHeaders) => {
            Some(CloseCode::Size)
        }
        Error::Utf8(_) => Some(CloseCode::Invalid),
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => None,
        Error::Protocol(_) => Some(CloseCode::Protocol),
        _ => None,
    }
}

type Wire = tokio_tungstenite::tungstenite::Message;

fn from_wire(message: Wire) -> Option<Message> {
    Some(match message {
        Wire::Text(text) => Message::Text(text.as_str().to_owned()),
        Wire::Binary(bytes) => Message::Binary(bytes),
        Wire::Ping(bytes) => Message::Ping(bytes),
        Wire::Pong(bytes) => Message::Pong(bytes),
        Wire::Close(frame) => {
            Message::Close(frame.map(|f| (u16::from(f.code), f.reason.as_str().to_owned())))
        }
        // A raw frame is what a writer sends, never what a reader gets.
        Wire::Frame(_) => return None,
    })
}

fn to_wire(message: Message) -> Wire {
    match message {
        Message::Text(text) => Wire::text(text),
        Message::Binary(bytes) => Wire::Binary(bytes),
        Message::Ping(bytes) => Wire::Ping(bytes),
        Message::Pong(bytes) => Wire::Pong(bytes),
        Message::Close(frame) => Wire::Close(frame.map(|(code, reason)| CloseFrame {
            code: Code::from(code),
            reason: reason.into(),
        })),
    }
}
