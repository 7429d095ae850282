//! A stage graph behind HTTP routes: requests fed into a stage through an inlet, the
//! graph's queues, rates and latencies in `/_status`, a full queue answered 503; and
//! the staged model, whose server is itself a stage graph.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use http::StatusCode;
use proscenium::config::Model;
use proscenium::stage::{
    Admission, ClusterSpec, Connector, Graph, Inlet, Out, RunningGraph, Stage, StageRef,
};
use proscenium::{App, Path, inline};
use serde_json::Value;

use crate::support::{self, Client};

/// Returns `app` with `POST /jobs/:n` sending `n` into `inlet`: 202 once queued.
fn jobs_route(app: App, inlet: Inlet<u64>) -> App {
    app.post(
        "/jobs/:n",
        inline(move |Path(n): Path<u64>| inlet.send(n).map(|()| StatusCode::ACCEPTED)),
    )
}

/// Starts a server with the diagnostic tools on and `graph`'s stats in `/_status`.
fn serve(app: App, graph: &RunningGraph) -> proscenium::ServerHandle {
    let monitor = graph.monitor();
    let app = app.status("graph", move || monitor.stats());
    support::start_with(app, |config| config.tools = true)
}

/// Returns a graph of stage `names[0]` squaring each number, after `pause`, for
/// `names[1]` (decoupled) to add up; its first stage, and where each total is told.
pub(crate) fn squares(names: [&str; 2], pause: Duration) -> (Graph, StageRef, mpsc::Receiver<u64>) {
    let squares = Out::<u64>::new("squares");
    let out = squares.clone();
    let (done, totals) = mpsc::channel();
    let mut graph = Graph::new();
    let square = graph.stage(
        Stage::stateless(
            names[0],
            || (),
            move |_, n: u64, ctx| {
                std::thread::sleep(pause);
                Ok(ctx.send(&out, n * n)?)
            },
        )
        .output(&squares),
    );
    let total = graph.stage(Stage::stateful(
        names[1],
        || 0,
        move |sum: &mut u64, n: u64, _| {
            *sum += n;
            done.send(*sum).unwrap();
            Ok(())
        },
    ));
    graph.connect(&square, "squares", &total, Connector::decoupled());
    (graph, square, totals)
}

/// Starts `graph` with all its stages in one cluster `cluster` set up as `spec`, and
/// returns it with an inlet (`http`, refusing when full) to `entry`.
pub(crate) fn start_in(
    mut graph: Graph,
    cluster: &str,
    spec: ClusterSpec,
    entry: &StageRef,
) -> (RunningGraph, Inlet<u64>) {
    graph.part([(cluster, graph.all())]);
    let running = graph
        .start(&HashMap::from([(cluster.to_owned(), spec)]))
        .unwrap();
    let inlet = running
        .inlet::<u64>("http", entry, Admission::Reject)
        .unwrap();
    (running, inlet)
}

fn post(client: &mut Client, path: &str) -> support::Response {
    client
        .send(format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
        ))
        .response()
}

