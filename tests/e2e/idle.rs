//! Long-idle keep-alive connections: on the loop models they leave their tasks for the
//! loop's shelf after a second (`rt/shelf.rs`); under every model they must behave as
//! if they had never left — answered when they speak, closed at their idle timeout and
//! at shutdown, given up when the client closes.

use std::thread;
use std::time::Duration;

use proscenium::App;

use crate::support::{self, Client};

/// Longer than the shelf's wait (one second), so the connection is shelved.
const LONG_IDLE: Duration = Duration::from_millis(1_500);

fn app() -> App {
    App::new().get("/", proscenium::inline(|| "hi"))
}

#[test]
fn a_long_idle_connection_answers_pipelined_requests_and_keeps_its_request_count() {
    let server = support::start_with(app(), |c| c.limits.max_requests_per_conn = 4);
    let mut client = Client::connect(server.local_addr());
    assert_eq!(client.get("/").response().text(), "hi");
    thread::sleep(LONG_IDLE);
    client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
    for _ in 0..2 {
        let res = client.response();
        assert_eq!((res.status, res.text()), (200, "hi".to_owned()));
        assert_eq!(res.header("connection"), None);
    }
    thread::sleep(LONG_IDLE);
    assert_eq!(
        client.get("/").response().header("connection"),
        Some("close"),
        "the fourth request is the last: requests before the idle spells count"
    );
    assert!(client.is_closed_within(Duration::from_secs(2)));
}

#[test]
fn a_long_idle_connection_closes_at_its_idle_timeout() {
    let server = support::start_with(app(), |c| c.timeouts.idle = Duration::from_millis(2_500));
    let mut client = Client::connect(server.local_addr());
    assert_eq!(client.get("/").response().text(), "hi");
    assert!(
        client.is_open_after(Duration::from_millis(1_800)),
        "open before its idle timeout"
    );
    assert!(
        client.is_closed_within(Duration::from_secs(3)),
        "closed after it"
    );
    assert!(client.read_to_close().is_empty(), "quietly");
}

#[test]
fn a_client_closing_a_long_idle_connection_frees_its_place() {
    if !support::has_loops() {
        // The thread models bound connections by their threads instead of a cap.
        return;
    }
    let server = support::start_with(app(), |c| c.limits.max_connections = 1);
    let addr = server.local_addr();
    let mut first = Client::connect(addr);
    assert_eq!(first.get("/").response().text(), "hi");
    thread::sleep(LONG_IDLE);
    drop(first);
    let mut second = Client::connect(addr);
    second.get("/");
    assert!(
        second.has_answer_within(Duration::from_secs(2)),
        "the cap of one is free again once the idle client left"
    );
    assert_eq!(second.response().text(), "hi");
}

#[test]
fn shutdown_closes_long_idle_connections_at_once() {
    let server = support::start(app());
    let addr = server.local_addr();
    let mut idle = Client::connect(addr);
    assert_eq!(idle.get("/").response().text(), "hi");
    thread::sleep(LONG_IDLE);
    let stopper = thread::spawn(move || server.shutdown());
    assert!(
        idle.is_closed_within(Duration::from_secs(1)),
        "a long-idle connection is closed as shutdown begins"
    );
    stopper.join().unwrap();
}
