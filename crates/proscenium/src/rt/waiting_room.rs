//! A thread model's waiting room: where its connections wait, without a thread, for a
//! request worth one. The acceptor's thread runs it (its own single-threaded runtime,
//! a task per waiting connection). A new connection enters at accept; a connection a
//! thread has served goes back in when it waits for its next request, or the rest of
//! a head, for more than a moment. It leaves for a thread once the protocol finds in
//! what it sent a whole request (with its body, when small) or something to refuse;
//! or is closed when its next request is not begun by its due time; or goes to a
//! thread at its due time with what it has, for the thread to refuse (408).
//!
//! Without it a thread was held from accept to close: every silent, slow or idle
//! client held one, and a few hundred slow clients held every thread of a pool, so the
//! normal clients queued behind them until they were refused (issue 15). Servlet
//! containers do the same (Jetty reads a request's head without a thread).

use std::future::poll_fn;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::time::Instant;

use super::RuntimeSettings;
use super::event_loop::LoopSpec;
use super::overload::Pass;
use super::pace::Pace;
use super::protocol::{Progress, Protocol, Readiness, Visit};
use crate::transport::{Parked, Stream};

/// How long a connection that has had no request yet may take to send its first when
/// shutdown begins: one already on the wire arrives well within it.
const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(1);

/// The least room a read asks for.
const READ_CHUNK: usize = 4 * 1024;

/// A connection under a thread model, and its place under the connection cap, held
/// from accept to close wherever it is.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) visit: Visit,
    pub(crate) pass: Pass,
}

impl Held {
    /// A connection just accepted: its first request is due a header timeout from now.
    pub(crate) fn new<P>(stream: Parked, peer: SocketAddr, pass: Pass, spec: &LoopSpec<P>) -> Self {
        let now = Instant::now();
        let progress = Progress {
            served: 0,
            read: BytesMut::new(),
            since: now,
            due: now + spec.settings.timeouts.header,
        };
        let visit = Visit {
            stream,
            peer,
            progress,
        };
        Self { visit, pass }
    }
}

/// Waits until `held` has a request worth a thread (returned), or closes it (`None`).
pub(crate) async fn wait<P: Protocol>(held: Held, spec: &LoopSpec<P>) -> Option<Held> {
    let Held { visit, pass } = held;
    let Visit {
        mut stream,
        peer,
        progress,
    } = visit;
    let mut waiting = Waiting::new(progress, spec);
    // A request mostly comes with its connection, or is what brought it back: what is
    // there already is read before the connection is registered with the reactor, and
    // one with its request leaves without ever being registered (two epoll_ctl calls
    // and a turn of the reactor saved on each connection).
    if !waiting.is_ready() {
        let before = waiting.progress.read.len();
        let got = stream.read_now(&mut waiting.progress.read, READ_CHUNK);
        if came(got)? {
            waiting.arrived(before);
        }
    }
    let stream = if waiting.is_ready() {
        stream
    } else {
        let mut stream = stream
            .resume()
            .inspect_err(|e| tracing::debug!("cannot wait on the connection from {peer}: {e}"))
            .ok()?;
        waiting.until_ready(&mut stream, spec).await?;
        stream
            .park()
            .inspect_err(|e| tracing::debug!("closing the connection from {peer}: {e}"))
            .ok()?
    };
    let visit = Visit {
        stream,
        peer,
        progress: waiting.progress,
    };
    Some(Held { visit, pass })
}

/// A connection's progress in the waiting room, and what it needs to be ready.
struct Waiting<'a, P> {
    progress: Progress,
    ready: Readiness,
    protocol: &'a P,
    settings: &'a RuntimeSettings,
}

impl<'a, P: Protocol> Waiting<'a, P> {
    fn new(progress: Progress, spec: &'a LoopSpec<P>) -> Self {
        let ready = if progress.read.is_empty() {
            Readiness::AtLine
        } else {
            spec.protocol.readiness(&progress.read)
        };
        Self {
            progress,
            ready,
            protocol: &spec.protocol,
            settings: &spec.settings,
        }
    }

    fn is_ready(&self) -> bool {
        match self.ready {
            Readiness::Now => true,
            Readiness::AtLength(n) => self.progress.read.len() >= n,
            Readiness::AtLine => false,
        }
    }

    /// Reads until the connection is ready (`Some`), or is to close (`None`): the
    /// client closed, or its next request did not begin by its due time.
    async fn until_ready(&mut self, stream: &mut Stream, spec: &LoopSpec<P>) -> Option<()> {
        let pace = Pace::new(&self.settings.limits, &self.settings.timeouts);
        let mut shutdown = spec.shutdown.clone();
        let mut closing = false;
        // Shutdown began, or the server that would say so is gone.
        let mut ended = false;
        while !self.is_ready() {
            let p = &mut self.progress;
            if !closing && (ended || *shutdown.borrow_and_update()) {
                closing = true;
                if p.read.is_empty() && p.served > 0 {
                    return None;
                }
                p.due = p.due.min(Instant::now() + FIRST_REQUEST_GRACE);
            }
            let deadline = if p.read.is_empty() {
                p.due
            } else {
                pace.bound(p.due, p.since, p.read.len() as u64)
            };
            let before = p.read.len();
            tokio::select! {
                // Room is taken only once there are bytes: an idle connection here
                // holds no buffer.
                got = poll_fn(|cx| stream.poll_read_into(cx, &mut p.read, READ_CHUNK)) => {
                    if came(got)? {
                        self.arrived(before);
                    }
                },
                () = tokio::time::sleep_until(deadline) => {
                    // With part of a request, a thread refuses it (408).
                    return (!p.read.is_empty()).then_some(());
                }
                changed = shutdown.changed(), if !closing => ended |= changed.is_err(),
            }
        }
        Some(())
    }

    /// Notes the bytes a read appended to `read` past `before`.
    fn arrived(&mut self, before: usize) {
        let p = &mut self.progress;
        if before == 0 {
            // The next request has begun: its head is due a header timeout from now
            // (a first request's stays due from the accept).
            p.since = Instant::now();
            if p.served > 0 {
                p.due = p.since + self.settings.timeouts.header;
            }
        }
        // A head can only end with a line, and the rest of a small body is counted,
        // not parsed: a client sending a byte at a time costs a parse per line, not
        // per byte.
        let line = p.read[before..].contains(&b'\n');
        let long = p.read.len() >= self.settings.limits.max_head;
        if self.ready == Readiness::AtLine && (line || long) {
            self.ready = self.protocol.readiness(&p.read);
        }
    }
}

/// Whether a read brought bytes (`Some(false)`: none yet; `None`: the connection is to
/// close: the client closed, or the socket failed).
fn came(got: std::io::Result<usize>) -> Option<bool> {
    match got {
        Ok(0) => None,
        Ok(_) => Some(true),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Some(false),
        Err(_) => None,
    }
}
