//! Stage connectors in one process: a source sends N timestamped events through one
//! hop to a sink; events per second at saturation, and the p99 hop latency at
//! saturation (queueing delay) and at half that rate (the hop itself), for each
//! connector kind and batch setting and for three baselines (a plain function call, a
//! tokio mpsc, a crossbeam channel). Prints one markdown table. Run by
//! `bench/stages.sh`.
//!
//! The stages time one event in `STAGE_SAMPLE` (64 unless the environment says; 1
//! times every event), and each stage row ends with the sink's wait and service p50
//! and p99 from the stage's own histograms, with how many events they hold.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proscenium::stage::{ClusterSpec, Connector, Context, Graph, Out, Stage, StageStats};

const EVENTS: u64 = 200_000;

/// One kind of hop, run saturated (`None`) or at a pace.
type Hop = dyn Fn(Option<f64>) -> Run;

/// One run: how long the events took, and each one's hop in nanoseconds.
struct Run {
    elapsed: Duration,
    hops: Vec<u64>,
    /// The sink's own figures, for a hop through a stage graph.
    sink: Option<StageStats>,
}

impl Run {
    fn per_second(&self) -> f64 {
        EVENTS as f64 / self.elapsed.as_secs_f64()
    }

    fn p99(&mut self) -> Duration {
        self.hops.sort_unstable();
        Duration::from_nanos(self.hops[self.hops.len() * 99 / 100])
    }
}

/// Sends `EVENTS` timestamps through `send`, as fast as it takes them or `pace` a
/// second (spinning between sends, so the pace holds to the microsecond).
fn send_all<E>(
    epoch: Instant,
    pace: Option<f64>,
    mut send: impl FnMut(u64) -> Result<(), E>,
) -> Result<(), E> {
    let gap = pace.map(|rate| Duration::from_secs_f64(1.0 / rate));
    let mut next = Instant::now();
    for _ in 0..EVENTS {
        if let Some(gap) = gap {
            while Instant::now() < next {
                std::hint::spin_loop();
            }
            next += gap;
        }
        send(epoch.elapsed().as_nanos() as u64)?;
    }
    Ok(())
}

/// A hop through a stage graph: a source and a stateful sink in one cluster of two
/// threads scheduled as `cluster` says.
fn stage_hop(connector: Connector, cluster: &ClusterSpec, pace: Option<f64>) -> Run {
    let epoch = Instant::now();
    let port = Out::<u64>::new("out");
    let sender = port.clone();
    let (done, hops) = mpsc::channel();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |(), ctx: &mut Context<'_>| {
                Ok(send_all(epoch, pace, |sent| ctx.send(&sender, sent))?)
            },
        )
        .output(&port),
    );
    let sink = graph.stage(Stage::stateful(
        "sink",
        Vec::new,
        move |seen: &mut Vec<u64>, sent: u64, _| {
            seen.push(epoch.elapsed().as_nanos() as u64 - sent);
            if seen.len() as u64 == EVENTS {
                done.send(std::mem::take(seen)).expect("the bench waits");
            }
            Ok(())
        },
    ));
    graph.connect(&source, "out", &sink, connector);
    graph.part([("all", graph.all())]);
    graph.sample(sample());
    let clusters = HashMap::from([("all".to_owned(), cluster.clone())]);
    let started = Instant::now();
    let running = graph.start(&clusters).expect("the graph starts");
    let hops = hops.recv().expect("the sink finishes");
    let elapsed = started.elapsed();
    let sink = running.stats().stage("sink").cloned();
    running.shutdown(Duration::from_secs(5));
    Run {
        elapsed,
        hops,
        sink,
    }
}

