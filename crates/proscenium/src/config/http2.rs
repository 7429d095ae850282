//! `[http2]` in the configuration: HTTP/2's windows and stream limits.

use serde::{Deserialize, Serialize};

/// How the server speaks HTTP/2 (RFC 9113): `[http2]` in the configuration. On by
/// default: over TLS when the client offers `h2` in ALPN, and over cleartext to a
/// client that opens with HTTP/2's preface (prior knowledge, as proxies do). A
/// request's limits (`[limits]`: head, body, in flight) and timeouts apply to every
/// stream as to an HTTP/1.1 request.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config =
///     toml::from_str("[http2]\nmax_concurrent_streams = 64").unwrap();
/// assert!(config.http2.enabled);
/// assert_eq!(config.http2.max_concurrent_streams, 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Http2Spec {
    /// Whether HTTP/2 is spoken at all; off, ALPN offers only `http/1.1` and a
    /// cleartext preface is refused as HTTP/1.1 refuses an unknown version (505).
    pub enabled: bool,
    /// Streams a client may have open at once on one connection
    /// (`SETTINGS_MAX_CONCURRENT_STREAMS`); more are refused (`REFUSED_STREAM`).
    #[serde(deserialize_with = "super::value::number::<_, u32, 1, 1000>")]
    pub max_concurrent_streams: u32,
    /// Bytes of a request body a client may send on a stream before the server has
    /// taken them (`SETTINGS_INITIAL_WINDOW_SIZE`).
    #[serde(
        deserialize_with = "super::value::bytes::within::<_, u32, 65_535, 16_777_216>",
        serialize_with = "super::value::bytes::serialize"
    )]
    pub stream_window: u32,
    /// Bytes of request bodies a client may send on the whole connection before the
    /// server has taken them.
    #[serde(
        deserialize_with = "super::value::bytes::within::<_, u32, 65_535, 67_108_864>",
        serialize_with = "super::value::bytes::serialize"
    )]
    pub connection_window: u32,
    /// The largest frame the server reads (`SETTINGS_MAX_FRAME_SIZE`).
    #[serde(
        deserialize_with = "super::value::bytes::within::<_, u32, 16_384, 16_777_215>",
        serialize_with = "super::value::bytes::serialize"
    )]
    pub max_frame_size: u32,
    /// Bytes of a response the server holds per stream beyond what the client's
    /// window lets out: a reader that does not read holds no more.
    #[serde(
        deserialize_with = "super::value::bytes::within::<_, usize, 16_384, 16_777_216>",
        serialize_with = "super::value::bytes::serialize"
    )]
    pub send_buffer: usize,
}

impl Default for Http2Spec {
    fn default() -> Self {
        Self {
            enabled: cfg!(feature = "http2"),
            // nginx's `http2_max_concurrent_streams`.
            max_concurrent_streams: 128,
            stream_window: 256 * 1024,
            connection_window: 1024 * 1024,
            max_frame_size: 16_384,
            send_buffer: 64 * 1024,
        }
    }
}
