//! What crosses a WebSocket: messages, text known to be UTF-8, and close codes.

use std::fmt;
use std::ops::Deref;

use bytes::Bytes;
use tungstenite::Utf8Bytes;

/// A WebSocket message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Text (checked as UTF-8 on the way in).
    Text(Text),
    /// Bytes.
    Binary(Bytes),
    /// A ping; the socket answers it by itself.
    Ping(Bytes),
    /// A pong.
    Pong(Bytes),
    /// The peer closes, with its code and reason if it gave them.
    Close(Option<(u16, String)>),
}

impl Message {
    /// A text message.
    pub fn text(text: impl Into<Text>) -> Self {
        Self::Text(text.into())
    }

    /// A binary message.
    pub fn binary(bytes: impl Into<Bytes>) -> Self {
        Self::Binary(bytes.into())
    }
}

/// UTF-8 text in shared bytes: cloning it (to send one message to many sockets) copies
/// nothing.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(Utf8Bytes);

impl Text {
    /// Text of `bytes`, if they are UTF-8 (shared, not copied).
    pub(crate) fn from_utf8(bytes: Bytes) -> Option<Self> {
        Utf8Bytes::try_from(bytes).ok().map(Self)
    }

    /// Returns the text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Returns the text's bytes, shared.
    pub fn into_bytes(self) -> Bytes {
        self.0.into()
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Self(text.into())
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Self(text.into())
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
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
    /// 1007: text that is not UTF-8, or a compressed message that does not inflate.
    Invalid,
    /// 1008: the peer broke a policy (a reader too slow, say).
    Policy,
    /// 1009: a frame or message past the limit.
    Size,
    /// 1011: the server failed.
    Error,
    /// 1013: try again later — the server has no room for a message now (its memory
    /// budget is spent), though the message is within the socket's limit.
    Again,
}

impl From<CloseCode> for u16 {
    fn from(code: CloseCode) -> Self {
        match code {
            CloseCode::Normal => 1000,
            CloseCode::Away => 1001,
            CloseCode::Protocol => 1002,
            CloseCode::Invalid => 1007,
            CloseCode::Policy => 1008,
            CloseCode::Size => 1009,
            CloseCode::Error => 1011,
            CloseCode::Again => 1013,
        }
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", u16::from(*self))
    }
}
