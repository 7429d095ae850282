//! The stage layer's behaviour on real threads: scheduling, connectors, admission,
//! failures and shutdown. Validation errors are in `plan_tests.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Admission, ClusterSpec, Connector, Graph, Out, RunningGraph, Stage};

/// The bound on every wait in these tests.
pub(super) const DEADLINE: Duration = Duration::from_secs(5);

pub(super) fn clusters(toml: &str) -> HashMap<String, ClusterSpec> {
    toml::from_str::<crate::Config>(toml).unwrap().clusters
}

/// Waits, bounded by [`DEADLINE`], until `done` holds.
pub(super) fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + DEADLINE;
    while !done() {
        if Instant::now() > until {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

/// A source sending `0..count` to `sink` through `connector`; returns the graph, not
/// started.
pub(super) fn feeding(count: u64, sink: Stage, connector: Connector) -> Graph {
    let numbers = Out::<u64>::new("numbers");
    let port = numbers.clone();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |_, ctx| Ok((0..count).try_for_each(|n| ctx.send(&port, n))?),
        )
        .output(&numbers),
    );
    let sink = graph.stage(sink);
    graph.connect(&source, "numbers", &sink, connector);
    graph
}

/// A source sending `0..count` through `connector` to a stage running `handler`,
/// in one cluster configured by `toml`; returns the graph running.
fn pipeline(
    count: u64,
    connector: Connector,
    toml: &str,
    handler: impl Fn(u64) + Send + Sync + 'static,
) -> RunningGraph {
    let sink = Stage::stateless(
        "sink",
        || (),
        move |_, n: u64, _| {
            handler(n);
            Ok(())
        },
    );
    feeding(count, sink, connector)
        .start(&clusters(toml))
        .unwrap()
}

#[test]
fn a_stateful_stage_never_runs_two_events_at_once() {
    let events = Out::<u64>::new("events");
    let port = events.clone();
    let watch = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (total_tx, total) = crossbeam_channel::bounded(1);
    let peak = most.clone();
    let mut graph = Graph::new();
    let senders = graph.stage(
        Stage::source(
            "senders",
            || (),
            move |_, ctx| Ok((0..1250).try_for_each(|n| ctx.send(&port, n))?),
        )
        .output(&events),
    );
    let counter = graph.stage(Stage::stateful(
        "counter",
        || 0u64,
        move |seen: &mut u64, _: u64, _| {
            peak.fetch_max(watch.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            *seen += 1;
            if *seen == 10_000 {
                total_tx.send(*seen).unwrap();
            }
            watch.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        },
    ));
    graph.connect(&senders, "events", &counter, Connector::decoupled());
    let running = graph
        .start(&clusters("[clusters.main]\nstages = [\"senders\", \"counter\"]\nthreads = 10\ninstances = { senders = 8 }\nqueue = 64"))
        .unwrap();
    assert_eq!(total.recv_timeout(DEADLINE), Ok(10_000));
    assert_eq!(most.load(Ordering::SeqCst), 1);
    running.shutdown(DEADLINE);
}

#[test]
fn a_stateless_stage_runs_its_instances_in_parallel() {
    let arrivals = Arc::new(AtomicUsize::new(0));
    let passed = Arc::new(AtomicUsize::new(0));
    let passes = passed.clone();
    // Only four handlers running at once get past this barrier.
    let running = pipeline(
        4,
        Connector::local(),
        "[clusters.main]\nstages = [\"source\", \"sink\"]\nthreads = 5\ninstances = { sink = 4 }",
        move |_| {
            arrivals.fetch_add(1, Ordering::SeqCst);
            if wait_until(|| arrivals.load(Ordering::SeqCst) >= 4) {
                passes.fetch_add(1, Ordering::SeqCst);
            }
        },
    );
    let report = running.shutdown(DEADLINE);
    assert_eq!(report.drained, ["source", "sink"]);
    assert_eq!(passed.load(Ordering::SeqCst), 4);
}

#[test]
fn a_cohort_consumer_runs_on_the_senders_thread() {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = threads.clone();
    let running = pipeline(3, Connector::cohort(), "", move |_| {
        seen.lock().push(std::thread::current().id());
    });
    let stats = running.stats();
    running.shutdown(DEADLINE);
    let threads = threads.lock();
    assert_eq!(threads.len(), 3, "{stats:?}");
    // One source instance sent all three: one thread, the source's.
    assert!(threads.iter().all(|id| *id == threads[0]));
    assert_eq!(stats.stage("sink").unwrap().queued, 0);
}

#[test]
fn a_cohort_inlet_runs_the_stage_on_the_callers_thread_and_refuses_an_async_one() {
    let ran_on = Arc::new(Mutex::new(Vec::new()));
    let seen = ran_on.clone();
    let mut graph = Graph::new();
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |(), n: u32, _| {
            seen.lock().push((n, std::thread::current().id()));
            Ok(())
        },
    ));
    let waiting = graph.stage(Stage::stateful_async(
        "waiting",
        || (),
        async |(), _: u32, _| Ok(()),
    ));
    graph.part([("main", graph.all())]);
    let running = graph.start(&HashMap::new()).unwrap();
    let inlet = running.cohort_inlet::<u32>("caller", &sink).unwrap();
    inlet.send(7).unwrap();
    assert_eq!(
        *ran_on.lock(),
        [(7, std::thread::current().id())],
        "done before send returned, on this thread"
    );
    let refused = running.cohort_inlet::<u32>("caller", &waiting).unwrap_err();
    assert!(
        refused.is_graph() && refused.to_string().contains("async"),
        "{refused}"
    );
    running.shutdown(DEADLINE);
}

