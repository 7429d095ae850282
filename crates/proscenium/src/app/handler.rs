//! Handlers: async fns (the default), plain fns run inline on the loop, and blocking fns
//! run on the blocking pool, each taking extractors as arguments.
//!
//! One macro generates the argument plumbing for every arity; the three kinds of
//! handler share it and differ only in where the function runs.

use std::future::Future;
use std::sync::Arc;

use super::extract::{FromRequest, FromRequestHead};
use super::from_parts::{FromRequestPartsArgs, impl_parts_arity};
use super::response::{IntoResponse, Reply, ReplyKind, Response, error};
use super::then::{HandlerOutput, Outcome};
use crate::http::Request;
use crate::rt;
use crate::shared::StateAccess;

/// Where a handler runs, as `proscenium routes` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An async fn polled on the connection's loop.
    Async,
    /// A plain fn called on the connection's loop.
    Inline,
    /// A plain fn run on the blocking pool.
    Blocking,
    /// A plain fn run on the named blocking pool (`[pools.NAME]`).
    Pool(&'static str),
    /// A mounted tower service.
    Service,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Async => f.pad("async"),
            Self::Inline => f.pad("inline"),
            Self::Blocking => f.pad("blocking"),
            Self::Pool(name) => f.pad(&format!("pool:{name}")),
            Self::Service => f.pad("service"),
        }
    }
}

/// A function that answers requests; see [`App::get`](crate::App::get).
///
/// Implemented for async fns whose arguments are extractors, and, through [`inline`] and
/// [`blocking`], for plain fns. `T` only distinguishes the implementations.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler",
    note = "a handler is an async fn (or `inline(f)` / `blocking(f)` of a plain fn) whose arguments are extractors, at most one reading the body and that one last, and whose result implements `IntoResponse`",
    note = "`inline` and `blocking` handlers extract without awaiting: an async extractor (`FromRequestParts` that is not `FromRequestHead`) needs an async fn handler"
)]
pub trait Handler<T>: Clone + Send + Sync + 'static {
    /// Calls the handler with the request.
    fn call(&self, req: Request) -> Reply;

    /// Returns where the handler runs.
    fn mode(&self) -> Mode;

    /// Returns the shared state its arguments take, in signature order.
    fn state_accesses(&self) -> Vec<StateAccess> {
        Vec::new()
    }

    /// Returns whether it takes its body as it arrives (an async handler whose last
    /// argument is a [`BodyStream`](super::BodyStream) or reads one).
    fn streams_body(&self) -> bool {
        false
    }
}

/// Calls `self` with a tuple of arguments; generated for every arity.
pub trait Callable<Args>: Clone + Send + Sync + 'static {
    /// What the function returns.
    type Output;

    /// Calls the function.
    fn call_with(&self, args: Args) -> Self::Output;
}

/// A tuple of extractors taken from one request; generated for every arity.
pub trait FromRequestArgs<M>: Sized {
    /// Returns the extracted arguments, or the rejection as a response.
    ///
    /// # Errors
    ///
    /// The first extractor's rejection.
    // A rejection is a whole response; boxing it would only add an allocation to
    // every rejected request.
    #[allow(clippy::result_large_err)]
    fn from_request_args(req: Request) -> Result<Self, Response>;

    /// The shared state the arguments take, in order.
    fn state_accesses() -> Vec<StateAccess>;
}

macro_rules! impl_arity {
    ($($head:ident),*; $last:ident) => {
        impl<F, O, $($head,)* $last> Callable<($($head,)* $last,)> for F
        where
            F: Fn($($head,)* $last) -> O + Clone + Send + Sync + 'static,
        {
            type Output = O;

            #[allow(non_snake_case)]
            fn call_with(&self, ($($head,)* $last,): ($($head,)* $last,)) -> O {
                self($($head,)* $last)
            }
        }

        impl<M, $($head: FromRequestHead,)* $last: FromRequest<M>> FromRequestArgs<M> for ($($head,)* $last,) {
            #[allow(non_snake_case, clippy::result_large_err)]
            fn from_request_args(req: Request) -> Result<Self, Response> {
                $(let $head = $head::from_request_head(&req).map_err(IntoResponse::into_response)?;)*
                let $last = $last::from_request(req).map_err(IntoResponse::into_response)?;
                Ok(($($head,)* $last,))
            }

            fn state_accesses() -> Vec<StateAccess> {
                [$($head::state_access(),)* $last::state_access()].into_iter().flatten().collect()
            }
        }

        impl_parts_arity!($($head),*; $last);
    };
}

