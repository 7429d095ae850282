//! The thread models: each connection is served from start to finish by one OS thread,
//! whose private single-threaded runtime waits on that connection alone — so a
//! handler's awaits, and its blocking calls, block the thread, as in a servlet
//! container. `thread-pool` runs a fixed set of threads fed by a bounded queue (503
//! past it); `thread-per-conn` starts a thread per connection up to a cap (accepting
//! waits past it). Under both, a connection that waited for a thread longer than
//! `timeouts.queue` is answered 503 and closed: slow clients holding every thread
//! would otherwise leave the queued waiting without end (issue 15).
//!
//! The socket is read through the thread's own reactor rather than with blocking
//! reads, so that every model drives the same connection code; with one socket per
//! reactor the thread sleeps in `epoll_wait` where it would sleep in `read`.
//!
//! Shutdown steps: the acceptor stops; idle connections close; each thread gives its
//! connection until the shutdown deadline, then drops it; the acceptor returns when
//! every thread has ended.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, TrySendError};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use super::context::{self, LoopContext};
use super::event_loop::{LoopSpec, prepare};
use super::protocol::{Host, LocalProtocol, Protocol};
use super::runtime::spawn_thread;
use super::watchdog::LoopStats;
use crate::config::Model;

/// Starts the acceptor of a thread model; it owns the threads it starts.
pub(crate) fn spawn<P: Protocol>(
    listener: std::net::TcpListener,
    spec: LoopSpec<P>,
) -> std::io::Result<JoinHandle<()>> {
    spawn_thread("proscenium-accept".to_owned(), move |runtime| {
        let result = match spec.config.model {
            Model::ThreadPool => runtime.block_on(pool(listener, &spec)),
            _ => runtime.block_on(per_conn(listener, &spec)),
        };
        if let Err(e) = result {
            tracing::error!("acceptor failed: {e}");
        }
    })
}

/// `thread-pool`: N threads take connections from a bounded queue.
async fn pool<P: Protocol>(
    listener: std::net::TcpListener,
    spec: &LoopSpec<P>,
) -> std::io::Result<()> {
    let (tx, rx) = crossbeam_channel::bounded(spec.config.thread_queue.max(1));
    let workers = (0..spec.config.thread_count())
        .map(|id| {
            let (rx, spec) = (rx.clone(), spec.clone());
            spawn_thread(format!("proscenium-worker-{id}"), move |runtime| {
                work(runtime, id, &rx, &spec);
            })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    accept(listener, spec, async |stream, peer| {
        match tx.try_send((stream, peer, Instant::now())) {
            Ok(()) => {}
            Err(TrySendError::Full((stream, ..)) | TrySendError::Disconnected((stream, ..))) => {
                super::overload::note(super::overload::Bound::ThreadQueue);
                refuse(stream, &spec.protocol.overloaded(peer)).await;
            }
        }
    })
    .await?;
    drop(tx);
    for worker in workers {
        let _ = worker.join();
    }
    Ok(())
}

/// A connection waiting for a pool thread, and since when.
type Queued = (std::net::TcpStream, SocketAddr, Instant);

/// A pool thread: serves queued connections one at a time until the queue closes;
/// refuses those that waited past `timeouts.queue`.
fn work<P: Protocol>(
    runtime: &tokio::runtime::Runtime,
    id: usize,
    queue: &Receiver<Queued>,
    spec: &LoopSpec<P>,
) {
    enter(id, spec);
    while let Ok((stream, peer, queued)) = queue.recv() {
        if queued.elapsed() > spec.config.timeouts.queue {
            super::overload::note(super::overload::Bound::QueueWait);
            runtime.block_on(refuse(stream, &spec.protocol.overloaded(peer)));
        } else {
            serve(runtime, stream, peer, spec);
        }
    }
}

/// `thread-per-conn`: a thread per connection, at most N at once.
async fn per_conn<P: Protocol>(
    listener: std::net::TcpListener,
    spec: &LoopSpec<P>,
) -> std::io::Result<()> {
    let cap = u32::try_from(spec.config.thread_count()).unwrap_or(u32::MAX);
    let permits = Arc::new(Semaphore::new(cap as usize));
    let mut next_id = 0;
    accept(listener, spec, async |stream, peer| {
        // At the cap, wait for a thread to end before taking the next connection, for
        // no longer than the queue timeout.
        let permit =
            match tokio::time::timeout(spec.config.timeouts.queue, permits.clone().acquire_owned())
                .await
            {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => return,
                Err(_) => {
                    super::overload::note(super::overload::Bound::QueueWait);
                    return refuse(stream, &spec.protocol.overloaded(peer)).await;
                }
            };
        next_id += 1;
        let spec = spec.clone();
        let id = next_id;
        let started = spawn_thread(format!("proscenium-conn-{id}"), move |runtime| {
            enter(id, &spec);
            serve(runtime, stream, peer, &spec);
            drop(permit);
        });
        if let Err(e) = started {
            tracing::error!("cannot start a connection thread: {e}");
        }
    })
    .await?;
    // Every thread holds a permit until it ends: taking them all waits for the last.
    let _ = permits.acquire_many(cap).await;
    Ok(())
}

/// Accepts until shutdown, handing each connection to `give`.
async fn accept<P>(
    listener: std::net::TcpListener,
    spec: &LoopSpec<P>,
    mut give: impl AsyncFnMut(std::net::TcpStream, SocketAddr),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let mut shutdown = spec.shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted.and_then(|(s, peer)| Ok((s.into_std()?, peer))) {
                Ok((stream, peer)) => give(stream, peer).await,
                Err(e) => super::dispatcher::pause_after_accept_error(&e).await,
            },
            _ = shutdown.changed() => return Ok(()),
        }
    }
}

/// Makes this thread look like a loop to the code it runs (blocking pool, counters).
fn enter<P>(id: usize, spec: &LoopSpec<P>) {
    context::enter(LoopContext {
        id,
        stats: Arc::new(LoopStats::default()),
        pools: spec.pools.clone(),
    });
}

/// Serves one connection on this thread, giving up at the shutdown deadline.
fn serve<P: Protocol>(
    runtime: &tokio::runtime::Runtime,
    stream: std::net::TcpStream,
    peer: SocketAddr,
    spec: &LoopSpec<P>,
) {
    let mut shutdown = spec.shutdown.clone();
    let deadline = spec.config.timeouts.shutdown;
    let local = tokio::task::LocalSet::new();
    local.block_on(runtime, async move {
        let shared = spec.protocol.local(Host::Thread);
        let stream = match prepare(stream) {
            Ok(stream) => stream,
            Err(e) => return tracing::warn!("cannot serve connection from {peer}: {e}"),
        };
        let give_up = async {
            while !*shutdown.borrow_and_update() {
                if shutdown.changed().await.is_err() {
                    break;
                }
            }
            shared.begin_closing();
            tokio::time::sleep(deadline).await;
        };
        tokio::select! {
            () = shared.serve(stream, peer, None) => {}
            () = give_up => tracing::warn!("shutdown deadline passed; closing the connection from {peer}"),
        }
    });
}

/// Answers a connection no thread can take with the protocol's `answer`, then closes.
async fn refuse(stream: std::net::TcpStream, answer: &[u8]) {
    let Ok(mut stream) = prepare(stream) else {
        return;
    };
    let _ = stream.write_all(answer).await;
    let _ = stream.shutdown().await;
}
