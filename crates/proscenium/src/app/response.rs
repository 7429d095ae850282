//! Turning handler results into responses, and the reply a handler gives back.

use std::borrow::Cow;
use std::future::Future;

use bytes::Bytes;
use http::StatusCode;
use serde::Serialize;

use super::then::HandlerOutput;
use crate::http::Body;
pub(super) use crate::http::response::{LocalResponseFuture, Response, error, unavailable};
use crate::rt::BlockingError;

/// Converts a value into a [`Response`].
///
/// Implemented for strings and bytes (200 with a body), [`StatusCode`] (that status with
/// the server's error page when it is an error), [`Json`], [`Html`], `Result`s of
/// responses, and tuples that add a status and [parts](crate::response::IntoResponseParts)
/// (headers, cookie jars) in front of a body.
///
/// # Examples
///
/// ```
/// use proscenium::{IntoResponse, StatusCode};
///
/// let res = (StatusCode::CREATED, [("location", "/users/7")], "made").into_response();
/// assert_eq!(res.status(), StatusCode::CREATED);
/// assert_eq!(res.headers()["location"], "/users/7");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be turned into a response",
    note = "return a string, bytes, `Json<T>`, `Html<T>`, a `StatusCode`, a `Response`, or a tuple `(StatusCode, headers, body)`"
)]
pub trait IntoResponse {
    /// Returns the response.
    fn into_response(self) -> Response;
}

pub(super) fn with_type(body: impl Into<Body>, content_type: &'static str) -> Response {
    let mut res = Response::new(body.into());
    *res.headers_mut() = crate::http::spare::with_content_type(content_type);
    res
}

// Statics, not consts: each names one string wherever it is used (a const's text may be
// copied into each crate that uses it), which is how a kept header table knows its
// type (`spare::with_content_type`).
static TEXT: &str = "text/plain; charset=utf-8";
static OCTETS: &str = "application/octet-stream";
static JSON: &str = "application/json";
static HTML: &str = "text/html; charset=utf-8";

impl IntoResponse for Response {
    fn into_response(self) -> Response {
        self
    }
}

impl IntoResponse for Body {
    fn into_response(self) -> Response {
        Response::new(self)
    }
}

impl IntoResponse for () {
    fn into_response(self) -> Response {
        Response::new(Body::empty())
    }
}

impl IntoResponse for StatusCode {
    fn into_response(self) -> Response {
        let mut res = Response::new(Body::empty());
        *res.status_mut() = self;
        res
    }
}

impl IntoResponse for &'static str {
    // Inlined, as `Outcome::into_reply` is: a plain handler's response is then built
    // where it ends up instead of moved there twice (a response is a few hundred
    // bytes; measured in docs/performance.md).
    #[inline]
    fn into_response(self) -> Response {
        with_type(self, TEXT)
    }
}

impl IntoResponse for String {
    fn into_response(self) -> Response {
        with_type(self, TEXT)
    }
}

impl IntoResponse for Cow<'static, str> {
    fn into_response(self) -> Response {
        match self {
            Cow::Borrowed(s) => s.into_response(),
            Cow::Owned(s) => s.into_response(),
        }
    }
}

impl IntoResponse for Bytes {
    fn into_response(self) -> Response {
        with_type(self, OCTETS)
    }
}

impl IntoResponse for Vec<u8> {
    fn into_response(self) -> Response {
        with_type(self, OCTETS)
    }
}

impl IntoResponse for &'static [u8] {
    fn into_response(self) -> Response {
        with_type(self, OCTETS)
    }
}

impl<T: IntoResponse, E: IntoResponse> IntoResponse for Result<T, E> {
    fn into_response(self) -> Response {
        self.map_or_else(IntoResponse::into_response, IntoResponse::into_response)
    }
}

impl<T: IntoResponse> IntoResponse for (StatusCode, T) {
    fn into_response(self) -> Response {
        let mut res = self.1.into_response();
        *res.status_mut() = self.0;
        res
    }
}

