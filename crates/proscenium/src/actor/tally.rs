//! What `/metrics` (`admin`) reads of the actors in this process, by actor kind (its
//! Rust type's name): the dead letters and restarts, counted as they happen. (The
//! mailboxes are summed at a scrape: [`System`](super::System)'s side.) Kinds are the
//! program's actor types, so the series are bounded whatever the actors' number.

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// The kind dead letters to or from actors in other processes are counted under.
#[cfg(feature = "redis")]
pub(crate) const REMOTE: &str = "<remote>";

/// Dead letters and restarts by actor kind, since the process started.
static COUNTS: Mutex<BTreeMap<&'static str, KindCounts>> = Mutex::new(BTreeMap::new());

/// What the actors of one kind did, or hold now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KindCounts {
    /// Actors alive now.
    pub(crate) actors: usize,
    /// Messages in their mailboxes now.
    pub(crate) queued: usize,
    /// Messages to them not delivered, ever.
    pub(crate) dead_letters: u64,
    /// Restarts of them, ever.
    pub(crate) restarts: u64,
}

/// Counts a dead letter of an actor of kind `kind`.
pub(crate) fn dead_letter(kind: &'static str) {
    COUNTS.lock().entry(kind).or_default().dead_letters += 1;
}

/// Counts a restart of an actor of kind `kind`.
pub(crate) fn restart(kind: &'static str) {
    COUNTS.lock().entry(kind).or_default().restarts += 1;
}

/// Returns the dead letters and restarts counted so far, by kind.
pub(crate) fn counted() -> BTreeMap<&'static str, KindCounts> {
    COUNTS.lock().clone()
}
