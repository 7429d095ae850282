//! A decoupled connector between processes, both sides of it.
//!
//! Sending ([`Outbound`]): the events wait in a bounded queue here (the connector's
//! admission applies to it as to any stage queue) and a thread of their own writes
//! them to the connector's Redis stream, up to [`BATCH`] a round trip. The stream is
//! bounded too: while the consuming group has not acknowledged `backlog` entries (its
//! lag and its pending), the writer waits, the queue here fills, and the senders meet
//! their admission policy — the consumer's pace reaches the producer. A write that
//! fails — Redis restarting, the network gone — is retried with backoff, its batch
//! kept, so nothing is lost; a batch that failed after Redis appended part of it is
//! appended again whole, which is what at-least-once allows (an idempotent stage drops
//! the duplicates).
//!
//! Receiving ([`Inbound`]): a thread of its own reads the stream as one consumer of
//! the consuming stage's group, no more than the stage's queue has room for, puts
//! each event in that queue, and acknowledges it once its handler has finished
//! without failing *and* what the handler sent to other processes is in Redis: each
//! outbound counts the events queued and written ([`Progress`]), and a handled event
//! is acknowledged once every writer has written what was queued when its handler
//! finished — so a process killed between the two loses nothing (its input is
//! delivered again). One that failed stays pending, to be delivered again.
//!
//! Every quarter of `claim_idle` the reader restarts the idle time of every event it
//! holds (queued, being handled, waiting for its outputs), so a live consumer's events
//! are not taken from it however long its queue, and takes over what has been idle
//! `claim_idle` on any consumer (one that died, or is stuck); an event delivered more
//! than `max_deliveries` times goes to the dead-letter stream `STREAM:dead` (reported,
//! acknowledged, never retried again). Every [`TRIM_EVERY`] it trims the stream of
//! what every group has acknowledged — never further, so trimming loses nothing.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::definition::Payload;
use super::error::StageError;
use super::node::Shared;
use super::port::Codec;
use super::stream::{StreamReceiver, StreamSender};
use crate::actor::Reason;

/// The most events one round trip writes.
pub(crate) const BATCH: usize = 256;

/// The first wait before a failed write is tried again; doubled each time, to
/// [`MOST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MOST_BACKOFF: Duration = Duration::from_secs(1);

/// The sending side of a connector to another process.
pub(crate) struct Outbound {
    events: Sender<Payload>,
    progress: Arc<Progress>,
}

/// How far an outbound has come: events queued, and events written to the stream
/// (or dropped as unwritable), since it started.
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
    fn reached(progresses: &[Arc<Self>], marks: &[u64]) -> bool {
        progresses
            .iter()
            .zip(marks)
            .all(|(p, &mark)| p.written.load(Ordering::Acquire) >= mark)
    }
}

impl Outbound {
    /// Starts the writer of `stream` on the Redis at `url`, `codec` writing the
    /// connector's events, at most `bound` of them waiting; the thread ends once every
    /// clone of the returned `Outbound` is dropped and what waited is written.
    pub(crate) fn spawn(
        url: String,
        stream: String,
        codec: Codec,
        bounds: Bounds,
    ) -> Result<(Self, JoinHandle<()>), StageError> {
        let (events, waiting) = crossbeam_channel::bounded(bounds.queue.max(1));
        let progress = Arc::new(Progress::default());
        let name = format!("stage-out-{stream}");
        let written = Arc::clone(&progress);
        let writer = crate::rt::runtime::spawn_thread(name.clone(), move |runtime| {
            let to = Writing {
                stream: &stream,
                codec,
                backlog: bounds.backlog,
            };
            runtime.block_on(write(&url, &to, &waiting, &written));
        })
        .map_err(|e| StageError::start(&name, &e))?;
        Ok((Self { events, progress }, writer))
    }

