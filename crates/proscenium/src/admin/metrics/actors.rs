//! The `proscenium_actor_*` families: the actors of every system in this process, a
//! series per actor kind (its type's name) — never per actor.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::actor::KindCounts;

/// Reads a gauge of a kind's actors.
type Gauge = fn(&KindCounts) -> usize;

/// Reads a count of a kind's actors.
type Count = fn(&KindCounts) -> u64;

/// Writes the actor families.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let kinds = crate::actor::by_kind();
    let gauges: [(&str, &str, Gauge); 2] = [
        (
            "proscenium_actor_mailbox_messages",
            "Messages in the mailboxes of each kind's actors now, summed.",
            |k| k.queued,
        ),
        (
            "proscenium_actor_alive",
            "Actors of each kind alive now.",
            |k| k.actors,
        ),
    ];
    for (name, help, read) in gauges {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (kind, counts) in &kinds {
            ConstGauge::new(read(counts) as i64)
                .encode(family.encode_family(&[("kind", *kind)])?)?;
        }
    }
    let counters: [(&str, &str, Count); 2] = [
        (
            "proscenium_actor_dead_letters",
            "Messages to each kind's actors not delivered (overflow, stopped, failed); <remote> for actors in other processes.",
            |k| k.dead_letters,
        ),
        (
            "proscenium_actor_restarts",
            "Restarts of each kind's actors by their supervisors.",
            |k| k.restarts,
        ),
    ];
    for (name, help, read) in counters {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (kind, counts) in &kinds {
            ConstCounter::new(read(counts)).encode(family.encode_family(&[("kind", *kind)])?)?;
        }
    }
    Ok(())
}
