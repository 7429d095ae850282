//! The live dashboard at the admin listener's `/`: one page, no build step, fed by
//! `/events` — server-sent events, each the whole `/metrics` text, once a second. The
//! page reads the same families a scraper does and draws what they say: rates from two
//! samples' counters, latency quantiles from their histograms' buckets. So a family the
//! server adds shows on the page without a change here (unknown ones in a table of
//! their own), and the page can never show a figure `/metrics` would not.

use std::sync::Arc;
use std::time::Duration;

use http::header::{CACHE_CONTROL, CONTENT_TYPE};

use super::Metrics;
use crate::sse::{Event, Sse};

/// The page: HTML, its style and its script in one file.
const PAGE: &str = include_str!("dashboard.html");

/// How often the page gets a sample.
const EVERY: Duration = Duration::from_secs(1);

/// The page, never cached (it is small, and a stale one would read a newer stream).
pub(super) fn page() -> impl crate::IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
}

/// The stream of samples: the first at once, then one every [`EVERY`], until the
/// client leaves or the server shuts down.
pub(super) fn events(metrics: Arc<Metrics>) -> Sse {
    let samples = futures_util::stream::unfold(
        (metrics, tokio::time::interval(EVERY)),
        |(metrics, mut ticks)| async move {
            ticks.tick().await;
            let sample = Event::data(metrics.render()).event("metrics");
            Some((sample, (metrics, ticks)))
        },
    );
    Sse::new(samples).keep_alive(None)
}
