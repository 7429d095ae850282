//! Addresses: `Addr<A>` sends any message `A` handles; `Recipient<M>` sends one message
//! type to whichever actor handles it. `tell` is fire and forget (waiting only for room
//! under backpressure); `ask` waits for the reply, within a timeout.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::mailbox::{Control, Mailbox, Overflow, Push};
use super::spin::{Parked, spin_turn};
use super::traced::{self, Sending};
use super::{Actor, DeadLetters, Envelope, Handler, Message, Reason};

/// An actor's cell with its type erased: for its parent, and for shutdown.
pub(crate) trait AnyCell: Send + Sync {
    /// Queues an order ahead of its messages.
    fn order(&self, order: Control);
    /// Stops it: closes the mailbox, reporting what was queued to dead letters.
    fn stop(&self);
    /// Returns its kind: its type's name.
    fn kind(&self) -> &'static str;
    /// Returns the messages not yet handled.
    fn queued(&self) -> usize;
}

impl<A: Actor> AnyCell for Cell<A> {
    fn order(&self, order: Control) {
        self.mailbox.order(order);
    }

    fn stop(&self) {
        self.report_stopped(self.mailbox.close());
    }

    fn kind(&self) -> &'static str {
        std::any::type_name::<A>()
    }

    fn queued(&self) -> usize {
        self.mailbox.len()
    }
}

/// Told an actor's name when it stops.
pub(crate) type Watcher = Box<dyn FnOnce(&str) + Send>;

/// What every address of one actor shares.
pub(crate) struct Cell<A: Actor> {
    pub(crate) name: Arc<str>,
    pub(crate) mailbox: Mailbox<Box<dyn Envelope<A>>>,
    /// Told the actor's name when it stops (`Context::watch`).
    pub(crate) watchers: Mutex<Option<Vec<Watcher>>>,
    /// Where messages it cannot handle are reported.
    pub(crate) dead_letters: Arc<DeadLetters>,
    /// Its key in the system's table of actors to stop at shutdown.
    pub(crate) slot: usize,
}

impl<A: Actor> Cell<A> {
    /// Runs `watcher` when the actor stops — now, if it has.
    pub(crate) fn on_stop(&self, name: &str, watcher: Watcher) {
        let mut watchers = self.watchers.lock();
        match watchers.as_mut() {
            Some(list) => list.push(watcher),
            None => {
                drop(watchers);
                watcher(name);
            }
        }
    }

    /// Reports messages that will not be handled, the actor having stopped.
    pub(crate) fn report_stopped(&self, left: impl IntoIterator<Item = Box<dyn Envelope<A>>>) {
        for left in left {
            self.report(&*left, Reason::Stopped);
        }
    }

    /// Reports a message that will not be handled, for `reason`.
    fn report(&self, envelope: &dyn Envelope<A>, reason: Reason) {
        super::tally::dead_letter(std::any::type_name::<A>());
        self.dead_letters
            .report(&self.name, envelope.type_name(), reason);
    }

    /// Takes the watchers, once, as the actor stops.
    pub(crate) fn stopped(&self) -> Vec<Watcher> {
        self.watchers.lock().take().unwrap_or_default()
    }
}

/// Why a told message was not delivered; the message went to dead letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The mailbox was full and its policy is `fail`.
    #[error("the mailbox is full; the message went to dead letters")]
    Full,
    /// The mailbox was full and its policy dropped the message.
    #[error("the mailbox was full and dropped the message to dead letters")]
    Dropped,
    /// The actor has stopped.
    #[error("the actor has stopped; the message went to dead letters")]
    Stopped,
    /// The actor is in another process that is not known alive (its registry entry
    /// expired or was never there), or Redis cannot be reached.
    #[error("the remote actor cannot be reached; the message went to dead letters")]
    Unreachable,
    /// A message for a remote actor that does not serialize.
    #[error("the message does not serialize for a remote actor; it went to dead letters")]
    Unserializable,
}

