//! CGI/1.1 (RFC 3875): programs below the served directory answer requests — any
//! file in a CGI directory (`cgi-bin/` by default) run as it is, and files with a
//! configured extension anywhere below the root run through their interpreter
//! (`[cgi] interpreters = { rb = "ruby", py = "python3" }`, Yarn's `.rb` scripts).
//!
//! A script gets the request's meta-variables in an environment built from nothing
//! ([`env`](self) — no variable of the server's own leaks into it, and a `Proxy`
//! request header never becomes `HTTP_PROXY`), the request body on its standard
//! input, and its standard error goes to the error log under its name. No shell is
//! involved anywhere: the program (or its interpreter) is executed with the script's
//! path as an argument, in the script's directory, as `[cgi] user` when the server
//! runs as root. Its output is read as a CGI response — `Status`, `Location` (a local
//! path is served in place, an absolute URL redirects the client), `Content-Type`
//! and any other fields — and its body streamed to the client as it comes, with
//! `Content-Length` when the script gave one and chunked otherwise, so an output of
//! any size never sits in the server's memory. A page run through an interpreter
//! keeps Yarn's conventions besides (`run.rs`): output without a header section is
//! the body, and without `Status` its first 64 KiB are held until it exits, so a page
//! that fails by then gets 500.
//!
//! Bounds: a script runs for `[cgi] timeout` at most, wall clock (then its whole
//! process group is killed: 504 if it had not answered, the connection cut if it
//! had); a client that hangs up kills it; when its output ends its group is killed
//! too, and its slot given back once it has been waited for, so nothing it started
//! outlives its answer; past `[cgi] max_scripts` running at once a request gets 503
//! with `Retry-After`; output that is not a CGI response (a 1xx status among it), or
//! a script that fails before any, gets 502 with the reason logged; a body is held to
//! its `Content-Length` (cut past it, the connection closed); and of its standard
//! error `[cgi] log_lines` lines and `log_bytes` bytes are logged, the rest counted. Scripts are separate
//! processes watched by the loop's reactor (tokio's process support): no loop or
//! thread waits for one, under any execution model.
//!
//! # Example
//!
//! ```
//! use proscenium::App;
//! use proscenium::cgi::{Cgi, CgiSpec};
//! use proscenium::web::StaticFiles;
//!
//! // Every file below site/cgi-bin/ is a program; site/'s other files are static.
//! let spec = CgiSpec { enabled: true, ..CgiSpec::default() };
//! let scripts = Cgi::new("examples/site", &spec).or_files(StaticFiles::new("examples/site"));
//! let app = App::new().fallback(scripts);
//! ```

mod env;
mod locate;
mod output;
mod run;
mod stage;

pub(crate) use self::stage::{CgiJob, install_stage};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use tokio::sync::Semaphore;

use tokio::sync::OwnedSemaphorePermit;

use self::locate::Script;
use self::run::Outcome;
use crate::app::{Handler, Mode, Reply, error};
pub use crate::config::CgiSpec;
use crate::http::response::unavailable;
use crate::http::{Request, Response};
use crate::web::StaticFiles;

/// Runs the CGI scripts below a root directory (see the [module docs](self)).
///
/// A request for anything else is answered 404, or by static files given to
/// [`or_files`](Self::or_files).
#[derive(Debug, Clone)]
pub struct Cgi(Arc<Inner>);

#[derive(Debug, Clone)]
struct Inner {
    /// The root, absolute: scripts are executed by their full path.
    root: PathBuf,
    files: StaticFiles,
    /// What serves the requests that name no script.
    fallback: Option<StaticFiles>,
    /// The port the server listens on, for `SERVER_PORT`.
    port: Option<u16>,
    dirs: Vec<PathBuf>,
    interpreters: BTreeMap<String, Vec<String>>,
    timeout: Duration,
    running: Arc<Semaphore>,
    user: Option<run::User>,
    log: run::LogBounds,
    software: String,
}

/// How many local redirects (`Location: /path`) one request may follow.
const MAX_LOCAL_REDIRECTS: usize = 8;

