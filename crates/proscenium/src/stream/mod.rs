//! Redis Streams as the transport of a decoupled connector between processes: the
//! sender appends events to a stream, the consuming stage's processes read it as one
//! consumer group, each event acknowledged once its handler has finished
//! (at-least-once), and an event left pending by a consumer that died is claimed by a
//! live one after an idle time. Events cross as [`Event`]s (serde) in a versioned
//! wire format (`wire.rs`).
//!
//! A `rediss://` URL connects over TLS (rustls), trusting the web's roots; a
//! [`RedisTarget`] with a CA file (`[redis] ca`) trusts that CA alone.
//!
//! # Example
//!
//! ```no_run
//! # async fn example() -> Result<(), proscenium::stream::StreamError> {
//! use std::time::Duration;
//! use proscenium::stream::{StreamReceiver, StreamSender};
//!
//! let url = "redis://127.0.0.1:6379";
//! let mut correlate = StreamReceiver::join(url, "cep:copy:correlate", "correlate", "p2-1").await?;
//! let mut copy = StreamSender::connect(url, "cep:copy:correlate").await?;
//! copy.send(&["window 1".to_owned(), "window 2".to_owned()]).await?;
//! for delivery in correlate.receive::<String>(10, Duration::from_millis(100)).await? {
//!     println!("{}", delivery.event?);
//!     correlate.ack(&[delivery.id]).await?;
//! }
//! # Ok(())
//! # }
//! ```

mod target;
pub(crate) mod writer;

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{
    StreamAutoClaimReply, StreamClaimReply, StreamId, StreamInfoGroupsReply,
    StreamPendingCountReply, StreamPendingReply, StreamReadOptions,
};

pub use self::target::RedisTarget;
use crate::counters::Counted;
use crate::wire;
pub use crate::wire::{Event, WireError};
/// The Redis client crate, for the commands of a [`RedisTarget::connect`] connection.
pub use redis;

/// The field of a stream entry that holds the event.
pub(crate) const FIELD: &str = "e";

/// Tries to reach Redis before a connection is an error.
const CONNECT_TRIES: usize = 3;

/// How long a reply may take past a receive's own block time.
const REPLY_MARGIN: Duration = Duration::from_secs(2);

/// How long a command that does not block waits for its reply before it counts as
/// failed. Redis answers in well under a millisecond; this is for a machine too busy
/// to run it at once (the client's default, 500 ms, failed a pipeline of 1,000 `XADD`s
/// while a test suite ran beside it).
pub(crate) const REPLY_WITHIN: Duration = Duration::from_secs(5);

/// Why a stream could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// Redis refused, or could not be reached (the connection retries with backoff).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// An event that cannot be written.
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// One event taken from a stream: its entry id (to acknowledge it) and the event, or
/// why its bytes are not one.
#[derive(Debug)]
pub struct Delivery<T> {
    /// The entry's id in the stream.
    pub id: String,
    /// The event, or why the entry does not read as one (another wire version,
    /// another type): such an entry is never handled, and is the caller's to report.
    pub event: Result<T, WireError>,
}

/// Appends events to one stream.
pub struct StreamSender {
    redis: Connection,
    stream: String,
}

impl StreamSender {
    /// Connects to the Redis `redis` names (a URL, or a [`RedisTarget`] with its CA)
    /// to append to `stream`.
    ///
    /// # Errors
    ///
    /// When `redis` is not a Redis URL, or Redis cannot be reached.
    pub async fn connect(redis: impl Into<RedisTarget>, stream: &str) -> Result<Self, StreamError> {
        Ok(Self {
            redis: manager(&redis.into(), REPLY_WITHIN).await?,
            stream: stream.to_owned(),
        })
    }

    /// Appends `events`, in order, in one round trip (a pipeline of `XADD`s); returns
    /// their entry ids.
    ///
    /// # Errors
    ///
    /// When an event does not serialize (nothing is sent), or Redis refuses or cannot
    /// be reached (then any of them may have been appended).
    pub async fn send<T: Event>(&mut self, events: &[T]) -> Result<Vec<String>, StreamError> {
        let encoded = events
            .iter()
            .map(wire::encode)
            .collect::<Result<Vec<_>, _>>()?;
        self.send_encoded(&encoded).await
    }

