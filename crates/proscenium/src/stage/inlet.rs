//! A way into a running graph from outside it: an HTTP handler, an actor, a timer.

use std::sync::Arc;

use super::error::SendError;
use super::node::{Route, Shared, given_back};

/// Sends events of type `T` into one stage of a running graph, through a connector of
/// its own: a queue with its admission policy ([`RunningGraph::inlet`]), or the stage
/// run at once on the caller's thread ([`RunningGraph::cohort_inlet`]). Clones share
/// the connector (and a token bucket's rate).
///
/// [`RunningGraph::inlet`]: super::RunningGraph::inlet
/// [`RunningGraph::cohort_inlet`]: super::RunningGraph::cohort_inlet
pub struct Inlet<T> {
    shared: Arc<Shared>,
    route: Arc<Route>,
    /// `inlet.NAME`, as errors and the stage's rejections name the sender.
    sender: Arc<str>,
    event: std::marker::PhantomData<fn(T)>,
}

impl<T: Send + 'static> Inlet<T> {
    pub(crate) fn new(shared: Arc<Shared>, route: Route, name: &str) -> Self {
        Self {
            shared,
            route: Arc::new(route),
            sender: format!("inlet.{name}").into(),
            event: std::marker::PhantomData,
        }
    }

    /// Sends `event` to the stage, as its admission policy says: `block` waits for
    /// room (on this thread: do not call it on a loop), `reject` and a token bucket
    /// refuse at once; a cohort inlet runs the stage's handler before it returns.
    ///
    /// # Errors
    ///
    /// The event given back, with why: rejected by the admission policy
    /// ([`StageError::is_rejected`](super::StageError::is_rejected); for HTTP a 503),
    /// or the graph stopped ([`StageError::is_stopped`](super::StageError::is_stopped)).
    pub fn send(&self, event: T) -> Result<(), SendError<T>> {
        self.shared
            .deliver(&self.sender, &self.route, Box::new(event))
            .map_err(given_back)
    }
}

impl<T> Clone for Inlet<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            route: Arc::clone(&self.route),
            sender: Arc::clone(&self.sender),
            event: std::marker::PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Inlet<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inlet")
            .field("sender", &self.sender)
            .field("to", &self.shared.nodes[self.route.target].name)
            .finish_non_exhaustive()
    }
}
