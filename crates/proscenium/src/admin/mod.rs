//! The admin listener (`[admin] bind`): `/healthz`, `/readyz`, `/metrics` and the live
//! dashboard (`/`, fed by `/events`) on an address of their own, served by a small
//! [`App`] on a loop of its own — apart from the app's loops and threads, so a scrape
//! is answered however busy they are, and `/readyz` says 503 while the app's listener
//! drains.
//!
//! What `/metrics` reads is in [`metrics`]; the request counters it sums are written
//! on the request path by `http::meter`; under prefork the supervisor adds up its
//! workers' ([`workers`], [`sum`]). Script runs and Redis round trips are counted in `crate::counters`, which it encodes. The dashboard is [`dashboard`].

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

use crate::counters::seconds_histogram;

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