#[test]
fn a_cohort_sender_on_the_clusters_only_thread_gets_an_instance_with_a_turn_queued() {
    // Each number goes to `counter` twice: queued (a turn in the ready queue), then at
    // once. The one thread that could pop that turn is the cohort sender's: with the
    // instance inside the turn, it waited for itself for ever.
    let queued = Out::<u64>::local("queued");
    let at_once = Out::<u64>::local("at-once");
    let ports = (queued.clone(), at_once.clone());
    let (total_tx, total) = crossbeam_channel::bounded(1);
    let mut graph = Graph::new();
    let twice = graph.stage(
        Stage::stateless(
            "twice",
            || (),
            move |_, n: u64, ctx| {
                ctx.send(&ports.0, n)?;
                Ok(ctx.send(&ports.1, n)?)
            },
        )
        .output(&queued)
        .output(&at_once),
    );
    let counter = graph.stage(Stage::stateful(
        "counter",
        || 0u64,
        move |seen: &mut u64, _: u64, _| {
            *seen += 1;
            if *seen == 200 {
                total_tx.send(*seen).unwrap();
            }
            Ok(())
        },
    ));
    graph.connect(&twice, "queued", &counter, Connector::local());
    graph.connect(&twice, "at-once", &counter, Connector::cohort());
    let running = graph
        .start(&clusters(
            "[clusters.main]\nstages = [\"twice\", \"counter\"]\nthreads = 1",
        ))
        .unwrap();
    let inlet = running.inlet("test", &twice, Admission::Block).unwrap();
    (0..100u64).for_each(|n| inlet.send(n).unwrap());
    assert_eq!(total.recv_timeout(DEADLINE), Ok(200));
    running.shutdown(DEADLINE);
}

#[test]
fn block_makes_the_sender_wait_and_loses_nothing() {
    let (gate, opened) = crossbeam_channel::bounded::<()>(0);
    let handled = Arc::new(AtomicUsize::new(0));
    let count = handled.clone();
    let running = pipeline(
        50,
        Connector::decoupled(),
        "[clusters.main]\nthreads = 2\nqueue = 4",
        move |_| {
            let _ = opened.recv();
            count.fetch_add(1, Ordering::SeqCst);
        },
    );
    assert!(wait_until(
        || running.stats().stage("sink").unwrap().queued == 4
    ));
    let source = running.stats().stage("source").unwrap().sent;
    // Four queued and one in the handler: the source waits for room.
    assert!(source <= 5, "sent {source}");
    drop(gate);
    running.shutdown(DEADLINE);
    assert_eq!(handled.load(Ordering::SeqCst), 50);
}

/// What a flood did: events admitted as the source was told, the events it got back
/// refused, those the sink handled, the sink's final stats, and how long the flood took.
struct Flood {
    admitted: u64,
    returned: Vec<u64>,
    handled: Vec<u64>,
    sink: super::StageStats,
    took: Duration,
}

