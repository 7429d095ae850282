//! A request body handed to the app as it arrives: the connection (an HTTP/1.1 one, or
//! an HTTP/2 stream) feeds it through a [`Feed`], the app's `BodyStream` takes it from
//! the [`Taker`], at most a window's worth waiting between them.
//!
//! Written here rather than taken from tokio or futures: the connection needs to know
//! whether the app has asked for the body yet (a client that sent `Expect:
//! 100-continue` is told to go on only then, as hyper does, and is otherwise closed on
//! rather than drained) and to bound what waits in bytes, not in messages.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

/// Bytes the feed holds for the app before the connection stops reading: one read's
/// worth (`h1::conn`'s largest read), so a connection streaming a body holds no more
/// than one gathering it in its read buffer, whatever the app's pace.
pub(crate) const WINDOW: usize = 64 * 1024;

/// Returns the two ends of a body that arrives while the app runs.
pub(crate) fn channel() -> (Feed, Taker) {
    let shared = Arc::new(Mutex::new(Channel::default()));
    (Feed(Arc::clone(&shared)), Taker(shared))
}

#[derive(Default)]
struct Channel {
    chunks: VecDeque<Bytes>,
    queued: usize,
    end: End,
    /// The app has asked for the body at least once.
    asked: bool,
    /// The app has let go of the body: what arrives now is discarded.
    taker_gone: bool,
    reader: Option<Waker>,
    feeder: Option<Waker>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum End {
    #[default]
    Open,
    /// Every byte has been fed.
    Whole,
    /// The feed went before the body ended: the connection ended, or refused the rest.
    Cut,
}

fn lock(shared: &Mutex<Channel>) -> MutexGuard<'_, Channel> {
    // Nothing run under the lock can panic halfway through a change.
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The connection's end: what it reads of the body goes in here.
pub(crate) struct Feed(Arc<Mutex<Channel>>);

impl Feed {
    /// Passes `chunk` on to the app, or lets it go when the app no longer takes the
    /// body (the connection then only drains the body from the wire).
    pub(crate) fn push(&self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        let mut channel = lock(&self.0);
        if channel.taker_gone {
            return;
        }
        channel.queued += chunk.len();
        channel.chunks.push_back(chunk);
        if let Some(reader) = channel.reader.take() {
            reader.wake();
        }
    }

