//! Node.js and EventMachine idioms on Proscenium's loops: a typed [`EventEmitter`],
//! [`defer`] (a blocking operation on the pool, its callback back on the caller's
//! loop), and [`next_tick`].
//!
//! # Example
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use proscenium::events::EventEmitter;
//!
//! let uploads = EventEmitter::<String>::new();
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = seen.clone();
//! uploads.on(move |name| log.lock().unwrap().push(name.clone()));
//! uploads.emit(&"cat.jpg".to_owned());
//! assert_eq!(*seen.lock().unwrap(), ["cat.jpg"]);
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::rt::{BlockingError, spawn_blocking};

type Listener<E> = Arc<dyn Fn(&E) + Send + Sync>;

/// Listeners of events of type `E`, called in the order they were added.
pub struct EventEmitter<E> {
    listeners: Mutex<Vec<(ListenerId, Listener<E>, bool)>>,
    next: AtomicU64,
}

/// Names a listener, for [`EventEmitter::off`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenerId(u64);

impl<E> Default for EventEmitter<E> {
    fn default() -> Self {
        Self {
            listeners: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
        }
    }
}

impl<E> std::fmt::Debug for EventEmitter<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventEmitter")
            .field("listeners", &self.listeners.lock().len())
            .finish()
    }
}

impl<E> EventEmitter<E> {
    /// An emitter with no listeners.
    pub fn new() -> Self {
        Self::default()
    }

    fn add(&self, listener: Listener<E>, once: bool) -> ListenerId {
        let id = ListenerId(self.next.fetch_add(1, Ordering::Relaxed));
        self.listeners.lock().push((id, listener, once));
        id
    }

    /// Calls `listener` on every event from now on.
    pub fn on(&self, listener: impl Fn(&E) + Send + Sync + 'static) -> ListenerId {
        self.add(Arc::new(listener), false)
    }

    /// Calls `listener` on the next event only.
    pub fn once(&self, listener: impl Fn(&E) + Send + Sync + 'static) -> ListenerId {
        self.add(Arc::new(listener), true)
    }

    /// Removes a listener; returns whether it was there.
    pub fn off(&self, id: ListenerId) -> bool {
        let mut listeners = self.listeners.lock();
        let before = listeners.len();
        listeners.retain(|(have, _, _)| *have != id);
        listeners.len() < before
    }

    /// Calls every listener with `event`; returns how many there were. Listeners added
    /// or removed by a listener take effect from the next event, as in Node.js.
    pub fn emit(&self, event: &E) -> usize {
        let called: Vec<Listener<E>> = {
            let mut listeners = self.listeners.lock();
            let now = listeners.iter().map(|(_, l, _)| l.clone()).collect();
            listeners.retain(|(_, _, once)| !once);
            now
        };
        for listener in &called {
            listener(event);
        }
        called.len()
    }
}

/// Runs `operation` on the blocking pool, then `callback` with its result back on the
/// calling loop (EventMachine's `defer`). Call it on a loop or an actor's thread.
///
/// # Errors
///
/// The pool's queue is full: nothing runs.
pub fn defer<T: Send + 'static>(
    operation: impl FnOnce() -> T + Send + 'static,
    callback: impl FnOnce(T) + 'static,
) -> Result<(), BlockingError> {
    let task = spawn_blocking(operation)?;
    tokio::task::spawn_local(async move {
        match task.await {
            Ok(result) => callback(result),
            Err(e) => tracing::error!(error = %e, "a deferred operation failed"),
        }
    });
    Ok(())
}

/// Runs `f` on this loop once the current callback and the work already queued have
/// run (Node.js's `process.nextTick`, as near as a cooperative loop comes).
pub fn next_tick(f: impl FnOnce() + 'static) {
    tokio::task::spawn_local(async move { f() });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn on_once_and_off() {
        let emitter = EventEmitter::<u32>::new();
        let sum = Arc::new(AtomicUsize::new(0));
        let (a, b) = (sum.clone(), sum.clone());
        let always = emitter.on(move |n| {
            a.fetch_add(*n as usize, Ordering::SeqCst);
        });
        emitter.once(move |n| {
            b.fetch_add(100 * *n as usize, Ordering::SeqCst);
        });
        assert_eq!(emitter.emit(&1), 2);
        assert_eq!(emitter.emit(&2), 1, "the once listener is gone");
        assert!(emitter.off(always));
        assert_eq!(emitter.emit(&3), 0);
        assert_eq!(sum.load(Ordering::SeqCst), 1 + 100 + 2);
    }

    #[test]
    fn defer_runs_the_operation_off_the_loop_and_the_callback_on_it() {
        let runtime = crate::rt::runtime::current_thread().unwrap();
        let local = tokio::task::LocalSet::new();
        let here = std::thread::current().id();
        let (tx, rx) = std::sync::mpsc::channel();
        local.block_on(&runtime, async move {
            defer(
                move || std::thread::current().id(),
                move |there| {
                    tx.send((there, std::thread::current().id())).unwrap();
                },
            )
            .unwrap();
            next_tick(|| {});
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        });
        let (op, callback) = rx.recv().unwrap();
        assert_ne!(op, here, "the operation ran on the pool");
        assert_eq!(callback, here, "the callback ran back here");
    }
}
