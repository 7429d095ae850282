//! A bounded cache that evicts the least recently used entries, approximately: the
//! CLOCK (second-chance) algorithm. A lookup only sets the entry's "used" bit, an
//! atomic, so reading routes count as uses under a shared `Read` — a strict LRU would
//! need `&mut` to reorder on every lookup, making every cache hit a writing route.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cache of at most `capacity` entries.
///
/// # Examples
///
/// ```
/// use proscenium::state::LruCache;
///
/// let mut cache = LruCache::new(2);
/// cache.insert(1, "one");
/// cache.insert(2, "two");
/// assert_eq!(cache.get(&1), Some(&"one")); // 1 is used, 2 is not
/// cache.insert(3, "three");                // so 2 goes
/// assert!(cache.contains(&1) && !cache.contains(&2) && cache.contains(&3));
/// ```
#[derive(Debug)]
pub struct LruCache<K, V> {
    slots: Vec<Slot<K, V>>,
    index: HashMap<K, usize>,
    hand: usize,
    capacity: usize,
}

#[derive(Debug)]
struct Slot<K, V> {
    key: K,
    value: V,
    used: AtomicBool,
}

impl<K: Hash + Eq + Clone, V> LruCache<K, V> {
    /// Returns an empty cache holding at most `capacity` entries.
    ///
    /// # Panics
    ///
    /// When `capacity` is 0.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "an LruCache needs room for one entry");
        Self {
            slots: Vec::with_capacity(capacity),
            index: HashMap::with_capacity(capacity),
            hand: 0,
            capacity,
        }
    }

    /// Returns the value for `key`, marking it used.
    pub fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        let slot = &self.slots[*self.index.get(key)?];
        slot.used.store(true, Ordering::Relaxed);
        Some(&slot.value)
    }

    /// Whether `key` has a value (not a use).
    pub fn contains<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.index.contains_key(key)
    }

    /// Sets the value for `key`, evicting the least recently used entry when full;
    /// returns the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.put(key, value).1
    }

    /// Returns the value for `key`, computing and storing it first when there is none.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &V {
        let at = match self.index.get(&key) {
            Some(&at) => at,
            None => self.put(key, make()).0,
        };
        let slot = &mut self.slots[at];
        *slot.used.get_mut() = true;
        &slot.value
    }

    /// Stores `value` for `key`; returns its slot and the value it replaced.
    fn put(&mut self, key: K, value: V) -> (usize, Option<V>) {
        if let Some(&at) = self.index.get(&key) {
            let slot = &mut self.slots[at];
            *slot.used.get_mut() = true;
            return (at, Some(std::mem::replace(&mut slot.value, value)));
        }
        let slot = Slot {
            key: key.clone(),
            value,
            used: AtomicBool::new(false),
        };
        let at = if self.slots.len() < self.capacity {
            self.slots.push(slot);
            self.slots.len() - 1
        } else {
            let at = self.victim();
            self.index.remove(&self.slots[at].key);
            self.slots[at] = slot;
            at
        };
        self.index.insert(key, at);
        (at, None)
    }

    /// Removes `key`; returns its value.
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let at = self.index.remove(key)?;
        let slot = self.slots.swap_remove(at);
        if let Some(moved) = self.slots.get(at) {
            self.index.insert(moved.key.clone(), at);
        }
        if self.hand >= self.slots.len() {
            self.hand = 0;
        }
        Some(slot.value)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The most entries it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The clock hand's next unused slot: used ones it passes get a second chance.
    fn victim(&mut self) -> usize {
        loop {
            let at = self.hand;
            self.hand = (self.hand + 1) % self.slots.len();
            let used = self.slots[at].used.get_mut();
            if !*used {
                return at;
            }
            *used = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_never_holds_more_than_its_capacity() {
        let mut cache = LruCache::new(3);
        for i in 0..100 {
            cache.insert(i, i * 2);
            assert!(cache.len() <= 3);
        }
        assert_eq!(cache.get(&99), Some(&198));
    }

    #[test]
    fn a_used_entry_outlives_an_unused_one() {
        let mut cache = LruCache::new(3);
        for i in 0..3 {
            cache.insert(i, ());
        }
        cache.get(&0);
        cache.insert(3, ());
        cache.insert(4, ());
        assert!(cache.contains(&0), "used, so given a second chance");
        assert!(!cache.contains(&1) && !cache.contains(&2));
    }

    #[test]
    fn removal_keeps_the_index_right() {
        let mut cache = LruCache::new(3);
        for i in 0..3 {
            cache.insert(i, i);
        }
        assert_eq!(cache.remove(&0), Some(0));
        assert_eq!(
            (cache.get(&1), cache.get(&2), cache.len()),
            (Some(&1), Some(&2), 2)
        );
        assert_eq!(cache.get_or_insert_with(7, || 70), &70);
        assert_eq!(cache.insert(7, 71), Some(70));
    }
}
