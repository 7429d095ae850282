//! Async middleware from a function: `from_fn(|req, next| async move { … })`.

use std::future::Future;
use std::marker::PhantomData;

use super::{Middleware, Next};
use crate::app::extract::FromRequestHead;
use crate::app::response::{IntoResponse, Reply};
use crate::http::Request;

/// Returns middleware that runs the async function `f` around the rest of the app.
///
/// `f` takes any number of head extractors ([`Path`](crate::Path),
/// [`HeaderMap`](crate::HeaderMap), ...), then the [`Request`] and the [`Next`], and
/// returns a future of anything [`IntoResponse`]. It may await before and after
/// `next.run(req).await`, answer without calling it, and change the request and the
/// response. A failed extractor answers with its rejection. The future runs where
/// the request's handler does: on the connection's loop, or on its thread under a
/// thread model; it costs one allocation a request (the future's box).
///
/// Shared values (a pool, a client) are captured by the closure; `Read`/`Write` state
/// is taken by handlers, whose locks are held only around them.
///
/// # Examples
///
/// ```
/// use proscenium::middleware::{Next, from_fn};
/// use proscenium::{App, HeaderMap, IntoResponse, Request, StatusCode, inline};
///
/// async fn auth(headers: HeaderMap, req: Request, next: Next<'static>) -> impl IntoResponse {
///     // An await before the rest of the app: a session looked up elsewhere.
///     tokio::task::yield_now().await;
///     if headers.get("authorization").is_none() {
///         return StatusCode::UNAUTHORIZED.into_response();
///     }
///     let mut res = next.run(req).await;
///     res.headers_mut().insert("x-checked", "yes".parse().unwrap());
///     res
/// }
///
/// let app = App::new().get("/", inline(|| "hi")).layer(from_fn(auth));
/// # let _ = app;
/// ```
pub fn from_fn<F, T>(f: F) -> FromFn<F, T>
where
    F: MiddlewareFn<T>,
{
    FromFn {
        f,
        _args: PhantomData,
    }
}

/// Middleware made by [`from_fn`].
pub struct FromFn<F, T> {
    f: F,
    _args: PhantomData<fn() -> T>,
}

impl<F: Clone, T> Clone for FromFn<F, T> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            _args: PhantomData,
        }
    }
}

impl<F, T> std::fmt::Debug for FromFn<F, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FromFn").finish_non_exhaustive()
    }
}

impl<F: MiddlewareFn<T>, T: 'static> Middleware for FromFn<F, T> {
    fn call(&self, req: Request, next: Next<'_>) -> Reply {
        self.f.call(req, next.into_owned())
    }
}

/// An async function that [`from_fn`] makes middleware of: head extractors, then
/// `(Request, Next<'static>)`, returning a future of an [`IntoResponse`].
///
/// `T` is the tuple of its extractors' types, as in [`Handler<T>`](crate::Handler).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be made middleware by `from_fn`",
    note = "middleware is an async fn taking head extractors, then `Request` and `Next<'static>`, and returning something that implements `IntoResponse`"
)]
pub trait MiddlewareFn<T>: Send + Sync + 'static {
    /// Extracts the arguments from `req` and calls the function.
    fn call(&self, req: Request, next: Next<'static>) -> Reply;
}

macro_rules! impl_middleware_fn {
    ($($head:ident),*) => {
        impl<F, Fut, $($head,)*> MiddlewareFn<($($head,)*)> for F
        where
            F: Fn($($head,)* Request, Next<'static>) -> Fut + Send + Sync + 'static,
            Fut: Future + 'static,
            Fut::Output: IntoResponse,
            $($head: FromRequestHead,)*
        {
            #[allow(non_snake_case)]
            fn call(&self, req: Request, next: Next<'static>) -> Reply {
                $(
                    let $head = match $head::from_request_head(&req) {
                        Ok(value) => value,
                        Err(rejection) => return Reply::ready(rejection),
                    };
                )*
                Reply::later(self($($head,)* req, next))
            }
        }
    };
}

impl_middleware_fn!();
impl_middleware_fn!(T1);
impl_middleware_fn!(T1, T2);
impl_middleware_fn!(T1, T2, T3);
impl_middleware_fn!(T1, T2, T3, T4);
