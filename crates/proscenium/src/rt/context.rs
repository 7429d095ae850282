//! The loop a thread runs, as a thread-local: its id, its counters and its blocking
//! pools.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::blocking::Pools;
use super::watchdog::LoopStats;
use crate::config::Limits;

/// What code running on a loop thread can reach without being handed it.
#[derive(Debug)]
pub(crate) struct LoopContext {
    pub(crate) id: usize,
    pub(crate) stats: Arc<LoopStats>,
    pub(crate) pools: Arc<Pools>,
    /// The server's limits, for extractors that follow them (`Multipart`'s): the
    /// loop's view of the configuration, not all of it.
    #[cfg_attr(
        not(feature = "multipart"),
        expect(dead_code, reason = "only Multipart reads it")
    )]
    pub(crate) limits: Limits,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<LoopContext>>> = const { RefCell::new(None) };
}

/// Makes `ctx` the current thread's loop context.
pub(crate) fn enter(ctx: LoopContext) {
    CURRENT.set(Some(Rc::new(ctx)));
}

/// Calls `f` with the current loop's context, if this thread runs a loop.
pub(crate) fn with_current<R>(f: impl FnOnce(&LoopContext) -> R) -> Option<R> {
    CURRENT.with_borrow(|ctx| ctx.as_deref().map(f))
}

/// Returns the blocking pools of the current loop, or the process-wide ones.
pub(crate) fn blocking_pools() -> Arc<Pools> {
    with_current(|ctx| ctx.pools.clone()).unwrap_or_else(Pools::fallback)
}

/// Returns the id of the loop running on this thread, if any.
///
/// # Examples
///
/// ```
/// assert_eq!(proscenium::rt::current_loop(), None);
/// ```
pub fn current_loop() -> Option<usize> {
    with_current(|ctx| ctx.id)
}
