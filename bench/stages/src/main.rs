//! Stage connectors in one process: a source sends N timestamped events through one
//! hop to a sink; events per second and the p99 hop latency, for each connector kind
//! and for three baselines (a plain function call, a tokio mpsc, a crossbeam channel).
//! Prints one markdown table. Run by `bench/stages.sh`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proscenium::stage::{Connector, Graph, Out, Stage};

const EVENTS: u64 = 200_000;

struct Row {
    name: &'static str,
    per_second: f64,
    p99: Duration,
}

fn summarise(name: &'static str, elapsed: Duration, mut hops: Vec<u64>) -> Row {
    hops.sort_unstable();
    let p99 = hops[hops.len() * 99 / 100];
    Row {
        name,
        per_second: EVENTS as f64 / elapsed.as_secs_f64(),
        p99: Duration::from_nanos(p99),
    }
}

fn stage_hop(name: &'static str, connector: Connector) -> Row {
    let epoch = Instant::now();
    let port = Out::<u64>::new("out");
    let sender = port.clone();
    let (done, hops) = mpsc::channel();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |(), ctx| {
                Ok((0..EVENTS).try_for_each(|_| ctx.send(&sender, epoch.elapsed().as_nanos() as u64))?)
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
    let started = Instant::now();
    let running = graph.start(&HashMap::new()).expect("the graph starts");
    let hops = hops.recv().expect("the sink finishes");
    let elapsed = started.elapsed();
    running.shutdown(Duration::from_secs(5));
    summarise(name, elapsed, hops)
}

fn function_call() -> Row {
    #[inline(never)]
    fn sink(seen: &mut Vec<u64>, epoch: Instant, sent: u64) {
        seen.push(epoch.elapsed().as_nanos() as u64 - sent);
    }
    let epoch = Instant::now();
    let mut seen = Vec::with_capacity(EVENTS as usize);
    let started = Instant::now();
    for _ in 0..EVENTS {
        sink(
            black_box(&mut seen),
            epoch,
            epoch.elapsed().as_nanos() as u64,
        );
    }
    summarise("function call", started.elapsed(), seen)
}

fn crossbeam() -> Row {
    let epoch = Instant::now();
    let (tx, rx) = crossbeam_channel::bounded::<u64>(1024);
    let started = Instant::now();
    let sink = std::thread::spawn(move || {
        rx.iter()
            .map(|sent| epoch.elapsed().as_nanos() as u64 - sent)
            .collect::<Vec<_>>()
    });
    for _ in 0..EVENTS {
        tx.send(epoch.elapsed().as_nanos() as u64)
            .expect("the sink runs");
    }
    drop(tx);
    let hops = sink.join().expect("the sink finishes");
    summarise("crossbeam bounded(1024)", started.elapsed(), hops)
}

fn tokio_mpsc() -> Row {
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
    for _ in 0..EVENTS {
        tx.blocking_send(epoch.elapsed().as_nanos() as u64)
            .expect("the sink runs");
    }
    drop(tx);
    let hops = sink.join().expect("the sink finishes");
    summarise("tokio mpsc(1024)", started.elapsed(), hops)
}

fn main() {
    let rows = [
        function_call(),
        stage_hop("cohort", Connector::cohort()),
        crossbeam(),
        tokio_mpsc(),
        stage_hop("local", Connector::local()),
        stage_hop("decoupled", Connector::decoupled()),
    ];
    println!("| hop | events/s | p99 hop latency |");
    println!("|---|---:|---:|");
    for row in rows {
        println!("| {} | {:.0} | {:?} |", row.name, row.per_second, row.p99);
    }
}
