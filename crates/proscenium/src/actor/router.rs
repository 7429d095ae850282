//! A router over a pool of identical actors (Akka's pool routers): each message goes
//! to one routee, in turn or to the one with the fewest messages waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{Actor, Addr, AskError, Handler, Message, Props, SendError, System};

/// How a router picks the routee for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    /// Each routee in turn.
    RoundRobin,
    /// The routee with the fewest queued messages (the first of equals).
    SmallestMailbox,
}

/// Sends each message to one actor of a pool.
pub struct Router<A: Actor> {
    routees: Arc<[Addr<A>]>,
    routing: Routing,
    next: Arc<AtomicUsize>,
}

impl<A: Actor> Clone for Router<A> {
    fn clone(&self) -> Self {
        Self {
            routees: self.routees.clone(),
            routing: self.routing,
            next: self.next.clone(),
        }
    }
}

impl<A: Actor> std::fmt::Debug for Router<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("routees", &self.routees.len())
            .field("routing", &self.routing)
            .finish()
    }
}

impl System {
    /// Spawns `size` actors made by `factory` (named `NAME-0`, `NAME-1`, ... after
    /// `props`) behind one router.
    pub fn spawn_pool<A: Actor>(
        &self,
        props: &Props,
        size: usize,
        routing: Routing,
        factory: impl Fn() -> A + Clone + Send + Sync + 'static,
    ) -> Router<A> {
        let routees: Vec<Addr<A>> = (0..size.max(1))
            .map(|i| self.spawn(props.numbered(i), factory.clone()))
            .collect();
        Router {
            routees: routees.into(),
            routing,
            next: Arc::default(),
        }
    }
}

impl<A: Actor> Router<A> {
    /// The routees.
    pub fn routees(&self) -> &[Addr<A>] {
        &self.routees
    }

    fn pick(&self) -> &Addr<A> {
        match self.routing {
            Routing::RoundRobin => {
                let at = self.next.fetch_add(1, Ordering::Relaxed) % self.routees.len();
                &self.routees[at]
            }
            Routing::SmallestMailbox => self
                .routees
                .iter()
                .min_by_key(|r| r.queued())
                .unwrap_or(&self.routees[0]),
        }
    }

    /// Tells one routee.
    ///
    /// # Errors
    ///
    /// As [`Addr::tell`].
    pub async fn tell<M: Message>(&self, message: M) -> Result<(), SendError>
    where
        A: Handler<M>,
    {
        self.pick().tell(message).await
    }

    /// Asks one routee.
    ///
    /// # Errors
    ///
    /// As [`Addr::ask`].
    pub async fn ask_within<M: Message>(
        &self,
        message: M,
        timeout: Duration,
    ) -> Result<M::Reply, AskError>
    where
        A: Handler<M>,
    {
        self.pick().ask_within(message, timeout).await
    }
}