    /// Its progress, for inbounds to wait on.
    pub(crate) fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Queues `event`, waiting up to `wait` for room; gives it back otherwise.
    pub(crate) fn send_timeout(&self, event: Payload, wait: Duration) -> Result<(), Payload> {
        self.events
            .send_timeout(event, wait)
            .map_err(|e| e.into_inner())?;
        self.progress.queued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Queues `event`, or gives it back when the queue is full.
    pub(crate) fn try_send(&self, event: Payload) -> Result<(), Payload> {
        self.events.try_send(event).map_err(|e| match e {
            TrySendError::Full(event) | TrySendError::Disconnected(event) => event,
        })?;
        self.progress.queued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// How many events an outbound holds: in its queue here, and in its stream not yet
/// acknowledged by the consumer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) queue: usize,
    pub(crate) backlog: u64,
}

/// Where a writer writes.
struct Writing<'a> {
    stream: &'a str,
    codec: Codec,
    backlog: u64,
}

/// How long a writer waits before it looks again at a stream's backlog at its bound.
const ROOM_WAIT: Duration = Duration::from_millis(2);

/// Writes what waits in `waiting` to its stream until the senders are gone, counting
/// what it wrote in `progress`, and waiting while the stream's backlog is at its bound.
async fn write(url: &str, to: &Writing<'_>, waiting: &Receiver<Payload>, progress: &Progress) {
    let (stream, codec) = (to.stream, to.codec);
    let mut sender = connect(url, stream).await;
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
        let batch = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        progress.written.fetch_add(batch, Ordering::AcqRel);
        backlog_at_most += batch;
        if backlog_at_most >= to.backlog / 2 {
            backlog_at_most = room(&mut sender, to).await;
        }
    }
}

