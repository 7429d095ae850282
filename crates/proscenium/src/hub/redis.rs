//! The hub's link to Redis, on a thread of its own: one connection subscribed to
//! every feed channel (`proscenium:feed:` and the topic) and to the raw patterns
//! (`[feeds] raw`), one publishing this replica's posts in pipelined batches. When Redis goes away both are made again,
//! with backoff, and the subscription renewed; what was published meanwhile waits in
//! a bounded queue (past it, a post is counted lost).
//!
//! Every replica takes every post and matches it against its own patterns here,
//! rather than mirroring its patterns into Redis: a replica then sees each
//! publisher's whole numbering, so a gap in it is exactly what it missed — the count
//! of lost posts pub/sub cannot give otherwise. The cost: a post no subscriber here
//! wants still crosses to this replica. A raw topic's post is what any Redis client
//! writes: the topic as channel, the payload as is; it crosses to every replica that
//! subscribes to its pattern, this one included.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use redis::aio::MultiplexedConnection;
use tokio::sync::mpsc;

use super::post::Post;
use super::{Inner, pattern, post_id};
use crate::config::FeedsSpec;
use crate::counters::{Counted, User};
use crate::rt::Backoff;
use crate::stream::RedisTarget;

/// The channels' common prefix; a channel is this and the topic.
const PREFIX: &str = "proscenium:feed:";

/// The pattern of every feed channel.
const FEEDS: &str = "proscenium:feed:*";

/// Posts waiting for Redis, at most.
const OUTBOX: usize = 65_536;

/// Posts one round trip publishes, at most.
const BATCH: usize = 256;

const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MOST_BACKOFF: Duration = Duration::from_secs(1);

/// A post on its way to Redis: its number at this replica, and itself.
type Outgoing = (u64, Arc<Post>);

#[derive(Debug)]
pub(super) struct Bridge {
    outbox: mpsc::Sender<Outgoing>,
    connected: Arc<AtomicBool>,
    raw: Raw,
}

/// The patterns of the topics carried raw (`[feeds] raw`).
#[derive(Debug, Clone)]
struct Raw(Arc<[String]>);

impl Raw {
    fn carries(&self, topic: &str) -> bool {
        self.0.iter().any(|raw| pattern::matches(raw, topic))
    }
}

impl Bridge {
    /// The link `spec` names (`[feeds] redis`), if it names one.
    pub(super) fn start_if_named(spec: &FeedsSpec, node: u64, hub: Weak<Inner>) -> Option<Self> {
        let url = spec.redis.as_deref()?;
        let raw = Raw(spec.raw.iter().cloned().collect());
        Some(Self::start(
            RedisTarget::new(url, spec.ca.clone()),
            node,
            hub,
            raw,
        ))
    }

    /// Starts the link's thread; it ends once the hub is dropped.
    fn start(target: RedisTarget, node: u64, hub: Weak<Inner>, raw: Raw) -> Self {
        let (outbox, posts) = mpsc::channel(OUTBOX);
        let connected = Arc::new(AtomicBool::new(false));
        let link = Link {
            target,
            node,
            hub,
            connected: Arc::clone(&connected),
            seen: HashMap::new(),
            raw: raw.clone(),
            raw_arrived: 0,
        };
        std::thread::Builder::new()
            .name("proscenium-feeds".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the feeds' Redis link");
                runtime.block_on(link.run(posts));
            })
            .expect("a thread for the feeds' Redis link");
        Self {
            outbox,
            connected,
            raw,
        }
    }

    /// Queues a post for Redis; false if the queue is full (Redis away too long).
    pub(super) fn send(&self, number: u64, post: &Arc<Post>) -> bool {
        self.outbox.try_send((number, Arc::clone(post))).is_ok()
    }

    pub(super) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// Whether posts to `topic` cross Redis raw (`[feeds] raw`).
    pub(super) fn carries_raw(&self, topic: &str) -> bool {
        self.raw.carries(topic)
    }
}

struct Link {
    target: RedisTarget,
    node: u64,
    hub: Weak<Inner>,
    connected: Arc<AtomicBool>,
    /// The last number seen from each other replica.
    seen: HashMap<u64, u64>,
    raw: Raw,
    /// Raw posts taken from Redis so far, which number their ids here.
    raw_arrived: u64,
}