/// Sends at least `count` events, for at least `flood_for`, from a source through
/// `admission` to a sink with a queue of 8; a `gated` sink handles nothing until the
/// flood is over.
fn flood(count: u64, admission: Admission, flood_for: Duration, gated: bool) -> Flood {
    let numbers = Out::<u64>::new("numbers");
    let port = numbers.clone();
    let (gate, opened) = crossbeam_channel::bounded::<()>(0);
    let gate = Mutex::new(Some(gate));
    let tally = Arc::new(Mutex::new((0, Vec::new(), Duration::ZERO)));
    let outcome = tally.clone();
    let handled = Arc::new(Mutex::new(Vec::new()));
    let sunk = handled.clone();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |_, ctx| {
                let started = Instant::now();
                let mut sent = 0;
                while sent < count || started.elapsed() < flood_for {
                    match ctx.send(&port, sent) {
                        Ok(()) => tally.lock().0 += 1,
                        Err(e) if e.error().is_rejected() => tally.lock().1.push(e.into_inner()),
                        Err(e) => return Err(e.into()),
                    }
                    sent += 1;
                }
                tally.lock().2 = started.elapsed();
                gate.lock().take();
                Ok(())
            },
        )
        .output(&numbers),
    );
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |_, n: u64, _| {
            if gated {
                let _ = opened.recv();
            }
            sunk.lock().push(n);
            Ok(())
        },
    ));
    graph.connect(
        &source,
        "numbers",
        &sink,
        Connector::decoupled().admission(admission),
    );
    let running = graph
        .start(&clusters("[clusters.main]\nthreads = 2\nqueue = 8"))
        .unwrap();
    let report = running.shutdown(DEADLINE);
    assert_eq!(report.abandoned, 0);
    let (admitted, returned, took) = std::mem::take(&mut *outcome.lock());
    let sink = report.stats.stage("sink").unwrap().clone();
    Flood {
        admitted,
        returned,
        handled: std::mem::take(&mut *handled.lock()),
        sink,
        took,
    }
}

#[test]
fn reject_gives_the_sender_back_every_event_not_delivered_and_counts_it() {
    let flood = flood(1000, Admission::Reject, Duration::ZERO, true);
    assert!(!flood.returned.is_empty());
    assert_eq!(flood.admitted + flood.returned.len() as u64, 1000);
    assert_eq!(flood.sink.rejected, flood.returned.len() as u64);
    assert_eq!(flood.sink.handled, flood.admitted);
    let mut every = [flood.handled, flood.returned].concat();
    every.sort_unstable();
    assert_eq!(
        every,
        (0..1000).collect::<Vec<_>>(),
        "each event delivered or given back, once"
    );
}

#[test]
fn a_token_bucket_admits_its_rate_and_rejects_the_rest() {
    let bucket = Admission::TokenBucket {
        rate: 100.0,
        burst: 10,
    };
    let flood = flood(1000, bucket, Duration::from_millis(200), false);
    let allowed = 10.0 + 100.0 * flood.took.as_secs_f64();
    assert!(flood.admitted >= 10, "{} admitted", flood.admitted);
    assert!(
        flood.admitted as f64 <= allowed + 1.0,
        "{} admitted, {allowed} allowed",
        flood.admitted
    );
    assert_eq!(flood.sink.rejected, flood.returned.len() as u64);
    assert_eq!(flood.sink.handled, flood.admitted);
    let mut every = [flood.handled, flood.returned].concat();
    every.sort_unstable();
    every.dedup();
    assert_eq!(
        every.len() as u64,
        flood.admitted + flood.sink.rejected,
        "none lost"
    );
}

#[test]
fn a_panicking_handler_is_dead_lettered_and_its_stage_goes_on() {
    let handled = Arc::new(Mutex::new(Vec::new()));
    let seen = handled.clone();
    let running = pipeline(
        5,
        Connector::local(),
        "[clusters.main]\nthreads = 2",
        move |n| {
            assert_ne!(n, 2, "event two is poison");
            seen.lock().push(n);
        },
    );
    let report = running.shutdown(DEADLINE);
    let sink = report.stats.stage("sink").unwrap();
    assert_eq!((sink.handled, sink.failed), (5, 1));
    assert_eq!(*handled.lock(), [0, 1, 3, 4]);
    assert_eq!(report.dead_letters, 1);
    let json = serde_json::to_value(&report.stats).unwrap();
    assert_eq!(json["stages"][1]["failed"], 1);
}

