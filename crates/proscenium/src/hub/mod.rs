//! A pub/sub hub: posts published to topics (`/picture/42/likes`) from any handler,
//! actor, stage or thread reach every subscription whose pattern matches
//! (`/picture/*/likes`, Redis's `PSUBSCRIBE` patterns) — WebSockets, event streams,
//! actors, stages (through [`Hub::feed_with`]), or code reading a [`Subscription`].
//!
//! In-process by default. With `[feeds] redis = "redis://..."` every replica sharing
//! that Redis — prefork workers, processes, hosts — sees every post through Redis
//! pub/sub, and reconnects and resubscribes by itself after Redis restarts. Pub/sub is
//! at-most-once: what is published while a replica is cut off from Redis does not
//! reach it. Each replica numbers its posts, so a receiver that finds a gap in a
//! publisher's numbers counts the posts it missed ([`Hub::lost`]), and so does a
//! publisher whose posts could not be handed to Redis; nothing is lost unannounced. A
//! topic that must be replayed in full belongs on a Redis stream
//! (`proscenium::stream`, with the `redis` feature), not here.
//!
//! Fan-out costs one post per message, not one per subscriber: every subscriber
//! shares it, and the forms the transports need (a WebSocket text, a server-sent
//! event) are made once. Every subscriber's queue is bounded, so a slow one drops its
//! own oldest posts (counted) and never slows the publisher or the others.
//!
//! A replica keeps the last posts it saw (`[feeds] history`, 1,000 by default, and at
//! most `[feeds] history_bytes` of them, 16 MiB), so an event stream's client that
//! reconnects with `Last-Event-ID` — here or on another replica — gets what it missed
//! ([`Hub::sse`]). A post is at most `[feeds] max_post` bytes (1 MiB); a larger one is
//! refused ([`PublishError`]). A post owns a copy of its payload: a request body
//! published as it came would keep its room in the server's budget for bodies for as
//! long as the history kept the post.
//!
//! # Example
//!
//! ```
//! use proscenium::{App, Path, StatusCode};
//! use proscenium::hub::Hub;
//! use proscenium::sse::LastEventId;
//! use proscenium::ws::WebSocketUpgrade;
//!
//! let hub = Hub::new();
//! let (likes, feed, events) = (hub.clone(), hub.clone(), hub);
//! let app = App::new()
//!     .post("/picture/:id/likes", move |Path(id): Path<u64>| {
//!         let likes = likes.clone();
//!         async move {
//!             // Refused only past `[feeds] max_post`.
//!             match likes.publish(&format!("/picture/{id}/likes"), "liked") {
//!                 Ok(_) => StatusCode::NO_CONTENT,
//!                 Err(_) => StatusCode::PAYLOAD_TOO_LARGE,
//!             }
//!         }
//!     })
//!     // Every like, pushed to a WebSocket...
//!     .get("/feed", move |ws: WebSocketUpgrade| {
//!         let feed = feed.clone();
//!         async move { feed.websocket("/picture/*/likes", ws) }
//!     })
//!     // ...or to an event stream, resumed after the last id the client saw.
//!     .get("/feed/events", move |last: LastEventId| {
//!         let events = events.clone();
//!         async move { events.sse("/picture/*/likes", &last) }
//!     });
//! ```

mod pattern;
mod post;
#[cfg(not(feature = "redis"))]
#[path = "no_redis.rs"]
mod redis;
#[cfg(feature = "redis")]
mod redis;
mod subscription;
mod tally;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use futures_util::StreamExt as _;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;

pub use self::post::Post;
use self::post::Queue;
use self::subscription::Inbox;
pub use self::subscription::Subscription;
#[cfg(feature = "metrics")]
pub(crate) use self::tally::totals;
use crate::actor::{Message, Recipient, TryTellError};
use crate::app::IntoResponse as _;
pub use crate::config::FeedsSpec;
use crate::http::Response;
use crate::sse::{LastEventId, Sse};
use crate::ws::{self, WebSocketUpgrade};

