//! Hosted apps: a Rack app (`config.ru`, Yarn's `--rack`) or a WSGI app
//! (`module:app`) run by a supervised pool of persistent interpreter processes, one
//! request at a time each, while Proscenium parses HTTP, serves the static files,
//! applies its limits and timeouts, and writes the answers. A slow app holds one
//! process, never a loop.
//!
//! The adapters, a short Ruby file and a short Python file in this crate
//! (`rack.rb`, `wsgi.py`), are written to a private directory when the pool starts;
//! they speak the frames of `framing.rs` over each process's standard input and
//! output. The processes live and are replaced as `pool.rs` says.
//!
//! # Example
//!
//! ```toml
//! root = "public"          # files served before the app
//! [hosted]
//! rack = "config.ru"       # or: wsgi = "hello:app" (imported from the file's directory)
//! processes = 4
//! ```

mod env;
mod framing;
mod pool;

use std::path::Path;
use std::sync::Arc;

use http::{HeaderName, HeaderValue, StatusCode};

use self::env::PathForm;
use self::pool::{Failed, Launch, Pool};
use crate::app::{Handler, Mode, Reply, error};
use crate::config::{Config, HostedSpec};
use crate::http::{Body, Request, Response};
use crate::web::StaticFiles;

const RACK_ADAPTER: &str = include_str!("rack.rb");
const WSGI_ADAPTER: &str = include_str!("wsgi.py");

/// Header fields of an app's answer the server writes itself: the connection's and
/// the body's framing.
const SERVERS_OWN: [&str; 4] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
];

/// A hosted app, below the app's own routes; cloned, it is the same pool.
#[derive(Debug, Clone)]
pub(crate) struct Hosted(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    pool: Arc<Pool>,
    path: PathForm,
    /// The static files served before the app: a request for a regular file is
    /// theirs.
    files: Option<StaticFiles>,
    port: u16,
    /// The adapter's directory, removed when the app is dropped.
    _adapter: tempfile::TempDir,
}

/// Why a hosted app did not start.
#[derive(Debug, thiserror::Error)]
pub enum HostedError {
    /// Both a Rack and a WSGI app are named.
    #[error("[hosted] names both a Rack app and a WSGI app; one server hosts one")]
    Both,
    /// The interpreters did not start, or did not load the app.
    #[error("the hosted app did not start: {0}")]
    Start(#[from] std::io::Error),
}

impl Hosted {
    /// Starts the app `config` names (`[hosted] rack` or `wsgi`), if it names one,
    /// served after `files` when given.
    ///
    /// # Errors
    ///
    /// [`HostedError`]: both named, or the interpreters not started.
    pub(crate) fn start(
        config: &Config,
        files: Option<StaticFiles>,
    ) -> Result<Option<Self>, HostedError> {
        let spec = &config.hosted;
        let adapter = tempfile::Builder::new()
            .prefix("proscenium-hosted")
            .tempdir()?;
        let (launch, path) = match (&spec.rack, &spec.wsgi) {
            (Some(_), Some(_)) => return Err(HostedError::Both),
            (None, None) => return Ok(None),
            (Some(config_ru), None) => (rack(spec, config_ru, adapter.path())?, PathForm::Raw),
            (None, Some(target)) => (wsgi(spec, target, adapter.path())?, PathForm::Decoded),
        };
        let processes = spec.processes.unwrap_or_else(crate::config::cores).max(1);
        let pool = Pool::start(launch, processes, config.timeouts.queue, spec.timeout)?;
        Ok(Some(Self(Arc::new(Inner {
            pool,
            path,
            files,
            port: config.bind.port(),
            _adapter: adapter,
        }))))
    }

    async fn answer(self, req: Request) -> Response {
        let inner = &*self.0;
        let env = env::build(&req, inner.path, inner.port);
        match inner.pool.ask(env, req.body().clone()).await {
            Ok(answer) => respond(answer),
            Err(failed) => {
                tracing::error!("hosted: {} {}: {failed}", req.method(), req.uri().path());
                match failed {
                    Failed::Busy => error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "every app process is busy; try again shortly",
                    ),
                    Failed::TimedOut => error(StatusCode::GATEWAY_TIMEOUT, "the app took too long"),
                    Failed::NoStart(_) | Failed::Broken(_) => {
                        error(StatusCode::BAD_GATEWAY, "the app failed")
                    }
                }
            }
        }
    }
}

/// The response to an app's answer: its status and header fields (but the server's
/// own), its body whole when it came whole, else streamed as it comes.
fn respond(answer: pool::Answer) -> Response {
    let body = match answer.rest {
        None => Body::from(answer.early.concat()),
        Some(rest) => {
            let early =
                futures_util::stream::iter(answer.early.into_iter().map(Ok::<_, std::io::Error>));
            let rest = futures_util::stream::unfold(rest, |mut rest| async move {
                rest.recv().await.map(|chunk| (chunk, rest))
            });
            Body::from_stream(futures_util::StreamExt::chain(early, rest))
        }
    };
    let mut res = Response::new(body);
    *res.status_mut() = StatusCode::from_u16(answer.head.status).unwrap_or_else(|_| {
        tracing::error!("hosted: the app answered status {}", answer.head.status);
        StatusCode::BAD_GATEWAY
    });
    for (name, value) in answer.head.headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) else {
            tracing::warn!("hosted: the app's header field {name:?} is not HTTP; left out");
            continue;
        };
        if !SERVERS_OWN.contains(&name.as_str()) {
            res.headers_mut().append(name, value);
        }
    }
    res
}

/// How to start a Rack app's interpreters: `ruby rack.rb config.ru` in its directory
/// (so the file is named by its name alone: a relative path as typed would be taken
/// from that directory).
fn rack(spec: &HostedSpec, config_ru: &Path, adapter: &Path) -> std::io::Result<Launch> {
    let file = adapter.join("rack.rb");
    std::fs::write(&file, RACK_ADAPTER)?;
    let (Some(name), dir) = (config_ru.file_name(), config_ru.parent()) else {
        return Err(std::io::Error::other(format!(
            "`{}` names no file",
            config_ru.display()
        )));
    };
    let dir = match dir {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok(Launch {
        program: spec.ruby.clone(),
        args: vec![
            file.display().to_string(),
            name.to_string_lossy().into_owned(),
        ],
        dir: dir.to_owned(),
    })
}

/// How to start a WSGI app's interpreters: `python3 wsgi.py MODULE:APP`, in the
/// working directory (where the module is imported from).
fn wsgi(spec: &HostedSpec, target: &str, adapter: &Path) -> std::io::Result<Launch> {
    let file = adapter.join("wsgi.py");
    std::fs::write(&file, WSGI_ADAPTER)?;
    Ok(Launch {
        program: spec.python.clone(),
        args: vec![file.display().to_string(), target.to_owned()],
        dir: spec
            .dir
            .clone()
            .unwrap_or_else(|| Path::new(".").to_owned()),
    })
}

impl Handler<Hosted> for Hosted {
    fn call(&self, req: Request) -> Reply {
        if let Some(files) = &self.0.files {
            if files.has_file(req.uri().path()) {
                return files.call(req);
            }
        }
        let hosted = self.clone();
        Reply::later(async move { hosted.answer(req).await })
    }

    fn mode(&self) -> Mode {
        Mode::Async
    }
}
