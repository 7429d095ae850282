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

mod conn;
mod rewind;
mod send;
mod stream;

pub(crate) use self::conn::serve;

/// What a client that speaks HTTP/2 in cleartext opens with: the start of its preface,
/// up to where HTTP/1.1's reader would see a whole head (RFC 9113 §3.4).
pub(crate) const PREFACE_HEAD: &[u8] = b"PRI * HTTP/2.0\r\n\r\n";

/// ALPN's name for HTTP/2 over TLS.
pub(crate) const ALPN: &[u8] = b"h2";
