//! The `proscenium_hub_*` families: every hub in this process, in total — a series
//! per topic pattern would grow with what clients subscribe to.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Writes the hub families.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let hubs = crate::hub::totals();
    let gauges = [
        (
            "proscenium_hub_subscribers",
            "Subscribers of the hubs now (subscriptions, event streams, sockets, actors, stages).",
            hubs.subscribers,
        ),
        (
            "proscenium_hub_lag",
            "Posts waiting to be read in subscriptions' queues now (event streams, Subscriptions), summed.",
            hubs.behind,
        ),
    ];
    for (name, help, n) in gauges {
        let gauge = ConstGauge::new(n as i64);
        gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
    }
    let counters = [
        (
            "proscenium_hub_dropped",
            "Posts dropped, oldest first, from subscribers that fell behind past their queue.",
            hubs.dropped,
        ),
        (
            "proscenium_hub_lost",
            "Posts known lost between replicas sharing a Redis (gaps in a replica's numbers, posts not handed to Redis).",
            hubs.lost,
        ),
        (
            "proscenium_hub_resumed_past_history",
            "Resumes (Last-Event-ID) after a post the history no longer held: their client missed some.",
            hubs.past_history,
        ),
    ];
    for (name, help, n) in counters {
        let counter = ConstCounter::new(n);
        counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)?;
    }
    Ok(())
}
