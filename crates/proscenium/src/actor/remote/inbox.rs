//! Receiving for the actors a node exports. Each exported name has a mailbox stream
//! and a reader task here: while this node holds the name it first takes over what
//! earlier holders left pending (a process that died mid-message), then reads new
//! letters, no more than [`IN_FLIGHT`] at a time, and posts each to the actor's
//! mailbox in stream order (so one sender's letters arrive in the order sent). A
//! letter is acknowledged — with its reply, if it was an ask, in the same round trip
//! — once its handler has finished. Every [`TRIM_EVERY`] the stream is trimmed of
//! what has been acknowledged, never further.

use std::any::type_name;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::letter::{Failure, Head, Received, Reply};
use super::{Inner, RemoteError, RemoteMessage, registry};
use crate::actor::addr::BoxFuture;
use crate::actor::{Addr, Handler, Reason};
use crate::rt::Backoff;
use crate::stream::writer::{FIRST_BACKOFF, MOST_BACKOFF};
use crate::stream::{FIELD, StreamReceiver};
use crate::wire;

/// The consumer group every mailbox stream is read as (by its holder alone).
const GROUP: &str = "mailbox";

/// Letters posted and not yet acknowledged, at most, per name.
const IN_FLIGHT: usize = 1024;

/// The most letters one read takes.
const READ_MOST: usize = 256;

/// How long a read waits before the reader looks whether to stop.
const READ_WAIT: Duration = Duration::from_millis(100);

/// How often a mailbox stream is trimmed of what has been acknowledged.
const TRIM_EVERY: Duration = Duration::from_secs(1);

/// Replies a reply stream keeps (about: trimmed as Redis finds it cheap), and how
/// long one lives after its last reply — its node may have died.
const REPLIES_KEPT: u64 = 10_000;
const REPLIES_LIVE_MS: u64 = 60_000;

/// An exported name: the message types its actor takes remotely, and whether this
/// node holds the name now.
pub(super) struct Export {
    pub(super) name: String,
    /// The exported actor's cell, to tell it from another of the same name.
    actor: usize,
    kinds: Mutex<HashMap<&'static str, Arc<dyn Deliver>>>,
    held: AtomicBool,
    ended: AtomicBool,
}

impl Export {
    /// Records whether this node holds the name, as the last renewal found.
    pub(super) fn set_held(&self, held: bool) {
        if self.held.swap(held, Ordering::Relaxed) && !held {
            tracing::error!(name = %self.name, "another node holds this actor's name now: its mailbox is read there");
        }
    }

    /// Stops reading the name's mailbox.
    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::Relaxed);
    }

    fn kind(&self, kind: &str) -> Option<Arc<dyn Deliver>> {
        self.kinds.lock().get(kind).cloned()
    }
}

/// Posts letters of one message type to a local actor.
trait Deliver: Send + Sync {
    /// Reads `letter` and queues its message in the actor's mailbox (waiting for room
    /// as a tell does); the future returned ends once the handler has, with the
    /// reply in the wire format if `ask`.
    fn post(
        &self,
        letter: Vec<u8>,
        ask: Option<u64>,
    ) -> BoxFuture<'_, Result<BoxFuture<'static, Option<Vec<u8>>>, Failure>>;
}

struct Posting<A: crate::actor::Actor, M> {
    addr: Addr<A>,
    message: PhantomData<fn(M)>,
}

impl<A: Handler<M>, M: RemoteMessage> Deliver for Posting<A, M> {
    fn post(
        &self,
        letter: Vec<u8>,
        ask: Option<u64>,
    ) -> BoxFuture<'_, Result<BoxFuture<'static, Option<Vec<u8>>>, Failure>> {
        Box::pin(async move {
            let letter: Received<M> = wire::decode(&letter).map_err(|_| Failure::Unreadable)?;
            let handled = self.addr.post(letter.message).await?;
            let done: BoxFuture<'static, Option<Vec<u8>>> = Box::pin(async move {
                let outcome = handled.await.map_err(|_| Failure::NoReply);
                reply(ask?, outcome)
            });
            Ok(done)
        })
    }
}

/// The reply to ask `ask`, in the wire format.
fn reply<R: serde::Serialize>(ask: u64, outcome: Result<R, Failure>) -> Option<Vec<u8>> {
    wire::encode(&Reply { ask, outcome })
        .inspect_err(|error| tracing::error!(%error, "a reply that does not serialize"))
        .ok()
}