    /// Appends events already in the wire format, as [`send`](Self::send) does.
    pub(crate) async fn send_encoded(
        &mut self,
        events: &[Vec<u8>],
    ) -> Result<Vec<String>, StreamError> {
        let mut pipe = redis::pipe();
        for event in events {
            pipe.cmd("XADD")
                .arg(&self.stream)
                .arg("*")
                .arg(FIELD)
                .arg(event);
        }
        Ok(pipe.query_async(&mut self.redis).await?)
    }

    /// Returns the entries of the stream its slowest group has not acknowledged: those
    /// not yet delivered (the group's lag) and those delivered and pending — or all of
    /// them while no group reads it.
    ///
    /// # Errors
    ///
    /// When Redis refuses or cannot be reached.
    pub(crate) async fn backlog(&mut self) -> Result<u64, StreamError> {
        let len: u64 = redis::cmd("XLEN")
            .arg(&self.stream)
            .query_async(&mut self.redis)
            .await?;
        if len == 0 {
            return Ok(0);
        }
        let groups: StreamInfoGroupsReply = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.stream)
            .query_async(&mut self.redis)
            .await?;
        let unacknowledged = |group: &redis::streams::StreamInfoGroup| {
            // No lag when Redis cannot tell: count the whole stream.
            let lag = group.lag.map_or(len, |lag| lag as u64);
            (group.pending as u64 + lag).min(len)
        };
        Ok(groups
            .groups
            .iter()
            .map(unacknowledged)
            .max()
            .unwrap_or(len))
    }
}

/// Reads one stream as a consumer of a consumer group: each event goes to one consumer
/// of the group, and stays pending until acknowledged.
pub struct StreamReceiver {
    redis: Connection,
    stream: String,
    group: String,
    consumer: String,
}

