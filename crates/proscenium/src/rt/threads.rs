//! The thread models: a connection with a request is served by one OS thread, whose
//! private single-threaded runtime waits on that connection alone — so a handler's
//! awaits, and its blocking calls, block the thread, as in a servlet container.
//! `thread-pool` runs a fixed set of threads fed by a bounded queue (503 past it);
//! `thread-per-conn` starts a thread per connection up to a cap. Under both, a
//! connection that waited for a thread longer than `timeouts.queue` is answered 503
//! and closed.
//!
//! A connection without a request waits in the waiting room (`waiting_room.rs`), on
//! the acceptor's thread, not on a thread of its own: from accept until its first
//! request is there, and again whenever it waits for a next request, or the rest of a
//! head, for more than a moment. So slow, silent and idle clients hold no thread
//! (issue 15); a thread waits on a client only inside a large body or a response.
//! A connection upgraded to another protocol (a WebSocket, HTTP/2) leaves its thread
//! too, for the thread of upgraded connections (`upgraded.rs`), however long it stays
//! open. An HTTP/2 connection's streams come back as calls (`hand_off::Work`): each
//! takes a thread as a connection with a request does, from the same queue (or under
//! the same cap), while the connection's frames are read and written there.
//!
//! The socket is read through the thread's own reactor rather than with blocking
//! reads, so that every model drives the same connection code; with one socket per
//! reactor the thread sleeps in `epoll_wait` where it would sleep in `read`.
//!
//! Shutdown steps: the acceptor stops; waiting connections close (those yet to send a
//! first request get a second); each thread, and the thread of upgraded connections,
//! gives its connections until the shutdown deadline, then drops them; the acceptor
//! returns when every thread has ended.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Semaphore, mpsc};

use super::context::{self, LoopContext};
use super::event_loop::LoopSpec;
use super::hand_off::Work;
use super::protocol::{Host, Left, LocalProtocol, Protocol, Visit};
use super::runtime::spawn_thread;
use super::upgraded::{Upgraded, Upgrades};
use super::waiting_room::{self, Held};
use super::watchdog::LoopStats;
use crate::config::Model;
use crate::transport::Parked;

/// How often a stopping acceptor looks whether every connection has closed.
const DRAIN_POLL: Duration = Duration::from_millis(5);

/// Starts the acceptor of a thread model; it owns the threads it starts.
pub(crate) fn spawn<P: Protocol>(
    listener: std::net::TcpListener,
    spec: LoopSpec<P>,
) -> std::io::Result<JoinHandle<()>> {
    spawn_thread("proscenium-accept".to_owned(), move |runtime| {
        let local = tokio::task::LocalSet::new();
        if let Err(e) = local.block_on(runtime, front(listener, spec)) {
            tracing::error!("acceptor failed: {e}");
        }
    })
}

/// Accepts until shutdown, puts every connection in the waiting room, and takes back
/// those the threads hand back; returns when every connection has closed (or the
/// shutdown deadline passed) and every thread has ended.
async fn front<P: Protocol>(
    listener: std::net::TcpListener,
    spec: LoopSpec<P>,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let (back, mut returned) = mpsc::unbounded_channel();
    let (calls_way, mut calls) = mpsc::unbounded_channel();
    // Its loop id is one past the last a request thread of a pool has.
    let upgraded = Upgraded::start(spec.settings.threads, &spec, calls_way)?;
    let exits = Exits {
        back,
        upgraded: upgraded.way(),
    };
    let threads = Rc::new(Threads::start(&spec, exits)?);
    let mut shutdown = spec.shutdown.clone();
    loop {
        tokio::select! {
            accepted = accept(&listener, &spec) => match accepted {
                Ok(held) => enter(held, &threads, &spec),
                Err(e) => super::dispatcher::pause_after_accept_error(&e).await,
            },
            Some(held) = returned.recv() => enter(held, &threads, &spec),
            Some(work) = calls.recv() => give(Job::Call(work), &threads, &spec),
            _ = shutdown.changed() => break,
        }
    }
    spec.gate.withdraw();
    drop(listener);
    // Waiting connections close or go to a thread within a second; threads give up
    // theirs at the shutdown deadline.
    let deadline = tokio::time::Instant::now() + spec.settings.timeouts.shutdown + DRAIN_POLL;
    while spec.gate.live() > 0 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            Some(held) = returned.recv() => enter(held, &threads, &spec),
            Some(work) = calls.recv() => give(Job::Call(work), &threads, &spec),
            () = tokio::time::sleep(DRAIN_POLL) => {}
        }
    }
    // Streams that ask for a thread from now on are answered 503 at once.
    calls.close();
    while let Ok(work) = calls.try_recv() {
        work.refuse();
    }
    threads.stop().await;
    upgraded.stop();
    Ok(())
}

