//! Sending to a remote actor: a [`Recipient`] whose letters go, in the order sent,
//! through this node's outbox for the name — a bounded queue and a writer appending
//! them to the name's mailbox stream in batches (`crate::stream::writer`).

use std::any::type_name;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::letter::{Letter, Reply};
use super::{Inner, RemoteError, RemoteMessage, registry};
use crate::actor::addr::{BoxFuture, Receives};
use crate::actor::{AskError, Reason, Recipient, SendError, TryTellError};
use crate::stream::writer::{Bounds, StreamWriter};
use crate::stream::{WireError, wire};

/// Letters waiting here for the writer, per name.
const QUEUED: usize = 1024;

/// Letters a mailbox stream holds unacknowledged before its writers wait.
const BACKLOG: u64 = 10_000;

/// How long a tell waits before it looks again for room in a full outbox.
const ROOM_WAIT: Duration = Duration::from_millis(1);

/// The letters for one remote name, in the wire format.
pub(super) type Outbox = StreamWriter<Vec<u8>>;

/// A recipient of `M`s for the remote actor `name`.
pub(super) async fn recipient<M: RemoteMessage>(
    inner: &Arc<Inner>,
    name: &str,
) -> Result<Recipient<M>, RemoteError> {
    let key = inner.name_key(name);
    let holder = registry::holders(&mut inner.redis.clone(), &[key])
        .await?
        .pop()
        .flatten()
        .ok_or_else(|| RemoteError::NotFound(name.to_owned()))?;
    inner
        .known
        .lock()
        .entry(name.to_owned())
        .or_default()
        .holder = Some(holder);
    let outbox = outbox(inner, name)?;
    Ok(Recipient::new(Arc::new(Remote::<M> {
        inner: Arc::clone(inner),
        name: name.to_owned(),
        outbox,
        message: PhantomData,
    })))
}

/// The node's outbox for `name`, started with the first recipient.
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
    // The writer ends once the node and every recipient have let the outbox go.
    let (outbox, _writer) =
        StreamWriter::spawn(inner.url.clone(), inner.mailbox_key(name), encode, bounds)?;
    let outbox = Arc::new(outbox);
    outboxes.insert(name.to_owned(), Arc::clone(&outbox));
    Ok(outbox)
}

/// A remote actor, as a recipient of `M`s sees it.
struct Remote<M> {
    inner: Arc<Inner>,
    name: String,
    outbox: Arc<Outbox>,
    message: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> Remote<M> {
    /// `message` as a letter, or why it cannot go.
    fn letter(&self, message: &M, ask: Option<u64>) -> Result<Vec<u8>, SendError> {
        if !self.inner.reachable(&self.name) {
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

    /// Reports a message not sent, for `error`.
    fn refused(&self, error: SendError) -> SendError {
        let reason = match error {
            SendError::Unserializable => Reason::Unreadable("does not serialize".to_owned()),
            _ => Reason::Unreachable,
        };
        self.inner
            .dead_letters
            .report(&self.name, type_name::<M>(), reason);
        error
    }

    /// Queues `letter` in the outbox, waiting for room while the actor is reachable.
    async fn queue(&self, mut letter: Vec<u8>) -> Result<(), SendError> {
        loop {
            match self.outbox.try_send(letter) {
                Ok(()) => return Ok(()),
                Err(back) => letter = back,
            }
            if !self.inner.reachable(&self.name) {
                return Err(self.refused(SendError::Unreachable));
            }
            tokio::time::sleep(ROOM_WAIT).await;
        }
    }

    async fn ask(&self, message: M, timeout: Duration) -> Result<M::Reply, AskError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let (ask, reply) = self.inner.asks.expect();
        let letter = match self.letter(&message, Some(ask)) {
            Ok(letter) => letter,
            Err(error) => {
                self.inner.asks.forget(ask);
                return Err(self.refused(error).into());
            }
        };
        drop(message);
        let asked = async {
            self.queue(letter).await?;
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

impl<M: RemoteMessage> Receives<M> for Remote<M> {
    fn tell(&self, message: M) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(async move {
            let letter = self.letter(&message, None).map_err(|e| self.refused(e))?;
            self.queue(letter).await
        })
    }

    fn try_tell(&self, message: M) -> Result<(), TryTellError<M>> {
        let letter = match self.letter(&message, None) {
            Ok(letter) => letter,
            Err(SendError::Unserializable) => return Err(TryTellError::Unserializable(message)),
            Err(_) => return Err(TryTellError::Unreachable(message)),
        };
        self.outbox
            .try_send(letter)
            .map_err(|_| TryTellError::Full(message))
    }

    fn ask(&self, message: M, timeout: Duration) -> BoxFuture<'_, Result<M::Reply, AskError>> {
        Box::pin(Self::ask(self, message, timeout))
    }

    fn name(&self) -> &str {
        &self.name
    }
}
