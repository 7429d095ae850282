//! Shared state across loops without a lock in user code — Node.Scala's safe stateful
//! services (sec. 4.1 of the paper), with types where Node.Scala analysed bytecode.
//!
//! [`App::state`](crate::App::state) registers any `T: Send + Sync + 'static`; a
//! handler reaches it only through [`Read<T>`] and [`Write<T>`] in its signature. From
//! those the route's class — stateless, reading, writing — and lock set are derived
//! when it is registered (`proscenium routes` prints them). Before the handler runs,
//! the router takes the whole set in one global order (registration order): it tries
//! first, and on contention defers the request so the loop serves others; after a
//! bounded number of tries it waits in the locks' fair queues. Reading routes share;
//! writing routes exclude. The locks are released when the handler's answer is
//! produced — when its arguments drop, a panic included.
//!
//! This holds under every execution model, for handlers on the blocking pool too: the
//! locks are process-wide. Under `prefork` each worker process has its own copy of the
//! state; share across processes through an outside store.
//!
//! # Example
//!
//! ```
//! use proscenium::{App, inline};
//! use proscenium::state::{Counter, Read, Write};
//!
//! let app = App::new()
//!     .state(Counter::default())
//!     .post("/hits", inline(|mut hits: Write<Counter>| hits.increment().to_string()))
//!     .get("/hits", inline(|hits: Read<Counter>| hits.get().to_string()));
//! ```

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
pub use crate::app::Then;
pub use crate::app::state_extractors::{Read, State, StateRejection, Write};

pub(crate) use self::lock::Grant;
pub(crate) use self::registry::{Held, LockSet, States, Taken};
