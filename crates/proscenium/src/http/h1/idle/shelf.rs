//! The shelf: a loop's long-idle keep-alive connections, put away without a task (the
//! last step of the idle policy, `idle`).
//!
//! A connection idle for [`SHELVE_AFTER`] gives up what tokio holds for it — its task,
//! its registration with the reactor — and its timer, most of what an idle connection
//! costs: the shelf keeps only its socket (with its TLS session, if it speaks TLS),
//! peer, count of requests and place in the loop's count, and watches every shelved
//! socket with one epoll instance of its own, itself a single source in tokio's reactor. When a shelved socket turns readable
//! (a request, or the client closing) the connection is taken down and served by a new
//! task; when its idle deadline passes, or shutdown begins, it is closed. Memory per
//! idle connection, with and without: docs/performance.md.
//!
//! Deadlines arrive in the order connections are shelved (each is the moment its
//! connection went idle plus the same idle timeout, and it is shelved the same
//! `SHELVE_AFTER` later), so a queue in shelving order serves as the timer: one timer
//! for the whole shelf, at the front's deadline. Entries of connections taken down
//! meanwhile stay in the queue until their time and are skipped then.
//!
//! Freed, the tasks' memory stays with the allocator, which hands it to the next
//! connections' tasks but not back to the system (glibc kept all of it:
//! docs/performance.md, idle connections). So once [`TRIM_BATCH`] connections are shelved
//! the tending task asks the allocator, a second later, to give its free pages back —
//! at most once a second.
//!
//! Registering the epoll instance with tokio and trimming the allocator are the
//! module's two `unsafe` calls; the SAFETY proof of each is beside it.

#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Token};
use slab::Slab;
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

use super::super::conn;
use super::super::service::Http1Loop;
use crate::rt::{Sleeping, Ticket};
use crate::transport::Parked;

/// How long a keep-alive connection stays idle on its task before it is shelved. Long
/// enough that a connection in use — a browser's between two clicks, a client's under
/// load — is not put away and taken down again (four `epoll_ctl` calls and a task
/// spawn, about 10 µs); short enough that a server's idle connections are shelved
/// well within their idle timeout.
pub(crate) const SHELVE_AFTER: Duration = Duration::from_secs(1);

/// Readiness events taken from the shelf's epoll instance at a time.
const EVENTS: usize = 256;

/// Shelved connections after which the allocator is trimmed (see the module), and the
/// wait before: the rest of a burst is shelved meanwhile and trimmed with it.
const TRIM_BATCH: usize = 256;
const TRIM_DELAY: Duration = Duration::from_secs(1);

/// What a shelved connection keeps.
pub(crate) struct Shelved {
    /// Its socket, and its TLS session if it speaks TLS (an idle connection has sent all
    /// it had, and read all its client sent).
    pub(crate) stream: Parked,
    pub(crate) peer: SocketAddr,
    /// Requests served so far (the per-connection maximum still counts them).
    pub(crate) served: u64,
    pub(crate) ticket: Ticket,
}

/// One loop's shelf (see the module). Lives in the loop's [`Http1Loop`]; its tending
/// task holds the epoll instance.
#[derive(Debug)]
pub(crate) struct Shelf {
    registry: mio::Registry,
    /// Shelved connections, each with the generation it was shelved in.
    shelved: RefCell<Slab<(Shelved, u32)>>,
    /// Idle deadlines in shelving order.
    due: RefCell<VecDeque<Due>>,
    generation: Cell<u32>,
    open: Cell<bool>,
    /// Connections shelved since the allocator was last trimmed, and when it is next.
    untrimmed: Cell<usize>,
    trim_at: Cell<Option<Instant>>,
    /// The tending task, woken when it has a new time to keep: the queue of deadlines
    /// stops being empty, or a trim is due.
    tender: RefCell<Option<Waker>>,
}

#[derive(Debug)]
struct Due {
    at: Instant,
    key: usize,
    generation: u32,
}

impl std::fmt::Debug for Shelved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shelved")
            .field("peer", &self.peer)
            .field("served", &self.served)
            .finish_non_exhaustive()
    }
}

