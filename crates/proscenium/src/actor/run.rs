//! An actor's life: spawned on its dispatcher with a [`Context`]; started; then orders
//! (ahead of messages) and one message at a time; on a panic, suspended until its
//! supervisor (its parent, or the system for a top-level actor) decides; stopping,
//! stopped, its watchers and parent told. The context lives here because a handler
//! spawns children through it, and a child's life is this one.

use std::cell::OnceCell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use super::addr::{AnyCell, Cell};
use super::mailbox::{Control, Mailbox, Work};
use super::props::Props;
use super::shared::Shared;
use super::supervise::{Budget, Directive, Scope, Strategy};
use super::timer::{self, Schedule, TimerHandle};
use super::{Actor, Addr, Failure, Handler, Message, Reason, Terminated};

/// Where a child reports to: its parent's orders, and its id there.
#[derive(Clone)]
pub(crate) struct Parent {
    pub(crate) orders: Arc<dyn AnyCell>,
    pub(crate) child: u64,
}

/// A parent's record of one child, kept until the child reports it has stopped.
pub(crate) struct Child {
    pub(crate) id: u64,
    pub(crate) cell: Arc<dyn AnyCell>,
    pub(crate) budget: Budget,
}

/// What a handler can do besides changing its state: reach its own address, stop,
/// spawn and watch actors, set timers.
pub struct Context<A: Actor> {
    addr: Addr<A>,
    system: Arc<Shared>,
    stopping: bool,
    parent: Option<Parent>,
    children: Vec<Child>,
    /// Cancelled when the actor stops, ending its timers; made by the first timer
    /// (an actor that sets none pays nothing).
    timers: OnceCell<TimerHandle>,
}

impl<A: Actor> Context<A> {
    fn new(addr: Addr<A>, system: Arc<Shared>, parent: Option<Parent>) -> Self {
        Self {
            addr,
            system,
            stopping: false,
            parent,
            children: Vec::new(),
            timers: OnceCell::new(),
        }
    }

    /// Starts a child actor supervised by this one under its
    /// [`supervisor_strategy`](Actor::supervisor_strategy). Children stop when their
    /// parent stops or restarts (a restarted parent's `started` spawns them afresh).
    pub fn spawn_child<C: Actor>(
        &mut self,
        props: Props,
        factory: impl Fn() -> C + Send + Sync + 'static,
    ) -> Addr<C> {
        static NEXT_CHILD: AtomicU64 = AtomicU64::new(0);
        // An id, not a position: reports from the children of an earlier incarnation
        // must not land on the new ones.
        let id = NEXT_CHILD.fetch_add(1, Ordering::Relaxed);
        let parent = Parent {
            orders: self.addr.cell.clone(),
            child: id,
        };
        let child = spawn(&self.system, props, factory, Some(parent));
        self.children.push(Child {
            id,
            cell: child.cell.clone(),
            budget: Budget::default(),
        });
        child
    }

    /// Tells this actor [`Terminated`] when `other` stops (at once if it has).
    pub fn watch<B: Actor>(&self, other: &Addr<B>)
    where
        A: Handler<Terminated>,
    {
        let me = self.addr();
        other.cell.on_stop(
            other.name(),
            Box::new(move |name| {
                let name = name.to_owned();
                // A task of its own (on the thread of whoever stopped or watched): the
                // watcher's mailbox may make the tell wait.
                tokio::task::spawn_local(async move {
                    let _ = me.tell(Terminated { name }).await;
                });
            }),
        );
    }

    fn stop_children(&mut self) {
        for child in self.children.drain(..) {
            child.cell.stop();
        }
    }

    /// The actor's own address.
    pub fn addr(&self) -> Addr<A> {
        self.addr.clone()
    }

    /// The actor's name.
    pub fn name(&self) -> &str {
        self.addr.name()
    }

    /// Stops the actor once this message is handled.
    pub fn stop(&mut self) {
        self.stopping = true;
    }

    /// Sends `message` to this actor after `delay`.
    pub fn run_later<M: Message>(&self, delay: Duration, message: M) -> TimerHandle
    where
        A: Handler<M>,
    {
        let mut message = Some(message);
        self.every(delay, None, move || message.take())
    }

    /// Sends the message `make` returns to this actor every `period`, until the timer
    /// is cancelled or the actor stops.
    pub fn run_interval<M: Message>(
        &self,
        period: Duration,
        mut make: impl FnMut() -> M + 'static,
    ) -> TimerHandle
    where
        A: Handler<M>,
    {
        self.every(period, Some(period), move || Some(make()))
    }

