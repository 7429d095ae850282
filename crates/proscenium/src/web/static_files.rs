//! Static files below a root directory: content types, validators and 304s, single
//! byte ranges, index files and directory listings, precompressed siblings
//! (`style.css.br`), never anything outside the root. (A file without a sibling is
//! compressed, if at all, as any answer is: `http::compress`.)
//!
//! The handler runs inline on the loop: `stat`, `open` and small reads hit the page
//! cache and take microseconds; large files are not read at all but sent with
//! `sendfile(2)` by the connection. Nothing it does may wait on anything else: files
//! are opened with `O_NONBLOCK` (a FIFO would otherwise block the open until a writer
//! came), only regular files and directories are served, and a listing stats its
//! entries without opening them. Where the thread has a cache of small files (the
//! staged model's, `file_cache.rs`), a file it holds comes from it instead.

use std::fs::{File, Metadata};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};

use super::conditional::{Range, Validators, parse_range};
use super::file_cache::{self, Cached, Found, Lookup, Version};
use super::listing;
use crate::app::{Handler, Mode, Reply, Response, error};
use crate::http::{Body, Request, compress};

/// Files up to this size are read into memory and written with the head in one write;
/// larger ones are sent with sendfile.
const READ_LIMIT: u64 = 64 * 1024;

/// Serves files below a root directory.
///
/// Used as the fallback (`App::fallback(StaticFiles::new("site"))`: the request path is
/// the file path) or on a route with a catch-all parameter
/// (`app.get("/static/*path", StaticFiles::new("assets"))`: the parameter is).
///
/// # Examples
///
/// ```
/// use proscenium::{App, web::StaticFiles};
///
/// let app = App::new().fallback(StaticFiles::new("examples/site"));
/// ```
#[derive(Debug, Clone)]
pub struct StaticFiles {
    root: Arc<Root>,
    show_dotfiles: bool,
    /// Whether a file's precompressed sibling is served (see [`Self::precompressed`]).
    precompressed: bool,
    withheld: Arc<[Withheld]>,
}

/// A file never served nor listed (the server's configuration): known by its path
/// below the root, so one made after the start is too, and by its identity, so a
/// link to it is as well.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Withheld {
    relative: Option<PathBuf>,
    identity: Option<(u64, u64)>,
}

/// The root directory, opened once. Every file is opened relative to it with
/// `openat2(RESOLVE_BENEATH)`: the kernel refuses any path that leads outside — `..`,
/// absolute, or through a symlink — in the same syscall that opens the file, with no
/// window between a check and the open.
#[derive(Debug)]
struct Root {
    path: PathBuf,
    dir: Option<OwnedFd>,
}

impl StaticFiles {
    /// Returns a handler serving files below `root`.
    ///
    /// The directory is opened now; if it does not exist yet, each request tries again.
    pub fn new(root: impl AsRef<Path>) -> Self {
        let path = root.as_ref().to_owned();
        let dir = open_dir(&path)
            .inspect_err(|e| tracing::warn!("static root {}: {e}", path.display()))
            .ok();
        Self {
            root: Arc::new(Root { path, dir }),
            show_dotfiles: false,
            precompressed: true,
            withheld: Arc::new([]),
        }
    }

    /// Never serves nor lists the file at `path` — the server's configuration, where
    /// passwords go: it is answered 404 as a hidden name is, under its own name or a
    /// link's. [`site::configure`](crate::site::configure) withholds the configuration
    /// file read and the root's `proscenium.toml`.
    #[must_use]
    pub fn withhold(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
        let relative = absolute(path)
            .strip_prefix(absolute(&self.root.path))
            .ok()
            .map(Path::to_owned);
        let identity = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        let mut withheld = self.withheld.to_vec();
        withheld.push(Withheld { relative, identity });
        self.withheld = withheld.into();
        self
    }

    /// Whether `relative`, or the file of `identity`, is withheld.
    fn is_withheld(&self, relative: &Path, identity: Option<(u64, u64)>) -> bool {
        self.withheld.iter().any(|w| {
            w.relative.as_deref() == Some(relative)
                || (identity.is_some() && w.identity == identity)
        })
    }

