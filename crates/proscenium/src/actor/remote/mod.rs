//! Actors across processes and hosts, through Redis. A [`Node`] joins one actor
//! system to the others that share a Redis: it *exports* local actors by name, and
//! hands out [`Recipient`]s and [`RemoteAddr`]s for actors exported elsewhere, with the
//! same `tell`, `try_tell` and `ask` as local ones.
//!
//! - **Found by name.** A name is a key in Redis holding the id of the node whose
//!   actor has it, renewed every `[redis] heartbeat` and gone after three missed: a
//!   node that dies lets its names expire, and a name is never held by two nodes.
//! - **A mailbox in Redis.** Each exported name has a stream its letters are appended
//!   to (a node's outbox writes up to 256 a round trip, bounded: while 10,000 wait
//!   unacknowledged, senders wait); the holding node reads it as the only consumer of
//!   its group, in order, and acknowledges each letter once its handler has finished.
//!   A new holder — the actor's process restarted — first takes over what the last
//!   one left pending, so a message told before a crash is handled after it
//!   (at-least-once); one delivered more than `max_deliveries` times goes to the
//!   stream `…:dead` and to the dead letters instead.
//! - **Order.** Letters from one sender (one [`Recipient`] and its clones, in one
//!   node) reach the actor in the order sent.
//! - **Unreachable is an error.** A tell to a name no live node holds, or while
//!   Redis is down, fails with [`SendError::Unreachable`](super::SendError::Unreachable) and is a dead letter; an
//!   ask gets no reply past its timeout. [`Node::watch`] tells a watcher
//!   [`Terminated`] when the name's holder stops or its process dies: the name gone
//!   for two heartbeats past its expiry (five heartbeats after the last renewal), or
//!   taken by another node.
//! - **Serde, checked at compile time.** Only a [`RemoteMessage`] — a message and a
//!   reply that serialize — can be exported or sent to another process.
//!
//! # Example
//!
//! ```no_run
//! use proscenium::actor::remote::Node;
//! use proscenium::actor::{Actor, Context, Handler, Message, Props, System};
//! use proscenium::config::RedisSpec;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Ping(u32);
//! impl Message for Ping {
//!     type Reply = u32;
//! }
//!
//! struct Ponger;
//! impl Actor for Ponger {}
//! impl Handler<Ping> for Ponger {
//!     fn handle(&mut self, Ping(n): Ping, _: &mut Context<Self>) -> u32 {
//!         n + 1
//!     }
//! }
//!
//! let redis = RedisSpec { url: Some("redis://127.0.0.1:6379".into()), ..RedisSpec::default() };
//! let system = System::new();
//! system.block_on(async {
//!     // In one process:
//!     let node = Node::join(&system, &redis).await.unwrap();
//!     let ponger = system.spawn(Props::named("ponger"), || Ponger);
//!     node.export::<Ping>(&ponger).await.unwrap();
//!     // In any process:
//!     let ponger = node.recipient::<Ping>("ponger").await.unwrap();
//!     assert_eq!(ponger.ask(Ping(1)).await.unwrap(), 2);
//! });
//! ```
//!
//! A message that does not serialize cannot be sent to another process:
//!
//! ```compile_fail
//! # use proscenium::actor::{Message, remote::Node};
//! struct Local(std::sync::Mutex<u8>); // Send, but no serde
//! impl Message for Local {
//!     type Reply = ();
//! }
//! # async fn f(node: Node) {
//! let _ = node.recipient::<Local>("anyone").await;
//! # }
//! ```

mod inbox;
mod letter;
mod outbox;
mod registry;
mod replies;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use self::inbox::Export;
pub use self::outbox::RemoteAddr;
use self::outbox::{Outbox, Remote};
use super::{Actor, Addr, DeadLetters, Handler, Message, Recipient, System, Terminated};
use crate::config::RedisSpec;
use crate::counters::User;
use crate::stream::RedisTarget;
use crate::stream::{Connection, Event};

/// A message that may cross processes: it and its reply serialize. Every such type
/// is one; no impl is written by hand.
pub trait RemoteMessage: Message<Reply: Event> + Event {}

impl<M: Message<Reply: Event> + Event> RemoteMessage for M {}

