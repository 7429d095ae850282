//! The stage layer's error type — graph errors found at build, and the failures of a
//! send at run time — and the refused send that gives its event back.

use http::StatusCode;

use crate::app::IntoResponse;
use crate::http::Response;
use crate::http::response::{error, unavailable};

/// What went wrong in a stage graph: an invalid graph at build, or a send refused.
///
/// Displays as one sentence naming the stages and ports concerned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StageError {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Graph,
    Rejected,
    Stopped,
    Handler,
    Start,
    Unreachable,
}

impl StageError {
    /// Returns whether the graph was invalid (found when it was built and started).
    pub fn is_graph(&self) -> bool {
        self.kind == Kind::Graph
    }

    /// Returns whether a consumer's admission policy refused the event (its queue
    /// full, or its token bucket empty); the event was counted as rejected.
    pub fn is_rejected(&self) -> bool {
        self.kind == Kind::Rejected
    }

    /// Returns whether the graph was shutting down past its deadline, so the event
    /// was dead-lettered.
    pub fn is_stopped(&self) -> bool {
        self.kind == Kind::Stopped
    }

    /// Returns whether Redis could not be reached (a graph mapped onto processes):
    /// worth trying again later, unlike a graph error.
    pub fn is_unreachable(&self) -> bool {
        self.kind == Kind::Unreachable
    }

    /// Returns an error a handler reports in its own words (counted as a failure of
    /// its stage and logged).
    pub fn handler(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Handler,
            message: message.into(),
        }
    }

    pub(crate) fn graph(message: String) -> Self {
        Self {
            kind: Kind::Graph,
            message,
        }
    }

    #[cfg(feature = "redis")]
    pub(crate) fn unreachable(message: String) -> Self {
        Self {
            kind: Kind::Unreachable,
            message,
        }
    }

    pub(crate) fn start(cluster: &str, cause: &std::io::Error) -> Self {
        Self {
            kind: Kind::Start,
            message: format!("cluster `{cluster}`: a thread could not start: {cause}"),
        }
    }

    pub(crate) fn rejected(from: &str, port: &str, to: &str) -> Self {
        Self {
            kind: Kind::Rejected,
            message: format!(
                "stage `{to}` rejected an event from `{from}.{port}`: queue full or over its rate"
            ),
        }
    }

    pub(crate) fn stopped(from: &str, port: &str, to: &str) -> Self {
        Self {
            kind: Kind::Stopped,
            message: format!(
                "stage `{to}` stopped before taking an event from `{from}.{port}`; counted as a dead letter"
            ),
        }
    }
}

/// A send that was refused, with its event given back: nothing is lost without the
/// sender knowing (convention 8), and the sender may retry, divert or report it.
///
/// `?` turns it into a [`StageError`] (the event dropped then, by the handler's
/// choice), so a handler can end with `ctx.send(&port, event)?`.
#[derive(thiserror::Error)]
#[error("{error}")]
pub struct SendError<T> {
    event: T,
    error: StageError,
}

impl<T> SendError<T> {
    pub(crate) fn new(event: T, error: StageError) -> Self {
        Self { event, error }
    }

    /// Returns why the send was refused.
    pub fn error(&self) -> &StageError {
        &self.error
    }

    /// Returns the event that was not sent.
    pub fn into_inner(self) -> T {
        self.event
    }

    /// Returns the event and why it was not sent.
    pub fn into_parts(self) -> (T, StageError) {
        (self.event, self.error)
    }
}

// By hand: the event need not be `Debug` for the error to be.
impl<T> std::fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendError")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<T> From<SendError<T>> for StageError {
    fn from(refused: SendError<T>) -> Self {
        refused.error
    }
}

/// An event a stage graph refused (through an [`Inlet`](super::Inlet)): a full
/// queue or a stopping graph is 503 with `Retry-After`, as the server's own queues
/// answer; anything else is 500, logged. The event is dropped.
impl<T> IntoResponse for SendError<T> {
    fn into_response(self) -> Response {
        let why = self.error();
        if why.is_rejected() || why.is_stopped() {
            unavailable(why.to_string())
        } else {
            tracing::error!("{why}");
            error(StatusCode::INTERNAL_SERVER_ERROR, "the handler failed")
        }
    }
}