/// A full queue or a closing pool is 503 with `Retry-After`; a panic or a missing pool
/// is 500, logged.
impl IntoResponse for BlockingError {
    fn into_response(self) -> Response {
        match self {
            Self::QueueFull | Self::Closed => unavailable(self.to_string()),
            Self::Panicked(msg) => {
                tracing::error!("blocking handler panicked: {msg}");
                error(StatusCode::INTERNAL_SERVER_ERROR, "the handler failed")
            }
            Self::NoSuchPool(_) => {
                tracing::error!("{self}");
                error(StatusCode::INTERNAL_SERVER_ERROR, "the handler failed")
            }
        }
    }
}

/// A JSON body: a response serialized with `serde_json`, or a request body extractor.
///
/// # Examples
///
/// ```
/// use proscenium::{IntoResponse, Json};
///
/// let res = Json(serde_json::json!({"message": "Hello, World!"})).into_response();
/// assert_eq!(res.headers()["content-type"], "application/json");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(bytes) => with_type(bytes, JSON),
            Err(e) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("JSON encoding failed: {e}"),
            ),
        }
    }
}

/// An HTML body (`text/html; charset=utf-8`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Html<T>(pub T);

impl<T: Into<Body>> IntoResponse for Html<T> {
    fn into_response(self) -> Response {
        with_type(self.0, HTML)
    }
}

/// What a handler or middleware gives back: a response now, or a future of one.
///
/// Plain handlers answer at once and cost no allocation; async handlers answer later.
/// Middleware uses [`Reply::map`] to work on the response either way.
pub struct Reply(pub(crate) ReplyKind);

pub(crate) type ReplyKind = crate::http::Soon<Response, LocalResponseFuture>;

impl Reply {
    /// Returns a reply that is ready now.
    pub fn ready(res: impl IntoResponse) -> Self {
        Self(ReplyKind::Ready(res.into_response()))
    }

    /// Returns a reply that `future` will produce.
    pub fn later<F>(future: F) -> Self
    where
        F: Future + 'static,
        F::Output: HandlerOutput,
    {
        Self(ReplyKind::Later(Box::pin(async move {
            future
                .await
                .into_outcome()
                .into_reply()
                .into_response()
                .await
        })))
    }

    /// Returns a reply whose response `f` transforms, now or when it arrives.
    pub fn map(self, f: impl FnOnce(Response) -> Response + 'static) -> Self {
        match self.0 {
            ReplyKind::Ready(res) => Self(ReplyKind::Ready(f(res))),
            ReplyKind::Later(fut) => Self(ReplyKind::Later(Box::pin(async move { f(fut.await) }))),
        }
    }

    /// Returns the response, awaiting it if it is not ready.
    pub async fn into_response(self) -> Response {
        match self.0 {
            ReplyKind::Ready(res) => res,
            ReplyKind::Later(fut) => fut.await,
        }
    }
}

/// `reply.await` is the response, as [`Reply::into_response`] gives it.
impl std::future::IntoFuture for Reply {
    type Output = Response;
    type IntoFuture = ReplyFuture;

    fn into_future(self) -> ReplyFuture {
        ReplyFuture(Some(self.0))
    }
}

/// The future of a [`Reply`]'s response (`reply.await`).
pub struct ReplyFuture(Option<ReplyKind>);

impl Future for ReplyFuture {
    type Output = Response;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Response> {
        match &mut self.0 {
            Some(ReplyKind::Later(fut)) => fut.as_mut().poll(cx),
            ready => match ready.take() {
                Some(ReplyKind::Ready(res)) => std::task::Poll::Ready(res),
                _ => panic!("a reply's future polled after it answered"),
            },
        }
    }
}

impl std::fmt::Debug for ReplyFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplyFuture")
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ReplyKind::Ready(res) => f.debug_tuple("Reply::Ready").field(&res.status()).finish(),
            ReplyKind::Later(_) => f.write_str("Reply::Later"),
        }
    }
}
