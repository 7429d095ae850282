//! The request a handler receives: the parsed head, the whole body, path parameters
//! and the peer's address.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::sync::OnceLock;

use bytes::Bytes;
use http::{Extensions, HeaderMap, Method, Uri, Version};

use super::fields::Fields;
use super::request_id::RequestId;

/// An HTTP request with its body already read.
///
/// The request lives in one heap allocation, so passing it from the parser through
/// middleware and routing to the handler moves a pointer, not some 300 bytes each time
/// (moves were a large part of the pipelined request path: docs/performance.md). The
/// allocation is kept on its thread for the next request.
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
    /// Always there; taken out only by `drop`, to keep its allocation.
    inner: ManuallyDrop<Box<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    method: Method,
    uri: Uri,
    version: Version,
    extensions: Extensions,
    /// The header table, built from `fields` the first time it is asked for.
    headers: OnceLock<HeaderMap>,
    /// The header fields as parsed, for a request that came over a connection.
    fields: Option<Fields>,
    body: Bytes,
    params: Vec<(String, String)>,
    peer: Option<SocketAddr>,
    id: Option<RequestId>,
}

impl Request {
    pub(crate) fn new(parts: http::request::Parts, body: Bytes, peer: Option<SocketAddr>) -> Self {
        let mut inner = spare();
        inner.method = parts.method;
        inner.uri = parts.uri;
        inner.version = parts.version;
        inner.extensions = parts.extensions;
        inner.headers = OnceLock::from(parts.headers);
        inner.body = body;
        inner.peer = peer;
        // Kept across `into_parts` (an id is an extension there).
        inner.id = inner.extensions.remove::<RequestId>();
        Self::boxed(inner)
    }

    /// A request parsed from a connection: its header table is built from `fields` when
    /// a handler or middleware first asks for it.
    pub(crate) fn parsed(method: Method, uri: Uri, version: Version, fields: Fields) -> Self {
        let mut inner = spare();
        inner.method = method;
        inner.uri = uri;
        inner.version = version;
        inner.fields = Some(fields);
        Self::boxed(inner)
    }

    fn boxed(inner: Box<Inner>) -> Self {
        Self {
            inner: ManuallyDrop::new(inner),
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
        &self.inner.method
    }

    /// Returns the request target.
    pub fn uri(&self) -> &Uri {
        &self.inner.uri
    }

    /// Returns the protocol version.
    pub fn version(&self) -> Version {
        self.inner.version
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
        &self.inner.extensions
    }

    /// Returns the extensions for changing them.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.inner.extensions
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

    /// Returns the request's id (`[request_id]`, on by default), when it came over a
    /// connection.
    pub fn id(&self) -> Option<&RequestId> {
        self.inner.id.as_ref()
    }

    pub(crate) fn set_id(&mut self, id: RequestId) {
        self.inner.id = Some(id);
    }

    /// Returns the address of the client, when the request came over a socket.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.inner.peer
    }

    /// Splits the request into its head and body; its id goes into the extensions.
    pub fn into_parts(mut self) -> (http::request::Parts, Bytes) {
        let inner = &mut **self.inner;
        if let Some(id) = inner.id.take() {
            inner.extensions.insert(id);
        }
        let mut parts = http::Request::new(()).into_parts().0;
        parts.method = std::mem::take(&mut inner.method);
        parts.uri = std::mem::take(&mut inner.uri);
        parts.version = inner.version;
        parts.extensions = std::mem::take(&mut inner.extensions);
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

impl Drop for Request {
    /// Keeps the header table, if one was built (`http::spare`), and the allocation for
    /// a later request on this thread.
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if let Some(headers) = self.inner.headers.take() {
            super::spare::keep(headers);
        }
        // SAFETY: `inner` is not used again: this is the request's drop.
        keep(unsafe { ManuallyDrop::take(&mut self.inner) });
    }
}

thread_local! {
    /// A finished request's allocation, emptied, for the next request on this thread.
    /// It was the one allocation on a plaintext request's path; and a request is
    /// filled in field by field, where building one and moving it into its box copied
    /// it whole (measured in docs/performance.md).
    static SPARE: Cell<Option<Box<Inner>>> = const { Cell::new(None) };
}

/// The thread's spare request, empty, or a new one.
fn spare() -> Box<Inner> {
    SPARE
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Lets go of what `inner` holds (the head's buffer it shares above all) and keeps it
/// for the next request.
fn keep(mut inner: Box<Inner>) {
    // Each field either let go of here or replaced by every request made (the header
    // table has been taken, the method and version are set).
    let Inner {
        method: _,
        uri,
        version: _,
        extensions,
        headers: _,
        fields,
        body,
        params,
        peer,
        id,
    } = &mut *inner;
    *uri = Uri::default();
    extensions.clear();
    *fields = None;
    *body = Bytes::new();
    params.clear();
    *peer = None;
    *id = None;
    // In the thread's teardown it is freed instead.
    let _ = SPARE.try_with(|spare| spare.set(Some(inner)));
}

impl From<http::Request<Bytes>> for Request {
    fn from(req: http::Request<Bytes>) -> Self {
        let (parts, body) = req.into_parts();
        Self::new(parts, body, None)
    }
}
