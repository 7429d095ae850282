//! An event loop: one OS thread running a single-threaded tokio runtime with a
//! `LocalSet`, serving the connections given to it.
//!
//! Shutdown steps: the loop stops taking connections; it tells its protocol, whose
//! idle connections close and busy ones finish their request and close; the loop
//! waits until none is left or the deadline passes, then drops the rest.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::context::{self, LoopContext};
use super::overload::{Gate, Pass};
use super::protocol::{Host, LocalProtocol, Protocol};
use super::watchdog::LoopStats;
use super::{Pools, RuntimeSettings, runtime};
use crate::transport::{Parked, Stream};

/// A connection handed to a loop.
pub(crate) type Handoff = (std::net::TcpStream, SocketAddr, Pass);

/// How long a stopping loop waits for the dispatcher to stop handing it connections.
const DISPATCHER_STOP: std::time::Duration = std::time::Duration::from_secs(1);

/// The server's side of a running loop.
#[derive(Debug)]
pub(crate) struct LoopHandle {
    pub(crate) conns: mpsc::UnboundedSender<Handoff>,
    pub(crate) stats: Arc<LoopStats>,
    pub(crate) thread: JoinHandle<()>,
}

/// What a loop needs from the server that starts it.
#[derive(Debug)]
pub(crate) struct LoopSpec<P> {
    /// What the loop's connections speak.
    pub(crate) protocol: Arc<P>,
    /// What the loop reads of the configuration.
    pub(crate) settings: Arc<RuntimeSettings>,
    pub(crate) pools: Arc<Pools>,
    pub(crate) shutdown: watch::Receiver<bool>,
    /// The cap on live connections, shared by every acceptor.
    pub(crate) gate: Arc<Gate>,
    /// What a connection's TLS session is made from; `None`: plain TCP.
    pub(crate) tls: Option<Arc<crate::transport::ServerConfig>>,
}

// Not derived: a derived `Clone` would ask `P: Clone` of the protocol behind the `Arc`.
impl<P> Clone for LoopSpec<P> {
    fn clone(&self) -> Self {
        Self {
            protocol: self.protocol.clone(),
            settings: self.settings.clone(),
            pools: self.pools.clone(),
            shutdown: self.shutdown.clone(),
            gate: self.gate.clone(),
            tls: self.tls.clone(),
        }
    }
}

/// Starts loop `id`; with `listener`, the loop also accepts connections itself.
pub(crate) fn spawn<P: Protocol>(
    id: usize,
    spec: LoopSpec<P>,
    listener: Option<std::net::TcpListener>,
) -> std::io::Result<LoopHandle> {
    let (tx, rx) = mpsc::unbounded_channel();
    let stats = Arc::new(LoopStats::default());
    let loop_stats = stats.clone();
    let thread = runtime::spawn_thread(format!("proscenium-loop-{id}"), move |runtime| {
        context::enter(LoopContext {
            id,
            stats: loop_stats.clone(),
            pools: spec.pools.clone(),
            limits: spec.settings.limits.clone(),
        });
        let local = tokio::task::LocalSet::new();
        local.block_on(runtime, run(spec, rx, listener, loop_stats));
    })?;
    Ok(LoopHandle {
        conns: tx,
        stats,
        thread,
    })
}

async fn run<P: Protocol>(
    spec: LoopSpec<P>,
    mut handoffs: mpsc::UnboundedReceiver<Handoff>,
    listener: Option<std::net::TcpListener>,
    stats: Arc<LoopStats>,
) {
    let shared = spec.protocol.local(Host::Loop);
    if let Some(listener) = listener {
        tokio::task::spawn_local(accept(
            listener,
            shared.clone(),
            stats.clone(),
            spec.clone(),
        ));
    }
    let tls = spec.tls.as_ref();
    let mut shutdown = spec.shutdown.clone();
    loop {
        // With `reuseport` no dispatcher hands connections over and `handoffs` is
        // closed: the pattern then disables that branch and the loop waits for shutdown.
        tokio::select! {
            Some(handoff) = handoffs.recv() => take(handoff, &shared, &stats, tls),
            _ = shutdown.changed() => break,
        }
    }
    shared.begin_closing();
    // Connections handed over but not yet started were accepted: they are served
    // (their request gets an answer announcing the close), not dropped unanswered —
    // until the dispatcher, which may accept one more as it stops, drops its senders.
    let late = async {
        while let Some(handoff) = handoffs.recv().await {
            take(handoff, &shared, &stats, tls);
        }
    };
    if tokio::time::timeout(DISPATCHER_STOP, late).await.is_err() {
        tracing::warn!("the dispatcher did not stop within {DISPATCHER_STOP:?}");
    }
    drain(&stats, spec.settings.timeouts.shutdown).await;
}