/// Why [`Addr::try_tell`] did not queue a message: the message is handed back, and is
/// no dead letter.
#[derive(Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TryTellError<M> {
    /// The mailbox has no room now (whatever its policy: `try_tell` neither waits nor
    /// drops).
    #[error("the mailbox is full")]
    Full(M),
    /// The actor has stopped.
    #[error("the actor has stopped")]
    Stopped(M),
    /// The actor is in another process not known alive, or Redis is down.
    #[error("the remote actor cannot be reached")]
    Unreachable(M),
    /// The message does not serialize for a remote actor.
    #[error("the message does not serialize for a remote actor")]
    Unserializable(M),
}

impl<M> TryTellError<M> {
    /// Returns the message that was not queued.
    pub fn into_inner(self) -> M {
        match self {
            Self::Full(message)
            | Self::Stopped(message)
            | Self::Unreachable(message)
            | Self::Unserializable(message) => message,
        }
    }

    /// Whether the mailbox was full.
    pub fn is_full(&self) -> bool {
        matches!(self, Self::Full(_))
    }

    /// Whether the actor has stopped.
    pub fn is_stopped(&self) -> bool {
        matches!(self, Self::Stopped(_))
    }

    fn map<N>(self, f: impl FnOnce(M) -> N) -> TryTellError<N> {
        match self {
            Self::Full(message) => TryTellError::Full(f(message)),
            Self::Stopped(message) => TryTellError::Stopped(f(message)),
            Self::Unreachable(message) => TryTellError::Unreachable(f(message)),
            Self::Unserializable(message) => TryTellError::Unserializable(f(message)),
        }
    }
}

// By hand: a message need not be `Debug` for its error to be (as tokio's `TrySendError`).
impl<M> std::fmt::Debug for TryTellError<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Stopped(_) => f.write_str("Stopped(..)"),
            Self::Unreachable(_) => f.write_str("Unreachable(..)"),
            Self::Unserializable(_) => f.write_str("Unserializable(..)"),
        }
    }
}

/// Why an `ask` got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// Not delivered.
    #[error("not delivered: {0}")]
    Send(#[from] SendError),
    /// No reply within the timeout.
    #[error("no reply within the timeout")]
    Timeout,
    /// Delivered, but the actor failed or stopped before replying.
    #[error("the actor failed or stopped before replying")]
    NoReply,
}

/// How long an [`Addr::ask`] waits unless told otherwise.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// The address of a running actor of type `A`.
pub struct Addr<A: Actor> {
    pub(crate) cell: Arc<Cell<A>>,
}

impl<A: Actor> Clone for Addr<A> {
    fn clone(&self) -> Self {
        Self {
            cell: self.cell.clone(),
        }
    }
}

impl<A: Actor> std::fmt::Debug for Addr<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Addr({})", self.cell.name)
    }
}

/// A sealed message, with where its reply goes.
struct Sealed<M: Message> {
    message: M,
    reply: Option<oneshot::Sender<M::Reply>>,
}

