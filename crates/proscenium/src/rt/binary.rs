//! The path a process was started as, for a `prefork` supervisor to start its
//! workers from: after a package upgrade or a build writes a new binary there, the
//! workers a SIGHUP starts run the new one.
//!
//! `/proc/self/exe` would not do: it names the file the supervisor runs, and once
//! that file is replaced (a new file renamed over the path) it names a deleted one.
//! A path resolved from `argv[0]` at start names whatever file is at that path at each
//! start, through symbolic links as they are then (a `current` link moved to a new
//! release is followed). A supervisor that should itself run the new binary is
//! restarted by its own supervisor (systemd), as nginx's master is re-executed on
//! USR2.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// Returns the absolute path this process was started as: `argv[0]` made absolute
/// against the working directory, or looked up on `PATH` when it has no slash; the
/// running file (`/proc/self/exe`) when `argv[0]` names no file.
///
/// # Errors
///
/// When neither names a file (the running file's link cannot be read).
pub(crate) fn started_as() -> std::io::Result<PathBuf> {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let cwd = std::env::current_dir()?;
    let path = std::env::var_os("PATH");
    match resolve(Path::new(&argv0), &cwd, path.as_deref()) {
        Some(binary) => Ok(binary),
        None => std::env::current_exe(),
    }
}

/// Resolves `argv0` as the shell did to start it: with a slash, against `cwd`;
/// without, on the directories of `path`. Returns a path only when a file is there.
fn resolve(argv0: &Path, cwd: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
    if argv0.as_os_str().is_empty() {
        return None;
    }
    let candidate = if argv0.as_os_str().as_bytes().contains(&b'/') {
        cwd.join(argv0)
    } else {
        std::env::split_paths(path?)
            .map(|dir| cwd.join(dir).join(argv0))
            .find(|candidate| candidate.is_file())?
    };
    candidate.is_file().then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv0_is_made_absolute_against_the_directory_or_found_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("app"), "").unwrap();
        let root = Path::new("/");
        let absolute = bin.join("app");
        assert_eq!(resolve(&absolute, root, None), Some(absolute.clone()));
        assert_eq!(
            resolve(Path::new("bin/app"), dir.path(), None),
            Some(dir.path().join("bin/app"))
        );
        let path = std::env::join_paths(["/nonexistent", bin.to_str().unwrap()]).unwrap();
        assert_eq!(resolve(Path::new("app"), root, Some(&path)), Some(absolute));
        assert_eq!(resolve(Path::new("app"), root, None), None, "no PATH");
        assert_eq!(resolve(Path::new("bin/gone"), dir.path(), None), None);
        assert_eq!(resolve(Path::new(""), dir.path(), None), None);
    }
}
