//! `[database]` and `[redis]` in the configuration: the outside services an app and its
//! graphs, feeds and actors reach.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::value;

/// The app's database: where it is, and how many connections the app may open.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSpec {
    /// A URL such as `postgres://user@127.0.0.1/app` or `sqlite://app.db`; `None`
    /// leaves the choice to the app (an embedded default, say).
    pub url: Option<String>,
    /// The most connections the app's pool opens.
    #[serde(deserialize_with = "value::count::<_, 1, 10_000>")]
    pub max_connections: usize,
}

impl Default for DatabaseSpec {
    fn default() -> Self {
        Self {
            url: None,
            max_connections: 8,
        }
    }
}

/// Where Redis is, and how events that cross processes through it are redelivered.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSpec {
    /// A `redis://` (or `rediss://`, `unix://`) URL; `None` for no Redis.
    #[serde(deserialize_with = "value::some_redis_url")]
    pub url: Option<String>,
    /// A PEM file of the CA a `rediss://` Redis's certificate chains to, trusted
    /// instead of the web's roots; read with the configuration.
    pub ca: Option<super::CaFile>,
    /// How long an event may stay unacknowledged on a consumer before a live one
    /// claims it (the consumer's process is taken for dead); seconds.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 10, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub claim_idle: Duration,
    /// Deliveries after which an event goes to its stream's dead letters instead of
    /// being tried again.
    #[serde(deserialize_with = "value::count::<_, 1, 1_000_000>")]
    pub max_deliveries: usize,
    /// How often a node of remote actors renews its actors' names in the registry;
    /// a name not renewed for three heartbeats expires (its process is taken for
    /// dead, and its watchers are told); seconds.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 10, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub heartbeat: Duration,
}

impl Default for RedisSpec {
    fn default() -> Self {
        Self {
            url: None,
            ca: None,
            claim_idle: Duration::from_secs(30),
            max_deliveries: 5,
            heartbeat: Duration::from_secs(1),
        }
    }
}