/// Returns stage `name`'s entry in `/_status` once `until` holds of it (or after 60 s,
/// the margin of a machine busy with the whole suite, for the assertions to report).
pub(crate) fn stage_status(
    addr: SocketAddr,
    section: &str,
    name: &str,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page: Value = serde_json::from_slice(&support::get(addr, "/_status").body).unwrap();
        let stage = page[section]["stages"]
            .as_array()
            .and_then(|stages| stages.iter().find(|s| s["stage"] == name))
            .cloned()
            .unwrap_or(Value::Null);
        if until(&stage) || Instant::now() > deadline {
            return stage;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn status_shows_each_stages_counters_and_latencies() {
    support::in_process("stages of its own process");
    let (mut graph, square, totals) = squares(["square", "total"], Duration::from_millis(2));
    // Every event timed, so the latency counts are the event counts.
    graph.sample(1);
    let spec = ClusterSpec {
        threads: Some(2),
        instances: [("square".to_owned(), 2)].into(),
        ..ClusterSpec::default()
    };
    let (running, inlet) = start_in(graph, "main", spec, &square);
    let server = serve(jobs_route(App::new(), inlet), &running);

    let mut client = Client::connect(server.local_addr());
    for n in 1..=20 {
        assert_eq!(post(&mut client, &format!("/jobs/{n}")).status, 202);
    }
    let sum: u64 = (1..=20).map(|n| n * n).sum();
    let mut last = 0;
    for _ in 0..20 {
        last = totals.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    assert_eq!(last, sum);

    let square = stage_status(server.local_addr(), "graph", "square", |s| {
        s["handled"] == 20
    });
    assert_eq!(square["cluster"], "main");
    assert_eq!(square["instances"], 2);
    assert_eq!(square["arrived"], 20, "{square}");
    assert_eq!(square["handled"], 20, "{square}");
    assert_eq!(square["sent"], 20, "{square}");
    assert_eq!(square["rejected"], 0, "{square}");
    assert_eq!(square["wait_secs"]["count"], 20, "{square}");
    assert_eq!(square["service_secs"]["count"], 20, "{square}");
    // Each handler sleeps 2 ms: the service times can only be longer.
    for quantile in ["p50", "p99", "max"] {
        let secs = square["service_secs"][quantile].as_f64().unwrap();
        assert!((0.002..1.0).contains(&secs), "{quantile}: {square}");
    }
    let total = stage_status(server.local_addr(), "graph", "total", |s| {
        s["handled"] == 20
    });
    assert_eq!(total["arrived"], 20, "{total}");
    assert_eq!(total["wait_secs"]["count"], 20, "{total}");
    let page: Value =
        serde_json::from_slice(&support::get(server.local_addr(), "/_status").body).unwrap();
    assert_eq!(page["graph"]["sample"], 1);
    running.shutdown(Duration::from_secs(5));
}

/// A stateful stage whose handler tells `started` it began, then waits for a token
/// from `gate` before it returns.
fn gated(graph: &mut Graph, started: mpsc::Sender<()>, gate: mpsc::Receiver<()>) -> StageRef {
    let (started, gate) = (Mutex::new(started), Mutex::new(gate));
    graph.stage(Stage::stateful(
        "gated",
        || (),
        move |_, _: u64, _| {
            started.lock().unwrap().send(()).unwrap();
            gate.lock().unwrap().recv().unwrap();
            Ok(())
        },
    ))
}

#[test]
fn a_full_stage_queue_is_a_503_counted_as_rejected() {
    support::in_process("stages of its own process");
    let (started_tx, started) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    let mut graph = Graph::new();
    let stage = gated(&mut graph, started_tx, gate);
    let spec = ClusterSpec {
        threads: Some(1),
        queue: Some(1),
        ..ClusterSpec::default()
    };
    let (running, inlet) = start_in(graph, "main", spec, &stage);
    let server = serve(jobs_route(App::new(), inlet), &running);
    let mut client = Client::connect(server.local_addr());

    // The first event holds the one instance, the second the one place in the queue.
    assert_eq!(post(&mut client, "/jobs/1").status, 202);
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(post(&mut client, "/jobs/2").status, 202);
    let refused = post(&mut client, "/jobs/3");
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));

    for _ in 0..2 {
        open.send(()).unwrap();
    }
    let stats = stage_status(server.local_addr(), "graph", "gated", |s| s["handled"] == 2);
    assert_eq!(stats["handled"], 2, "{stats}");
    assert_eq!(stats["arrived"], 2, "{stats}");
    assert_eq!(stats["rejected"], 1, "{stats}");
    assert_eq!(stats["capacity"], 1, "{stats}");
    // The connection that was refused is still served.
    assert_eq!(client.get("/_status").response().status, 200);
    let report = running.shutdown(Duration::from_secs(5));
    assert_eq!(report.abandoned, 0);
}

/// The name of the thread running a handler.
fn this_thread() -> String {
    std::thread::current().name().unwrap_or_default().to_owned()
}

/// An app answering `/` at once, `/who` with its handler's thread, and `/hold` once
/// released: tells `entered` the thread a `/hold` handler began on, and answers it
/// when `release` gets a permit.
fn holding_app() -> (
    App,
    mpsc::Receiver<String>,
    std::sync::Arc<tokio::sync::Semaphore>,
) {
    let (entered_tx, entered) = mpsc::channel();
    let entered_tx = std::sync::Arc::new(Mutex::new(entered_tx));
    let held = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let release = held.clone();
    let app = App::new()
        .get("/", inline(|| "hi"))
        .get("/who", inline(this_thread));
    let app = app.get("/hold", move || {
        let _ = entered_tx.lock().unwrap().send(this_thread());
        let held = held.clone();
        async move {
            let _ = held.acquire().await;
            "released"
        }
    });
    (app, entered, release)
}

#[test]
fn the_staged_server_refuses_past_a_full_stage_queue_and_shows_its_graph() {
    support::in_process("stages of its own process");
    let (app, entered, release) = holding_app();
    // One route-handler instance and room for one connection in its queue.
    let server = support::start_with(app, |c| {
        c.model = Model::Staged;
        c.tools = true;
        c.clusters.insert(
            "http".to_owned(),
            ClusterSpec {
                queue: Some(1),
                instances: [("route-handler".to_owned(), 1)].into(),
                ..ClusterSpec::default()
            },
        );
    });
    let addr = server.local_addr();
    let mut holding = Client::connect(addr);
    holding.get("/hold");
    entered.recv_timeout(Duration::from_secs(10)).unwrap();
    // One at a time: the queue bound is every stage's, handle-client's too.
    let mut queued: Vec<Client> = (0..2)
        .map(|_| {
            let mut client = Client::connect(addr);
            client.get("/");
            std::thread::sleep(Duration::from_millis(100));
            client
        })
        .collect();
    release.add_permits(1);
    assert_eq!(holding.response().text(), "released");
    let answers: Vec<_> = queued.iter_mut().map(Client::response).collect();
    let refused: Vec<_> = answers.iter().filter(|a| a.status == 503).collect();
    assert_eq!(refused.len(), 1, "{answers:?}");
    assert_eq!(refused[0].header("retry-after"), Some("1"));
    assert!(answers.iter().any(|a| a.text() == "hi"), "{answers:?}");

    let page: Value = serde_json::from_slice(&support::get(addr, "/_status").body).unwrap();
    let stages = page["staged"]["stages"].as_array().unwrap();
    let names: Vec<_> = stages
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "wait-client",
            "handle-client",
            "route-handler",
            "cache",
            "read-file"
        ]
    );
    let route = &stages[2];
    assert_eq!(route["rejected"], 1, "{}", page["staged"]);
    assert_eq!(stages[1]["rejected"], 0, "{}", page["staged"]);
    assert!(route["handled"].as_u64().unwrap() >= 2, "{route}");
    assert_eq!(page["staged"]["clusters"][0]["cluster"], "http");
}

