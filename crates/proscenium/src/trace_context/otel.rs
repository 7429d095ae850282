//! A span's parent where the span is made elsewhere — after a queue, on another
//! thread, in another service — as OpenTelemetry's context (`traces`): a message or
//! event sent from inside a span carries [`Parent::current`], and the span its
//! handling makes [`adopt`](Parent::adopt)s it, joining the sender's trace. W3C Trace
//! Context crosses HTTP: a request's `traceparent` is a remote parent, and a call the
//! client makes carries the current span's.
//!
//! `no_otel.rs` stands in without `traces`: the parent is the sender's
//! `tracing` span, which the new span follows from, and no header is read or written.

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The context of the span a message was sent from.
pub(crate) struct Parent(Context);

impl Parent {
    /// The current span's context.
    pub(crate) fn current() -> Self {
        Self(Span::current().context())
    }

    /// The remote span a request's `traceparent` names, if it is a valid one; a
    /// malformed one is none, and a new trace starts.
    pub(crate) fn remote(headers: &HeaderMap) -> Option<Self> {
        let remote = TraceContextPropagator::new().extract(&Fields(headers));
        remote
            .span()
            .span_context()
            .is_valid()
            .then_some(Self(remote))
    }

    /// Makes `span` this one's child.
    pub(crate) fn adopt(self, span: &Span) {
        // Fails only for a span no export records, which has no parent to take.
        let _ = span.set_parent(self.0);
    }
}

/// Renames `span` as exported: a name recorded as `otel.name` after the span was
/// first entered would come too late.
pub(crate) fn rename(span: &Span, name: impl FnOnce() -> String) {
    span.context().span().update_name(name());
}

/// Adds the current span's `traceparent` (and `tracestate`) to `headers`.
#[cfg(feature = "client")]
pub(crate) fn inject(headers: &mut HeaderMap) {
    TraceContextPropagator::new().inject_context(&Span::current().context(), &mut Fields(headers));
}

/// A request's header fields as OpenTelemetry's propagator reads and writes them.
struct Fields<H>(H);

impl Extractor for Fields<&HeaderMap> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.to_str().ok()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

impl Injector for Fields<&mut HeaderMap> {
    fn set(&mut self, key: &str, value: String) {
        // The propagator writes only its own names and well-formed values.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}
