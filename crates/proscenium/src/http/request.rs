//! The request a handler receives: the parsed head, the whole body, path parameters
//! and the peer's address.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Extensions, HeaderMap, Method, Uri, Version};

/// An HTTP request with its body already read.
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
    pub(crate) parts: http::request::Parts,
    pub(crate) body: Bytes,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) peer: Option<SocketAddr>,
}

impl Request {
    pub(crate) fn new(parts: http::request::Parts, body: Bytes, peer: Option<SocketAddr>) -> Self {
        Self {
            parts,
            body,
            params: Vec::new(),
            peer,
        }
    }

    /// Returns the request method.
    pub fn method(&self) -> &Method {
        &self.parts.method
    }

    /// Returns the request target.
    pub fn uri(&self) -> &Uri {
        &self.parts.uri
    }

    /// Returns the protocol version.
    pub fn version(&self) -> Version {
        self.parts.version
    }

    /// Returns the header fields, in the order received.
    pub fn headers(&self) -> &HeaderMap {
        &self.parts.headers
    }

    /// Returns the header fields for changing them (middleware does).
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.parts.headers
    }

    /// Returns the request's extensions, typed values middleware attaches.
    pub fn extensions(&self) -> &Extensions {
        &self.parts.extensions
    }

    /// Returns the extensions for changing them.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.parts.extensions
    }

    /// Returns the body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// Returns the raw (still percent-encoded) value of the path parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Returns the path parameters of the matched route, in pattern order.
    pub fn params(&self) -> impl Iterator<Item = (&str, &str)> {
        self.params.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Returns the address of the client, when the request came over a socket.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Splits the request into its head and body.
    pub fn into_parts(self) -> (http::request::Parts, Bytes) {
        (self.parts, self.body)
    }
}

impl From<http::Request<Bytes>> for Request {
    fn from(req: http::Request<Bytes>) -> Self {
        let (parts, body) = req.into_parts();
        Self::new(parts, body, None)
    }
}
