//! ACME's files in `[tls] store`: the account, the lock that elects the one process
//! that orders, the challenge answers every process serves, and the certificates,
//! each replaced atomically (a temporary file in the same directory, fsync, rename),
//! so a process reading the store sees the old file or the new, never half of one.
//!
//! The layout: `account.json`, `.lock`, `challenges/http-01/TOKEN`,
//! `challenges/tls-alpn-01/NAME.pem`, and `NAME/cert.pem` + `NAME/key.pem`
//! ([`store_paths`](crate::tls::store_paths)).

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// Files only this user may read: keys, the account's credentials.
pub(super) const SECRET: u32 = 0o600;
/// Files anyone may read: certificates.
pub(super) const PUBLIC: u32 = 0o644;

/// The store's lock, held by the process that orders for as long as it runs.
pub(super) type StoreLock = Flock<File>;

/// Takes the store's lock if no other process (or other `Acme` of this one) holds it;
/// `None` when one does. The kernel releases it when its holder exits, however it
/// exits, so another process takes over.
pub(super) fn try_lock(store: &Path) -> io::Result<Option<StoreLock>> {
    make_dir(store)?;
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(store.join(".lock"))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}

/// Replaces `path` with `bytes`: written to a temporary file beside it with `mode`,
/// synced, renamed over it, and the rename synced.
pub(super) fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    make_dir(dir)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".acme-")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Makes `dir` (and its parents) readable by this user alone: it holds keys.
fn make_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// The account's credentials.
pub(super) fn account_path(store: &Path) -> PathBuf {
    store.join("account.json")
}

/// Where the answer to an HTTP-01 challenge's `token` is kept.
pub(super) fn http01_path(store: &Path, token: &str) -> PathBuf {
    store.join("challenges/http-01").join(token)
}

/// Where the TLS-ALPN-01 certificate and key (one PEM file) for `name` are kept;
/// `name` is one of `[tls.acme] domains`, checked by the caller.
pub(crate) fn tls_alpn01_path(store: &Path, name: &str) -> PathBuf {
    store
        .join("challenges/tls-alpn-01")
        .join(format!("{}.pem", name.to_ascii_lowercase()))
}

/// Whether `token` may name a file: RFC 8555 §8.1 makes it base64url, and more than
/// 128 bits.
pub(super) fn is_token(token: &str) -> bool {
    (1..=256).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether the certificate stored for `domains` is missing, unreadable, not for all of
/// them, or has less than `renew_before` left at `now`.
pub(super) fn needs_order(
    store: &Path,
    domains: &[String],
    renew_before: Duration,
    now: SystemTime,
) -> bool {
    let (cert, key) = crate::tls::store_paths(store, domains);
    let Ok(stored) = crate::tls::load_pair(&cert, &key) else {
        return true;
    };
    let covers = domains
        .iter()
        .all(|d| stored.names.contains(&d.to_ascii_lowercase()));
    !covers || stored.not_after < now + renew_before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_of_the_store_lock_is_refused_until_the_first_lets_go() {
        let store = tempfile::tempdir().unwrap();
        let first = try_lock(store.path()).unwrap();
        assert!(first.is_some());
        assert!(try_lock(store.path()).unwrap().is_none());
        drop(first);
        assert!(try_lock(store.path()).unwrap().is_some());
    }

    #[test]
    fn a_file_written_atomically_replaces_the_old_with_its_mode() {
        let store = tempfile::tempdir().unwrap();
        let path = store.path().join("name/key.pem");
        write_atomically(&path, b"old", SECRET).unwrap();
        write_atomically(&path, b"new", SECRET).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_token_that_could_name_another_file_is_refused() {
        assert!(is_token("LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"));
        for bad in [
            "",
            "../account.json",
            "a/b",
            ".lock",
            "a.b",
            &"a".repeat(257),
        ] {
            assert!(!is_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn no_stored_certificate_needs_an_order() {
        let store = tempfile::tempdir().unwrap();
        let domains = ["example.com".to_owned()];
        let day = Duration::from_secs(86_400);
        assert!(needs_order(store.path(), &domains, day, SystemTime::now()));
    }
}
