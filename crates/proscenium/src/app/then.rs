//! What a handler may return — any [`IntoResponse`], or [`Then`] to continue the
//! request in another handler — and the locked call both routes and continuations go
//! through.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;

use super::Handler;
use super::handler::{BoxHandler, erase};
use super::response::{IntoResponse, Reply, Response, error};
use crate::http::Request;
use crate::shared::LockSet;

/// A handler's result: a response, or a continuation.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler's result",
    note = "a handler returns something that implements `IntoResponse`, or `Then`"
)]
pub trait HandlerOutput {
    /// Turns the result into what the router runs next. It may run on the blocking
    /// pool, so the outcome is `Send`.
    fn into_outcome(self) -> Outcome;
}

impl<T: IntoResponse> HandlerOutput for T {
    fn into_outcome(self) -> Outcome {
        Outcome(Step::Respond(self.into_response()))
    }
}

/// What a handler's result becomes: a response, or the continuation to run.
#[derive(Debug)]
pub struct Outcome(Step);

#[derive(Debug)]
enum Step {
    Respond(Response),
    Continue(Continuation),
}

impl Outcome {
    /// The reply on the connection's loop: the response, or the continuation's.
    #[inline]
    pub(crate) fn into_reply(self) -> Reply {
        match self.0 {
            Step::Respond(res) => Reply::ready(res),
            Step::Continue(next) => next.run(),
        }
    }
}

/// A handler's answer now, or a continuation: the request goes on in another handler
/// whose locks are derived from its signature — Node.Scala's nested callbacks, each
/// classified on its own. Made by [`Read::then`](crate::state::Read::then) and
/// [`Write::then`](crate::state::Write::then), which release their lock first.
#[derive(Debug)]
pub enum Then<R> {
    /// The answer.
    Done(R),
    /// Run this next.
    Next(Continuation),
}

/// The handler a request continues in, with its resolved locks.
pub struct Continuation {
    locks: Result<Arc<LockSet>, String>,
    handler: BoxHandler,
}

impl std::fmt::Debug for Continuation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Continuation")
            .field("locks", &self.locks.as_ref().map(|set| &set.route))
            .finish_non_exhaustive()
    }
}

impl<R> Then<R> {
    /// Continues in `handler`, resolving its state against the app `from` belongs to.
    pub(crate) fn after<H: Handler<A>, A: 'static>(from: &Arc<LockSet>, handler: H) -> Self {
        let handler = erase(handler);
        Self::Next(Continuation {
            locks: from.continuation::<H>(|| handler.state_accesses()),
            handler,
        })
    }
}

impl<R: HandlerOutput> HandlerOutput for Then<R> {
    fn into_outcome(self) -> Outcome {
        match self {
            Self::Done(answer) => answer.into_outcome(),
            Self::Next(next) => Outcome(Step::Continue(next)),
        }
    }
}

impl Continuation {
    fn run(self) -> Reply {
        match self.locks {
            // The continuation sees only its locks; its handler takes state, nothing
            // from the request.
            Ok(set) => call_holding(&set, &self.handler, empty_request()),
            Err(why) => {
                tracing::error!(%why, "a continuation takes state the app does not have");
                Reply::ready(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "shared state unavailable",
                ))
            }
        }
    }
}

fn empty_request() -> Request {
    Request::new(http::Request::new(()).into_parts().0, Bytes::new(), None)
}

/// Calls `handler` holding every lock of `set`: at once when they are free, else
/// later, once the loop has taken them (deferring, then waiting).
pub(crate) fn call_holding(set: &Arc<LockSet>, handler: &BoxHandler, mut req: Request) -> Reply {
    if let Some(held) = set.try_hold() {
        req.extensions_mut().insert(held);
        return handler.call(req);
    }
    let (set, handler) = (set.clone(), handler.clone());
    Reply::later(async move {
        req.extensions_mut().insert(set.hold().await);
        handler.call(req).into_response().await
    })
}