/// Why a node could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// No `[redis] url` is configured.
    #[error("no Redis is configured: set [redis] url or PROSCENIUM_REDIS_URL")]
    NoRedis,
    /// Redis refused, or could not be reached.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// The name is held by another live node.
    #[error("the actor name `{name}` is held by node {holder}")]
    Taken {
        /// The name asked for.
        name: String,
        /// The node holding it.
        holder: String,
    },
    /// No live node holds the name.
    #[error("no live node holds an actor named `{0}`")]
    NotFound(String),
    /// The node's thread could not be started.
    #[error("starting the node's thread: {0}")]
    Start(#[from] std::io::Error),
    /// The node has left.
    #[error("the node has left")]
    Left,
}

/// The key prefix of everything a node keeps in Redis.
const PREFIX: &str = "proscenium:actors";

/// The shortest heartbeat: a name's expiry is three of them.
const LEAST_HEARTBEAT: Duration = Duration::from_millis(10);

/// One actor system's membership of the nodes sharing a Redis: the names it exports,
/// the names it has looked up, and the tasks (on a thread of the node's own) that
/// renew, read and reply. Leaving — [`leave`](Self::leave), or dropping it — lets go
/// of its names.
pub struct Node {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
    end: Option<oneshot::Sender<End>>,
}

/// How a node's thread ends.
enum End {
    /// Letting go of its names.
    Leave,
    /// As a process killed would: its names left to expire, its letters pending.
    #[cfg(test)]
    Crash,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("id", &self.inner.id).finish()
    }
}

/// What a node's parts share.
pub(super) struct Inner {
    /// This node's id: host, process and a random part, unique per start.
    id: String,
    /// The Redis it joined through, for the connections its parts make.
    target: RedisTarget,
    heartbeat: Duration,
    max_deliveries: u64,
    /// The node's shared connection: renewals, lookups, acknowledgements, replies.
    redis: Connection,
    /// The runtime of the node's thread, where its tasks run.
    runtime: tokio::runtime::Handle,
    dead_letters: Arc<DeadLetters>,
    /// Whether the last heartbeat reached Redis.
    redis_up: AtomicBool,
    stopping: AtomicBool,
    exports: Mutex<HashMap<String, Arc<Export>>>,
    /// Names looked up or watched: who held each at the last heartbeat.
    known: Mutex<HashMap<String, Known>>,
    outboxes: Mutex<HashMap<String, Arc<Outbox>>>,
    asks: replies::Waiting,
}

/// A remote name as this node last saw it.
#[derive(Default)]
struct Known {
    holder: Option<String>,
    /// Whether a node holds it, as its routes read it on every send (no lock).
    held: Arc<AtomicBool>,
    /// Since when the name has been seen unheld, its holder still taken to live.
    unheld_since: Option<std::time::Instant>,
    watchers: Vec<Recipient<Terminated>>,
}

impl Known {
    fn set_holder(&mut self, holder: Option<String>) {
        self.held.store(holder.is_some(), Ordering::Relaxed);
        self.holder = holder;
    }
}

impl Node {
    /// Joins the nodes sharing the Redis `redis` names, for the actors of `system`.
    ///
    /// # Errors
    ///
    /// No Redis configured, Redis not reachable, or the node's thread not started.
    pub async fn join(system: &System, redis: &RedisSpec) -> Result<Self, RemoteError> {
        let target = redis.target().ok_or(RemoteError::NoRedis)?;
        let target = target.for_user(User::Actor);
        let id = node_id();
        let (handle_tx, handle_rx) = oneshot::channel();
        let (end, ended) = oneshot::channel::<End>();
        let inner_slot: Arc<Mutex<Option<Arc<Inner>>>> = Arc::default();
        let slot = Arc::clone(&inner_slot);
        let thread = crate::rt::runtime::spawn_thread(format!("actor-node-{id}"), move |rt| {
            rt.block_on(async move {
                let _ = handle_tx.send(tokio::runtime::Handle::current());
                let end = ended.await.unwrap_or(End::Leave);
                let inner = slot.lock().take();
                if let (End::Leave, Some(inner)) = (end, inner) {
                    inner.let_go_all().await;
                }
            });
        })?;
        let started = Started {
            end: Some(end),
            thread: Some(thread),
        };
        let runtime = handle_rx.await.map_err(|_| RemoteError::Left)?;
        let connecting = target.clone();
        let redis_connection =
            runtime
                .spawn(async move {
                    crate::stream::manager(&connecting, crate::stream::REPLY_WITHIN).await
                })
                .await
                .map_err(|_| RemoteError::Left)?
                .map_err(|e| match e {
                    crate::stream::StreamError::Redis(e) => RemoteError::Redis(e),
                    crate::stream::StreamError::Wire(_) => RemoteError::Left,
                })?;
        let inner = Arc::new(Inner {
            id,
            target,
            heartbeat: redis.heartbeat.max(LEAST_HEARTBEAT),
            max_deliveries: u64::try_from(redis.max_deliveries).unwrap_or(u64::MAX),
            redis: redis_connection,
            runtime,
            dead_letters: system.dead_letters_arc(),
            redis_up: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            exports: Mutex::default(),
            known: Mutex::default(),
            outboxes: Mutex::default(),
            asks: replies::Waiting::default(),
        });
        *inner_slot.lock() = Some(Arc::clone(&inner));
        inner.runtime.spawn(heartbeats(Arc::clone(&inner)));
        inner.runtime.spawn(replies::read(Arc::clone(&inner)));
        let node = started.into_node(inner);
        Ok(node)
    }

