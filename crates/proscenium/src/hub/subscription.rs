//! A subscription read by its owner: the posts matching its pattern wait in a queue
//! of its own, bounded in posts and in bytes; past a bound the oldest is dropped and
//! counted, so a slow reader never slows the publisher or the other subscribers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures_util::Stream;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::post::{Post, Queue};

/// The queue a [`Subscription`] reads and the hub fills.
#[derive(Debug)]
pub(super) struct Inbox {
    posts: Mutex<Queue>,
    capacity: usize,
    max_bytes: usize,
    dropped: AtomicU64,
    /// The subscription is gone: the hub lets go of this inbox.
    closed: AtomicBool,
    arrived: Notify,
}

impl Inbox {
    pub(super) fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            posts: Mutex::new(Queue::default()),
            capacity: capacity.max(1),
            max_bytes,
            dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            arrived: Notify::new(),
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Returns the posts waiting to be read.
    pub(super) fn len(&self) -> usize {
        self.posts.lock().len()
    }

    /// Queues `post`, dropping the oldest past the bound; false once the
    /// subscription is gone.
    pub(super) fn push(&self, post: &Arc<Post>) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        let gone = self.posts.lock().push(post, self.capacity, self.max_bytes);
        if gone > 0 {
            self.dropped.fetch_add(gone, Ordering::Relaxed);
            super::tally::dropped(gone);
        }
        self.arrived.notify_one();
        true
    }
}

/// The posts published to the topics matching a pattern, from when it was made (and,
/// for [`Hub::subscribe_after`](super::Hub::subscribe_after), the history after an
/// id), in the order they reached this replica. Dropping it unsubscribes.
#[derive(Debug)]
pub struct Subscription {
    inbox: Arc<Inbox>,
}

impl Subscription {
    pub(super) fn new(inbox: Arc<Inbox>) -> Self {
        Self { inbox }
    }

    /// Waits for the next post.
    pub async fn recv(&mut self) -> Arc<Post> {
        loop {
            let arrived = self.inbox.arrived.notified();
            if let Some(post) = self.inbox.posts.lock().pop() {
                return post;
            }
            arrived.await;
        }
    }

    /// The next post, if one is waiting.
    pub fn try_recv(&mut self) -> Option<Arc<Post>> {
        self.inbox.posts.lock().pop()
    }

    /// Returns how many posts were dropped, oldest first, because this subscription
    /// was read more slowly than they came (its queue's bounds: `[feeds] queue` and
    /// `queue_bytes`).
    pub fn dropped(&self) -> u64 {
        self.inbox.dropped.load(Ordering::Relaxed)
    }

    /// The posts as a stream, without end.
    pub fn into_stream(self) -> impl Stream<Item = Arc<Post>> + Send + 'static {
        futures_util::stream::unfold(self, |mut subscription| async move {
            let post = subscription.recv().await;
            Some((post, subscription))
        })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.inbox.closed.store(true, Ordering::Release);
    }
}
