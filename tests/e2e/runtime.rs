//! The runtime: concurrency across loops and the blocking pool (Yarn's acceptance
//! test), every dispatch rule, and graceful shutdown.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use proscenium::{App, Dispatch, Model, blocking};

use crate::support::{self, Client};

fn slow_app() -> App {
    App::new()
        .get(
            "/async/:ms",
            |proscenium::Path(ms): proscenium::Path<u64>| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                format!("slept {ms}")
            },
        )
        .get(
            "/blocking/:ms",
            blocking(|proscenium::Path(ms): proscenium::Path<u64>| {
                thread::sleep(Duration::from_millis(ms));
                format!("slept {ms}")
            }),
        )
}

/// Client A asks for a 1 s request, then client B for a 0.1 s one; returns which
/// answer arrived first.
fn first_to_answer(addr: SocketAddr, kind: &str) -> &'static str {
    let (tx, rx) = mpsc::channel();
    let spawn = |name: &'static str, ms: u64, tx: mpsc::Sender<&'static str>| {
        let path = format!("/{kind}/{ms}");
        thread::spawn(move || {
            let res = support::get(addr, &path);
            assert_eq!(res.text(), format!("slept {ms}"));
            tx.send(name).unwrap();
        })
    };
    let a = spawn("A", 1000, tx.clone());
    thread::sleep(Duration::from_millis(50));
    let b = spawn("B", 100, tx);
    let first = rx.recv().unwrap();
    a.join().unwrap();
    b.join().unwrap();
    first
}

#[test]
fn a_slow_request_never_holds_up_a_fast_one() {
    support::in_process(
        "under event-loop the order is one loop's: in two workers the two clients may meet different loops",
    );
    // Documented exception: `event-loop` without a blocking pool runs a blocking
    // handler on its one loop, so there the slow one answers first.
    let blocking_first = match support::model().model {
        Model::EventLoop => "A",
        _ => "B",
    };
    for loops in [1, 2] {
        let server = support::start_with(slow_app(), |c| c.loops = Some(loops));
        for (kind, first) in [("async", "B"), ("blocking", blocking_first)] {
            assert_eq!(
                first_to_answer(server.local_addr(), kind),
                first,
                "{kind} on {loops} loops"
            );
        }
    }
}

#[test]
fn event_loop_runs_blocking_handlers_inline_unless_given_a_pool() {
    support::in_process("the order one loop answers in");
    // Node.js, faithfully: with no blocking pool a blocking handler holds the one loop,
    // so the fast request waits behind the slow one (the documented difference).
    let inline = support::start_with(slow_app(), |c| c.model = Model::EventLoop);
    assert_eq!(first_to_answer(inline.local_addr(), "blocking"), "A");
    assert_eq!(
        first_to_answer(inline.local_addr(), "async"),
        "B",
        "awaits never block the loop"
    );
    let pooled = support::start_with(slow_app(), |c| {
        c.model = Model::EventLoop;
        c.blocking_threads = Some(2);
    });
    assert_eq!(first_to_answer(pooled.local_addr(), "blocking"), "B");
}

#[test]
fn every_dispatch_rule_serves_many_connections() {
    for dispatch in [Dispatch::Jsq, Dispatch::RoundRobin, Dispatch::Reuseport] {
        let server = support::start_with(slow_app(), |c| c.dispatch = dispatch);
        let clients: Vec<_> = (0..16)
            .map(|i| {
                let addr = server.local_addr();
                thread::spawn(move || support::get(addr, &format!("/async/{}", i % 3)).status)
            })
            .collect();
        for client in clients {
            assert_eq!(client.join().unwrap(), 200, "{dispatch}");
        }
    }
}

#[test]
fn graceful_shutdown_lets_a_request_in_flight_finish() {
    let server = support::start(slow_app());
    let addr = server.local_addr();
    let mut busy = Client::connect(addr);
    busy.get("/async/500");
    let mut idle = Client::connect(addr);
    idle.get("/async/0");
    assert_eq!(idle.response().status, 200);
    thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let stopper = thread::spawn(move || server.shutdown());
    let res = busy.response();
    assert_eq!(res.text(), "slept 500");
    assert_eq!(
        res.header("connection"),
        Some("close"),
        "the last answer announces the close"
    );
    assert!(
        idle.is_closed_within(Duration::from_secs(1)),
        "idle keep-alive connections are closed as shutdown begins"
    );
    stopper.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown did not hang"
    );
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "no longer accepting"
    );
}

