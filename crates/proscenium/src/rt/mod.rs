//! The runtime: event loops (one OS thread each, running a single-threaded tokio
//! runtime), the dispatcher that gives each accepted connection to a loop, the
//! blocking pool, and the watchdog. It knows nothing of HTTP: the server hands it a
//! `Protocol` that serves each connection.
//!
//! Invariants: all work of a connection stays on the loop it was given to (but for a
//! request the staged model hands to a less busy thread, `hand_off`); a loop's
//! counters are written only by that loop; a connection counts toward its loop's load
//! from the moment the dispatcher picks the loop until it closes.

// openat2 (static files), memfd (the prefork load board) and epoll (the shelf) are
// Linux's: elsewhere the build stops here, with the reason, rather than at the first
// missing symbol.
#[cfg(not(target_os = "linux"))]
compile_error!("Proscenium runs on Linux only: it needs openat2(2), memfd_create(2) and epoll(7)");

mod background;
pub(crate) mod backoff;
mod binary;
mod blocking;
mod board;
pub(crate) mod context;
pub(crate) mod dispatcher;
pub(crate) mod event_loop;
pub(crate) mod hand_off;
pub(crate) mod overload;
pub(crate) mod pace;
pub(crate) mod prefork;
mod protocol;
pub(crate) mod restarts;
pub(crate) mod runtime;
mod settings;
mod sleepers;
mod slots;
pub(crate) mod systemd;
pub(crate) mod threads;
pub(crate) mod turns;
pub(crate) mod upgraded;
pub(crate) mod waiting_room;
pub(crate) mod watchdog;

/// The synchronisation primitives `slots` is written against: std's here, loom's when
/// `tests/slots_model.rs` model-checks it.
mod sync {
    pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
}

pub use self::background::Background;
#[cfg(any(feature = "client", feature = "redis", feature = "tls"))]
pub(crate) use self::backoff::Backoff;
#[cfg(feature = "metrics")]
pub(crate) use self::blocking::PoolGauges;
pub use self::blocking::{BlockingError, BlockingTask, spawn_blocking, spawn_blocking_on};
pub(crate) use self::blocking::{Pools, spawn_blocking_in};
pub use self::context::current_loop;
pub(crate) use self::event_loop::Ticket;
pub use self::prefork::prefork_worker;
pub(crate) use self::protocol::{
    Host, Left, LocalProtocol, Moved, Progress, Protocol, Readiness, Visit,
};
pub(crate) use self::settings::RuntimeSettings;
pub(crate) use self::sleepers::{Sleepers, Sleeping};

/// Returns the message a panic carried, for logs.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(ToString::to_string)
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}
