//! The admin listener (`[admin] bind`): `/healthz`, `/readyz`, `/metrics` and the live
//! dashboard (`/`, fed by `/events`) on an address of their own, served by a small
//! [`App`] on a loop of its own — apart from the app's loops and threads, so a scrape
//! is answered however busy they are, and `/readyz` says 503 while the app's listener
//! drains.
//!
//! What `/metrics` reads is in [`metrics`]; the request counters it sums are written
//! on the request path by `http::meter`; under prefork the supervisor adds up its
//! workers' ([`workers`], [`sum`]). Script runs and Redis round trips are counted in
//! `crate::counters`, which it encodes. The dashboard is [`dashboard`].
//!
//! All of it is the `metrics` feature's: the only module that uses prometheus-client.

mod dashboard;
mod loops;
mod metrics;
#[cfg(not(feature = "redis"))]
#[path = "no_ready.rs"]
mod ready;
#[cfg(feature = "redis")]
mod ready;
mod sum;
mod workers;

use std::sync::Arc;

use http::StatusCode;
use http::header::CONTENT_TYPE;
use tokio::sync::watch;

use crate::{App, inline};

pub(crate) use self::metrics::Metrics;
pub(crate) use self::ready::{RedisReach, watch_redis};
pub(crate) use self::workers::{Workers, answer as answer_supervisor};

/// Returns the admin listener's app: `/healthz` (200 while the process runs),
/// `/readyz` (200 while accepting, 503 once `shutdown` has begun or while a Redis the
/// process needs is unreachable, as `redis` says), `/metrics`, and the dashboard: `/`
/// and its stream, `/events`.
pub(crate) fn app(
    metrics: Metrics,
    shutdown: watch::Receiver<bool>,
    redis: Option<Arc<RedisReach>>,
) -> App {
    let metrics = Arc::new(metrics);
    App::new()
        .get("/healthz", inline(|| "ok\n"))
        .get(
            "/readyz",
            inline(move || {
                if *shutdown.borrow() {
                    (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
                } else if redis.as_ref().is_some_and(|r| !r.is_reachable()) {
                    (StatusCode::SERVICE_UNAVAILABLE, "redis unreachable\n")
                } else {
                    (StatusCode::OK, "ready\n")
                }
            }),
        )
        .get("/", inline(dashboard::page))
        .get("/events", {
            let metrics = metrics.clone();
            inline(move || dashboard::events(metrics.clone()))
        })
        .get(
            "/metrics",
            inline(move || {
                let content_type = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
                ([(CONTENT_TYPE, content_type)], metrics.render())
            }),
        )
}

/// Writes one series of a latency histogram: `counts` in the buckets bounded by
/// `bounds_ns` (and one past the last, +Inf), `sum_ns` their sum — in seconds, as
/// Prometheus has it.
fn seconds_histogram(
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
