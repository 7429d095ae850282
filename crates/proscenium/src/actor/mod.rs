//! Actors — Akka's model on Proscenium's threads and loops: typed messages, bounded
//! mailboxes with an overflow policy, `tell` and `ask`, dispatchers named by
//! configuration, supervision trees (one-for-one, all-for-one, rest-for-one; restart
//! from the actor's factory, resume, stop or escalate; a restart budget and backoff),
//! watching, timers, and dead letters for every message that is not delivered — none
//! is lost silently.
//!
//! # Example
//!
//! ```
//! use proscenium::actor::{Actor, Context, Handler, Message, Props, System};
//!
//! #[derive(Default)]
//! struct Counter(u64);
//! impl Actor for Counter {}
//!
//! struct Add(u64);
//! impl Message for Add {
//!     type Reply = u64;
//! }
//! impl Handler<Add> for Counter {
//!     fn handle(&mut self, Add(n): Add, _: &mut Context<Self>) -> u64 {
//!         self.0 += n;
//!         self.0
//!     }
//! }
//!
//! let system = System::new();
//! let counter = system.spawn(Props::named("counter"), Counter::default);
//! let total = system.block_on(async {
//!     counter.tell(Add(2)).await.unwrap();
//!     counter.ask(Add(3)).await.unwrap()
//! });
//! assert_eq!(total, 5);
//! system.shutdown();
//! ```

mod addr;
mod dead_letters;
mod dispatcher;
mod mailbox;
mod router;
mod run;
mod supervise;
mod system;
mod timer;

use std::time::Duration;

use self::run::{Child, Parent};
use self::supervise::Budget;
use self::timer::Schedule;

pub use self::addr::{ASK_TIMEOUT, Addr, AskError, Recipient, SendError, TryTellError};
pub use self::dead_letters::{DeadLetter, DeadLetters, Reason};
pub use self::dispatcher::{DispatcherKind, DispatcherSpec};
pub use self::mailbox::Overflow;
pub use self::router::{Router, Routing};
pub use self::supervise::{Backoff, Directive, Failure, Scope, Strategy};
pub use self::system::{Props, RegisterError, System};
pub use self::timer::TimerHandle;

/// An actor: state, lifecycle hooks, and a [`Handler`] per message type it takes.
///
/// Its state is touched only by its own handlers, one message at a time, so it needs
/// no lock.
pub trait Actor: Sized + Send + 'static {
    /// Runs before the first message (and again after a restart).
    fn started(&mut self, _ctx: &mut Context<Self>) {}

    /// Runs when the actor is asked to stop, before its mailbox closes.
    fn stopping(&mut self, _ctx: &mut Context<Self>) {}

    /// Runs last; what is left in the mailbox has gone to dead letters.
    fn stopped(&mut self) {}

    /// How this actor supervises the children it spawns (one-for-one restart by
    /// default, with [`Strategy::one_for_one`]'s budget and backoff).
    fn supervisor_strategy(&self) -> Strategy {
        Strategy::one_for_one()
    }
}

/// Told to a watcher when an actor it watches has stopped ([`Context::watch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminated {
    /// The stopped actor's name.
    pub name: String,
}

impl Message for Terminated {
    type Reply = ();
}

/// A message, and the type of its reply (`()` for messages only told).
pub trait Message: Send + 'static {
    /// What a handler answers.
    type Reply: Send + 'static;
}

/// How actor `Self` handles message `M`.
pub trait Handler<M: Message>: Actor {
    /// Handles one message; the reply goes to the asker, if any.
    fn handle(&mut self, message: M, ctx: &mut Context<Self>) -> M::Reply;
}

/// What a handler can do besides changing its state: reach its own address, stop,
/// spawn and watch actors, set timers.
pub struct Context<A: Actor> {
    addr: Addr<A>,
    stopping: bool,
    parent: Option<Parent>,
    children: Vec<Child>,
}

impl<A: Actor> Context<A> {
    fn new(addr: Addr<A>, parent: Option<Parent>) -> Self {
        Self {
            addr,
            stopping: false,
            parent,
            children: Vec::new(),
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
        static NEXT_CHILD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // An id, not a position: reports from the children of an earlier incarnation
        // must not land on the new ones.
        let id = NEXT_CHILD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let parent = Parent {
            orders: self.addr.cell.clone(),
            child: id,
        };
        let child = system::spawn(&self.addr.shared, props, factory, Some(parent));
        self.children.push(Child {
            id,
            cell: child.cell.clone(),
            budget: Budget::default(),
            alive: true,
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
        for child in self.children.drain(..).filter(|c| c.alive) {
            child.cell.stop(&self.addr.shared);
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
        timer::start(Schedule { delay, period }, &handle, move || {
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

/// A message of any type `A` handles, sealed with where its reply goes.
pub(crate) trait Envelope<A: Actor>: Send {
    fn deliver(self: Box<Self>, actor: &mut A, ctx: &mut Context<A>);
    fn type_name(&self) -> &'static str;
    /// The envelope as itself, for a sender handed it back to take its message out.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}