/// Exports `addr` by its name for `M`s: takes the name (or adds `M` to the types a
/// name held here takes) and starts reading its mailbox.
pub(super) async fn export<M: RemoteMessage, A: Handler<M>>(
    inner: &Arc<Inner>,
    addr: Addr<A>,
) -> Result<(), RemoteError> {
    let name = addr.name().to_owned();
    let actor = Arc::as_ptr(&addr.cell).cast::<()>() as usize;
    let posting: Arc<dyn Deliver> = Arc::new(Posting::<A, M> {
        addr: addr.clone(),
        message: PhantomData,
    });
    let held_here = inner.exports.lock().get(&name).cloned();
    if let Some(export) = held_here {
        if export.actor != actor {
            return Err(RemoteError::Taken {
                name,
                holder: format!("{} (another actor of this node)", inner.id),
            });
        }
        export.kinds.lock().insert(type_name::<M>(), posting);
        return Ok(());
    }
    let key = inner.name_key(&name);
    let mut redis = inner.redis.clone();
    if !registry::take(&mut redis, &key, &inner.id, inner.expiry()).await? {
        let holder = registry::holders(&mut redis, &[key]).await?.pop().flatten();
        return Err(RemoteError::Taken {
            name,
            holder: holder.unwrap_or_default(),
        });
    }
    let export = Arc::new(Export {
        name: name.clone(),
        actor,
        kinds: Mutex::new(HashMap::from([(type_name::<M>(), posting)])),
        held: AtomicBool::new(true),
        ended: AtomicBool::new(false),
    });
    inner
        .exports
        .lock()
        .insert(name.clone(), Arc::clone(&export));
    let node = Arc::downgrade(inner);
    addr.cell.on_stop(
        &name,
        Box::new(move |name| {
            if let Some(inner) = node.upgrade() {
                let name = name.to_owned();
                let runtime = inner.runtime.clone();
                runtime.spawn(async move { inner.unexport(&name, actor).await });
            }
        }),
    );
    inner.runtime.spawn(read(Arc::clone(inner), export));
    Ok(())
}

impl Inner {
    /// Lets go of `name`, its actor `actor` having stopped.
    async fn unexport(&self, name: &str, actor: usize) {
        let export = {
            let mut exports = self.exports.lock();
            match exports.get(name) {
                Some(export) if export.actor == actor => exports.remove(name),
                _ => None,
            }
        };
        if let Some(export) = export {
            export.end();
            let key = self.name_key(name);
            if let Err(error) = registry::let_go(&mut self.redis.clone(), &key, &self.id).await {
                tracing::warn!(%name, %error, "letting an actor's name go failed: it expires");
            }
        }
    }
}

/// Reads `export`'s mailbox while the node runs and the export lasts.
async fn read(inner: Arc<Inner>, export: Arc<Export>) {
    let stream: Arc<str> = inner.mailbox_key(&export.name).into();
    let Some(mut receiver) = join(&inner, &stream).await else {
        return;
    };
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
    // Whether what earlier holders left pending has been taken over.
    let mut caught_up = false;
    let mut trimmed = Instant::now();
    while !inner.stopping() && !export.ended.load(Ordering::Relaxed) {
        if !export.held.load(Ordering::Relaxed) {
            caught_up = false;
            tokio::time::sleep(READ_WAIT).await;
            continue;
        }
        if trimmed.elapsed() >= TRIM_EVERY {
            trimmed = Instant::now();
            if let Err(error) = receiver.trim_acknowledged().await {
                tracing::warn!(%stream, %error, "trimming a mailbox failed: trying again");
            }
        }
        let room = in_flight.available_permits().min(READ_MOST);
        if room == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        let read = if caught_up {
            receiver.receive_encoded(room, READ_WAIT).await.map(|new| {
                new.into_iter()
                    .map(|(id, letter)| (id, letter, 1))
                    .collect::<Vec<_>>()
            })
        } else {
            receiver.take_over(room).await
        };
        let letters = match read {
            Ok(letters) => letters,
            Err(error) => {
                tracing::warn!(%stream, %error, "reading a mailbox failed: trying again");
                tokio::time::sleep(READ_WAIT).await;
                // Joined again: a Redis restarted without its data has lost the group.
                let Some(joined) = join(&inner, &stream).await else {
                    return;
                };
                receiver = joined;
                continue;
            }
        };
        caught_up |= letters.is_empty();
        for (id, letter, deliveries) in letters {
            let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                return;
            };
            let mailbox = Mailbox {
                inner: &inner,
                export: &export,
                stream: &stream,
            };
            if deliveries > inner.max_deliveries {
                let why = format!("delivered {deliveries} times, never acknowledged");
                mailbox
                    .dead_letter(&mut receiver, &id, letter.as_deref(), deliveries, why)
                    .await;
                continue;
            }
            mailbox.deliver(&mut receiver, id, letter, permit).await;
        }
    }
}

