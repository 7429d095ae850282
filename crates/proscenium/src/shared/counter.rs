//! A counter, the simplest shared state: read its value, or change it under a write.

/// A shared `u64` counter.
///
/// # Examples
///
/// ```
/// use proscenium::state::Counter;
///
/// let mut c = Counter::default();
/// assert_eq!(c.increment(), 1);
/// assert_eq!(c.add(4), 5);
/// assert_eq!(c.get(), 5);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counter(u64);

impl Counter {
    /// Returns a counter starting at `value`.
    pub fn new(value: u64) -> Self {
        Self(value)
    }

    /// Returns the value.
    pub fn get(&self) -> u64 {
        self.0
    }

    /// Adds one; returns the new value.
    pub fn increment(&mut self) -> u64 {
        self.add(1)
    }

    /// Adds `n`, saturating at `u64::MAX`; returns the new value.
    pub fn add(&mut self, n: u64) -> u64 {
        self.0 = self.0.saturating_add(n);
        self.0
    }

    /// Sets the value; returns the old one.
    pub fn set(&mut self, value: u64) -> u64 {
        std::mem::replace(&mut self.0, value)
    }
}
