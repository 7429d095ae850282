//! `/metrics` for stage graphs (issue 36): an app's graph behind a route, and the
//! `staged` model's own stages, their counters checked against the traffic sent and
//! their latency histograms against `[stages] sample`.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use http::StatusCode;
use proscenium::config::Model;
use proscenium::stage::{ClusterSpec, Inlet};
use proscenium::{App, Path, inline};

use crate::admin::{scrape, start, sum};
use crate::stages::start_in;
use crate::support::{self, Client};

/// Starts `name-square` feeding `name-total` (decoupled, one cluster `name` of two
/// threads), timing one event in `sample`; returns its inlet, and where each total
/// is told.
fn started_squares(
    name: &str,
    sample: u32,
) -> (
    proscenium::stage::RunningGraph,
    Inlet<u64>,
    mpsc::Receiver<u64>,
) {
    let (mut graph, square, totals) = crate::stages::squares(
        [&format!("{name}-square"), &format!("{name}-total")],
        Duration::ZERO,
    );
    graph.sample(sample);
    let spec = ClusterSpec {
        threads: Some(2),
        ..ClusterSpec::default()
    };
    let (running, inlet) = start_in(graph, name, spec, &square);
    (running, inlet, totals)
}

/// Posts `1..=n` to `path` on one connection, and waits for the graph's `n` totals.
fn feed(addr: SocketAddr, path: &str, n: u64, totals: &mpsc::Receiver<u64>) {
    let mut client = Client::connect(addr);
    for i in 1..=n {
        let request = format!("POST {path}/{i} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(client.send(request).response().status, 202);
    }
    for _ in 0..n {
        totals.recv_timeout(Duration::from_secs(30)).unwrap();
    }
}

/// Returns the scrape once `until` holds of it (or after `within`, for the
/// assertions to report).
fn scrape_until(
    admin: SocketAddr,
    within: Duration,
    until: impl Fn(&[(crate::admin::Series, f64)]) -> bool,
) -> Vec<(crate::admin::Series, f64)> {
    let deadline = Instant::now() + within;
    loop {
        let metrics = scrape(admin);
        if until(&metrics) || Instant::now() > deadline {
            return metrics;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue36_metrics_show_each_stages_counts_queue_latencies_and_controllers() {
    support::in_process("stages of its own process");
    let (sampled, sampled_in, sampled_totals) = started_squares("m-sampled", 64);
    let (every, every_in, every_totals) = started_squares("m-every", 1);
    let route = |inlet: Inlet<u64>| {
        inline(move |Path(n): Path<u64>| inlet.send(n).map(|()| StatusCode::ACCEPTED))
    };
    let app = App::new()
        .post("/sampled/:n", route(sampled_in))
        .post("/every/:n", route(every_in));
    let (server, admin) = start(app);
    feed(server.local_addr(), "/sampled", 100, &sampled_totals);
    feed(server.local_addr(), "/every", 20, &every_totals);

    let stage = |name: &'static str| [("stage", name)];
    // Every counter asserted below is waited for: a stage's arrivals are counted just
    // after its event is queued, so a scrape can see the next stage done first.
    let metrics = scrape_until(admin, Duration::from_secs(30), |m| {
        [("m-every", 20.0), ("m-sampled", 100.0)]
            .iter()
            .all(|(graph, n)| {
                ["square", "total"].iter().all(|stage_of| {
                    let name = format!("{graph}-{stage_of}");
                    let name = [("stage", name.as_str())];
                    sum(m, "proscenium_stage_handled_total", &name) == *n
                        && sum(m, "proscenium_stage_arrived_total", &name) == *n
                })
            })
    });
    let at = |family: &str, name| sum(&metrics, family, &stage(name));
    for (name, n) in [("m-sampled-square", 100.0), ("m-every-square", 20.0)] {
        assert_eq!(at("proscenium_stage_arrived_total", name), n, "{name}");
        assert_eq!(at("proscenium_stage_handled_total", name), n, "{name}");
        assert_eq!(at("proscenium_stage_rejected_total", name), 0.0, "{name}");
        assert_eq!(at("proscenium_stage_queued", name), 0.0, "{name}");
        assert_eq!(at("proscenium_stage_batch", name), 1.0, "{name}");
        assert_eq!(at("proscenium_stage_admission_share", name), 1.0, "{name}");
    }
    // Timing every event: a wait and a service for each.
    let wait = "proscenium_stage_wait_seconds";
    let service = "proscenium_stage_service_seconds";
    assert_eq!(at(&format!("{wait}_count"), "m-every-square"), 20.0);
    assert_eq!(at(&format!("{service}_count"), "m-every-total"), 20.0);
    let inf = [("stage", "m-every-square"), ("le", "+Inf")];
    assert_eq!(sum(&metrics, &format!("{wait}_bucket"), &inf), 20.0);
    assert!(at(&format!("{service}_sum"), "m-every-square") > 0.0);
    // One in 64, from one sender: the 1st and the 65th of its 100 events.
    assert_eq!(at(&format!("{wait}_count"), "m-sampled-square"), 2.0);
    assert_eq!(at(&format!("{service}_count"), "m-sampled-square"), 2.0);
    let threads = [("cluster", "m-every")];
    assert_eq!(
        sum(&metrics, "proscenium_stage_cluster_threads", &threads),
        2.0
    );

    // A graph stopped leaves the scrape.
    sampled.shutdown(Duration::from_secs(5));
    every.shutdown(Duration::from_secs(5));
    let metrics = scrape(admin);
    let named = |name: &'static str| sum(&metrics, "proscenium_stage_arrived_total", &stage(name));
    assert_eq!(named("m-every-square") + named("m-sampled-total"), 0.0);
}

#[test]
fn issue36_the_staged_models_own_stages_are_in_its_metrics() {
    let app = App::new().get("/hello", inline(|| "hello"));
    let server = support::start_with(app, |c| {
        c.model = Model::Staged;
        c.admin.bind = Some("127.0.0.1:0".parse().unwrap());
        c.stages.sample = 1;
    });
    let admin = server.admin_addr().unwrap();
    // The series are by stage name, summed over the process's graphs: under the
    // suite's `staged` pass every test's server adds its own `route-handler`, and one
    // that stops between two scrapes takes its counts away. So this server's five
    // requests are looked for as a rise between two scrapes with no such fall between
    // them, tried again until one is.
    let read = |metrics: &[_], family: &str| sum(metrics, family, &[("stage", "route-handler")]);
    let families = [
        "proscenium_stage_arrived_total",
        "proscenium_stage_handled_total",
        "proscenium_stage_wait_seconds_count",
        "proscenium_stage_service_seconds_count",
    ];
    let mut client = Client::connect(server.local_addr());
    let deadline = Instant::now() + Duration::from_secs(60);
    let metrics = loop {
        let before = scrape(admin);
        for _ in 0..5 {
            assert_eq!(client.get("/hello").response().status, 200);
        }
        let rise = |m: &[_]| families.map(|f| read(m, f) - read(&before, f));
        let rose = |m: &[_]| rise(m).iter().all(|&n| n >= 1.0);
        let after = scrape_until(admin, Duration::from_secs(5), rose);
        if rose(&after) {
            break after;
        }
        let rise = rise(&after);
        assert!(Instant::now() < deadline, "{families:?} rose by {rise:?}");
    };
    assert!(read(&metrics, "proscenium_stage_batch") >= 1.0);
    let handle = [("stage", "handle-client")];
    assert!(sum(&metrics, "proscenium_stage_arrived_total", &handle) >= 1.0);
    let threads = sum(
        &metrics,
        "proscenium_stage_cluster_threads",
        &[("cluster", "http")],
    );
    assert!(threads >= 1.0, "{metrics:?}");
}
