//! The process's signals: SIGTERM and SIGINT stop the server, SIGHUP reloads it,
//! SIGUSR1 reopens the access logs.

use crate::Error;

/// SIGINT and SIGTERM, SIGHUP and SIGUSR1, watched from the moment this is made: one that
/// arrives before [`Signals::wait`] is kept for it, not fatal to the process.
#[derive(Debug)]
pub(crate) struct Signals {
    runtime: tokio::runtime::Runtime,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts watching.
    pub(crate) fn watch() -> Result<Self, Error> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime =
            crate::rt::runtime::current_thread().map_err(Error::io("start the signal watcher"))?;
        let entered = runtime.enter();
        let term = signal(SignalKind::terminate()).map_err(Error::io("watch SIGTERM"))?;
        let int = signal(SignalKind::interrupt()).map_err(Error::io("watch SIGINT"))?;
        let hup = signal(SignalKind::hangup()).map_err(Error::io("watch SIGHUP"))?;
        let usr1 = signal(SignalKind::user_defined1()).map_err(Error::io("watch SIGUSR1"))?;
        drop(entered);
        Ok(Self {
            runtime,
            term,
            int,
            hup,
            usr1,
        })
    }

    /// Blocks until SIGTERM or SIGINT arrives (or has arrived), calling `on_hangup`
    /// for each SIGHUP meanwhile, and reopening the access logs at each SIGUSR1.
    pub(super) fn wait(mut self, mut on_hangup: impl FnMut()) {
        self.runtime.block_on(async {
            loop {
                tokio::select! {
                    _ = self.term.recv() => break,
                    _ = self.int.recv() => break,
                    _ = self.hup.recv() => on_hangup(),
                    _ = self.usr1.recv() => {
                        tracing::info!("SIGUSR1: reopening the access log");
                        crate::http::access_log::reopen_access_logs();
                    }
                }
            }
        });
    }
}
