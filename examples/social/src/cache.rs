//! The thesis's cache of hot reads (§4.1.3: Redis "for short-lived information like
//! caching"): each user's pictures and whom each user follows — the reads every
//! timeline makes, one list a person followed — kept in the Redis the feeds share,
//! and dropped by every write that changes them (an upload, a like, a thumbnail made,
//! a follow), so the replicas sharing that Redis read what any of them wrote.
//!
//! A list is kept for [`KEPT_FOR`] at most: a read that fetched a list just before a
//! write and stores it just after the write dropped it can put back the list from
//! before, and this bounds how long (the live feed carries like counts meanwhile).
//! Without `[feeds] redis` there is no cache: every read goes to the database; a
//! Redis that fails a command is logged and read around, never an error for the
//! client.

use std::future::Future;
use std::time::Duration;

use proscenium::rt::Background;
use proscenium::stream::RedisTarget;
use proscenium::stream::redis::AsyncCommands as _;
use proscenium::stream::redis::aio::ConnectionManager;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::store::{Picture, Store, StoreError};

/// How long a list is kept.
const KEPT_FOR: Duration = Duration::from_secs(30);

/// The cache: a connection to Redis, or none.
#[derive(Clone)]
pub(crate) struct Cache(Option<ConnectionManager>);

impl Cache {
    /// Connects to `redis` on `background` (whose runtime drives the connection); no
    /// cache without one, or when it cannot be reached (logged).
    pub(crate) fn connect(redis: Option<RedisTarget>, background: &Background) -> Self {
        let Some(redis) = redis else {
            return Self(None);
        };
        let connected = background.block_on(async move { redis.connect().await });
        match connected {
            Some(Ok(connection)) => Self(Some(connection)),
            Some(Err(error)) => {
                tracing::error!(%error, "the cache's Redis cannot be reached: reads go to the database");
                Self(None)
            }
            None => Self(None),
        }
    }

    /// `user_id`'s pictures, newest first.
    pub(crate) async fn pictures_of(
        &self,
        store: &Store,
        user_id: i64,
    ) -> Result<Vec<Picture>, StoreError> {
        self.read(&pictures_key(user_id), store.pictures_of(user_id))
            .await
    }

    /// The ids of those `user_id` follows.
    pub(crate) async fn following(
        &self,
        store: &Store,
        user_id: i64,
    ) -> Result<Vec<i64>, StoreError> {
        self.read(&following_key(user_id), store.following(user_id))
            .await
    }

    /// Drops `user_id`'s pictures: one was added, liked or given its thumbnail.
    pub(crate) async fn forget_pictures(&self, user_id: i64) {
        self.forget(&pictures_key(user_id)).await;
    }

    /// Drops whom `user_id` follows: they followed or left someone.
    pub(crate) async fn forget_following(&self, user_id: i64) {
        self.forget(&following_key(user_id)).await;
    }

    /// The value kept under `key`, or `load`'s, kept from then on.
    async fn read<T: Serialize + DeserializeOwned>(
        &self,
        key: &str,
        load: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let Some(redis) = &self.0 else {
            return load.await;
        };
        let mut redis = redis.clone();
        match redis.get::<_, Option<Vec<u8>>>(key).await {
            Ok(Some(kept)) => match serde_json::from_slice(&kept) {
                Ok(value) => return Ok(value),
                Err(error) => tracing::warn!(key, %error, "a cached value is not readable"),
            },
            Ok(None) => {}
            Err(error) => tracing::warn!(key, %error, "the cache failed a read"),
        }
        let value = load.await?;
        let text = serde_json::to_vec(&value).expect("a listing serializes");
        let kept: Result<(), _> = redis.set_ex(key, text, KEPT_FOR.as_secs()).await;
        if let Err(error) = kept {
            tracing::warn!(key, %error, "the cache failed a write");
        }
        Ok(value)
    }

    async fn forget(&self, key: &str) {
        let Some(redis) = &self.0 else {
            return;
        };
        let dropped: Result<(), _> = redis.clone().del(key).await;
        if let Err(error) = dropped {
            tracing::warn!(key, %error, "the cache failed to drop a value: it may be read for up to 30 s");
        }
    }
}

/// Where `user_id`'s pictures are kept.
pub(crate) fn pictures_key(user_id: i64) -> String {
    format!("social:pictures:{user_id}")
}

/// Where whom `user_id` follows is kept.
fn following_key(user_id: i64) -> String {
    format!("social:following:{user_id}")
}