    /// This node's id (host, process, and a random part).
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Makes `addr` reachable from other processes by its name, for messages of type
    /// `M` (export it once per type it takes remotely). The name is let go when the
    /// actor stops or the node leaves.
    ///
    /// # Errors
    ///
    /// The name is held by another live node, or Redis cannot be reached.
    pub async fn export<M: RemoteMessage>(
        &self,
        addr: &Addr<impl Handler<M>>,
    ) -> Result<(), RemoteError> {
        let inner = Arc::clone(&self.inner);
        let addr = addr.clone();
        self.inner
            .run(async move { inbox::export::<M, _>(&inner, addr).await })
            .await
    }

    /// A recipient of `M`s for the actor named `name` in whichever process holds it.
    ///
    /// # Errors
    ///
    /// No live node holds the name, or Redis cannot be reached.
    pub async fn recipient<M: RemoteMessage>(
        &self,
        name: &str,
    ) -> Result<Recipient<M>, RemoteError> {
        self.route(name).await.map(Remote::recipient)
    }

    /// The address of the actor of type `A` named `name` in whichever process holds
    /// it: `tell` and `ask` any message `A` handles that crosses processes.
    ///
    /// # Errors
    ///
    /// No live node holds the name, or Redis cannot be reached.
    pub async fn addr<A: Actor>(&self, name: &str) -> Result<RemoteAddr<A>, RemoteError> {
        self.route(name).await.map(RemoteAddr::new)
    }

    async fn route(&self, name: &str) -> Result<Arc<outbox::Route>, RemoteError> {
        let inner = Arc::clone(&self.inner);
        let name = name.to_owned();
        self.inner
            .run(async move { outbox::route(&inner, &name).await })
            .await
    }

    /// Tells `watcher` [`Terminated`] when the actor named `name` stops — its holder
    /// lets the name go, or its process dies and the name expires — or at once if no
    /// live node holds it.
    ///
    /// # Errors
    ///
    /// Redis cannot be reached.
    pub async fn watch(
        &self,
        name: &str,
        watcher: Recipient<Terminated>,
    ) -> Result<(), RemoteError> {
        let inner = Arc::clone(&self.inner);
        let name = name.to_owned();
        self.inner
            .run(async move {
                let key = inner.name_key(&name);
                let holder = registry::holders(&mut inner.redis.clone(), &[key])
                    .await?
                    .pop()
                    .flatten();
                let mut known = inner.known.lock();
                let entry = known.entry(name.clone()).or_default();
                entry.set_holder(holder.clone());
                match holder {
                    Some(_) => entry.watchers.push(watcher),
                    None => inner.terminated(&name, vec![watcher]),
                }
                Ok(())
            })
            .await
    }

    /// Leaves: lets go of every name this node holds (letters still in their
    /// mailboxes stay there, for the next holder) and stops its thread.
    pub fn leave(mut self) {
        self.end(End::Leave);
    }

    /// Ends as a killed process would: names left to expire, letters left pending.
    #[cfg(test)]
    pub(crate) fn crash(mut self) {
        self.end(End::Crash);
    }

    fn end(&mut self, end: End) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        if let Some(tx) = self.end.take() {
            let _ = tx.send(end);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.inner.outboxes.lock().clear();
        self.inner.asks.clear();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.end(End::Leave);
    }
}

/// A node's thread while the node is being joined: ended if joining fails.
struct Started {
    end: Option<oneshot::Sender<End>>,
    thread: Option<JoinHandle<()>>,
}