/// Returns one in how many events the stages time: `STAGE_SAMPLE`, or 64.
fn sample() -> u32 {
    std::env::var("STAGE_SAMPLE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

/// Returns the sink's wait and service p50 and p99, and how many events they hold.
fn latencies(sink: Option<&StageStats>) -> String {
    let Some(sink) = sink else {
        return "| |".to_owned();
    };
    let (wait, service) = (sink.wait_secs, sink.service_secs);
    let us = |secs: f64| format!("{:.2} µs", secs * 1e6);
    format!(
        "| {} / {} ({}) | {} / {} ({}) |",
        us(wait.p50),
        us(wait.p99),
        wait.count,
        us(service.p50),
        us(service.p99),
        service.count
    )
}

fn function_call(pace: Option<f64>) -> Run {
    #[inline(never)]
    fn sink(seen: &mut Vec<u64>, epoch: Instant, sent: u64) {
        seen.push(epoch.elapsed().as_nanos() as u64 - sent);
    }
    let epoch = Instant::now();
    let mut seen = Vec::with_capacity(EVENTS as usize);
    let started = Instant::now();
    let called = send_all(epoch, pace, |sent| {
        sink(black_box(&mut seen), epoch, sent);
        Ok::<_, std::convert::Infallible>(())
    });
    let Ok(()) = called;
    Run {
        elapsed: started.elapsed(),
        hops: seen,
        sink: None,
    }
}

fn crossbeam(pace: Option<f64>) -> Run {
    let epoch = Instant::now();
    let (tx, rx) = crossbeam_channel::bounded::<u64>(1024);
    let started = Instant::now();
    let sink = std::thread::spawn(move || {
        rx.iter()
            .map(|sent| epoch.elapsed().as_nanos() as u64 - sent)
            .collect::<Vec<_>>()
    });
    send_all(epoch, pace, |sent| tx.send(sent)).expect("the sink runs");
    drop(tx);
    let hops = sink.join().expect("the sink finishes");
    Run {
        elapsed: started.elapsed(),
        hops,
        sink: None,
    }
}

fn tokio_mpsc(pace: Option<f64>) -> Run {
    let epoch = Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(1024);
    let started = Instant::now();
    let sink = std::thread::spawn(move || {
        let mut hops = Vec::with_capacity(EVENTS as usize);
        while let Some(sent) = rx.blocking_recv() {
            hops.push(epoch.elapsed().as_nanos() as u64 - sent);
        }
        hops
    });
    send_all(epoch, pace, |sent| tx.blocking_send(sent)).expect("the sink runs");
    drop(tx);
    let hops = sink.join().expect("the sink finishes");
    Run {
        elapsed: started.elapsed(),
        hops,
        sink: None,
    }
}

/// Returns the scheduling of the cluster holding source and sink: two threads, the
/// events an instance takes in a turn between `batch` and `max_batch`.
fn batches(batch: usize, max_batch: usize) -> ClusterSpec {
    ClusterSpec {
        threads: Some(2),
        batch: Some(batch),
        max_batch: Some(max_batch),
        ..ClusterSpec::default()
    }
}

fn main() {
    let one = batches(1, 1);
    let kinds: Vec<(&str, Box<Hop>)> = vec![
        ("function call", Box::new(function_call)),
        (
            "cohort",
            Box::new(move |pace| stage_hop(Connector::cohort(), &batches(1, 1), pace)),
        ),
        ("crossbeam bounded(1024)", Box::new(crossbeam)),
        ("tokio mpsc(1024)", Box::new(tokio_mpsc)),
        (
            "local, batch 1",
            Box::new(move |pace| stage_hop(Connector::local(), &one, pace)),
        ),
        (
            "local, batch 64",
            Box::new(|pace| stage_hop(Connector::local(), &batches(64, 64), pace)),
        ),
        (
            "local, batching controller 1–1024",
            Box::new(|pace| stage_hop(Connector::local(), &batches(1, 1024), pace)),
        ),
        (
            "decoupled, batch 1",
            Box::new(|pace| stage_hop(Connector::decoupled(), &batches(1, 1), pace)),
        ),
    ];
    println!("Stages time one event in {}.", sample());
    println!(
        "| hop | events/s | p99 hop, saturated | p99 hop, half load | sink wait p50 / p99 (timed), saturated | sink service p50 / p99 (timed) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, run) in kinds {
        let mut saturated = run(None);
        let rate = saturated.per_second();
        let mut half = run(Some(rate / 2.0));
        println!(
            "| {name} | {rate:.0} | {:?} | {:?} {}",
            saturated.p99(),
            half.p99(),
            latencies(saturated.sink.as_ref())
        );
    }
}
