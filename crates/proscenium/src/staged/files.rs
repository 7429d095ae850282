//! Leda's *cache* and *read file* stages (its Fig. 2) for the staged server's static
//! files. A request for a file runs *cache* on the thread that serves it (a cohort
//! inlet, which the thread's `web::file_cache` hook holds), so it never waits a turn:
//! a fresh hit is answered at once, inline; on a miss the request is served as without
//! a cache while *read file* reads the file and sends it back into the cache (Leda's
//! completion event). The answer is written by the connection, in order with its
//! others — Leda's *send data* is the connection's own write. (Leda's *read file*
//! answered the client itself; here no request waits for a read's turn, so a flood of
//! misses is served as fast as without a cache instead of piling up in flight.)
//!
//! Only files up to `limits.static_cache_file` are kept (by default 64 KiB or less:
//! those `StaticFiles` reads into memory anyway); of a larger one the cache keeps only
//! that it is large, so it is not read again. Every hit is checked with one `stat` against the version read (device,
//! inode, length, time), so a file changed on disk is never served stale.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::stage::{Context, Inlet, Out, Stage};
use crate::web::StaticFiles;
use crate::web::file_cache::{self, Cached, Found, Lookup, Version};

/// The stages, by the names `[clusters.http]` knows them by.
pub(super) const CACHE: &str = "cache";
pub(super) const READ_FILE: &str = "read-file";

/// What *cache* takes: a file asked for, or what *read file* found on a miss (`None`:
/// nothing to keep, the file is gone or unreadable).
pub(crate) enum CacheEvent {
    Lookup(Lookup),
    Fill(PathBuf, Option<Found>),
}

/// A file for *read file* to read into the cache under `key`.
pub(crate) struct Miss {
    key: PathBuf,
    files: StaticFiles,
    relative: PathBuf,
}

/// How long a file sent to *read file* is not sent again: its fill normally comes
/// within microseconds, and one refused (a full queue) must not keep the file out for
/// good.
const READING_FOR: Duration = Duration::from_secs(1);

/// What the cache holds of a large file, counted against its budget: the key and the
/// entry, about.
const LARGE_ENTRY_BYTES: u64 = 128;

/// The way into *cache*, once the graph has started.
pub(super) type CacheInlet = Arc<OnceLock<Inlet<CacheEvent>>>;

/// Makes *cache* the cache `StaticFiles` asks on this thread.
pub(super) fn install(inlet: &CacheInlet) {
    let inlet = Arc::clone(inlet);
    file_cache::install(move |lookup| {
        inlet
            .get()
            .is_some_and(|inlet| inlet.send(CacheEvent::Lookup(lookup)).is_ok())
    });
}

/// *cache*: stateful, the files kept within `budget` bytes, least recently used out
/// first; answers every lookup at once, and sends a miss (or a file changed since it
/// was read) out on `miss`, once.
pub(super) fn cache(budget: u64, miss: &Out<Miss>) -> Stage {
    let miss = miss.clone();
    Stage::stateful(
        CACHE,
        move || Files::new(budget),
        move |files: &mut Files, event: CacheEvent, ctx: &mut Context<'_>| {
            match event {
                CacheEvent::Lookup(Lookup {
                    files: static_files,
                    relative,
                    reply,
                }) => {
                    let key = static_files.root_path().join(&relative);
                    let kept = files.fresh(&key, &static_files, &relative);
                    let missed = kept.is_none();
                    let _ = reply.send(kept.flatten());
                    if missed && files.start_reading(key.clone()) {
                        let read = Miss {
                            key,
                            files: static_files,
                            relative,
                        };
                        // Refused (a full queue): read on a later miss.
                        let _ = ctx.send(&miss, read);
                    }
                }
                CacheEvent::Fill(key, found) => files.fill(key, found),
            }
            Ok(())
        },
    )
}

/// *read file*: reads a missed file (whole when it is `keep_up_to` bytes or fewer) and
/// sends what it found back to *cache* on `fill`.
pub(super) fn read_file(fill: &Out<CacheEvent>, keep_up_to: u64) -> Stage {
    let fill = fill.clone();
    Stage::stateless(
        READ_FILE,
        || (),
        move |(): &mut (), miss: Miss, ctx: &mut Context<'_>| {
            let found = miss.files.read(&miss.relative, keep_up_to).ok().flatten();
            // Refused (a full queue): not kept, and read again after `READING_FOR`.
            let _ = ctx.send(&fill, CacheEvent::Fill(miss.key, found));
            Ok(())
        },
    )
}

/// What *cache* holds of one file.
enum Kept {
    Small(Cached),
    Large(Version),
}

impl Kept {
    fn version(&self) -> &Version {
        match self {
            Self::Small(cached) => &cached.version,
            Self::Large(version) => version,
        }
    }