    fn every<M: Message>(
        &self,
        delay: Duration,
        period: Option<Duration>,
        mut make: impl FnMut() -> Option<M> + 'static,
    ) -> TimerHandle
    where
        A: Handler<M>,
    {
        let handle = TimerHandle::default();
        let addr = self.addr();
        let owner = self.timers.get_or_init(TimerHandle::default);
        timer::start(Schedule { delay, period }, &handle, owner, move || {
            if addr.is_stopped() {
                return false;
            }
            let Some(message) = make() else {
                return false;
            };
            let addr = addr.clone();
            // Sent as a task of its own: under backpressure the timer does not wait.
            tokio::task::spawn_local(async move {
                let _ = addr.tell(message).await;
            });
            true
        });
        handle
    }
}

/// Starts an actor under `parent` (none: top-level) on the dispatcher `props` names.
pub(crate) fn spawn<A: Actor>(
    shared: &Arc<Shared>,
    props: Props,
    factory: impl Fn() -> A + Send + Sync + 'static,
    parent: Option<Parent>,
) -> Addr<A> {
    let dispatcher = shared.dispatcher(&props);
    let cell = shared.enter(|slot| Cell {
        name: props.name.into(),
        mailbox: Mailbox::new(props.capacity, props.overflow, dispatcher.throughput()),
        watchers: Mutex::new(Some(Vec::new())),
        dead_letters: shared.dead_letters.clone(),
        slot,
    });
    let addr = Addr { cell };
    let ctx = Context::new(addr.clone(), shared.clone(), parent);
    dispatcher.run(Box::new(move || {
        tokio::task::spawn_local(run(factory, ctx));
    }));
    addr
}

async fn run<A: Actor>(factory: impl Fn() -> A + Send + Sync + 'static, mut ctx: Context<A>) {
    let mut actor = factory();
    actor.started(&mut ctx);
    // A top-level actor's own restarts, under the system's strategy.
    let mut own = Budget::default();
    let mut suspended = false;
    // The messages of the current turn, taken from the mailbox under one lock.
    let mut hand = VecDeque::new();
    'life: while let Some(next) = ctx.addr.cell.mailbox.recv(!suspended, &mut hand).await {
        match next {
            Work::Order(Control::Stop) => break,
            Work::Order(Control::Resume) => suspended = false,
            Work::Order(Control::Restart) => {
                super::tally::restart(std::any::type_name::<A>());
                ctx.stop_children();
                actor = factory();
                actor.started(&mut ctx);
                suspended = false;
            }
            Work::Order(Control::Failed { child, why }) => {
                if supervise(&actor.supervisor_strategy(), &mut ctx, child, &why) {
                    suspended = fail(&mut ctx, &mut own, why);
                }
            }
            // The record goes: a parent that spawns and stops children without end
            // keeps only those alive.
            Work::Order(Control::Stopped { child }) => {
                ctx.children.retain(|c| c.id != child);
            }
            Work::Turn => {
                let full = hand.len() >= ctx.addr.cell.mailbox.turn();
                while let Some(envelope) = hand.pop_front() {
                    let message = envelope.type_name();
                    let handled = catch_unwind(AssertUnwindSafe(|| {
                        envelope.deliver(&mut actor, &mut ctx);
                    }));
                    if let Err(panic) = handled {
                        let why = Failure::new(panic);
                        tracing::error!(actor = ctx.name(), message, %why, "actor failed");
                        super::tally::dead_letter(std::any::type_name::<A>());
                        ctx.system.dead_letters.report(
                            ctx.name(),
                            message,
                            Reason::Failed(why.to_string()),
                        );
                        // What is left in hand waits, as in the mailbox, for the order.
                        suspended = fail(&mut ctx, &mut own, why);
                        break;
                    }
                    if ctx.stopping {
                        break 'life;
                    }
                    if ctx.addr.cell.mailbox.wants_attention() {
                        break;
                    }
                }
                if full {
                    give_turn().await;
                }
            }
        }
    }
    ctx.addr.cell.report_stopped(hand);
    actor.stopping(&mut ctx);
    ctx.stop_children();
    ctx.addr.stop();
    if let Some(timers) = ctx.timers.get() {
        timers.cancel();
    }
    actor.stopped();
    if let Some(parent) = &ctx.parent {
        parent.orders.order(Control::Stopped {
            child: parent.child,
        });
    }
    for watcher in ctx.addr.cell.stopped() {
        watcher(ctx.name());
    }
    ctx.system.forget(&ctx.addr.cell);
}

