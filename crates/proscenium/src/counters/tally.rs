//! Counts of script runs for `/metrics` (`admin::metrics::scripts` writes them): Lua
//! runs and the budgets they hit, CGI runs and how they ended.
//!
//! Unlike the request path's per-thread tables these are process-wide atomics, added
//! to whether or not `[admin]` is on: a Lua run costs microseconds and a CGI run a
//! process, next to which a shared relaxed add (and, for Lua, two clock reads) is
//! noise.

use std::sync::atomic::{AtomicU64, Ordering};

/// What is counted, each an index into [`COUNTS`].
#[cfg_attr(
    not(any(feature = "metrics", all(feature = "lua", feature = "cgi"))),
    expect(
        dead_code,
        reason = "only /metrics names them all, and Lua or CGI alone counts its own"
    )
)]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tally {
    /// A Lua call that returned.
    LuaOk,
    /// A Lua call whose script raised an error.
    LuaScriptError,
    /// A Lua call stopped past its instruction budget.
    LuaInstructions,
    /// A Lua call stopped past its memory budget.
    LuaMemory,
    /// Nanoseconds spent in Lua calls.
    LuaNanos,
    /// A script thread retired, its request past its deadline.
    LuaRetired,
    /// A CGI script started (or tried to).
    CgiRuns,
    /// A CGI script killed past `[cgi] timeout`.
    CgiTimeouts,
    /// A CGI script answered 502: it could not start, wrote a bad header section or
    /// nothing.
    CgiFailed,
}

const KINDS: usize = Tally::CgiFailed as usize + 1;

static COUNTS: [AtomicU64; KINDS] = [const { AtomicU64::new(0) }; KINDS];

impl Tally {
    /// Adds `n` to this count.
    #[cfg(any(feature = "cgi", feature = "lua"))]
    pub(crate) fn add(self, n: u64) {
        COUNTS[self as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Returns this count.
    #[cfg(feature = "metrics")]
    pub(crate) fn read(self) -> u64 {
        COUNTS[self as usize].load(Ordering::Relaxed)
    }
}