#[test]
fn a_connection_accepted_before_shutdown_gets_its_first_request_answered() {
    if !support::has_loops() {
        // The thread models hand a connection to its thread at once; nothing waits.
        return;
    }
    let server = support::start(slow_app());
    let mut fresh = Client::connect(server.local_addr());
    thread::sleep(Duration::from_millis(100));
    let stopper = thread::spawn(move || server.shutdown());
    // Its request is late, as one on the wire when shutdown began would be.
    thread::sleep(Duration::from_millis(200));
    let res = fresh.get("/async/0").response();
    assert_eq!(res.text(), "slept 0", "served, not dropped");
    assert_eq!(res.header("connection"), Some("close"));
    stopper.join().unwrap();
}

#[test]
fn shutdown_gives_up_on_requests_past_the_deadline() {
    let server = support::start_with(slow_app(), |c| {
        c.timeouts.shutdown = Duration::from_millis(200);
    });
    let mut busy = Client::connect(server.local_addr());
    busy.get("/async/5000");
    thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    server.shutdown();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "shutdown waited {:?}",
        started.elapsed()
    );
    assert!(busy.is_closed_within(Duration::from_secs(2)));
}

#[test]
fn jsq_steers_new_connections_away_from_a_stalled_loop() {
    support::in_process("the loops of one process");
    if support::model().model != Model::Loops {
        return; // only `loops` has more than one loop to choose from
    }
    let app = App::new()
        .get(
            "/which",
            proscenium::inline(|| format!("{:?}", proscenium::rt::current_loop())),
        )
        .get(
            "/stall",
            proscenium::inline(|| {
                // Unmarked heavy work: it holds its loop, as the watchdog reports.
                thread::sleep(Duration::from_millis(800));
                format!("{:?}", proscenium::rt::current_loop())
            }),
        );
    let server = support::start_with(app, |c| c.loops = Some(2));
    let addr = server.local_addr();
    let mut stalled = Client::connect(addr);
    stalled.get("/stall");
    thread::sleep(Duration::from_millis(100));
    let close = "GET /which HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let others: Vec<String> = (0..6)
        .map(|_| support::exchange(addr, close).text())
        .collect();
    let stalled_loop = stalled.response().text();
    assert!(
        others.iter().all(|l| *l != stalled_loop),
        "{stalled_loop} vs {others:?}"
    );
}

/// A route on the pool `images`: the thread it ran on, after `ms` ms; `most` keeps the
/// most jobs ever running at once. A job waits (up to 5 s) until two have run at once,
/// so a loaded machine that sends the requests slowly still shows two threads.
fn images_app(most: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> App {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NOW: AtomicUsize = AtomicUsize::new(0);
    let most = most.clone();
    App::new().get(
        "/resize/:ms",
        proscenium::blocking_on(
            "images",
            move |proscenium::Path(ms): proscenium::Path<u64>| {
                let now = NOW.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let waiting = Instant::now();
                while most.load(Ordering::SeqCst) < 2 && waiting.elapsed() < Duration::from_secs(5)
                {
                    thread::sleep(Duration::from_millis(5));
                }
                thread::sleep(Duration::from_millis(ms));
                NOW.fetch_sub(1, Ordering::SeqCst);
                thread::current().name().unwrap_or("").to_owned()
            },
        ),
    )
}

#[test]
fn a_named_pool_runs_its_routes_on_as_many_threads_as_configured() {
    support::in_process("threads counted in its memory");
    let most = std::sync::Arc::default();
    let server = support::start_with(images_app(&most), |c| {
        c.pools.insert(
            "images".to_owned(),
            proscenium::config::PoolSpec::threads(2),
        );
    });
    let addr = server.local_addr();
    let answers: Vec<String> = (0..6)
        .map(|_| thread::spawn(move || support::get(addr, "/resize/50").text()))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    for answer in &answers {
        assert!(answer.starts_with("pool-images-"), "ran on {answer}");
    }
    assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[test]
fn a_route_on_an_unconfigured_pool_stops_the_start() {
    let refused = proscenium::Server::new(images_app(&std::sync::Arc::default()))
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("GET /resize/:ms") && refused.contains("[pools.images] threads = N"),
        "{refused}"
    );
}
