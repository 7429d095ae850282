//! Where a request body gathers while it waits for more bytes: memory from the server's
//! budget, or a spool file past `limits.spool_above`. HTTP/1.1's decoder and HTTP/2's
//! streams gather their bodies here alike.

use bytes::Bytes;

use super::room::{Bodies, Buffer, NoRoom};
use super::spool::Spool;
use crate::config::Limits;

/// Where a body that waits for more bytes gathers: in memory while its size, as far
/// as known (announced, or received so far when chunked), is within
/// `limits.spool_above`; in a spool file past it.
#[derive(Debug)]
pub(crate) enum Sink {
    Memory(Buffer),
    File(Spool),
}

impl Sink {
    /// Returns where a body of the `announced` length (none when chunked) starts.
    pub(crate) fn new(announced: Option<usize>, limits: &Limits, bodies: &Bodies) -> Self {
        match announced {
            Some(n) if passes_spool_above(n, limits) => Self::File(Spool::new(&bodies.disk)),
            _ => Self::Memory(Buffer::new(&bodies.memory)),
        }
    }

    /// Returns the bytes gathered.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Memory(data) => data.len(),
            Self::File(spool) => spool.len(),
        }
    }

    /// Appends `bytes` to a body that may not pass `ceiling` (its announced length,
    /// or `max_body`), first moving a body held in memory to a file if `bytes` take
    /// it past `limits.spool_above`.
    ///
    /// # Errors
    ///
    /// [`NoRoom`] when the budget, the allocator or the disk has not the
    /// room.
    pub(crate) fn append(
        &mut self,
        bytes: &[u8],
        ceiling: usize,
        limits: &Limits,
        bodies: &Bodies,
    ) -> Result<(), NoRoom> {
        if let Self::Memory(data) = self
            && passes_spool_above(data.len() + bytes.len(), limits)
        {
            let mut spool = Spool::new(&bodies.disk);
            spool.append(data.as_ref(), &limits.spool_dir)?;
            // Dropping the buffer gives its memory room back.
            *self = Self::File(spool);
        }
        match self {
            // A buffer never holds more than `spool_above`: it moves to a file first.
            Self::Memory(data) => Ok(data.append(bytes, ceiling.min(spool_above(limits)))?),
            Self::File(spool) => spool.append(bytes, &limits.spool_dir),
        }
    }

    /// Returns the body, which holds its room until the app drops it.
    ///
    /// # Errors
    ///
    /// [`NoRoom`] when a spool file cannot be mapped.
    pub(crate) fn finish(self, limits: &Limits) -> Result<Bytes, NoRoom> {
        match self {
            Self::Memory(data) => Ok(Bytes::from_owner(data)),
            Self::File(spool) => spool.finish(&limits.spool_dir),
        }
    }
}

/// Returns `limits.spool_above` as a size in memory.
fn spool_above(limits: &Limits) -> usize {
    usize::try_from(limits.spool_above).unwrap_or(usize::MAX)
}

/// Returns whether a body of `size` bytes goes to a spool file.
fn passes_spool_above(size: usize, limits: &Limits) -> bool {
    size > spool_above(limits)
}
