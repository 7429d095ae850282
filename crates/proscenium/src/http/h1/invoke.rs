//! The edge between a connection and the application: routing and calling the handler
//! with the loop marked busy, panics turned into 500s, and error bodies filled in.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use http::StatusCode;

use crate::http::error_page;
use crate::http::response::{
    ErrorDetail, LocalResponseFuture, Respond, Response, error, unavailable,
};
use crate::http::{Body, Request, Soon};
use crate::rt::{self, watchdog};

/// The app's answer to one request: ready, or a future to poll on this loop.
pub(crate) type Answer = Soon<Response, Guarded>;

/// Calls the app for `req`, catching a panic in the handler's synchronous part; past
/// `max_inflight` requests on this loop, answers 503 without calling it.
pub(crate) fn call(app: &dyn Respond, req: Request, max_inflight: usize) -> Answer {
    let inflight = rt::context::with_current(|ctx| ctx.stats.inflight.load(Ordering::Relaxed));
    if inflight.is_some_and(|n| n >= max_inflight) {
        rt::overload::note(rt::overload::Bound::Inflight);
        return Answer::Ready(unavailable(
            "too many requests in flight; try again shortly",
        ));
    }
    rt::context::with_current(|ctx| ctx.stats.count_request());
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

/// A handler's future, polled with the loop marked busy and panics caught.
pub(crate) struct Guarded {
    future: LocalResponseFuture,
    route: u32,
    _inflight: Inflight,
}

impl Guarded {
    /// Polls once; used by the connection to write earlier responses before waiting.
    pub(crate) fn poll_with(&mut self, cx: &mut Context<'_>, app: &dyn Respond) -> Poll<Response> {
        let _busy = watchdog::Busy::enter(self.route);
        let future = &mut self.future;
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
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

/// Gives a bodiless error response the server's error page (HTML or plain text).
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
    let html = error_page::accepts_html(accept);
    let page = error_page::render(res.status(), detail.as_ref().map(|d| &*d.0), html);
    res.headers_mut()
        .insert(http::header::CONTENT_TYPE, page.content_type);
    *res.body_mut() = Body::from(page.body);
}
