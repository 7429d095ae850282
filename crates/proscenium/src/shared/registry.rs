//! The app's registered states, the lock set each route resolves to, and the locks a
//! request holds while its handler runs.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::lock::{self, Access, Grant, Lock};

/// One state a handler's signature asks for, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateAccess {
    type_id: TypeId,
    name: &'static str,
    /// `None` for a [`State`](crate::state::State), cloned without a lock.
    access: Option<Access>,
}

impl StateAccess {
    pub(crate) fn of<T: 'static>(access: Access) -> Self {
        Self {
            access: Some(access),
            ..Self::cloned::<T>()
        }
    }

    /// A [`State<T>`](super::State): the value cloned, no lock.
    pub(crate) fn cloned<T: 'static>() -> Self {
        Self {
            type_id: TypeId::of::<T>(),
            name: short_type_name(std::any::type_name::<T>()),
            access: None,
        }
    }

    /// The state's type name, without its module path.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Read or write under the state's lock, or `None` for a
    /// [`State`](crate::state::State), which takes no lock.
    pub fn access(&self) -> Option<Access> {
        self.access
    }

    pub(crate) fn type_id(&self) -> TypeId {
        self.type_id
    }
}

/// What a route does with shared state, derived from its handler's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Takes no state: runs in parallel with anything.
    Stateless,
    /// Reads only: runs in parallel with other readers of the same state.
    Reading,
    /// Writes at least one state: excludes every other user of it.
    Writing,
}

impl Class {
    /// The class of a route taking `accesses`; a [`State`](crate::state::State) takes no lock,
    /// so it leaves a route stateless.
    pub fn of(accesses: &[StateAccess]) -> Self {
        accesses
            .iter()
            .filter_map(|a| a.access)
            .map(|access| match access {
                Access::Read => Self::Reading,
                Access::Write => Self::Writing,
            })
            .max()
            .unwrap_or(Self::Stateless)
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Self::Stateless => "stateless",
            Self::Reading => "reading",
            Self::Writing => "writing",
        })
    }
}

/// `proscenium::state::SharedMap<u32, alloc::string::String>` → `SharedMap<u32, String>`.
fn short_type_name(full: &'static str) -> &'static str {
    let head = full.split('<').next().unwrap_or(full);
    match head.rfind("::") {
        Some(at) => &full[at + 2..],
        None => full,
    }
}

/// The shared values of one app, in registration order — the global lock order.
#[derive(Debug)]
pub(crate) struct States {
    entries: Vec<Registered>,
    /// The values [`State`](crate::state::State) clones, registered with `App::with_state`.
    cloned: Vec<Cloned>,
    /// A write lock held longer than this is logged with its route.
    pub(crate) write_hold_warning: Duration,
}

struct Registered {
    type_id: TypeId,
    name: &'static str,
    lock: Arc<Lock>,
    /// An `RwLock<T>`: the scheduler decides who may use the value; the `RwLock` only
    /// turns that decision into safe references (it is never contended, and a
    /// scheduler bug would show as a 500, not as a data race).
    value: Arc<dyn Any + Send + Sync>,
}

/// A value handed out by clone, without a lock.
struct Cloned {
    type_id: TypeId,
    name: &'static str,
    value: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Cloned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Default for States {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            cloned: Vec::new(),
            write_hold_warning: Duration::from_millis(100),
        }
    }
}

