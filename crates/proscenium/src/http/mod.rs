//! The HTTP layer: request, response and body types, the Date cache, the access log,
//! error pages, and the HTTP/1.1 protocol. It knows the app only as a
//! `Respond`: what answers a request and names a route.

pub(crate) mod access_log;
pub(crate) mod body;
pub(crate) mod compress;
pub(crate) mod date;
pub(crate) mod error_page;
pub(crate) mod fields;
pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod intake;
pub(crate) mod invoke;
pub(crate) mod meter;
mod request;
pub(crate) mod request_id;
pub(crate) mod response;
pub(crate) mod spare;
pub(crate) mod trace;
pub(crate) mod upgrade;

/// The target of request spans (`[traces]`): one span a request, at `trace` level so
/// that it is made only where a subscriber asks for it — the OTLP export.
pub(crate) const REQUEST_SPANS: &str = "proscenium::request";

pub use self::body::{Body, BoxError};
pub use self::request::Request;
pub use self::request_id::RequestId;
pub use self::response::{LocalResponseFuture, Response};
pub use self::upgrade::{GoingAway, Upgraded, upgrade};

/// A value ready now, or what to wait on for it: the one shape of every answer that
/// may come at once or later — a handler's reply (`app::Reply`), the app's answer to a
/// connection, a response the connection has still to send.
pub(crate) enum Soon<T, L> {
    /// Ready now.
    Ready(T),
    /// To be waited for.
    Later(L),
}
