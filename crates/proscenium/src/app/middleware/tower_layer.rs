//! tower layers as middleware: `App::layer(CorsLayer::permissive())`.
//!
//! The layer wraps a [`NextService`], the rest of the app as a tower service. For each
//! request the app's [`Request`] becomes an `http::Request<Body>` (its whole body as a
//! [`Body`] of bytes), carrying the request's `Next` and peer address in its
//! extensions; the layer's service answers it, and the inner `NextService` takes them
//! back out to run the rest of the app. The layer's response body becomes a
//! [`Body`] again: as it is when the layer left the app's body alone, else relayed
//! ([`Body::from_http_body`]).

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use tower::{Service, ServiceExt};

use super::{Middleware, Next};
use crate::app::response::{Reply, Response, error};
use crate::http::{Body, BoxError, Request};

/// What [`App::layer`](crate::App::layer) takes: a [`Middleware`] (`M` is
/// [`ViaMiddleware`]) or a `tower::Layer` over a [`NextService`] whose service speaks
/// `http` types (`M` is [`ViaTower`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither middleware nor a tower layer the app can take",
    note = "`App::layer` takes a `Middleware` (`Fn(Request, Next<'_>) -> Reply`, `from_fn(...)`) or a `tower::Layer` whose service takes `http::Request<Body>` and answers an `http::Response` with an `http_body::Body`"
)]
pub trait IntoMiddleware<M> {
    /// Returns the middleware, boxed for the app's chain.
    fn into_middleware(self) -> Arc<dyn Middleware>;
}

/// Marks [`IntoMiddleware`] for a [`Middleware`].
#[derive(Debug)]
pub enum ViaMiddleware {}

/// Marks [`IntoMiddleware`] for a `tower::Layer`.
#[derive(Debug)]
pub enum ViaTower {}

impl<T: Middleware> IntoMiddleware<ViaMiddleware> for T {
    fn into_middleware(self) -> Arc<dyn Middleware> {
        Arc::new(self)
    }
}

/// A tower layer's service that can wrap an app's routes: it takes the request as
/// `http` types with a [`Body`], and answers with any `http_body::Body`.
pub trait LayerService:
    Service<
        http::Request<Body>,
        Response = http::Response<Self::ResponseBody>,
        Future: 'static,
        Error: Into<BoxError>,
    > + Clone
    + Send
    + Sync
    + 'static
{
    /// The body of its responses.
    type ResponseBody: http_body::Body<Data: Into<Bytes>, Error: Into<BoxError>> + Send + 'static;
}

impl<S, B> LayerService for S
where
    S: Service<http::Request<Body>, Response = http::Response<B>> + Clone + Send + Sync + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    type ResponseBody = B;
}

impl<L> IntoMiddleware<ViaTower> for L
where
    L: tower::Layer<NextService, Service: LayerService>,
{
    fn into_middleware(self) -> Arc<dyn Middleware> {
        Arc::new(Layered {
            service: self.layer(NextService(())),
        })
    }
}

/// A tower layer's service, as middleware.
struct Layered<S> {
    service: S,
}

/// What a request carries through a tower layer, in its extensions, for the
/// [`NextService`] inside to go on with.
#[derive(Clone)]
struct Carried {
    next: Next<'static>,
    peer: Option<SocketAddr>,
}

impl<S: LayerService> Middleware for Layered<S> {
    fn call(&self, req: Request, next: Next<'_>) -> Reply {
        let peer = req.peer_addr();
        let (mut parts, body) = req.into_parts();
        parts.extensions.insert(Carried {
            next: next.into_owned(),
            peer,
        });
        let req = http::Request::from_parts(parts, Body::from(body));
        let service = self.service.clone();
        Reply::later(async move {
            match service.oneshot(req).await {
                Ok(res) => res.map(into_body),
                Err(e) => {
                    let e: BoxError = e.into();
                    tracing::error!("a tower layer failed: {e}");
                    error(StatusCode::INTERNAL_SERVER_ERROR, "middleware failed")
                }
            }
        })
    }
}

/// Returns `body` as a [`Body`]: itself when it is one (a layer that left the app's
/// body alone: a file is still sent with `sendfile`), else relaying its frames.
fn into_body<B>(body: B) -> Body
where
    B: http_body::Body + Send + 'static,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = Some(body);
    match (&mut body as &mut dyn Any).downcast_mut::<Option<Body>>() {
        Some(same) => same.take().unwrap_or_default(),
        None => body.map(Body::from_http_body).unwrap_or_default(),
    }
}

/// The rest of an app after a tower layer: the service every layer given to
/// [`App::layer`](crate::App::layer) wraps.
///
/// It answers the requests the layer passes on, which carry (in their extensions) the
/// way on through the app. A request the layer made itself, or whose extensions it
/// dropped, gets 500.
#[derive(Debug, Clone, Copy)]
pub struct NextService(());

impl Service<http::Request<Body>> for NextService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let (mut parts, body) = req.into_parts();
        let Some(Carried { next, peer }) = parts.extensions.remove::<Carried>() else {
            tracing::error!("a tower layer passed on a request without the app's way on");
            return Box::pin(async {
                Ok(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "middleware failed",
                ))
            });
        };
        Box::pin(async move {
            let bytes = match body.as_bytes() {
                Some(bytes) => bytes.clone(),
                // A body the layer replaced (a stream it made): gathered first.
                None => match body.collect().await {
                    Ok(collected) => collected.to_bytes(),
                    Err(e) => {
                        tracing::error!("a tower layer's request body failed: {e}");
                        return Ok(error(StatusCode::BAD_REQUEST, "unreadable body"));
                    }
                },
            };
            Ok(next.run(Request::new(parts, bytes, peer)).await)
        })
    }
}
