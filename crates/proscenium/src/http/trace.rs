//! A request's span (`[traces]`): opened when the request is taken, entered while its
//! handler runs on the connection's thread (its call and each later poll), closed with the route and status when the
//! answer is encoded. At `trace` level under the target [`REQUEST_SPANS`], so it is made
//! only where a subscriber asks for it (the OTLP export); otherwise the request path
//! pays one check of the span's interest and carries `None`.
//!
//! Its fields follow OpenTelemetry's HTTP conventions: the span is named
//! `METHOD ROUTE`, a server span, with `http.request.method`, `url.path`, `http.route`,
//! `http.response.status_code`, and the request's id as `request.id`.
//!
//! W3C Trace Context, when spans are exported (`traces`): a request carrying a valid
//! `traceparent` gets a span whose parent is that remote span, in its trace;
//! [`propagate`] writes the current span's into a call the HTTP client makes.

#[cfg(feature = "client")]
use http::HeaderMap;
use http::Method;
use tracing::field::Empty;
use tracing::instrument::Instrumented;
use tracing::{Instrument as _, Span};

use super::request_id::RequestId;
use super::response::Respond;
use super::{REQUEST_SPANS, Request};
use crate::rt::watchdog;
use crate::trace_context::{self, Parent};

/// A request's span, if one is made.
#[derive(Debug, Default)]
pub(crate) struct RequestSpan(Option<(Span, Method)>);

impl RequestSpan {
    /// Opens the span of `req`, whose id is `id`.
    pub(crate) fn open(req: &Request, id: Option<&RequestId>) -> Self {
        let span = tracing::trace_span!(
            target: REQUEST_SPANS,
            "request",
            otel.name = %req.method(),
            otel.kind = "server",
            http.request.method = %req.method(),
            url.path = req.uri().path(),
            http.route = Empty,
            http.response.status_code = Empty,
            request.id = Empty,
        );
        if span.is_disabled() {
            return Self(None);
        }
        if let Some(id) = id {
            span.record("request.id", id.as_str());
        }
        // A caller's trace continues here.
        if let Some(remote) = Parent::remote(req.headers()) {
            remote.adopt(&span);
        }
        Self(Some((span, req.method().clone())))
    }

    /// Runs `f` in the span.
    pub(crate) fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.0 {
            Some((span, _)) => span.in_scope(f),
            None => f(),
        }
    }

    /// Runs `future` in the span: a handler's later polls (an `async` handler's whole
    /// body, its sends to actors and its client calls) belong to the request too.
    pub(crate) fn instrument<F: Future>(&self, future: F) -> Instrumented<F> {
        let span = self
            .0
            .as_ref()
            .map_or_else(Span::none, |(span, _)| span.clone());
        future.instrument(span)
    }

    /// Closes the span with the answer's `status` and the route this thread noted last
    /// (the one that answered) as `app` names it: the span becomes `GET /items/:id`.
    pub(crate) fn close(&mut self, status: u16, app: &dyn Respond) {
        let Some((span, method)) = self.0.take() else {
            return;
        };
        // `app` labels a route `METHOD PATTERN` (`*` for any method).
        let label = app.label(watchdog::current_route());
        let route = label
            .split_once(' ')
            .map_or(label.as_str(), |(_, pattern)| pattern);
        span.record("http.route", route);
        span.record("http.response.status_code", status);
        trace_context::rename(&span, || format!("{method} {route}"));
    }
}

/// Adds the current span's W3C `traceparent` (and `tracestate`) to `headers` when spans
/// are exported, so that the server called continues this trace; with traces off it
/// checks one flag and adds nothing.
#[cfg(feature = "client")]
pub(crate) fn propagate(headers: &mut HeaderMap) {
    if tracing::enabled!(target: REQUEST_SPANS, tracing::Level::TRACE) {
        trace_context::inject(headers);
    }
}
