//! `/metrics`: what a scrape reads, in Prometheus' text format (version 0.0.4),
//! through prometheus-client's [`Collector`]: every value is read at scrape time
//! from counters the server keeps anyway, or from the request path's per-thread
//! tables (`http::meter`), summed here. The stage graphs', the actors', the hubs',
//! the scripts' and Redis' families are in [`stages`], [`actors`], [`hub`],
//! [`scripts`] and [`redis`].

mod actors;
#[cfg(feature = "feeds")]
mod hub;
#[cfg(feature = "redis")]
mod redis;
mod scripts;
mod stages;

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::sum::Total;
use super::workers::Workers;
use crate::http::meter::{BOUNDS_NS, CLASSES, METHODS, Meters, Sums};
use crate::rt::overload::{Bound, Gate};
use crate::rt::{PoolGauges, Pools};

/// The label of answers no route gave (refusals, 404 and 405 without a fallback,
/// overload 503s); the fallback's own is the app's `<fallback>`.
const UNMATCHED: &str = "<unmatched>";

/// What `/metrics` reads: the server's request counters, its connection cap's
/// counts and its blocking pools.
#[derive(Debug)]
pub(crate) struct Metrics {
    meters: Arc<Meters>,
    /// Each route's label by its number; routes sharing a pattern share it.
    routes: Vec<String>,
    gate: Arc<Gate>,
    pools: Arc<Pools>,
    /// A prefork supervisor's links to its workers, whose expositions it adds to its own.
    workers: Option<Arc<Workers>>,
}

impl Metrics {
    /// Returns what a scrape of `meters` reads, with `routes` the patterns of the
    /// app's routes in their order (their numbers).
    pub(crate) fn new(
        meters: Arc<Meters>,
        routes: Vec<String>,
        gate: Arc<Gate>,
        pools: Arc<Pools>,
    ) -> Self {
        Self {
            meters,
            routes,
            gate,
            pools,
            workers: None,
        }
    }

    /// Returns these metrics summed with those of a prefork supervisor's `workers`.
    pub(crate) fn with_workers(self, workers: Arc<Workers>) -> Self {
        Self {
            workers: Some(workers),
            ..self
        }
    }

    /// Returns the text a scrape gets: this process's, plus its workers' if it has any.
    pub(crate) fn render(self: &Arc<Self>) -> String {
        let own = self.render_own();
        let Some(workers) = &self.workers else {
            return own;
        };
        let mut total = Total::default();
        total.add(&own);
        workers.add_to(&mut total);
        total.render()
    }