/// A pub/sub hub (see the [module docs](self)); cloned, it is the same hub.
#[derive(Debug, Clone)]
pub struct Hub(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// This replica's mark on its posts' ids, random per hub.
    node: u64,
    /// The number of this replica's last post.
    published: AtomicU64,
    /// Subscribers by pattern: a post is matched once against each pattern.
    patterns: RwLock<HashMap<String, Vec<Entry>>>,
    history: Mutex<Queue>,
    spec: FeedsSpec,
    lost: AtomicU64,
    /// Subscribers ever joined, for [`Inner::sweep`].
    joined: AtomicU64,
    /// Present when posts are shared through Redis.
    bridge: Option<redis::Bridge>,
}

/// A subscriber, and whether it refused a post (it is gone: let go at the next
/// prune).
#[derive(Debug)]
struct Entry {
    subscriber: Subscriber,
    gone: AtomicBool,
}

/// Where a post goes.
enum Subscriber {
    Inbox(Arc<Inbox>),
    Socket(ws::Sender),
    Actor(Recipient<Arc<Post>>, Arc<AtomicU64>),
    Call(Call),
}

/// A subscriber called with each post, `false` once it wants no more.
type Call = Box<dyn Fn(&Arc<Post>) -> bool + Send + Sync>;

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Inbox(_) => "Subscriber::Inbox",
            Self::Socket(_) => "Subscriber::Socket",
            Self::Actor(..) => "Subscriber::Actor",
            Self::Call(_) => "Subscriber::Call",
        })
    }
}

impl Subscriber {
    /// Whether it is known gone without a post: a dropped subscription, a closed
    /// socket (an actor is known gone when a post finds it stopped).
    fn is_gone(&self) -> bool {
        match self {
            Self::Inbox(inbox) => inbox.is_closed(),
            Self::Socket(sender) => sender.is_closed(),
            Self::Actor(..) | Self::Call(_) => false,
        }
    }

    /// Hands `post` over; false once the subscriber is gone.
    fn deliver(&self, post: &Arc<Post>) -> bool {
        match self {
            Self::Inbox(inbox) => inbox.push(post),
            // The socket's own send queue bounds it, by its slow-reader policy.
            Self::Socket(sender) => sender.feed(post.message()).is_ok(),
            Self::Actor(recipient, dropped) => match recipient.try_tell(Arc::clone(post)) {
                Ok(()) => true,
                Err(TryTellError::Full(_)) => {
                    dropped.fetch_add(1, Ordering::Relaxed);
                    tally::dropped(1);
                    true
                }
                Err(_) => false,
            },
            Self::Call(call) => call(post),
        }
    }
}

impl Message for Arc<Post> {
    type Reply = ();
}

impl Default for Hub {
    fn default() -> Self {
        Self::new()
    }
}

impl Hub {
    /// An in-process hub.
    pub fn new() -> Self {
        Self::with(FeedsSpec::default())
    }

    /// A hub as `spec` says: shared through Redis if it names one. Connecting happens
    /// in the background, and again whenever Redis goes away; meanwhile posts reach
    /// this process's subscribers, and the others' once Redis is back.
    pub fn with(spec: FeedsSpec) -> Self {
        let node = node_mark();
        let inner = Arc::new_cyclic(|weak| Inner {
            node,
            published: AtomicU64::new(0),
            patterns: RwLock::new(HashMap::new()),
            history: Mutex::new(Queue::with_capacity(spec.history.min(4096))),
            bridge: redis::Bridge::start_if_named(&spec, node, weak.clone()),
            spec,
            lost: AtomicU64::new(0),
            joined: AtomicU64::new(0),
        });
        tally::list(&inner);
        Self(inner)
    }

    /// Publishes `payload` to `topic`: every subscription whose pattern matches gets
    /// it, on every replica. Never waits: a subscriber too slow drops its own oldest.
    /// Returns the post's id.
    ///
    /// # Errors
    ///
    /// [`PublishError::TooLarge`]: the payload passes `[feeds] max_post`.
    pub fn publish(&self, topic: &str, payload: impl Into<Bytes>) -> Result<String, PublishError> {
        let payload = payload.into();
        let max = self.0.spec.max_post;
        if payload.len() > max {
            return Err(PublishError::TooLarge {
                size: payload.len(),
                max,
            });
        }
        let number = self.0.published.fetch_add(1, Ordering::Relaxed) + 1;
        // A copy: the payload may be a request body, whose room in the server's
        // budget for bodies (and spool file) lasts as long as its bytes do.
        let post = Arc::new(Post::new(
            post_id(self.0.node, number),
            topic.to_owned(),
            Bytes::copy_from_slice(&payload),
        ));
        // A raw topic's post reaches this replica through Redis, as it reaches the
        // others: nothing marks it as this replica's own.
        if !self.0.bridge.as_ref().is_some_and(|b| b.carries_raw(topic)) {
            self.0.receive(&post);
        }
        if let Some(bridge) = &self.0.bridge {
            if !bridge.send(number, &post) {
                self.0.lost.fetch_add(1, Ordering::Relaxed);
                tally::lost(1);
            }
        }
        Ok(post.id().to_owned())
    }

