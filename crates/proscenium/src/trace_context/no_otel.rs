//! The stand-in for `otel.rs` in a build without `traces`: a span made after
//! a queue follows from its sender's `tracing` span (a subscriber of the app's own
//! sees the link), and W3C Trace Context headers are neither read nor written —
//! without an export there is no trace for them to continue.

use http::HeaderMap;
use tracing::Span;

/// The span a message was sent from.
pub(crate) struct Parent(Span);

impl Parent {
    /// The current span.
    pub(crate) fn current() -> Self {
        Self(Span::current())
    }

    /// None: a `traceparent` continues only an exported trace.
    pub(crate) fn remote(_: &HeaderMap) -> Option<Self> {
        None
    }

    /// Makes `span` follow from this one.
    pub(crate) fn adopt(self, span: &Span) {
        span.follows_from(&self.0);
    }
}

/// Nothing: only an exported span's name is changed after it was made.
pub(crate) fn rename(_: &Span, _: impl FnOnce() -> String) {}

/// Nothing: only an exported span's context crosses to the service called.
#[cfg(feature = "client")]
pub(crate) fn inject(_: &mut HeaderMap) {}
