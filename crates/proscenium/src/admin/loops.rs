//! `/metrics`' loop families, read from the loop counters of the threads that answer
//! requests: turn histograms — how long each loop ran between two waits
//! (`rt::turns`) — and queue lengths.

use std::sync::atomic::Ordering;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::http::meter::Meters;
use crate::rt::turns::TURN_BOUNDS_NS;

/// Writes the loops' families: [`turns`] and [`queued`].
pub(crate) fn encode(meters: &Meters, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    turns(meters, encoder)?;
    queued(meters, encoder)
}

/// Writes `proscenium_loop_queued`, one gauge per loop (or request thread): the
/// connections handed to it and not yet taken. Its tasks ready to run are not counted:
/// a loop's tasks are a `LocalSet`'s, whose queue tokio does not expose.
fn queued(meters: &Meters, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let (_, tables) = meters.read();
    let mut family = encoder.encode_descriptor(
        "proscenium_loop_queued",
        "Connections handed to each loop (or request thread) and not yet taken.",
        None,
        MetricType::Gauge,
    )?;
    for table in &tables {
        let Some(stats) = &table.stats else { continue };
        let n = ConstGauge::new(stats.handed.load(Ordering::Relaxed) as i64);
        n.encode(family.encode_family(&[("thread", table.thread.as_str())])?)?;
    }
    Ok(())
}

/// Writes `proscenium_loop_turn_seconds`, one histogram per loop (or request thread)
/// that has turned.
fn turns(meters: &Meters, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let (_, tables) = meters.read();
    let mut family = encoder.encode_descriptor(
        "proscenium_loop_turn_seconds",
        "Time each loop (or request thread) ran between two waits for I/O or a timer.",
        None,
        MetricType::Histogram,
    )?;
    for table in &tables {
        let Some(stats) = &table.stats else { continue };
        let (buckets, sum_ns) = stats.turns.read();
        if buckets.iter().all(|&n| n == 0) {
            continue;
        }
        let labels = [("thread", table.thread.as_str())];
        super::seconds_histogram(
            family.encode_family(&labels)?,
            &TURN_BOUNDS_NS,
            &buckets,
            sum_ns,
        )?;
    }
    Ok(())
}