    /// Ready when the app can take more: less than a window waits, and, when
    /// `until_asked`, the app has asked for the body (or let it go).
    pub(crate) fn poll_room(&self, cx: &mut Context<'_>, until_asked: bool) -> Poll<()> {
        let mut channel = lock(&self.0);
        let wanted = channel.asked || !until_asked;
        if channel.taker_gone || (wanted && channel.queued < WINDOW) {
            return Poll::Ready(());
        }
        channel.feeder = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Whether the app has asked for the body.
    pub(crate) fn asked(&self) -> bool {
        lock(&self.0).asked
    }

    /// Ends the body: every byte has been fed.
    pub(crate) fn finish(self) {
        self.end(End::Whole);
    }

    fn end(&self, end: End) {
        let mut channel = lock(&self.0);
        if channel.end == End::Open {
            channel.end = end;
        }
        if let Some(reader) = channel.reader.take() {
            reader.wake();
        }
    }
}

impl Drop for Feed {
    /// A feed dropped before [`finish`](Self::finish) cuts the body: the app reads an
    /// error, not a body that looks whole.
    fn drop(&mut self) {
        self.end(End::Cut);
    }
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feed")
    }
}

/// The app's end: the body's chunks in order, then its end.
pub(crate) struct Taker(Arc<Mutex<Channel>>);

/// How a body stopped short of its end, as the app reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut;

impl Taker {
    /// The next chunk; `None` once the body is whole.
    pub(crate) fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Cut>>> {
        let mut channel = lock(&self.0);
        let first = !std::mem::replace(&mut channel.asked, true);
        if let Some(chunk) = channel.chunks.pop_front() {
            channel.queued -= chunk.len();
            if let Some(feeder) = channel.feeder.take() {
                feeder.wake();
            }
            return Poll::Ready(Some(Ok(chunk)));
        }
        match channel.end {
            End::Whole => Poll::Ready(None),
            End::Cut => Poll::Ready(Some(Err(Cut))),
            End::Open => {
                channel.reader = Some(cx.waker().clone());
                // A feeder waiting for the first ask (a client waiting for `100
                // Continue`) goes on now.
                if first && let Some(feeder) = channel.feeder.take() {
                    feeder.wake();
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Taker {
    fn drop(&mut self) {
        let mut channel = lock(&self.0);
        channel.taker_gone = true;
        channel.chunks.clear();
        channel.queued = 0;
        if let Some(feeder) = channel.feeder.take() {
            feeder.wake();
        }
    }
}

impl std::fmt::Debug for Taker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Taker")
    }
}

/// The slot a streamed request carries its [`Taker`] in, among its extensions (so it
/// goes wherever the request goes, through tower layers too); `BodyStream` takes it.
#[derive(Clone)]
pub(crate) struct Arriving(Arc<Mutex<Option<Taker>>>);

impl Arriving {
    pub(crate) fn new(taker: Taker) -> Self {
        Self(Arc::new(Mutex::new(Some(taker))))
    }

    /// The taker, to the first who asks.
    pub(crate) fn take(&self) -> Option<Taker> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use super::*;

    fn poll(taker: &mut Taker) -> Poll<Option<Result<Bytes, Cut>>> {
        taker.poll_chunk(&mut Context::from_waker(Waker::noop()))
    }

    fn room(feed: &Feed, until_asked: bool) -> bool {
        feed.poll_room(&mut Context::from_waker(Waker::noop()), until_asked)
            .is_ready()
    }

    #[test]
    fn chunks_arrive_in_order_then_the_end() {
        let (feed, mut taker) = channel();
        feed.push(Bytes::from_static(b"ab"));
        feed.push(Bytes::from_static(b"cd"));
        feed.finish();
        assert_eq!(
            poll(&mut taker),
            Poll::Ready(Some(Ok(Bytes::from_static(b"ab"))))
        );
        assert_eq!(
            poll(&mut taker),
            Poll::Ready(Some(Ok(Bytes::from_static(b"cd"))))
        );
        assert_eq!(poll(&mut taker), Poll::Ready(None));
    }

    #[test]
    fn a_feed_dropped_before_the_end_cuts_the_body() {
        let (feed, mut taker) = channel();
        assert_eq!(poll(&mut taker), Poll::Pending);
        drop(feed);
        assert_eq!(poll(&mut taker), Poll::Ready(Some(Err(Cut))));
    }

    #[test]
    fn a_full_window_holds_the_feeder_until_the_app_takes_a_chunk() {
        let (feed, mut taker) = channel();
        assert!(room(&feed, false));
        feed.push(Bytes::from(vec![0; WINDOW]));
        assert!(!room(&feed, false));
        assert!(poll(&mut taker).is_ready());
        assert!(room(&feed, false));
    }

    #[test]
    fn until_asked_the_feeder_waits_for_the_first_ask() {
        let (feed, mut taker) = channel();
        assert!(!room(&feed, true));
        assert!(!feed.asked());
        assert_eq!(poll(&mut taker), Poll::Pending);
        assert!(feed.asked());
        assert!(room(&feed, true));
    }

    #[test]
    fn once_the_app_lets_go_what_arrives_is_discarded() {
        let (feed, taker) = channel();
        feed.push(Bytes::from(vec![0; WINDOW]));
        drop(taker);
        assert!(room(&feed, true));
        feed.push(Bytes::from(vec![0; WINDOW]));
        assert!(room(&feed, false));
    }
}
