//! The runtime: event loops (one OS thread each, running a single-threaded tokio
//! runtime), the dispatcher that gives each accepted connection to a loop, the
//! blocking pool, and the watchdog.
//!
//! Invariants: all work of a connection stays on the loop it was given to; a loop's
//! counters are written only by that loop; a connection counts toward its loop's load
//! from the moment the dispatcher picks the loop until it closes.

// openat2 (static files), memfd (the prefork load board) and epoll (the shelf) are
// Linux's: elsewhere the build stops here, with the reason, rather than at the first
// missing symbol.
#[cfg(not(target_os = "linux"))]
compile_error!("Proscenium runs on Linux only: it needs openat2(2), memfd_create(2) and epoll(7)");

mod blocking;
mod board;
pub(crate) mod context;
pub(crate) mod dispatcher;
pub(crate) mod event_loop;
pub(crate) mod overload;
pub(crate) mod prefork;
pub(crate) mod runtime;
pub(crate) mod shelf;
mod sleepers;
pub(crate) mod threads;
pub(crate) mod watchdog;

use std::cell::{Cell, OnceCell};
use std::sync::Arc;

pub(crate) use self::blocking::BlockingPool;
pub use self::blocking::{BlockingError, BlockingTask, spawn_blocking};
pub use self::context::current_loop;
pub use self::prefork::prefork_worker;
pub(crate) use self::shelf::Shelf;
pub(crate) use self::sleepers::{Sleepers, Sleeping};

use crate::{App, Config};

/// What every connection on one loop shares (one `Rc` per loop, so no atomic
/// reference counting on the request path).
#[derive(Debug)]
pub(crate) struct LoopShared {
    pub(crate) app: Arc<App>,
    pub(crate) config: Arc<Config>,
    pub(crate) shutdown: tokio::sync::watch::Receiver<bool>,
    /// Whether shutdown has begun, as this loop learnt it: read on every request, so a
    /// `Cell` rather than the `watch` (a lock).
    closing: Cell<bool>,
    /// The idle connections to wake when shutdown begins.
    pub(crate) sleepers: Sleepers,
    /// Where long-idle connections are put away (event loops only; see `shelf`).
    pub(crate) shelf: OnceCell<Shelf>,
}

impl LoopShared {
    pub(crate) fn new(
        app: Arc<App>,
        config: Arc<Config>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        Self {
            app,
            config,
            shutdown,
            closing: Cell::new(false),
            sleepers: Sleepers::default(),
            shelf: OnceCell::new(),
        }
    }

    pub(crate) fn closing(&self) -> bool {
        self.closing.get()
    }

    /// Shutdown has begun: connections answer with `Connection: close`, idle ones wake
    /// to close.
    pub(crate) fn begin_closing(&self) {
        self.closing.set(true);
        self.sleepers.wake_all();
    }
}

/// Returns the message a panic carried, for logs.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(ToString::to_string)
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}
