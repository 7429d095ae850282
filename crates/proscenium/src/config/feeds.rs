//! `[feeds]` in the configuration: how a [`Hub`](crate::hub::Hub) keeps and shares posts.

use serde::{Deserialize, Serialize};

use super::CaFile;

/// How a hub is set up: `[feeds]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeedsSpec {
    /// The Redis every replica shares posts through; `None` keeps them in this
    /// process.
    #[serde(deserialize_with = "crate::config::value::some_redis_url")]
    pub redis: Option<String>,
    /// A PEM file of the CA a `rediss://` Redis's certificate chains to, trusted
    /// instead of the web's roots; read with the configuration.
    pub ca: Option<CaFile>,
    /// How many of the last posts a replica keeps, for event streams resuming after
    /// `Last-Event-ID`.
    #[serde(deserialize_with = "crate::config::value::count::<_, 0, 1_000_000>")]
    pub history: usize,
    /// How many bytes of posts (payload, topic and id) the history keeps at most: the
    /// oldest go first.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 0, { 1 << 40 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub history_bytes: usize,
    /// The largest payload a post may have, in bytes; a larger one is refused.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 1, { 1 << 40 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub max_post: usize,
    /// How many posts wait for one subscriber before its oldest is dropped.
    #[serde(deserialize_with = "crate::config::value::count::<_, 1, 1_000_000>")]
    pub queue: usize,
    /// How many bytes of posts wait for one subscriber before its oldest is dropped
    /// (a WebSocket's own send queue bounds it instead).
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 0, { 1 << 40 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub queue_bytes: usize,
    /// Topics carried through Redis as any Redis client carries them: patterns
    /// (Redis's `PSUBSCRIBE` syntax, `/picture/*/likes`) whose topics are published on
    /// the channel named as the topic with the payload as is, and subscribed to so —
    /// another service publishes into a feed with `PUBLISH /picture/1234/likes 1` and
    /// reads one with `PSUBSCRIBE /picture/*/likes`. The other topics keep the hub's
    /// own channels (`proscenium:feed:` and the topic) and its 16-byte mark of
    /// replica and number, which count the posts a replica missed and drop its own
    /// echo; a raw topic has neither: its posts reach even this replica's subscribers
    /// through Redis, and one Redis drops is not counted.
    pub raw: Vec<String>,
}

impl Default for FeedsSpec {
    fn default() -> Self {
        Self {
            redis: None,
            ca: None,
            history: 1000,
            history_bytes: 16 << 20,
            max_post: 1 << 20,
            queue: 1024,
            queue_bytes: 4 << 20,
            raw: Vec::new(),
        }
    }
}
