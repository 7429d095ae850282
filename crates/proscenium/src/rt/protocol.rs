//! What the runtime serves connections with. The runtime accepts connections, gives
//! them to loops or threads, counts them and shuts down; what is said on a connection
//! is the protocol's, which the server hands it (HTTP/1.1: `http::h1::Http1`). This
//! trait is all the runtime knows of it.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;

use bytes::BytesMut;
use tokio::sync::watch;
use tokio::time::Instant;

use super::event_loop::Ticket;
use crate::transport::{Parked, Stream};

/// The kind of thread a protocol's local side serves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    /// An event loop, for as long as the server runs: many connections at once.
    Loop,
    /// A thread-model thread, for one connection.
    Thread,
    /// A staged model's thread: many connections at once, each given to it for as
    /// long as it has requests.
    Stage,
}

/// A protocol, shared by every loop and thread of a server.
pub(crate) trait Protocol: Send + Sync + 'static {
    /// The protocol's side of one loop or thread, made on it.
    type Local: LocalProtocol;

    /// Returns the current thread's side; called inside the thread's runtime, where
    /// it may spawn local tasks for the life of a loop.
    fn local(&self, host: Host) -> Rc<Self::Local>;

    /// Returns the whole answer to a connection refused for overload (no thread free),
    /// written before it is closed.
    fn overloaded(&self, peer: SocketAddr) -> BytesMut;

    /// Whether `read`, what a connection in a thread model's waiting room has sent,
    /// is worth a thread: a whole request, or enough to refuse or stream.
    fn readiness(&self, read: &[u8]) -> Readiness;
}

/// What a waiting connection's bytes are worth (see [`Protocol::readiness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Give it a thread.
    Now,
    /// Not before a line ends: ask again when a read brings a newline.
    AtLine,
    /// Once this many bytes are read (the rest of a small body).
    AtLength(usize),
}

/// A protocol's side of one loop or thread.
pub(crate) trait LocalProtocol: 'static {
    /// Serves one connection on a loop until it closes or leaves its task on its own.
    /// It carries its `ticket` (its place in the loop's count and under the connection
    /// cap) and gives it up by dropping it.
    fn serve(
        self: &Rc<Self>,
        stream: Stream,
        peer: SocketAddr,
        ticket: Ticket,
    ) -> impl Future<Output: 'static> + 'static;

    /// Serves a connection given to a thread by its model's waiting room until it
    /// closes, waits for its next request (then it is handed back), or is upgraded to
    /// another protocol (then what runs next is handed on, to run elsewhere).
    fn serve_visit(self: &Rc<Self>, visit: Visit) -> impl Future<Output = Left> + 'static;

    /// Shutdown has begun: idle connections close, busy ones announce the close.
    fn begin_closing(&self);
}

/// What a connection is when it leaves the thread that served it (see
/// [`LocalProtocol::serve_visit`]).
pub(crate) enum Left {
    Closed,
    /// Waiting for its next request, or the rest of a head: back to the waiting room.
    Waiting(Visit),
    /// Switched to another protocol, which runs next without the thread
    /// (`rt/upgraded.rs`).
    Upgraded(Moved),
}

/// An upgraded connection moved off the thread that switched it, made into its task
/// where it runs, and given the server's shutdown signal (`true` once shutdown has
/// begun; the sender dropped, the server is gone).
pub(crate) type Moved =
    Box<dyn FnOnce(watch::Receiver<bool>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// A connection under a thread model, passed between the waiting room, which holds it
/// while it waits for a request, and a thread, which holds it while it has one
/// (`rt/waiting_room.rs`).
#[derive(Debug)]
pub(crate) struct Visit {
    pub(crate) stream: Parked,
    pub(crate) peer: SocketAddr,
    pub(crate) progress: Progress,
}

/// How far a visiting connection has got.
#[derive(Debug)]
pub(crate) struct Progress {
    /// Requests served on it so far.
    pub(crate) served: u64,
    /// What it has sent and nothing has read yet: the start of its next request.
    pub(crate) read: BytesMut,
    /// When the first of `read`'s bytes came (a request's pace counts from it).
    pub(crate) since: Instant,
    /// When its next request must have begun (`read` empty) or its head be whole.
    pub(crate) due: Instant,
}
