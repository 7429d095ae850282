//! `[hosted]` in the configuration: a Rack or WSGI app run by interpreter processes
//! ([`hosted`](crate::hosted)).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A hosted app and its processes: `[hosted]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostedSpec {
    /// A Rack app's `config.ru` (`--rack FILE`, Yarn's): run by `ruby`, in the file's
    /// directory.
    pub rack: Option<PathBuf>,
    /// A WSGI app, `module:name` (`--wsgi MODULE:APP`): run by `python`, the module
    /// imported from `dir`.
    pub wsgi: Option<String>,
    /// Where a WSGI app's module is imported from (default: the working directory).
    pub dir: Option<PathBuf>,
    /// Interpreter processes, each serving one request at a time (default: one per
    /// core); past them a request waits up to `timeouts.queue`, then gets 503.
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 1, 10_000>")]
    pub processes: Option<usize>,
    /// How long the app may take to begin its answer (its head); past it, 504 and
    /// the process replaced.
    #[serde(
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub timeout: Duration,
    /// The Ruby a Rack app runs on.
    pub ruby: String,
    /// The Python a WSGI app runs on.
    pub python: String,
}

impl Default for HostedSpec {
    fn default() -> Self {
        Self {
            rack: None,
            wsgi: None,
            dir: None,
            processes: None,
            timeout: Duration::from_secs(60),
            ruby: "ruby".to_owned(),
            python: "python3".to_owned(),
        }
    }
}

impl HostedSpec {
    /// Whether it names an app.
    pub fn names_an_app(&self) -> bool {
        self.rack.is_some() || self.wsgi.is_some()
    }
}
