//! The `proscenium_lua_*` and `proscenium_cgi_*` families: script runs, counted in
//! `counters::tally`.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;

use crate::counters::tally::Tally;

/// Writes the tallies' families.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
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
