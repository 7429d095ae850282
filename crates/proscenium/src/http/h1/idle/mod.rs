//! The idle policy: what a keep-alive connection does between requests.
//!
//! It waits on its socket under the idle timeout, and closes when shutdown begins
//! (unless its first request has yet to come: that may be on the wire, so it gets a
//! short grace). A connection that has served more than one request keeps its buffers
//! for [`HOLD_BUFFERS`], then frees them; others free them at once. Idle keep-alive
//! connections are most of a busy server's connections, and their buffers were most of
//! what each cost (docs/performance.md, idle connections); shelving them cuts the rest. A connection in use comes
//! back sooner and finds its buffers, grown to its answers: freeing them at every wait
//! cost a malloc, a free and a chain of reallocs per request or pipelined batch (see
//! docs/performance.md).
//!
//! On a loop, a connection idle for [`SHELVE_AFTER`] leaves its task for the loop's
//! [`Shelf`]. On a thread, one waiting for [`HAND_BACK_AFTER`] leaves the thread for
//! its model's waiting room (`rt/waiting_room.rs`); `conn` does that wait itself.

mod shelf;

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::task::Poll;
use std::time::Duration;

use bytes::BytesMut;
use tokio::time::Instant;

pub(crate) use self::shelf::Shelf;
use self::shelf::{SHELVE_AFTER, Shelved};
use super::io::Socket;
use super::service::Http1Loop;
use crate::rt::{Sleeping, Ticket};
use crate::transport::Stream;

/// How long a connection accepted just before shutdown, with no request yet, may take
/// to send its first: a request already on the wire arrives well within it, while a
/// silent preconnect holds up shutdown no longer.
const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(1);

/// How long a connection on a thread waits for its next request, or the rest of a
/// head, before it goes back to its model's waiting room: long enough for a client
/// that sends its requests back to back to keep its thread, short enough that a client
/// idle or slow holds no thread to speak of (issue 15).
pub(super) const HAND_BACK_AFTER: Duration = Duration::from_millis(100);

/// How long an idle connection keeps its buffers before it frees them.
const HOLD_BUFFERS: Duration = Duration::from_millis(50);

/// What an idle connection's wait ended with.
pub(super) enum Idle {
    Readable,
    Close,
    /// Idle long enough to be shelved.
    Shelve,
}

/// Returns when a connection that has served `served` requests, idle from now, must
/// have its next request; `None` when it is to close at once (shutdown has begun).
pub(super) fn deadline(shared: &Http1Loop, served: u64) -> Option<Instant> {
    let timeouts = &shared.timeouts;
    if !shared.closing() {
        return Some(Instant::now() + timeouts.idle);
    }
    // A connection that has not had its first request yet is no idle keep-alive: its
    // request may be on the way (accepted just as shutdown began).
    (served == 0).then(|| Instant::now() + FIRST_REQUEST_GRACE.min(timeouts.header))
}

/// A connection's state that its idle wait works on.
pub(super) struct Waiting<'a> {
    pub(super) socket: &'a mut Socket,
    pub(super) rbuf: &'a mut BytesMut,
    pub(super) wbuf: &'a mut BytesMut,
    pub(super) shared: &'a Http1Loop,
    pub(super) served: u64,
}

/// Waits until an idle connection has bytes to read; says when it should close
/// instead (idle timeout at `deadline`, shutdown), or be shelved (idle for
/// [`SHELVE_AFTER`], on a loop with a shelf).
///
/// A `poll_fn`, not an `async fn`: it is what an idle connection's task holds.
pub(super) fn wait(
    waiting: Waiting<'_>,
    deadline: Instant,
) -> impl Future<Output = std::io::Result<Idle>> + '_ {
    let Waiting {
        socket,
        rbuf,
        wbuf,
        shared,
        served,
    } = waiting;
    // A connection still in its TLS handshake keeps its task: its deadline is the
    // handshake's (a first head's), not an idle timeout the shelf counts from.
    let may_shelve = shared.shelf().get().is_some_and(Shelf::is_open)
        && shared.timeouts.idle > SHELVE_AFTER
        && !socket.stream.is_handshaking();
    // `deadline` is the idle timeout from now (for a connection that may be shelved,
    // or has served more than one request): no clock read for the others.
    let began = deadline - shared.timeouts.idle;
    let end = if may_shelve {
        began + SHELVE_AFTER
    } else {
        deadline
    };
    let Socket { stream, timer, .. } = socket;
    let mut sleeping = Sleeping::new(shared.sleepers());
    let mut waited = false;
    let mut graced = false;
    let holds = |rbuf: &BytesMut, wbuf: &BytesMut, stream: &Stream| {
        rbuf.capacity() + wbuf.capacity() > 0 || stream.holds_buffers()
    };
    let free = |rbuf: &mut BytesMut, wbuf: &mut BytesMut, stream: &mut Stream| {
        *rbuf = BytesMut::new();
        *wbuf = BytesMut::new();
        stream.free_buffers();
    };
    poll_fn(move |cx| {
        if let Poll::Ready(ready) = stream.poll_read_ready(cx) {
            return Poll::Ready(ready.map(|()| Idle::Readable));
        }
        if !waited {
            waited = true;
            // A connection on its first request may be one of a storm of new ones,
            // each asking once: it keeps nothing.
            let first = if served > 1 && holds(rbuf, wbuf, stream) {
                (began + HOLD_BUFFERS).min(end)
            } else {
                free(rbuf, wbuf, stream);
                end
            };
            timer.as_mut().reset(first);
        }
        if shared.closing() && !graced {
            if served > 0 {
                return Poll::Ready(Ok(Idle::Close));
            }
            // No request yet: the grace for a first request starts now, and the
            // connection is not shelved.
            graced = true;
            free(rbuf, wbuf, stream);
            let grace = Instant::now() + FIRST_REQUEST_GRACE;
            timer.as_mut().reset(grace.min(deadline));
        }
        while timer.as_mut().poll(cx).is_ready() {
            if holds(rbuf, wbuf, stream) {
                free(rbuf, wbuf, stream);
                timer.as_mut().reset(end);
                continue;
            }
            let shelve = may_shelve && !graced && !shared.closing();
            return Poll::Ready(Ok(if shelve { Idle::Shelve } else { Idle::Close }));
        }
        sleeping.park(cx.waker());
        Poll::Pending
    })
}

/// Gives a connection, idle since before `deadline - the idle timeout`, to its loop's
/// shelf.
pub(super) fn shelve(
    stream: Stream,
    peer: SocketAddr,
    served: u64,
    shared: &Http1Loop,
    ticket: Option<Ticket>,
    deadline: Instant,
) {
    let (Some(shelf), Some(ticket)) = (shared.shelf().get(), ticket) else {
        return;
    };
    match stream.park() {
        Ok(stream) => shelf.put(
            Shelved {
                stream,
                peer,
                served,
                ticket,
            },
            deadline,
        ),
        Err(e) => tracing::debug!("closing idle connection from {peer}: {e}"),
    }
}