/// Reports a failure to the supervisor; returns whether the actor now waits for its
/// order. A top-level actor is its own supervisor under the default strategy: restart
/// after the backoff, or stop once the budget is spent.
fn fail<A: Actor>(ctx: &mut Context<A>, own: &mut Budget, why: Failure) -> bool {
    if let Some(parent) = &ctx.parent {
        parent.orders.order(Control::Failed {
            child: parent.child,
            why,
        });
        return true;
    }
    let strategy = Strategy::one_for_one();
    match own.spend(&strategy) {
        Some(attempt) => order_later(
            ctx.addr.cell.clone(),
            Control::Restart,
            strategy.backoff.delay(attempt),
        ),
        None => {
            tracing::error!(actor = ctx.name(), "restart budget spent; stopping");
            ctx.addr.cell.order(Control::Stop);
        }
    }
    true
}

/// Applies `strategy` to the failure of the child with id `child`; returns whether to
/// escalate.
fn supervise<A: Actor>(
    strategy: &Strategy,
    ctx: &mut Context<A>,
    child: u64,
    why: &Failure,
) -> bool {
    let Some(at) = ctx.children.iter().position(|c| c.id == child) else {
        return false;
    };
    let mut directive = strategy.decide(why);
    let mut attempt = 0;
    if directive == Directive::Restart {
        match ctx.children[at].budget.spend(strategy) {
            Some(n) => attempt = n,
            None => directive = Directive::Escalate,
        }
    }
    let targets = match strategy.scope {
        Scope::OneForOne => at..at + 1,
        Scope::AllForOne => 0..ctx.children.len(),
        Scope::RestForOne => at..ctx.children.len(),
    };
    let targets = &ctx.children[targets];
    match directive {
        Directive::Escalate => return true,
        Directive::Resume => {
            ctx.children[at].cell.order(Control::Resume);
        }
        Directive::Restart => {
            let delay = strategy.backoff.delay(attempt);
            for c in targets {
                order_later(c.cell.clone(), Control::Restart, delay);
            }
        }
        Directive::Stop => {
            for c in targets {
                c.cell.stop();
            }
        }
    }
    false
}

/// Lets the thread's other actors and tasks run before this one goes on. Not tokio's
/// `yield_now`: on a current-thread runtime that defers the task until the I/O driver
/// has been polled, an `epoll_wait` and a clock read every `throughput` messages —
/// telling an actor a million messages from its own thread took 210 ns a message with
/// it and 112 ns without (bench/actors.sh `tell-local`).
async fn give_turn() {
    let mut given = false;
    std::future::poll_fn(|cx| {
        if given {
            return std::task::Poll::Ready(());
        }
        given = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// Sends `order` after `delay`, from a task on this thread.
fn order_later(to: Arc<dyn AnyCell>, order: Control, delay: Duration) {
    tokio::task::spawn_local(async move {
        tokio::time::sleep(delay).await;
        to.order(order);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actor::System;

    #[derive(Default)]
    struct Nursery;
    impl Actor for Nursery {}

    struct Idle;
    impl Actor for Idle {}

    /// Spawns a child and stops it at once.
    struct Brief;
    impl Message for Brief {
        type Reply = ();
    }
    impl Handler<Brief> for Nursery {
        fn handle(&mut self, _: Brief, ctx: &mut Context<Self>) {
            ctx.spawn_child(Props::named("brief"), || Idle).stop();
        }
    }

    struct Records;
    impl Message for Records {
        type Reply = usize;
    }
    impl Handler<Records> for Nursery {
        fn handle(&mut self, _: Records, ctx: &mut Context<Self>) -> usize {
            ctx.children.len()
        }
    }

    #[test]
    fn a_parent_forgets_the_children_that_have_stopped() {
        let system = System::new();
        let nursery = system.spawn(Props::named("nursery"), Nursery::default);
        system.block_on(async {
            for _ in 0..1_000 {
                nursery.tell(Brief).await.unwrap();
            }
            // Answered after every `Brief`: every child has been spawned.
            nursery.ask(Records).await.unwrap();
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while system.live_actors() > 1 {
            assert!(std::time::Instant::now() < deadline, "children still live");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Every child told its parent before it counted as stopped, and orders go
        // ahead of the question.
        assert_eq!(system.block_on(nursery.ask(Records)), Ok(0));
    }
}
