//! Compression of answers by the request's `Accept-Encoding` (RFC 9110 §8.4, §12.5.3),
//! the same for every protocol: each calls [`compress`] where it takes an answer to
//! send, with the request's `Accept-Encoding` noted before the app took the request.
//!
//! An answer is compressed when the configuration has it on, its status has a body
//! that may be transformed (not 1xx, 204, 206 or 304), it has no `Content-Encoding`
//! or `Content-Range` of its own, nor `Cache-Control: no-transform`, its type is of the
//! list, and its body is at least `min_size` bytes (or of a length not known in
//! advance); then it carries `Vary: Accept-Encoding` whether compressed or not, and
//! is compressed in the coding the client ranks first ([`accept`]). A body in memory
//! is compressed whole (its `Content-Length` replaced); a file or a stream is
//! compressed as it is sent (its length unknown: chunked on HTTP/1.1), a stream's
//! chunks each flushed so that none is held back. A strong `ETag` is made weak: the
//! compressed bytes are another representation (RFC 9110 §8.8.1).
//!
//! A static file's answer carries its [`FileVersion`]: one small enough is compressed
//! whole, once per version and coding, and kept in the server's [`FileCache`] (`cache`).
//!
//! A request with a `Range` is noted as accepting no coding: its answer is the
//! identity's bytes, as ranges of it are. An answer to HEAD announces what GET's
//! would (`Content-Encoding`, `Vary`, the weak `ETag`) but no length, which only
//! compressing the body would tell — unless it is a static file the cache holds.
//!
//! The cheap path: an answer whose body is known to be small, or whose type is not of
//! the list, is left as it is after a comparison or two, allocating nothing.

mod accept;
#[cfg(feature = "compression")]
mod answers;
#[cfg(feature = "compression")]
mod cache;
#[cfg(feature = "compression")]
mod encoder;
#[cfg(not(feature = "compression"))]
mod identity;
#[cfg(feature = "compression")]
mod types;

use http::header::{self, HeaderMap, HeaderValue};

pub(crate) use self::accept::ranked;
#[cfg(feature = "compression")]
pub(crate) use self::answers::{Compression, compress};
#[cfg(not(feature = "compression"))]
pub(crate) use self::identity::{Compression, compress};

/// Adds `Accept-Encoding` to the answer's `Vary`, unless it is there (or `*` is).
pub(crate) fn vary(headers: &mut HeaderMap) {
    let named = headers.get_all(header::VARY).iter().any(|value| {
        value.as_bytes().split(|&b| b == b',').any(|name| {
            let name = name.trim_ascii();
            name == b"*" || name.eq_ignore_ascii_case(b"accept-encoding")
        })
    });
    if !named {
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vary_is_added_once_and_never_beside_a_star() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::VARY,
            HeaderValue::from_static("Origin, Accept-Encoding"),
        );
        vary(&mut headers);
        assert_eq!(headers.get_all(header::VARY).iter().count(), 1);
        headers.insert(header::VARY, HeaderValue::from_static("*"));
        vary(&mut headers);
        assert_eq!(headers.get_all(header::VARY).iter().count(), 1);
        headers.insert(header::VARY, HeaderValue::from_static("origin"));
        vary(&mut headers);
        let all: Vec<_> = headers.get_all(header::VARY).iter().collect();
        assert_eq!(all, ["origin", "accept-encoding"]);
    }
}