/// Node.Scala's dispatch per request: a request read on a thread whose loop is busier
/// than another's runs on the least busy one, and its answer comes back to its
/// connection. One thread holds a request; whichever thread reads the others, they
/// run on the other thread.
#[test]
fn requests_run_on_the_thread_with_the_fewest_in_flight() {
    support::in_process("stages of its own process");
    let (app, entered, release) = holding_app();
    let server = support::start_with(app, |c| {
        c.model = Model::Staged;
        c.clusters.insert(
            "http".to_owned(),
            ClusterSpec {
                threads: Some(2),
                ..ClusterSpec::default()
            },
        );
    });
    let addr = server.local_addr();
    let mut holding = Client::connect(addr);
    holding.get("/hold");
    let busy = entered.recv_timeout(Duration::from_secs(10)).unwrap();
    for _ in 0..20 {
        let mut other = Client::connect(addr);
        let ran_on = other.get("/who").response().text();
        assert_ne!(ran_on, busy, "a request ran on the busy thread");
        assert!(ran_on.starts_with("stage-http"), "{ran_on}");
    }
    release.add_permits(1);
    assert_eq!(holding.response().text(), "released");
}

#[test]
fn the_staged_server_keeps_small_files_in_its_cache_and_never_serves_one_stale() {
    support::in_process("stages of its own process");
    let root = tempfile::tempdir().unwrap();
    let small = root.path().join("small.txt");
    std::fs::write(&small, "first version").unwrap();
    std::fs::write(root.path().join("large.bin"), vec![b'x'; 100 * 1024]).unwrap();
    let server = support::start_with(App::new(), |c| {
        c.model = Model::Staged;
        c.tools = true;
        c.root = Some(root.path().to_owned());
    });
    let addr = server.local_addr();
    let read = |until: u64| {
        stage_status(addr, "staged", "read-file", |s| s["handled"] == until)["handled"].clone()
    };
    for _ in 0..3 {
        assert_eq!(support::get(addr, "/small.txt").text(), "first version");
    }
    assert_eq!(read(1), 1, "one read, then two hits");
    let cache = stage_status(addr, "staged", "cache", |s| s["handled"] == 4);
    assert_eq!(cache["handled"], 4, "three lookups and one fill: {cache}");
    // The same length and a new time: a stat sees it, and it is read again.
    std::fs::write(&small, "second versio").unwrap();
    let file = std::fs::File::options().write(true).open(&small).unwrap();
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    assert_eq!(support::get(addr, "/small.txt").text(), "second versio");
    assert_eq!(read(2), 2);
    let part = support::exchange(
        addr,
        "GET /small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=7-9\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        (part.status, part.text().as_str()),
        (206, "ver"),
        "from the cache"
    );
    assert_eq!(read(2), 2);
    // A large file is read once, known large from then on: sent with sendfile, and
    // not read again.
    for _ in 0..3 {
        assert_eq!(support::get(addr, "/large.bin").body.len(), 100 * 1024);
    }
    assert_eq!(read(3), 3);
}

