//! What the actors of one system share, below the system itself: the dispatchers, the
//! dead letters, and the tables of actors alive (to stop at shutdown) and named.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use slab::Slab;

use super::addr::{AnyCell, Cell};
use super::dispatcher::Dispatcher;
use super::props::{DEFAULT, Props};
use super::timer::TimerHandle;
use super::{Actor, DeadLetters};
use crate::config::DispatcherSpec;

/// Named actors (`System::register`): `Addr<A>`s, removed when they stop.
pub(crate) type Registry = HashMap<String, Box<dyn Any + Send + Sync>>;

/// What a system's actors share: dispatchers, dead letters, and the tables of actors
/// alive and named.
pub(crate) struct Shared {
    pub(crate) dead_letters: Arc<DeadLetters>,
    pub(crate) live: AtomicUsize,
    pub(crate) registry: Mutex<Registry>,
    pub(crate) dispatchers: HashMap<String, Dispatcher>,
    /// Every actor not yet stopped, to stop at shutdown (emptied then, which also ends
    /// the cycle through the cells these hold). An actor leaves when its task ends
    /// ([`Shared::forget`]), and its slot is reused: spawning and stopping actors
    /// without end keeps this as large as the most actors alive at once.
    pub(crate) cells: Mutex<Slab<Arc<dyn AnyCell>>>,
    /// Cancelled at shutdown, ending the timers set on the system.
    pub(crate) timers: TimerHandle,
}

impl Shared {
    /// Shared parts for the dispatchers `specs` names, and `default`.
    pub(crate) fn new(specs: HashMap<String, DispatcherSpec>) -> Self {
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
            dead_letters: Arc::default(),
            live: AtomicUsize::new(0),
            registry: Mutex::default(),
            dispatchers,
            cells: Mutex::default(),
            timers: TimerHandle::default(),
        }
    }

    /// The dispatcher `props` names, or (logged) the default one.
    pub(crate) fn dispatcher(&self, props: &Props) -> &Dispatcher {
        self.dispatchers.get(&props.dispatcher).unwrap_or_else(|| {
            tracing::error!(
                actor = %props.name,
                dispatcher = %props.dispatcher,
                "no such dispatcher; the actor runs on the default one"
            );
            &self.dispatchers[DEFAULT]
        })
    }

    /// Enters the cell `make` builds, given its slot, in the table of actors alive.
    pub(crate) fn enter<A: Actor>(&self, make: impl FnOnce(usize) -> Cell<A>) -> Arc<Cell<A>> {
        let mut cells = self.cells.lock();
        let slot = cells.vacant_entry();
        let cell = Arc::new(make(slot.key()));
        slot.insert(cell.clone());
        self.live.fetch_add(1, Ordering::SeqCst);
        cell
    }

    /// Takes a stopped actor's cell out of [`cells`](Self::cells) — unless shutdown
    /// took them all first, and another actor already has its slot — and counts it
    /// stopped.
    pub(crate) fn forget<A: Actor>(&self, cell: &Cell<A>) {
        let mut cells = self.cells.lock();
        let mine = cells
            .get(cell.slot)
            .is_some_and(|held| std::ptr::addr_eq(Arc::as_ptr(held), cell));
        if mine {
            cells.remove(cell.slot);
        }
        drop(cells);
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}
