//! Leda's *cache* and *read file* stages (its Fig. 2) for the staged server's static
//! files. A request for a file runs *cache* on the thread that serves it (a cohort
//! inlet, which the thread's `web::file_cache` hook holds); a fresh hit is answered
//! at once, inline, a miss goes on to *read file*, which reads the file, answers,
//! and sends it back into the cache (Leda's completion event). The answer goes back to
//! the connection, which writes it in order with its other answers — Leda's *send
//! data* is the connection's own write.
//!
//! Only small files are kept (64 KiB or less: those `StaticFiles` reads into memory
//! anyway); of a larger one the cache keeps only that it is large, so its requests
//! are answered `None` at once and sent with sendfile from the kernel's page cache as
//! under every model, not sent to *read file* each time. Every hit is checked with one
//! `stat` against the version read (device, inode, length, time), so a file changed on
//! disk is never served stale.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use lru::LruCache;

use crate::stage::{Context, Inlet, Out, Stage};
use crate::web::file_cache::{self, Cached, Found, Lookup, Version};

/// The stages, by the names `[clusters.http]` knows them by.
pub(super) const CACHE: &str = "cache";
pub(super) const READ_FILE: &str = "read-file";

/// What *cache* takes: a file asked for, or what *read file* found on a miss, to keep.
pub(crate) enum CacheEvent {
    Lookup(Lookup),
    Fill(PathBuf, Found),
}

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
/// first; a miss (or a file changed since it was read) goes out on `miss`.
pub(super) fn cache(budget: u64, miss: &Out<Lookup>) -> Stage {
    let miss = miss.clone();
    Stage::stateful(
        CACHE,
        move || Files::new(budget),
        move |files: &mut Files, event: CacheEvent, ctx: &mut Context<'_>| {
            match event {
                CacheEvent::Lookup(lookup) => match files.fresh(&lookup) {
                    Some(kept) => {
                        let _ = lookup.reply.send(kept);
                    }
                    None => {
                        // Refused (a full queue): the request is served without the
                        // cache, as it would be without a reply.
                        let _ = ctx.send(&miss, lookup);
                    }
                },
                CacheEvent::Fill(key, cached) => files.keep(key, cached),
            }
            Ok(())
        },
    )
}

/// *read file*: reads a file, answers with it if small, and sends what it found to
/// *cache* on `fill`; answers `None` to anything else (a large file, a directory, an
/// error), which `StaticFiles` then serves as it does without a cache.
pub(super) fn read_file(fill: &Out<CacheEvent>) -> Stage {
    let fill = fill.clone();
    Stage::stateless(
        READ_FILE,
        || (),
        move |(): &mut (), lookup: Lookup, ctx: &mut Context<'_>| {
            let Ok(Some(found)) = lookup.files.read(&lookup.relative) else {
                let _ = lookup.reply.send(None);
                return Ok(());
            };
            let key = lookup.key();
            let small = match &found {
                Found::Small(cached) => Some(cached.clone()),
                Found::Large(_) => None,
            };
            let _ = lookup.reply.send(small);
            // Not kept when refused: the next request reads it again.
            let _ = ctx.send(&fill, CacheEvent::Fill(key, found));
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

/// The files *cache* keeps.
struct Files {
    kept: LruCache<PathBuf, Kept>,
    bytes: u64,
    budget: u64,
}

impl Files {
    fn new(budget: u64) -> Self {
        Self {
            kept: LruCache::unbounded(),
            bytes: 0,
            budget,
        }
    }

    /// The answer to `lookup` if the cache holds the file as it is on disk: its
    /// content, or `None` for a large one; `None` when it must be read.
    fn fresh(&mut self, lookup: &Lookup) -> Option<Option<Cached>> {
        let key = lookup.key();
        let kept = self.kept.get(&key)?;
        if lookup.files.still(&lookup.relative, kept.version()) {
            return Some(match kept {
                Kept::Small(cached) => Some(cached.clone()),
                Kept::Large(_) => None,
            });
        }
        if let Some(stale) = self.kept.pop(&key) {
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

    fn lookup(files: &StaticFiles, name: &str) -> Lookup {
        Lookup {
            files: files.clone(),
            relative: PathBuf::from(name),
            reply: tokio::sync::oneshot::channel().0,
        }
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
            let found = files.read(std::path::Path::new(name)).unwrap().unwrap();
            kept.keep(lookup(&files, name).key(), found);
        }
        assert_eq!(
            kept.bytes,
            80 + LARGE_ENTRY_BYTES,
            "a, the least recently used, went"
        );
        assert!(kept.fresh(&lookup(&files, "a")).is_none());
        assert_eq!(
            kept.fresh(&lookup(&files, "b"))
                .unwrap()
                .unwrap()
                .bytes
                .len(),
            40
        );
        assert!(
            kept.fresh(&lookup(&files, "large")).unwrap().is_none(),
            "known large: answered at once, not kept"
        );
        std::fs::write(root.path().join("b"), b"changed").unwrap();
        assert!(
            kept.fresh(&lookup(&files, "b")).is_none(),
            "changed on disk"
        );
        assert_eq!(kept.bytes, 40 + LARGE_ENTRY_BYTES);
        let Some(Found::Small(c)) = files.read(std::path::Path::new("c")).unwrap() else {
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
