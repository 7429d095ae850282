//! The edge between a connection (an HTTP/1.1 one, or an HTTP/2 stream) and the
//! application: the app called (it routes) with the loop marked busy, panics
//! turned into 500s, and error bodies filled in; and a request handed to another
//! thread when this loop is already busy with one and the model allows it, or always
//! where the model runs no handler on this thread (`rt::hand_off`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use http::StatusCode;
use tokio::sync::oneshot;

use crate::http::error_page;
use crate::http::response::{
    ErrorDetail, LocalResponseFuture, Respond, Response, error, unavailable,
};
use crate::http::{Body, Request, Soon};
use crate::rt::hand_off::{self, Policy, Work};
use crate::rt::{self, watchdog};

/// The app's answer to one request: ready, or a future to poll on this loop.
pub(crate) type Answer = Soon<Response, Guarded>;

/// Calls the app for `req`, catching a panic in the handler's synchronous part; past
/// `max_inflight` requests on this loop, answers 503 without calling it. With a
/// request already in flight here and another thread to hand work to (the staged
/// model), or on a thread that runs no handler (a thread model's HTTP/2 connections),
/// the call runs there and its answer comes back here.
pub(crate) fn call(app: &Arc<dyn Respond>, req: Request, max_inflight: usize) -> Answer {
    let inflight = rt::context::with_current(|ctx| ctx.stats.inflight.load(Ordering::Relaxed));
    if inflight.is_some_and(|n| n >= max_inflight) {
        rt::overload::note(rt::overload::Bound::Inflight);
        watchdog::set_route(watchdog::NO_ROUTE);
        return Answer::Ready(unavailable(
            "too many requests in flight; try again shortly",
        ));
    }
    rt::context::with_current(|ctx| ctx.stats.count_request());
    let policy = hand_off::policy();
    let busy = inflight.is_some_and(|n| n > 0);
    if policy == Some(Policy::Always) || (policy == Some(Policy::WhenBusy) && busy) {
        let (reply, answer) = oneshot::channel();
        let call = Box::new(Call {
            app: Arc::clone(app),
            req,
            reply,
        });
        match hand_off::hand_off(call) {
            Ok(()) => return elsewhere(answer),
            // This thread runs no handler: the call is refused, its answer a 503.
            Err(refused) if policy == Some(Policy::Always) => {
                refused.refuse();
                return elsewhere(answer);
            }
            Err(refused) => {
                // No room there: run here after all.
                let call = refused
                    .into_any()
                    .downcast::<Call>()
                    .unwrap_or_else(|_| unreachable!("work changed its type"));
                return here(&*call.app, call.req);
            }
        }
    }
    here(&**app, req)
}

/// Calls the app for `req` on this thread.
fn here(app: &dyn Respond, req: Request) -> Answer {
    let _inflight = Inflight::enter();
    let busy = watchdog::Busy::enter(watchdog::NO_ROUTE);
    let reply = catch_unwind(AssertUnwindSafe(|| app.respond(req)));
    let route = watchdog::current_route();
    drop(busy);
    match reply {
        Ok(reply) => match reply {
            Soon::Ready(res) => Answer::Ready(res),
            Soon::Later(future) => Answer::Later(Guarded {
                future,
                route,
                _inflight: Inflight::enter(),
            }),
        },
        Err(panic) => Answer::Ready(panicked(app, route, &*panic)),
    }
}

/// A request's call, to run on another thread; its answer goes back through `reply`,
/// with the route that gave it.
struct Call {
    app: Arc<dyn Respond>,
    req: Request,
    reply: oneshot::Sender<(Response, u32)>,
}

