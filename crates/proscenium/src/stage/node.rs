//! A stage in the running graph: its bounded queue, its pool of idle instances
//! (`pool.rs`, where the hand-off between them is) and its counters.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};
use futures_util::FutureExt;
use tracing::Instrument;

use super::admission::Share;
use super::batching::Batch;
use super::bucket::TokenBucket;
use super::context::Context;
use super::crossing::{Outbound, Progress};
use super::definition::{Handled, Instance, Payload, Role};
use super::error::{SendError, StageError};
use super::idempotent::Repeats;
use super::pool::{Pool, Queue};
use super::port::{Admission, Connector, ConnectorKind, EventType};
use super::ready::{Ready, Ticket};
use super::stats::Counters;
use crate::actor::{DeadLetters, Reason};
use crate::trace_context::Parent;

/// A send refused: the event, type-erased, and why.
pub(crate) type Refused = (Payload, StageError);

/// Returns a refused event to its sender, typed again, with why.
pub(crate) fn given_back<T: 'static>((payload, error): Refused) -> SendError<T> {
    // The payload is the `T` its sender boxed: the graph hands refused events back
    // untouched.
    let event = payload
        .downcast::<T>()
        .expect("a refused event is the one sent");
    SendError::new(*event, error)
}

/// An event in a stage's queue, with when it arrived if it is one of those timed
/// (its wait is measured from it) and, for one from another process, what to tell
/// once it is handled.
pub(crate) struct Queued {
    event: Payload,
    since: Option<Instant>,
    done: Option<Done>,
    /// Its sender's span, when a subscriber wants stage spans: its run, on another
    /// thread and later, is that span's child (`trace_context` says how). Boxed: one
    /// word in the queue's slots when no one does.
    parent: Option<Box<Parent>>,
}

impl Queued {
    /// An event sent from this process, `since` if it is timed.
    fn local(event: Payload, since: Option<Instant>) -> Self {
        let parent = tracing::enabled!(target: STAGE_SPANS, tracing::Level::TRACE)
            .then(|| Box::new(Parent::current()));
        Self {
            event,
            since,
            done: None,
            parent,
        }
    }
}

/// Told whether an event's handler finished without failing: an event from another
/// process is acknowledged then, and left to be delivered again otherwise.
pub(crate) type Done = Box<dyn FnOnce(bool) + Send>;

/// How long a blocked sender waits before looking whether the graph has halted.
const HALT_CHECK: Duration = Duration::from_millis(20);

/// The target of stage event spans (`[traces]`): one span a handler's run, at `trace`
/// level so that it is made only where a subscriber asks for it (the OTLP export).
/// Under a cohort connector the run is in its sender's span (a request's, say) and is
/// its child; an event that waits in a queue carries its sender's span context there,
/// and its run is that span's child too.
pub(crate) const STAGE_SPANS: &str = "proscenium::stage";

/// An output port bound to its consumer.
pub(crate) struct Route {
    pub(crate) port: &'static str,
    pub(crate) target: usize,
    pub(crate) connector: Connector,
    pub(crate) bucket: Option<TokenBucket>,
    /// To a stage in another process: the connector's writer to its stream.
    pub(crate) outbound: Option<Arc<Outbound>>,
}

pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) role: Role,
    /// The type of its events; `None` for a source.
    pub(crate) input: Option<EventType>,
    pub(crate) cluster: usize,
    pub(crate) instances: usize,
    /// Its turns' priority in its cluster's ready queue.
    pub(crate) priority: usize,
    pub(crate) batch: Batch,
    /// The share of its token buckets' rates it admits (the admission controller's).
    pub(crate) admission: Share,
    /// One event in this many is timed: the graph's sample, or every one under an
    /// admission controller's wait target.
    pub(crate) sample: u64,
    pub(crate) routes: Vec<Route>,
    pub(crate) queue: (Sender<Queued>, Receiver<Queued>),
    pub(crate) capacity: usize,
    /// Its handler is async: its turns are tasks on a thread's loop.
    pub(crate) asynchronous: bool,
    pub(crate) ready: Arc<Ready>,
    pub(crate) pool: Pool<Box<dyn Instance>>,
    pub(crate) counters: Counters,
    /// Idempotent: whether an event repeats one taken within its window.
    pub(crate) repeats: Option<Repeats>,
    /// Sends into this stage's queue under way (see [`Shared::enqueue`]).
    pub(crate) sending: AtomicUsize,
}

