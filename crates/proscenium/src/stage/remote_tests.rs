use super::*;
use crate::stage::{Connector, Graph, Mapping, Out, Stage};
use crate::stream::{RedisTarget, StreamReceiver, StreamSender};
use crate::testing::{Redis, free_port};

/// A reader of stream `s` into stage `node`, as group `sink`.
fn inbound(redis: &Redis, node: usize, claim_idle: Duration) -> InboundSpec {
    InboundSpec {
        redis: redis.target(),
        stream: "s".into(),
        group: "sink".into(),
        consumer: "p1".into(),
        node,
        codec: codec(),
        claim_idle,
        max_deliveries: 3,
    }
}

/// Process `process`'s part of graph `graph`: cluster `cluster`.
fn mapping(graph: &str, process: &str, cluster: &str, redis: impl Into<RedisTarget>) -> Mapping {
    Mapping {
        graph: graph.into(),
        process: process.into(),
        clusters: vec![cluster.into()],
        redis: redis.into(),
        claim_idle: Duration::from_secs(30),
        max_deliveries: 3,
    }
}

/// A connection of the test's own, for what the code under test does not read.
async fn raw(redis: &Redis) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The events of stream `s` pending in group `sink`.
async fn pending(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
    let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg("s")
        .arg("sink")
        .query_async(raw)
        .await
        .unwrap();
    summary.0
}

/// The graph most of these tests split over two processes: `source` (cluster
/// `front`) sending on its port `numbers` to `sink` (cluster `back`) through
/// `connector`.
fn source_to_sink(source: Stage, sink: Stage, connector: Connector) -> Graph {
    let mut graph = Graph::new();
    let source = graph.stage(source);
    let sink = graph.stage(sink);
    graph.connect(&source, "numbers", &sink, connector);
    graph.part([("front", (&source).into()), ("back", (&sink).into())]);
    graph
}

/// Waits up to ten seconds for `done`; returns whether it came.
fn until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn bounds(queue: usize) -> Bounds {
    Bounds {
        queue,
        backlog: 100_000,
    }
}

fn codec() -> Codec {
    Out::<u64>::new("n").spec.codec.unwrap()
}

async fn read_all(url: &str, n: usize) -> Vec<u64> {
    let mut receiver = StreamReceiver::join(url, "s", "g", "c").await.unwrap();
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while got.len() < n && std::time::Instant::now() < deadline {
        for delivery in receiver
            .receive::<u64>(1000, Duration::from_millis(100))
            .await
            .unwrap()
        {
            got.push(delivery.event.unwrap());
        }
    }
    got
}