    /// What it counts against the budget.
    fn cost(&self) -> u64 {
        match self {
            Self::Small(cached) => cached.version.len,
            Self::Large(_) => LARGE_ENTRY_BYTES,
        }
    }
}

/// The files *cache* keeps, and those being read.
struct Files {
    kept: LruCache<PathBuf, Kept>,
    bytes: u64,
    budget: u64,
    reading: HashMap<PathBuf, Instant>,
}

impl Files {
    fn new(budget: u64) -> Self {
        Self {
            kept: LruCache::unbounded(),
            bytes: 0,
            budget,
            reading: HashMap::new(),
        }
    }

    /// Whether `key` is to be sent to *read file* now: not while a read of it is on
    /// its way.
    fn start_reading(&mut self, key: PathBuf) -> bool {
        let now = Instant::now();
        match self.reading.get(&key) {
            Some(since) if now.duration_since(*since) < READING_FOR => false,
            _ => {
                self.reading.insert(key, now);
                true
            }
        }
    }

    /// Takes what *read file* found of `key`.
    fn fill(&mut self, key: PathBuf, found: Option<Found>) {
        self.reading.remove(&key);
        if let Some(found) = found {
            self.keep(key, found);
        }
    }

    /// The answer to `lookup` if the cache holds the file as it is on disk: its
    /// content, or `None` for a large one; `None` when it must be read.
    fn fresh(
        &mut self,
        key: &PathBuf,
        files: &StaticFiles,
        relative: &std::path::Path,
    ) -> Option<Option<Cached>> {
        let kept = self.kept.get(key)?;
        if files.still(relative, kept.version()) {
            return Some(match kept {
                Kept::Small(cached) => Some(cached.clone()),
                Kept::Large(_) => None,
            });
        }
        if let Some(stale) = self.kept.pop(key) {
            self.bytes -= stale.cost();
        }
        None
    }

    /// Keeps what was `found` under `key`, letting the least recently used files go
    /// until the kept bytes are within the budget.
    fn keep(&mut self, key: PathBuf, found: Found) {
        let kept = match found {
            Found::Small(cached) => Kept::Small(cached),
            Found::Large(version) => Kept::Large(version),
        };
        if kept.cost() > self.budget {
            return;
        }
        self.bytes += kept.cost();
        if let Some(old) = self.kept.put(key, kept) {
            self.bytes -= old.cost();
        }
        while self.bytes > self.budget {
            let Some((_, gone)) = self.kept.pop_lru() else {
                break;
            };
            self.bytes -= gone.cost();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::StaticFiles;

    fn fresh(kept: &mut Files, files: &StaticFiles, name: &str) -> Option<Option<Cached>> {
        kept.fresh(&key(files, name), files, std::path::Path::new(name))
    }

    fn key(files: &StaticFiles, name: &str) -> PathBuf {
        files.root_path().join(name)
    }

    #[test]
    fn kept_files_stay_within_the_budget_and_changed_ones_are_dropped() {
        let root = tempfile::tempdir().unwrap();
        for (name, size) in [("a", 40), ("b", 40), ("c", 40), ("large", 100_000)] {
            std::fs::write(root.path().join(name), vec![b'x'; size]).unwrap();
        }
        let files = StaticFiles::new(root.path());
        let mut kept = Files::new(240);
        for name in ["a", "b", "c", "large"] {
            let found = files
                .read(
                    std::path::Path::new(name),
                    crate::config::Limits::default().static_cache_file,
                )
                .unwrap()
                .unwrap();
            kept.keep(key(&files, name), found);
        }
        assert_eq!(
            kept.bytes,
            80 + LARGE_ENTRY_BYTES,
            "a, the least recently used, went"
        );
        assert!(fresh(&mut kept, &files, "a").is_none());
        assert_eq!(
            fresh(&mut kept, &files, "b").unwrap().unwrap().bytes.len(),
            40
        );
        assert!(
            fresh(&mut kept, &files, "large").unwrap().is_none(),
            "known large: answered at once, not kept"
        );
        std::fs::write(root.path().join("b"), b"changed").unwrap();
        assert!(fresh(&mut kept, &files, "b").is_none(), "changed on disk");
        assert_eq!(kept.bytes, 40 + LARGE_ENTRY_BYTES);
        let Some(Found::Small(c)) = files
            .read(
                std::path::Path::new("c"),
                crate::config::Limits::default().static_cache_file,
            )
            .unwrap()
        else {
            panic!("c is small")
        };
        let huge = Cached {
            bytes: vec![0; 241].into(),
            version: Version {
                len: 241,
                ..c.version
            },
        };
        kept.keep(PathBuf::from("huge"), Found::Small(huge));
        assert_eq!(
            kept.bytes,
            40 + LARGE_ENTRY_BYTES,
            "a file over the whole budget is not kept"
        );
    }
}
