//! The actor system: dispatchers by name, spawning, each actor's run loop (handle,
//! restart on a panic, yield every `throughput` messages), dead letters, shutdown.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::dispatcher::{Dispatcher, DispatcherSpec, Job};
use super::mailbox::{Mailbox, Overflow};
use super::timer::{self, Schedule, TimerHandle};
use super::{Actor, Addr, Context, DeadLetters, Reason};

/// How to spawn one actor: its name, dispatcher and mailbox.
#[derive(Debug, Clone)]
pub struct Props {
    name: String,
    dispatcher: String,
    capacity: usize,
    overflow: Overflow,
}

/// The default mailbox capacity.
const CAPACITY: usize = 1024;

impl Props {
    /// An actor named `name` on the default dispatcher, with a mailbox of 1,024
    /// messages and backpressure.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            dispatcher: DEFAULT.to_owned(),
            capacity: CAPACITY,
            overflow: Overflow::default(),
        }
    }

    /// Runs the actor on the dispatcher named `name`.
    #[must_use]
    pub fn dispatcher(mut self, name: impl Into<String>) -> Self {
        self.dispatcher = name.into();
        self
    }

    /// A mailbox of `capacity` messages, and what to do when it is full.
    #[must_use]
    pub fn mailbox(mut self, capacity: usize, overflow: Overflow) -> Self {
        self.capacity = capacity;
        self.overflow = overflow;
        self
    }
}

/// The dispatcher actors run on unless their `Props` name another.
const DEFAULT: &str = "default";

/// What every address of a system shares.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) dead_letters: DeadLetters,
    live: AtomicUsize,
}

/// A set of actors, their dispatchers and their dead letters.
pub struct System {
    shared: Arc<Shared>,
    dispatchers: HashMap<String, Dispatcher>,
    stoppers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System")
            .field("dispatchers", &self.dispatchers.keys().collect::<Vec<_>>())
            .field("live", &self.live_actors())
            .finish()
    }
}

impl Default for System {
    fn default() -> Self {
        Self::new()
    }
}

impl System {
    /// A system with only the `default` dispatcher (`loops`).
    pub fn new() -> Self {
        Self::with_dispatchers(HashMap::new())
    }

    /// A system with the dispatchers named in `specs` (as `proscenium.toml`'s
    /// `[dispatchers.NAME]` tables give them) besides `default`.
    pub fn with_dispatchers(specs: HashMap<String, DispatcherSpec>) -> Self {
        let mut dispatchers: HashMap<String, Dispatcher> = specs
            .into_iter()
            .map(|(name, spec)| {
                let dispatcher = Dispatcher::new(&name, spec);
                (name, dispatcher)
            })
            .collect();
        dispatchers
            .entry(DEFAULT.to_owned())
            .or_insert_with(|| Dispatcher::new(DEFAULT, DispatcherSpec::default()));
        Self {
            shared: Arc::default(),
            dispatchers,
            stoppers: Mutex::default(),
        }
    }

    /// Starts an actor made by `factory` — called again for a fresh actor whenever a
    /// handler panics (the mailbox is kept; the failing message goes to dead letters).
    pub fn spawn<A: Actor>(
        &self,
        props: Props,
        factory: impl Fn() -> A + Send + Sync + 'static,
    ) -> Addr<A> {
        let dispatcher = self.dispatchers.get(&props.dispatcher).unwrap_or_else(|| {
            tracing::error!(
                actor = %props.name,
                dispatcher = %props.dispatcher,
                "no such dispatcher; the actor runs on the default one"
            );
            &self.dispatchers[DEFAULT]
        });
        let addr = Addr {
            mailbox: Arc::new(Mailbox::new(props.capacity, props.overflow)),
            shared: self.shared.clone(),
            name: props.name.into(),
        };
        let stopper = addr.clone();
        self.stoppers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(move || stopper.stop()));
        self.shared.live.fetch_add(1, Ordering::SeqCst);
        let ctx = Context {
            addr: addr.clone(),
            stopping: false,
        };
        let throughput = dispatcher.throughput();
        let job: Job = Box::new(move || {
            tokio::task::spawn_local(run(factory, ctx, throughput));
        });
        dispatcher.run(job);
        addr
    }

    /// Runs `f` once after `delay` on the default dispatcher.
    pub fn schedule_once(&self, delay: Duration, f: impl FnOnce() + Send + 'static) -> TimerHandle {
        let mut f = Some(f);
        self.schedule(
            Schedule {
                delay,
                period: None,
            },
            move || {
                if let Some(f) = f.take() {
                    f();
                }
            },
        )
    }

    /// Runs `f` every `period` on the default dispatcher, until cancelled.
    pub fn schedule_periodic(
        &self,
        period: Duration,
        f: impl FnMut() + Send + 'static,
    ) -> TimerHandle {
        self.schedule(
            Schedule {
                delay: period,
                period: Some(period),
            },
            f,
        )
    }

    fn schedule(&self, schedule: Schedule, mut f: impl FnMut() + Send + 'static) -> TimerHandle {
        let handle = TimerHandle::default();
        let timer = handle.clone();
        self.dispatchers[DEFAULT].run(Box::new(move || {
            timer::start(schedule, &timer, move || {
                f();
                true
            });
        }));
        handle
    }

    /// The system's dead letters.
    pub fn dead_letters(&self) -> &DeadLetters {
        &self.shared.dead_letters
    }

    /// Actors started and not yet stopped.
    pub fn live_actors(&self) -> usize {
        self.shared.live.load(Ordering::SeqCst)
    }

    /// Runs `future` to completion on a runtime of its own: for code outside any loop
    /// (`main`, tests) that talks to actors.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime builds")
            .block_on(future)
    }

    /// Stops every actor (queued messages go to dead letters; the hooks run) and waits
    /// for the dispatcher threads to finish.
    pub fn shutdown(&self) {
        let stoppers =
            std::mem::take(&mut *self.stoppers.lock().unwrap_or_else(PoisonError::into_inner));
        for stop in &stoppers {
            stop();
        }
        for dispatcher in self.dispatchers.values() {
            dispatcher.shutdown();
        }
    }
}

impl Drop for System {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// An actor's life: started, one message at a time (a fresh actor after a panic),
/// stopping, stopped.
async fn run<A: Actor>(
    factory: impl Fn() -> A + Send + Sync + 'static,
    mut ctx: Context<A>,
    throughput: usize,
) {
    let mut actor = factory();
    actor.started(&mut ctx);
    let mut turn = 0;
    while !ctx.stopping {
        let Some(envelope) = ctx.addr.mailbox.recv().await else {
            break;
        };
        let message = envelope.type_name();
        if let Err(panic) =
            catch_unwind(AssertUnwindSafe(|| envelope.deliver(&mut actor, &mut ctx)))
        {
            let why = crate::rt::panic_message(&*panic);
            tracing::error!(actor = ctx.name(), message, %why, "actor failed; restarting it");
            ctx.addr
                .shared
                .dead_letters
                .report(ctx.name(), message, Reason::Failed(why));
            actor = factory();
            actor.started(&mut ctx);
        }
        turn += 1;
        if turn >= throughput {
            turn = 0;
            tokio::task::yield_now().await;
        }
    }
    actor.stopping(&mut ctx);
    ctx.addr.stop();
    actor.stopped();
    ctx.addr.shared.live.fetch_sub(1, Ordering::SeqCst);
}
