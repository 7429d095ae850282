//! Middleware: code around every request, outside routing, such as the access log.

use std::sync::Arc;

use super::response::Reply;
use super::router::Routes;
use crate::http::Request;

/// Code run around the rest of the application for every request.
///
/// Implemented for every `Fn(Request, Next<'_>) -> Reply`. A middleware may answer by
/// itself, change the request before calling [`Next::run`], and change the response
/// with [`Reply::map`].
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

/// The rest of the application after one middleware.
pub struct Next<'a> {
    pub(crate) rest: &'a [Arc<dyn Middleware>],
    pub(crate) routes: &'a Routes,
}

impl Next<'_> {
    /// Passes `req` to the next middleware, or to routing after the last one.
    pub fn run(self, req: Request) -> Reply {
        match self.rest.split_first() {
            Some((first, rest)) => first.call(
                req,
                Next {
                    rest,
                    routes: self.routes,
                },
            ),
            None => self.routes.call(req),
        }
    }
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("middleware_left", &self.rest.len())
            .finish()
    }
}