impl<A: Handler<M>, M: Message> Envelope<A> for Sealed<M> {
    fn deliver(self: Box<Self>, actor: &mut A, ctx: &mut super::Context<A>) {
        let reply = actor.handle(self.message, ctx);
        if let Some(to) = self.reply {
            // The asker may have timed out and gone; nothing to do then.
            let _ = to.send(reply);
        }
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl<M: Message> Sealed<M> {
    /// The message in an envelope the mailbox handed back.
    fn open<A: Handler<M>>(envelope: Box<dyn Envelope<A>>) -> M {
        match envelope.into_any().downcast::<Self>() {
            Ok(sealed) => sealed.message,
            // The mailbox hands back the very envelope that was pushed, sealed here.
            Err(_) => unreachable!("an envelope changed its type in the mailbox"),
        }
    }
}

impl<A: Actor> Addr<A> {
    /// The actor's name.
    pub fn name(&self) -> &str {
        &self.cell.name
    }

    /// Whether the actor has stopped.
    pub fn is_stopped(&self) -> bool {
        self.cell.mailbox.is_closed()
    }

    /// Messages not yet handled: waiting in the mailbox, or taken for the turn in
    /// progress.
    pub fn queued(&self) -> usize {
        self.cell.mailbox.len()
    }

    /// Sends `message`, waiting only for room when the mailbox is full and its policy
    /// is `backpressure`. Messages from one sender arrive in the order sent.
    ///
    /// # Errors
    ///
    /// Full (policy `fail`), dropped (`drop-newest`, or `drop-oldest` with every
    /// waiting message already in the actor's hand), or stopped; the message is
    /// reported to dead letters.
    pub async fn tell<M: Message>(&self, message: M) -> Result<(), SendError>
    where
        A: Handler<M>,
    {
        self.send(Sealed {
            message,
            reply: None,
        })
        .await
    }

    /// Sends `message` if there is room now, without waiting and without dropping it:
    /// a full mailbox (whatever its policy) hands it back. A `drop-oldest` mailbox makes
    /// room by dropping its oldest message to dead letters.
    ///
    /// # Errors
    ///
    /// [`TryTellError::Full`] or [`TryTellError::Stopped`], with the message.
    pub fn try_tell<M: Message>(&self, message: M) -> Result<(), TryTellError<M>>
    where
        A: Handler<M>,
    {
        let sealed = traced::seal(
            Box::new(Sealed {
                message,
                reply: None,
            }),
            Sending::Tell,
        );
        self.settle(self.cell.mailbox.push(sealed))
            .map_err(|refused| refused.map(Sealed::open))
    }

    /// Sends `message` and waits for the reply, at most [`ASK_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// Not delivered, no reply in time, or the actor failed before replying.
    pub async fn ask<M: Message>(&self, message: M) -> Result<M::Reply, AskError>
    where
        A: Handler<M>,
    {
        self.ask_within(message, ASK_TIMEOUT).await
    }

    /// Sends `message` and waits for the reply, at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    pub async fn ask_within<M: Message>(
        &self,
        message: M,
        timeout: Duration,
    ) -> Result<M::Reply, AskError>
    where
        A: Handler<M>,
    {
        let (tx, rx) = oneshot::channel();
        let deadline = tokio::time::Instant::now() + timeout;
        let sent = tokio::time::timeout_at(
            deadline,
            self.send(Sealed {
                message,
                reply: Some(tx),
            }),
        )
        .await;
        match sent {
            Err(_) => return Err(AskError::Timeout),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok(())) => {}
        }
        // A reply is often µs away: look for it between turns of a short spin before
        // parking this thread to wait (see `spin::spin_turn`).
        let mut rx = rx;
        let mut spinning = None;
        loop {
            match rx.try_recv() {
                Ok(reply) => return Ok(reply),
                Err(oneshot::error::TryRecvError::Closed) => return Err(AskError::NoReply),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let Some(_turn) = spin_turn(&mut spinning) else {
                break;
            };
            tokio::task::yield_now().await;
        }
        let _parked = Parked::new();
        match tokio::time::timeout_at(deadline, rx).await {
            Err(_) => Err(AskError::Timeout),
            Ok(Err(_)) => Err(AskError::NoReply),
            Ok(Ok(reply)) => Ok(reply),
        }
    }

    /// Stops the actor after the message it is handling; what is queued goes to dead
    /// letters.
    pub fn stop(&self) {
        self.cell.stop();
    }

    /// A type-erased address for one message type.
    pub fn recipient<M: Message>(&self) -> Recipient<M>
    where
        A: Handler<M>,
    {
        Recipient(Arc::new(self.clone()))
    }

    /// Queues `message` as `tell` does, with a channel its reply comes back on once
    /// the handler has finished (closed if it failed or the actor stopped first).
    #[cfg(feature = "redis")]
    pub(crate) async fn post<M: Message>(
        &self,
        message: M,
    ) -> Result<oneshot::Receiver<M::Reply>, SendError>
    where
        A: Handler<M>,
    {
        let (tx, rx) = oneshot::channel();
        self.send(Sealed {
            message,
            reply: Some(tx),
        })
        .await?;
        Ok(rx)
    }

    /// Sends `sealed` as `tell` does: what is not queued goes to dead letters.
    async fn send<M: Message>(&self, sealed: Sealed<M>) -> Result<(), SendError>
    where
        A: Handler<M>,
    {
        let sending = if sealed.reply.is_some() {
            Sending::Ask
        } else {
            Sending::Tell
        };
        let sealed = traced::seal(Box::new(sealed), sending);
        let overflow = self.cell.mailbox.overflow();
        let pushed = match overflow {
            Overflow::Backpressure => self.cell.mailbox.push_waiting(sealed).await,
            _ => self.cell.mailbox.push(sealed),
        };
        self.settle(pushed).map_err(|refused| match refused {
            TryTellError::Full(envelope) => {
                self.cell.report(&*envelope, Reason::Overflow);
                match overflow {
                    Overflow::Backpressure | Overflow::Fail => SendError::Full,
                    Overflow::DropNewest | Overflow::DropOldest => SendError::Dropped,
                }
            }
            // A local mailbox refuses only as full or closed.
            TryTellError::Stopped(envelope)
            | TryTellError::Unreachable(envelope)
            | TryTellError::Unserializable(envelope) => {
                self.cell.report(&*envelope, Reason::Stopped);
                SendError::Stopped
            }
        })
    }

    /// Turns a push's outcome into `Ok` once queued (reporting a message the policy
    /// displaced) or the envelope refused, for the caller to account for.
    fn settle(
        &self,
        pushed: Push<Box<dyn Envelope<A>>>,
    ) -> Result<(), TryTellError<Box<dyn Envelope<A>>>> {
        match pushed {
            Push::Queued => Ok(()),
            Push::Displaced(oldest) => {
                self.cell.report(&*oldest, Reason::Overflow);
                Ok(())
            }
            Push::Full(envelope) => Err(TryTellError::Full(envelope)),
            Push::Closed(envelope) => Err(TryTellError::Stopped(envelope)),
        }
    }
}

/// Sends one message type to an actor whose type is erased.
pub struct Recipient<M: Message>(Arc<dyn Receives<M>>);

impl<M: Message> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<M: Message> std::fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recipient({})", self.0.name())
    }
}

