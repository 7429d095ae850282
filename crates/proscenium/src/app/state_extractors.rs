//! `Read<T>`, `Write<T>` and `State<T>`: the only ways a handler reaches shared state.
//! Each names, in the handler's signature, a state and how it is used; the route's lock
//! set is derived from them, and the locks are held by the time the extractors run.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

use http::StatusCode;
use parking_lot::RawRwLock;
use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};

use super::{FromRequestHead, Handler, IntoResponse, Response, Then, error};
use crate::http::Request;
use crate::shared::{Access, Grant, Held, LockSet, StateAccess, Taken};

/// Shared read access to the app's state `T`, held while the handler runs.
///
/// Readers of one state run in parallel, on every loop and on the blocking pool; a
/// writer waits until they are done.
///
/// # Examples
///
/// ```
/// use proscenium::{App, inline};
/// use proscenium::state::{Counter, Read};
///
/// let app = App::new()
///     .state(Counter::default())
///     .get("/hits", inline(|hits: Read<Counter>| hits.get().to_string()));
/// ```
pub struct Read<T: 'static> {
    // Fields drop in order: the value's guard before the lock's grant.
    guard: ArcRwLockReadGuard<RawRwLock, T>,
    _grant: Grant,
    set: Arc<LockSet>,
}

/// Exclusive access to the app's state `T`, held while the handler runs.
///
/// A writer excludes every other reader and writer of `T`. An async handler holding a
/// `Write` across an `.await` holds it for that time: keep such awaits short, or take
/// the value out and continue with [`Write::then`]. A write held longer than the app's
/// threshold (100 ms unless [`App::write_hold_warning`](crate::App::write_hold_warning)
/// says otherwise) is logged with its route.
///
/// # Examples
///
/// ```
/// use proscenium::{App, inline};
/// use proscenium::state::{Counter, Write};
///
/// let app = App::new()
///     .state(Counter::default())
///     .post("/hits", inline(|mut hits: Write<Counter>| hits.increment().to_string()));
/// ```
pub struct Write<T: 'static> {
    guard: ArcRwLockWriteGuard<RawRwLock, T>,
    _grant: Grant,
    set: Arc<LockSet>,
    since: Instant,
}

/// A clone of the app's state `T`, registered with
/// [`App::with_state`](crate::App::with_state): for handles that need no lock, such as an
/// `Arc`, a connection pool or a client.
///
/// Each request clones the value; no lock is taken, so a route taking only `State`
/// stays stateless in `proscenium routes`, which lists it as `T (state)`.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use proscenium::App;
/// use proscenium::state::State;
///
/// #[derive(Clone)]
/// struct Greeting(Arc<str>);
///
/// let app = App::new()
///     .with_state(Greeting("hello".into()))
///     .get("/", |State(g): State<Greeting>| async move { g.0.to_string() });
/// assert!(app.check_state().is_ok());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromRequestHead for State<T> {
    type Rejection = StateRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        req.extensions()
            .get::<Held>()
            .and_then(Held::cloned)
            .map(State)
            .ok_or(StateRejection(std::any::type_name::<T>()))
    }

    fn state_access() -> Option<StateAccess> {
        Some(StateAccess::cloned::<T>())
    }
}

/// The lock an extractor expected was not held: a route taken outside the router, or a
/// continuation whose handler takes more than state.
#[derive(Debug, Clone, Copy)]
pub struct StateRejection(&'static str);

impl IntoResponse for StateRejection {
    fn into_response(self) -> Response {
        tracing::error!(
            state = self.0,
            "a state extractor found no lock held for it"
        );
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "shared state unavailable",
        )
    }
}