    /// Whether a directory entry is listed: not hidden, not withheld.
    fn is_listed(&self, relative: &Path, stat: &listing::Stat) -> bool {
        let name = relative.file_name().unwrap_or_default().to_string_lossy();
        (self.show_dotfiles || !name.starts_with('.'))
            && !self.is_withheld(relative, Some(stat.identity))
    }

    /// Serves files and folders whose names start with a dot (hidden by default).
    #[must_use]
    pub fn show_dotfiles(mut self, show: bool) -> Self {
        self.show_dotfiles = show;
        self
    }

    /// Serves a file's precompressed sibling — `style.css.zst`, `.br` or `.gz` — to a
    /// client that accepts its coding (the one it ranks first among those present),
    /// when the sibling is not older than the file, with the file's type, as nginx's
    /// `gzip_static` and Caddy's `precompressed` do. On by default
    /// (`[compression] precompressed`); a request for a range gets the file's.
    #[must_use]
    pub fn precompressed(mut self, serve: bool) -> Self {
        self.precompressed = serve;
        self
    }

    fn serve(&self, req: &Request) -> Response {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut res = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "static files answer GET and HEAD only",
            );
            res.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return res;
        }
        let Resolved {
            relative,
            names_directory,
        } = match self.resolve(req) {
            Ok(resolved) if !self.is_withheld(&resolved.relative, None) => resolved,
            Ok(_) => return error(StatusCode::NOT_FOUND, "no such file"),
            Err(status) => return error(status, "no such file"),
        };
        let opened = self
            .open_beneath(&relative, OFlag::O_RDONLY | OFlag::O_NONBLOCK)
            .and_then(|f| Ok((f.metadata()?, f)));
        match opened {
            Ok((meta, _)) if self.is_withheld(&relative, Some((meta.dev(), meta.ino()))) => {
                error(StatusCode::NOT_FOUND, "no such file")
            }
            Ok((meta, _)) if meta.is_dir() && !names_directory => redirect_to_directory(req),
            Ok((meta, dir)) if meta.is_dir() => self.directory(req, &relative, dir),
            // `/file.txt/` names a directory, which a file is not (nginx: 404); served,
            // the file's relative links would resolve below it.
            Ok((meta, file)) if meta.is_file() && !names_directory => {
                self.answer_file(req, file, &relative, &meta)
            }
            // A FIFO, socket or device: 404 as nginx answers, saying nothing of what the
            // name is, since only regular files and directories are ever served.
            Ok(_) => error(StatusCode::NOT_FOUND, "no such file"),
            Err(e) => io_error(&e, &relative),
        }
    }

    /// The file `req` names below the root: its path (the request's, or a catch-all
    /// route's `path` parameter), normalised and checked.
    fn resolve(&self, req: &Request) -> Result<Resolved, StatusCode> {
        let raw = req
            .param("path")
            .map_or_else(|| req.uri().path().to_owned(), |p| format!("/{p}"));
        resolve(&raw, self.show_dotfiles)
    }

    /// Opens `relative` below the root with `flags`, refusing any escape (see [`Root`]).
    fn open_beneath(&self, relative: &Path, flags: OFlag) -> std::io::Result<File> {
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let path = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let fd = match &self.root.dir {
            Some(dir) => openat2(dir, path, how),
            None => openat2(open_dir(&self.root.path)?, path, how),
        };
        Ok(File::from(fd.map_err(std::io::Error::from)?))
    }

    /// Returns what the symlink `relative` leads to, if it stays below the root. The
    /// `O_PATH` handle resolves the link without opening its target.
    fn follow(&self, relative: &Path) -> Option<listing::Stat> {
        let target = self.open_beneath(relative, OFlag::O_PATH).ok()?;
        listing::Stat::of(&nix::sys::stat::fstat(&target).ok()?)
    }

    /// Serves `index.html` or a listing of `dir`.
    fn directory(&self, req: &Request, relative: &Path, dir: File) -> Response {
        let index = relative.join("index.html");
        match self
            .open_beneath(&index, OFlag::O_RDONLY | OFlag::O_NONBLOCK)
            .and_then(|f| Ok((f.metadata()?, f)))
        {
            Ok((meta, file))
                if meta.is_file() && !self.is_withheld(&index, Some((meta.dev(), meta.ino()))) =>
            {
                self.answer_file(req, file, &index, &meta)
            }
            _ => listing::render(
                req,
                dir.into(),
                &relative.display().to_string(),
                &|name, stat| self.is_listed(&relative.join(name), stat),
                &|name| self.follow(&relative.join(name)),
            ),
        }
    }

    /// Serves the regular file `relative`, opened as `file`: its precompressed sibling
    /// when there is one to serve, else the file itself.
    fn answer_file(&self, req: &Request, file: File, relative: &Path, meta: &Metadata) -> Response {
        let modified = meta.modified().unwrap_or(UNIX_EPOCH);
        self.sibling(req, relative, modified)
            .unwrap_or_else(|| serve_file(req, file, relative, meta))
    }

    /// The answer from `relative`'s precompressed sibling (see [`Self::precompressed`]),
    /// if one is to be served: the first one not older than the file (`modified`), a
    /// regular file below the root and not withheld, in the codings the request
    /// accepts, most wanted first.
    fn sibling(&self, req: &Request, relative: &Path, modified: SystemTime) -> Option<Response> {
        if !self.precompressed || req.headers().contains_key(header::RANGE) {
            return None;
        }
        let accepted = req.headers().get(header::ACCEPT_ENCODING)?;
        compress::ranked(accepted.as_bytes()).find_map(|coding| {
            let mut name = relative.as_os_str().to_owned();
            name.push(".");
            name.push(coding.extension());
            let path = PathBuf::from(name);
            let file = self
                .open_beneath(&path, OFlag::O_RDONLY | OFlag::O_NONBLOCK)
                .ok()?;
            let found = file.metadata().ok()?;
            let usable = found.is_file()
                && found.modified().is_ok_and(|m| m >= modified)
                && !self.is_withheld(&path, Some((found.dev(), found.ino())));
            if !usable {
                return None;
            }
            // The file's name gives the type: the sibling's would be gzip's.
            let mut res = serve_file(req, file, relative, &found);
            let headers = res.headers_mut();
            headers.insert(
                header::CONTENT_ENCODING,
                HeaderValue::from_static(coding.name()),
            );
            compress::vary(headers);
            Some(res)
        })
    }

    /// Answers `req` from this thread's cache of small files, when it has one, the
    /// request names a file and the cache holds it; gives the request back otherwise,
    /// to be served as without a cache.
    fn ask_cache(&self, req: Request) -> Result<Reply, Request> {
        if !file_cache::installed() || req.method() != Method::GET && req.method() != Method::HEAD {
            return Err(req);
        }
        let relative = match self.resolve(&req) {
            Ok(resolved) if !resolved.names_directory => resolved.relative,
            _ => return Err(req),
        };
        // Answered 404 the uncached way.
        if self.is_withheld(&relative, None) {
            return Err(req);
        }
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        let lookup = Lookup {
            files: self.clone(),
            relative: relative.clone(),
            reply,
        };
        if !file_cache::ask(lookup) {
            return Err(req);
        }
        // Answered before `ask` returns: a hit is served inline, and a miss as without
        // a cache (the cache reads the file meanwhile).
        match answer.try_recv() {
            Ok(Some(cached)) if !self.is_withheld(&relative, Some(cached.version.identity)) => {
                let res = self
                    .sibling(&req, &relative, cached.version.modified)
                    .unwrap_or_else(|| serve_cached(&req, &cached, &relative));
                Ok(Reply::ready(res))
            }
            _ => Err(req),
        }
    }

    /// The metadata of `relative` below the root, symlinks followed but never out of
    /// it (see [`Root`]); nothing is opened for reading.
    #[cfg(any(feature = "cgi", feature = "lua"))]
    pub(crate) fn metadata_beneath(&self, relative: &Path) -> std::io::Result<Metadata> {
        self.open_beneath(relative, OFlag::O_PATH)?.metadata()
    }

    /// Whether `path` (a request's) names a regular file below the root, as these
    /// files would serve it: what a hosted app below them leaves to them.
    #[cfg(feature = "hosted")]
    pub(crate) fn has_file(&self, path: &str) -> bool {
        let Ok(resolved) = resolve(path, self.show_dotfiles) else {
            return false;
        };
        !resolved.relative.as_os_str().is_empty()
            && self
                .open_beneath(&resolved.relative, OFlag::O_PATH)
                .and_then(|file| file.metadata())
                .is_ok_and(|meta| meta.is_file())
    }

    /// The root's path: with a relative path, what names a file for a cache.
    pub(crate) fn root_path(&self) -> &Path {
        &self.root.path
    }

    /// Reads the regular file `relative`: whole when it is `keep_up_to` bytes or
    /// fewer, else only its version; `None` for anything else (a directory, a FIFO).
    pub(crate) fn read(&self, relative: &Path, keep_up_to: u64) -> std::io::Result<Option<Found>> {
        let file = self.open_beneath(relative, OFlag::O_RDONLY | OFlag::O_NONBLOCK)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(None);
        }
        let version = Version::of(&meta);
        if meta.len() > keep_up_to {
            return Ok(Some(Found::Large(version)));
        }
        let mut bytes = vec![0; usize::try_from(meta.len()).unwrap_or(0)];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0)?;
        Ok(Some(Found::Small(Cached {
            bytes: bytes.into(),
            version,
        })))
    }

    /// Whether `relative` is still the file of `version`: one `stat`, no open. A path
    /// that now leads elsewhere (outside the root, too) names another file, so the
    /// next read goes through the checked open again.
    pub(crate) fn still(&self, relative: &Path, version: &Version) -> bool {
        let stat = match &self.root.dir {
            Some(dir) => nix::sys::stat::fstatat(dir, relative, nix::fcntl::AtFlags::empty()),
            None => return false,
        };
        stat.is_ok_and(|st| {
            let modified = UNIX_EPOCH
                + std::time::Duration::new(
                    u64::try_from(st.st_mtime).unwrap_or(0),
                    u32::try_from(st.st_mtime_nsec).unwrap_or(0),
                );
            version
                == &Version {
                    identity: (st.st_dev, st.st_ino),
                    len: u64::try_from(st.st_size).unwrap_or(u64::MAX),
                    modified,
                }
        })
    }
}