/// Accepts a connection once the cap has room for it.
pub(crate) async fn accept<P>(
    listener: &tokio::net::TcpListener,
    spec: &LoopSpec<P>,
) -> std::io::Result<Held> {
    let reserved = spec.gate.admit().await;
    let (stream, peer) = listener.accept().await?;
    // Non-blocking already (tokio's), and without Nagle's delay, as `prepare` makes a
    // loop's; left unregistered until it must wait.
    let stream = stream.into_std()?;
    stream.set_nodelay(true)?;
    let stream = Parked::accepted(stream, spec.tls.as_ref());
    Ok(Held::new(stream, peer, reserved.accept(), spec))
}

/// Puts a connection in the waiting room, and gives it to a thread when it has a
/// request.
fn enter<P: Protocol>(held: Held, threads: &Rc<Threads>, spec: &LoopSpec<P>) {
    let (threads, spec) = (threads.clone(), spec.clone());
    tokio::task::spawn_local(async move {
        if let Some(held) = waiting_room::wait(held, &spec).await {
            threads.give(Job::Visit(held), &spec).await;
        }
    });
}

/// Gives `job` to a thread (a task of its own: a thread-per-conn model may wait for one).
fn give<P: Protocol>(job: Job, threads: &Rc<Threads>, spec: &LoopSpec<P>) {
    let (threads, spec) = (threads.clone(), spec.clone());
    tokio::task::spawn_local(async move { threads.give(job, &spec).await });
}

/// What a thread is given.
enum Job {
    /// A connection with a request.
    Visit(Held),
    /// An HTTP/2 stream's call, its connection on the thread of upgraded connections.
    Call(Box<dyn Work>),
}

impl Job {
    /// Serves the job on this thread (on `runtime`), handing its connection on by
    /// `exits` when it leaves the thread open.
    fn run<P: Protocol>(
        self,
        runtime: &tokio::runtime::Runtime,
        spec: &LoopSpec<P>,
        exits: &Exits,
    ) {
        match self {
            Self::Visit(held) => visit(runtime, held, spec, exits),
            Self::Call(work) => {
                tokio::task::LocalSet::new().block_on(runtime, work.run());
            }
        }
    }

    /// Answers a job no thread can take with the overload answer.
    async fn refuse<P: Protocol>(self, protocol: &P) {
        match self {
            Self::Visit(held) => refuse(held.visit, protocol).await,
            Self::Call(work) => work.refuse(),
        }
    }
}

/// A job ready for a pool thread, and since when.
type Queued = (Job, Instant);

/// Where a connection goes when it leaves a thread open: `back` to the waiting room,
/// or, upgraded, to the thread of upgraded connections.
#[derive(Clone)]
struct Exits {
    back: mpsc::UnboundedSender<Held>,
    upgraded: Upgrades,
}

/// The threads of a model, as the acceptor gives them connections.
enum Threads {
    /// `thread-pool`: N threads take connections from a bounded queue, closed (`None`)
    /// when the server stops.
    Pool {
        queue: RefCell<Option<Sender<Queued>>>,
        workers: RefCell<Vec<JoinHandle<()>>>,
    },
    /// `thread-per-conn`: a thread per connection, at most `cap` at once.
    PerConn {
        permits: Arc<Semaphore>,
        cap: u32,
        /// Taken when the server stops: the thread of upgraded connections ends once
        /// no thread can hand it more.
        exits: RefCell<Option<Exits>>,
        started: Cell<usize>,
    },
}

