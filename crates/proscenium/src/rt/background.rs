//! A runtime of its own, on a thread of its own, for work that must not belong to
//! any one loop: the connections an HTTP client pools, a database's. A loop's runtime
//! (and, under the thread models, a connection's thread's) may end before such a
//! connection is used again from elsewhere; this one ends only when its last handle
//! is dropped.

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// A tokio runtime on a thread of its own: futures spawned on it run there, awaited
/// from any loop or thread ([`Background::run`]), or waited for by a thread that is
/// not async ([`Background::block_on`]). Cloned, it is the same runtime; when the
/// last clone is dropped the thread ends, and what runs on it is dropped.
///
/// # Examples
///
/// ```
/// let background = proscenium::rt::Background::new("example");
/// assert_eq!(background.block_on(async { 6 * 7 }), Some(42));
/// ```
#[derive(Debug, Clone)]
pub struct Background(Arc<Thread>);

#[derive(Debug)]
struct Thread {
    handle: Handle,
    /// Told when the last clone is dropped: the thread then ends, and its runtime.
    stop: Option<oneshot::Sender<()>>,
}

impl Background {
    /// Starts the runtime on a thread called `name`.
    ///
    /// # Panics
    ///
    /// The runtime or its thread cannot be started.
    pub fn new(name: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a background runtime starts");
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
            })
            .expect("a background thread starts");
        Self(Arc::new(Thread {
            handle,
            stop: Some(stop),
        }))
    }

    /// Runs `future` there and waits for its output, from any async context; `None`
    /// if the runtime stopped first (or the future panicked).
    pub async fn run<F>(&self, future: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.0.handle.spawn(future).await.ok()
    }

    /// Runs `future` there and blocks this thread until it is done: for code that is
    /// not async. Never on a loop: it would stall every connection of the loop.
    pub fn block_on<F>(&self, future: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (output, done) = std::sync::mpsc::sync_channel(1);
        self.0.handle.spawn(async move {
            let _ = output.send(future.await);
        });
        done.recv().ok()
    }

    /// Starts `future` there without waiting for it.
    pub fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.0.handle.spawn(future);
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
