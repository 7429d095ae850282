//! The request a handler receives: the parsed head, the whole body, path parameters
//! and the peer's address.

use std::net::SocketAddr;
use std::sync::OnceLock;

use bytes::Bytes;
use http::{Extensions, HeaderMap, Method, Uri, Version};

use super::fields::Fields;

/// An HTTP request with its body already read.
///
/// The request lives in one heap allocation, so passing it from the parser through
/// middleware and routing to the handler moves a pointer, not some 300 bytes each time
/// (moves were a large part of the pipelined request path: docs/performance.md).
///
/// # Examples
///
/// ```
/// let req = proscenium::Request::from(http::Request::new(bytes::Bytes::from("hi")));
/// assert_eq!(req.method(), http::Method::GET);
/// assert_eq!(&req.body()[..], b"hi");
/// ```
#[derive(Debug)]
pub struct Request {
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Method, target, version and extensions; the header table is in `headers`.
    parts: http::request::Parts,
    /// The header table, built from `fields` the first time it is asked for.
    headers: OnceLock<HeaderMap>,
    /// The header fields as parsed, for a request that came over a connection.
    fields: Option<Fields>,
    body: Bytes,
    params: Vec<(String, String)>,
    peer: Option<SocketAddr>,
}

impl Request {
    pub(crate) fn new(
        mut parts: http::request::Parts,
        body: Bytes,
        peer: Option<SocketAddr>,
    ) -> Self {
        let headers = OnceLock::from(std::mem::take(&mut parts.headers));
        Self::with(parts, headers, None, body, peer)
    }

    /// A request parsed from a connection: its header table is built from `fields` when
    /// a handler or middleware first asks for it.
    pub(crate) fn parsed(parts: http::request::Parts, fields: Fields) -> Self {
        Self::with(parts, OnceLock::new(), Some(fields), Bytes::new(), None)
    }

    fn with(
        parts: http::request::Parts,
        headers: OnceLock<HeaderMap>,
        fields: Option<Fields>,
        body: Bytes,
        peer: Option<SocketAddr>,
    ) -> Self {
        Self {
            inner: Box::new(Inner {
                parts,
                headers,
                fields,
                body,
                params: Vec::new(),
                peer,
            }),
        }
    }

    pub(crate) fn set_body(&mut self, body: Bytes) {
        self.inner.body = body;
    }

    pub(crate) fn set_peer(&mut self, peer: SocketAddr) {
        self.inner.peer = Some(peer);
    }

    pub(crate) fn set_params(&mut self, params: Vec<(String, String)>) {
        self.inner.params = params;
    }

    pub(crate) fn raw_params(&self) -> &[(String, String)] {
        &self.inner.params
    }

    /// Returns the request method.
    pub fn method(&self) -> &Method {
        &self.inner.parts.method
    }

    /// Returns the request target.
    pub fn uri(&self) -> &Uri {
        &self.inner.parts.uri
    }

    /// Returns the protocol version.
    pub fn version(&self) -> Version {
        self.inner.parts.version
    }

    /// Returns the header fields, in the order received.
    pub fn headers(&self) -> &HeaderMap {
        let inner = &*self.inner;
        inner.headers.get_or_init(|| build(inner.fields.as_ref()))
    }

    /// Returns the header fields for changing them (middleware does).
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        self.headers();
        self.inner
            .headers
            .get_mut()
            .expect("`headers` has built the table")
    }

    /// Returns the request's extensions, typed values middleware attaches.
    pub fn extensions(&self) -> &Extensions {
        &self.inner.parts.extensions
    }

    /// Returns the extensions for changing them.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.inner.parts.extensions
    }

    /// Returns the body.
    pub fn body(&self) -> &Bytes {
        &self.inner.body
    }

    /// Returns the raw (still percent-encoded) value of the path parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.inner
            .params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Returns the path parameters of the matched route, in pattern order.
    pub fn params(&self) -> impl Iterator<Item = (&str, &str)> {
        self.inner
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Returns the address of the client, when the request came over a socket.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.inner.peer
    }

    /// Splits the request into its head and body.
    pub fn into_parts(mut self) -> (http::request::Parts, Bytes) {
        let inner = &mut *self.inner;
        let mut parts = std::mem::replace(&mut inner.parts, empty_parts());
        parts.headers = inner
            .headers
            .take()
            .unwrap_or_else(|| build(inner.fields.as_ref()));
        (parts, std::mem::take(&mut inner.body))
    }
}

/// The header table of `fields`, or an empty one.
fn build(fields: Option<&Fields>) -> HeaderMap {
    fields.map_or_else(HeaderMap::new, Fields::to_map)
}

/// Head parts with nothing in them (and nothing allocated).
fn empty_parts() -> http::request::Parts {
    http::Request::new(()).into_parts().0
}

impl Drop for Request {
    /// Keeps the header table, if one was built, for a later request on this thread
    /// (`http::spare`).
    fn drop(&mut self) {
        if let Some(headers) = self.inner.headers.take() {
            super::spare::keep(headers);
        }
    }
}

impl From<http::Request<Bytes>> for Request {
    fn from(req: http::Request<Bytes>) -> Self {
        let (parts, body) = req.into_parts();
        Self::new(parts, body, None)
    }
}