impl Handler<StaticFiles> for StaticFiles {
    fn call(&self, req: Request) -> Reply {
        self.ask_cache(req)
            .unwrap_or_else(|req| Reply::ready(self.serve(&req)))
    }

    fn mode(&self) -> Mode {
        Mode::Inline
    }
}

/// Redirects a directory asked for without its final slash to the slash form, so that
/// relative links in its page resolve inside it.
fn redirect_to_directory(req: &Request) -> Response {
    let query = req
        .uri()
        .query()
        .map_or_else(String::new, |q| format!("?{q}"));
    let location = format!("{}/{query}", collapse_slashes(req.uri().path()));
    let mut res = error(StatusCode::MOVED_PERMANENTLY, "a directory");
    if let Ok(value) = HeaderValue::from_str(&location) {
        res.headers_mut().insert(header::LOCATION, value);
    }
    res
}

/// Returns `path` with each run of slashes made one. A Location of `//docs/` is a
/// network-path reference (RFC 3986 §4.2): a browser would go to the host `docs`.
fn collapse_slashes(path: &str) -> String {
    let mut collapsed = String::with_capacity(path.len());
    for c in path.chars() {
        if c != '/' || !collapsed.ends_with('/') {
            collapsed.push(c);
        }
    }
    collapsed
}

