//! Async handlers on real threads: their awaits hold no thread, a stateful one still
//! takes one event at a time, a panic in one is caught, and a cohort connector to one
//! is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::tests::{DEADLINE, clusters, feeding, wait_until};
use super::{Connector, Context, Graph, Out, Stage, StageError};

#[test]
fn an_async_handlers_awaits_hold_no_thread() {
    let inside = Arc::new(AtomicUsize::new(0));
    let together = Arc::new(AtomicUsize::new(0));
    let (arrivals, passes) = (inside.clone(), together.clone());
    // One thread for four instances: only if an await gives the thread back can all
    // four handlers be inside at once.
    let sink = Stage::stateless_async(
        "sink",
        || (),
        async move |_: &mut (), _: u64, _: &mut Context<'_>| {
            arrivals.fetch_add(1, Ordering::SeqCst);
            let until = tokio::time::Instant::now() + DEADLINE;
            while arrivals.load(Ordering::SeqCst) < 4 && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            if arrivals.load(Ordering::SeqCst) >= 4 {
                passes.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        },
    );
    let running = feeding(4, sink, Connector::local())
        .start(&clusters(
            "[clusters.main]\nthreads = 2\ninstances = { sink = 4 }",
        ))
        .unwrap();
    let report = running.shutdown(DEADLINE);
    assert_eq!(report.stats.stage("sink").unwrap().handled, 4);
    assert_eq!(together.load(Ordering::SeqCst), 4);
    assert_eq!(inside.load(Ordering::SeqCst), 4);
}

#[test]
fn an_async_stateful_stage_takes_one_event_at_a_time_and_keeps_its_state() {
    let busy = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let (flag, overlapped) = (busy, overlaps.clone());
    let (total_tx, total) = std::sync::mpsc::channel();
    let sink = Stage::stateful_async(
        "sink",
        || 0u64,
        async move |sum: &mut u64, n: u64, _: &mut Context<'_>| {
            if flag.swap(true, Ordering::SeqCst) {
                overlapped.fetch_add(1, Ordering::SeqCst);
            }
            tokio::task::yield_now().await;
            *sum += n;
            flag.store(false, Ordering::SeqCst);
            total_tx.send(*sum).unwrap();
            Ok(())
        },
    );
    let running = feeding(2_000, sink, Connector::decoupled())
        .start(&clusters("[clusters.main]\nthreads = 3"))
        .unwrap();
    let sums: Vec<u64> = (0..2_000)
        .map(|_| total.recv_timeout(DEADLINE).unwrap())
        .collect();
    running.shutdown(DEADLINE);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    assert_eq!(sums.last(), Some(&(0..2_000).sum()));
}

#[test]
fn an_async_handlers_panic_is_dead_lettered_and_its_stage_goes_on() {
    let handled = Arc::new(AtomicUsize::new(0));
    let count = handled.clone();
    let sink = Stage::stateless_async(
        "sink",
        || (),
        async move |_: &mut (), n: u64, _: &mut Context<'_>| {
            tokio::task::yield_now().await;
            assert_ne!(n, 2, "event two is poison");
            count.fetch_add(1, Ordering::SeqCst);
            Ok(())
        },
    );
    let running = feeding(5, sink, Connector::local())
        .start(&clusters("[clusters.main]\nthreads = 2"))
        .unwrap();
    assert!(wait_until(|| running
        .stats()
        .stage("sink")
        .unwrap()
        .handled
        == 5));
    let report = running.shutdown(DEADLINE);
    let sink = report.stats.stage("sink").unwrap();
    assert_eq!((sink.handled, sink.failed), (5, 1));
    assert_eq!(handled.load(Ordering::SeqCst), 4);
    assert_eq!(report.dead_letters, 1);
}

#[test]
fn an_async_source_runs_once_on_a_loop() {
    let numbers = Out::<u64>::new("numbers");
    let port = numbers.clone();
    let (got_tx, got) = std::sync::mpsc::channel();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source_async(
            "ticker",
            || (),
            async move |_: &mut (), (): (), ctx: &mut Context<'_>| {
                for n in 0..3 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    ctx.send(&port, n)?;
                }
                Ok::<_, StageError>(())
            },
        )
        .output(&numbers),
    );
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |_, n: u64, _| {
            got_tx.send(n).unwrap();
            Ok(())
        },
    ));
    graph.connect(&source, "numbers", &sink, Connector::local());
    let running = graph
        .start(&clusters("[clusters.main]\nthreads = 1"))
        .unwrap();
    let seen: Vec<u64> = (0..3)
        .map(|_| got.recv_timeout(DEADLINE).unwrap())
        .collect();
    running.shutdown(DEADLINE);
    assert_eq!(seen, [0, 1, 2]);
}

#[test]
fn a_cohort_connector_to_an_async_stage_is_refused() {
    let sink = Stage::stateless_async(
        "sink",
        || (),
        async |_: &mut (), _: u64, _: &mut Context<'_>| Ok(()),
    );
    let error = match feeding(1, sink, Connector::cohort()).start(&clusters("")) {
        Ok(_) => panic!("the graph started"),
        Err(error) => error,
    };
    assert!(error.is_graph());
    assert_eq!(
        error.to_string(),
        "`source.numbers` → `sink` is cohort, but `sink` is async: its handler cannot run on its sender's thread; connect it local or decoupled"
    );
}
