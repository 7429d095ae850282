//! The admin listener (`[admin] bind`, issue 36): `/metrics` scraped over a socket and
//! parsed as Prometheus' text format, its counters checked against the requests sent;
//! `/healthz`; `/readyz` through a drain; none of it on the public listener.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use proscenium::{App, Model, ServerHandle, StatusCode, inline};

use crate::support::h2::H2;
use crate::support::{self, Client};

/// A series' name and its labels, sorted by name.
pub(crate) type Series = (String, BTreeMap<String, String>);

/// Parses the text format: `name{label="value",...} value` lines, comments skipped.
pub(crate) fn parse(text: &str) -> Vec<(Series, f64)> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a value after the series");
            let value: f64 = value.parse().expect("a number");
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.strip_suffix('}').expect("labels close")),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, value) = pair.split_once('=').expect("label=value");
                    let value = value.trim_matches('"');
                    (key.to_owned(), value.to_owned())
                })
                .collect();
            ((name.to_owned(), labels), value)
        })
        .collect()
}

/// The sum of every series called `name` whose labels include `with`.
pub(crate) fn sum(scrape: &[(Series, f64)], name: &str, with: &[(&str, &str)]) -> f64 {
    scrape
        .iter()
        .filter(|((n, labels), _)| {
            n == name
                && with
                    .iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, value)| value)
        .sum()
}

pub(crate) fn scrape(admin: SocketAddr) -> Vec<(Series, f64)> {
    let res = support::get(admin, "/metrics");
    assert_eq!(res.status, 200);
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    parse(&res.text())
}

pub(crate) fn start(app: App) -> (ServerHandle, SocketAddr) {
    let server = support::start_with(app, |c| {
        c.admin.bind = Some("127.0.0.1:0".parse().unwrap());
    });
    let admin = server.admin_addr().expect("an admin listener");
    assert_ne!(admin, server.local_addr());
    (server, admin)
}

fn app() -> App {
    App::new().get("/hello", inline(|| "hello")).get(
        "/items/:id",
        inline(|| (StatusCode::NOT_FOUND, "no such item")),
    )
}

#[test]
fn issue36_metrics_count_each_request_by_route_method_and_status_and_the_scrape_not() {
    let (server, admin) = start(app());
    let addr = server.local_addr();
    for _ in 0..3 {
        assert_eq!(support::get(addr, "/hello").status, 200);
    }
    for id in ["1", "2"] {
        assert_eq!(support::get(addr, &format!("/items/{id}")).status, 404);
    }
    // The answers are counted as they are encoded, before they are sent; poll all
    // the same rather than lean on that.
    let metrics = scrape_once_counted(admin, 5.0);
    assert_eq!(
        requests(&metrics),
        (3.0, 2.0, 5.0),
        "scrapes are not counted: {metrics:?}"
    );
    let duration = "proscenium_http_request_duration_seconds";
    let count = |route| sum(&metrics, &format!("{duration}_count"), &[("route", route)]);
    assert_eq!((count("/hello"), count("/items/:id")), (3.0, 2.0));
    let inf = [("route", "/hello"), ("le", "+Inf")];
    assert_eq!(sum(&metrics, &format!("{duration}_bucket"), &inf), 3.0);
    assert!(sum(&metrics, &format!("{duration}_sum"), &[("route", "/hello")]) > 0.0);
    assert_eq!(
        sum(&metrics, "proscenium_connections_accepted_total", &[]),
        5.0
    );
    // A request thread of thread-per-conn ends with its connection, and its own
    // series with it; the request counts above keep its answers.
    if support::model().model != Model::ThreadPerConn {
        assert_eq!(sum(&metrics, "proscenium_thread_requests_total", &[]), 5.0);
    }
    assert_eq!(
        sum(
            &metrics,
            "proscenium_blocking_pool_queued",
            &[("pool", "main")]
        ),
        0.0
    );
}

/// Waits until the scrape counts `n` requests in all, and returns it.
fn scrape_once_counted(admin: SocketAddr, n: f64) -> Vec<(Series, f64)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = scrape(admin);
        if sum(&metrics, "proscenium_http_requests_total", &[]) >= n || Instant::now() > deadline {
            return metrics;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue36_http2_streams_are_counted_under_their_routes() {
    // Under the thread models each stream's call runs on a request thread and its
    // route comes back with its answer to the thread of upgraded connections.
    let (server, admin) = start(app());
    let mut h2 = H2::connect(server.local_addr());
    assert_eq!(h2.get("/hello").status.as_u16(), 200);
    assert_eq!(h2.get("/hello").status.as_u16(), 200);
    assert_eq!(h2.get("/items/3").status.as_u16(), 404);
    let metrics = scrape_once_counted(admin, 3.0);
    assert_eq!(requests(&metrics), (2.0, 1.0, 3.0), "{metrics:?}");
}

/// The requests counted: `GET /hello` answered 2xx, `GET /items/:id` answered 4xx,
/// and all of them.
fn requests(metrics: &[(Series, f64)]) -> (f64, f64, f64) {
    let requests = "proscenium_http_requests_total";
    let hello = [("route", "/hello"), ("method", "GET"), ("status", "2xx")];
    let items = [
        ("route", "/items/:id"),
        ("method", "GET"),
        ("status", "4xx"),
    ];
    (
        sum(metrics, requests, &hello),
        sum(metrics, requests, &items),
        sum(metrics, requests, &[]),
    )
}

#[test]
fn issue36_healthz_answers_ok_and_the_public_listener_has_no_admin_routes() {
    let (server, admin) = start(app());
    let health = support::get(admin, "/healthz");
    assert_eq!((health.status, health.text().as_str()), (200, "ok\n"));
    for path in ["/metrics", "/healthz", "/readyz"] {
        assert_eq!(
            support::get(server.local_addr(), path).status,
            404,
            "{path}"
        );
    }
}

#[test]
fn issue36_readyz_says_503_once_shutdown_begins_while_a_request_is_in_flight() {
    support::in_process("its readiness while its own process shuts down");
    let release = Arc::new(AtomicBool::new(false));
    let released = release.clone();
    let app = app().get("/slow", move || {
        let released = released.clone();
        async move {
            while !released.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            "slow and whole"
        }
    });
    let (server, admin) = start(app);
    assert_eq!(support::get(admin, "/readyz").status, 200);
    let mut slow = Client::connect(server.local_addr());
    slow.get("/slow");
    // The request is in flight once a thread counts it so.
    let deadline = Instant::now() + Duration::from_secs(30);
    while sum(&scrape(admin), "proscenium_thread_requests_in_flight", &[]) < 1.0 {
        assert!(Instant::now() < deadline, "the slow request arrives");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stopper = std::thread::spawn(move || server.shutdown());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = support::get(admin, "/readyz");
        if ready.status == 503 {
            assert_eq!(ready.text(), "draining\n");
            break;
        }
        assert!(Instant::now() < deadline, "draining within 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(support::get(admin, "/healthz").status, 200, "still alive");
    release.store(true, Ordering::Relaxed);
    assert_eq!(slow.response().text(), "slow and whole");
    stopper.join().expect("shutdown returns");
    assert!(
        std::net::TcpStream::connect(admin).is_err(),
        "the admin listener stops with the server"
    );
}
