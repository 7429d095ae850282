//! Sending to a remote actor: a [`Route`] to its name — this node's outbox for it, a
//! bounded queue and a writer appending the letters, in the order sent, to the name's
//! mailbox stream in batches (`crate::stream::writer`) — seen as a [`Recipient`] of one
//! message type, or as a [`RemoteAddr`] of the actor's type.

use std::any::type_name;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::letter::{Letter, Reply};
use super::{Inner, RemoteError, RemoteMessage, registry};
use crate::actor::addr::{BoxFuture, Receives};
use crate::actor::{Actor, AskError, Handler, Reason, Recipient, SendError, TryTellError};
use crate::stream::writer::{Bounds, StreamWriter};
use crate::wire::{self, WireError};

/// Letters waiting here for the writer, per name.
const QUEUED: usize = 1024;

/// Letters a mailbox stream holds unacknowledged before its writers wait.
const BACKLOG: u64 = 10_000;

/// How long a tell waits before it looks again for room in a full outbox.
const ROOM_WAIT: Duration = Duration::from_millis(1);

/// The letters for one remote name, in the wire format.
pub(super) type Outbox = StreamWriter<Vec<u8>>;

/// The route to the remote actor `name`: its holder looked up (it must be held now),
/// and the node's outbox for it.
pub(super) async fn route(inner: &Arc<Inner>, name: &str) -> Result<Arc<Route>, RemoteError> {
    let key = inner.name_key(name);
    let holder = registry::holders(&mut inner.redis.clone(), &[key])
        .await?
        .pop()
        .flatten()
        .ok_or_else(|| RemoteError::NotFound(name.to_owned()))?;
    let held = {
        let mut known = inner.known.lock();
        let entry = known.entry(name.to_owned()).or_default();
        entry.set_holder(Some(holder));
        Arc::clone(&entry.held)
    };
    Ok(Arc::new(Route {
        inner: Arc::clone(inner),
        name: name.to_owned(),
        outbox: outbox(inner, name)?,
        held,
    }))
}

/// The node's outbox for `name`, started with the first route to it.
fn outbox(inner: &Inner, name: &str) -> Result<Arc<Outbox>, RemoteError> {
    let mut outboxes = inner.outboxes.lock();
    if let Some(outbox) = outboxes.get(name) {
        return Ok(Arc::clone(outbox));
    }
    let encode = |letter: &Vec<u8>| Ok::<_, WireError>(letter.clone());
    let bounds = Bounds {
        queue: QUEUED,
        backlog: BACKLOG,
    };
    // The writer ends once the node and every route have let the outbox go.
    let (outbox, _writer) = StreamWriter::spawn(
        inner.target.clone(),
        inner.mailbox_key(name),
        encode,
        bounds,
    )?;
    let outbox = Arc::new(outbox);
    outboxes.insert(name.to_owned(), Arc::clone(&outbox));
    Ok(outbox)
}

/// The way to a remote actor's mailbox, for messages of any type.
pub(super) struct Route {
    inner: Arc<Inner>,
    name: String,
    outbox: Arc<Outbox>,
    /// Whether a node held the name at the last heartbeat.
    held: Arc<AtomicBool>,
}

impl Route {
    /// Whether a letter may go now: Redis answered the last heartbeat, the node has
    /// not left, and a node held the name then.
    fn reachable(&self) -> bool {
        self.inner.redis_up.load(Ordering::Relaxed)
            && !self.inner.stopping()
            && self.held.load(Ordering::Relaxed)
    }

    /// `message` as a letter, or why it cannot go.
    fn letter<M: RemoteMessage>(
        &self,
        message: &M,
        ask: Option<u64>,
    ) -> Result<Vec<u8>, SendError> {
        if !self.reachable() {
            return Err(SendError::Unreachable);
        }
        wire::encode(&Letter {
            kind: type_name::<M>(),
            from: &self.inner.id,
            ask,
            message,
        })
        .map_err(|_| SendError::Unserializable)
    }

    /// Reports a message of type `M` not sent, for `error`.
    fn refused<M>(&self, error: SendError) -> SendError {
        let reason = match error {
            SendError::Unserializable => Reason::Unreadable("does not serialize".to_owned()),
            _ => Reason::Unreachable,
        };
        crate::actor::tally::dead_letter(crate::actor::tally::REMOTE);
        self.inner
            .dead_letters
            .report(&self.name, type_name::<M>(), reason);
        error
    }

    /// Queues `letter` (an `M`) in the outbox, waiting for room while the actor is
    /// reachable.
    async fn queue<M>(&self, mut letter: Vec<u8>) -> Result<(), SendError> {
        loop {
            match self.outbox.try_send(letter) {
                Ok(()) => return Ok(()),
                Err(back) => letter = back,
            }
            if !self.reachable() {
                return Err(self.refused::<M>(SendError::Unreachable));
            }
            tokio::time::sleep(ROOM_WAIT).await;
        }
    }

    async fn tell<M: RemoteMessage>(&self, message: M) -> Result<(), SendError> {
        let letter = self
            .letter(&message, None)
            .map_err(|e| self.refused::<M>(e))?;
        self.queue::<M>(letter).await
    }

