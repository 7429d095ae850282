//! A decoupled connector to a stage in another process, this side of it: the events
//! wait in a bounded queue here (the connector's admission applies to it as to any
//! stage queue) and a thread of their own writes them to the connector's Redis stream,
//! up to [`BATCH`] a round trip. A write that fails — Redis restarting, the network
//! gone — is retried with backoff, its batch kept, so nothing is lost; a batch that
//! failed after Redis appended part of it is appended again whole, which is what
//! at-least-once allows (an idempotent stage drops the duplicates).

use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::definition::Payload;
use super::error::StageError;
use super::port::Codec;
use super::stream::StreamSender;

/// The most events one round trip writes.
pub(crate) const BATCH: usize = 256;

/// The first wait before a failed write is tried again; doubled each time, to
/// [`MOST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MOST_BACKOFF: Duration = Duration::from_secs(1);

/// The sending side of a connector to another process.
pub(crate) struct Outbound {
    events: Sender<Payload>,
}

impl Outbound {
    /// Starts the writer of `stream` on the Redis at `url`, `codec` writing the
    /// connector's events, at most `bound` of them waiting; the thread ends once every
    /// clone of the returned `Outbound` is dropped and what waited is written.
    pub(crate) fn spawn(
        url: String,
        stream: String,
        codec: Codec,
        bound: usize,
    ) -> Result<(Self, JoinHandle<()>), StageError> {
        let (events, waiting) = crossbeam_channel::bounded(bound.max(1));
        let name = format!("stage-out-{stream}");
        let writer = crate::rt::runtime::spawn_thread(name.clone(), move |runtime| {
            runtime.block_on(write(&url, &stream, codec, &waiting));
        })
        .map_err(|e| StageError::start(&name, &e))?;
        Ok((Self { events }, writer))
    }

    /// Queues `event`, or gives it back when the queue is full.
    pub(crate) fn try_send(&self, event: Payload) -> Result<(), Payload> {
        self.events.try_send(event).map_err(|e| match e {
            TrySendError::Full(event) | TrySendError::Disconnected(event) => event,
        })
    }
}

/// Writes what waits in `waiting` to `stream` until the senders are gone.
async fn write(url: &str, stream: &str, codec: Codec, waiting: &Receiver<Payload>) {
    let mut sender = connect(url, stream).await;
    // The thread is the writer's alone: blocking on the queue holds no one else.
    while let Ok(first) = waiting.recv() {
        let mut batch = Vec::with_capacity(BATCH);
        batch.push(first);
        batch.extend(waiting.try_iter().take(BATCH - 1));
        let encoded: Vec<Vec<u8>> = batch
            .iter()
            .filter_map(|event| {
                (codec.encode)(event)
                    .inspect_err(|error| {
                        tracing::error!(%stream, %error, "an event cannot be written: dropped");
                    })
                    .ok()
            })
            .collect();
        let mut backoff = FIRST_BACKOFF;
        while let Err(error) = sender.send_encoded(&encoded).await {
            tracing::warn!(%stream, %error, "writing to the stream failed: trying again");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MOST_BACKOFF);
        }
    }
}

/// Connects to `stream`, trying again with backoff until Redis answers.
async fn connect(url: &str, stream: &str) -> StreamSender {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match StreamSender::connect(url, stream).await {
            Ok(sender) => return sender,
            Err(error) => {
                tracing::warn!(%stream, %error, "cannot reach Redis: trying again");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MOST_BACKOFF);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::Out;
    use crate::stage::stream::StreamReceiver;
    use crate::stage::stream::test_redis::{Redis, free_port};

    fn codec() -> Codec {
        Out::<u64>::new("n").spec.codec.unwrap()
    }

    async fn read_all(url: &str, n: usize) -> Vec<u64> {
        let mut receiver = StreamReceiver::join(url, "s", "g", "c").await.unwrap();
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while got.len() < n && std::time::Instant::now() < deadline {
            for delivery in receiver
                .receive::<u64>(1000, Duration::from_millis(100))
                .await
                .unwrap()
            {
                got.push(delivery.event.unwrap());
            }
        }
        got
    }

    #[tokio::test]
    async fn events_are_written_in_order_in_batches_and_the_rest_on_close() {
        let redis = Redis::start();
        let (outbound, writer) = Outbound::spawn(redis.url(), "s".into(), codec(), 10_000).unwrap();
        for n in 0..5_000_u64 {
            outbound.try_send(Box::new(n)).unwrap();
        }
        drop(outbound);
        writer.join().unwrap();
        assert_eq!(
            read_all(&redis.url(), 5_000).await,
            (0..5_000).collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn events_sent_before_redis_is_up_wait_and_arrive_and_a_full_queue_refuses() {
        let port = free_port();
        let url = format!("redis://127.0.0.1:{port}");
        let (outbound, writer) = Outbound::spawn(url.clone(), "s".into(), codec(), 3).unwrap();
        for n in 0..3_u64 {
            outbound.try_send(Box::new(n)).unwrap();
        }
        // The writer takes none while it cannot reach Redis: the queue is full.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let refused = outbound.try_send(Box::new(3_u64)).unwrap_err();
        assert_eq!(refused.downcast_ref::<u64>(), Some(&3));
        let _redis = Redis::start_on(port);
        drop(outbound);
        writer.join().unwrap();
        assert_eq!(read_all(&url, 3).await, [0, 1, 2]);
    }
}