impl Shelf {
    /// Gives the current loop a shelf and spawns the task that tends it.
    ///
    /// # Errors
    ///
    /// When no epoll instance can be made (out of file descriptors): the loop then
    /// keeps its idle connections on their tasks.
    pub(crate) fn start(shared: &Rc<Http1Loop>) -> std::io::Result<()> {
        let poll = mio::Poll::new()?;
        let shelf = Self {
            registry: poll.registry().try_clone()?,
            shelved: RefCell::default(),
            due: RefCell::default(),
            generation: Cell::new(0),
            open: Cell::new(true),
            untrimmed: Cell::new(0),
            trim_at: Cell::new(None),
            tender: RefCell::default(),
        };
        // SAFETY: `mio::Poll` owns its epoll descriptor for as long as it lives and
        // always returns that descriptor; the `AsyncFd` owns the `Poll`, so the
        // descriptor stays open and the same until the `AsyncFd` is dropped.
        let poll = unsafe { AsyncFd::register_with_interest(poll, tokio::io::Interest::READABLE) }
            .map_err(std::io::Error::from)?;
        if shared.shelf().set(shelf).is_err() {
            return Err(std::io::Error::other("the loop has a shelf already"));
        }
        tokio::task::spawn_local(tend(shared.clone(), poll));
        Ok(())
    }

    /// Shelves an idle connection until it turns readable or `deadline` passes. A
    /// socket that cannot be watched is closed (it was idle: a client may expect that
    /// of any keep-alive connection).
    pub(crate) fn put(&self, conn: Shelved, deadline: Instant) {
        if !self.is_open() {
            return;
        }
        let generation = self.generation.get().wrapping_add(1);
        self.generation.set(generation);
        let mut shelved = self.shelved.borrow_mut();
        let entry = shelved.vacant_entry();
        let key = entry.key();
        let fd = conn.stream.tcp.as_raw_fd();
        if let Err(e) = self
            .registry
            .register(&mut SourceFd(&fd), Token(key), Interest::READABLE)
        {
            return tracing::debug!("closing idle connection from {}: {e}", conn.peer);
        }
        entry.insert((conn, generation));
        let mut due = self.due.borrow_mut();
        due.push_back(Due {
            at: deadline,
            key,
            generation,
        });
        let untrimmed = self.untrimmed.get() + 1;
        self.untrimmed.set(untrimmed);
        let trim_now_due = untrimmed == TRIM_BATCH && self.trim_at.get().is_none();
        if trim_now_due {
            self.trim_at.set(Some(Instant::now() + TRIM_DELAY));
        }
        if (due.len() == 1 || trim_now_due)
            && let Some(tender) = self.tender.borrow_mut().take()
        {
            tender.wake();
        }
    }

