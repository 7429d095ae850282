//! The lab's error type.

/// What can stop a lab run, or keep one server out of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No scenario of that name.
    #[error("unknown scenario `{0}` (one of: {list}, all)", list = crate::scenario::SCENARIOS.join(", "))]
    UnknownScenario(String),
    /// No server of that name.
    #[error(
        "unknown server `{0}` (proscenium:MODEL[/pool=N], fib-cache[:N], proscenium-lua, proscenium-cgi, nginx, nginx-lua, node, node-cluster, node-nbk, actix, hyper, jetty, pekko, vertx, httpd-event, httpd-worker, httpd-prefork)"
    )]
    UnknownServer(String),
    /// No profile of that name.
    #[error("unknown profile `{0}` (quick or full)")]
    UnknownProfile(String),
    /// A program the lab needs is missing and could not be installed, or failed.
    #[error("{0}")]
    Tool(String),
    /// A server or the lab's app did not build; the log is cargo's.
    #[error("building {what} failed:\n{log}")]
    Build {
        /// What was built.
        what: String,
        /// cargo's error output.
        log: String,
    },
    /// A server did not come up.
    #[error("{server} did not start: {reason}")]
    Start {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// A server answered a check wrongly, so measuring it would mean nothing.
    #[error("{server} answered {path} wrongly: {got}")]
    Check {
        /// The server's name.
        server: String,
        /// The path checked.
        path: String,
        /// The status and the start of the body it answered.
        got: String,
    },
    /// A server could not be measured for what its steps are planned from (a
    /// saturation rate, the heavy request's cost), so its steps would mean nothing.
    #[error("{server} could not be calibrated: {reason}")]
    Calibration {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// A load generator failed or printed what the lab cannot read.
    #[error("load generator: {0}")]
    Load(String),
    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// An I/O error, with what was being done.
    #[error("cannot {context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with what was being done, for `map_err`.
    pub(crate) fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Io { context, source }
    }
}
