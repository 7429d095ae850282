//! Leda's *cache* and *read file* stages (its Fig. 2) for the staged server's static
//! files. A request for a file runs *cache* on the thread that serves it (a cohort
//! inlet, which the thread's `web::file_cache` hook holds); a fresh hit is answered
//! at once, inline, a miss goes on to *read file*, which reads the file, answers,
//! and sends it back into the cache (Leda's completion event). The answer goes back to
//! the connection, which writes it in order with its other answers — Leda's *send
//! data* is the connection's own write.
//!
//! Only small files are kept (64 KiB or less: those `StaticFiles` reads into memory
//! anyway); larger ones `read file` declines, and they are sent with sendfile from the
//! kernel's page cache as under every model. A hit is checked with one `stat` against
//! the file it was read from (device, inode, length, time), so a file changed on disk
//! is never served stale.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use lru::LruCache;

use crate::stage::{Context, Inlet, Out, Stage};
use crate::web::file_cache::{self, Cached, Lookup};

/// The stages, by the names `[clusters.http]` knows them by.
pub(super) const CACHE: &str = "cache";
pub(super) const READ_FILE: &str = "read-file";

/// What *cache* takes: a file asked for, or one *read file* read on a miss, to keep.
pub(crate) enum CacheEvent {
    Lookup(Lookup),
    Fill(PathBuf, Cached),
}

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
                    Some(cached) => {
                        let _ = lookup.reply.send(Some(cached));
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

/// *read file*: reads a small file, answers with it and sends it to *cache* on `fill`;
/// declines anything else (a directory, a large file, an error), which `StaticFiles`
/// then serves as it does without a cache.
pub(super) fn read_file(fill: &Out<CacheEvent>) -> Stage {
    let fill = fill.clone();
    Stage::stateless(
        READ_FILE,
        || (),
        move |(): &mut (), lookup: Lookup, ctx: &mut Context<'_>| {
            let Ok(Some(cached)) = lookup.files.read_small(&lookup.relative) else {
                let _ = lookup.reply.send(None);
                return Ok(());
            };
            let key = lookup.key();
            let _ = lookup.reply.send(Some(cached.clone()));
            // Not kept when refused: the next request reads it again.
            let _ = ctx.send(&fill, CacheEvent::Fill(key, cached));
            Ok(())
        },
    )
}

/// The files *cache* keeps.
struct Files {
    kept: LruCache<PathBuf, Cached>,
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

    /// The file `lookup` asks for, if kept and still the file on disk.
    fn fresh(&mut self, lookup: &Lookup) -> Option<Cached> {
        let key = lookup.key();
        let cached = self.kept.get(&key)?;
        if lookup.files.still(&lookup.relative, cached) {
            return Some(cached.clone());
        }
        if let Some(stale) = self.kept.pop(&key) {
            self.bytes -= stale.len();
        }
        None
    }

    /// Keeps `cached` under `key`, letting the least recently used files go until
    /// the kept bytes are within the budget.
    fn keep(&mut self, key: PathBuf, cached: Cached) {
        if cached.len() > self.budget {
            return;
        }
        self.bytes += cached.len();
        if let Some(old) = self.kept.put(key, cached) {
            self.bytes -= old.len();
        }
        while self.bytes > self.budget {
            let Some((_, gone)) = self.kept.pop_lru() else {
                break;
            };
            self.bytes -= gone.len();
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
        for (name, size) in [("a", 40), ("b", 40), ("c", 40)] {
            std::fs::write(root.path().join(name), vec![b'x'; size]).unwrap();
        }
        let files = StaticFiles::new(root.path());
        let mut kept = Files::new(100);
        for name in ["a", "b", "c"] {
            let read = files.read_small(std::path::Path::new(name)).unwrap();
            kept.keep(lookup(&files, name).key(), read.unwrap());
        }
        assert_eq!(kept.bytes, 80, "a, the least recently used, went");
        assert!(kept.fresh(&lookup(&files, "a")).is_none());
        assert_eq!(kept.fresh(&lookup(&files, "b")).unwrap().len(), 40);
        std::fs::write(root.path().join("b"), b"changed").unwrap();
        assert!(
            kept.fresh(&lookup(&files, "b")).is_none(),
            "changed on disk"
        );
        assert_eq!(kept.bytes, 40);
        let big = Cached {
            bytes: vec![0; 101].into(),
            ..files
                .read_small(std::path::Path::new("c"))
                .unwrap()
                .unwrap()
        };
        kept.keep(PathBuf::from("big"), big);
        assert_eq!(kept.bytes, 40, "a file over the whole budget is not kept");
    }
}
