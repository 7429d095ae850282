//! Responses as the connection writes them, and the one thing the HTTP layer knows of
//! what answers requests: [`Respond`].

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use http::StatusCode;
use http::header::{self, HeaderValue};

use super::{Body, Request, Soon};

/// An HTTP response with a Proscenium [`Body`].
pub type Response = http::Response<Body>;

/// A future that yields a response, run on the loop that owns the connection.
pub type LocalResponseFuture = Pin<Box<dyn Future<Output = Response>>>;

/// What answers the requests a connection reads — the app, as the HTTP layer sees it.
pub(crate) trait Respond: Send + Sync + std::fmt::Debug + 'static {
    /// Answers `req`, now or later.
    fn respond(&self, req: Request) -> Soon<Response, LocalResponseFuture>;

    /// Names the route the watchdog noted as `id`, for logs.
    fn label(&self, id: u32) -> String;

    /// Whether `req`'s body goes to the app as it arrives (its route takes a
    /// `BodyStream`), so the request is handed on once its head is read.
    fn streams(&self, _req: &Request) -> bool {
        false
    }
}

/// Why a response has no body of its own; the server renders its error page with it.
#[derive(Debug, Clone)]
pub(crate) struct ErrorDetail(pub(crate) Cow<'static, str>);

/// Returns a bodiless error response the server completes with its error page.
pub(crate) fn error(status: StatusCode, detail: impl Into<Cow<'static, str>>) -> Response {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = status;
    res.extensions_mut().insert(ErrorDetail(detail.into()));
    res
}

/// Returns a bodiless 503 with `Retry-After`, for work refused under overload.
pub(crate) fn unavailable(detail: impl Into<Cow<'static, str>>) -> Response {
    let mut res = error(StatusCode::SERVICE_UNAVAILABLE, detail);
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}