    /// The next time the tending task must act: a deadline or a trim.
    fn next_time(&self) -> Option<Instant> {
        let due = self.due.borrow().front().map(|due| due.at);
        match (due, self.trim_at.get()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Trims the allocator when it is time.
    fn trim_if_due(&self, now: Instant) {
        if self.trim_at.get().is_some_and(|at| at <= now) {
            self.trim_at.set(None);
            self.untrimmed.set(0);
            release_free_memory();
        }
    }

    /// Takes down the connection of a readiness event.
    ///
    /// A token is the connection's key in the slab, and always names the connection
    /// that registered it: a closed socket leaves the epoll set with its pending
    /// events, and no connection is shelved while a batch of events is handled.
    fn take_down(&self, token: Token) -> Option<Shelved> {
        let (conn, _) = self.shelved.borrow_mut().try_remove(token.0)?;
        // The socket lives on, in tokio's reactor: it must leave this epoll set.
        let _ = self
            .registry
            .deregister(&mut SourceFd(&conn.stream.tcp.as_raw_fd()));
        Some(conn)
    }

    /// Closes the connections whose idle deadline has passed.
    fn expire(&self, now: Instant) {
        let mut due = self.due.borrow_mut();
        let mut shelved = self.shelved.borrow_mut();
        while let Some(front) = due.front() {
            if front.at > now {
                return;
            }
            if shelved
                .get(front.key)
                .is_some_and(|(_, g)| *g == front.generation)
            {
                // Closing the socket takes it out of the epoll set too.
                shelved.remove(front.key);
            }
            due.pop_front();
        }
    }

    /// Closes every shelved connection (shutdown: they are idle), and the shelf.
    fn clear(&self) {
        self.open.set(false);
        self.shelved.borrow_mut().clear();
        self.due.borrow_mut().clear();
    }

    /// Whether connections may be shelved: not once the shelf has failed or closed.
    pub(crate) fn is_open(&self) -> bool {
        self.open.get()
    }
}

/// What woke the tending task.
enum Wake {
    Closing,
    Readable,
    Time,
}

/// Tends the shelf of `shared`'s loop: takes down connections that turn readable,
/// closes those whose deadline passes, and all of them when shutdown begins.
async fn tend(shared: Rc<Http1Loop>, mut poll: AsyncFd<mio::Poll>) {
    let Some(shelf) = shared.shelf().get() else {
        return;
    };
    let mut events = Events::with_capacity(EVENTS);
    let mut timer = Box::pin(tokio::time::sleep_until(Instant::now()));
    let mut sleeping = Sleeping::new(shared.sleepers());
    loop {
        let wake = poll_fn(|cx| {
            if shared.closing() {
                return Poll::Ready(Ok(Wake::Closing));
            }
            while let Poll::Ready(ready) = poll.poll_read_ready_mut(cx) {
                let mut guard = match ready {
                    Ok(guard) => guard,
                    Err(e) => return Poll::Ready(Err(e)),
                };
                let polled = guard.try_io(|poll| {
                    poll.get_mut().poll(&mut events, Some(Duration::ZERO))?;
                    if events.is_empty() {
                        Err(std::io::ErrorKind::WouldBlock.into())
                    } else {
                        Ok(())
                    }
                });
                if let Ok(result) = polled {
                    return Poll::Ready(result.map(|()| Wake::Readable));
                }
            }
            if let Some(at) = shelf.next_time() {
                if timer.deadline() != at {
                    timer.as_mut().reset(at);
                }
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Ok(Wake::Time));
                }
            }
            shelf.tender.borrow_mut().replace(cx.waker().clone());
            sleeping.park(cx.waker());
            Poll::Pending
        })
        .await;
        match wake {
            Ok(Wake::Closing) => return shelf.clear(),
            Ok(Wake::Readable) => {
                for event in &events {
                    if let Some(conn) = shelf.take_down(event.token()) {
                        resume(conn, &shared);
                    }
                }
            }
            Ok(Wake::Time) => {
                let now = Instant::now();
                shelf.expire(now);
                shelf.trim_if_due(now);
            }
            Err(e) => {
                // The loop keeps serving; shelved connections close, idle ones stay
                // on their tasks from now on.
                tracing::error!("the loop's shelf of idle connections failed: {e}");
                return shelf.clear();
            }
        }
    }
}

/// Asks the allocator to give the system back the free memory it holds (glibc; other
/// allocators and C libraries release memory on their own terms).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let started = std::time::Instant::now();
        // SAFETY: `malloc_trim` takes no pointers and locks each arena itself; glibc
        // allows it from any thread at any time.
        unsafe { nix::libc::malloc_trim(0) };
        tracing::debug!(
            "gave free memory back to the system in {:?}",
            started.elapsed()
        );
    }
}

/// Serves a connection taken down from the shelf on a new task.
fn resume(conn: Shelved, shared: &Rc<Http1Loop>) {
    let peer = conn.peer;
    match conn.stream.resume() {
        Ok(stream) => {
            let start = conn::Start::Loop {
                served: conn.served,
                ticket: conn.ticket,
            };
            tokio::task::spawn_local(conn::serve(stream, peer, shared.current(), start));
        }
        Err(e) => tracing::warn!("cannot serve connection from {peer} again: {e}"),
    }
}