/// Joins the mailbox group of `stream` (made if missing), trying again until Redis
/// answers or the node leaves.
async fn join(inner: &Inner, stream: &str) -> Option<StreamReceiver> {
    StreamReceiver::join_retrying(&inner.target, stream, GROUP, &inner.id, READ_WAIT, || {
        inner.stopping()
    })
    .await
}

/// One exported name's mailbox, as its reader sees it.
struct Mailbox<'a> {
    inner: &'a Arc<Inner>,
    export: &'a Export,
    stream: &'a Arc<str>,
}

impl Mailbox<'_> {
    /// Posts letter `id` to the actor; acknowledges it (and replies) once handled.
    async fn deliver(
        &self,
        receiver: &mut StreamReceiver,
        id: String,
        letter: Option<Vec<u8>>,
        permit: OwnedSemaphorePermit,
    ) {
        let head = letter
            .as_deref()
            .map(wire::decode::<Head>)
            .unwrap_or(Err(wire::WireError::Empty));
        let (head, letter) = match (head, letter) {
            (Ok(head), Some(letter)) => (head, letter),
            (Err(error), letter) => {
                let why = error.to_string();
                return self
                    .dead_letter(receiver, &id, letter.as_deref(), 1, why)
                    .await;
            }
            (Ok(_), None) => unreachable!("a head read from no letter"),
        };
        let posted = match self.export.kind(&head.kind) {
            Some(posting) => posting.post(letter, head.ask).await,
            None => {
                let why = format!("a {} it takes no remote letters of", head.kind);
                self.report(why);
                Err(Failure::Unreadable)
            }
        };
        let done = posted.unwrap_or_else(|failure| {
            let reply = head.ask.and_then(|ask| reply::<()>(ask, Err(failure)));
            Box::pin(std::future::ready(reply))
        });
        let inner = Arc::clone(self.inner);
        let stream = Arc::clone(self.stream);
        self.inner.runtime.spawn(async move {
            finish(&inner, &stream, &id, &head.from, done.await).await;
            drop(permit);
        });
    }

    /// Moves letter `id` to the mailbox's dead-letter stream, and reports it.
    async fn dead_letter(
        &self,
        receiver: &mut StreamReceiver,
        id: &str,
        letter: Option<&[u8]>,
        deliveries: u64,
        why: String,
    ) {
        self.report(why);
        let dead = format!("{}:dead", self.stream);
        if let Err(error) = receiver.dead_letter(&dead, id, letter, deliveries).await {
            tracing::warn!(stream = %self.stream, %id, %error, "moving a letter to the dead letters failed: it stays pending");
        }
    }

    fn report(&self, why: String) {
        crate::actor::tally::dead_letter(crate::actor::tally::REMOTE);
        self.inner.dead_letters.report(
            &self.export.name,
            "a remote letter",
            Reason::Unreadable(why),
        );
    }
}

/// Acknowledges letter `id` of `stream`, sending `reply` to node `from` in the same
/// round trip; tried again with backoff while Redis cannot be reached.
async fn finish(inner: &Inner, stream: &str, id: &str, from: &str, reply: Option<Vec<u8>>) {
    let mut redis = inner.redis.clone();
    let to = inner.replies_key(from);
    let mut pipe = redis::pipe();
    if let Some(reply) = &reply {
        pipe.cmd("XADD")
            .arg(&to)
            .arg("MAXLEN")
            .arg("~")
            .arg(REPLIES_KEPT)
            .arg("*")
            .arg(FIELD)
            .arg(reply)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&to)
            .arg(REPLIES_LIVE_MS)
            .ignore();
    }
    pipe.cmd("XACK").arg(stream).arg(GROUP).arg(id).ignore();
    let mut backoff = Backoff::new(FIRST_BACKOFF, MOST_BACKOFF);
    while let Err(error) = pipe.query_async::<()>(&mut redis).await {
        if inner.stopping() {
            return;
        }
        tracing::warn!(%stream, %id, %error, "acknowledging a letter failed: trying again");
        tokio::time::sleep(backoff.next_delay()).await;
    }
}
