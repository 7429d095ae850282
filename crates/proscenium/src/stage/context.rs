//! What a handler is handed: the one primitive to emit, `send(port, event)`.

use std::sync::atomic::Ordering;

use super::error::SendError;
use super::node::{Shared, given_back};
use super::port::Out;

/// A handler's view of its stage in the running graph.
pub struct Context<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) node: usize,
}

impl Context<'_> {
    /// Sends `event` out of `port`, through the connector bound to it.
    ///
    /// # Errors
    ///
    /// The event given back, with why: a rejection by the consumer's admission
    /// policy ([`StageError::is_rejected`](super::StageError::is_rejected)), a stop past
    /// the shutdown deadline ([`StageError::is_stopped`](super::StageError::is_stopped)),
    /// or a port this stage does not have; the handler decides what follows.
    pub fn send<T: Send + 'static>(&mut self, port: &Out<T>, event: T) -> Result<(), SendError<T>> {
        self.shared
            .send(self.node, port.spec.name, Box::new(event))
            .map_err(given_back)
    }

    /// Returns the name of the stage this handler runs for.
    pub fn stage(&self) -> &str {
        &self.shared.nodes[self.node].name
    }

    /// Returns whether the graph is shutting down: a source should return.
    pub fn is_stopping(&self) -> bool {
        self.shared.stopping.load(Ordering::Acquire)
    }
}
