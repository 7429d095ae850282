//! Counts of script runs for `/metrics`: Lua runs and the budgets they hit, CGI runs
//! and how they ended.
//!
//! Unlike the request path's per-thread tables these are process-wide atomics, added
//! to whether or not `[admin]` is on: a Lua run costs microseconds and a CGI run a
//! process, next to which a shared relaxed add (and, for Lua, two clock reads) is
//! noise.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;

/// What is counted, each an index into [`COUNTS`].
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

    fn read(self) -> u64 {
        COUNTS[self as usize].load(Ordering::Relaxed)
    }
}

/// Writes the tallies' families.
pub(crate) fn encode(encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    by_label(
        encoder,
        "proscenium_lua_runs",
        "Lua calls (a request's handler, a page), by how they ended.",
        "outcome",
        &[
            ("ok", Tally::LuaOk),
            ("script_error", Tally::LuaScriptError),
            ("instructions", Tally::LuaInstructions),
            ("memory", Tally::LuaMemory),
        ],
    )?;
    one(
        encoder,
        "proscenium_lua_run_seconds",
        "Time spent in Lua calls.",
        &ConstCounter::new(Tally::LuaNanos.read() as f64 / 1e9),
    )?;
    one(
        encoder,
        "proscenium_lua_threads_retired",
        "Script threads retired: a request still running past its deadline.",
        &ConstCounter::new(Tally::LuaRetired.read()),
    )?;
    one(
        encoder,
        "proscenium_cgi_runs",
        "CGI scripts started (or tried).",
        &ConstCounter::new(Tally::CgiRuns.read()),
    )?;
    by_label(
        encoder,
        "proscenium_cgi_failures",
        "CGI scripts that failed: killed past their timeout, or answered 502 (bad_gateway).",
        "reason",
        &[
            ("timeout", Tally::CgiTimeouts),
            ("bad_gateway", Tally::CgiFailed),
        ],
    )
}

/// Writes family `name` of the one series `metric`.
fn one(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric: &impl EncodeMetric,
) -> std::fmt::Result {
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

/// Writes counter family `name` with one series per `(label value, tally)`.
fn by_label(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    label: &str,
    series: &[(&str, Tally)],
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (value, tally) in series {
        ConstCounter::new(tally.read()).encode(family.encode_family(&[(label, *value)])?)?;
    }
    Ok(())
}
