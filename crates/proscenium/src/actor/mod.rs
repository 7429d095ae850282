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
//!
//! # Inside
//!
//! This file holds the vocabulary every other file speaks (the traits `Actor`,
//! `Message`, `Handler`, and the type-erased `Envelope`). Below it the files import in
//! one direction only, each from those listed before it:
//!
//! ```text
//! supervise, dead_letters,   leaves: strategies and failures, the dead-letter office,
//! timer, dispatcher, tally   timers, the threads actors run on, the dead letters and
//!                            restarts counted by actor kind for /metrics
//! sync, spin                 the mailbox's primitives (loom's under its model), and
//!                            spinning before parking
//! traced                     a message's span ([traces]): its envelope sealed with
//!                            its sender's span context
//! mailbox, props             the bounded queue and its orders (a child's Failure among
//!                            them), how to spawn an actor
//! addr                       Cell (what every address of an actor shares), Addr,
//!                            Recipient, the send errors — knows the mailbox and the
//!                            dead letters, nothing of the system
//! shared                     what a system's actors share: dispatchers, dead letters,
//!                            the tables of actors alive and named
//! run                        an actor's life: spawn, the loop, its Context (a handler
//!                            spawns children through it, so the two live together)
//! system, router             the public front: System, pools of actors
//! remote                     actors across processes through Redis: a Node, its
//!                            registry, outboxes and mailbox readers
//! ```

mod addr;
mod dead_letters;
mod dispatcher;
mod mailbox;
#[cfg(test)]
mod mailbox_tests;
mod props;
#[cfg(feature = "redis")]
pub mod remote;
mod router;
mod run;
mod shared;
mod spin;
mod supervise;
mod sync;
mod system;
mod tally;
mod timer;
mod traced;

pub use self::addr::{ASK_TIMEOUT, Addr, AskError, Recipient, SendError, TryTellError};
pub use self::dead_letters::{DeadLetter, DeadLetters, Reason};
pub use self::mailbox::Overflow;
pub use self::props::Props;
pub use self::router::{Router, Routing};
pub use self::run::Context;
pub use self::supervise::{Backoff, Directive, Failure, Scope, Strategy};
#[cfg(feature = "metrics")]
pub(crate) use self::system::by_kind;
pub use self::system::{RegisterError, System};
#[cfg(feature = "metrics")]
pub(crate) use self::tally::KindCounts;
pub use self::timer::TimerHandle;
#[cfg(feature = "traces")]
pub(crate) use self::traced::ACTOR_SPANS;
pub use crate::config::{DispatcherKind, DispatcherSpec};

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

/// A message of any type `A` handles, sealed with where its reply goes.
pub(crate) trait Envelope<A: Actor>: Send {
    fn deliver(self: Box<Self>, actor: &mut A, ctx: &mut Context<A>);
    fn type_name(&self) -> &'static str;
    /// The envelope as itself, for a sender handed it back to take its message out.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}