/// A request path resolved below the root.
#[derive(Debug, PartialEq, Eq)]
struct Resolved {
    /// The path relative to the root, with `.` segments and repeated slashes gone.
    relative: PathBuf,
    /// Whether the path ends in `/` (or `/.`): only a directory can answer it.
    names_directory: bool,
}

/// Resolves a request path below the root, or returns the status to refuse it with:
/// 400 for what no client should send (NUL, backslash, bad encoding), 404 for `..`
/// segments and hidden names, as if they did not exist.
fn resolve(raw: &str, show_dotfiles: bool) -> Result<Resolved, StatusCode> {
    let decoded = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| StatusCode::BAD_REQUEST)?;
    if decoded.contains('\0') || decoded.contains('\\') {
        return Err(StatusCode::BAD_REQUEST);
    }
    let mut relative = PathBuf::new();
    for component in Path::new(decoded.as_ref()).components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(name)
                if !show_dotfiles && name.to_string_lossy().starts_with('.') =>
            {
                return Err(StatusCode::NOT_FOUND);
            }
            Component::Normal(name) => relative.push(name),
            Component::ParentDir | Component::Prefix(_) => return Err(StatusCode::NOT_FOUND),
        }
    }
    Ok(Resolved {
        relative,
        names_directory: decoded.ends_with('/') || decoded.ends_with("/."),
    })
}