impl States {
    /// Registers `value` as the app's state of type `T`.
    ///
    /// # Panics
    ///
    /// When a `T` is registered already.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let access = self.vacant::<T>();
        self.entries.push(Registered {
            type_id: access.type_id,
            name: access.name,
            lock: Arc::new(Lock::default()),
            value: Arc::new(RwLock::new(value)),
        });
    }

    /// Registers `value` as the app's state of type `T` handed out by clone.
    ///
    /// # Panics
    ///
    /// When a `T` is registered already, either way.
    pub(crate) fn insert_cloned<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        let access = self.vacant::<T>();
        self.cloned.push(Cloned {
            type_id: access.type_id,
            name: access.name,
            value: Arc::new(value),
        });
    }

    /// `T`'s access, after checking no `T` is registered yet.
    fn vacant<T: 'static>(&self) -> StateAccess {
        let access = StateAccess::cloned::<T>();
        assert!(
            !self.has(access.type_id),
            "state `{}` registered twice",
            access.name
        );
        access
    }

    /// A clone of the `T` registered with `App::with_state`.
    pub(crate) fn cloned<T: Clone + 'static>(&self) -> Option<T> {
        let found = self
            .cloned
            .iter()
            .find(|c| c.type_id == TypeId::of::<T>())?;
        found.value.downcast_ref::<T>().cloned()
    }

    /// Moves every state of `other` into `self`, after `self`'s own in the lock order.
    ///
    /// # Panics
    ///
    /// When both have a state of the same type.
    pub(crate) fn absorb(&mut self, other: Self) {
        let names = other.entries.iter().map(|e| (e.type_id, e.name));
        for (type_id, name) in names.chain(other.cloned.iter().map(|c| (c.type_id, c.name))) {
            assert!(!self.has(type_id), "state `{name}` registered twice");
        }
        self.entries.extend(other.entries);
        self.cloned.extend(other.cloned);
    }

    /// Whether a state of this type is registered, either way.
    fn has(&self, type_id: TypeId) -> bool {
        self.entries.iter().any(|e| e.type_id == type_id)
            || self.cloned.iter().any(|c| c.type_id == type_id)
    }

    /// Checks that every [`State`](crate::state::State) among `needs` is registered.
    fn check_cloned(&self, needs: &[StateAccess], route: &str) -> Result<(), String> {
        let missing = needs
            .iter()
            .filter(|need| need.access.is_none())
            .find(|need| !self.cloned.iter().any(|c| c.type_id == need.type_id));
        match missing {
            Some(need) => Err(format!(
                "route {route} takes state `{}`, which is not registered (App::with_state)",
                need.name
            )),
            None => Ok(()),
        }
    }

    /// The locks `needs` ask for, in the global order, for `route`.
    pub(crate) fn resolve(
        self: &Arc<Self>,
        needs: &[StateAccess],
        route: &str,
    ) -> Result<Arc<LockSet>, String> {
        self.check_cloned(needs, route)?;
        let mut items = needs
            .iter()
            .filter_map(|need| Some((need, need.access?)))
            .map(|(need, access)| {
                let at = self
                    .entries
                    .iter()
                    .position(|e| e.type_id == need.type_id)
                    .ok_or_else(|| {
                        format!(
                            "route {route} takes state `{}`, which is not registered (App::state)",
                            need.name
                        )
                    })?;
                Ok((at, access))
            })
            .collect::<Result<Vec<_>, String>>()?;
        items.sort_unstable();
        let entry = |at: usize| &self.entries[at];
        Ok(Arc::new(LockSet {
            locks: items
                .iter()
                .map(|&(at, access)| (entry(at).lock.clone(), access))
                .collect(),
            values: items
                .iter()
                .map(|&(at, _)| (entry(at).type_id, entry(at).value.clone()))
                .collect(),
            route: route.into(),
            states: self.clone(),
            continuations: Mutex::default(),
        }))
    }
}

/// The locks one route takes, in the global order, with the values they guard.
#[derive(Debug)]
pub(crate) struct LockSet {
    pub(crate) locks: Vec<(Arc<Lock>, Access)>,
    values: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
    pub(crate) route: Arc<str>,
    pub(crate) states: Arc<States>,
    /// The lock sets of the handlers this route continues in (`then`), by handler
    /// type: resolved on a continuation's first use, not on every request.
    continuations: Mutex<HashMap<TypeId, Result<Arc<LockSet>, String>>>,
}

/// How many times a request tries its whole lock set, letting its loop serve others
/// between tries, before it waits in the locks' queues (Node.Scala's bounded retries).
const TRIES: usize = 4;

impl LockSet {
    /// The lock set of continuation handler `H`, whose state `needs` gives.
    pub(crate) fn continuation<H: 'static>(
        &self,
        needs: impl FnOnce() -> Vec<StateAccess>,
    ) -> Result<Arc<LockSet>, String> {
        let mut cache = self.continuations.lock();
        cache
            .entry(TypeId::of::<H>())
            .or_insert_with(|| {
                let route = format!("{} (then)", self.route);
                self.states.resolve(&needs(), &route)
            })
            .clone()
    }

    /// Takes every lock now, if none is contended.
    pub(crate) fn try_hold(self: &Arc<Self>) -> Option<Held> {
        lock::try_acquire_all(&self.locks).map(|grants| self.held(grants))
    }

    /// Takes every lock: tries, deferring to the loop's other work, then waits.
    pub(crate) async fn hold(self: Arc<Self>) -> Held {
        let grants = lock::acquire_all(&self.locks, TRIES).await;
        self.held(grants)
    }

    fn held(self: &Arc<Self>, grants: Vec<Grant>) -> Held {
        Held(Arc::new(HeldInner {
            set: self.clone(),
            grants: Mutex::new(grants.into_iter().map(Some).collect()),
        }))
    }
}

