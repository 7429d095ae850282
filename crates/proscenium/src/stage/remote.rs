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
mod tests {
    use super::*;
    use crate::stage::stream::StreamReceiver;
    use crate::stage::{Mapping, Out};
    use crate::testing::{Redis, free_port};

    /// A reader of stream `s` into stage `node`, as group `sink`.
    fn inbound(redis: &Redis, node: usize, claim_idle: Duration) -> InboundSpec {
        InboundSpec {
            url: redis.url(),
            stream: "s".into(),
            group: "sink".into(),
            consumer: "p1".into(),
            node,
            codec: codec(),
            claim_idle,
            max_deliveries: 3,
        }
    }

    /// Process `process`'s part of graph `graph`: cluster `cluster`.
    fn mapping(graph: &str, process: &str, cluster: &str, redis: String) -> Mapping {
        Mapping {
            graph: graph.into(),
            process: process.into(),
            clusters: vec![cluster.into()],
            redis,
            claim_idle: Duration::from_secs(30),
            max_deliveries: 3,
        }
    }

    /// A connection of the test's own, for what the code under test does not read.
    async fn raw(redis: &Redis) -> redis::aio::MultiplexedConnection {
        redis::Client::open(redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// The events of stream `s` pending in group `sink`.
    async fn pending(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
        let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
            .arg("s")
            .arg("sink")
            .query_async(raw)
            .await
            .unwrap();
        summary.0
    }

    fn bounds(queue: usize) -> Bounds {
        Bounds {
            queue,
            backlog: 100_000,
        }
    }

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
        let (outbound, writer) =
            Outbound::spawn(redis.url(), "s".into(), codec(), bounds(10_000)).unwrap();
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
        let (outbound, writer) =
            Outbound::spawn(url.clone(), "s".into(), codec(), bounds(3)).unwrap();
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

    #[tokio::test]
    async fn a_stream_feeds_a_stage_and_what_it_handled_is_acknowledged_what_failed_is_not() {
        use std::collections::HashMap;

        use crate::stage::{Graph, Stage, StageError};

        let redis = Redis::start();
        let (seen, got) = crossbeam_channel::unbounded();
        let mut graph = Graph::new();
        let sink = graph.stage(Stage::stateful(
            "sink",
            || (),
            move |(), n: u64, _| {
                if n == 13 {
                    return Err(StageError::handler("thirteen"));
                }
                seen.send(n).unwrap();
                Ok(())
            },
        ));
        graph.part([("main", graph.all())]);
        let running = graph.start(&HashMap::new()).unwrap();
        let inbound = Inbound::spawn(
            running.shared(),
            inbound(&redis, sink.index, Duration::from_secs(60)),
        )
        .unwrap();
        let mut sender = StreamSender::connect(&redis.url(), "s").await.unwrap();
        sender.send(&(0..100).collect::<Vec<u64>>()).await.unwrap();
        let mut handled: Vec<u64> = (0..99)
            .map(|_| got.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        handled.sort_unstable();
        assert_eq!(handled, (0..100).filter(|&n| n != 13).collect::<Vec<_>>());
        let mut raw = raw(&redis).await;
        // The reader acknowledges between reads: a tenth of a second apart.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let pending = loop {
            let count = pending(&mut raw).await;
            if count <= 1 || std::time::Instant::now() > deadline {
                break count;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            pending, 1,
            "the failed event alone, left to be delivered again"
        );
        drop(inbound);
        running.shutdown(Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_poison_event_ends_in_the_dead_letter_stream_after_its_deliveries() {
        use std::collections::HashMap;
        use std::sync::atomic::AtomicUsize;

        use crate::stage::{Graph, Stage, StageError};

        let redis = Redis::start();
        let tries = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&tries);
        let mut graph = Graph::new();
        let sink = graph.stage(Stage::stateful(
            "sink",
            || (),
            move |(), n: u64, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                Err(StageError::handler(format!("{n} always fails")))
            },
        ));
        graph.part([("main", graph.all())]);
        let running = graph.start(&HashMap::new()).unwrap();
        let inbound = Inbound::spawn(
            running.shared(),
            inbound(&redis, sink.index, Duration::from_millis(100)),
        )
        .unwrap();
        StreamSender::connect(&redis.url(), "s")
            .await
            .unwrap()
            .send(&[13_u64])
            .await
            .unwrap();
        let mut raw = raw(&redis).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let dead = loop {
            let dead: u64 = redis::cmd("XLEN")
                .arg("s:dead")
                .query_async(&mut raw)
                .await
                .unwrap();
            if dead > 0 || std::time::Instant::now() > deadline {
                break dead;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        drop(inbound);
        assert_eq!(dead, 1);
        assert_eq!(
            tries.load(Ordering::SeqCst),
            3,
            "handled three times, no more"
        );
        assert_eq!(pending(&mut raw).await, 0, "acknowledged once moved");
        assert_eq!(running.dead_letters().count(), 1, "and reported");
        running.shutdown(Duration::from_secs(5));
    }

    /// A stage between two processes: what it handled is acknowledged only once what
    /// it sent on is in Redis. Its output stream is kept from being written (a key of
    /// another type in its place) until the test removes it.
    #[test]
    fn an_event_is_acknowledged_only_once_what_its_handler_sent_on_is_written() {
        use std::collections::HashMap;

        use crate::stage::{Connector, Graph, Out, Stage};

        let numbers = Out::<u64>::new("numbers");
        let relayed = Out::<u64>::new("out");
        let out = relayed.clone();
        let mut graph = Graph::new();
        let source = graph.stage(Stage::source("source", || (), |(), _| Ok(())).output(&numbers));
        let relay = graph.stage(
            Stage::stateless(
                "relay",
                || (),
                move |(), n: u64, ctx| Ok(ctx.send(&out, n)?),
            )
            .output(&relayed),
        );
        let sink = graph.stage(Stage::stateless("sink", || (), |(), _: u64, _| Ok(())));
        graph.connect(&source, "numbers", &relay, Connector::decoupled());
        graph.connect(&relay, "out", &sink, Connector::decoupled());
        graph.part([
            ("front", (&source).into()),
            ("middle", (&relay).into()),
            ("back", (&sink).into()),
        ]);
        let redis = Redis::start();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut raw = runtime.block_on(raw(&redis));
        let mut query = |command: &mut redis::Cmd| -> redis::Value {
            runtime.block_on(command.query_async(&mut raw)).unwrap()
        };
        let (input, output) = ("t:source.numbers:relay", "t:relay.out:sink");
        query(redis::cmd("SET").arg(output).arg("in the way"));
        let running = graph
            .start_mapped(&HashMap::new(), &mapping("t", "b", "middle", redis.url()))
            .unwrap();
        runtime.block_on(async {
            let mut sender = StreamSender::connect(&redis.url(), input).await.unwrap();
            sender.send(&(0..10).collect::<Vec<u64>>()).await.unwrap();
        });
        let pending = |query: &mut dyn FnMut(&mut redis::Cmd) -> redis::Value| {
            let summary = query(redis::cmd("XPENDING").arg(input).arg("relay"));
            let redis::Value::Array(fields) = summary else {
                panic!("XPENDING answers an array: {summary:?}")
            };
            redis::from_redis_value::<u64>(fields[0].clone()).unwrap()
        };
        let until = |done: &mut dyn FnMut() -> bool| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !done() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        until(&mut || running.stats().stage("relay").unwrap().handled == 10);
        // Several of the reader's rounds, in which it would have acknowledged them.
        std::thread::sleep(READ_WAIT * 5);
        assert_eq!(pending(&mut query), 10, "handled, their outputs unwritten");
        query(redis::cmd("DEL").arg(output));
        let mut left = 10;
        until(&mut || {
            left = pending(&mut query);
            left == 0
        });
        assert_eq!(left, 0, "acknowledged once written");
        let written = query(redis::cmd("XLEN").arg(output));
        assert_eq!(redis::from_redis_value::<u64>(written).unwrap(), 10);
        running.shutdown(Duration::from_secs(5));
    }

    /// A producer whose consumer is not there: the stream holds its bound and no more,
    /// the producer's queue fills, and its sends are refused (`reject`) — then the
    /// consumer comes, takes every event that was accepted, and the stream is trimmed
    /// of them.
    #[test]
    fn the_consumers_backlog_bounds_the_stream_and_what_it_acknowledged_is_trimmed() {
        use std::sync::atomic::AtomicU64;

        use crate::stage::{Admission, Connector, Graph, Out, Stage};

        const EVENTS: u64 = 20_000;
        // Four of the consumer's queues (at least a read's batch): 4 × 256.
        const BOUND: u64 = 1_024;
        fn graph(
            accepted: Arc<AtomicU64>,
            handled: Arc<AtomicU64>,
            enough: Arc<AtomicBool>,
        ) -> Graph {
            let numbers = Out::<u64>::new("numbers");
            let out = numbers.clone();
            let mut graph = Graph::new();
            let source = graph.stage(
                Stage::source(
                    "source",
                    || (),
                    move |(), ctx| {
                        // Refused, it tries again a little later, as a client would,
                        // until the test has seen enough.
                        for n in 0..EVENTS {
                            match ctx.send(&out, n) {
                                Ok(()) => {
                                    accepted.fetch_add(1, Ordering::SeqCst);
                                }
                                Err(refused) if refused.error().is_rejected() => {
                                    std::thread::sleep(Duration::from_millis(1));
                                }
                                Err(refused) => return Err(refused.into()),
                            }
                            if enough.load(Ordering::SeqCst) {
                                break;
                            }
                        }
                        Ok(())
                    },
                )
                .output(&numbers),
            );
            let sink = graph.stage(Stage::stateless(
                "sink",
                || (),
                move |(), _: u64, _| {
                    handled.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
            ));
            let connector = Connector::decoupled().admission(Admission::Reject);
            graph.connect(&source, "numbers", &sink, connector);
            graph.part([("front", (&source).into()), ("back", (&sink).into())]);
            graph
        }
        let redis = Redis::start();
        let clusters = super::super::tests::clusters(
            "[clusters.front]\nqueue = 100\n[clusters.back]\nqueue = 100",
        );
        let (accepted, handled) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let enough = Arc::new(AtomicBool::new(false));
        let front = graph(
            Arc::clone(&accepted),
            Arc::clone(&handled),
            Arc::clone(&enough),
        )
        .start_mapped(&clusters, &mapping("bp", "a", "front", redis.url()))
        .unwrap();
        let stream = "bp:source.numbers:sink";
        let mut raw = redis::Client::open(redis.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let mut len = || -> u64 { redis::cmd("XLEN").arg(stream).query(&mut raw).unwrap() };
        let settled = |f: &mut dyn FnMut() -> bool| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !f() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        // Refusals are counted at the consumer's entry, in the sending process.
        settled(&mut || front.stats().stage("sink").unwrap().rejected > 0 && len() >= BOUND);
        // Time for the writer to pass the bound, if it would.
        std::thread::sleep(Duration::from_millis(300));
        let held = len();
        // It is read once half of it may be there, so a batch more may pass.
        assert!(
            (BOUND..BOUND + BATCH as u64).contains(&held),
            "the stream holds {held}"
        );
        enough.store(true, Ordering::SeqCst);
        settled(&mut || front.stats().stage("source").unwrap().handled == 1);
        let took = accepted.load(Ordering::SeqCst);
        assert!(took < 2_000, "{took} of {EVENTS} accepted");

        let back = graph(
            Arc::new(AtomicU64::new(0)),
            Arc::clone(&handled),
            Arc::clone(&enough),
        )
        .start_mapped(&clusters, &mapping("bp", "b", "back", redis.url()))
        .unwrap();
        settled(&mut || handled.load(Ordering::SeqCst) == took);
        assert_eq!(handled.load(Ordering::SeqCst), took, "every accepted event");
        let mut left = u64::MAX;
        settled(&mut || {
            left = len();
            left <= 1
        });
        assert!(left <= 1, "trimmed of what was acknowledged: {left} left");
        front.shutdown(Duration::from_secs(5));
        back.shutdown(Duration::from_secs(5));
    }

    /// Two consumers of one stage: the first holds every event in its queue, handled
    /// slowly, longer than `claim_idle` in all; the second, started after, claims none
    /// of them — a live consumer keeps what it holds — and each is handled once.
    #[test]
    fn a_live_consumers_queued_events_are_not_claimed_from_it() {
        use std::collections::HashMap;

        use crate::stage::{Connector, Graph, Out, Stage};

        fn graph() -> Graph {
            let numbers = Out::<u64>::new("numbers");
            let mut graph = Graph::new();
            let source =
                graph.stage(Stage::source("source", || (), |(), _| Ok(())).output(&numbers));
            let sink = graph.stage(Stage::stateful(
                "sink",
                || (),
                |(), _: u64, _| {
                    std::thread::sleep(Duration::from_millis(40));
                    Ok(())
                },
            ));
            graph.connect(&source, "numbers", &sink, Connector::decoupled());
            graph.part([("front", (&source).into()), ("back", (&sink).into())]);
            graph
        }
        let redis = Redis::start();
        let consumer = |process: &str| {
            let mut mapping = mapping("k", process, "back", redis.url());
            mapping.claim_idle = Duration::from_secs(1);
            graph().start_mapped(&HashMap::new(), &mapping).unwrap()
        };
        let first = consumer("a");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut sender = StreamSender::connect(&redis.url(), "k:source.numbers:sink")
                .await
                .unwrap();
            sender.send(&(0..60).collect::<Vec<u64>>()).await.unwrap();
        });
        let handled =
            |graph: &crate::stage::RunningGraph| graph.stats().stage("sink").unwrap().handled;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while first.stats().stage("sink").unwrap().arrived < 60 {
            assert!(std::time::Instant::now() < deadline, "the first took them");
            std::thread::sleep(Duration::from_millis(10));
        }
        let second = consumer("b");
        while handled(&first) + handled(&second) < 60 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Claims come every quarter of claim_idle: give the second a few more.
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!((handled(&first), handled(&second)), (60, 0));
        first.shutdown(Duration::from_secs(5));
        second.shutdown(Duration::from_secs(5));
    }

    /// The same graph in two "processes" of one test: `front` (a source) in one,
    /// `back` (a sink) in the other, the decoupled connector between them a stream.
    #[test]
    fn a_graph_split_over_two_processes_carries_every_event_across_in_order() {
        use std::collections::HashMap;

        use crate::stage::{Connector, Graph, Out, Stage};

        fn graph(seen: crossbeam_channel::Sender<u64>) -> Graph {
            let numbers = Out::<u64>::new("numbers");
            let out = numbers.clone();
            let mut graph = Graph::new();
            let source = graph.stage(
                Stage::source(
                    "source",
                    || (),
                    move |(), ctx| {
                        (0..1_000_u64).try_for_each(|n| ctx.send(&out, n))?;
                        Ok(())
                    },
                )
                .output(&numbers),
            );
            let sink = graph.stage(Stage::stateful(
                "sink",
                || (),
                move |(), n: u64, _| {
                    seen.send(n).unwrap();
                    Ok(())
                },
            ));
            graph.connect(&source, "numbers", &sink, Connector::decoupled());
            graph.part([("front", (&source).into()), ("back", (&sink).into())]);
            graph
        }
        let redis = Redis::start();
        let mapping =
            |process: &str, cluster: &str| mapping("split", process, cluster, redis.url());
        let (seen, got) = crossbeam_channel::unbounded();
        let back = graph(seen.clone())
            .start_mapped(&HashMap::new(), &mapping("b", "back"))
            .unwrap();
        let front = graph(seen)
            .start_mapped(&HashMap::new(), &mapping("a", "front"))
            .unwrap();
        let received: Vec<u64> = (0..1_000)
            .map(|_| got.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(received, (0..1_000).collect::<Vec<_>>());
        assert!(
            got.recv_timeout(Duration::from_millis(200)).is_err(),
            "each once"
        );
        let front_sink = front.stats().stage("sink").unwrap().handled;
        assert_eq!(front_sink, 0, "the sink runs in the other process only");
        front.shutdown(Duration::from_secs(5));
        back.shutdown(Duration::from_secs(5));
    }

    #[test]
    fn an_inlet_to_a_stage_of_another_process_is_refused_not_left_waiting() {
        use std::collections::HashMap;

        use crate::stage::{Admission, Connector, Graph, Out, Stage};

        let numbers = Out::<u64>::new("numbers");
        let mut graph = Graph::new();
        let source = graph.stage(Stage::source("source", || (), |(), _| Ok(())).output(&numbers));
        let sink = graph.stage(Stage::stateless("sink", || (), |(), _: u64, _| Ok(())));
        graph.connect(&source, "numbers", &sink, Connector::decoupled());
        graph.part([("front", (&source).into()), ("back", (&sink).into())]);
        let redis = Redis::start();
        let front = graph
            .start_mapped(&HashMap::new(), &mapping("i", "a", "front", redis.url()))
            .unwrap();
        let refused = front
            .inlet::<u64>("orders", &sink, Admission::Reject)
            .unwrap_err();
        assert!(
            refused.is_graph() && refused.to_string().contains("runs in another process"),
            "{refused}"
        );
        front.shutdown(Duration::from_secs(5));
    }

    #[test]
    fn a_cohort_connector_across_processes_and_an_unknown_cluster_are_refused_by_name() {
        use std::collections::HashMap;

        use crate::stage::{Connector, Graph, Out, Stage};

        fn graph(connector: Connector) -> Graph {
            let numbers = Out::<u64>::new("numbers");
            let out = numbers.clone();
            let mut graph = Graph::new();
            let source = graph.stage(
                Stage::source("source", || (), move |(), ctx| Ok(ctx.send(&out, 1)?))
                    .output(&numbers),
            );
            let sink = graph.stage(Stage::stateless("sink", || (), |(), _: u64, _| Ok(())));
            graph.connect(&source, "numbers", &sink, connector);
            graph.part([("front", (&source).into()), ("back", (&sink).into())]);
            graph
        }
        let nowhere = format!("redis://127.0.0.1:{}", free_port());
        let mapping = |cluster: &str| mapping("g", "a", cluster, nowhere.clone());
        let crossing = graph(Connector::cohort())
            .start_mapped(&HashMap::new(), &mapping("front"))
            .err()
            .unwrap();
        assert!(crossing.is_graph(), "{crossing}");
        assert!(
            crossing
                .to_string()
                .contains("only decoupled connectors cross clusters"),
            "{crossing}"
        );
        let unknown = graph(Connector::decoupled())
            .start_mapped(&HashMap::new(), &mapping("middle"))
            .err()
            .unwrap();
        assert!(
            unknown.to_string().contains("cluster `middle`"),
            "{unknown}"
        );
    }

    #[test]
    fn a_process_whose_graph_differs_from_the_others_refuses_to_join_naming_the_difference() {
        use std::collections::HashMap;

        use crate::stage::{Connector, Graph, Out, Stage};

        fn graph<T: crate::stage::Event>() -> Graph {
            let numbers = Out::<T>::new("numbers");
            let mut graph = Graph::new();
            let source =
                graph.stage(Stage::source("source", || (), |(), _| Ok(())).output(&numbers));
            let sink = graph.stage(Stage::stateless("sink", || (), |(), _: T, _| Ok(())));
            graph.connect(&source, "numbers", &sink, Connector::decoupled());
            graph.part([("front", (&source).into()), ("back", (&sink).into())]);
            graph
        }
        let redis = Redis::start();
        let mapping = |cluster: &str| mapping("g", cluster, cluster, redis.url());
        let back = graph::<u64>()
            .start_mapped(&HashMap::new(), &mapping("back"))
            .unwrap();
        let refused = graph::<u32>()
            .start_mapped(&HashMap::new(), &mapping("front"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            refused.contains("differs")
                && refused.contains("- port source.numbers carries u64")
                && refused.contains("+ port source.numbers carries u32"),
            "{refused}"
        );
        let front = graph::<u64>()
            .start_mapped(&HashMap::new(), &mapping("front"))
            .unwrap();
        front.shutdown(Duration::from_secs(5));
        back.shutdown(Duration::from_secs(5));
    }
}
