//! The state registry and its locks: what `proscenium::state` (declared in lib.rs,
//! with the extractors `app` defines) gives an app to share, and what the router takes
//! for each route. Below `app`, which builds `Read`, `Write` and `Then` on it.

mod counter;
mod lock;
#[cfg(test)]
mod lock_tests;
mod lru;
mod map;
mod registry;

/// The synchronisation primitives `lock` is written against: parking_lot's lock (no
/// poisoning) and std's atomics here, loom's when `tests/lock_model.rs` model-checks it.
mod sync {
    pub(crate) use parking_lot::Mutex;
    pub(crate) use std::sync::Arc;
    pub(crate) use std::sync::atomic::{AtomicBool, Ordering};
}

pub use self::counter::Counter;
pub use self::lock::Access;
pub use self::lru::LruCache;
pub use self::map::SharedMap;
pub use self::registry::{Class, StateAccess};

pub(crate) use self::lock::Grant;
pub(crate) use self::registry::{Held, LockSet, States, Taken};
