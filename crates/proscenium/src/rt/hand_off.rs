//! Handing one request's work to another thread of the server. The staged model
//! installs, on each of its threads, a way to pass work to its *app* stage, whose
//! turns go to whichever thread of its cluster is free (Node.Scala's dispatch per
//! request): the protocol hands a request there when its own loop already has one in
//! flight, and waits for the answer on the connection's loop, so answers keep their
//! order on the connection. The thread models install one on the thread of upgraded
//! connections, where HTTP/2 connections live: every stream's call goes to a request
//! thread, as a connection's request would. Elsewhere nothing is installed and every
//! request runs where it was read.

use std::any::Any;
use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;

/// Work made on one thread and run on another: its future is made where it runs, so
/// it need not be `Send`.
pub(crate) trait Work: Send {
    /// Makes the work's future, on the thread that runs it.
    fn run(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()>>>;
    /// The work as itself, for the thread that made it to take it back when it is
    /// refused.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
    /// No thread can take the work: it is answered as the server answers overload.
    fn refuse(self: Box<Self>);
}

/// A way to pass work on: it is given back when there is no room.
pub(crate) type HandOff = Rc<dyn Fn(Box<dyn Work>) -> Result<(), Box<dyn Work>>>;

/// When a thread passes a request's work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// When this thread already has a request in flight; what is given back runs here.
    WhenBusy,
    /// Always: this thread runs no handler, and what is given back is refused.
    Always,
}

thread_local! {
    static HAND_OFF: RefCell<Option<(HandOff, Policy)>> = const { RefCell::new(None) };
}

/// Installs this thread's way to pass work on, and when it is taken.
pub(crate) fn install(hand_off: HandOff, policy: Policy) {
    HAND_OFF.with_borrow_mut(|installed| *installed = Some((hand_off, policy)));
}

/// When this thread passes work on (`None`: it cannot).
pub(crate) fn policy() -> Option<Policy> {
    HAND_OFF.with_borrow(|installed| installed.as_ref().map(|(_, policy)| *policy))
}

/// Passes `work` on, or gives it back (nothing installed, or no room).
pub(crate) fn hand_off(work: Box<dyn Work>) -> Result<(), Box<dyn Work>> {
    let hand_off = HAND_OFF.with_borrow(|installed| installed.as_ref().map(|(way, _)| way.clone()));
    match hand_off {
        Some(hand_off) => hand_off(work),
        None => Err(work),
    }
}

/// What a way to a stage on another thread did with work handed to it: the staged
/// server's ways to its script stages, which open once its graph has started.
#[cfg(any(feature = "lua", feature = "cgi"))]
pub(crate) enum Handed<T> {
    /// Queued: the stage runs it.
    Taken,
    /// Refused: the stage's queue is full, or its graph stopped.
    Refused,
    /// Given back: the way is not open yet, and the work runs as without one.
    NotOpen(T),
}
