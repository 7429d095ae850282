//! `[cgi]` in the configuration: how [`Cgi`](crate::cgi::Cgi) runs scripts.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How scripts are run: `[cgi]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CgiSpec {
    /// Runs scripts below the served directory (`--cgi`); off by default.
    pub enabled: bool,
    /// Directories below the root whose every file is a program run as a script.
    pub dirs: Vec<String>,
    /// Interpreters by file extension (`rb = "ruby"`, `py = "python3 -u"`: a program
    /// and its arguments, split at spaces, never through a shell): files with such an
    /// extension anywhere below the root run through them.
    pub interpreters: BTreeMap<String, String>,
    /// How long a script may run, its output included, in seconds.
    #[serde(
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub timeout: Duration,
    /// Scripts running at once, at most: past it a request gets 503.
    #[serde(deserialize_with = "crate::config::value::count::<_, 1, 100_000>")]
    pub max_scripts: usize,
    /// The user scripts run as (its name), when the server runs as root.
    pub user: Option<String>,
    /// Lines of one script's standard error logged at most; the rest is counted and
    /// said in one line.
    #[serde(deserialize_with = "crate::config::value::count::<_, 0, 1_000_000>")]
    pub log_lines: usize,
    /// Bytes of one script's standard error logged at most; the rest is counted and
    /// said in one line.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 0, { 1 << 30 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub log_bytes: usize,
}

impl Default for CgiSpec {
    fn default() -> Self {
        Self {
            enabled: false,
            dirs: vec!["cgi-bin".to_owned()],
            interpreters: BTreeMap::new(),
            timeout: Duration::from_secs(60),
            max_scripts: 64,
            user: None,
            log_lines: 100,
            log_bytes: 64 * 1024,
        }
    }
}
