//! The server's room for what clients send that waits to be whole: bytes of memory for
//! request bodies buffered and WebSocket messages being assembled
//! (`limits.max_buffered_bodies`), bytes of disk for bodies spooled to a temporary
//! file (`limits.max_spooled_bodies`).
//!
//! Invariant: every byte taken from a [`Budget`] is held by one [`Room`], which gives it
//! back when dropped — when the app drops the body or message, or the decoder or the
//! socket drops one it refused or never finished.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::Limits;

/// One bounded resource for bodies: one per server, shared by its loops and threads.
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    used: AtomicUsize,
}

impl Budget {
    /// Returns a budget of `max` bytes, none of them taken.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            used: AtomicUsize::new(0),
        })
    }

    /// Takes `n` bytes of room, if the budget has them.
    fn try_take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.max)
            })
            .is_ok()
    }

    /// Gives back `n` bytes of room taken before.
    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Returns the bytes taken now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// The room one body holds in a budget, given back when dropped.
#[derive(Debug)]
pub(crate) struct Room {
    budget: Arc<Budget>,
    held: usize,
}

impl Room {
    /// Returns a claim on `budget` holding nothing yet.
    pub(super) fn new(budget: &Arc<Budget>) -> Self {
        Self {
            budget: budget.clone(),
            held: 0,
        }
    }

    /// Returns the bytes held.
    pub(super) fn held(&self) -> usize {
        self.held
    }

    /// Takes `n` more bytes from the budget, if it has them.
    pub(super) fn try_grow(&mut self, n: usize) -> bool {
        let taken = self.budget.try_take(n);
        if taken {
            self.held += n;
        }
        taken
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

/// The two budgets bodies draw on; cloned into each loop.
#[derive(Debug, Clone)]
pub(crate) struct Bodies {
    /// Memory for bodies buffered while they wait, and for WebSocket messages
    /// (`limits.max_buffered_bodies`).
    pub(crate) memory: Arc<Budget>,
    /// Disk for bodies spooled while they wait (`limits.max_spooled_bodies`).
    pub(crate) disk: Arc<Budget>,
}

impl Bodies {
    /// Returns the budgets `limits` sets, none of them taken.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            memory: Budget::new(limits.max_buffered_bodies),
            disk: Budget::new(limits.max_spooled_bodies),
        }
    }
}

/// The budget or the allocator has not the room asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRoom;

/// A buffer of what a client sends (a body, a WebSocket message) whose capacity holds
/// room in a budget: it grows geometrically, fallibly, and gives the room back when
/// dropped — as the app's `Bytes` ([`Bytes::from_owner`](bytes::Bytes::from_owner)),
/// when the app drops them.
#[derive(Debug)]
pub(crate) struct Buffer {
    data: Vec<u8>,
    /// The bytes of the budget this buffer holds: its capacity when it grew.
    room: Room,
}

impl Buffer {
    /// Returns an empty buffer drawing on `budget`.
    pub(crate) fn new(budget: &Arc<Budget>) -> Self {
        Self {
            data: Vec::new(),
            room: Room::new(budget),
        }
    }

    /// Returns the bytes held.
    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    /// Returns whether the room made is all written (a fill has none left).
    #[cfg(feature = "feeds")]
    pub(crate) fn is_full(&self) -> bool {
        self.data.len() == self.data.capacity()
    }

    /// Makes room for `need` bytes in all, growing geometrically up to `ceiling`
    /// (or past it to `need`).
    ///
    /// # Errors
    ///
    /// [`NoRoom`] when the budget or the allocator has not the room.
    pub(crate) fn make_room(&mut self, need: usize, ceiling: usize) -> Result<(), NoRoom> {
        if need <= self.data.capacity() {
            return Ok(());
        }
        let held = self.room.held();
        let cap = held.saturating_mul(2).min(ceiling).max(need);
        if !self.room.try_grow(cap.saturating_sub(held)) {
            return Err(NoRoom);
        }
        self.data
            .try_reserve_exact(cap - self.data.len())
            .map_err(|_| NoRoom)
    }

    /// Appends `bytes`, making room as [`make_room`](Self::make_room) does.
    ///
    /// # Errors
    ///
    /// [`NoRoom`] when the budget or the allocator has not the room.
    pub(crate) fn append(&mut self, bytes: &[u8], ceiling: usize) -> Result<(), NoRoom> {
        self.make_room(self.data.len() + bytes.len(), ceiling)?;
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    /// Lets `fill` write into the room made (a decompressor's output, say): it may
    /// add bytes up to the capacity, never grow it, so the room held stays the
    /// capacity.
    #[cfg(feature = "feeds")]
    pub(crate) fn fill<R>(&mut self, fill: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let capacity = self.data.capacity();
        let result = fill(&mut self.data);
        debug_assert_eq!(self.data.capacity(), capacity, "a fill grew the buffer");
        result
    }
}

impl AsRef<[u8]> for Buffer {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}