impl Started {
    fn into_node(mut self, inner: Arc<Inner>) -> Node {
        Node {
            inner,
            thread: self.thread.take(),
            end: self.end.take(),
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(tx) = self.end.take() {
            let _ = tx.send(End::Leave);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Renews this node's names and looks at those it knows, every heartbeat.
async fn heartbeats(inner: Arc<Inner>) {
    while !inner.stopping() {
        inner.beat().await;
        tokio::time::sleep(inner.heartbeat).await;
    }
}

impl Inner {
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// How long a name lives without a renewal: three heartbeats.
    fn expiry(&self) -> Duration {
        self.heartbeat * 3
    }

    fn name_key(&self, name: &str) -> String {
        format!("{PREFIX}:name:{name}")
    }

    fn mailbox_key(&self, name: &str) -> String {
        format!("{PREFIX}:mailbox:{name}")
    }

    fn replies_key(&self, node: &str) -> String {
        format!("{PREFIX}:replies:{node}")
    }

    /// Runs `work` on the node's runtime (where its connection lives), from any.
    async fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, RemoteError>> + Send + 'static,
    ) -> Result<T, RemoteError> {
        if self.stopping() {
            return Err(RemoteError::Left);
        }
        self.runtime
            .spawn(work)
            .await
            .map_err(|_| RemoteError::Left)?
    }

    /// One heartbeat: renews the names exported here, and reads who holds the names
    /// known here, telling watchers of any whose holder is gone or changed.
    async fn beat(&self) {
        let mut redis = self.redis.clone();
        let mut up = true;
        let exports: Vec<Arc<Export>> = self.exports.lock().values().cloned().collect();
        for export in exports {
            let key = self.name_key(&export.name);
            match registry::take(&mut redis, &key, &self.id, self.expiry()).await {
                Ok(held) => export.set_held(held),
                Err(error) => {
                    tracing::warn!(name = %export.name, %error, "renewing an actor's name failed");
                    up = false;
                }
            }
        }
        let names: Vec<String> = self.known.lock().keys().cloned().collect();
        let keys: Vec<String> = names.iter().map(|name| self.name_key(name)).collect();
        match registry::holders(&mut redis, &keys).await {
            Ok(holders) => self.saw(names, holders),
            Err(error) => {
                tracing::warn!(%error, "looking up remote actors' names failed");
                up = false;
            }
        }
        self.redis_up.store(up, Ordering::Relaxed);
    }

    /// Records who holds each of `names`; watchers of a name whose holder changed, or
    /// went and has not come back for two heartbeats, are told it terminated. (A
    /// Redis restarted without its data has lost every name; a live holder takes its
    /// own again at its next heartbeat, and is not taken for dead.)
    fn saw(&self, names: Vec<String>, holders: Vec<Option<String>>) {
        let mut known = self.known.lock();
        for (name, holder) in names.into_iter().zip(holders) {
            let Some(entry) = known.get_mut(&name) else {
                continue;
            };
            if holder.is_none() && entry.holder.is_some() {
                let since = *entry
                    .unheld_since
                    .get_or_insert_with(std::time::Instant::now);
                if since.elapsed() < self.heartbeat * 2 {
                    continue;
                }
            }
            entry.unheld_since = None;
            if entry.holder.is_some() && entry.holder != holder {
                let watchers = std::mem::take(&mut entry.watchers);
                self.terminated(&name, watchers);
            }
            entry.set_holder(holder);
        }
    }

    /// Tells each of `watchers` that `name` terminated.
    fn terminated(&self, name: &str, watchers: Vec<Recipient<Terminated>>) {
        for watcher in watchers {
            let name = name.to_owned();
            self.runtime.spawn(async move {
                let _ = watcher.tell(Terminated { name }).await;
            });
        }
    }

    /// Lets go of every name exported here.
    async fn let_go_all(&self) {
        let exports: Vec<Arc<Export>> = self.exports.lock().drain().map(|(_, e)| e).collect();
        let mut redis = self.redis.clone();
        for export in exports {
            export.end();
            let key = self.name_key(&export.name);
            if let Err(error) = registry::let_go(&mut redis, &key, &self.id).await {
                tracing::warn!(name = %export.name, %error, "letting an actor's name go failed: it expires");
            }
        }
    }
}

/// A node id no other start shares: the host, the process, and the time.
fn node_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "host".to_owned(), |h| h.trim().to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{host}-{}-{nanos:x}", std::process::id())
}