/// Accepts connections on this loop's own `SO_REUSEPORT` listener.
async fn accept<L: LocalProtocol, P>(
    listener: std::net::TcpListener,
    shared: Rc<L>,
    stats: Arc<LoopStats>,
    spec: LoopSpec<P>,
) {
    let (gate, mut shutdown, tls) = (spec.gate, spec.shutdown, spec.tls.as_ref());
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return tracing::error!("cannot register listener: {e}"),
    };
    loop {
        tokio::select! {
            accepted = async {
                let reserved = gate.admit().await;
                listener.accept().await.map(|(stream, peer)| (stream, peer, reserved))
            } => match accepted {
                Ok((stream, peer, reserved)) => match stream.into_std() {
                    Ok(stream) => {
                        stats.conns.fetch_add(1, Ordering::Relaxed);
                        start(stream, peer, reserved.accept(), &shared, &stats, tls);
                    }
                    Err(e) => tracing::warn!("accepted connection unusable: {e}"),
                },
                Err(e) => super::dispatcher::pause_after_accept_error(&e).await,
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Starts serving a connection the dispatcher handed over, taking it off the count of
/// those waiting (`stats.handed`).
fn take<L: LocalProtocol>(
    (stream, peer, pass): Handoff,
    shared: &Rc<L>,
    stats: &Arc<LoopStats>,
    tls: Option<&Arc<crate::transport::ServerConfig>>,
) {
    stats.handed.fetch_sub(1, Ordering::Relaxed);
    start(stream, peer, pass, shared, stats, tls);
}

/// Starts serving a connection already counted in `stats.conns`.
fn start<L: LocalProtocol>(
    stream: std::net::TcpStream,
    peer: SocketAddr,
    pass: Pass,
    shared: &Rc<L>,
    stats: &Arc<LoopStats>,
    tls: Option<&Arc<crate::transport::ServerConfig>>,
) {
    let ticket = Ticket {
        _counted: Counted(stats.clone()),
        _pass: pass,
    };
    let stream = match prepare(stream, tls) {
        Ok(stream) => stream,
        Err(e) => return tracing::warn!("cannot serve connection from {peer}: {e}"),
    };
    tokio::task::spawn_local(shared.serve(stream, peer, ticket));
}

/// Turns an accepted socket into a connection on this thread's reactor: non-blocking,
/// without Nagle's delay (answers are batched by the protocol, one write for all that
/// is ready), and speaking TLS when `tls` is given.
pub(crate) fn prepare(
    stream: std::net::TcpStream,
    tls: Option<&Arc<crate::transport::ServerConfig>>,
) -> std::io::Result<Stream> {
    stream.set_nodelay(true)?;
    Parked::accepted(stream, tls).resume()
}

/// What a connection on a loop holds while it lives, shelved or not: its place in the
/// loop's count and under the server's cap on connections. Dropped, it gives both up.
#[derive(Debug)]
pub(crate) struct Ticket {
    _counted: Counted,
    _pass: Pass,
}

/// Takes a connection off its loop's count when dropped.
#[derive(Debug)]
struct Counted(Arc<LoopStats>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.conns.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Waits until every connection of this loop has closed, or `deadline` has passed.
async fn drain(stats: &LoopStats, deadline: Duration) {
    let waited = tokio::time::timeout(deadline, async {
        while stats.conns.load(Ordering::Relaxed) > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    if waited.is_err() {
        let left = stats.conns.load(Ordering::Relaxed);
        tracing::warn!("shutdown deadline passed with {left} connections open; closing them");
    }
}