/// numbers → square → collect, all decoupled: `collect` keeps the squares of 1..=100;
/// `square` handles nothing until `gate` is closed.
fn chain(results: &Arc<Mutex<Vec<u64>>>, gate: &crossbeam_channel::Receiver<()>) -> Graph {
    let gate = gate.clone();
    let numbers = Out::<u64>::new("numbers");
    let squares = Out::<u64>::new("squares");
    let (to_relay, to_sink) = (numbers.clone(), squares.clone());
    let kept = results.clone();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "numbers",
            || (),
            move |_, ctx| Ok((1..=100).try_for_each(|n| ctx.send(&to_relay, n))?),
        )
        .output(&numbers),
    );
    let relay = graph.stage(
        Stage::stateless(
            "square",
            || (),
            move |_, n: u64, ctx| {
                let _ = gate.recv();
                Ok(ctx.send(&to_sink, n * n)?)
            },
        )
        .output(&squares),
    );
    let sink = graph.stage(Stage::stateful(
        "collect",
        || (),
        move |_, n: u64, _| {
            kept.lock().push(n);
            Ok(())
        },
    ));
    graph.connect(&source, "numbers", &relay, Connector::decoupled());
    graph.connect(&relay, "squares", &sink, Connector::decoupled());
    graph
}

#[test]
fn shutdown_drains_every_queue_upstream_first() {
    let results = Arc::new(Mutex::new(Vec::new()));
    let (gate, closed) = crossbeam_channel::bounded(0);
    let graph = chain(&results, &closed);
    let running = graph
        .start(&clusters("[clusters.main]\nthreads = 3\nqueue = 200"))
        .unwrap();
    // Shutdown begins with the numbers queued before `square`.
    assert!(wait_until(|| running
        .stats()
        .stage("square")
        .unwrap()
        .queued
        > 0));
    let shutdown = std::thread::spawn(move || running.shutdown(DEADLINE));
    drop(gate);
    let report = shutdown.join().unwrap();
    assert_eq!(report.drained, ["numbers", "square", "collect"]);
    assert_eq!((report.abandoned, report.stuck_threads), (0, 0));
    assert_eq!(results.lock().len(), 100);
}

#[test]
fn one_graph_gives_the_same_output_under_two_partitions() {
    let run = |toml: &str| {
        let results = Arc::new(Mutex::new(Vec::new()));
        let (_, open) = crossbeam_channel::bounded(0);
        let graph = chain(&results, &open);
        graph.start(&clusters(toml)).unwrap().shutdown(DEADLINE);
        let mut results = std::mem::take(&mut *results.lock());
        results.sort_unstable();
        results
    };
    let one = run("");
    let two = run(
        "[clusters.front]\nstages = [\"numbers\", \"collect\"]\nthreads = 2\n\
         [clusters.squares]\nstages = [\"square\"]\nthreads = 3\ninstances = { square = 3 }",
    );
    assert_eq!(one, (1..=100).map(|n| n * n).collect::<Vec<u64>>());
    assert_eq!(one, two);
}

#[test]
fn the_thread_pool_controller_grows_a_cluster_under_load_and_shrinks_it_after() {
    let arrivals = Arc::new(AtomicUsize::new(0));
    let passed = Arc::new(AtomicUsize::new(0));
    let passes = passed.clone();
    // One thread to start with: only a grown cluster gets four handlers past this
    // barrier at once.
    let running = pipeline(
        8,
        Connector::decoupled(),
        "[clusters.source]\nstages = [\"source\"]\nthreads = 1\n\
         [clusters.work]\nstages = [\"sink\"]\nthreads = 1\nmax_threads = 4\ninstances = { sink = 4 }",
        move |_| {
            arrivals.fetch_add(1, Ordering::SeqCst);
            if wait_until(|| arrivals.load(Ordering::SeqCst) >= 4) {
                passes.fetch_add(1, Ordering::SeqCst);
            }
        },
    );
    assert!(wait_until(|| running
        .stats()
        .stage("sink")
        .unwrap()
        .handled
        == 8));
    assert!(wait_until(|| running
        .stats()
        .cluster("work")
        .unwrap()
        .threads
        == 1));
    let work = running.stats().cluster("work").unwrap().clone();
    running.shutdown(DEADLINE);
    assert_eq!(passed.load(Ordering::SeqCst), 8);
    assert!(work.grown >= 3 && work.shrunk == work.grown, "{work:?}");
}

