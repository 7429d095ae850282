//! HTTP/1.1 in the manner of hyper's `proto/h1`: `head` and `chunked` parse, `decode`
//! assembles messages, `encode` writes responses — all free of I/O and unit-tested on
//! byte slices — while `conn` drives a socket with them and `dispatch` hands requests to
//! the application.

mod chunked;
pub(crate) mod conn;
mod decode;
mod dispatch;
mod encode;
mod error;
mod head;

#[cfg(test)]
mod proptests;

use bytes::BytesMut;
use http::Version;

/// Returns the whole answer to a connection refused for overload: 503 with
/// `Retry-After` and the error page, then the server closes.
pub(crate) fn overloaded_response() -> BytesMut {
    let mut res = crate::app::unavailable("every thread is busy; try again shortly");
    dispatch::fill_error_body(&mut res, None);
    let (parts, body) = res.into_parts();
    let body = body.as_bytes().cloned().unwrap_or_default();
    let mut out = BytesMut::new();
    let framing = encode::Framing::Length(body.len() as u64);
    encode::head(
        &mut out,
        parts.status,
        &parts.headers,
        framing,
        false,
        Version::HTTP_11,
    );
    out.extend_from_slice(&body);
    out
}