#[tokio::test]
async fn events_are_written_in_order_in_batches_and_the_rest_on_close() {
    let redis = Redis::start();
    let (outbound, writer) =
        Outbound::spawn(redis.target(), "s".into(), codec().encode, bounds(10_000)).unwrap();
    for n in 0..5_000_u64 {
        outbound.try_send(Box::new(n)).unwrap();
    }
    drop(outbound);
    writer.join().unwrap();
    assert_eq!(
        read_all(&redis.url(), 5_000).await,
        (0..5_000).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn events_sent_before_redis_is_up_wait_and_arrive_and_a_full_queue_refuses() {
    let port = free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let (outbound, writer) =
        Outbound::spawn(url.clone().into(), "s".into(), codec().encode, bounds(3)).unwrap();
    for n in 0..3_u64 {
        outbound.try_send(Box::new(n)).unwrap();
    }
    // The writer takes none while it cannot reach Redis: the queue is full.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = outbound.try_send(Box::new(3_u64)).unwrap_err();
    assert_eq!(refused.downcast_ref::<u64>(), Some(&3));
    let _redis = Redis::start_on(port);
    drop(outbound);
    writer.join().unwrap();
    assert_eq!(read_all(&url, 3).await, [0, 1, 2]);
}

#[tokio::test]
async fn a_stream_feeds_a_stage_and_what_it_handled_is_acknowledged_what_failed_is_not() {
    use std::collections::HashMap;

    use crate::stage::StageError;

    let redis = Redis::start();
    let (seen, got) = crossbeam_channel::unbounded();
    let mut graph = Graph::new();
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |(), n: u64, _| {
            if n == 13 {
                return Err(StageError::handler("thirteen"));
            }
            seen.send(n).unwrap();
            Ok(())
        },
    ));
    graph.part([("main", graph.all())]);
    let running = graph.start(&HashMap::new()).unwrap();
    let inbound = Inbound::spawn(
        running.shared(),
        inbound(&redis, sink.index, Duration::from_secs(60)),
    )
    .unwrap();
    let mut sender = StreamSender::connect(&redis.url(), "s").await.unwrap();
    sender.send(&(0..100).collect::<Vec<u64>>()).await.unwrap();
    let mut handled: Vec<u64> = (0..99)
        .map(|_| got.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    handled.sort_unstable();
    assert_eq!(handled, (0..100).filter(|&n| n != 13).collect::<Vec<_>>());
    let mut raw = raw(&redis).await;
    // The reader acknowledges between reads: a tenth of a second apart.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let pending = loop {
        let count = pending(&mut raw).await;
        if count <= 1 || std::time::Instant::now() > deadline {
            break count;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        pending, 1,
        "the failed event alone, left to be delivered again"
    );
    drop(inbound);
    running.shutdown(Duration::from_secs(5));
}

#[tokio::test]
async fn a_poison_event_ends_in_the_dead_letter_stream_after_its_deliveries() {
    use std::collections::HashMap;
    use std::sync::atomic::AtomicUsize;

    use crate::stage::StageError;

    let redis = Redis::start();
    let tries = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tries);
    let mut graph = Graph::new();
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |(), n: u64, _| -> Result<(), StageError> {
            counted.fetch_add(1, Ordering::SeqCst);
            panic!("{n} always panics");
        },
    ));
    graph.part([("main", graph.all())]);
    let running = graph.start(&HashMap::new()).unwrap();
    let inbound = Inbound::spawn(
        running.shared(),
        inbound(&redis, sink.index, Duration::from_millis(100)),
    )
    .unwrap();
    StreamSender::connect(&redis.url(), "s")
        .await
        .unwrap()
        .send(&[13_u64])
        .await
        .unwrap();
    let mut raw = raw(&redis).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let dead = loop {
        let dead: u64 = redis::cmd("XLEN")
            .arg("s:dead")
            .query_async(&mut raw)
            .await
            .unwrap();
        if dead > 0 || std::time::Instant::now() > deadline {
            break dead;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    drop(inbound);
    assert_eq!(dead, 1);
    assert_eq!(
        tries.load(Ordering::SeqCst),
        3,
        "handled three times, no more"
    );
    assert_eq!(pending(&mut raw).await, 0, "acknowledged once moved");
    assert_eq!(running.dead_letters().count(), 1, "and reported");
    running.shutdown(Duration::from_secs(5));
}

/// A stage between two processes: what it handled is acknowledged only once what
/// it sent on is in Redis. Its output stream is kept from being written (a key of
/// another type in its place) until the test removes it.
#[test]
fn an_event_is_acknowledged_only_once_what_its_handler_sent_on_is_written() {
    use std::collections::HashMap;

    let numbers = Out::<u64>::new("numbers");
    let relayed = Out::<u64>::new("out");
    let out = relayed.clone();
    let mut graph = Graph::new();
    let source = graph.stage(Stage::source("source", || (), |(), _| Ok(())).output(&numbers));
    let relay = graph.stage(
        Stage::stateless(
            "relay",
            || (),
            move |(), n: u64, ctx| Ok(ctx.send(&out, n)?),
        )
        .output(&relayed),
    );
    let sink = graph.stage(Stage::stateless("sink", || (), |(), _: u64, _| Ok(())));
    graph.connect(&source, "numbers", &relay, Connector::decoupled());
    graph.connect(&relay, "out", &sink, Connector::decoupled());
    graph.part([
        ("front", (&source).into()),
        ("middle", (&relay).into()),
        ("back", (&sink).into()),
    ]);
    let redis = Redis::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut raw = runtime.block_on(raw(&redis));
    let mut query = |command: &mut redis::Cmd| -> redis::Value {
        runtime.block_on(command.query_async(&mut raw)).unwrap()
    };
    let (input, output) = ("t:source.numbers:relay", "t:relay.out:sink");
    query(redis::cmd("SET").arg(output).arg("in the way"));
    let running = graph
        .start_mapped(&HashMap::new(), &mapping("t", "b", "middle", redis.url()))
        .unwrap();
    runtime.block_on(async {
        let mut sender = StreamSender::connect(&redis.url(), input).await.unwrap();
        sender.send(&(0..10).collect::<Vec<u64>>()).await.unwrap();
    });
    let pending = |query: &mut dyn FnMut(&mut redis::Cmd) -> redis::Value| {
        let summary = query(redis::cmd("XPENDING").arg(input).arg("relay"));
        let redis::Value::Array(fields) = summary else {
            panic!("XPENDING answers an array: {summary:?}")
        };
        redis::from_redis_value::<u64>(fields[0].clone()).unwrap()
    };
    until(|| running.stats().stage("relay").unwrap().handled == 10);
    // Several of the reader's rounds, in which it would have acknowledged them.
    std::thread::sleep(READ_WAIT * 5);
    assert_eq!(pending(&mut query), 10, "handled, their outputs unwritten");
    query(redis::cmd("DEL").arg(output));
    let mut left = 10;
    until(|| {
        left = pending(&mut query);
        left == 0
    });
    assert_eq!(left, 0, "acknowledged once written");
    let written = query(redis::cmd("XLEN").arg(output));
    assert_eq!(redis::from_redis_value::<u64>(written).unwrap(), 10);
    running.shutdown(Duration::from_secs(5));
}

/// A producer whose consumer is not there: the stream holds its bound and no more,
/// the producer's queue fills, and its sends are refused (`reject`) — then the
/// consumer comes, takes every event that was accepted, and the stream is trimmed
/// of them.
#[test]
fn the_consumers_backlog_bounds_the_stream_and_what_it_acknowledged_is_trimmed() {
    use std::sync::atomic::AtomicU64;

    use crate::stage::Admission;

    const EVENTS: u64 = 20_000;
    // Four of the consumer's queues (at least a read's batch): 4 × 256.
    const BOUND: u64 = 1_024;
    fn graph(accepted: Arc<AtomicU64>, handled: Arc<AtomicU64>, enough: Arc<AtomicBool>) -> Graph {
        let numbers = Out::<u64>::new("numbers");
        let out = numbers.clone();
        let source = Stage::source(
            "source",
            || (),
            move |(), ctx| {
                // Refused, it tries again a little later, as a client would,
                // until the test has seen enough.
                for n in 0..EVENTS {
                    match ctx.send(&out, n) {
                        Ok(()) => {
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(refused) if refused.error().is_rejected() => {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        Err(refused) => return Err(refused.into()),
                    }
                    if enough.load(Ordering::SeqCst) {
                        break;
                    }
                }
                Ok(())
            },
        )
        .output(&numbers);
        let sink = Stage::stateless(
            "sink",
            || (),
            move |(), _: u64, _| {
                handled.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
        );
        source_to_sink(
            source,
            sink,
            Connector::decoupled().admission(Admission::Reject),
        )
    }
    let redis = Redis::start();
    let clusters = super::super::tests::clusters(
        "[clusters.front]\nqueue = 100\n[clusters.back]\nqueue = 100",
    );
    let (accepted, handled) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let enough = Arc::new(AtomicBool::new(false));
    let front = graph(
        Arc::clone(&accepted),
        Arc::clone(&handled),
        Arc::clone(&enough),
    )
    .start_mapped(&clusters, &mapping("bp", "a", "front", redis.url()))
    .unwrap();
    let stream = "bp:source.numbers:sink";
    let mut raw = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut len = || -> u64 { redis::cmd("XLEN").arg(stream).query(&mut raw).unwrap() };
    // Refusals are counted at the consumer's entry, in the sending process.
    until(|| front.stats().stage("sink").unwrap().rejected > 0 && len() >= BOUND);
    // Time for the writer to pass the bound, if it would.
    std::thread::sleep(Duration::from_millis(300));
    let held = len();
    // It is read once half of it may be there, so a batch more may pass.
    assert!(
        (BOUND..BOUND + BATCH as u64).contains(&held),
        "the stream holds {held}"
    );
    enough.store(true, Ordering::SeqCst);
    until(|| front.stats().stage("source").unwrap().handled == 1);
    let took = accepted.load(Ordering::SeqCst);
    assert!(took < 2_000, "{took} of {EVENTS} accepted");

    let back = graph(
        Arc::new(AtomicU64::new(0)),
        Arc::clone(&handled),
        Arc::clone(&enough),
    )
    .start_mapped(&clusters, &mapping("bp", "b", "back", redis.url()))
    .unwrap();
    until(|| handled.load(Ordering::SeqCst) == took);
    assert_eq!(handled.load(Ordering::SeqCst), took, "every accepted event");
    let mut left = u64::MAX;
    until(|| {
        left = len();
        left <= 1
    });
    assert!(left <= 1, "trimmed of what was acknowledged: {left} left");
    front.shutdown(Duration::from_secs(5));
    back.shutdown(Duration::from_secs(5));
}

/// Two consumers of one stage: the first holds every event in its queue, handled
/// slowly, longer than `claim_idle` in all; the second, started after, claims none
/// of them — a live consumer keeps what it holds — and each is handled once.
#[test]
fn a_live_consumers_queued_events_are_not_claimed_from_it() {
    use std::collections::HashMap;

    fn graph() -> Graph {
        let numbers = Out::<u64>::new("numbers");
        let source = Stage::source("source", || (), |(), _| Ok(())).output(&numbers);
        let sink = Stage::stateful(
            "sink",
            || (),
            |(), _: u64, _| {
                std::thread::sleep(Duration::from_millis(40));
                Ok(())
            },
        );
        source_to_sink(source, sink, Connector::decoupled())
    }
    let redis = Redis::start();
    let consumer = |process: &str| {
        let mut mapping = mapping("k", process, "back", redis.url());
        mapping.claim_idle = Duration::from_secs(1);
        graph().start_mapped(&HashMap::new(), &mapping).unwrap()
    };
    let first = consumer("a");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut sender = StreamSender::connect(&redis.url(), "k:source.numbers:sink")
            .await
            .unwrap();
        sender.send(&(0..60).collect::<Vec<u64>>()).await.unwrap();
    });
    let handled = |graph: &crate::stage::RunningGraph| graph.stats().stage("sink").unwrap().handled;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while first.stats().stage("sink").unwrap().arrived < 60 {
        assert!(std::time::Instant::now() < deadline, "the first took them");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = consumer("b");
    while handled(&first) + handled(&second) < 60 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Claims come every quarter of claim_idle: give the second a few more.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!((handled(&first), handled(&second)), (60, 0));
    first.shutdown(Duration::from_secs(5));
    second.shutdown(Duration::from_secs(5));
}

/// The same graph in two "processes" of one test: `front` (a source) in one,
/// `back` (a sink) in the other, the decoupled connector between them a stream.
#[test]
fn a_graph_split_over_two_processes_carries_every_event_across_in_order() {
    use std::collections::HashMap;

    fn graph(seen: crossbeam_channel::Sender<u64>) -> Graph {
        let numbers = Out::<u64>::new("numbers");
        let out = numbers.clone();
        let source = Stage::source(
            "source",
            || (),
            move |(), ctx| {
                (0..1_000_u64).try_for_each(|n| ctx.send(&out, n))?;
                Ok(())
            },
        )
        .output(&numbers);
        let sink = Stage::stateful(
            "sink",
            || (),
            move |(), n: u64, _| {
                seen.send(n).unwrap();
                Ok(())
            },
        );
        source_to_sink(source, sink, Connector::decoupled())
    }
    let redis = Redis::start();
    let mapping = |process: &str, cluster: &str| mapping("split", process, cluster, redis.url());
    let (seen, got) = crossbeam_channel::unbounded();
    let back = graph(seen.clone())
        .start_mapped(&HashMap::new(), &mapping("b", "back"))
        .unwrap();
    let front = graph(seen)
        .start_mapped(&HashMap::new(), &mapping("a", "front"))
        .unwrap();
    let received: Vec<u64> = (0..1_000)
        .map(|_| got.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(received, (0..1_000).collect::<Vec<_>>());
    assert!(
        got.recv_timeout(Duration::from_millis(200)).is_err(),
        "each once"
    );
    let front_sink = front.stats().stage("sink").unwrap().handled;
    assert_eq!(front_sink, 0, "the sink runs in the other process only");
    front.shutdown(Duration::from_secs(5));
    back.shutdown(Duration::from_secs(5));
}

#[test]
fn an_inlet_to_a_stage_of_another_process_is_refused_not_left_waiting() {
    use std::collections::HashMap;

    use crate::stage::Admission;

    let numbers = Out::<u64>::new("numbers");
    let mut graph = Graph::new();
    let source = graph.stage(Stage::source("source", || (), |(), _| Ok(())).output(&numbers));
    let sink = graph.stage(Stage::stateless("sink", || (), |(), _: u64, _| Ok(())));
    graph.connect(&source, "numbers", &sink, Connector::decoupled());
    graph.part([("front", (&source).into()), ("back", (&sink).into())]);
    let redis = Redis::start();
    let front = graph
        .start_mapped(&HashMap::new(), &mapping("i", "a", "front", redis.url()))
        .unwrap();
    let refused = front
        .inlet::<u64>("orders", &sink, Admission::Reject)
        .unwrap_err();
    assert!(
        refused.is_graph() && refused.to_string().contains("runs in another process"),
        "{refused}"
    );
    front.shutdown(Duration::from_secs(5));
}

#[test]
fn a_cohort_connector_across_processes_and_an_unknown_cluster_are_refused_by_name() {
    use std::collections::HashMap;

    fn graph(connector: Connector) -> Graph {
        let numbers = Out::<u64>::new("numbers");
        let out = numbers.clone();
        let source =
            Stage::source("source", || (), move |(), ctx| Ok(ctx.send(&out, 1)?)).output(&numbers);
        let sink = Stage::stateless("sink", || (), |(), _: u64, _| Ok(()));
        source_to_sink(source, sink, connector)
    }
    let nowhere = format!("redis://127.0.0.1:{}", free_port());
    let mapping = |cluster: &str| mapping("g", "a", cluster, nowhere.clone());
    let crossing = graph(Connector::cohort())
        .start_mapped(&HashMap::new(), &mapping("front"))
        .err()
        .unwrap();
    assert!(crossing.is_graph(), "{crossing}");
    assert!(
        crossing
            .to_string()
            .contains("only decoupled connectors cross clusters"),
        "{crossing}"
    );
    let unknown = graph(Connector::decoupled())
        .start_mapped(&HashMap::new(), &mapping("middle"))
        .err()
        .unwrap();
    assert!(
        unknown.to_string().contains("cluster `middle`"),
        "{unknown}"
    );
}

#[test]
fn a_process_whose_graph_differs_from_the_others_refuses_to_join_naming_the_difference() {
    use std::collections::HashMap;

    fn graph<T: crate::stage::Event>() -> Graph {
        let numbers = Out::<T>::new("numbers");
        let source = Stage::source("source", || (), |(), _| Ok(())).output(&numbers);
        let sink = Stage::stateless("sink", || (), |(), _: T, _| Ok(()));
        source_to_sink(source, sink, Connector::decoupled())
    }
    let redis = Redis::start();
    let mapping = |cluster: &str| mapping("g", cluster, cluster, redis.url());
    let back = graph::<u64>()
        .start_mapped(&HashMap::new(), &mapping("back"))
        .unwrap();
    let refused = graph::<u32>()
        .start_mapped(&HashMap::new(), &mapping("front"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        refused.contains("differs")
            && refused.contains("- port source.numbers carries u64")
            && refused.contains("+ port source.numbers carries u32"),
        "{refused}"
    );
    let front = graph::<u64>()
        .start_mapped(&HashMap::new(), &mapping("front"))
        .unwrap();
    front.shutdown(Duration::from_secs(5));
    back.shutdown(Duration::from_secs(5));
}
