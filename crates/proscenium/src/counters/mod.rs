//! Process-wide counters the features add to and `admin` encodes for `/metrics`:
//! script runs (`tally`) and Redis round trips (`round_trips`, which `/readyz` reads
//! too). A leaf below every feature that counts, so counting imports nothing above it;
//! the per-thread request tables stay in `http/meter.rs`. It also holds how every latency
//! histogram of `/metrics` is written ([`seconds_histogram`]).

#[cfg(feature = "redis")]
pub(crate) mod round_trips;
pub(crate) mod tally;

#[cfg(feature = "redis")]
pub(crate) use self::round_trips::{Counted, User};
#[cfg(any(feature = "cgi", feature = "lua"))]
pub(crate) use self::tally::Tally;

/// Writes one series of a latency histogram: `counts` in the buckets bounded by
/// `bounds_ns` (and one past the last, +Inf), `sum_ns` their sum — in seconds, as
/// Prometheus has it.
pub(crate) fn seconds_histogram(
    mut series: prometheus_client::encoding::MetricEncoder<'_>,
    bounds_ns: &[u64],
    counts: &[u64],
    sum_ns: u64,
) -> std::fmt::Result {
    let bounds = bounds_ns.iter().map(|&ns| ns as f64 / 1e9);
    let pairs: Vec<(f64, u64)> = bounds
        .chain([f64::INFINITY])
        .zip(counts.iter().copied())
        .collect();
    let count = counts.iter().sum();
    series.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        sum_ns as f64 / 1e9,
        count,
        &pairs,
        None,
    )
}