/// Waits until the stream's backlog is below its bound; returns it.
async fn room(sender: &mut StreamSender, to: &Writing<'_>) -> u64 {
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

/// The most events one read takes.
const READ_MOST: usize = 1024;

/// How often a reader trims its stream of what has been acknowledged.
pub(crate) const TRIM_EVERY: Duration = Duration::from_secs(1);

/// How long a read waits for events before the reader looks whether it must stop.
const READ_WAIT: Duration = Duration::from_millis(100);

/// Where an inbound stream goes: the consuming stage and its consumer group.
pub(crate) struct InboundSpec {
    pub(crate) url: String,
    pub(crate) stream: String,
    pub(crate) group: String,
    pub(crate) consumer: String,
    pub(crate) node: usize,
    pub(crate) codec: Codec,
    /// How long an event may stay pending on a consumer (one that died, or is stuck)
    /// before this one takes it over.
    pub(crate) claim_idle: Duration,
    /// Deliveries after which an event goes to the dead-letter stream instead.
    pub(crate) max_deliveries: u64,
}

impl InboundSpec {
    /// The dead-letter stream of this one: `STREAM:dead`.
    fn dead(&self) -> String {
        format!("{}:dead", self.stream)
    }
}

/// The receiving side of a connector from another process: its reader thread.
pub(crate) struct Inbound {
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl Inbound {
    /// Starts reading `spec.stream` into stage `spec.node` of `shared`.
    pub(crate) fn spawn(shared: Arc<Shared>, spec: InboundSpec) -> Result<Self, StageError> {
        let stop = Arc::new(AtomicBool::new(false));
        let name = format!("stage-in-{}", spec.stream);
        let stopped = Arc::clone(&stop);
        let reader = crate::rt::runtime::spawn_thread(name.clone(), move |runtime| {
            runtime.block_on(read(&shared, &spec, &stopped));
        })
        .map_err(|e| StageError::start(&name, &e))?;
        Ok(Self {
            stop,
            reader: Some(reader),
        })
    }
}

impl Drop for Inbound {
    /// Stops reading: what was read and not yet handled stays pending in the group.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Reads `spec`'s stream into its stage until `stop`, acknowledging what was handled.
///
/// Two loops share the thread, each with a connection of its own: the reader's
/// blocks in `XREADGROUP` waiting for events, the acknowledger's sends `XACK`s as
/// handlers finish. On one connection, a read blocked waiting for new events held
/// back the acknowledgements, the producer met the backlog bound and waited, and the
/// two stalled each other until the read timed out.
async fn read(shared: &Shared, spec: &InboundSpec, stop: &AtomicBool) {
    let (Some(reads), Some(acks)) = (join(spec, stop).await, join(spec, stop).await) else {
        return;
    };
    let (handled, settled) = tokio::sync::mpsc::unbounded_channel();
    let held = RefCell::new(HashSet::new());
    let mut reader = Reader {
        shared,
        spec,
        receiver: reads,
        handled,
        held: &held,
    };
    let mut acknowledger = Acknowledger {
        spec,
        receiver: acks,
        settled,
        outbounds: &shared.written,
        unwritten: Vec::new(),
        held: &held,
    };
    tokio::join!(reader.run(stop), acknowledger.run(stop));
}

/// Joins `spec`'s group, trying again until Redis answers or `stop`.
async fn join(spec: &InboundSpec, stop: &AtomicBool) -> Option<StreamReceiver> {
    loop {
        match StreamReceiver::join(&spec.url, &spec.stream, &spec.group, &spec.consumer).await {
            Ok(receiver) => return Some(receiver),
            Err(error) if !stop.load(Ordering::Relaxed) => {
                tracing::warn!(stream = %spec.stream, %error, "cannot reach Redis: trying again");
                tokio::time::sleep(READ_WAIT).await;
            }
            Err(_) => return None,
        }
    }
}

/// How an event's handler ended, by its id: the marks its outputs to other processes
/// must reach before it is acknowledged, or `None` when it failed.
type Handled = (String, Option<Vec<u64>>);

/// Events this consumer holds (queued, being handled, or handled and waiting for
/// their outputs): kept from being claimed by another.
type Held = RefCell<HashSet<String>>;

/// An inbound's reading loop: reads, keeps what it holds, claims, trims.
struct Reader<'a> {
    shared: &'a Shared,
    spec: &'a InboundSpec,
    receiver: StreamReceiver,
    handled: tokio::sync::mpsc::UnboundedSender<Handled>,
    held: &'a Held,
}

impl Reader<'_> {
    async fn run(&mut self, stop: &AtomicBool) {
        let spec = self.spec;
        let (mut swept, mut trimmed) = (Instant::now(), Instant::now());
        // Redis times a blocked read out to a tenth of a second (its `hz`): a quarter
        // of `claim_idle` bounds the round, so what is held is kept several times
        // before it could be claimed.
        let block = READ_WAIT.min(spec.claim_idle / 4);
        while !stop.load(Ordering::Relaxed) {
            if trimmed.elapsed() >= TRIM_EVERY {
                trimmed = Instant::now();
                if let Err(error) = self.receiver.trim_acknowledged().await {
                    tracing::warn!(stream = %spec.stream, %error, "trimming failed: trying again");
                }
            }
            // No more than the stage's queue has room for.
            let node = &self.shared.nodes[spec.node];
            let room = node
                .capacity
                .saturating_sub(node.queue.1.len())
                .min(READ_MOST);
            let mut entries = Vec::new();
            if swept.elapsed() >= spec.claim_idle / 4 {
                swept = Instant::now();
                self.keep().await;
                entries = self.claim(room).await;
            }
            if room > entries.len() {
                match self
                    .receiver
                    .receive_encoded(room - entries.len(), block)
                    .await
                {
                    Ok(new) => entries.extend(new),
                    Err(error) => {
                        tracing::warn!(stream = %spec.stream, %error, "reading the stream failed: trying again");
                        tokio::time::sleep(READ_WAIT).await;
                    }
                }
            } else {
                tokio::time::sleep(ROOM_WAIT).await;
            }
            if !self.deliver(entries) {
                return;
            }
        }
    }

    /// Puts `entries` in the stage's queue; returns whether the graph still takes them.
    fn deliver(&mut self, entries: Vec<(String, Option<Vec<u8>>)>) -> bool {
        for (id, bytes) in entries {
            let event = bytes.as_deref().map(self.spec.codec.decode);
            let Some(Ok(event)) = event else {
                tracing::error!(stream = %self.spec.stream, %id, "an entry that is not this connector's event: left pending");
                continue;
            };
            self.held.borrow_mut().insert(id.clone());
            let (handled, outbounds) = (self.handled.clone(), Arc::clone(&self.shared.written));
            let done = Box::new(move |ok: bool| {
                let _ = handled.send((id, ok.then(|| Progress::marks(&outbounds))));
            });
            if self
                .shared
                .deliver_remote(self.spec.node, event, done)
                .is_err()
            {
                return false;
            }
        }
        true
    }

    /// Starts the idle time of every event held over: a live consumer's events are
    /// not claimed, however long its queue.
    async fn keep(&mut self) {
        let held: Vec<String> = self.held.borrow().iter().cloned().collect();
        if let Err(error) = self.receiver.keep(&held).await {
            tracing::warn!(stream = %self.spec.stream, %error, "keeping held events failed: trying again");
        }
    }

    /// Takes over up to `room` events idle past `claim_idle` on any consumer; those
    /// delivered more than `max_deliveries` times go to the dead letters instead.
    async fn claim(&mut self, room: usize) -> Vec<(String, Option<Vec<u8>>)> {
        if room == 0 {
            return Vec::new();
        }
        let claimed = match self
            .receiver
            .claim_encoded(self.spec.claim_idle, room)
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(stream = %self.spec.stream, %error, "claiming failed: trying again");
                return Vec::new();
            }
        };
        let mut entries = Vec::new();
        for (id, bytes, deliveries) in claimed {
            if deliveries > self.spec.max_deliveries {
                dead_letter(
                    self.shared,
                    self.spec,
                    &mut self.receiver,
                    &id,
                    bytes.as_deref(),
                    deliveries,
                )
                .await;
            } else {
                entries.push((id, bytes));
            }
        }
        entries
    }
}