/// Leda's Fig. 9a served 300 KB files from its cache stage: kept once
/// `limits.static_cache_file` allows them, where by default the stage keeps only that
/// they are large.
#[test]
fn issue39_the_cache_stage_keeps_files_up_to_the_configured_size() {
    support::in_process("stages of its own process");
    let size = 300 * 1024;
    for (keep_up_to, kept) in [(None, false), (Some(512 * 1024), true)] {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("fig-9a.bin");
        std::fs::write(&path, vec![b'a'; size]).unwrap();
        let server = support::start_with(App::new(), |c| {
            c.model = Model::Staged;
            c.tools = true;
            c.root = Some(root.path().to_owned());
            if let Some(keep_up_to) = keep_up_to {
                c.limits.static_cache_file = keep_up_to;
            }
        });
        let addr = server.local_addr();
        assert_eq!(support::get(addr, "/fig-9a.bin").body, vec![b'a'; size]);
        let cache = stage_status(addr, "staged", "cache", |s| s["handled"] == 2);
        assert_eq!(cache["handled"], 2, "a lookup and its fill: {cache}");
        // A change no stat sees (the same file, length and time): only a copy kept in
        // memory still answers the bytes read before it.
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, vec![b'b'; size]).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
        let body = support::get(addr, "/fig-9a.bin").body;
        assert_eq!(body.len(), size);
        let expected = if kept { b'a' } else { b'b' };
        assert_eq!(body[0], expected, "kept up to {keep_up_to:?}");
    }
}

#[test]
fn the_staged_servers_files_are_answered_inline_and_never_pile_up_in_flight() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("small.txt"), "cached").unwrap();
    std::fs::write(root.path().join("large.bin"), vec![b'x'; 100 * 1024]).unwrap();
    let server = support::start_with(App::new(), |c| {
        c.model = Model::Staged;
        c.root = Some(root.path().to_owned());
        c.limits.max_inflight = 2;
    });
    let addr = server.local_addr();
    // Cold, then kept: lookups that waited a turn in a queue, and misses that waited
    // for read-file, sat in flight and were 503s past `max_inflight`.
    let statuses: Vec<u16> = (0..32)
        .map(|i| {
            std::thread::spawn(move || {
                let mut client = Client::connect(addr);
                let path = if i % 2 == 0 {
                    "/small.txt"
                } else {
                    "/large.bin"
                };
                (0..20)
                    .map(|_| client.get(path).response().status)
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(statuses.len(), 640);
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
}

/// A route that reaches a stage in another process through a graph entry: 202 while
/// Redis carries its events over, 503 once Redis is gone and the entry's queue here is
/// full — and the routes that need no Redis serve all along.
#[test]
fn a_route_to_a_stage_in_another_process_answers_503_while_redis_is_away() {
    support::in_process("stages of its own process");
    fn graph(seen: mpsc::Sender<u64>) -> Graph {
        let seen = Mutex::new(seen);
        let mut graph = Graph::new();
        let front = graph.stage(Stage::stateless("audit", || (), |(), _: u64, _| Ok(())));
        let back = graph.stage(Stage::stateful(
            "orders",
            || (),
            move |(), n: u64, _| {
                let _ = seen.lock().unwrap().send(n);
                Ok(())
            },
        ));
        let entry = Connector::decoupled().admission(Admission::Reject);
        graph.entry(&Out::<u64>::new("new-order"), &back, entry);
        graph.part([("front", (&front).into()), ("back", (&back).into())]);
        graph
    }
    let redis = proscenium::testing::Redis::start();
    let mapping = |process: &str| proscenium::stage::Mapping {
        graph: "shop".into(),
        process: process.into(),
        clusters: vec![process.into()],
        redis: redis.target(),
        claim_idle: Duration::from_secs(30),
        max_deliveries: 5,
    };
    let clusters = HashMap::from([(
        "back".to_owned(),
        ClusterSpec {
            queue: Some(8),
            ..ClusterSpec::default()
        },
    )]);
    let (seen, orders) = mpsc::channel();
    let back = graph(seen.clone())
        .start_mapped(&clusters, &mapping("back"))
        .unwrap();
    let front = graph(seen)
        .start_mapped(&clusters, &mapping("front"))
        .unwrap();
    let app = jobs_route(
        App::new().get("/", inline(|| "root")),
        front.entry::<u64>("new-order").unwrap(),
    );
    let server = support::start(app);
    let mut client = Client::connect(server.local_addr());
    for n in 1..=3 {
        assert_eq!(post(&mut client, &format!("/jobs/{n}")).status, 202);
    }
    let mut got: Vec<u64> = (0..3)
        .map(|_| orders.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    got.sort_unstable();
    assert_eq!(got, [1, 2, 3], "carried to the other process");

    drop(redis);
    let statuses: Vec<u16> = (4..100)
        .map(|n| post(&mut client, &format!("/jobs/{n}")).status)
        .collect();
    assert!(statuses.contains(&503), "{statuses:?}");
    assert!(
        statuses.iter().all(|&s| s == 202 || s == 503),
        "{statuses:?}"
    );
    assert_eq!(support::get(server.local_addr(), "/").text(), "root");
    front.shutdown(Duration::from_secs(1));
    back.shutdown(Duration::from_secs(1));
}
