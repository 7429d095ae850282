//! Replies to this node's asks: each ask waits under a number of its own; the
//! replying node appends the reply to this node's reply stream, and one task reads
//! the stream and hands each reply to the ask it answers (dropped if that ask has
//! timed out and gone).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use redis::streams::{StreamReadOptions, StreamReadReply};
use tokio::sync::oneshot;

use super::Inner;
use super::letter::ReplyHead;
use crate::stream::FIELD;
use crate::wire;

/// The most replies one read takes.
const READ_MOST: usize = 256;

/// How long a read waits before the reader looks whether the node is leaving.
const READ_WAIT: Duration = Duration::from_millis(100);

/// Asks waiting for their replies, by number.
#[derive(Default)]
pub(super) struct Waiting {
    next: AtomicU64,
    asks: Mutex<HashMap<u64, oneshot::Sender<Vec<u8>>>>,
}

impl Waiting {
    /// A number for a new ask, and where its reply (in the wire format) comes.
    pub(super) fn expect(&self) -> (u64, oneshot::Receiver<Vec<u8>>) {
        let ask = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.asks.lock().insert(ask, tx);
        (ask, rx)
    }

    /// Forgets an ask that stopped waiting.
    pub(super) fn forget(&self, ask: u64) {
        self.asks.lock().remove(&ask);
    }

    /// Drops every waiting ask: each gets no reply.
    pub(super) fn clear(&self) {
        self.asks.lock().clear();
    }

    fn settle(&self, ask: u64, reply: Vec<u8>) {
        if let Some(tx) = self.asks.lock().remove(&ask) {
            let _ = tx.send(reply);
        }
    }
}

/// Reads this node's reply stream until the node leaves.
pub(super) async fn read(inner: Arc<Inner>) {
    let stream = inner.replies_key(&inner.id);
    let mut redis = loop {
        match crate::stream::manager(&inner.target, READ_WAIT * 20).await {
            Ok(redis) => break redis,
            Err(error) if !inner.stopping() => {
                tracing::warn!(%error, "cannot reach Redis for replies: trying again");
                tokio::time::sleep(READ_WAIT).await;
            }
            Err(_) => return,
        }
    };
    let mut last = "0-0".to_owned();
    let options = StreamReadOptions::default()
        .count(READ_MOST)
        .block(usize::try_from(READ_WAIT.as_millis()).unwrap_or(usize::MAX));
    while !inner.stopping() {
        let read: redis::RedisResult<Option<StreamReadReply>> = redis::cmd("XREAD")
            .arg(&options)
            .arg("STREAMS")
            .arg(&stream)
            .arg(&last)
            .query_async(&mut redis)
            .await;
        let entries = match read {
            Ok(reply) => reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids),
            Err(error) => {
                tracing::warn!(%error, "reading replies failed: trying again");
                tokio::time::sleep(READ_WAIT).await;
                continue;
            }
        };
        for entry in entries {
            if let Some(redis::Value::BulkString(bytes)) = entry.map.get(FIELD) {
                match wire::decode::<ReplyHead>(bytes) {
                    Ok(head) => inner.asks.settle(head.ask, bytes.clone()),
                    Err(error) => {
                        tracing::error!(%error, id = %entry.id, "a reply that does not read");
                    }
                }
            }
            last = entry.id;
        }
    }
}
