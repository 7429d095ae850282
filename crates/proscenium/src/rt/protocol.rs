//! What the runtime serves connections with. The runtime accepts connections, gives
//! them to loops or threads, counts them and shuts down; what is said on a connection
//! is the protocol's, which the server hands it (HTTP/1.1: `http::h1::Http1`). This
//! trait is all the runtime knows of it.

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;

use bytes::BytesMut;
use tokio::net::TcpStream;

use super::event_loop::Ticket;

/// The kind of thread a protocol's local side serves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    /// An event loop, for as long as the server runs: many connections at once.
    Loop,
    /// A thread-model thread, for one connection.
    Thread,
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
}

/// A protocol's side of one loop or thread.
pub(crate) trait LocalProtocol: 'static {
    /// Serves one connection until it closes or leaves its task on its own. A
    /// connection on a loop carries its `ticket` (its place in the loop's count and
    /// under the connection cap) and gives it up by dropping it.
    fn serve(
        self: &Rc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        ticket: Option<Ticket>,
    ) -> impl Future<Output = ()> + 'static;

    /// Shutdown has begun: idle connections close, busy ones announce the close.
    fn begin_closing(&self);
}
