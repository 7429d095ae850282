//! `/metrics`' loop turn histograms: how long each loop ran between two waits
//! (`rt::turns`), read from the loop counters of the threads that answer requests.

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

use crate::http::meter::Meters;
use crate::rt::turns::TURN_BOUNDS_NS;

/// Writes `proscenium_loop_turn_seconds`, one histogram per loop (or request thread)
/// that has turned.
pub(crate) fn encode(meters: &Meters, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let (_, tables) = meters.read();
    let mut family = encoder.encode_descriptor(
        "proscenium_loop_turn_seconds",
        "Time each loop (or request thread) ran between two waits for I/O or a timer.",
        None,
        MetricType::Histogram,
    )?;
    let bounds = TURN_BOUNDS_NS
        .iter()
        .map(|&ns| ns as f64 / 1e9)
        .chain([f64::INFINITY]);
    for table in &tables {
        let Some(stats) = &table.stats else { continue };
        let (buckets, sum_ns) = stats.turns.read();
        let count = buckets.iter().sum();
        if count == 0 {
            continue;
        }
        let pairs: Vec<(f64, u64)> = bounds.clone().zip(buckets).collect();
        family
            .encode_family(&[("thread", table.thread.as_str())])?
            .encode_histogram::<NoLabelSet>(sum_ns as f64 / 1e9, count, &pairs, None)?;
    }
    Ok(())
}
