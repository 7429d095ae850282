//! Where the thread models run their upgraded connections (a WebSocket, any protocol
//! an `http::upgrade` answer switches to, HTTP/2): one thread of their own, apart from
//! the request threads, each connection a task on its runtime — as Jetty runs its
//! WebSockets and HTTP/2 connections on its NIO selectors, not on its request threads.
//! This thread runs no handler: an HTTP/2 stream's call is handed back to the
//! acceptor, for a request thread (`hand_off::Policy::Always`). A request thread that
//! answers `101` writes the answer, hands the connection here with its place under the
//! connection cap, and takes its next request; an open socket holds no request thread,
//! however long it stays idle (issue 33: 4 idle sockets used to fill a pool of 4).
//!
//! Bounds: one thread, whatever the burst of upgrades; as many tasks as the cap lets
//! connections in (each holds its place under `limits.max_connections` until it ends).
//! The tasks share the thread as connections share a loop: a protocol's handler that
//! computes, or blocks, delays every other upgraded connection meanwhile (work of more
//! than a millisecond belongs on the blocking pool, `rt::spawn_blocking`, which is the
//! server's here too).
//!
//! Shutdown: each connection is told (`Upgraded::going_away`), and one still open at
//! the shutdown deadline is dropped; the thread ends once the threads that hand it
//! connections have ended.

use std::rc::Rc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::event_loop::LoopSpec;
use super::hand_off::{self, Policy, Work};
use super::overload::Pass;
use super::protocol::{Moved, Protocol};
use super::runtime::spawn_thread;
use super::threads::{enter_thread, shutdown_deadline};

/// The thread of upgraded connections, and the way connections are handed to it.
pub(crate) struct Upgraded {
    way: Upgrades,
    thread: JoinHandle<()>,
}

impl Upgraded {
    /// Starts the thread; its loop context has `id` (one no request thread has), and
    /// the calls of its connections go by `calls` to the request threads.
    pub(crate) fn start<P: Protocol>(
        id: usize,
        spec: &LoopSpec<P>,
        calls: mpsc::UnboundedSender<Box<dyn Work>>,
    ) -> std::io::Result<Self> {
        let (way, mut handed) = mpsc::unbounded_channel();
        let spec = spec.clone();
        let thread = spawn_thread("proscenium-upgraded".to_owned(), move |runtime| {
            enter_thread(id, &spec);
            hand_off::install(
                Rc::new(move |work| calls.send(work).map_err(|refused| refused.0)),
                Policy::Always,
            );
            let local = tokio::task::LocalSet::new();
            local.block_on(runtime, async {
                // Unbounded, yet no larger than the cap: each connection holds its pass.
                while let Some((moved, pass)) = handed.recv().await {
                    tokio::task::spawn_local(run(moved, pass, spec.clone()));
                }
            });
        })?;
        Ok(Self {
            way: Upgrades(way),
            thread,
        })
    }

    /// Returns the way connections are handed to the thread.
    pub(crate) fn way(&self) -> Upgrades {
        self.way.clone()
    }

    /// Waits for the thread to end: once every other way to it is dropped (the threads
    /// that hand it connections have ended), and with them the connections past the
    /// shutdown deadline.
    pub(crate) fn stop(self) {
        drop(self.way);
        if self.thread.join().is_err() {
            tracing::error!("the thread of upgraded connections panicked");
        }
    }
}

/// The way upgraded connections are handed to the thread that runs them.
#[derive(Clone)]
pub(crate) struct Upgrades(mpsc::UnboundedSender<(Moved, Pass)>);

impl Upgrades {
    /// Hands an upgraded connection, with its place under the cap, to the thread.
    pub(crate) fn hand(&self, moved: Moved, pass: Pass) {
        if self.0.send((moved, pass)).is_err() {
            // The thread ends only after every request thread: not reached.
            tracing::error!("the thread of upgraded connections is gone: connection dropped");
        }
    }
}

/// Runs an upgraded connection until its protocol ends it, or the shutdown deadline
/// passes; its place under the cap is given back then.
pub(crate) async fn run<P>(moved: Moved, pass: Pass, spec: LoopSpec<P>) {
    tokio::select! {
        () = moved(spec.shutdown.clone()) => {}
        () = shutdown_deadline(&spec, || {}) => {
            tracing::warn!("shutdown deadline passed; closing an upgraded connection");
        }
    }
    drop(pass);
}