impl Work for Call {
    fn run(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()>>> {
        Box::pin(async move {
            let Self { app, req, reply } = *self;
            let mut res = match here(&*app, req) {
                Soon::Ready(res) => res,
                Soon::Later(guarded) => guarded.finish(&*app).await,
            };
            // Read right after the answer, before this thread runs anything else.
            let route = watchdog::current_route();
            let feed = res.body_mut().fed_from_here();
            // The connection may have gone meanwhile (then so has the fed body).
            let _ = reply.send((res, route));
            if let Some(feed) = feed {
                feed.await;
            }
        })
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }

    fn refuse(self: Box<Self>) {
        let _ = self.reply.send((
            unavailable("every thread is busy; try again shortly"),
            watchdog::NO_ROUTE,
        ));
    }
}

/// The answer to a call running elsewhere, awaited here (counted in flight here too:
/// this loop's connection waits on it). Its route is noted here as it arrives, for
/// the connection to count the answer under.
fn elsewhere(answer: oneshot::Receiver<(Response, u32)>) -> Answer {
    Answer::Later(Guarded {
        future: Box::pin(async move {
            let (res, route) = answer.await.unwrap_or_else(|_| {
                let failed = error(StatusCode::INTERNAL_SERVER_ERROR, "the handler failed");
                (failed, watchdog::NO_ROUTE)
            });
            watchdog::set_route(route);
            res
        }),
        route: watchdog::NO_ROUTE,
        _inflight: Inflight::enter(),
    })
}

/// A handler's future, polled with the loop marked busy and panics caught.
pub(crate) struct Guarded {
    future: LocalResponseFuture,
    route: u32,
    _inflight: Inflight,
}

impl Guarded {
    /// Returns the route whose handler answers (none yet, for a call elsewhere).
    pub(crate) fn route(&self) -> u32 {
        self.route
    }

    /// Polls once; used by the connection to write earlier responses before waiting.
    pub(crate) fn poll_with(&mut self, cx: &mut Context<'_>, app: &dyn Respond) -> Poll<Response> {
        let _busy = watchdog::Busy::enter(self.route);
        let future = &mut self.future;
        let poll = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)));
        // Routing may happen in this poll rather than in the call (behind async
        // middleware): the route it found is the answer's, and the next poll's.
        self.route = watchdog::current_route();
        match poll {
            Ok(poll) => poll,
            Err(panic) => Poll::Ready(panicked(app, self.route, &*panic)),
        }
    }

    /// Waits for the response.
    pub(crate) async fn finish(mut self, app: &dyn Respond) -> Response {
        std::future::poll_fn(|cx| self.poll_with(cx, app)).await
    }
}

fn panicked(app: &dyn Respond, route: u32, panic: &(dyn std::any::Any + Send)) -> Response {
    let message = rt::panic_message(panic);
    tracing::error!("handler panicked in {}: {message}", app.label(route));
    error(StatusCode::INTERNAL_SERVER_ERROR, "the handler failed")
}

/// Counts a request in flight on the current loop while alive (JSQ reads the count).
struct Inflight(());

impl Inflight {
    fn enter() -> Self {
        rt::context::with_current(|ctx| ctx.stats.count_inflight(true));
        Self(())
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        rt::context::with_current(|ctx| ctx.stats.count_inflight(false));
    }
}

/// Gives a bodiless error response the server's error page (JSON, HTML or plain text,
/// by `Accept`).
///
/// In place: a response is some 200 bytes, and every answer passes here.
pub(crate) fn fill_error_body(res: &mut Response, accept: Option<&http::HeaderValue>) {
    let is_bodiless_error = res.status().is_client_error() || res.status().is_server_error();
    if !is_bodiless_error
        || res.body().exact_len() != Some(0)
        || res.headers().contains_key(http::header::CONTENT_TYPE)
    {
        return;
    }
    let detail = res.extensions_mut().remove::<ErrorDetail>();
    let format = error_page::format(accept);
    let page = error_page::render(res.status(), detail.as_ref().map(|d| &*d.0), format);
    res.headers_mut()
        .insert(http::header::CONTENT_TYPE, page.content_type);
    *res.body_mut() = Body::from(page.body);
}
