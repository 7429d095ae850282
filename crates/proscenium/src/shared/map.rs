//! A shared hash map: Node.Scala's `NsHashMap`. Reading routes call the `&self`
//! methods; writing routes the `&mut self` ones.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

/// A hash map to register as app state and reach through `Read` / `Write`.
///
/// # Examples
///
/// ```
/// use proscenium::state::SharedMap;
///
/// let mut likes = SharedMap::new();
/// likes.insert("picture-1", 1);
/// likes.update("picture-1", |n| *n += 1);
/// assert_eq!(likes.get("picture-1"), Some(&2));
/// assert!(likes.contains("picture-1"));
/// assert_eq!(likes.remove("picture-1"), Some(2));
/// assert!(likes.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct SharedMap<K, V> {
    map: HashMap<K, V>,
}

impl<K, V> Default for SharedMap<K, V> {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, V> SharedMap<K, V> {
    /// Returns an empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the value for `key`.
    pub fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.map.get(key)
    }

    /// Whether `key` has a value.
    pub fn contains<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.map.contains_key(key)
    }

    /// Sets the value for `key`; returns the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.map.insert(key, value)
    }

    /// Returns the value for `key`, computing and storing it first when there is none:
    /// check-then-insert in one step, so under a write it is computed once.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.map.entry(key).or_insert_with(make)
    }

    /// Changes the value for `key` in place; returns whether there was one.
    pub fn update<Q: Hash + Eq + ?Sized>(&mut self, key: &Q, change: impl FnOnce(&mut V)) -> bool
    where
        K: Borrow<Q>,
    {
        self.map.get_mut(key).map(change).is_some()
    }

    /// Removes `key`; returns its value.
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map.remove(key)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }
}
