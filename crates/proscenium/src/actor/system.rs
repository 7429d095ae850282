//! The actor system: dispatchers by name, top-level actors, the registry of named
//! actors, timers, shutdown.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use super::props::{DEFAULT, Props};
use super::run::spawn;
use super::shared::{Registry, Shared};
use super::tally::KindCounts;
use super::timer::{self, Schedule, TimerHandle};
use super::{Actor, Addr, DeadLetters};
use crate::config::DispatcherSpec;

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

/// The systems created in this process, for `/metrics` (those dropped are pruned as
/// they are met).
static SYSTEMS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Returns, by actor kind, the actors alive in every system of this process and the
/// messages in their mailboxes now, and their dead letters and restarts so far.
#[cfg_attr(
    not(feature = "metrics"),
    expect(dead_code, reason = "only /metrics reads it")
)]
pub(crate) fn by_kind() -> BTreeMap<&'static str, KindCounts> {
    let mut kinds = super::tally::counted();
    let systems: Vec<Arc<Shared>> = SYSTEMS.lock().iter().filter_map(Weak::upgrade).collect();
    for system in systems {
        for (_, cell) in system.cells.lock().iter() {
            let kind = kinds.entry(cell.kind()).or_default();
            kind.actors += 1;
            kind.queued += cell.queued();
        }
    }
    kinds
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
        let shared = Arc::new(Shared::new(specs));
        let mut systems = SYSTEMS.lock();
        systems.retain(|system| system.strong_count() > 0);
        systems.push(Arc::downgrade(&shared));
        Self { shared }
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

    fn registry(&self) -> MutexGuard<'_, Registry> {
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
        let system = self.shared.timers.clone();
        self.shared.dispatchers[DEFAULT].run(Box::new(move || {
            timer::start(schedule, &timer, &system, move || {
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

    /// The dead letters, for a part of the system that outlives a borrow of it (a
    /// remote node).
    #[cfg(feature = "redis")]
    pub(crate) fn dead_letters_arc(&self) -> Arc<DeadLetters> {
        Arc::clone(&self.shared.dead_letters)
    }

    /// Actors started and not yet stopped.
    pub fn live_actors(&self) -> usize {
        self.shared.live.load(Ordering::SeqCst)
    }

    /// Runs `future` to completion on a runtime of its own: for code outside any loop
    /// (`main`, tests) that talks to actors.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        crate::rt::runtime::current_thread()
            .expect("a runtime builds")
            .block_on(future)
    }

    /// Stops every actor (queued messages go to dead letters; the hooks run) and waits
    /// for the dispatcher threads to finish.
    pub fn shutdown(&self) {
        self.shared.timers.cancel();
        let cells = std::mem::take(&mut *self.shared.cells.lock());
        for (_, cell) in &cells {
            cell.stop();
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