    fn render_own(self: &Arc<Self>) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut text = String::new();
        // Writing to a String fails only if a value's formatting does.
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry) {
            tracing::error!("cannot encode /metrics: {e}");
        }
        text
    }

    fn route(&self, slot: usize) -> &str {
        self.routes.get(slot).map_or(UNMATCHED, String::as_str)
    }

    fn requests(&self, sums: &Sums, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        // Routes sharing a pattern (GET and POST /x) are one series per method.
        let mut by_label: BTreeMap<(&str, &str, &str), u64> = BTreeMap::new();
        for slot in sums.slots() {
            for (m, method) in METHODS.iter().enumerate() {
                for (c, class) in CLASSES.iter().enumerate() {
                    let n = sums.count(slot, m, c);
                    if n > 0 {
                        *by_label
                            .entry((self.route(slot), method, class))
                            .or_default() += n;
                    }
                }
            }
        }
        let mut family = encoder.encode_descriptor(
            "proscenium_http_requests",
            "Requests answered, by route pattern, method and status class.",
            None,
            MetricType::Counter,
        )?;
        for ((route, method, status), n) in by_label {
            let labels = [("route", route), ("method", method), ("status", status)];
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }

    fn latency(&self, sums: &Sums, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let mut by_route: BTreeMap<&str, (Vec<u64>, u64)> = BTreeMap::new();
        for slot in sums.slots() {
            let (buckets, sum_ns) = sums.histogram(slot);
            if buckets.iter().all(|&n| n == 0) {
                continue;
            }
            let (into, into_sum) = by_route
                .entry(self.route(slot))
                .or_insert_with(|| (vec![0; buckets.len()], 0));
            for (into, n) in into.iter_mut().zip(buckets) {
                *into += n;
            }
            *into_sum += sum_ns;
        }
        let mut family = encoder.encode_descriptor(
            "proscenium_http_request_duration_seconds",
            "Time from a request's head read to its answer encoded, by route pattern.",
            None,
            MetricType::Histogram,
        )?;
        for (route, (buckets, sum_ns)) in by_route {
            let labels = [("route", route)];
            super::seconds_histogram(family.encode_family(&labels)?, &BOUNDS_NS, &buckets, sum_ns)?;
        }
        Ok(())
    }

    fn connections(&self, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let open = ConstGauge::new(self.gate.live() as i64);
        open.encode(encoder.encode_descriptor(
            "proscenium_connections_open",
            "Connections open now (in this process).",
            None,
            open.metric_type(),
        )?)?;
        let accepted = ConstCounter::new(self.gate.accepted());
        accepted.encode(encoder.encode_descriptor(
            "proscenium_connections_accepted",
            "Connections accepted since the server started.",
            None,
            accepted.metric_type(),
        )?)?;
        let mut family = encoder.encode_descriptor(
            "proscenium_overload_refused",
            "Times each bound was hit in this process: work answered 503 (for max_connections, accepting paused).",
            None,
            MetricType::Counter,
        )?;
        for bound in Bound::ALL {
            ConstCounter::new(bound.hits())
                .encode(family.encode_family(&[("bound", bound.name())])?)?;
        }
        Ok(())
    }

    fn threads(&self, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let (_, tables) = self.meters.read();
        let stats: Vec<_> = tables
            .iter()
            .filter_map(|t| t.stats.as_ref().map(|s| (t.thread.as_str(), s)))
            .collect();
        let mut inflight = encoder.encode_descriptor(
            "proscenium_thread_requests_in_flight",
            "Requests in flight on each loop (or request thread).",
            None,
            MetricType::Gauge,
        )?;
        for (thread, stats) in &stats {
            let n = stats.inflight.load(std::sync::atomic::Ordering::Relaxed);
            ConstGauge::new(n as i64).encode(inflight.encode_family(&[("thread", *thread)])?)?;
        }
        let mut handled = encoder.encode_descriptor(
            "proscenium_thread_requests",
            "Requests handled by each loop (or request thread) since it started.",
            None,
            MetricType::Counter,
        )?;
        for (thread, stats) in &stats {
            let n = stats.requests.load(std::sync::atomic::Ordering::Relaxed);
            ConstCounter::new(n).encode(handled.encode_family(&[("thread", *thread)])?)?;
        }
        Ok(())
    }

    fn pools(&self, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let pools = self.pools.gauges();
        let gauge = |encoder: &mut DescriptorEncoder<'_>, name, help, read: PoolGauge| {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for pool in &pools {
                let n = ConstGauge::new(read(pool) as i64);
                n.encode(family.encode_family(&[("pool", pool.name.as_str())])?)?;
            }
            Ok(())
        };
        gauge(
            encoder,
            "proscenium_blocking_pool_threads",
            "Threads each blocking pool has started.",
            |p| p.threads,
        )?;
        gauge(
            encoder,
            "proscenium_blocking_pool_busy",
            "Threads of each blocking pool running a job.",
            |p| p.busy,
        )?;
        gauge(
            encoder,
            "proscenium_blocking_pool_queued",
            "Jobs waiting for a thread of each blocking pool.",
            |p| p.queued,
        )
    }
}

/// Reads one gauge of a blocking pool.
type PoolGauge = fn(&PoolGauges) -> usize;

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let (sums, _) = self.meters.read();
        self.requests(&sums, &mut encoder)?;
        self.latency(&sums, &mut encoder)?;
        self.connections(&mut encoder)?;
        self.threads(&mut encoder)?;
        self.pools(&mut encoder)?;
        super::loops::encode(&self.meters, &mut encoder)?;
        scripts::encode(&mut encoder)?;
        #[cfg(feature = "redis")]
        redis::encode(&mut encoder)?;
        stages::encode(&mut encoder)?;
        actors::encode(&mut encoder)?;
        #[cfg(feature = "feeds")]
        hub::encode(&mut encoder)?;
        Ok(())
    }
}
