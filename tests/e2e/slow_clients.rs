//! Hostile clients (issue 15): a connection that says nothing, or waits in the thread
//! pool's queue, holds a place only up to its deadline.

use std::time::Duration;

use proscenium::App;

use crate::support::{self, Client};

fn app() -> App {
    App::new().get("/", proscenium::inline(|| "hi"))
}

#[test]
fn issue_15_a_silent_new_connection_is_closed_at_the_header_deadline() {
    if support::has_loops() {
        // A loop keeps a silent connection on its shelf (about 200 bytes) until the
        // idle timeout: it holds no thread.
        return;
    }
    let server = support::start_with(app(), |c| {
        c.timeouts.header = Duration::from_millis(500);
        c.timeouts.idle = Duration::from_secs(600);
    });
    let mut silent = Client::connect(server.local_addr());
    // Reading to the close fails past the client's read timeout (10 s): far short of
    // the idle timeout, well past the header deadline.
    assert!(silent.read_to_close().is_empty(), "closed quietly");
}

#[test]
fn issue_15_a_connection_queued_past_its_deadline_gets_503() {
    if support::has_loops() {
        // Loops queue no connection: each is taken by a loop at once.
        return;
    }
    let server = support::start_with(app(), |c| {
        c.threads = Some(1);
        c.timeouts.header = Duration::from_secs(2);
        c.timeouts.queue = Duration::from_millis(200);
    });
    let addr = server.local_addr();
    // The one thread serves a silent connection until its header deadline, far past
    // the queue's.
    let mut silent = Client::connect(addr);
    let mut queued = Client::connect(addr);
    queued.get("/");
    let res = queued.response();
    assert_eq!(res.status, 503, "{}", res.text());
    assert!(
        silent.read_to_close().is_empty(),
        "closed at its header deadline"
    );
    let mut next = Client::connect(addr);
    assert_eq!(
        next.get("/").response().text(),
        "hi",
        "the thread is free again"
    );
}
