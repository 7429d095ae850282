//! What `/metrics` (`admin`) reads of the hubs in this process, in total (a series
//! per topic pattern would grow with what clients ask for): the hubs alive, to count
//! their subscribers and what waits for them at a scrape, and the posts dropped and
//! lost, counted as it happens (so a count outlives its subscriber or hub).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::{Inner, Subscriber};

/// The hubs created in this process (those dropped are pruned as they are met).
static HUBS: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());

/// Posts dropped, oldest first, from the queues of subscribers that fell behind.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Posts known lost between replicas (`Hub::lost`).
static LOST: AtomicU64 = AtomicU64::new(0);

/// Resumes (`Last-Event-ID`) after a post the history no longer held.
static PAST_HISTORY: AtomicU64 = AtomicU64::new(0);

/// The hubs of this process, in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HubCounts {
    /// Subscribers now.
    pub(crate) subscribers: usize,
    /// Posts waiting in subscriptions' queues now (event streams, `Subscription`s).
    pub(crate) behind: usize,
    /// Posts dropped from subscribers' queues, ever.
    pub(crate) dropped: u64,
    /// Posts known lost between replicas, ever.
    pub(crate) lost: u64,
    /// Resumes after a post the history no longer held, ever.
    pub(crate) past_history: u64,
}

/// Lists `inner`'s hub among those a scrape reads.
pub(super) fn list(inner: &Arc<Inner>) {
    let mut hubs = HUBS.lock();
    hubs.retain(|hub| hub.strong_count() > 0);
    hubs.push(Arc::downgrade(inner));
}

/// Counts `n` posts dropped from a subscriber's queue.
pub(super) fn dropped(n: u64) {
    DROPPED.fetch_add(n, Ordering::Relaxed);
}

/// Counts `n` posts lost between replicas.
pub(super) fn lost(n: u64) {
    LOST.fetch_add(n, Ordering::Relaxed);
}

/// Counts a resume after a post the history no longer held.
pub(super) fn resumed_past_history() {
    PAST_HISTORY.fetch_add(1, Ordering::Relaxed);
}

/// Returns the hubs' subscribers and queues now, and the counts so far.
#[cfg_attr(
    not(feature = "metrics"),
    expect(dead_code, reason = "only /metrics reads it")
)]
pub(crate) fn totals() -> HubCounts {
    let mut counts = HubCounts {
        dropped: DROPPED.load(Ordering::Relaxed),
        lost: LOST.load(Ordering::Relaxed),
        past_history: PAST_HISTORY.load(Ordering::Relaxed),
        ..HubCounts::default()
    };
    let hubs: Vec<Arc<Inner>> = HUBS.lock().iter().filter_map(Weak::upgrade).collect();
    for hub in hubs {
        let patterns = hub.patterns.read();
        let live = patterns.values().flatten().filter(|entry| entry.is_live());
        for entry in live {
            counts.subscribers += 1;
            if let Subscriber::Inbox(inbox) = &entry.subscriber {
                counts.behind += inbox.len();
            }
        }
    }
    counts
}
