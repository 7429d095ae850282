//! The opening handshake (RFC 6455 §4.2): what a request must say to be switched, and
//! the answer that switches it.

use std::future::Future;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode, Version, header};
use tungstenite::handshake::derive_accept_key;

use super::deflate::Deflate;
use super::outbox::SlowReader;
use super::socket::{Settings, WebSocket};
use crate::app::{FromRequestHead, IntoResponse};
use crate::http::{Request, Response, Upgraded, upgrade};

/// The largest message a socket takes unless its route says otherwise: Pekko's
/// default. It was 64 MiB, so one 64 KiB compressed fragment, never finished, held
/// 63 MiB of inflated bytes (issue 33).
const DEFAULT_MAX_MESSAGE: usize = 256 * 1024;

/// The only version of the protocol there is (RFC 6455 §4.1).
const VERSION: &str = "13";

/// A request to open a WebSocket, its handshake checked: answer it with
/// [`on_upgrade`](Self::on_upgrade).
#[derive(Debug)]
pub struct WebSocketUpgrade {
    /// The client's `Sec-WebSocket-Key`.
    key: HeaderValue,
    settings: Settings,
    /// The client's permessage-deflate offer this server can take, if it made one.
    offer: Option<Deflate>,
    compression: bool,
}

impl WebSocketUpgrade {
    /// Sets the largest message taken (default 256 KiB, as Pekko's; for a compressed
    /// one, its inflated size, counted as it inflates); past it the socket is closed
    /// with 1009. Whatever this says, a message being gathered holds room in the
    /// server's memory budget (`limits.max_buffered_bodies`, which request bodies
    /// share) until the app drops it; a message that cannot get room closes the
    /// socket with 1013 (try again later).
    #[must_use]
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.settings.max_message = bytes;
        self
    }

    /// Sets the largest frame taken (default 16 MiB); past it the socket is closed
    /// with 1009.
    #[must_use]
    pub fn max_frame_size(mut self, bytes: usize) -> Self {
        self.settings.max_frame = bytes;
        self
    }

    /// Sets the keep-alive interval (default 30 s): a peer that sent nothing for a
    /// whole interval (so for one to two of them) is pinged; silent for another, it is
    /// taken for gone and the socket closed. `None` pings never.
    #[must_use]
    pub fn keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.settings.keep_alive = interval;
        self
    }

    /// Bounds the send queue to `bytes` of messages (default 1 MiB) and says what
    /// happens to a reader too slow for what [`Sender`](super::Sender)s feed it
    /// (default [`SlowReader::Close`]). The socket owner's own sends wait for the
    /// connection instead.
    #[must_use]
    pub fn send_queue(mut self, bytes: usize, slow_reader: SlowReader) -> Self {
        self.settings.send_queue = bytes;
        self.settings.slow_reader = slow_reader;
        self
    }

    /// Sets how long a close handshake may take (default 5 s) before the connection is
    /// ended unanswered.
    #[must_use]
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.settings.close_timeout = timeout;
        self
    }

    /// Takes the client's permessage-deflate offer (RFC 7692), if it made one this
    /// server can honour (default off: the compressor and decompressor cost about
    /// 300 KiB a socket, and compressing costs CPU on every message).
    #[must_use]
    pub fn compression(mut self, on: bool) -> Self {
        self.compression = on;
        self
    }

    /// Answers `101 Switching Protocols`, then runs `then` with the socket once the
    /// connection is switched.
    pub fn on_upgrade<F, Fut>(self, then: F) -> Response
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let deflate = self.offer.filter(|_| self.compression);
        let settings = self.settings;
        let mut switching = upgrade("websocket", move |upgraded: Upgraded| async move {
            let (going_away, memory) = (upgraded.going_away(), upgraded.memory());
            let (stream, read) = upgraded.into_parts();
            let socket = WebSocket::new(stream, &read, going_away, settings, deflate, memory);
            // Not kept while the socket is open.
            drop(read);
            then(socket).await;
        });
        let accept = derive_accept_key(self.key.as_bytes());
        let headers = switching.headers_mut();
        headers.insert(
            header::SEC_WEBSOCKET_ACCEPT,
            HeaderValue::from_str(&accept).expect("an accept key is base64"),
        );
        if let Some(deflate) = deflate {
            headers.insert(
                header::SEC_WEBSOCKET_EXTENSIONS,
                HeaderValue::from_str(&deflate.answer()).expect("the answer is ASCII"),
            );
        }
        switching
    }
}

impl FromRequestHead for WebSocketUpgrade {
    type Rejection = WebSocketRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        let headers = req.headers();
        if req.version() != Version::HTTP_11
            || !has_token(headers, &header::CONNECTION, "upgrade")
            || !has_token(headers, &header::UPGRADE, "websocket")
        {
            return Err(WebSocketRejection::NotAnUpgrade);
        }
        if headers
            .get(header::SEC_WEBSOCKET_VERSION)
            .map(HeaderValue::as_bytes)
            != Some(VERSION.as_bytes())
        {
            return Err(WebSocketRejection::Version);
        }
        let key = headers
            .get(header::SEC_WEBSOCKET_KEY)
            .filter(|key| is_key(key.as_bytes()))
            .ok_or(WebSocketRejection::Key)?;
        Ok(Self {
            key: key.clone(),
            settings: Settings {
                max_message: DEFAULT_MAX_MESSAGE,
                max_frame: 16 << 20,
                keep_alive: Some(Duration::from_secs(30)),
                close_timeout: Duration::from_secs(5),
                send_queue: 1 << 20,
                slow_reader: SlowReader::default(),
            },
            offer: Deflate::negotiate(headers),
            compression: false,
        })
    }
}

/// Whether `field`'s comma-separated values include `token` (case-insensitive).
fn has_token(headers: &HeaderMap, field: &header::HeaderName, token: &str) -> bool {
    headers.get_all(field).iter().any(|value| {
        value
            .to_str()
            .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// Whether `key` is 16 bytes in base64: 22 characters of its alphabet and `==`.
fn is_key(key: &[u8]) -> bool {
    key.len() == 24
        && key.ends_with(b"==")
        && key[..22]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
}

/// Why a request could not open a WebSocket; answered with its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebSocketRejection {
    /// Not an HTTP/1.1 request with `Connection: upgrade` and `Upgrade: websocket`:
    /// 426, naming the protocol to ask for.
    #[error("this resource is a WebSocket: ask for `Upgrade: websocket` over HTTP/1.1")]
    NotAnUpgrade,
    /// A `Sec-WebSocket-Version` other than 13: 426, naming 13.
    #[error("only WebSocket version 13 is spoken")]
    Version,
    /// No `Sec-WebSocket-Key`, or not 16 bytes in base64: 400.
    #[error("the Sec-WebSocket-Key is missing or not 16 bytes in base64")]
    Key,
}

impl WebSocketRejection {
    /// Returns the status the client gets.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotAnUpgrade | Self::Version => StatusCode::UPGRADE_REQUIRED,
            Self::Key => StatusCode::BAD_REQUEST,
        }
    }
}

impl IntoResponse for WebSocketRejection {
    fn into_response(self) -> Response {
        let mut res = crate::http::response::error(self.status(), self.to_string());
        let headers = res.headers_mut();
        match self {
            Self::NotAnUpgrade => {
                headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
            }
            Self::Version => {
                headers.insert(
                    header::SEC_WEBSOCKET_VERSION,
                    HeaderValue::from_static(VERSION),
                );
            }
            Self::Key => {}
        }
        res
    }
}