/// The locks a request holds, put in its extensions for the `Read` / `Write`
/// extractors to take, each its own.
#[derive(Debug, Clone)]
pub(crate) struct Held(Arc<HeldInner>);

#[derive(Debug)]
struct HeldInner {
    set: Arc<LockSet>,
    grants: Mutex<Vec<Option<Grant>>>,
}

/// One lock taken out of [`Held`] by its extractor.
pub(crate) struct Taken<T> {
    pub(crate) grant: Grant,
    pub(crate) cell: Arc<RwLock<T>>,
    pub(crate) set: Arc<LockSet>,
}

impl Held {
    /// A clone of the state `T` registered with `App::with_state`.
    pub(crate) fn cloned<T: Clone + 'static>(&self) -> Option<T> {
        self.0.set.states.cloned()
    }

    /// Takes the grant for state `T`, if this request holds one not yet taken.
    pub(crate) fn take<T: Send + Sync + 'static>(&self) -> Option<Taken<T>> {
        let inner = &self.0;
        let at = inner
            .set
            .values
            .iter()
            .position(|(id, _)| *id == TypeId::of::<T>())?;
        let grant = inner.grants.lock().get_mut(at)?.take()?;
        let cell = inner.set.values[at]
            .1
            .clone()
            .downcast::<RwLock<T>>()
            .ok()?;
        Some(Taken {
            grant,
            cell,
            set: inner.set.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(
            short_type_name(std::any::type_name::<crate::shared::SharedMap<u32, String>>()),
            "SharedMap<u32, alloc::string::String>"
        );
        assert_eq!(short_type_name("u64"), "u64");
    }

    #[test]
    fn a_route_class_is_its_strongest_access() {
        let read = StateAccess::of::<u8>(Access::Read);
        let write = StateAccess::of::<u16>(Access::Write);
        assert_eq!(Class::of(&[]), Class::Stateless);
        assert_eq!(Class::of(&[read]), Class::Reading);
        assert_eq!(Class::of(&[read, write]), Class::Writing);
    }

    #[test]
    fn a_cloned_state_takes_no_lock_and_must_be_registered() {
        let mut states = States::default();
        states.insert_cloned(3u8);
        let states = Arc::new(states);
        let needs = [StateAccess::cloned::<u8>()];
        assert_eq!(Class::of(&needs), Class::Stateless);
        assert!(states.resolve(&needs, "GET /x").unwrap().locks.is_empty());
        assert_eq!(states.cloned::<u8>(), Some(3));
        let err = states
            .resolve(&[StateAccess::cloned::<u16>()], "GET /y")
            .unwrap_err();
        assert!(err.contains("u16") && err.contains("with_state"), "{err}");
    }

    #[test]
    #[should_panic(expected = "state `u8` registered twice")]
    fn one_type_is_registered_one_way_only() {
        let mut states = States::default();
        states.insert(1u8);
        states.insert_cloned(2u8);
    }

    #[test]
    fn lock_sets_follow_registration_order_and_name_missing_state() {
        let mut states = States::default();
        states.insert(1u8);
        states.insert(2u16);
        let states = Arc::new(states);
        let needs = [
            StateAccess::of::<u16>(Access::Write),
            StateAccess::of::<u8>(Access::Read),
        ];
        let set = states.resolve(&needs, "GET /x").unwrap();
        assert_eq!(set.values[0].0, TypeId::of::<u8>());
        assert_eq!(set.locks[1].1, Access::Write);
        let err = states
            .resolve(&[StateAccess::of::<u32>(Access::Read)], "GET /y")
            .unwrap_err();
        assert!(err.contains("GET /y") && err.contains("u32"), "{err}");
    }
}