impl_arity!(; T1);
impl_arity!(T1; T2);
impl_arity!(T1, T2; T3);
impl_arity!(T1, T2, T3; T4);
impl_arity!(T1, T2, T3, T4; T5);
impl_arity!(T1, T2, T3, T4, T5; T6);
impl_arity!(T1, T2, T3, T4, T5, T6; T7);
impl_arity!(T1, T2, T3, T4, T5, T6, T7; T8);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8; T9);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9; T10);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10; T11);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11; T12);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12; T13);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13; T14);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14; T15);
impl_arity!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15; T16);

impl<F, O> Callable<()> for F
where
    F: Fn() -> O + Clone + Send + Sync + 'static,
{
    type Output = O;

    fn call_with(&self, (): ()) -> O {
        self()
    }
}

impl FromRequestArgs<()> for () {
    #[allow(clippy::result_large_err)]
    fn from_request_args(_: Request) -> Result<Self, Response> {
        Ok(())
    }

    fn state_accesses() -> Vec<StateAccess> {
        Vec::new()
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub enum AsyncFn {}

impl<F, M, Args, Fut> Handler<(AsyncFn, M, Args)> for F
where
    F: Callable<Args, Output = Fut>,
    Fut: Future + 'static,
    Fut::Output: HandlerOutput,
    Args: FromRequestPartsArgs<M>,
{
    fn call(&self, req: Request) -> Reply {
        if Args::WAITS {
            let f = self.clone();
            return Reply::later(async move {
                match Args::from_request_later(req).await {
                    Ok(args) => f.call_with(args).await.into_outcome(),
                    Err(rejection) => rejection.into_outcome(),
                }
            });
        }
        // Every argument extracts at once: taken before the future is made, so the
        // future is the handler's alone, as small as without async extractors.
        match Args::from_request_now(req) {
            Some(Ok(args)) => Reply::later(self.call_with(args)),
            Some(Err(rejection)) => Reply(ReplyKind::Ready(rejection)),
            None => {
                tracing::error!("an extractor claims to extract at once but did not");
                Reply::ready(error(
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    "extractor failed",
                ))
            }
        }
    }

    fn mode(&self) -> Mode {
        Mode::Async
    }

    fn streams_body(&self) -> bool {
        Args::STREAMS
    }

    fn state_accesses(&self) -> Vec<StateAccess> {
        Args::state_accesses()
    }
}

/// A plain fn called on the connection's loop: no allocation, no task switch.
///
/// For work of a few microseconds; anything slower belongs in [`blocking`].
#[derive(Debug, Clone, Copy)]
pub struct Inline<F>(F);

/// Returns a handler that calls the plain fn `f` on the connection's loop.
///
/// # Examples
///
/// ```
/// use proscenium::{App, inline};
///
/// let app = App::new().get("/plaintext", inline(|| "Hello, World!"));
/// ```
pub fn inline<F>(f: F) -> Inline<F> {
    Inline(f)
}

impl<F, M, Args> Handler<(Inline<()>, M, Args)> for Inline<F>
where
    F: Callable<Args>,
    F::Output: HandlerOutput,
    Args: FromRequestArgs<M>,
{
    fn call(&self, req: Request) -> Reply {
        match Args::from_request_args(req) {
            Ok(args) => self.0.call_with(args).into_outcome().into_reply(),
            Err(rejection) => Reply(ReplyKind::Ready(rejection)),
        }
    }

    fn mode(&self) -> Mode {
        Mode::Inline
    }

    fn state_accesses(&self) -> Vec<StateAccess> {
        Args::state_accesses()
    }
}

/// A plain fn run on the blocking pool (or a named one), so it may block or compute
/// without stalling the loop.
#[derive(Debug, Clone, Copy)]
pub struct Blocking<F> {
    f: F,
    pool: Option<&'static str>,
}

/// Returns a handler that runs the plain fn `f` on the blocking pool.
///
/// Extraction happens on the loop; only `f` runs on the pool. When the pool's queue is
/// full the client gets 503.
///
/// # Examples
///
/// ```
/// use proscenium::{App, blocking};
///
/// let app = App::new().get("/slow", blocking(|| {
///     std::thread::sleep(std::time::Duration::from_millis(10));
///     "done"
/// }));
/// ```
pub fn blocking<F>(f: F) -> Blocking<F> {
    Blocking { f, pool: None }
}

/// Returns a handler that runs the plain fn `f` on the blocking pool named `pool`:
/// blocking work on threads of its own (the thesis's dedicated dispatcher), as many
/// as the deployment's `[pools.NAME] threads = N` says.
///
/// A server whose configuration has no such pool refuses to start, naming the route.
///
/// # Examples
///
/// ```
/// use proscenium::{App, blocking_on};
///
/// let app = App::new().post("/thumbnail", blocking_on("images", |body: bytes::Bytes| {
///     format!("{} bytes resized", body.len())
/// }));
/// assert_eq!(app.routes().next().unwrap().mode.to_string(), "pool:images");
/// ```
pub fn blocking_on<F>(pool: &'static str, f: F) -> Blocking<F> {
    Blocking {
        f,
        pool: Some(pool),
    }
}

impl<F, M, Args> Handler<(Blocking<()>, M, Args)> for Blocking<F>
where
    F: Callable<Args>,
    F::Output: HandlerOutput,
    Args: FromRequestArgs<M> + Send + 'static,
{
    fn call(&self, req: Request) -> Reply {
        let args = match Args::from_request_args(req) {
            Ok(args) => args,
            Err(rejection) => return Reply(ReplyKind::Ready(rejection)),
        };
        let f = self.f.clone();
        // The result becomes an outcome (a response, serialised) on the pool; only a
        // continuation's next step comes back to the loop.
        match rt::spawn_blocking_in(self.pool, move || f.call_with(args).into_outcome()) {
            Ok(task) => Reply::later(async move {
                match task.await {
                    Ok(outcome) => outcome.into_reply().into_response().await,
                    Err(failed) => failed.into_response(),
                }
            }),
            Err(refused) => Reply::ready(refused),
        }
    }

    fn mode(&self) -> Mode {
        self.pool.map_or(Mode::Blocking, Mode::Pool)
    }

    fn state_accesses(&self) -> Vec<StateAccess> {
        Args::state_accesses()
    }
}

/// A handler with its type erased, as routes store it.
pub(crate) trait ErasedHandler: Send + Sync {
    fn call(&self, req: Request) -> Reply;
    fn mode(&self) -> Mode;
    fn state_accesses(&self) -> Vec<StateAccess>;
    fn streams_body(&self) -> bool {
        false
    }
}

struct Erased<H, T> {
    handler: H,
    _marker: std::marker::PhantomData<fn() -> T>,
}

impl<H: Handler<T>, T: 'static> ErasedHandler for Erased<H, T> {
    fn call(&self, req: Request) -> Reply {
        self.handler.call(req)
    }

    fn mode(&self) -> Mode {
        self.handler.mode()
    }

    fn streams_body(&self) -> bool {
        self.handler.streams_body()
    }

    fn state_accesses(&self) -> Vec<StateAccess> {
        self.handler.state_accesses()
    }
}

/// An outcome already made, such as a rejection inside an async handler's future.
impl HandlerOutput for Outcome {
    fn into_outcome(self) -> Outcome {
        self
    }
}

pub(crate) type BoxHandler = Arc<dyn ErasedHandler>;

/// Erases a handler's type for storage in a route table.
pub(crate) fn erase<H: Handler<T>, T: 'static>(handler: H) -> BoxHandler {
    Arc::new(Erased {
        handler,
        _marker: std::marker::PhantomData,
    })
}