impl Threads {
    /// Starts the model's threads (a pool's); each hands connections on by `exits`.
    fn start<P: Protocol>(spec: &LoopSpec<P>, exits: Exits) -> std::io::Result<Self> {
        if spec.settings.model != Model::ThreadPool {
            let cap = u32::try_from(spec.settings.threads).unwrap_or(u32::MAX);
            return Ok(Self::PerConn {
                permits: Arc::new(Semaphore::new(cap as usize)),
                cap,
                exits: RefCell::new(Some(exits)),
                started: Cell::new(0),
            });
        }
        let (tx, rx) = crossbeam_channel::bounded(spec.settings.thread_queue.max(1));
        let workers = (0..spec.settings.threads)
            .map(|id| {
                let (rx, spec, exits) = (rx.clone(), spec.clone(), exits.clone());
                spawn_thread(format!("proscenium-worker-{id}"), move |runtime| {
                    work(runtime, id, &rx, &spec, &exits);
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self::Pool {
            queue: RefCell::new(Some(tx)),
            workers: RefCell::new(workers),
        })
    }

    /// Gives a job to a thread: queued for the pool (503 when the queue is full), or
    /// a thread of its own (503 when none is free within `timeouts.queue`).
    async fn give<P: Protocol>(&self, job: Job, spec: &LoopSpec<P>) {
        match self {
            Self::Pool { queue, .. } => {
                let sent = match &*queue.borrow() {
                    Some(queue) => queue.try_send((job, Instant::now())),
                    None => Err(TrySendError::Disconnected((job, Instant::now()))),
                };
                if let Err(TrySendError::Full((job, _)) | TrySendError::Disconnected((job, _))) =
                    sent
                {
                    super::overload::note(super::overload::Bound::ThreadQueue);
                    job.refuse(&*spec.protocol).await;
                }
            }
            Self::PerConn {
                permits,
                exits,
                started,
                ..
            } => {
                let waited = tokio::time::timeout(
                    spec.settings.timeouts.queue,
                    permits.clone().acquire_owned(),
                )
                .await;
                let permit = match waited {
                    Ok(Ok(permit)) => permit,
                    Ok(Err(_)) => return job.refuse(&*spec.protocol).await,
                    Err(_) => {
                        super::overload::note(super::overload::Bound::QueueWait);
                        return job.refuse(&*spec.protocol).await;
                    }
                };
                let id = started.get() + 1;
                started.set(id);
                let Some(exits) = exits.borrow().clone() else {
                    return job.refuse(&*spec.protocol).await;
                };
                let spec = spec.clone();
                let thread = spawn_thread(format!("proscenium-conn-{id}"), move |runtime| {
                    enter_thread(id, &spec);
                    job.run(runtime, &spec, &exits);
                    drop(permit);
                });
                if let Err(e) = thread {
                    tracing::error!("cannot start a connection thread: {e}");
                }
            }
        }
    }

    /// Stops giving connections, and waits for every thread to end.
    async fn stop(&self) {
        match self {
            Self::Pool { queue, workers } => {
                queue.borrow_mut().take();
                for worker in workers.take() {
                    let _ = worker.join();
                }
            }
            // Every thread holds a permit until it ends: taking them all waits for the last.
            Self::PerConn {
                permits,
                cap,
                exits,
                ..
            } => {
                exits.take();
                let _ = permits.acquire_many(*cap).await;
            }
        }
    }
}

/// A pool thread: serves queued jobs one at a time until the queue closes; refuses
/// those that waited past `timeouts.queue`.
fn work<P: Protocol>(
    runtime: &tokio::runtime::Runtime,
    id: usize,
    queue: &Receiver<Queued>,
    spec: &LoopSpec<P>,
    exits: &Exits,
) {
    enter_thread(id, spec);
    while let Ok((job, queued)) = queue.recv() {
        if queued.elapsed() > spec.settings.timeouts.queue {
            super::overload::note(super::overload::Bound::QueueWait);
            runtime.block_on(job.refuse(&*spec.protocol));
        } else {
            job.run(runtime, spec, exits);
        }
    }
}

/// Makes this thread look like a loop to the code it runs (blocking pool, counters).
pub(crate) fn enter_thread<P>(id: usize, spec: &LoopSpec<P>) {
    context::enter(LoopContext {
        id,
        stats: Arc::new(LoopStats::default()),
        pools: spec.pools.clone(),
        limits: spec.settings.limits.clone(),
    });
}

/// Serves a connection on this thread until it closes, giving up at the shutdown
/// deadline; until it waits again: then it goes back to the waiting room; or until it
/// is upgraded: then it goes to the thread of upgraded connections.
fn visit<P: Protocol>(
    runtime: &tokio::runtime::Runtime,
    held: Held,
    spec: &LoopSpec<P>,
    exits: &Exits,
) {
    let Held { visit, pass } = held;
    let local = tokio::task::LocalSet::new();
    let left = local.block_on(runtime, async move {
        let shared = spec.protocol.local(Host::Thread);
        serve_visit(&shared, visit, spec).await
    });
    match left {
        Left::Closed => {}
        // The acceptor is gone only once every connection has closed.
        Left::Waiting(visit) => drop(exits.back.send(Held { visit, pass })),
        Left::Upgraded(moved) => exits.upgraded.hand(moved, pass),
    }
}

/// Serves `visit` with this thread's side of the protocol until it leaves the thread
/// (see [`LocalProtocol::serve_visit`]); once shutdown begins, the side closes its
/// connections, and one still open at the shutdown deadline is dropped.
pub(crate) async fn serve_visit<P: Protocol>(
    shared: &Rc<P::Local>,
    visit: Visit,
    spec: &LoopSpec<P>,
) -> Left {
    let peer = visit.peer;
    tokio::select! {
        left = shared.serve_visit(visit) => left,
        () = shutdown_deadline(spec, || shared.begin_closing()) => {
            tracing::warn!("shutdown deadline passed; closing the connection from {peer}");
            Left::Closed
        }
    }
}

/// Resolves at the shutdown deadline, calling `begun` when shutdown begins (or the
/// server that would say so is gone).
pub(crate) async fn shutdown_deadline<P>(spec: &LoopSpec<P>, begun: impl FnOnce()) {
    let mut shutdown = spec.shutdown.clone();
    while !*shutdown.borrow_and_update() {
        if shutdown.changed().await.is_err() {
            break;
        }
    }
    begun();
    tokio::time::sleep(spec.settings.timeouts.shutdown).await;
}

/// Answers a connection no thread can take with the protocol's overload answer, then
/// closes it.
pub(crate) async fn refuse<P: Protocol>(visit: Visit, protocol: &P) {
    let answer = protocol.overloaded(visit.peer);
    let Ok(mut stream) = visit.stream.resume() else {
        return;
    };
    let _ = stream.write_all(&answer).await;
    let _ = stream.shutdown().await;
}