/// What every thread of a running graph shares.
pub(crate) struct Shared {
    pub(crate) nodes: Vec<Node>,
    /// How far each writer to another process has come: an event from another
    /// process is acknowledged once they have written what its handler sent.
    #[cfg_attr(
        not(feature = "redis"),
        expect(dead_code, reason = "only readers read it")
    )]
    pub(crate) written: Arc<[Arc<Progress>]>,
    pub(crate) stopping: AtomicBool,
    pub(crate) halted: AtomicBool,
    pub(crate) dead_letters: DeadLetters,
    /// Run on each cluster thread as it starts (`Graph::on_thread_start`).
    pub(crate) thread_start: Option<super::graph::ThreadStart>,
    /// One event in this many is timed (`Graph::sample`), at stages without a wait
    /// target.
    pub(crate) sample: u64,
}

impl Queue for Receiver<Queued> {
    fn is_empty(&self) -> bool {
        Receiver::is_empty(self)
    }
}

impl Node {
    /// Returns the name of the type of its events (`()` for a source), for dead letters.
    pub(crate) fn input_name(&self) -> &'static str {
        self.input.map_or("()", |input| input.name)
    }
}

impl Shared {
    /// Sends `event` from stage `from` out of `port`; a refused event comes back with
    /// the error.
    pub(crate) fn send(&self, from: usize, port: &str, event: Payload) -> Result<(), Refused> {
        let sender = &self.nodes[from];
        let Some(route) = sender.routes.iter().find(|route| route.port == port) else {
            let error = StageError::handler(format!(
                "stage `{}` has no bound output port `{port}`",
                sender.name
            ));
            return Err((event, error));
        };
        self.deliver(&sender.name, route, event)?;
        sender.counters.sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Delivers `event` from `sender` (a stage, or an inlet) through `route`; a
    /// refusal by the consumer's admission policy is counted on the consumer (a stop
    /// past the deadline is counted among the dead letters instead).
    pub(crate) fn deliver(
        &self,
        sender: &str,
        route: &Route,
        event: Payload,
    ) -> Result<(), Refused> {
        let result = match (&route.outbound, route.connector.kind) {
            (Some(outbound), _) => self.send_out(sender, route, outbound, event),
            (None, ConnectorKind::Cohort) => {
                self.run_cohort(route.target, event);
                Ok(())
            }
            (None, ConnectorKind::Local | ConnectorKind::Decoupled) => {
                self.enqueue(sender, route, event)
            }
        };
        if result.as_ref().is_err_and(|(_, e)| e.is_rejected()) {
            let target = &self.nodes[route.target];
            target.counters.rejected.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Queues `event` for `route`'s writer to another process, as the connector's
    /// admission policy says (`block` waits for room, until the graph halts).
    fn send_out(
        &self,
        sender: &str,
        route: &Route,
        outbound: &Outbound,
        event: Payload,
    ) -> Result<(), Refused> {
        let target = &self.nodes[route.target];
        let rejected = |event| {
            (
                event,
                StageError::rejected(sender, route.port, &target.name),
            )
        };
        match route.connector.admission {
            Admission::Block => {
                let mut event = event;
                loop {
                    match outbound.send_timeout(event, HALT_CHECK) {
                        Ok(()) => return Ok(()),
                        Err(back) if self.halted.load(Ordering::Acquire) => {
                            return Err(self.stopped(sender, route, back));
                        }
                        Err(back) => event = back,
                    }
                }
            }
            Admission::Reject => outbound.try_send(event).map_err(rejected),
            Admission::TokenBucket { .. } => {
                let share = target.admission.get();
                if route.bucket.as_ref().is_some_and(|b| b.try_take(share)) {
                    outbound.try_send(event).map_err(rejected)
                } else {
                    Err(rejected(event))
                }
            }
        }
    }

    /// Puts `event` in `route`'s consumer's queue as its admission policy says, unless
    /// the graph has halted: past the halt no thread takes from a queue, so an event
    /// sent then would wait there unseen.
    ///
    /// The halt and a send meet as in Dekker's algorithm: the send counts itself in
    /// `sending` and then reads `halted`, the halt raises `halted` and then waits for
    /// `sending` to fall to zero before it empties the queues (all `SeqCst`). So either
    /// the send sees the halt, or the halt sees the send and empties the queue after it.
    fn enqueue(&self, sender: &str, route: &Route, event: Payload) -> Result<(), Refused> {
        let target = &self.nodes[route.target];
        target.sending.fetch_add(1, Ordering::SeqCst);
        let result = if self.halted.load(Ordering::SeqCst) {
            Err(self.stopped(sender, route, event))
        } else {
            self.admit(sender, route, event)
        };
        target.sending.fetch_sub(1, Ordering::SeqCst);
        result
    }

    fn admit(&self, sender: &str, route: &Route, event: Payload) -> Result<(), Refused> {
        let target = &self.nodes[route.target];
        let refuse = |event| {
            (
                event,
                StageError::rejected(sender, route.port, &target.name),
            )
        };
        let try_send = |event| {
            let queued = Queued::local(event, self.stamp(target));
            target.queue.0.try_send(queued).map_err(|e| match e {
                TrySendError::Full(back) | TrySendError::Disconnected(back) => refuse(back.event),
            })
        };
        match route.connector.admission {
            Admission::Block => self.enqueue_blocking(sender, route, event)?,
            Admission::Reject => try_send(event)?,
            Admission::TokenBucket { .. } => {
                let share = target.admission.get();
                let admitted = route.bucket.as_ref().is_some_and(|b| b.try_take(share));
                if !admitted {
                    return Err(refuse(event));
                }
                try_send(event)?;
            }
        }
        target.counters.arrived.fetch_add(1, Ordering::Relaxed);
        self.schedule(route.target);
        Ok(())
    }

    /// Waits for room in the queue; the event's wait counts from its first offer, so
    /// a stage's wait includes the backpressure its senders felt.
    fn enqueue_blocking(&self, sender: &str, route: &Route, event: Payload) -> Result<(), Refused> {
        let target = &self.nodes[route.target];
        let mut queued = Queued::local(event, self.stamp(target));
        loop {
            match target.queue.0.send_timeout(queued, HALT_CHECK) {
                Ok(()) => return Ok(()),
                Err(SendTimeoutError::Timeout(back) | SendTimeoutError::Disconnected(back)) => {
                    if self.halted.load(Ordering::Acquire) {
                        return Err(self.stopped(sender, route, back.event));
                    }
                    queued = back;
                }
            }
        }
    }

    /// Returns whether the event after `arrivals` earlier ones at `stage` is one of
    /// those timed.
    fn is_timed(stage: &Node, arrivals: u64) -> bool {
        // A mask where it can be (64, the default): a division costs a hop a few ns.
        if stage.sample.is_power_of_two() {
            arrivals & (stage.sample - 1) == 0
        } else {
            arrivals % stage.sample == 0
        }
    }

    /// Returns now if an event about to enter `target`'s queue is one of those timed.
    /// The arrivals are read, not counted (an event is counted once it is queued):
    /// two senders at once may both time an event, or neither — a sample all the same.
    fn stamp(&self, target: &Node) -> Option<Instant> {
        Self::is_timed(target, target.counters.arrived.load(Ordering::Relaxed)).then(Instant::now)
    }

    /// Refuses `event` from `sender` to `route`'s consumer because the graph halted,
    /// counting it as a dead letter.
    fn stopped(&self, sender: &str, route: &Route, event: Payload) -> Refused {
        let target = &self.nodes[route.target];
        self.dead_letters
            .report(&target.name, target.input_name(), Reason::Stopped);
        let error = StageError::stopped(sender, route.port, &target.name);
        (event, error)
    }

    /// Halts the graph's queues: raises `halted`, waits for the sends under way (a
    /// blocked one gives up within [`HALT_CHECK`]), then empties every queue, each event
    /// a dead letter; returns how many.
    pub(crate) fn halt_queues(&self) -> u64 {
        self.halted.store(true, Ordering::SeqCst);
        let mut abandoned = 0;
        for node in &self.nodes {
            while node.sending.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            while node.queue.1.try_recv().is_ok() {
                abandoned += 1;
                self.dead_letters
                    .report(&node.name, node.input_name(), Reason::Stopped);
            }
        }
        abandoned
    }

    /// Puts a turn of `node` in the ready queue if events wait for one.
    pub(crate) fn schedule(&self, node: usize) {
        let stage = &self.nodes[node];
        if stage.pool.wake(&stage.queue.1) {
            stage.ready.push(Ticket::Turn(node), stage.priority);
        }
    }

    /// Runs one turn of `instance` on this thread: a source's run, or up to `batch`
    /// events from the queue.
    ///
    /// A sync stage's turn has nothing to await: it completes in one poll, so the
    /// thread runs it in place ([`now`]); an async stage's is a task on the thread's
    /// loop.
    pub(crate) async fn turn(&self, node: usize, mut instance: Box<dyn Instance>) {
        let stage = &self.nodes[node];
        if stage.role == Role::Source {
            self.run_one(node, instance.as_mut(), None, None, false, None)
                .await;
            stage.pool.source_finished();
            return;
        }
        for _ in 0..stage.batch.now() {
            let Ok(Queued {
                event,
                since,
                done,
                parent,
            }) = stage.queue.1.try_recv()
            else {
                break;
            };
            // An event from another process that fails stays pending there.
            let again = done.is_some();
            let handled = self
                .run_one(node, instance.as_mut(), Some(event), since, again, parent)
                .await;
            if let Some(done) = done {
                done(handled);
            }
        }
        self.release(node, instance);
    }

    fn release(&self, node: usize, instance: Box<dyn Instance>) {
        let stage = &self.nodes[node];
        if stage.pool.after_turn(instance, &stage.queue.1) {
            stage.ready.push(Ticket::Turn(node), stage.priority);
        }
    }

    /// Runs stage `node` on this thread with `event` (a cohort connector), waiting
    /// for an idle instance if all are busy.
    fn run_cohort(&self, node: usize, event: Payload) {
        let stage = &self.nodes[node];
        let arrivals = stage.counters.arrived.fetch_add(1, Ordering::Relaxed);
        let since = Self::is_timed(stage, arrivals).then(Instant::now);
        let mut instance = stage.pool.take_for_cohort();
        // The graph refuses a cohort connector to an async stage.
        now(self.run_one(node, instance.as_mut(), Some(event), since, false, None));
        self.release(node, instance);
    }

    /// Runs a handler once on `event`, sent `since` if it is timed (its wait ends
    /// where the handler's run starts: one clock read serves both; a source's run is
    /// always timed); a panic is caught, logged and its
    /// event dead-lettered — unless it will be delivered `again` (an event from another
    /// process, left pending: its stream dead-letters it after its last delivery) — and
    /// the instance (its state as the panic left it) goes on. Its span is the child of
    /// `parent`, the sender's context an event that waited in a queue carries.
    async fn run_one(
        &self,
        node: usize,
        instance: &mut dyn Instance,
        event: Option<Payload>,
        since: Option<Instant>,
        again: bool,
        parent: Option<Box<Parent>>,
    ) -> bool {
        let stage = &self.nodes[node];
        if let (Some(repeats), Some(event)) = (&stage.repeats, &event)
            && repeats(event)
        {
            stage.counters.duplicates.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let mut ctx = Context { shared: self, node };
        let started = (since.is_some() || stage.role == Role::Source).then(Instant::now);
        if let (Some(since), Some(started)) = (since, started) {
            stage
                .counters
                .wait
                .record(started.saturating_duration_since(since));
        }
        let span = tracing::trace_span!(
            target: STAGE_SPANS,
            "stage event",
            otel.name = %stage.name,
            stage = %stage.name,
        );
        if let Some(parent) = parent {
            parent.adopt(&span);
        }
        let outcome = AssertUnwindSafe(async {
            match instance.run(event, &mut ctx) {
                Handled::Now(outcome) => outcome,
                Handled::Later(future) => future.await,
            }
        })
        .catch_unwind()
        .instrument(span)
        .await;
        if let Some(started) = started {
            stage.counters.service.record(started.elapsed());
        }
        stage.counters.handled.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(Ok(())) => true,
            Ok(Err(error)) => {
                stage.counters.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(stage = %stage.name, %error, "stage handler failed");
                false
            }
            Err(panic) => {
                stage.counters.failed.fetch_add(1, Ordering::Relaxed);
                let failure = crate::rt::panic_message(panic.as_ref());
                tracing::error!(stage = %stage.name, panic = %failure, again, "stage handler panicked");
                if !again {
                    self.dead_letters.report(
                        &stage.name,
                        stage.input_name(),
                        Reason::Failed(failure),
                    );
                }
                false
            }
        }
    }

    /// Puts `event`, from another process, in stage `node`'s queue, waiting for room
    /// (the caller is a thread of its own: its backpressure is Redis's lag); `done`
    /// is told once the handler has run. A halted graph gives the event back.
    #[cfg(feature = "redis")]
    pub(crate) fn deliver_remote(
        &self,
        node: usize,
        event: Payload,
        done: Done,
    ) -> Result<(), Payload> {
        let target = &self.nodes[node];
        target.sending.fetch_add(1, Ordering::SeqCst);
        let mut queued = Queued {
            event,
            since: self.stamp(target),
            done: Some(done),
            parent: None,
        };
        let result = loop {
            if self.halted.load(Ordering::SeqCst) {
                break Err(queued.event);
            }
            match target.queue.0.send_timeout(queued, HALT_CHECK) {
                Ok(()) => break Ok(()),
                Err(SendTimeoutError::Timeout(back) | SendTimeoutError::Disconnected(back)) => {
                    queued = back;
                }
            }
        };
        target.sending.fetch_sub(1, Ordering::SeqCst);
        if result.is_ok() {
            target.counters.arrived.fetch_add(1, Ordering::Relaxed);
            self.schedule(node);
        }
        result
    }

    /// Returns the events waiting in the queues of cluster `cluster`'s stages.
    pub(crate) fn queued_in(&self, cluster: usize) -> usize {
        self.nodes
            .iter()
            .filter(|node| node.cluster == cluster)
            .map(|node| node.queue.1.len())
            .sum()
    }

    /// Returns whether stage `node` has nothing queued and every instance idle (for
    /// a source: every run returned), waiting for it until `deadline`.
    pub(crate) fn wait_quiet(&self, node: usize, deadline: Instant) -> bool {
        let stage = &self.nodes[node];
        let source = stage.role == Role::Source;
        stage
            .pool
            .wait_quiet(&stage.queue.1, stage.instances, source, deadline)
    }
}

/// Returns the output of `future`, which must complete in one poll: a sync stage's
/// turn, which awaits nothing.
pub(crate) fn now<T>(future: impl std::future::Future<Output = T>) -> T {
    future
        .now_or_never()
        .expect("a sync stage's handler completes without awaiting")
}