impl Cgi {
    /// Returns a handler running the scripts below `root` as `spec` says (whether
    /// `spec.enabled` or not: that switch is the configuration's, for
    /// [`site::configure`](crate::site::configure)).
    ///
    /// A `spec.user` that does not exist, or a server not running as root, is
    /// logged, and scripts run as the server's user.
    pub fn new(root: impl AsRef<Path>, spec: &CgiSpec) -> Self {
        let root = root.as_ref();
        let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
        Self(Arc::new(Inner {
            files: StaticFiles::new(&absolute).show_dotfiles(true),
            root: absolute,
            fallback: None,
            port: None,
            dirs: spec.dirs.iter().map(PathBuf::from).collect(),
            interpreters: spec
                .interpreters
                .iter()
                .map(|(ext, line)| (ext.clone(), split_program(line)))
                .filter(|(_, argv)| !argv.is_empty())
                .collect(),
            timeout: spec.timeout,
            running: Arc::new(Semaphore::new(spec.max_scripts)),
            user: spec.user.as_deref().and_then(run::User::named),
            log: run::LogBounds {
                lines: spec.log_lines,
                bytes: spec.log_bytes,
            },
            software: format!("proscenium/{}", env!("CARGO_PKG_VERSION")),
        }))
    }

    /// Serves what is not a script with `files` (those of the same root, say).
    #[must_use]
    pub fn or_files(self, files: StaticFiles) -> Self {
        self.with(|inner| inner.fallback = Some(files))
    }

    /// Gives scripts `port` as `SERVER_PORT`: the port the server listens on
    /// ([`site::configure`](crate::site::configure) sets it). Without it, the port of
    /// the request's `Host`.
    #[must_use]
    pub fn port(self, port: u16) -> Self {
        self.with(|inner| inner.port = Some(port))
    }

    fn with(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.0);
        change(&mut inner);
        Self(Arc::new(inner))
    }
}

impl Handler<Cgi> for Cgi {
    fn call(&self, req: Request) -> Reply {
        let script = match locate::script(&self.0, req.uri().path()) {
            Ok(Some(script)) => script,
            Ok(None) => return self.not_a_script(req),
            Err(refused) => return Reply::ready(refused.response()),
        };
        let cgi = self.clone();
        stage::answer(self.0.timeout, move |until| async move {
            let running = Arc::clone(&cgi.0.running);
            let permit = match until {
                None => running.try_acquire_owned().ok(),
                Some(until) => tokio::time::timeout_at(until.into(), running.acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok),
            };
            let Some(permit) = permit else {
                tracing::warn!("cgi: {} refused: every script slot busy", script.name);
                return unavailable("too many scripts running; try again shortly");
            };
            cgi.answer(req, script, permit).await
        })
    }

    fn mode(&self) -> Mode {
        Mode::Async
    }
}

impl Cgi {
    /// Runs `script` for `req`, and the scripts its local redirects lead to.
    async fn answer(
        &self,
        mut req: Request,
        mut script: Script,
        mut permit: OwnedSemaphorePermit,
    ) -> Response {
        for _ in 0..=MAX_LOCAL_REDIRECTS {
            let location = match run::run(&self.0, &script, &req, permit).await {
                Outcome::Response(res) => return res,
                Outcome::LocalRedirect(location, back) => {
                    permit = back;
                    location
                }
            };
            req = match redirected(&req, &location) {
                Some(next) => next,
                None => {
                    tracing::error!("cgi: {}: a bad Location {location:?}", script.name);
                    return error(StatusCode::BAD_GATEWAY, "the script redirected badly");
                }
            };
            match locate::script(&self.0, req.uri().path()) {
                Ok(Some(next)) => script = next,
                Ok(None) => {
                    drop(permit);
                    return self.not_a_script(req).into_response().await;
                }
                Err(refused) => return refused.response(),
            }
        }
        tracing::error!(
            "cgi: {}: more than {MAX_LOCAL_REDIRECTS} local redirects",
            script.name
        );
        error(
            StatusCode::BAD_GATEWAY,
            "the script redirected too many times",
        )
    }
}

impl Cgi {
    /// Answers a request that names no script: the static files', if any.
    fn not_a_script(&self, req: Request) -> Reply {
        match &self.0.fallback {
            Some(files) => files.call(req),
            None => Reply::ready(error(StatusCode::NOT_FOUND, "no such script")),
        }
    }
}

/// The request a local redirect to `location` makes of `req` (RFC 3875 §6.2.2): a
/// GET of that path and query, with the same header fields but the body's.
fn redirected(req: &Request, location: &str) -> Option<Request> {
    let uri: http::Uri = location.parse().ok()?;
    let mut next = http::Request::new(bytes::Bytes::new());
    *next.uri_mut() = uri;
    *next.version_mut() = req.version();
    *next.headers_mut() = req.headers().clone();
    next.headers_mut().remove(http::header::CONTENT_LENGTH);
    next.headers_mut().remove(http::header::CONTENT_TYPE);
    let mut next = Request::from(next);
    if let Some(peer) = req.peer_addr() {
        next.set_peer(peer);
    }
    Some(next)
}

/// A program and its arguments, split at spaces.
fn split_program(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests;