/// Opens a directory as a handle for `openat2`.
fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    nix::fcntl::open(path, flags, nix::sys::stat::Mode::empty()).map_err(std::io::Error::from)
}

fn io_error(e: &std::io::Error, path: &Path) -> Response {
    // EXDEV: the path would leave the root; ELOOP: a symlink loop or a magic link.
    if e.raw_os_error()
        .is_some_and(|code| code == nix::libc::EXDEV || code == nix::libc::ELOOP)
    {
        return error(StatusCode::NOT_FOUND, "no such file");
    }
    match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
            error(StatusCode::NOT_FOUND, "no such file")
        }
        std::io::ErrorKind::PermissionDenied => error(StatusCode::FORBIDDEN, "not readable"),
        _ => {
            tracing::warn!("cannot serve {}: {e}", path.display());
            error(StatusCode::INTERNAL_SERVER_ERROR, "cannot read the file")
        }
    }
}

/// Serves one opened regular file (`path` names it for its type): 200, 206, 304 or 416.
fn serve_file(req: &Request, file: File, path: &Path, meta: &Metadata) -> Response {
    let validators = Validators::of(meta);
    let res = respond(req, path, &validators, meta.len(), |offset, count| {
        body(file, offset, count, req.method() == Method::HEAD)
    });
    noting(res, Version::of(meta))
}

/// Serves a file's content from a cache, as [`serve_file`] serves the file.
fn serve_cached(req: &Request, cached: &Cached, path: &Path) -> Response {
    let Version { len, modified, .. } = cached.version;
    let res = respond(
        req,
        path,
        &Validators::new(len, modified),
        len,
        |offset, count| {
            let (start, end) = (
                usize::try_from(offset).unwrap_or(usize::MAX),
                usize::try_from(offset + count).unwrap_or(usize::MAX),
            );
            Ok(Body::from(cached.bytes.slice(start..end)))
        },
    );
    noting(res, cached.version)
}

/// Notes on a whole file's answer which version of the file it is, by which the
/// server keeps the file compressed (`http::compress`).
fn noting(mut res: Response, version: Version) -> Response {
    if res.status() == StatusCode::OK {
        res.extensions_mut().insert(version);
    }
    res
}

