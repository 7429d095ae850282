//! One HTTP/2 connection: the handshake, then its streams accepted and each served by a
//! task of its own on the connection's loop (or thread), until the client goes, the
//! connection idles past the idle timeout, or shutdown begins — then GOAWAY, and the
//! streams in flight finish.

use std::cell::Cell;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::{Instant, Sleep};

use super::rewind::Rewind;
use super::stream;
use crate::http::h1::Http1Loop;
use crate::rt::Sleeping;
use crate::transport::Stream;

/// What the connection's wait ended with.
// Lives only on the stack between a wait and its handling: boxing the large variant
// would cost an allocation per stream for nothing.
#[allow(clippy::large_enum_variant)]
enum Event {
    Stream(
        http::Request<h2::RecvStream>,
        h2::server::SendResponse<Bytes>,
    ),
    /// Shutdown began, or the connection idled long enough: no new streams.
    GoAway,
    Ended(Result<(), h2::Error>),
}

/// Serves HTTP/2 on `stream`, whose first bytes (`read`) were already taken from it.
pub(crate) async fn serve(stream: Stream, read: Bytes, peer: SocketAddr, shared: Rc<Http1Loop>) {
    let spec = &shared.http2;
    let limits = &shared.limits;
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(spec.max_concurrent_streams)
        .initial_window_size(spec.stream_window)
        .initial_connection_window_size(spec.connection_window)
        .max_frame_size(spec.max_frame_size)
        .max_header_list_size(u32::try_from(limits.max_head).unwrap_or(u32::MAX))
        .max_send_buffer_size(spec.send_buffer)
        .handshake::<_, Bytes>(Rewind::new(read, stream));
    // The client's preface and SETTINGS come within a header timeout, as a head would.
    let deadline = Instant::now() + shared.timeouts.header;
    let mut conn = match tokio::time::timeout_at(deadline, handshake).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => return tracing::debug!("HTTP/2 handshake with {peer} failed: {e}"),
        Err(_) => return tracing::debug!("HTTP/2 handshake with {peer} timed out"),
    };
    let streams = Rc::new(Streams::default());
    let idle_timeout = shared.timeouts.idle;
    let mut idle = Box::pin(tokio::time::sleep(idle_timeout));
    let mut sleeping = Sleeping::new(shared.sleepers());
    let mut going_away = false;
    loop {
        let event = poll_fn(|cx| {
            if !going_away && (shared.closing() || streams.idled(&mut idle, idle_timeout, cx)) {
                return Poll::Ready(Event::GoAway);
            }
            match conn.poll_accept(cx) {
                Poll::Ready(Some(Ok((req, respond)))) => Poll::Ready(Event::Stream(req, respond)),
                Poll::Ready(Some(Err(e))) => Poll::Ready(Event::Ended(Err(e))),
                Poll::Ready(None) => Poll::Ready(Event::Ended(Ok(()))),
                Poll::Pending => {
                    sleeping.park(cx.waker());
                    Poll::Pending
                }
            }
        })
        .await;
        match event {
            Event::Stream(req, respond) => {
                let open = Streams::enter(&streams);
                let shared = shared.clone();
                tokio::task::spawn_local(async move {
                    stream::serve(req, respond, peer, &shared).await;
                    drop(open);
                });
            }
            Event::GoAway => {
                going_away = true;
                conn.graceful_shutdown();
            }
            Event::Ended(Ok(())) => break,
            Event::Ended(Err(e)) => {
                tracing::debug!("HTTP/2 connection from {peer} ended: {e}");
                break;
            }
        }
    }
    // The streams still answering (their connection gone, each fails at its next
    // write) are awaited: on a thread model the connection's tasks end with it.
    drop(conn);
    streams.all_closed().await;
}

/// The streams of a connection being served, and since when none has been.
#[derive(Default)]
struct Streams {
    open: Cell<usize>,
    /// When the last stream closed (none open); `None` until one has.
    quiet_since: Cell<Option<Instant>>,
    /// The connection, waiting for its last stream.
    waiting: Cell<Option<Waker>>,
}

/// One open stream of a connection's [`Streams`], closed when dropped.
struct Open(Rc<Streams>);

impl Streams {
    fn enter(this: &Rc<Self>) -> Open {
        this.open.set(this.open.get() + 1);
        Open(this.clone())
    }

    /// Whether the connection has had no stream open for `timeout` (read when the
    /// `idle` timer fires, which is then set to the next moment it could be so).
    fn idled(&self, idle: &mut Pin<Box<Sleep>>, timeout: Duration, cx: &mut Context<'_>) -> bool {
        while idle.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let due = match (self.open.get(), self.quiet_since.get()) {
                (0, Some(since)) => since + timeout,
                (0, None) => return true,
                _ => now + timeout,
            };
            if due <= now {
                return true;
            }
            idle.as_mut().reset(due);
        }
        false
    }

    async fn all_closed(&self) {
        poll_fn(|cx| {
            if self.open.get() == 0 {
                Poll::Ready(())
            } else {
                self.waiting.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await;
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let open = self.0.open.get() - 1;
        self.0.open.set(open);
        if open == 0 {
            self.0.quiet_since.set(Some(Instant::now()));
            if let Some(waker) = self.0.waiting.take() {
                waker.wake();
            }
        }
    }
}
