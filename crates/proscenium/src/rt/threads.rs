//! The thread models: each connection is served from start to finish by one OS thread,
//! whose private single-threaded runtime waits on that connection alone — so a
//! handler's awaits, and its blocking calls, block the thread, as in a servlet
//! container. `thread-pool` runs a fixed set of threads fed by a bounded queue (503
//! past it); `thread-per-conn` starts a thread per connection up to a cap (accepting
//! waits past it).
//!
//! The socket is read through the thread's own reactor rather than with blocking
//! reads, so that every model drives the same connection code; with one socket per
//! reactor the thread sleeps in `epoll_wait` where it would sleep in `read`.
//!
//! Shutdown steps: the acceptor stops; idle connections close; each thread gives its
//! connection until the shutdown deadline, then drops it; the acceptor returns when
//! every thread has ended.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, TrySendError};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use super::LoopShared;
use super::context::{self, LoopContext};
use super::event_loop::{LoopSpec, prepare};
use super::watchdog::LoopStats;
use crate::config::Model;
use crate::http::h1::{conn, overloaded_response};

/// Starts the acceptor of a thread model; it owns the threads it starts.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    spec: LoopSpec,
) -> std::io::Result<JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("proscenium-accept".to_owned())
        .spawn(move || {
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
async fn pool(listener: std::net::TcpListener, spec: &LoopSpec) -> std::io::Result<()> {
    let (tx, rx) = crossbeam_channel::bounded(spec.config.thread_queue.max(1));
    let workers = (0..spec.config.thread_count())
        .map(|id| {
            let (rx, spec) = (rx.clone(), spec.clone());
            std::thread::Builder::new()
                .name(format!("proscenium-worker-{id}"))
                .spawn(move || work(id, &rx, &spec))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    accept(listener, spec, async |stream, peer| {
        match tx.try_send((stream, peer)) {
            Ok(()) => {}
            Err(TrySendError::Full((stream, _)) | TrySendError::Disconnected((stream, _))) => {
                super::overload::note(super::overload::Bound::ThreadQueue);
                refuse(stream).await;
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

/// A pool thread: serves queued connections one at a time until the queue closes.
fn work(id: usize, queue: &Receiver<(std::net::TcpStream, SocketAddr)>, spec: &LoopSpec) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return tracing::error!("worker {id} cannot start: {e}"),
    };
    enter(id, spec);
    while let Ok((stream, peer)) = queue.recv() {
        serve(&runtime, stream, peer, spec);
    }
}

/// `thread-per-conn`: a thread per connection, at most N at once.
async fn per_conn(listener: std::net::TcpListener, spec: &LoopSpec) -> std::io::Result<()> {
    let cap = u32::try_from(spec.config.thread_count()).unwrap_or(u32::MAX);
    let permits = Arc::new(Semaphore::new(cap as usize));
    let mut next_id = 0;
    accept(listener, spec, async |stream, peer| {
        // At the cap, wait for a thread to end before taking the next connection.
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        next_id += 1;
        let spec = spec.clone();
        let id = next_id;
        let started = std::thread::Builder::new()
            .name(format!("proscenium-conn-{id}"))
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => {
                        enter(id, &spec);
                        serve(&runtime, stream, peer, &spec);
                    }
                    Err(e) => tracing::error!("cannot start a connection thread: {e}"),
                }
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
async fn accept(
    listener: std::net::TcpListener,
    spec: &LoopSpec,
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
fn enter(id: usize, spec: &LoopSpec) {
    context::enter(LoopContext {
        id,
        stats: Arc::new(LoopStats::default()),
        pool: spec.pool.clone(),
    });
}

/// Serves one connection on this thread, giving up at the shutdown deadline.
fn serve(
    runtime: &tokio::runtime::Runtime,
    stream: std::net::TcpStream,
    peer: SocketAddr,
    spec: &LoopSpec,
) {
    let shared = Rc::new(LoopShared::new(
        spec.app.clone(),
        spec.config.clone(),
        spec.shutdown.clone(),
    ));
    let mut shutdown = spec.shutdown.clone();
    let deadline = spec.config.timeouts.shutdown;
    let local = tokio::task::LocalSet::new();
    local.block_on(runtime, async move {
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
            () = conn::serve(stream, peer, 0, shared.clone(), None) => {}
            () = give_up => tracing::warn!("shutdown deadline passed; closing the connection from {peer}"),
        }
    });
}

/// Answers a connection no thread can take: 503 with Retry-After, then close.
async fn refuse(stream: std::net::TcpStream) {
    let Ok(mut stream) = prepare(stream) else {
        return;
    };
    let _ = stream.write_all(&overloaded_response()).await;
    let _ = stream.shutdown().await;
}