/// The answer to `req` for a file of `len` bytes with `validators` (`path` names it
/// for its type), its content as `body` gives it from an offset and a count: 200, 206,
/// 304 or 416.
fn respond(
    req: &Request,
    path: &Path,
    validators: &Validators,
    len: u64,
    body: impl FnOnce(u64, u64) -> std::io::Result<Body>,
) -> Response {
    let mut headers = HeaderMap::new();
    validators.insert(&mut headers);
    if validators.is_fresh(req.headers()) {
        return with_headers(StatusCode::NOT_MODIFIED, headers, Body::empty());
    }
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::CONTENT_TYPE, content_type(path));
    let range = match req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
    {
        Some(value) if validators.if_range_holds(req.headers()) => parse_range(value, len),
        _ => Range::Whole,
    };
    let (status, offset, count) = match range {
        Range::Whole => (StatusCode::OK, 0, len),
        Range::Part(first, last) => {
            insert_str(
                &mut headers,
                header::CONTENT_RANGE,
                &format!("bytes {first}-{last}/{len}"),
            );
            (StatusCode::PARTIAL_CONTENT, first, last - first + 1)
        }
        Range::Unsatisfiable => {
            insert_str(
                &mut headers,
                header::CONTENT_RANGE,
                &format!("bytes */{len}"),
            );
            headers.remove(header::CONTENT_TYPE);
            return with_headers(StatusCode::RANGE_NOT_SATISFIABLE, headers, Body::empty());
        }
    };
    match body(offset, count) {
        Ok(body) => with_headers(status, headers, body),
        Err(e) => io_error(&e, path),
    }
}

/// Reads a small region into memory, or opens the file for sendfile. For HEAD nothing
/// is read, but the length is kept so Content-Length is right.
fn body(file: File, offset: u64, count: u64, head_only: bool) -> std::io::Result<Body> {
    if count > READ_LIMIT || head_only {
        return Ok(Body::from_file(file, offset, count));
    }
    let mut bytes = vec![0; usize::try_from(count).unwrap_or(0)];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, offset)?;
    Ok(Body::from(bytes))
}

fn with_headers(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut res = Response::new(body);
    *res.status_mut() = status;
    *res.headers_mut() = headers;
    res
}

fn insert_str(headers: &mut HeaderMap, name: header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
}

/// Returns the MIME type for `path`, with `charset=utf-8` for text.
fn content_type(path: &Path) -> HeaderValue {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let text = mime.type_() == mime_guess::mime::TEXT
        || matches!(mime.subtype().as_str(), "javascript" | "json" | "xml");
    let value = if text {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    };
    HeaderValue::from_str(&value)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_paths_below_the_root_and_refuses_escapes() {
        let relative = |raw| resolve(raw, false).unwrap().relative;
        assert_eq!(relative("/a/b.txt"), Path::new("a/b.txt"));
        assert_eq!(relative("/a%20b/./c"), Path::new("a b/c"));
        let refused = [
            ("/../etc/passwd", StatusCode::NOT_FOUND),
            ("/%2e%2e/etc/passwd", StatusCode::NOT_FOUND),
            ("/a/..%2f..%2fetc", StatusCode::NOT_FOUND),
            ("/.git/config", StatusCode::NOT_FOUND),
            ("/a%00b", StatusCode::BAD_REQUEST),
            ("/a%5c..%5cb", StatusCode::BAD_REQUEST),
            ("/%ff", StatusCode::BAD_REQUEST),
        ];
        for (raw, status) in refused {
            assert_eq!(resolve(raw, false).unwrap_err(), status, "{raw}");
        }
        assert!(resolve("/.well-known/x", true).is_ok());
    }

    #[test]
    fn notes_paths_that_name_a_directory() {
        for (raw, names_directory) in [
            ("/", true),
            ("/a", false),
            ("/a/", true),
            ("/a/.", true),
            ("/a%2F", true),
            ("/a/.b", false),
        ] {
            let resolved = resolve(raw, true).unwrap();
            assert_eq!(resolved.names_directory, names_directory, "{raw}");
        }
    }

    #[test]
    fn collapses_runs_of_slashes() {
        assert_eq!(collapse_slashes("//docs"), "/docs");
        assert_eq!(collapse_slashes("/a///b/"), "/a/b/");
        assert_eq!(collapse_slashes("/a/b"), "/a/b");
    }
}