impl StreamReceiver {
    /// Joins `group` on `stream` as `consumer`, making the stream and the group (from
    /// the stream's first entry) if they do not exist yet.
    ///
    /// # Errors
    ///
    /// When `redis` is not a Redis URL (or [`RedisTarget`]), Redis cannot be
    /// reached, or `stream` holds something other than a stream.
    pub async fn join(
        redis: impl Into<RedisTarget>,
        stream: &str,
        group: &str,
        consumer: &str,
    ) -> Result<Self, StreamError> {
        // A receive blocks on its connection: each receiver has its own.
        let mut redis = manager(&redis.into(), Duration::from_secs(60) + REPLY_MARGIN).await?;
        let made: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(stream)
            .arg(group)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut redis)
            .await;
        match made {
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            made => made?,
        }
        Ok(Self {
            redis,
            stream: stream.to_owned(),
            group: group.to_owned(),
            consumer: consumer.to_owned(),
        })
    }

    /// Joins as [`join`](Self::join) does, trying again every `wait` while Redis
    /// cannot be reached, until it answers or `stopping` says to give up (`None`).
    pub(crate) async fn join_retrying(
        redis: &RedisTarget,
        stream: &str,
        group: &str,
        consumer: &str,
        wait: Duration,
        stopping: impl Fn() -> bool,
    ) -> Option<Self> {
        loop {
            match Self::join(redis, stream, group, consumer).await {
                Ok(receiver) => return Some(receiver),
                Err(error) if !stopping() => {
                    tracing::warn!(%stream, %error, "cannot reach Redis: trying again");
                    tokio::time::sleep(wait).await;
                }
                Err(_) => return None,
            }
        }
    }

    /// Takes up to `count` events no consumer of the group has had yet, waiting up to
    /// `block` (at most a minute) for the first.
    ///
    /// # Errors
    ///
    /// When Redis refuses or cannot be reached.
    pub async fn receive<T: Event>(
        &mut self,
        count: usize,
        block: Duration,
    ) -> Result<Vec<Delivery<T>>, StreamError> {
        Ok(self
            .receive_encoded(count, block)
            .await?
            .into_iter()
            .map(|(id, bytes)| delivery(id, bytes.as_deref()))
            .collect())
    }

    /// Takes entries as [`receive`](Self::receive) does, their events still in the
    /// wire format (`None`: an entry without one).
    pub(crate) async fn receive_encoded(
        &mut self,
        count: usize,
        block: Duration,
    ) -> Result<Vec<(String, Option<Vec<u8>>)>, StreamError> {
        let block = block.min(Duration::from_secs(60));
        let options = StreamReadOptions::default()
            .group(&self.group, &self.consumer)
            .count(count)
            .block(usize::try_from(block.as_millis()).unwrap_or(usize::MAX));
        let reply: redis::Value = redis::cmd("XREADGROUP")
            .arg(&options)
            .arg("STREAMS")
            .arg(&self.stream)
            .arg(">")
            .query_async(&mut self.redis)
            .await?;
        Ok(read_entries(reply))
    }

    /// Acknowledges the events `ids`: done, never delivered again.
    ///
    /// # Errors
    ///
    /// When Redis refuses or cannot be reached (the events stay pending, to be
    /// delivered again: at-least-once).
    pub async fn ack(&mut self, ids: &[String]) -> Result<(), StreamError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _: u64 = redis::cmd("XACK")
            .arg(&self.stream)
            .arg(&self.group)
            .arg(ids)
            .query_async(&mut self.redis)
            .await?;
        Ok(())
    }

    /// Takes over up to `count` events pending on any consumer of the group for at
    /// least `idle` — those of a consumer that died, or is stuck — so they are handled
    /// after all (`XAUTOCLAIM`).
    ///
    /// # Errors
    ///
    /// When Redis refuses or cannot be reached.
    pub async fn claim<T: Event>(
        &mut self,
        idle: Duration,
        count: usize,
    ) -> Result<Vec<Delivery<T>>, StreamError> {
        let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(&self.stream)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(u64::try_from(idle.as_millis()).unwrap_or(u64::MAX))
            .arg("0-0")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.redis)
            .await?;
        Ok(reply
            .claimed
            .into_iter()
            .map(entry)
            .map(|(id, bytes)| delivery(id, bytes.as_deref()))
            .collect())
    }

    /// Takes over the events pending on any consumer of the group for at least
    /// `idle` (up to `count`), as [`claim`](Self::claim) does, each with how many times
    /// it has now been delivered, still in the wire format.
    pub(crate) async fn claim_encoded(
        &mut self,
        idle: Duration,
        count: usize,
    ) -> Result<Vec<(String, Option<Vec<u8>>, u64)>, StreamError> {
        let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        let pending: StreamPendingCountReply = redis::cmd("XPENDING")
            .arg(&self.stream)
            .arg(&self.group)
            .arg("IDLE")
            .arg(idle_ms)
            .arg("-")
            .arg("+")
            .arg(count)
            .query_async(&mut self.redis)
            .await?;
        self.claim_pending(&pending, idle_ms).await
    }

    /// Claims the entries `pending` lists, idle at least `idle_ms`, each with how many
    /// times it has now been delivered.
    async fn claim_pending(
        &mut self,
        pending: &StreamPendingCountReply,
        idle_ms: u64,
    ) -> Result<Vec<(String, Option<Vec<u8>>, u64)>, StreamError> {
        if pending.ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = pending.ids.iter().map(|p| p.id.as_str()).collect();
        let claimed: StreamClaimReply = redis::cmd("XCLAIM")
            .arg(&self.stream)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(idle_ms)
            .arg(&ids)
            .query_async(&mut self.redis)
            .await?;
        Ok(claimed
            .ids
            .into_iter()
            .map(|entry| {
                // XCLAIM counted this delivery too.
                let deliveries = pending
                    .ids
                    .iter()
                    .find(|p| p.id == entry.id)
                    .map_or(1, |p| p.times_delivered as u64 + 1);
                let (id, bytes) = self::entry(entry);
                (id, bytes, deliveries)
            })
            .collect())
    }

    /// Takes over up to `count` events pending on the group's *other* consumers,
    /// however briefly idle — for a consumer that alone reads its stream (a remote
    /// actor's mailbox), taking over from the ones before it — each with how many times
    /// it has now been delivered, in the wire format; a consumer left with none is
    /// removed from the group. Empty once none is left.
    pub(crate) async fn take_over(
        &mut self,
        count: usize,
    ) -> Result<Vec<(String, Option<Vec<u8>>, u64)>, StreamError> {
        let consumers: redis::streams::StreamInfoConsumersReply = redis::cmd("XINFO")
            .arg("CONSUMERS")
            .arg(&self.stream)
            .arg(&self.group)
            .query_async(&mut self.redis)
            .await?;
        for other in consumers
            .consumers
            .iter()
            .filter(|c| c.name != self.consumer)
        {
            let pending: StreamPendingCountReply = redis::cmd("XPENDING")
                .arg(&self.stream)
                .arg(&self.group)
                .arg("-")
                .arg("+")
                .arg(count)
                .arg(&other.name)
                .query_async(&mut self.redis)
                .await?;
            if pending.ids.is_empty() {
                let _: u64 = redis::cmd("XGROUP")
                    .arg("DELCONSUMER")
                    .arg(&self.stream)
                    .arg(&self.group)
                    .arg(&other.name)
                    .query_async(&mut self.redis)
                    .await?;
                continue;
            }
            return self.claim_pending(&pending, 0).await;
        }
        Ok(Vec::new())
    }

    /// Tells the group this consumer still holds the events `ids` (queued here, or
    /// handled and not yet acknowledged): their idle time starts over, so no other
    /// consumer claims them from a live one (`XCLAIM ... JUSTID`, which counts no
    /// delivery).
    ///
    /// # Errors
    ///
    /// When Redis refuses or cannot be reached.
    pub(crate) async fn keep(&mut self, ids: &[String]) -> Result<(), StreamError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _: redis::Value = redis::cmd("XCLAIM")
            .arg(&self.stream)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(0)
            .arg(ids)
            .arg("JUSTID")
            .query_async(&mut self.redis)
            .await?;
        Ok(())
    }

    /// Trims the stream of the entries every group has acknowledged: those below the
    /// oldest entry pending in any group and not past what any group has read — never
    /// one unacknowledged (trimming those would lose them); returns how many went.
    ///
    /// # Errors
    ///
    /// When Redis refuses or cannot be reached.
    pub(crate) async fn trim_acknowledged(&mut self) -> Result<u64, StreamError> {
        let groups: StreamInfoGroupsReply = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.stream)
            .query_async(&mut self.redis)
            .await?;
        let mut floor: Option<EntryId> = None;
        for group in &groups.groups {
            let pending: StreamPendingReply = redis::cmd("XPENDING")
                .arg(&self.stream)
                .arg(&group.name)
                .query_async(&mut self.redis)
                .await?;
            // What the group has read and acknowledged ends at its oldest pending
            // entry, or, with none pending, at the last entry it read (kept).
            let kept = match &pending {
                StreamPendingReply::Data(data) => &data.start_id,
                _ => &group.last_delivered_id,
            };
            let Some(kept) = EntryId::parse(kept) else {
                return Ok(0);
            };
            floor = Some(floor.map_or(kept, |floor| floor.min(kept)));
        }
        let Some(floor) = floor else {
            return Ok(0);
        };
        Ok(redis::cmd("XTRIM")
            .arg(&self.stream)
            .arg("MINID")
            .arg(floor.to_string())
            .query_async(&mut self.redis)
            .await?)
    }

    /// Moves the event `id` (its wire bytes `event`) to the dead-letter stream `dead`,
    /// with the stream, group and deliveries it came from, and acknowledges it here:
    /// never retried again, and never lost.
    pub(crate) async fn dead_letter(
        &mut self,
        dead: &str,
        id: &str,
        event: Option<&[u8]>,
        deliveries: u64,
    ) -> Result<(), StreamError> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("XADD")
            .arg(dead)
            .arg("*")
            .arg(FIELD)
            .arg(event.unwrap_or_default())
            .arg("from")
            .arg(format!("{} {} {id}", self.stream, self.group))
            .arg("deliveries")
            .arg(deliveries)
            .ignore()
            .cmd("XACK")
            .arg(&self.stream)
            .arg(&self.group)
            .arg(id)
            .ignore();
        let () = pipe.query_async(&mut self.redis).await?;
        Ok(())
    }
}