    /// Publishes `value` as JSON (serialized once, whatever the subscribers).
    ///
    /// # Errors
    ///
    /// [`PublishError::Json`]: `value` does not serialize; or as
    /// [`publish`](Self::publish).
    pub fn publish_json<T: Serialize>(
        &self,
        topic: &str,
        value: &T,
    ) -> Result<String, PublishError> {
        let payload = serde_json::to_vec(value).map_err(PublishError::Json)?;
        self.publish(topic, payload)
    }

    /// Subscribes to the topics matching `pattern`, from now on.
    pub fn subscribe(&self, pattern: &str) -> Subscription {
        self.subscribe_after(pattern, None)
    }

    /// Subscribes to the topics matching `pattern`, starting with the posts this
    /// replica still keeps that came after the one with id `after` — all it keeps if
    /// it does not know that id (too old, or from before this replica started), none
    /// if `after` is `None`.
    pub fn subscribe_after(&self, pattern: &str, after: Option<&str>) -> Subscription {
        let inbox = Arc::new(Inbox::new(self.0.spec.queue, self.0.spec.queue_bytes));
        {
            // The history is read and the inbox joins under the patterns' lock, so
            // no post falls between them or comes twice.
            let mut patterns = self.0.patterns.write();
            if let Some(after) = after {
                let history = self.0.history.lock();
                let found = history.iter().position(|post| post.id() == after);
                if found.is_none() {
                    tally::resumed_past_history();
                }
                let start = found.map_or(0, |at| at + 1);
                for post in history.iter().skip(start) {
                    if pattern::matches(pattern, post.topic()) {
                        inbox.push(post);
                    }
                }
            }
            Inner::sweep(&mut patterns, &self.0.joined);
            patterns
                .entry(pattern.to_owned())
                .or_default()
                .push(Entry::new(Subscriber::Inbox(Arc::clone(&inbox))));
        }
        Subscription::new(inbox)
    }

    /// Feeds the posts to topics matching `pattern` to a WebSocket, through its
    /// [`Sender`](ws::Sender) (so its send queue and slow-reader policy bound them),
    /// until it closes.
    pub fn feed_socket(&self, pattern: &str, socket: ws::Sender) {
        self.join(pattern, Subscriber::Socket(socket));
    }

    /// Tells the posts to topics matching `pattern` to an actor, until it stops;
    /// while its mailbox is full they are dropped, and counted in the returned
    /// counter.
    pub fn feed_actor(&self, pattern: &str, actor: Recipient<Arc<Post>>) -> Arc<AtomicU64> {
        let dropped = Arc::new(AtomicU64::new(0));
        self.join(pattern, Subscriber::Actor(actor, Arc::clone(&dropped)));
        dropped
    }

    /// Calls `call` with each post to topics matching `pattern`, on the publisher's
    /// thread, until it returns `false` — for a stage's entry, say
    /// (`move |post| entry.send(Like::from(post)).is_ok()`). It must not block: the
    /// publisher waits for it.
    pub fn feed_with(
        &self,
        pattern: &str,
        call: impl Fn(&Arc<Post>) -> bool + Send + Sync + 'static,
    ) {
        self.join(pattern, Subscriber::Call(Box::new(call)));
    }

    fn join(&self, pattern: &str, subscriber: Subscriber) {
        let mut patterns = self.0.patterns.write();
        Inner::sweep(&mut patterns, &self.0.joined);
        patterns
            .entry(pattern.to_owned())
            .or_default()
            .push(Entry::new(subscriber));
    }

