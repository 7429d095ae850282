//! Idempotent stages: an event whose key the stage took among its last `window` keys
//! is a duplicate, dropped before its handler. Between processes delivery is
//! at-least-once — an event a dead process took is delivered again, and a write
//! retried after a partial append is appended again — so a stage whose effect must
//! happen once declares a key ([`Stage::idempotent_by`](super::Stage::idempotent_by)).

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

use parking_lot::Mutex;

use super::definition::Payload;

/// Whether an event (type-erased) repeats one the stage took within its window; the
/// first time, its key is remembered.
pub(crate) type Repeats = Arc<dyn Fn(&Payload) -> bool + Send + Sync>;

/// Returns the test for events of type `E`, keyed by `key`, over the last `window`
/// keys (shared by the stage's instances in this process).
pub(crate) fn repeats<E, K, F>(window: usize, key: F) -> Repeats
where
    E: 'static,
    K: Hash + Eq + Clone + Send + 'static,
    F: Fn(&E) -> K + Send + Sync + 'static,
{
    let seen = Mutex::new(KeyWindow::new(window));
    Arc::new(move |event: &Payload| {
        event
            .downcast_ref::<E>()
            .is_some_and(|event| !seen.lock().first(key(event)))
    })
}

/// The last `capacity` keys taken, the oldest out first.
struct KeyWindow<K> {
    keys: HashSet<K>,
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Hash + Eq + Clone> KeyWindow<K> {
    fn new(capacity: usize) -> Self {
        Self {
            keys: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Returns whether `key` is not in the window, and puts it there.
    fn first(&mut self, key: K) -> bool {
        if self.keys.contains(&key) {
            return false;
        }
        if self.order.len() == self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.keys.remove(&oldest);
        }
        self.keys.insert(key.clone());
        self.order.push_back(key);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_repeats_within_the_window_and_not_after_it() {
        let repeats = repeats(3, |n: &u64| n % 100);
        let seen = |n: u64| repeats(&(Box::new(n) as Payload));
        assert!(!seen(1));
        assert!(seen(101), "the same key");
        assert!(!seen(2));
        assert!(!seen(3));
        assert!(!seen(4), "1 is out of the window now");
        assert!(!seen(1));
        assert!(seen(4));
    }
}
