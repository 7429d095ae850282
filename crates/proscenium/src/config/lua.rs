//! `[lua]` in the configuration: the bounds Lua pages and apps run under.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How Lua runs: `[lua]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LuaSpec {
    /// Runs `.lua` files below the served directory as pages (`--lua`); off by
    /// default.
    pub enabled: bool,
    /// A Lua app to serve (`--app app.lua`): its routes before the static files.
    pub app: Option<PathBuf>,
    /// Lua VM instructions a request may run, at most, counted from its 10th
    /// millisecond (or from when it makes a coroutine) on: counting costs Lua 5.4 a
    /// check on every instruction, so short requests are not counted. 0 counts none, for
    /// trusted scripts only: a script that never ends then holds its thread until the
    /// process stops.
    #[serde(deserialize_with = "crate::config::value::count::<_, 0, 1_000_000_000_000>")]
    pub instructions: usize,
    /// Bytes of memory an interpreter state may grow by past what it held when it was
    /// made (its scripts loaded): the bound a request that allocates too much meets.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 65_536, { 1 << 40 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub memory: usize,
    /// Bytes the values behind `proscenium.state` may take together, each weighed as
    /// about what Rust holds it in — its name, its JSON text and 32 bytes for each
    /// value and key within it: a `set` or `incr` past it fails (500, logged), and a
    /// value is measured before it is made a Rust one, so none grows past it meanwhile.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 0, { 1 << 40 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub state_memory: usize,
    /// Lines a request's `print` may write to the log; past it the request's further
    /// lines are dropped, counted, and told in one line when it ends.
    #[serde(deserialize_with = "crate::config::value::count::<_, 0, 1_000_000>")]
    pub log_lines: usize,
    /// Bytes a request's `print` may write to the log, its lines cut to what is left
    /// (and to 4 KiB each); past it, as past `log_lines`.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 0, { 1 << 30 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub log_bytes: usize,
    /// Script threads of an app or of the pages, where their scripts run (0: one a
    /// core): never on a loop, so a script that will not stop holds one of them.
    #[serde(deserialize_with = "crate::config::value::count::<_, 0, 4096>")]
    pub threads: usize,
    /// Requests waiting for a script thread, at most; past it they get 503.
    #[serde(deserialize_with = "crate::config::value::count::<_, 1, 1_000_000>")]
    pub queue: usize,
    /// How long a request waits for its script's answer, wall clock, queueing
    /// included; past it the client gets 503, and a script still running a margin
    /// later (the timeout again, at most a second) has its thread retired.
    #[serde(
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub timeout: Duration,
    /// Retired script threads — scripts past their deadline that would not stop —
    /// running at once, at most; past it Lua requests get 503 until some end.
    #[serde(deserialize_with = "crate::config::value::count::<_, 1, 4096>")]
    pub retired: usize,
}

impl Default for LuaSpec {
    fn default() -> Self {
        Self {
            enabled: false,
            app: None,
            instructions: 100_000_000,
            memory: 64 << 20,
            state_memory: 16 << 20,
            log_lines: 100,
            log_bytes: 64 << 10,
            threads: 0,
            queue: 1024,
            timeout: Duration::from_secs(5),
            retired: 8,
        }
    }
}
