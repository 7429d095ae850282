//! The opening handshake (RFC 6455 §4.2): what a request must say to be switched, and
//! the answer that switches it.

use std::future::Future;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode, Version, header};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::socket::WebSocket;
use crate::app::{FromRequestHead, IntoResponse};
use crate::http::{Request, Response, Upgraded, upgrade};

/// The only version of the protocol there is (RFC 6455 §4.1).
const VERSION: &str = "13";

/// A request to open a WebSocket, its handshake checked: answer it with
/// [`on_upgrade`](Self::on_upgrade).
#[derive(Debug)]
pub struct WebSocketUpgrade {
    /// The client's `Sec-WebSocket-Key`.
    key: HeaderValue,
    config: WebSocketConfig,
    keep_alive: Option<Duration>,
}

/// How long a peer may be silent before it is pinged, by default.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

impl WebSocketUpgrade {
    /// Sets the largest message taken (default 64 MiB); past it the socket is closed
    /// with 1009.
    #[must_use]
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.config = self.config.max_message_size(Some(bytes));
        self
    }

    /// Sets the largest frame taken (default 16 MiB); past it the socket is closed
    /// with 1009.
    #[must_use]
    pub fn max_frame_size(mut self, bytes: usize) -> Self {
        self.config = self.config.max_frame_size(Some(bytes));
        self
    }

    /// Sets the keep-alive interval (default 30 s): a peer that sent nothing for a
    /// whole interval (so for one to two of them) is pinged; silent for another, it is
    /// taken for gone and the socket closed. `None` pings never.
    #[must_use]
    pub fn keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.keep_alive = interval;
        self
    }

    /// Answers `101 Switching Protocols`, then runs `then` with the socket once the
    /// connection is switched.
    pub fn on_upgrade<F, Fut>(self, then: F) -> Response
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let (config, keep_alive) = (self.config, self.keep_alive);
        let mut switching = upgrade("websocket", move |upgraded: Upgraded| async move {
            let going_away = upgraded.going_away();
            let (stream, read) = upgraded.into_parts();
            let stream = WebSocketStream::from_partially_read(
                stream,
                read.to_vec(),
                Role::Server,
                Some(config),
            )
            .await;
            then(WebSocket::new(stream, going_away, keep_alive)).await;
        });
        let accept = derive_accept_key(self.key.as_bytes());
        switching.headers_mut().insert(
            header::SEC_WEBSOCKET_ACCEPT,
            HeaderValue::from_str(&accept).expect("an accept key is base64"),
        );
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
            config: WebSocketConfig::default(),
            keep_alive: Some(KEEP_ALIVE),
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