/// Takes the request's grant for `T` and turns it into a guard of the value with
/// `guard` (which cannot fail while the scheduler is right: the grant is the permission).
fn taken<T: Send + Sync + 'static, G>(
    held: Option<&Held>,
    access: Access,
    guard: impl FnOnce(&Arc<parking_lot::RwLock<T>>) -> Option<G>,
) -> Result<(G, Grant, Arc<LockSet>), StateRejection> {
    let rejection = StateRejection(std::any::type_name::<T>());
    let Taken { grant, cell, set } = held.and_then(Held::take::<T>).ok_or(rejection)?;
    debug_assert_eq!(grant.access(), access);
    Ok((guard(&cell).ok_or(rejection)?, grant, set))
}

impl<T: Send + Sync + 'static> FromRequestHead for Read<T> {
    type Rejection = StateRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        Self::from_held(req.extensions().get())
    }

    fn state_access() -> Option<StateAccess> {
        Some(StateAccess::of::<T>(Access::Read))
    }
}

impl<T: Send + Sync + 'static> FromRequestHead for Write<T> {
    type Rejection = StateRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        Self::from_held(req.extensions().get())
    }

    fn state_access() -> Option<StateAccess> {
        Some(StateAccess::of::<T>(Access::Write))
    }
}

impl<T> Deref for Read<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> Deref for Write<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Write<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T: Send + Sync + 'static> Read<T> {
    /// The read of `T` among the locks `held`, if it holds one not yet taken.
    pub(crate) fn from_held(held: Option<&Held>) -> Result<Self, StateRejection> {
        let (guard, _grant, set) = taken(held, Access::Read, parking_lot::RwLock::try_read_arc)?;
        Ok(Self { guard, _grant, set })
    }
}

impl<T: Send + Sync + 'static> Write<T> {
    /// The write of `T` among the locks `held`, if it holds one not yet taken.
    pub(crate) fn from_held(held: Option<&Held>) -> Result<Self, StateRejection> {
        let (guard, _grant, set) = taken(held, Access::Write, parking_lot::RwLock::try_write_arc)?;
        Ok(Self {
            guard,
            _grant,
            set,
            since: Instant::now(),
        })
    }
}

impl<T> Read<T> {
    /// Releases the read and continues the request in `handler`, which takes state
    /// extractors only (capture what it needs from the request): its locks are derived
    /// from its signature and taken like a route's. Node.js's `nextTick` with the
    /// classification of Node.Scala's callbacks — a cache read that, on a miss,
    /// continues in a writing step.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::{App, Query, blocking, inline};
    /// use proscenium::state::{Read, SharedMap, Then, Write};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct N {
    ///     n: u64,
    /// }
    ///
    /// fn square(Query(N { n }): Query<N>, cache: Read<SharedMap<u64, u64>>) -> Then<String> {
    ///     match cache.get(&n) {
    ///         Some(v) => Then::Done(v.to_string()),
    ///         None => cache.then(blocking(move |mut cache: Write<SharedMap<u64, u64>>| {
    ///             cache.get_or_insert_with(n, || n * n).to_string()
    ///         })),
    ///     }
    /// }
    /// let app = App::new().state(SharedMap::<u64, u64>::new()).get("/square", inline(square));
    /// ```
    pub fn then<R, H: Handler<A>, A: 'static>(self, handler: H) -> Then<R> {
        let set = self.set.clone();
        drop(self);
        Then::after(&set, handler)
    }
}

impl<T> Write<T> {
    /// Releases the write and continues the request in `handler`; see [`Read::then`].
    pub fn then<R, H: Handler<A>, A: 'static>(self, handler: H) -> Then<R> {
        let set = self.set.clone();
        drop(self);
        Then::after(&set, handler)
    }
}

impl<T> Drop for Write<T> {
    fn drop(&mut self) {
        let held = self.since.elapsed();
        if held > self.set.states.write_hold_warning {
            tracing::warn!(
                route = %self.set.route,
                state = std::any::type_name::<T>(),
                held_ms = held.as_millis() as u64,
                "write lock held long: every other user of this state waited"
            );
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Read<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Read").field(&*self.guard).finish()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Write<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Write").field(&*self.guard).finish()
    }
}
