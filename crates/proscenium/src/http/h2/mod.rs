//! HTTP/2 (RFC 9113) over the `h2` crate's frame layer, which keeps the protocol's
//! state, flow control and HPACK and bounds what a client can make the server hold
//! (its defences against rapid resets, CONTINUATION floods and the like are the
//! ones hyper relies on). `conn` serves a connection — the handshake, its streams
//! as tasks on the connection's loop or thread, GOAWAY at shutdown and after the idle
//! timeout — `stream` one request on a stream, the app called as HTTP/1.1 calls it
//! (`http::invoke`), and `send` its answer as the client's window lets it out.
//!
//! Under the thread models the connection runs on the thread of upgraded connections
//! (`rt/upgraded.rs`), which runs no handler: `http::invoke` hands each stream's call
//! to a request thread (`rt::hand_off`), and the answer comes back to the stream.
//!
//! A connection comes here from HTTP/1.1's: when TLS agreed on `h2` (ALPN), or when
//! its first bytes are HTTP/2's cleartext preface (prior knowledge).

#[cfg(feature = "http2")]
mod conn;
#[cfg(feature = "http2")]
mod rewind;
#[cfg(feature = "http2")]
mod send;
#[cfg(feature = "http2")]
mod stream;

#[cfg(feature = "http2")]
pub(crate) use self::conn::serve;

/// The stand-in without the `http2` feature, where `[http2] enabled` defaults to off
/// and is refused on, so no connection comes here: one that did would be closed.
#[cfg(not(feature = "http2"))]
pub(crate) async fn serve(
    _: crate::transport::Stream,
    _: bytes::Bytes,
    _: std::net::SocketAddr,
    _: std::rc::Rc<crate::http::h1::Http1Loop>,
) {
}

/// What a client that speaks HTTP/2 in cleartext opens with: the start of its preface,
/// up to where HTTP/1.1's reader would see a whole head (RFC 9113 §3.4).
pub(crate) const PREFACE_HEAD: &[u8] = b"PRI * HTTP/2.0\r\n\r\n";

/// ALPN's name for HTTP/2 over TLS.
pub(crate) const ALPN: &[u8] = b"h2";