    fn try_tell<M: RemoteMessage>(&self, message: M) -> Result<(), TryTellError<M>> {
        let letter = match self.letter(&message, None) {
            Ok(letter) => letter,
            Err(SendError::Unserializable) => return Err(TryTellError::Unserializable(message)),
            Err(_) => return Err(TryTellError::Unreachable(message)),
        };
        self.outbox
            .try_send(letter)
            .map_err(|_| TryTellError::Full(message))
    }

    async fn ask<M: RemoteMessage>(
        &self,
        message: M,
        timeout: Duration,
    ) -> Result<M::Reply, AskError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let (ask, reply) = self.inner.asks.expect();
        let letter = match self.letter(&message, Some(ask)) {
            Ok(letter) => letter,
            Err(error) => {
                self.inner.asks.forget(ask);
                return Err(self.refused::<M>(error).into());
            }
        };
        drop(message);
        let asked = async {
            self.queue::<M>(letter).await?;
            let reply = reply.await.map_err(|_| AskError::NoReply)?;
            let reply: Reply<M::Reply> = wire::decode(&reply).map_err(|error| {
                tracing::error!(%error, actor = %self.name, "a reply that does not read");
                AskError::NoReply
            })?;
            reply.outcome.map_err(AskError::from)
        };
        let answered = tokio::time::timeout_at(deadline, asked).await;
        self.inner.asks.forget(ask);
        answered.unwrap_or(Err(AskError::Timeout))
    }
}

/// A remote actor as a [`Recipient`] of `M`s.
pub(super) struct Remote<M> {
    pub(super) route: Arc<Route>,
    pub(super) message: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> Receives<M> for Remote<M> {
    fn tell(&self, message: M) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(self.route.tell(message))
    }

    fn try_tell(&self, message: M) -> Result<(), TryTellError<M>> {
        self.route.try_tell(message)
    }

    fn ask(&self, message: M, timeout: Duration) -> BoxFuture<'_, Result<M::Reply, AskError>> {
        Box::pin(self.route.ask(message, timeout))
    }

    fn name(&self) -> &str {
        &self.route.name
    }
}

impl<M: RemoteMessage> Remote<M> {
    /// A recipient of `M`s over `route`.
    pub(super) fn recipient(route: Arc<Route>) -> Recipient<M> {
        Recipient::new(Arc::new(Self {
            route,
            message: PhantomData,
        }))
    }
}

/// The address of an actor of type `A` in another process, by its name
/// ([`Node::addr`](super::Node::addr)): `tell`, `try_tell` and `ask` any message `A`
/// handles that crosses processes, as [`Addr`](crate::actor::Addr) does locally.
/// Letters from one address (and its clones) arrive in the order sent.
pub struct RemoteAddr<A> {
    route: Arc<Route>,
    actor: PhantomData<fn(A)>,
}

impl<A> Clone for RemoteAddr<A> {
    fn clone(&self) -> Self {
        Self {
            route: Arc::clone(&self.route),
            actor: PhantomData,
        }
    }
}

impl<A> std::fmt::Debug for RemoteAddr<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteAddr({})", self.route.name)
    }
}

impl<A: Actor> RemoteAddr<A> {
    pub(super) fn new(route: Arc<Route>) -> Self {
        Self {
            route,
            actor: PhantomData,
        }
    }

    /// The actor's name.
    pub fn name(&self) -> &str {
        &self.route.name
    }

    /// Sends `message`, waiting only while this node's outbox for the actor is full.
    ///
    /// # Errors
    ///
    /// [`SendError::Unreachable`] (no live node holds the name, or Redis is down), or
    /// [`SendError::Unserializable`]; the message is reported to dead letters.
    pub async fn tell<M: RemoteMessage>(&self, message: M) -> Result<(), SendError>
    where
        A: Handler<M>,
    {
        self.route.tell(message).await
    }

    /// Sends `message` if the outbox has room now; hands it back otherwise.
    ///
    /// # Errors
    ///
    /// [`TryTellError::Full`], [`TryTellError::Unreachable`] or
    /// [`TryTellError::Unserializable`], with the message.
    pub fn try_tell<M: RemoteMessage>(&self, message: M) -> Result<(), TryTellError<M>>
    where
        A: Handler<M>,
    {
        self.route.try_tell(message)
    }

    /// Sends `message` and waits for the reply, at most
    /// [`ASK_TIMEOUT`](crate::actor::ASK_TIMEOUT).
    ///
    /// # Errors
    ///
    /// Not sent, not delivered there, no reply in time, or the actor failed first.
    pub async fn ask<M: RemoteMessage>(&self, message: M) -> Result<M::Reply, AskError>
    where
        A: Handler<M>,
    {
        self.route.ask(message, crate::actor::ASK_TIMEOUT).await
    }

    /// Sends `message` and waits for the reply, at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    pub async fn ask_within<M: RemoteMessage>(
        &self,
        message: M,
        timeout: Duration,
    ) -> Result<M::Reply, AskError>
    where
        A: Handler<M>,
    {
        self.route.ask(message, timeout).await
    }

    /// A recipient of one message type it handles.
    pub fn recipient<M: RemoteMessage>(&self) -> Recipient<M>
    where
        A: Handler<M>,
    {
        Remote::recipient(Arc::clone(&self.route))
    }
}
