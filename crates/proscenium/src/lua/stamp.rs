//! Whether a script's file changed since it was loaded: its stamp (identity, size,
//! modification time), looked at again at most once a [`RECHECK`] for each file —
//! so a changed file is served within a second, and a busy page costs a `stat` a
//! second rather than one a request.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a file's stamp is trusted before it is looked at again.
pub(super) const RECHECK: Duration = Duration::from_secs(1);

/// A file's identity, size and modification time; `None` when it cannot be read.
pub(super) type Stamp = Option<(u64, u64, u64, i64, i64)>;

/// The stamps of the files scripts were loaded from, each with when it was taken.
#[derive(Debug, Default)]
pub(super) struct Stamps(Mutex<HashMap<PathBuf, (Stamp, Instant)>>);

impl Stamps {
    /// The stamp of `path`, taken again if the one known is older than [`RECHECK`].
    pub(super) fn of(&self, path: &Path) -> Stamp {
        let now = Instant::now();
        let mut known = self.0.lock();
        if let Some((stamp, taken)) = known.get(path) {
            if now.duration_since(*taken) < RECHECK {
                return *stamp;
            }
        }
        let stamp = take(path);
        known.insert(path.to_owned(), (stamp, now));
        stamp
    }
}

/// The stamp of `path` now.
fn take(path: &Path) -> Stamp {
    std::fs::metadata(path).ok().map(|meta| {
        (
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
        )
    })
}
