//! Which script a request path names, and the path after it: `/cgi-bin/env.sh/a/b`
//! is the script `/cgi-bin/env.sh` with `PATH_INFO` `/a/b` (RFC 3875 §4.1.5) — the
//! first regular file met walking the path's segments down from the root.

use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use http::StatusCode;

use super::Inner;
use crate::app::error;
use crate::http::Response;

/// A script a request runs.
#[derive(Debug, Clone)]
pub(super) struct Script {
    /// Its URL path (`SCRIPT_NAME`), decoded; also its name in the logs.
    pub(super) name: String,
    /// The request path after it (`PATH_INFO`): empty, or starting with `/`.
    pub(super) path_info: String,
    /// Its file, absolute.
    pub(super) file: PathBuf,
    /// The interpreter it runs through (a program and its arguments), or `None` for
    /// a program in a CGI directory, executed itself.
    pub(super) interpreter: Option<Vec<String>>,
}

/// Why a path is refused: its status and what the answer says.
#[derive(Debug)]
pub(super) struct Refused(pub(super) StatusCode, pub(super) &'static str);

impl Refused {
    pub(super) fn response(self) -> Response {
        error(self.0, self.1)
    }
}

/// Finds the script `path` names: `None` when it names none (a static file, a
/// directory, nothing), or why it is refused when it names a file in a CGI directory
/// that is not executable (403), or is malformed (400).
pub(super) fn script(cgi: &Inner, path: &str) -> Result<Option<Script>, Refused> {
    let Ok(decoded) = percent_encoding::percent_decode_str(path).decode_utf8() else {
        return Err(Refused(StatusCode::BAD_REQUEST, "the path is not UTF-8"));
    };
    if decoded.contains('\0') || decoded.contains('\\') {
        return Err(Refused(StatusCode::BAD_REQUEST, "no such path"));
    }
    let segments: Vec<&str> = decoded
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    // `..` and hidden names are never scripts; the static files refuse them.
    if segments.iter().any(|s| s.starts_with('.')) || !could_be_script(cgi, &segments) {
        return Ok(None);
    }
    let mut relative = PathBuf::new();
    for (at, segment) in segments.iter().enumerate() {
        relative.push(segment);
        let meta = match cgi.files.metadata_beneath(&relative) {
            Ok(meta) => meta,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => {
                tracing::warn!("cgi: cannot look at {}: {e}", relative.display());
                return Err(Refused(StatusCode::FORBIDDEN, "not readable"));
            }
        };
        if meta.is_dir() {
            continue;
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let interpreter = if in_cgi_dir(cgi, &relative) {
            if meta.permissions().mode() & 0o111 == 0 {
                tracing::warn!("cgi: {}: not executable", relative.display());
                return Err(Refused(
                    StatusCode::FORBIDDEN,
                    "the script is not executable",
                ));
            }
            None
        } else {
            match interpreter_of(cgi, segment) {
                Some(interpreter) => Some(interpreter.clone()),
                None => return Ok(None),
            }
        };
        let rest = &segments[at + 1..];
        let mut path_info = rest.iter().map(|s| format!("/{s}")).collect::<String>();
        if !rest.is_empty() && decoded.ends_with('/') {
            path_info.push('/');
        }
        return Ok(Some(Script {
            name: format!("/{}", segments[..=at].join("/")),
            path_info,
            file: cgi.root.join(&relative),
            interpreter,
        }));
    }
    Ok(None)
}

/// Whether a path could name a script at all — below a CGI directory, or through a
/// segment with an interpreter's extension — so that other paths cost no `stat`s.
fn could_be_script(cgi: &Inner, segments: &[&str]) -> bool {
    cgi.dirs.iter().any(|dir| {
        let dir: Vec<_> = dir.components().collect();
        segments.len() > dir.len()
            && dir
                .iter()
                .zip(segments)
                .all(|(d, s)| d.as_os_str() == std::ffi::OsStr::new(s))
    }) || segments.iter().any(|s| interpreter_of(cgi, s).is_some())
}

/// Whether `relative` is below one of the CGI directories.
fn in_cgi_dir(cgi: &Inner, relative: &Path) -> bool {
    cgi.dirs
        .iter()
        .any(|dir| relative.starts_with(dir) && relative != dir)
}

fn interpreter_of<'a>(cgi: &'a Inner, name: &str) -> Option<&'a Vec<String>> {
    let (_, extension) = name.rsplit_once('.')?;
    cgi.interpreters.get(extension)
}

/// Whether an error says the path names nothing servable: missing, through a file,
/// or leading outside the root (EXDEV, ELOOP from `RESOLVE_BENEATH`).
fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    ) || e
        .raw_os_error()
        .is_some_and(|code| code == nix::libc::EXDEV || code == nix::libc::ELOOP)
}
