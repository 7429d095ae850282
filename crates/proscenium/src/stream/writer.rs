//! A bounded writer to one stream, on a thread of its own: what is sent waits in a
//! bounded queue here and is written to the stream up to [`BATCH`] a round trip. The
//! stream is bounded too: while its slowest group has not acknowledged `backlog`
//! entries (its lag and its pending), the writer waits, the queue here fills, and the
//! senders meet a full queue — the consumer's pace reaches the producer. A write that
//! fails — Redis restarting, the network gone — is retried with backoff, its batch
//! kept, so nothing is lost; a batch that failed after Redis appended part of it is
//! appended again whole, which is what at-least-once allows.
//!
//! A stage graph's connector to another process writes its events through one
//! (`stage::remote`), and so does a node's outbox to a remote actor
//! (`actor::remote`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::{RedisTarget, StreamSender, WireError};
use crate::rt::Backoff;

/// The most events one round trip writes.
pub(crate) const BATCH: usize = 256;

/// The first ceiling of the wait before a failed write is tried again; doubled each
/// time, to [`MOST_BACKOFF`], the wait drawn below it (`rt/backoff.rs`).
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(10);
pub(crate) const MOST_BACKOFF: Duration = Duration::from_secs(1);

/// How long a writer waits before it looks again at a stream's backlog at its bound.
pub(crate) const ROOM_WAIT: Duration = Duration::from_millis(2);

/// Writes a value to its stream's wire format.
pub(crate) type Encode<T> = fn(&T) -> Result<Vec<u8>, WireError>;

/// The sending side of a stream: its queue, and how far its writer has come.
pub(crate) struct StreamWriter<T> {
    events: Sender<T>,
    progress: Arc<Progress>,
}

/// How far a writer has come: events queued, and events written to the stream (or
/// dropped as unwritable), since it started.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    queued: AtomicU64,
    written: AtomicU64,
}

impl Progress {
    /// Marks of `progresses`: what each has queued now.
    pub(crate) fn marks(progresses: &[Arc<Self>]) -> Vec<u64> {
        progresses
            .iter()
            .map(|p| p.queued.load(Ordering::Acquire))
            .collect()
    }

    /// Whether each of `progresses` has written up to its mark in `marks`.
    pub(crate) fn reached(progresses: &[Arc<Self>], marks: &[u64]) -> bool {
        progresses
            .iter()
            .zip(marks)
            .all(|(p, &mark)| p.written.load(Ordering::Acquire) >= mark)
    }
}

/// How many events a writer holds: in its queue here, and in its stream not yet
/// acknowledged by the consumer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) queue: usize,
    pub(crate) backlog: u64,
}

impl<T: Send + 'static> StreamWriter<T> {
    /// Starts the writer of `stream` on the Redis `redis` names, `encode` writing its
    /// events, as many as `bounds` allows waiting; the thread ends once every clone of
    /// the returned writer is dropped and what waited is written.
    ///
    /// # Errors
    ///
    /// When the thread cannot be started.
    pub(crate) fn spawn(
        redis: RedisTarget,
        stream: String,
        encode: Encode<T>,
        bounds: Bounds,
    ) -> std::io::Result<(Self, JoinHandle<()>)> {
        let (events, waiting) = crossbeam_channel::bounded(bounds.queue.max(1));
        let progress = Arc::new(Progress::default());
        let written = Arc::clone(&progress);
        let writer =
            crate::rt::runtime::spawn_thread(format!("stream-out-{stream}"), move |runtime| {
                let to = Writing {
                    stream: &stream,
                    encode,
                    backlog: bounds.backlog,
                };
                runtime.block_on(write(&redis, &to, &waiting, &written));
            })?;
        Ok((Self { events, progress }, writer))
    }

    /// Its progress, to wait on.
    pub(crate) fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Queues `event`, waiting up to `wait` for room; gives it back otherwise.
    pub(crate) fn send_timeout(&self, event: T, wait: Duration) -> Result<(), T> {
        self.events
            .send_timeout(event, wait)
            .map_err(|e| e.into_inner())?;
        self.progress.queued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Queues `event`, or gives it back when the queue is full.
    pub(crate) fn try_send(&self, event: T) -> Result<(), T> {
        self.events.try_send(event).map_err(|e| match e {
            TrySendError::Full(event) | TrySendError::Disconnected(event) => event,
        })?;
        self.progress.queued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// Where a writer writes.
struct Writing<'a, T> {
    stream: &'a str,
    encode: Encode<T>,
    backlog: u64,
}

/// Writes what waits in `waiting` to its stream until the senders are gone, counting
/// what it wrote in `progress`, and waiting while the stream's backlog is at its bound.
async fn write<T>(
    redis: &RedisTarget,
    to: &Writing<'_, T>,
    waiting: &Receiver<T>,
    progress: &Progress,
) {
    let stream = to.stream;
    let mut sender = connect(redis, stream).await;
    // What the backlog may be at most: the last one read, and every event written
    // since. Redis is asked only once this reaches half the bound.
    let mut backlog_at_most = 0;
    // The thread is the writer's alone: blocking on the queue holds no one else.
    while let Ok(first) = waiting.recv() {
        let mut batch = Vec::with_capacity(BATCH);
        batch.push(first);
        batch.extend(waiting.try_iter().take(BATCH - 1));
        let encoded: Vec<Vec<u8>> = batch
            .iter()
            .filter_map(|event| {
                (to.encode)(event)
                    .inspect_err(|error| {
                        tracing::error!(%stream, %error, "an event cannot be written: dropped");
                    })
                    .ok()
            })
            .collect();
        let mut backoff = Backoff::new(FIRST_BACKOFF, MOST_BACKOFF);
        while let Err(error) = sender.send_encoded(&encoded).await {
            tracing::warn!(%stream, %error, "writing to the stream failed: trying again");
            tokio::time::sleep(backoff.next_delay()).await;
        }
        let batch = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        progress.written.fetch_add(batch, Ordering::AcqRel);
        backlog_at_most += batch;
        if backlog_at_most >= to.backlog / 2 {
            backlog_at_most = room(&mut sender, to).await;
        }
    }
}

/// Waits until the stream's backlog is below its bound; returns it.
async fn room<T>(sender: &mut StreamSender, to: &Writing<'_, T>) -> u64 {
    loop {
        match sender.backlog().await {
            Ok(backlog) if backlog >= to.backlog => tokio::time::sleep(ROOM_WAIT).await,
            Ok(backlog) => return backlog,
            Err(error) => {
                // The next write meets the same Redis, and retries; until then the
                // backlog is taken to be at the bound, to be read again soon.
                tracing::warn!(stream = %to.stream, %error, "reading the stream's backlog failed");
                return to.backlog;
            }
        }
    }
}

/// Connects to `stream`, trying again with backoff until Redis answers.
async fn connect(redis: &RedisTarget, stream: &str) -> StreamSender {
    let mut backoff = Backoff::new(FIRST_BACKOFF, MOST_BACKOFF);
    loop {
        match StreamSender::connect(redis, stream).await {
            Ok(sender) => return sender,
            Err(error) => {
                tracing::warn!(%stream, %error, "cannot reach Redis: trying again");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}
