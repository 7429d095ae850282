//! Middleware: code around every request, outside routing — synchronous
//! [`Middleware`], async middleware made with [`from_fn`], and tower layers — all
//! added with [`App::layer`](crate::App::layer), the last added running first.
//!
//! - A [`Middleware`] is a function of the [`Request`] and a [`Next`] returning a
//!   [`Reply`] at once: it costs no allocation when the rest of the app answers at once.
//! - [`from_fn`] makes middleware of an async function, which may await before and
//!   after `next.run(req).await` (an auth check against a database, say).
//! - A `tower::Layer` whose service takes `http::Request<Body>` and answers an
//!   `http::Response` — tower-http's `CorsLayer`, `TimeoutLayer`, `TraceLayer`,
//!   `CompressionLayer`, `SetRequestIdLayer` — wraps a [`NextService`]: the request's
//!   whole body reaches the layer as a [`Body`](crate::Body) of bytes, and the layer's
//!   response body is relayed as a `Body` (the app's own, untouched, when the layer
//!   left it alone). Layers that change the request body's type
//!   (`RequestBodyLimitLayer`, request decompression) do not fit — the server's
//!   `limits.max_body` bounds bodies already — nor do layers whose inner service must be
//!   `Send` (one that spawns the call onto another runtime): the app's replies are
//!   local futures.
//!
//! An app's middleware and its routes form one chain, held by the app behind an
//! `Arc`. A request walks it with a [`Next`] that borrows the chain, so synchronous
//! middleware costs no reference count; a `Next` that must outlive its call (held
//! across an await) owns a clone of that `Arc` instead ([`Next::into_owned`]).

mod from_fn;
mod tower_layer;

use std::borrow::Cow;
use std::sync::Arc;

use super::response::Reply;
use super::router::Routes;
use crate::http::Request;

pub use self::from_fn::{FromFn, MiddlewareFn, from_fn};
pub use self::tower_layer::{IntoMiddleware, LayerService, NextService, ViaMiddleware, ViaTower};

/// Code run around the rest of the application for every request.
///
/// Implemented for every `Fn(Request, Next<'_>) -> Reply`. A middleware may answer by
/// itself, change the request before calling [`Next::run`], and change the response
/// with [`Reply::map`]. Middleware that awaits is written with [`from_fn`].
///
/// # Examples
///
/// ```
/// use proscenium::{App, Next, Reply, Request, inline};
///
/// let app = App::new()
///     .get("/", inline(|| "hi"))
///     .layer(|req: Request, next: Next<'_>| {
///         next.run(req).map(|mut res| {
///             res.headers_mut().insert("x-served-by", "proscenium".parse().unwrap());
///             res
///         })
///     });
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Handles `req`, usually by passing it to `next`.
    fn call(&self, req: Request, next: Next<'_>) -> Reply;
}

impl<F> Middleware for F
where
    F: Fn(Request, Next<'_>) -> Reply + Send + Sync + 'static,
{
    fn call(&self, req: Request, next: Next<'_>) -> Reply {
        self(req, next)
    }
}

/// An app's middleware, outermost first, and the routes they wrap.
#[derive(Default)]
pub(crate) struct Chain {
    pub(crate) middleware: Vec<Arc<dyn Middleware>>,
    pub(crate) routes: Routes,
}

/// The rest of the application after one middleware.
///
/// A `Next<'_>` borrows the app; a `Next<'static>` ([`Next::into_owned`]) owns a
/// reference to it and may be held across an await, as [`from_fn`] middleware does.
#[derive(Clone)]
pub struct Next<'a> {
    chain: Cow<'a, Arc<Chain>>,
    /// The index in `chain.middleware` of the middleware to run next.
    at: usize,
}

impl<'a> Next<'a> {
    /// The whole chain: every middleware, then routing.
    pub(crate) fn start(chain: &'a Arc<Chain>) -> Self {
        Self {
            chain: Cow::Borrowed(chain),
            at: 0,
        }
    }

    /// Passes `req` to the next middleware, or to routing after the last one.
    ///
    /// The reply is a future of the response too: `next.run(req).await`.
    pub fn run(self, req: Request) -> Reply {
        match self.chain {
            Cow::Borrowed(chain) => run_from(chain, self.at, req),
            Cow::Owned(chain) => run_from(&chain, self.at, req),
        }
    }

    /// Returns a `Next` that owns a reference to the app, to keep across an await
    /// (one reference count; no allocation).
    pub fn into_owned(self) -> Next<'static> {
        Next {
            chain: Cow::Owned(self.chain.into_owned()),
            at: self.at,
        }
    }
}

/// Runs the middleware at `at`, with a `Next` borrowing `chain`, or routing.
fn run_from(chain: &Arc<Chain>, at: usize, req: Request) -> Reply {
    match chain.middleware.get(at) {
        Some(middleware) => middleware.call(
            req,
            Next {
                chain: Cow::Borrowed(chain),
                at: at + 1,
            },
        ),
        None => chain.routes.call(req),
    }
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("middleware_left", &(self.chain.middleware.len() - self.at))
            .finish()
    }
}