/// An inbound's acknowledging loop.
struct Acknowledger<'a> {
    spec: &'a InboundSpec,
    receiver: StreamReceiver,
    settled: tokio::sync::mpsc::UnboundedReceiver<Handled>,
    outbounds: &'a [Arc<Progress>],
    /// Events handled whose outputs are not all written yet.
    unwritten: Vec<(String, Vec<u64>)>,
    held: &'a Held,
}

impl Acknowledger<'_> {
    /// Acknowledges events as their handlers finish (and their outputs are written)
    /// until `stop`, then what is left that may be.
    async fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            // Outputs still being written are looked at again soon.
            let wait = if self.unwritten.is_empty() {
                READ_WAIT
            } else {
                ROOM_WAIT
            };
            if let Ok(Some(first)) = tokio::time::timeout(wait, self.settled.recv()).await {
                self.take(first);
            }
            self.acknowledge().await;
        }
        self.acknowledge().await;
    }

    fn take(&mut self, (id, marks): Handled) {
        match marks {
            Some(marks) => self.unwritten.push((id, marks)),
            // Failed: let go, to be claimed once idle and delivered again.
            None => {
                self.held.borrow_mut().remove(&id);
            }
        }
    }

    /// Acknowledges the events handled whose outputs are written.
    async fn acknowledge(&mut self) {
        while let Ok(handled) = self.settled.try_recv() {
            self.take(handled);
        }
        let mut done = Vec::new();
        self.unwritten.retain_mut(|(id, marks)| {
            let reached = Progress::reached(self.outbounds, marks);
            if reached {
                done.push(std::mem::take(id));
            }
            !reached
        });
        if done.is_empty() {
            return;
        }
        match self.receiver.ack(&done).await {
            Ok(()) => {
                let mut held = self.held.borrow_mut();
                for id in &done {
                    held.remove(id);
                }
            }
            Err(error) => {
                // Tried again next round: held (and kept) until then.
                tracing::warn!(stream = %self.spec.stream, %error, "acknowledging failed: trying again");
                self.unwritten
                    .extend(done.into_iter().map(|id| (id, Vec::new())));
            }
        }
    }
}

/// Moves event `id` to `spec`'s dead-letter stream, and reports it among the graph's
/// dead letters; left pending (to be tried again) if Redis refuses.
async fn dead_letter(
    shared: &Shared,
    spec: &InboundSpec,
    receiver: &mut StreamReceiver,
    id: &str,
    event: Option<&[u8]>,
    deliveries: u64,
) {
    let dead = spec.dead();
    match receiver.dead_letter(&dead, id, event, deliveries).await {
        Ok(()) => {
            let node = &shared.nodes[spec.node];
            shared.dead_letters.report(
                &node.name,
                node.input_name(),
                Reason::Failed(format!(
                    "{} {id} delivered {deliveries} times: moved to {dead}",
                    spec.stream
                )),
            );
        }
        Err(error) => {
            tracing::warn!(stream = %spec.stream, %id, %error, "moving to the dead letters failed: trying again");
        }
    }
}

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
