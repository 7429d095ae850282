//! The actor system: dispatchers by name, spawning (top-level actors here, children
//! through their parent's context), dead letters, timers, shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use slab::Slab;

use super::addr::{AnyCell, Cell};
use super::dispatcher::{Dispatcher, DispatcherSpec, Job};
use super::mailbox::{Mailbox, Overflow};
use super::run::{Parent, run};
use super::timer::{self, Schedule, TimerHandle};
use super::{Actor, Addr, Context, DeadLetters};

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

    /// The same props for member `i` of a pool: named `NAME-i`.
    pub(crate) fn numbered(&self, i: usize) -> Self {
        Self {
            name: format!("{}-{i}", self.name),
            ..self.clone()
        }
    }

    /// A mailbox of `capacity` messages, and what to do when it is full. (Besides these,
    /// the actor holds the messages of the turn it is in: at most its dispatcher's
    /// `throughput`.)
    #[must_use]
    pub fn mailbox(mut self, capacity: usize, overflow: Overflow) -> Self {
        self.capacity = capacity;
        self.overflow = overflow;
        self
    }
}

/// The dispatcher actors run on unless their `Props` name another.
const DEFAULT: &str = "default";

/// What a system's actors and addresses share.
pub(crate) struct Shared {
    pub(crate) dead_letters: DeadLetters,
    pub(crate) live: AtomicUsize,
    /// Named actors (`System::register`): `Addr<A>`s, removed when they stop.
    registry: Mutex<HashMap<String, Box<dyn std::any::Any + Send + Sync>>>,
    dispatchers: HashMap<String, Dispatcher>,
    /// Every actor not yet stopped, to stop at shutdown (emptied then, which also ends
    /// the cycle through the cells these hold). An actor leaves when its task ends
    /// ([`Shared::forget`]), and its slot is reused: spawning and stopping actors
    /// without end keeps this as large as the most actors alive at once.
    cells: Mutex<Slab<Arc<dyn AnyCell>>>,
}

impl Shared {
    /// Takes a stopped actor's cell out of [`cells`](Self::cells) — unless shutdown
    /// took them all first, and another actor already has its slot.
    pub(crate) fn forget<A: Actor>(&self, cell: &Cell<A>) {
        let mut cells = self.cells.lock();
        let mine = cells
            .get(cell.slot)
            .is_some_and(|held| std::ptr::addr_eq(Arc::as_ptr(held), cell));
        if mine {
            cells.remove(cell.slot);
        }
    }
}

/// Why [`System::register`] refused an actor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an actor named `{name}` is registered already")]
pub struct RegisterError {
    name: String,
}

impl RegisterError {
    /// Returns the name that is taken.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A set of actors, their dispatchers and their dead letters.
pub struct System {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System")
            .field(
                "dispatchers",
                &self.shared.dispatchers.keys().collect::<Vec<_>>(),
            )
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
            shared: Arc::new(Shared {
                dead_letters: DeadLetters::default(),
                live: AtomicUsize::new(0),
                registry: Mutex::default(),
                dispatchers,
                cells: Mutex::default(),
            }),
        }
    }

    /// Starts a top-level actor made by `factory` — called again for a fresh actor
    /// whenever the actor is restarted (its mailbox is kept). A top-level actor that
    /// fails is restarted with [`Strategy::one_for_one`](super::Strategy::one_for_one)'s
    /// budget and backoff, and stopped once the budget is spent.
    pub fn spawn<A: Actor>(
        &self,
        props: Props,
        factory: impl Fn() -> A + Send + Sync + 'static,
    ) -> Addr<A> {
        spawn(&self.shared, props, factory, None)
    }

    /// Registers `addr` under its name, for [`lookup`](Self::lookup) anywhere; the entry
    /// goes when the actor stops.
    ///
    /// # Errors
    ///
    /// The name is taken by a running actor.
    pub fn register<A: Actor>(&self, addr: &Addr<A>) -> Result<(), RegisterError> {
        let name = addr.name().to_owned();
        {
            let mut registry = self.registry();
            if registry.contains_key(&name) {
                return Err(RegisterError { name });
            }
            registry.insert(name.clone(), Box::new(addr.clone()));
        }
        let shared = Arc::downgrade(&self.shared);
        addr.cell.on_stop(
            &name,
            Box::new(move |name| {
                if let Some(shared) = shared.upgrade() {
                    shared.registry.lock().remove(name);
                }
            }),
        );
        Ok(())
    }

    /// The registered actor named `name`, if it is an `A`.
    pub fn lookup<A: Actor>(&self, name: &str) -> Option<Addr<A>> {
        self.registry()
            .get(name)?
            .downcast_ref::<Addr<A>>()
            .cloned()
    }

    fn registry(&self) -> MutexGuard<'_, HashMap<String, Box<dyn std::any::Any + Send + Sync>>> {
        self.shared.registry.lock()
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
        self.shared.dispatchers[DEFAULT].run(Box::new(move || {
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
        let cells = std::mem::take(&mut *self.shared.cells.lock());
        for (_, cell) in &cells {
            cell.stop(&self.shared);
        }
        for dispatcher in self.shared.dispatchers.values() {
            dispatcher.shutdown();
        }
    }
}

impl Drop for System {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts an actor under `parent` (none: top-level) on the dispatcher `props` names.
pub(crate) fn spawn<A: Actor>(
    shared: &Arc<Shared>,
    props: Props,
    factory: impl Fn() -> A + Send + Sync + 'static,
    parent: Option<Parent>,
) -> Addr<A> {
    let dispatcher = shared
        .dispatchers
        .get(&props.dispatcher)
        .unwrap_or_else(|| {
            tracing::error!(
                actor = %props.name,
                dispatcher = %props.dispatcher,
                "no such dispatcher; the actor runs on the default one"
            );
            &shared.dispatchers[DEFAULT]
        });
    let cell = {
        let mut cells = shared.cells.lock();
        let slot = cells.vacant_entry();
        let cell = Arc::new(Cell {
            name: props.name.into(),
            mailbox: Mailbox::new(props.capacity, props.overflow, dispatcher.throughput()),
            watchers: Mutex::new(Some(Vec::new())),
            slot: slot.key(),
        });
        slot.insert(cell.clone());
        cell
    };
    let addr = Addr {
        cell,
        shared: shared.clone(),
    };
    shared.live.fetch_add(1, Ordering::SeqCst);
    let ctx = Context::new(addr.clone(), parent);
    let job: Job = Box::new(move || {
        tokio::task::spawn_local(run(factory, ctx));
    });
    dispatcher.run(job);
    addr
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Idle;
    impl Actor for Idle {}

    /// Waits for every actor of `system` to have stopped.
    fn all_stopped(system: &System) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while system.live_actors() > 0 {
            assert!(std::time::Instant::now() < deadline, "actors still live");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn actors_spawned_and_stopped_without_end_reuse_their_slots() {
        const BATCH: usize = 10_000;
        let system = System::new();
        let mut first = None;
        for batch in 0..100 {
            let actors: Vec<_> = (0..BATCH)
                .map(|_| system.spawn(Props::named("brief"), || Idle))
                .collect();
            actors.iter().for_each(Addr::stop);
            all_stopped(&system);
            let cells = system.shared.cells.lock();
            assert!(
                cells.is_empty(),
                "batch {batch}: {} cells left",
                cells.len()
            );
            // The table's size, set by the first batch, stays flat.
            let slots = *first.get_or_insert(cells.capacity());
            assert_eq!(cells.capacity(), slots, "batch {batch}");
        }
    }
}
