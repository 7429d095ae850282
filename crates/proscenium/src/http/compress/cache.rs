//! Static files compressed once and kept: keyed by the file's version (device, inode,
//! length, modification time) and the coding, bounded in bytes, the least recently
//! used dropped first. A file changed on disk has another version: its old entries are
//! never hit again and age out.

use bytes::Bytes;
use lru::LruCache;
use parking_lot::Mutex;

use super::accept::Coding;
use crate::http::body::FileVersion;

/// The largest file compressed whole into the cache (read at once, on the thread that
/// answers): larger ones are compressed as they are sent, every time.
const LARGEST_FILE: u64 = 1024 * 1024;

/// The compressed files of a server, shared by its loops and threads.
#[derive(Debug)]
pub(crate) struct FileCache {
    held: Mutex<Held>,
    /// Bytes the entries may hold together.
    capacity: usize,
}

#[derive(Debug)]
struct Held {
    entries: LruCache<(FileVersion, Coding), Bytes>,
    bytes: usize,
}

impl FileCache {
    /// Returns an empty cache of `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            held: Mutex::new(Held {
                entries: LruCache::unbounded(),
                bytes: 0,
            }),
            capacity,
        }
    }

    /// Whether a file of `len` bytes is compressed whole and kept: at most 1 MiB, and
    /// an eighth of the cache, so that one file never empties it.
    pub(crate) fn takes(&self, len: u64) -> bool {
        len <= LARGEST_FILE.min(self.capacity as u64 / 8)
    }

    /// Returns the file's compressed bytes, if kept.
    pub(crate) fn get(&self, version: FileVersion, coding: Coding) -> Option<Bytes> {
        self.held.lock().entries.get(&(version, coding)).cloned()
    }

    /// Keeps a file's compressed bytes, dropping the least recently used entries
    /// until they fit.
    pub(crate) fn insert(&self, version: FileVersion, coding: Coding, bytes: Bytes) {
        if bytes.len() > self.capacity {
            return;
        }
        let mut held = self.held.lock();
        while held.bytes + bytes.len() > self.capacity {
            let Some((_, dropped)) = held.entries.pop_lru() else {
                break;
            };
            held.bytes -= dropped.len();
        }
        held.bytes += bytes.len();
        if let Some(replaced) = held.entries.put((version, coding), bytes) {
            held.bytes -= replaced.len();
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.held.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn version(ino: u64) -> FileVersion {
        FileVersion {
            identity: (1, ino),
            len: 100,
            modified: UNIX_EPOCH + Duration::from_secs(ino),
        }
    }

    #[test]
    fn holds_at_most_its_capacity_dropping_the_least_recently_used() {
        let cache = FileCache::new(250);
        for ino in 0..3 {
            cache.insert(version(ino), Coding::Gzip, Bytes::from(vec![0; 100]));
        }
        assert_eq!(cache.bytes(), 200);
        assert!(
            cache.get(version(0), Coding::Gzip).is_none(),
            "the oldest went"
        );
        assert!(cache.get(version(1), Coding::Gzip).is_some());
        cache.insert(version(3), Coding::Gzip, Bytes::from(vec![0; 100]));
        assert!(
            cache.get(version(1), Coding::Gzip).is_some(),
            "used last, kept"
        );
        assert!(cache.get(version(2), Coding::Gzip).is_none());
        assert!(
            cache.get(version(3), Coding::Br).is_none(),
            "another coding"
        );
        cache.insert(version(4), Coding::Br, Bytes::from(vec![0; 251]));
        assert_eq!(cache.bytes(), 200, "larger than the whole cache: not kept");
    }

    #[test]
    fn a_file_over_an_eighth_of_the_cache_or_a_mebibyte_is_not_taken() {
        assert!(FileCache::new(8000).takes(1000));
        assert!(!FileCache::new(8000).takes(1001));
        assert!(!FileCache::new(1 << 30).takes(LARGEST_FILE + 1));
    }
}