/// A stream entry's id, `MS-SEQ`, ordered as Redis orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct EntryId(u64, u64);

impl EntryId {
    fn parse(id: &str) -> Option<Self> {
        let (ms, seq) = id.split_once('-')?;
        Some(Self(ms.parse().ok()?, seq.parse().ok()?))
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// A connection that reconnects with backoff, each round trip counted as its target's
/// user's in `/metrics`.
pub(crate) type Connection = Counted<ConnectionManager>;

/// A connection to `redis` that reconnects with backoff, its replies allowed `reply_within`
/// ([`REPLY_WITHIN`] for a command that does not block). A Redis that is not there is
/// an error after [`CONNECT_TRIES`] tries, not the client's default of seven (about 6 s).
pub(crate) async fn manager(
    redis: &RedisTarget,
    reply_within: Duration,
) -> Result<Connection, StreamError> {
    Ok(Counted::new(
        uncounted(redis, reply_within).await?,
        redis.user(),
    ))
}

/// A connection as [`manager`] makes it, its round trips not counted.
async fn uncounted(
    redis: &RedisTarget,
    reply_within: Duration,
) -> Result<ConnectionManager, StreamError> {
    let client = redis.client()?;
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(CONNECT_TRIES - 1)
        .set_response_timeout(Some(reply_within));
    Ok(client.get_connection_manager_with_config(config).await?)
}

impl RedisTarget {
    /// Returns a connection to it for an app's own commands (a cache, say; the
    /// social example's), made as streams make theirs: over TLS as its URL and CA say,
    /// reconnecting with backoff, each reply waited for 5 s at most. Send it commands
    /// with the [`redis`] crate this module re-exports.
    ///
    /// # Errors
    ///
    /// The URL is unusable, or the Redis did not answer three tries.
    pub async fn connect(&self) -> Result<ConnectionManager, StreamError> {
        uncounted(self, REPLY_WITHIN).await
    }
}

/// Reads an entry's event.
fn delivery<T: Event>(id: String, bytes: Option<&[u8]>) -> Delivery<T> {
    Delivery {
        id,
        event: bytes.map_or(Err(WireError::Empty), wire::decode),
    }
}

/// An entry's id and its event's bytes, from a reply's `StreamId`.
fn entry(entry: StreamId) -> (String, Option<Vec<u8>>) {
    let bytes = match entry.map.get(FIELD) {
        Some(redis::Value::BulkString(bytes)) => Some(bytes.clone()),
        _ => None,
    };
    (entry.id, bytes)
}

/// The entries of an `XREADGROUP` reply — `[[stream, [[id, [field, value, ...]],
/// ...]]]`, or its RESP3 map — each its id and its event's bytes, moved out of the
/// reply. By hand: redis-rs's `StreamReadReply` builds a map and copies every
/// field, which took a fifth of a busy reader's time (docs/performance.md, "Stages
/// over processes").
fn read_entries(reply: redis::Value) -> Vec<(String, Option<Vec<u8>>)> {
    use redis::Value;
    let streams = match reply {
        Value::Array(streams) => streams
            .into_iter()
            .filter_map(|stream| match stream {
                Value::Array(mut pair) if pair.len() == 2 => pair.pop(),
                _ => None,
            })
            .collect(),
        Value::Map(streams) => streams.into_iter().map(|(_, entries)| entries).collect(),
        _ => Vec::new(),
    };
    let mut read = Vec::new();
    for entries in streams {
        let Value::Array(entries) = entries else {
            continue;
        };
        for entry in entries {
            let Value::Array(mut parts) = entry else {
                continue;
            };
            let (Some(Value::Array(fields)), Some(Value::BulkString(id))) =
                (parts.pop(), parts.pop())
            else {
                continue;
            };
            let Ok(id) = String::from_utf8(id) else {
                continue;
            };
            let mut fields = fields.into_iter();
            let mut bytes = None;
            while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
                if let (Value::BulkString(name), Value::BulkString(value)) = (name, value)
                    && name == FIELD.as_bytes()
                {
                    bytes = Some(value);
                    break;
                }
            }
            read.push((id, bytes));
        }
    }
    read
}

#[cfg(test)]
mod tests;
