//! The one way the crate starts a thread of its own tokio runtime: a named OS thread
//! running a current-thread runtime with its I/O and time drivers — every loop,
//! acceptor, supervisor and thread-model worker is one.

use std::io;
use std::thread::JoinHandle;

use tokio::runtime::Runtime;

/// Returns a current-thread tokio runtime with its I/O and time drivers on.
///
/// # Errors
///
/// When the runtime's reactor cannot be made (out of file descriptors).
pub(crate) fn current_thread() -> io::Result<Runtime> {
    // A loop's turns are timed between these hooks; other threads' are not.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_unpark(super::turns::woke)
        .on_thread_park(super::turns::parking)
        .build()
}

/// Starts OS thread `name`, which runs `main` with a [`current_thread`] runtime of its
/// own and returns what `main` returns.
///
/// The runtime is built before the thread starts, so failing to build it is the
/// caller's error, not a panic or a log line in a thread nobody joins yet.
///
/// # Errors
///
/// When the runtime cannot be built or the thread cannot start.
pub(crate) fn spawn_thread<R: Send + 'static>(
    name: String,
    main: impl FnOnce(&Runtime) -> R + Send + 'static,
) -> io::Result<JoinHandle<R>> {
    let runtime = current_thread()?;
    std::thread::Builder::new()
        .name(name)
        .spawn(move || main(&runtime))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_thread_runs_its_main_on_its_runtime() {
        let thread = super::spawn_thread("proscenium-test".to_owned(), |runtime| {
            let name = std::thread::current().name().map(str::to_owned);
            (name, runtime.block_on(async { 7 }))
        })
        .unwrap();
        assert_eq!(
            thread.join().unwrap(),
            (Some("proscenium-test".to_owned()), 7)
        );
    }
}
