//! The `proscenium_stage_*` families: every stage graph running in this process
//! (the `staged` model's own, an app's), a series per stage and per cluster.
//!
//! Series are by stage name: two graphs with a stage of the same name (two servers
//! of one process under `staged`) are one series — counts, queues and histograms
//! summed, the controllers' settings the largest batch and the smallest share.

use std::collections::BTreeMap;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::stage::{Histogram, Listed, StageStats};

/// The latency histograms' bounds, in nanoseconds: 1 µs to 10 s, a bucket a decade.
const BOUNDS_NS: [u64; 8] = [
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
];

/// One stage's series, summed over the graphs that have a stage of its name.
#[derive(Debug, Default)]
struct Series {
    arrived: u64,
    handled: u64,
    rejected: u64,
    failed: u64,
    queued: usize,
    batch: usize,
    share: Option<f64>,
    wait: Spread,
    service: Spread,
}

/// A histogram's counts under [`BOUNDS_NS`] and their sum in nanoseconds.
#[derive(Debug, Default)]
struct Spread(Vec<u64>, u64);

impl Spread {
    fn add(&mut self, histogram: &Histogram) {
        let (counts, sum) = histogram.spread(&BOUNDS_NS);
        self.0.resize(counts.len(), 0);
        for (into, n) in self.0.iter_mut().zip(counts) {
            *into += n;
        }
        self.1 += sum;
    }
}

impl Series {
    fn add(&mut self, stats: &StageStats, wait: &Histogram, service: &Histogram) {
        self.arrived += stats.arrived;
        self.handled += stats.handled;
        self.rejected += stats.rejected;
        self.failed += stats.failed;
        self.queued += stats.queued;
        self.batch = self.batch.max(stats.batch.now);
        let share = stats.admission.share;
        self.share = Some(self.share.map_or(share, |least| least.min(share)));
        self.wait.add(wait);
        self.service.add(service);
    }
}

/// Writes the stage families of the graphs running in this process.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    let graphs = crate::stage::running();
    let mut stages: BTreeMap<String, Series> = BTreeMap::new();
    let mut clusters: BTreeMap<String, usize> = BTreeMap::new();
    for Listed { monitor, here } in &graphs {
        let stats = monitor.stats();
        let rows = stats.stages.iter().zip(monitor.latencies()).zip(here);
        for ((stage, (_, wait, service)), _) in rows.filter(|(_, here)| **here) {
            let series = stages.entry(stage.stage.clone()).or_default();
            series.add(stage, wait, service);
        }
        for cluster in stats.clusters.iter().filter(|c| c.threads > 0) {
            *clusters.entry(cluster.cluster.clone()).or_default() += cluster.threads;
        }
    }
    counters(encoder, &stages)?;
    gauges(encoder, &stages)?;
    latency(encoder, &stages)?;
    let mut family = encoder.encode_descriptor(
        "proscenium_stage_cluster_threads",
        "Threads of each stage cluster now (its thread-pool controller's setting).",
        None,
        MetricType::Gauge,
    )?;
    for (cluster, threads) in &clusters {
        ConstGauge::new(*threads as i64)
            .encode(family.encode_family(&[("cluster", cluster.as_str())])?)?;
    }
    Ok(())
}

/// A family of a series per stage: its name, help, and the reader of its value.
type PerStage<'a, M> = [(&'a str, &'a str, fn(&Series) -> M)];

/// Reads one latency histogram of a stage's series.
type Latency = fn(&Series) -> &Spread;

fn counters(
    encoder: &mut DescriptorEncoder<'_>,
    stages: &BTreeMap<String, Series>,
) -> std::fmt::Result {
    let families: &PerStage<ConstCounter<u64>> = &[
        (
            "proscenium_stage_arrived",
            "Events admitted to each stage (queued, or handed over by a cohort connector).",
            |s| ConstCounter::new(s.arrived),
        ),
        (
            "proscenium_stage_handled",
            "Events each stage's handler finished, successfully or not.",
            |s| ConstCounter::new(s.handled),
        ),
        (
            "proscenium_stage_rejected",
            "Events each stage's admission policy refused.",
            |s| ConstCounter::new(s.rejected),
        ),
        (
            "proscenium_stage_failed",
            "Events whose handler returned an error or panicked, by stage.",
            |s| ConstCounter::new(s.failed),
        ),
    ];
    per_stage(encoder, stages, MetricType::Counter, families)
}

fn gauges(
    encoder: &mut DescriptorEncoder<'_>,
    stages: &BTreeMap<String, Series>,
) -> std::fmt::Result {
    let families: &PerStage<ConstGauge<f64>> = &[
        (
            "proscenium_stage_queued",
            "Events in each stage's queue now.",
            |s| ConstGauge::new(s.queued as f64),
        ),
        (
            "proscenium_stage_batch",
            "Events an instance of each stage takes in a turn (its batching controller's setting).",
            |s| ConstGauge::new(s.batch as f64),
        ),
        (
            "proscenium_stage_admission_share",
            "The share of its token buckets' rates each stage admits (its admission controller's setting).",
            |s| ConstGauge::new(s.share.unwrap_or(1.0)),
        ),
    ];
    per_stage(encoder, stages, MetricType::Gauge, families)
}

/// Writes `families`, each of type `kind`, with a series per stage.
fn per_stage<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder<'_>,
    stages: &BTreeMap<String, Series>,
    kind: MetricType,
    families: &PerStage<M>,
) -> std::fmt::Result {
    for (name, help, read) in families {
        let mut family = encoder.encode_descriptor(name, help, None, kind)?;
        for (stage, series) in stages {
            read(series).encode(family.encode_family(&[("stage", stage.as_str())])?)?;
        }
    }
    Ok(())
}

fn latency(
    encoder: &mut DescriptorEncoder<'_>,
    stages: &BTreeMap<String, Series>,
) -> std::fmt::Result {
    let families: [(&str, &str, Latency); 2] = [
        (
            "proscenium_stage_wait_seconds",
            "From an event's send to its handler's start, of the events timed, by stage.",
            |s| &s.wait,
        ),
        (
            "proscenium_stage_service_seconds",
            "Each stage's handler's run, of the events timed.",
            |s| &s.service,
        ),
    ];
    for (name, help, read) in families {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
        for (stage, series) in stages {
            let Spread(counts, sum_ns) = read(series);
            let labels = [("stage", stage.as_str())];
            crate::admin::seconds_histogram(
                family.encode_family(&labels)?,
                &BOUNDS_NS,
                counts,
                *sum_ns,
            )?;
        }
    }
    Ok(())
}
