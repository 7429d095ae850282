//! A decoupled connector between processes, both sides of it.
//!
//! Sending ([`Outbound`]): a [`StreamWriter`] of the connector's events — a bounded
//! queue here (the connector's admission applies to it as to any stage queue), a
//! thread writing it to the connector's Redis stream in batches, waiting while the
//! consuming group's backlog is at its bound, retrying with backoff what failed.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::definition::Payload;
use super::error::StageError;
use super::node::Shared;
use super::port::Codec;
use crate::actor::Reason;
use crate::stream::writer::ROOM_WAIT;
pub(crate) use crate::stream::writer::{BATCH, Bounds, Progress, StreamWriter};
use crate::stream::{RedisTarget, StreamReceiver};

/// The sending side of a connector to another process.
pub(crate) type Outbound = StreamWriter<Payload>;

/// The most events one read takes.
const READ_MOST: usize = 1024;

/// How often a reader trims its stream of what has been acknowledged.
pub(crate) const TRIM_EVERY: Duration = Duration::from_secs(1);

/// How long a read waits for events before the reader looks whether it must stop.
const READ_WAIT: Duration = Duration::from_millis(100);

/// Where an inbound stream goes: the consuming stage and its consumer group.
pub(crate) struct InboundSpec {
    pub(crate) redis: RedisTarget,
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
    StreamReceiver::join_retrying(
        &spec.redis,
        &spec.stream,
        &spec.group,
        &spec.consumer,
        READ_WAIT,
        || stop.load(Ordering::Relaxed),
    )
    .await
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