#[test]
fn the_batching_controller_shrinks_the_batch_under_steady_load_and_resets_it_when_load_drops() {
    let numbers = Out::<u64>::new("numbers");
    let port = numbers.clone();
    let mut graph = Graph::new();
    // As many events as the sink takes (the connector blocks the source) until the
    // test has seen the batch shrink, then none.
    let flooding = Arc::new(AtomicBool::new(true));
    let more = flooding.clone();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |_, ctx| {
                let until = Instant::now() + DEADLINE;
                while more.load(Ordering::Relaxed) && Instant::now() < until && !ctx.is_stopping() {
                    (0..100).try_for_each(|n| ctx.send(&port, n))?;
                }
                Ok(())
            },
        )
        .output(&numbers),
    );
    let sink = graph.stage(Stage::stateful("sink", || (), |_, _: u64, _| Ok(())));
    graph.connect(&source, "numbers", &sink, Connector::decoupled());
    let running = graph
        .start(&clusters(
            "[clusters.source]\nstages = [\"source\"]\nthreads = 1\n\
             [clusters.work]\nstages = [\"sink\"]\nthreads = 1\nbatch = 2\nmax_batch = 32",
        ))
        .unwrap();
    let batch = || running.stats().stage("sink").unwrap().batch;
    assert_eq!((batch().min, batch().max), (2, 32));
    assert!(wait_until(|| batch().shrunk >= 1), "{:?}", batch());
    flooding.store(false, Ordering::Relaxed);
    // The flood over, the batch is back at the most (reset, or grown there).
    assert!(wait_until(|| batch().now == 32), "{:?}", batch());
    let seen = batch();
    running.shutdown(DEADLINE);
    assert!(seen.reset + seen.grown >= 1, "{seen:?}");
}

#[test]
fn the_admission_controller_throttles_a_token_bucket_while_waits_pass_the_target() {
    let mut graph = Graph::new();
    // About 1,000 events a second at most, behind a bucket admitting 5,000.
    let slow = graph.stage(Stage::stateful(
        "slow",
        || (),
        |_, _: u64, _| {
            std::thread::sleep(Duration::from_millis(1));
            Ok(())
        },
    ));
    let running = graph
        .start(&clusters(
            "[clusters.main]\nthreads = 2\nqueue = 100000\ntarget_wait_ms = 20",
        ))
        .unwrap();
    let inlet = running
        .inlet::<u64>(
            "flood",
            &slow,
            Admission::TokenBucket {
                rate: 5_000.0,
                burst: 100,
            },
        )
        .unwrap();
    let admission = || running.stats().stage("slow").unwrap().admission;
    let flood_until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < flood_until {
        let _ = inlet.send(0);
    }
    let flooded = admission();
    assert!(flooded.lowered >= 3 && flooded.share < 0.5, "{flooded:?}");
    // The flood over and the queue drained, the share comes back.
    assert!(wait_until(|| admission().raised >= 3), "{:?}", admission());
    running.shutdown(DEADLINE);
    assert_eq!(flooded.target_wait_secs, Some(0.02));
}

#[test]
fn a_batch_without_max_batch_is_fixed() {
    let running = pipeline(
        100,
        Connector::decoupled(),
        "[clusters.main]\nbatch = 4",
        |_| {},
    );
    assert!(wait_until(|| running
        .stats()
        .stage("sink")
        .unwrap()
        .handled
        == 100));
    let batch = running.stats().stage("sink").unwrap().batch;
    running.shutdown(DEADLINE);
    assert_eq!(
        (batch.now, batch.min, batch.max, batch.shrunk),
        (4, 4, 4, 0)
    );
}

#[test]
fn a_sender_blocked_past_the_shutdown_deadline_gets_its_event_back() {
    let numbers = Out::<u64>::new("numbers");
    let port = numbers.clone();
    let (gate, opened) = crossbeam_channel::bounded::<()>(0);
    let (told, back) = crossbeam_channel::bounded(1);
    let (holding, held) = crossbeam_channel::bounded::<u64>(1);
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |_, ctx| {
                let refused = (0..).find_map(|n| ctx.send(&port, n).err()).unwrap();
                let _ = told.send((refused.error().is_stopped(), refused.into_inner()));
                Ok(())
            },
        )
        .output(&numbers),
    );
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |_, n: u64, _| {
            let _ = holding.try_send(n);
            let _ = opened.recv();
            Ok(())
        },
    ));
    graph.connect(&source, "numbers", &sink, Connector::decoupled());
    let running = graph
        .start(&clusters("[clusters.main]\nthreads = 2\nqueue = 8"))
        .unwrap();
    assert_eq!(
        held.recv_timeout(DEADLINE).unwrap(),
        0,
        "the sink holds the first event"
    );
    let report = running.shutdown(Duration::from_millis(300));
    // The sink's thread, held at the gate, leaves now. (Both threads may count as
    // stuck: the source's leaves after the deadline too, once it sees the halt.)
    drop(gate);
    assert!(
        report.stuck_threads >= 1,
        "the sink's thread outlived the deadline"
    );
    // The source notices the halt at its next look (every 20 ms), after the deadline.
    let (stopped, event) = back.recv_timeout(DEADLINE).unwrap();
    assert!(stopped, "a halt, not a rejection");
    // The sink holds the first event at its gate; every other one but the event
    // given back was left in the queue and dead-lettered.
    assert_eq!(report.stats.stage("sink").unwrap().handled, 0);
    assert_eq!(report.abandoned, event - 1);
    assert_eq!(
        report.dead_letters,
        report.abandoned + 1,
        "the refused one counted too"
    );
}