pub(crate) type BoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// What a [`Recipient`] sends through: a local actor's address, or a remote actor's
/// outbox (`remote::outbox`).
pub(crate) trait Receives<M: Message>: Send + Sync {
    fn tell(&self, message: M) -> BoxFuture<'_, Result<(), SendError>>;
    fn try_tell(&self, message: M) -> Result<(), TryTellError<M>>;
    fn ask(&self, message: M, timeout: Duration) -> BoxFuture<'_, Result<M::Reply, AskError>>;
    fn name(&self) -> &str;
}

impl<A: Handler<M>, M: Message> Receives<M> for Addr<A> {
    fn tell(&self, message: M) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(Addr::tell(self, message))
    }

    fn try_tell(&self, message: M) -> Result<(), TryTellError<M>> {
        Addr::try_tell(self, message)
    }

    fn ask(&self, message: M, timeout: Duration) -> BoxFuture<'_, Result<M::Reply, AskError>> {
        Box::pin(self.ask_within(message, timeout))
    }

    fn name(&self) -> &str {
        &self.cell.name
    }
}

impl<M: Message> Recipient<M> {
    #[cfg(feature = "redis")]
    pub(crate) fn new(to: Arc<dyn Receives<M>>) -> Self {
        Self(to)
    }

    /// The actor's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// As [`Addr::tell`].
    ///
    /// # Errors
    ///
    /// As [`Addr::tell`].
    pub async fn tell(&self, message: M) -> Result<(), SendError> {
        self.0.tell(message).await
    }

    /// As [`Addr::try_tell`].
    ///
    /// # Errors
    ///
    /// As [`Addr::try_tell`]: the message comes back.
    pub fn try_tell(&self, message: M) -> Result<(), TryTellError<M>> {
        self.0.try_tell(message)
    }

    /// As [`Addr::ask`]: waits at most [`ASK_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// As [`Addr::ask`].
    pub async fn ask(&self, message: M) -> Result<M::Reply, AskError> {
        self.ask_within(message, ASK_TIMEOUT).await
    }

    /// As [`Addr::ask_within`].
    ///
    /// # Errors
    ///
    /// As [`Addr::ask`].
    pub async fn ask_within(&self, message: M, timeout: Duration) -> Result<M::Reply, AskError> {
        self.0.ask(message, timeout).await
    }
}
