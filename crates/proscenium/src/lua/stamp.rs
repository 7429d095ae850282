//! Whether a script's file changed since it was loaded: its stamp (identity, size,
//! modification time), looked at again by each state at most once a [`RECHECK`] —
//! so a changed file is served within a second, and a busy page costs a `stat` a
//! second rather than one a request.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a state trusts the stamps it knows before it looks at the files again.
pub(super) const RECHECK: Duration = Duration::from_secs(1);

/// A file's identity, size and modification time; `None` when it cannot be read.
pub(super) type Stamp = Option<(u64, u64, u64, i64, i64)>;

/// The stamp of `path` now.
pub(super) fn take(path: &Path) -> Stamp {
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

/// Whether stamps looked at `at` are due to be looked at again, `at` moved to now if
/// they are.
pub(super) fn due(at: &mut Instant) -> bool {
    let now = Instant::now();
    if now.duration_since(*at) < RECHECK {
        return false;
    }
    *at = now;
    true
}
