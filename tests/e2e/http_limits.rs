//! Every limit and every request-smuggling defence, each with its status, and the
//! connection closed after it so nothing behind a bad request is ever read.

use std::time::Duration;

use proscenium::{App, Bytes, Config, inline};

use crate::support::{self, Client};

fn small_limits(c: &mut Config) {
    c.limits.max_head = 1024;
    c.limits.max_headers = 10;
    c.limits.max_uri = 256;
    c.limits.max_body = 64;
}

fn app() -> App {
    App::new()
        .get("/", inline(|| "root"))
        .post("/", inline(|body: Bytes| format!("{} bytes", body.len())))
}

/// Sends `raw` followed by a valid request; asserts the status of the first answer
/// and that the second request is never answered (the server closed).
fn assert_refused(addr: std::net::SocketAddr, raw: &str, status: u16) {
    let mut client = Client::connect(addr);
    client.send(raw.as_bytes());
    let res = client.response();
    assert_eq!(res.status, status, "{raw:?}");
    assert_eq!(res.header("connection"), Some("close"), "{raw:?}");
    let rest = client.read_to_close();
    assert!(
        !String::from_utf8_lossy(&rest).contains("HTTP/1.1"),
        "answered after {raw:?}: {rest:?}"
    );
}

#[test]
fn each_limit_has_its_status() {
    let server = support::start_with(app(), small_limits);
    let addr = server.local_addr();
    let next = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    let big_header = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n{next}",
        "a".repeat(2000)
    );
    let many = format!(
        "GET / HTTP/1.1\r\nHost: t\r\n{}\r\n{next}",
        "X-A: b\r\n".repeat(11)
    );
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n{next}", "u".repeat(300));
    let big_body = format!(
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 65\r\n\r\n{}{next}",
        "b".repeat(65)
    );
    let big_chunks = format!(
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{}\r\n1\r\nx\r\n0\r\n\r\n{next}",
        "c".repeat(64)
    );
    let table: Vec<(String, u16)> = vec![
        (big_header, 431),
        (many, 431),
        (long_uri, 414),
        (big_body, 413),
        (big_chunks, 413),
        (
            format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n{next}"),
            501,
        ),
        (format!("GET / HTTP/2.0\r\nHost: t\r\n\r\n{next}"), 505),
        (format!("GET / HTTP/1.2\r\nHost: t\r\n\r\n{next}"), 505),
        (format!("GET / HTTP/1.1\r\n\r\n{next}"), 400),
        (
            format!("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n{next}"),
            400,
        ),
        (format!("GET  / HTTP/1.1\r\nHost: t\r\n\r\n{next}"), 400),
        (format!("G@T / HTTP/1.1\r\nHost: t\r\n\r\n{next}"), 400),
    ];
    for (raw, status) in table {
        assert_refused(addr, &raw, status);
    }
}

#[test]
fn smuggling_attempts_are_refused_and_nothing_behind_them_is_read() {
    let server = support::start_with(app(), small_limits);
    let addr = server.local_addr();
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
    let table = [
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}"
        ),
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n{smuggled}"
        ),
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde{smuggled}"
        ),
        format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4x\r\n\r\nabcd{smuggled}"),
        format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -4\r\n\r\nabcd{smuggled}"),
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n{smuggled}"
        ),
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n{smuggled}"
        ),
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n{smuggled}"
        ),
        format!("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n folded\r\n\r\n{smuggled}"),
        format!("GET / HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n{smuggled}"),
        format!("GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n{smuggled}"),
        format!("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}"),
        // Issue 15: a list of equal lengths, a chunk extension without `;`, and a
        // request after a last chunk without its final CRLF (it was read as trailers).
        format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4, 4\r\n\r\nabcd{smuggled}"),
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\nabc\r\n0\r\n\r\n{smuggled}"
        ),
        format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n{smuggled}"),
        format!("GET / HTTP/1.1\r\nHost: t/../../etc\r\n\r\n{smuggled}"),
        format!("GET / HTTP/1.1x\r\nHost: t\r\n\r\n{smuggled}"),
    ];
    for raw in table {
        assert_refused(addr, &raw, 400);
    }
}

#[test]
fn a_head_not_finished_in_time_gets_408_then_close() {
    let server = support::start_with(app(), |c| c.timeouts.header = Duration::from_millis(300));
    let mut client = Client::connect(server.local_addr());
    client.send("GET / HTTP/1.1\r\nHost: t\r\n");
    let res = client.response();
    assert_eq!(res.status, 408);
    assert!(client.is_closed_within(Duration::from_secs(3)));
}

#[test]
fn a_trickling_head_is_bounded_by_the_deadline_not_by_each_read() {
    let server = support::start_with(app(), |c| c.timeouts.header = Duration::from_millis(400));
    let mut client = Client::connect(server.local_addr());
    for _ in 0..3 {
        client.send("X");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(client.response().status, 408);
}

#[test]
fn a_body_that_stops_arriving_gets_408() {
    let server = support::start_with(app(), |c| c.timeouts.body = Duration::from_millis(300));
    let mut client = Client::connect(server.local_addr());
    client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    assert_eq!(client.response().status, 408);
}

#[test]
fn idle_and_silent_connections_are_closed_without_an_answer() {
    // A silent new connection is closed by the idle timeout on a loop, by the header
    // timeout (from accept, as nginx's client_header_timeout) under the thread
    // models' waiting room: both far below the client's 10 s read timeout, which the
    // default header timeout equalled (a race the client won under load).
    let server = support::start_with(app(), |c| {
        c.timeouts.idle = Duration::from_millis(300);
        c.timeouts.header = Duration::from_millis(600);
    });
    let mut silent = Client::connect(server.local_addr());
    assert!(
        silent.read_to_close().is_empty(),
        "nothing is sent to a silent client"
    );
    let mut idle = Client::connect(server.local_addr());
    assert_eq!(idle.get("/").response().text(), "root");
    assert!(
        idle.read_to_close().is_empty(),
        "an idle keep-alive connection closes quietly"
    );
}

#[test]
fn max_requests_per_connection_closes_after_the_last() {
    let server = support::start_with(app(), |c| c.limits.max_requests_per_conn = 2);
    let mut client = Client::connect(server.local_addr());
    assert_eq!(client.get("/").response().header("connection"), None);
    assert_eq!(
        client.get("/").response().header("connection"),
        Some("close")
    );
    assert!(client.is_closed_within(Duration::from_secs(2)));
}

#[test]
fn a_client_that_stops_reading_is_dropped_and_others_are_served() {
    let app = app().get(
        "/huge",
        inline(|| proscenium::Body::from(vec![b'x'; 32 * 1024 * 1024])),
    );
    let server = support::start_with(app, |c| c.timeouts.body = Duration::from_millis(300));
    let mut stuck = Client::connect(server.local_addr());
    stuck.get("/huge");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        support::get(server.local_addr(), "/").text(),
        "root",
        "others are served meanwhile"
    );
    let received = stuck.read_to_close();
    assert!(
        received.len() < 32 * 1024 * 1024,
        "the server gave up before sending it all"
    );
}
