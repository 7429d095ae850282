//! Small static files kept in memory, as [`StaticFiles`] sees them: a hook on the thread
//! serving a request, through which it asks a cache for a file's content. The staged
//! model installs one on its threads (its *cache* and *read file* stages, Leda's
//! Fig. 2); without one, as under every other model, files are read where the request
//! is served.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::StaticFiles;

/// Which version of a file: what one `stat` tells apart.
pub(crate) use crate::http::body::FileVersion as Version;

/// A file's content, and the version of it that was read.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub(crate) bytes: Bytes,
    pub(crate) version: Version,
}

/// What reading a regular file found: a small one's content, or that it is too large
/// to keep (sent with sendfile), which a cache remembers as well, so the next request
/// for it is not a miss again.
#[derive(Debug, Clone)]
pub(crate) enum Found {
    Small(Cached),
    Large(Version),
}

/// A request for the file `relative` below `files`' root; the answer goes to `reply`
/// before the hook returns: its content, or `None` when the cache does not hold it (a
/// miss, a large file, not a regular file), and `files` serves it as it would without
/// a cache.
#[derive(Debug)]
pub(crate) struct Lookup {
    pub(crate) files: StaticFiles,
    pub(crate) relative: PathBuf,
    pub(crate) reply: oneshot::Sender<Option<Cached>>,
}

/// Takes a lookup; returns whether it did (not when its queue is full, or the graph
/// stopped: then the request is served without the cache).
type Hook = Rc<dyn Fn(Lookup) -> bool>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Makes `hook` this thread's cache.
pub(crate) fn install(hook: impl Fn(Lookup) -> bool + 'static) {
    HOOK.set(Some(Rc::new(hook)));
}

/// Asks this thread's cache; returns whether it took `lookup`.
pub(crate) fn ask(lookup: Lookup) -> bool {
    HOOK.with_borrow(Clone::clone)
        .is_some_and(|hook| hook(lookup))
}

/// Whether this thread has a cache to ask.
pub(crate) fn installed() -> bool {
    HOOK.with_borrow(Option::is_some)
}
