//! Spooling: a large request body written to an unnamed temporary file as it arrives,
//! and handed to the app as [`Bytes`] mapped read-only from that file — as nginx
//! spools bodies past `client_body_buffer_size`.
//!
//! A spooled body costs the server page cache, which the kernel may write out and
//! evict, instead of anonymous memory it must keep; its bytes hold room in the disk
//! budget (`limits.max_spooled_bodies`) until the app drops them. The file has no name
//! from the start (`O_TMPFILE`), or loses it at once where the file system lacks that,
//! so it is gone when the last reference to the body drops, and a crash leaves nothing
//! behind (bar the instant between making and unlinking a named one).
//
// Mapping a file is `unsafe` (another writer could change the bytes under a `&[u8]`);
// this module is allowed it for the one `Mmap::map` whose proof is below. Mapping,
// not reading the file back, is the point: the app sees page cache, not a copy.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use memmap2::Mmap;
use nix::libc;

use super::room::{Budget, NoRoom, Room};

/// A body being written to its spool file.
#[derive(Debug)]
pub(crate) struct Spool {
    /// Made when the first byte comes: a head that announces a large body and sends
    /// nothing costs no file.
    file: Option<File>,
    /// The disk room the bytes written hold: as many as were written.
    room: Room,
}

impl Spool {
    /// Returns a spool drawing on the `disk` budget, with no file yet.
    pub(crate) fn new(disk: &Arc<Budget>) -> Self {
        Self {
            file: None,
            room: Room::new(disk),
        }
    }

    /// Returns the bytes written.
    pub(crate) fn len(&self) -> usize {
        self.room.held()
    }

    /// Writes `bytes` to the end of the file in `dir`, making the file first if need
    /// be.
    ///
    /// The write happens on the loop, as nginx writes its temporary files from its
    /// event loop: `bytes` is what one read brought (at most 64 KiB, `READ_MAX`), so a
    /// write into the page cache is as short as the read was; only a chunked body
    /// moving out of memory writes more, once (`limits.spool_above`).
    ///
    /// # Errors
    ///
    /// [`NoRoom`] when the disk budget has not the room, or the file
    /// cannot be made or written (a full disk, EIO): logged here, answered 503.
    pub(crate) fn append(&mut self, bytes: &[u8], dir: &Path) -> Result<(), NoRoom> {
        // A head with no body bytes yet decodes as an empty append: no file for it.
        if bytes.is_empty() {
            return Ok(());
        }
        if !self.room.try_grow(bytes.len()) {
            return Err(NoRoom);
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(create(dir).map_err(failed("make", dir))?),
        };
        file.write_all(bytes).map_err(failed("write", dir))
    }

    /// Returns the body, mapped from its file; it holds its disk room until the app
    /// drops it, and the file goes with the last reference.
    ///
    /// # Errors
    ///
    /// [`NoRoom`] when the file cannot be mapped (an address-space limit):
    /// logged here, answered 503.
    pub(crate) fn finish(self, dir: &Path) -> Result<Bytes, NoRoom> {
        let Some(file) = &self.file else {
            return Ok(Bytes::new());
        };
        // SAFETY: the file has no name (made with O_TMPFILE, or unlinked at once), so
        // no other process can open it; this module's one descriptor is dropped with
        // `self.file` below, after the last write, and nothing truncates it. The
        // mapped bytes therefore never change while the map lives.
        let map = unsafe { Mmap::map(file) }.map_err(failed("map", dir))?;
        Ok(Bytes::from_owner(Spooled {
            map,
            _room: self.room,
        }))
    }
}

/// A finished body: its mapping (which keeps the unnamed file alive) and its room.
struct Spooled {
    map: Mmap,
    _room: Room,
}

impl AsRef<[u8]> for Spooled {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

/// Returns a new unnamed file in `dir`, readable and writable by this user only.
///
/// # Errors
///
/// When `dir` does not exist, is not a directory, or cannot be written.
pub(crate) fn create(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .or_else(|e| match e.raw_os_error() {
            // A file system without O_TMPFILE: a named file (0600), unlinked at once.
            Some(libc::EOPNOTSUPP | libc::EISDIR) => tempfile::tempfile_in(dir),
            _ => Err(e),
        })
}

/// Returns a mapping of an I/O error to the refusal it causes, logging it: the client
/// hears only 503, the operator learns why.
fn failed<'a>(action: &'static str, dir: &'a Path) -> impl FnOnce(io::Error) -> NoRoom + 'a {
    move |e| {
        tracing::warn!(
            "cannot {action} a spool file for a request body in {}: {e}",
            dir.display()
        );
        NoRoom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spooled_body_reads_back_and_gives_its_room_back_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let disk = Budget::new(8);
        let mut spool = Spool::new(&disk);
        spool.append(b"abc", dir.path()).unwrap();
        spool.append(b"defg", dir.path()).unwrap();
        assert_eq!(spool.append(b"hi", dir.path()), Err(NoRoom));
        let body = spool.finish(dir.path()).unwrap();
        assert_eq!(&body[..], b"abcdefg");
        assert_eq!(disk.used(), 7);
        // Unnamed: nothing in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        drop(body);
        assert_eq!(disk.used(), 0);
    }

    #[test]
    fn a_spool_dir_that_is_missing_or_a_file_cannot_be_used() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(create(&dir.path().join("missing")).is_err());
        assert!(create(&file).is_err());
        let mut spool = Spool::new(&Budget::new(8));
        assert_eq!(spool.append(b"abc", &file), Err(NoRoom));
    }
}