impl Link {
    async fn run(mut self, mut posts: mpsc::Receiver<Outgoing>) {
        let client = match self.target.client() {
            Ok(client) => client,
            Err(error) => {
                tracing::error!(%error, "feeds: the Redis URL is unusable; posts stay in this process");
                return;
            }
        };
        let mut backoff = Backoff::new(FIRST_BACKOFF, MOST_BACKOFF);
        // Taken from the queue and not yet known published: kept across reconnects.
        let mut pending: Vec<Outgoing> = Vec::new();
        loop {
            // The hub is gone once its queue's sender is (not when its `Arc` has no
            // strong count: that is also true while the hub is being made, which is
            // when this thread starts).
            if posts.is_closed() {
                return;
            }
            let (mut messages, mut publisher) = match connect(&client, &self.raw).await {
                Ok(links) => links,
                Err(error) => {
                    tracing::warn!(%error, "feeds: cannot reach Redis; trying again");
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
            };
            backoff.reset();
            self.connected.store(true, Ordering::Relaxed);
            tracing::info!("feeds: subscribed through Redis");
            let cause = loop {
                if !pending.is_empty() {
                    let published = publish(&mut publisher, self.node, &self.raw, &pending);
                    if let Err(error) = published.await {
                        break error.to_string();
                    }
                    pending.clear();
                }
                tokio::select! {
                    message = messages.next() => match message {
                        Some(message) => self.arrive(&message),
                        None => break "the subscription ended".to_owned(),
                    },
                    post = posts.recv() => match post {
                        Some(post) => {
                            pending.push(post);
                            while pending.len() < BATCH {
                                let Ok(post) = posts.try_recv() else { break };
                                pending.push(post);
                            }
                        }
                        // The hub is gone.
                        None => return,
                    },
                }
            };
            self.connected.store(false, Ordering::Relaxed);
            tracing::warn!(%cause, "feeds: lost Redis; reconnecting and subscribing again");
        }
    }

    /// A post from Redis: another replica's (this replica's own were delivered when
    /// published) goes to the hub's subscribers; a gap in its publisher's numbering
    /// is counted lost, a number seen already (a batch published again after a
    /// failure) is dropped.
    fn arrive(&mut self, message: &redis::Msg) {
        let by_raw_pattern = message
            .get_pattern::<String>()
            .is_ok_and(|pattern| pattern != FEEDS);
        let channel = message.get_channel_name();
        // A feed channel a raw pattern also matches comes by both: taken once, framed.
        let Some(topic) = channel.strip_prefix(PREFIX) else {
            if by_raw_pattern {
                self.arrive_raw(channel, message.get_payload_bytes());
            }
            return;
        };
        if by_raw_pattern {
            return;
        }
        let bytes = message.get_payload_bytes();
        let (Some(node), Some(number)) = (word(bytes, 0), word(bytes, 8)) else {
            tracing::warn!(%topic, "feeds: a message from Redis that no hub wrote; dropped");
            return;
        };
        if node == self.node {
            return;
        }
        let Some(hub) = self.hub.upgrade() else {
            return;
        };
        let last = self.seen.insert(node, number);
        match last {
            Some(last) if number <= last => {
                self.seen.insert(node, last);
                return;
            }
            Some(last) if number > last + 1 => {
                hub.lost.fetch_add(number - last - 1, Ordering::Relaxed);
                super::tally::lost(number - last - 1);
            }
            _ => {}
        }
        let payload = Bytes::copy_from_slice(&bytes[16..]);
        let post = Post::new(post_id(node, number), topic.to_owned(), payload);
        hub.receive(&Arc::new(post));
    }

    /// A raw post (`[feeds] raw`), from any publisher, this replica included: to the
    /// hub's subscribers as it came, under an id of this replica's.
    fn arrive_raw(&mut self, topic: &str, payload: &[u8]) {
        let Some(hub) = self.hub.upgrade() else {
            return;
        };
        self.raw_arrived += 1;
        let id = raw_post_id(self.node, self.raw_arrived);
        let post = Post::new(id, topic.to_owned(), Bytes::copy_from_slice(payload));
        hub.receive(&Arc::new(post));
    }
}

/// The id of the `number`th raw post (`[feeds] raw`) replica `node` took from Redis:
/// a raw post carries no id, so each replica gives it its own.
fn raw_post_id(node: u64, number: u64) -> String {
    format!("{node:x}-r{number}")
}

/// The big-endian word at `at` in `bytes`.
fn word(bytes: &[u8], at: usize) -> Option<u64> {
    let word = bytes.get(at..at + 8)?;
    Some(u64::from_be_bytes(word.try_into().ok()?))
}

/// The publishing connection, its round trips counted as the hub's.
type Publisher = Counted<MultiplexedConnection>;

/// Subscribes to every feed channel and every raw pattern, and opens the publishing
/// connection.
async fn connect(
    client: &redis::Client,
    raw: &Raw,
) -> redis::RedisResult<(redis::aio::PubSubStream, Publisher)> {
    let mut subscriber = client.get_async_pubsub().await?;
    subscriber.psubscribe(FEEDS).await?;
    for pattern in raw.0.iter() {
        subscriber.psubscribe(pattern).await?;
    }
    let publisher = client.get_multiplexed_async_connection().await?;
    Ok((
        subscriber.into_on_message(),
        Counted::new(publisher, User::Hub),
    ))
}

/// Publishes `posts` in one round trip: each on its topic's channel, after this
/// replica's mark and the post's number; a raw topic's as it is, on the topic.
async fn publish(
    connection: &mut Publisher,
    node: u64,
    raw: &Raw,
    posts: &[Outgoing],
) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    for (number, post) in posts {
        if raw.carries(post.topic()) {
            pipe.cmd("PUBLISH")
                .arg(post.topic())
                .arg(post.payload().as_ref())
                .ignore();
            continue;
        }
        let mut payload = Vec::with_capacity(16 + post.payload().len());
        payload.extend_from_slice(&node.to_be_bytes());
        payload.extend_from_slice(&number.to_be_bytes());
        payload.extend_from_slice(post.payload());
        pipe.cmd("PUBLISH")
            .arg(format!("{PREFIX}{}", post.topic()))
            .arg(payload)
            .ignore();
    }
    pipe.query_async::<()>(connection).await
}
