//! The `proscenium_redis_*` families: the process's round trips to Redis, counted in
//! `counters::round_trips`, a series per user that made any.

use std::sync::atomic::Ordering;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;

use crate::counters::User;
use crate::counters::round_trips;

/// Writes `proscenium_redis_commands_total{user, outcome}` and
/// `proscenium_redis_round_trip_seconds{user}`, the users that made none left out.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let used = || {
        User::ALL
            .into_iter()
            .map(|u| (u, round_trips::trips(u)))
            .filter(|(_, t)| t.ok.load(Ordering::Relaxed) + t.errors.load(Ordering::Relaxed) > 0)
    };
    let mut commands = encoder.encode_descriptor(
        "proscenium_redis_commands",
        "Round trips to Redis (a command or a pipeline), by whose and how they ended.",
        None,
        MetricType::Counter,
    )?;
    for (user, trips) in used() {
        for (outcome, n) in [("ok", &trips.ok), ("error", &trips.errors)] {
            let labels = [("user", label(user)), ("outcome", outcome)];
            ConstCounter::new(n.load(Ordering::Relaxed))
                .encode(commands.encode_family(&labels)?)?;
        }
    }
    let mut times = encoder.encode_descriptor(
        "proscenium_redis_round_trip_seconds",
        "Time from a command (or pipeline) sent to Redis to its reply, by whose.",
        None,
        MetricType::Histogram,
    )?;
    for (user, trips) in used() {
        let buckets: Vec<u64> = trips
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let sum_ns = trips.sum_ns.load(Ordering::Relaxed);
        let labels = [("user", label(user))];
        crate::admin::seconds_histogram(
            times.encode_family(&labels)?,
            &round_trips::BOUNDS_NS,
            &buckets,
            sum_ns,
        )?;
    }
    Ok(())
}

/// Returns the `user` label of `user`'s series.
fn label(user: User) -> &'static str {
    match user {
        User::Stage => "stage",
        User::Hub => "hub",
        User::Actor => "actor",
        User::Ready => "ready",
        User::App => "app",
    }
}