#[test]
fn an_idempotent_stage_drops_repeats_within_its_window_and_counts_them() {
    let (sums_tx, sums) = crossbeam_channel::unbounded();
    let mut graph = Graph::new();
    let sum = graph.stage(
        Stage::stateful(
            "sum",
            || 0u64,
            move |sum: &mut u64, n: u64, _| {
                *sum += n;
                sums_tx.send(*sum).unwrap();
                Ok(())
            },
        )
        .idempotent_by(1_000, |n: &u64| *n),
    );
    graph.part([("main", graph.all())]);
    let running = graph.start(&HashMap::new()).unwrap();
    let inlet = running.inlet("redelivery", &sum, Admission::Block).unwrap();
    // Each of 1..=100 twice, as a redelivery after a crash would bring them.
    for n in (1..=100_u64).chain(1..=100) {
        inlet.send(n).unwrap();
    }
    assert!(wait_until(|| {
        let stats = running.stats();
        let sum = stats.stage("sum").unwrap();
        sum.handled + sum.duplicates == 200
    }));
    let stats = running.stats();
    let stage = stats.stage("sum").unwrap();
    assert_eq!((stage.handled, stage.duplicates), (100, 100));
    assert_eq!(sums.try_iter().last(), Some(5_050), "each number once");
    running.shutdown(DEADLINE);

    let mut graph = Graph::new();
    graph.stage(
        Stage::stateful("sum", || 0u64, |_, _: u64, _| Ok(()))
            .idempotent_by(10, |s: &String| s.clone()),
    );
    graph.part([("main", graph.all())]);
    let refused = graph.start(&HashMap::new()).err().unwrap();
    assert!(
        refused.is_graph()
            && refused
                .to_string()
                .contains("idempotent by a key of alloc::string::String events but takes u64"),
        "{refused}"
    );
}

#[test]
fn an_entry_reaches_its_stage_and_a_wrong_one_is_refused_by_name() {
    let (seen_tx, seen) = crossbeam_channel::unbounded();
    let mut graph = Graph::new();
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |(), n: u64, _| {
            seen_tx.send(n).unwrap();
            Ok(())
        },
    ));
    graph.entry(&Out::<u64>::new("numbers"), &sink, Connector::decoupled());
    graph.part([("main", graph.all())]);
    let running = graph.start(&HashMap::new()).unwrap();
    running.entry::<u64>("numbers").unwrap().send(7).unwrap();
    assert_eq!(seen.recv_timeout(DEADLINE), Ok(7));
    let unknown = running.entry::<u64>("letters").unwrap_err();
    assert!(
        unknown.to_string().contains("no entry `letters`"),
        "{unknown}"
    );
    let typed = running.entry::<String>("numbers").unwrap_err();
    assert!(typed.to_string().contains("carries u64"), "{typed}");
    running.shutdown(DEADLINE);

    fn refused<T: Send + 'static>(connector: Connector, port: &Out<T>) -> String {
        let mut graph = Graph::new();
        let sink = graph.stage(Stage::stateful("sink", || (), |(), _: u64, _| Ok(())));
        graph.entry(port, &sink, connector);
        graph.part([("main", graph.all())]);
        graph.start(&HashMap::new()).err().unwrap().to_string()
    }
    let mistyped = refused(Connector::decoupled(), &Out::<String>::new("words"));
    assert!(
        mistyped.contains("entry `words` carries alloc::string::String but `sink` takes u64"),
        "{mistyped}"
    );
    let local = refused(Connector::local(), &Out::<u64>::local("words"));
    assert!(local.contains("must be decoupled"), "{local}");
}