    /// Answers a WebSocket handshake with a socket fed the posts to topics matching
    /// `pattern` (text if the payload is UTF-8, else binary) until the peer closes;
    /// what the peer sends is read and dropped.
    pub fn websocket(&self, pattern: &str, ws: WebSocketUpgrade) -> Response {
        let (hub, pattern) = (self.clone(), pattern.to_owned());
        ws.on_upgrade(move |mut socket| async move {
            hub.feed_socket(&pattern, socket.sender());
            while socket.recv().await.is_some() {}
        })
    }

    /// Answers with an event stream of the posts to topics matching `pattern`, each
    /// an unnamed event (`onmessage` in a browser) with its id; a client back with
    /// `Last-Event-ID` first gets what this replica kept after that id.
    pub fn sse(&self, pattern: &str, last: &LastEventId) -> Response {
        let subscription = self.subscribe_after(pattern, last.0.as_deref());
        Sse::encoded(subscription.into_stream().map(|post| post.event())).into_response()
    }

    /// Returns how many posts this replica knows were lost: posts of other replicas
    /// it missed while cut off from Redis (gaps in their numbering), and its own it
    /// could not hand to Redis.
    pub fn lost(&self) -> u64 {
        self.0.lost.load(Ordering::Relaxed)
    }

    /// Returns whether this hub is connected to its Redis now (`false` for an
    /// in-process hub).
    pub fn is_connected(&self) -> bool {
        self.0
            .bridge
            .as_ref()
            .is_some_and(redis::Bridge::is_connected)
    }
}

impl Inner {
    /// Keeps `post` in the history and hands it to every matching subscriber,
    /// letting go of those gone.
    fn receive(&self, post: &Arc<Post>) {
        let mut gone = false;
        {
            let patterns = self.patterns.read();
            if self.spec.history > 0 {
                let (posts, bytes) = (self.spec.history, self.spec.history_bytes);
                self.history.lock().push(post, posts, bytes);
            }
            for (pattern, subscribers) in patterns.iter() {
                if pattern::matches(pattern, post.topic()) {
                    for entry in subscribers {
                        if !entry.subscriber.deliver(post) {
                            entry.gone.store(true, Ordering::Relaxed);
                            gone = true;
                        }
                    }
                }
            }
        }
        if gone {
            self.prune();
        }
    }

    /// Lets go of the subscribers that refused a post (gone), and of patterns left
    /// with none.
    fn prune(&self) {
        Self::let_go(&mut self.patterns.write());
    }

    /// Every [`SWEEP_EVERY`]th subscriber to join lets go of those gone since — a
    /// dropped subscription or a closed socket on a pattern no post has reached since
    /// would otherwise stay: what they cost is bounded, and a sweep is paid for by
    /// many joins.
    fn sweep(patterns: &mut HashMap<String, Vec<Entry>>, joined: &AtomicU64) {
        if joined.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            Self::let_go(patterns);
        }
    }

    fn let_go(patterns: &mut HashMap<String, Vec<Entry>>) {
        patterns.retain(|_, subscribers| {
            subscribers.retain(Entry::is_live);
            !subscribers.is_empty()
        });
    }
}

/// Why a post was not published.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The payload passes `[feeds] max_post`.
    #[error("a post of {size} bytes passes the hub's max_post of {max}")]
    TooLarge {
        /// The payload's size, in bytes.
        size: usize,
        /// `[feeds] max_post`.
        max: usize,
    },
    /// The value to publish as JSON does not serialize.
    #[error("the post does not serialize as JSON: {0}")]
    Json(serde_json::Error),
}

impl PublishError {
    /// Returns whether the payload was larger than `[feeds] max_post`.
    pub fn is_too_large(&self) -> bool {
        matches!(self, Self::TooLarge { .. })
    }
}

/// How many joins a sweep of the subscribers gone is paid for by.
const SWEEP_EVERY: u64 = 64;

impl Entry {
    fn new(subscriber: Subscriber) -> Self {
        Self {
            subscriber,
            gone: AtomicBool::new(false),
        }
    }

    /// Whether it may still take posts: neither refused one nor known gone.
    fn is_live(&self) -> bool {
        !self.gone.load(Ordering::Relaxed) && !self.subscriber.is_gone()
    }
}

/// A replica's mark no other hub shares: the process and the time, hashed with a
/// key std draws at random for each hasher it builds.
fn node_mark() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}

/// A post's id: its replica's mark and its number there.
fn post_id(node: u64, number: u64) -> String {
    format!("{node:x}-{number}")
}

#[cfg(test)]
mod tests;
