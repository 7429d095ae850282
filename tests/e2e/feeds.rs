//! Live feeds over real sockets: a hub's posts to an event stream (resumed after
//! `Last-Event-ID`) and to a WebSocket, and an event stream ended when shutdown
//! begins — under every model.

use std::time::{Duration, Instant};

use proscenium::App;
use proscenium::hub::Hub;
use proscenium::sse::LastEventId;
use proscenium::ws::WebSocketUpgrade;

use crate::support::{self, Client};
use crate::websocket;

fn app(hub: &Hub) -> App {
    let (events, feed) = (hub.clone(), hub.clone());
    App::new()
        .get("/events", move |last: LastEventId| {
            let events = events.clone();
            async move { events.sse("/picture/*/likes", &last) }
        })
        .get("/feed", move |ws: WebSocketUpgrade| {
            let feed = feed.clone();
            async move { feed.websocket("/picture/*/likes", ws) }
        })
}

/// Opens the event stream, with `Last-Event-ID: last` if given; returns the client
/// past the head, which it checks.
fn events(addr: std::net::SocketAddr, last: Option<&str>) -> Client {
    let mut client = Client::connect(addr);
    let resume = last.map_or_else(String::new, |id| format!("Last-Event-ID: {id}\r\n"));
    client.send(format!("GET /events HTTP/1.1\r\nHost: t\r\n{resume}\r\n"));
    let head = String::from_utf8(client.read_past(b"\r\n\r\n"))
        .unwrap()
        .to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains("content-type: text/event-stream\r\n"),
        "{head}"
    );
    assert!(head.contains("cache-control: no-cache\r\n"), "{head}");
    assert!(head.contains("transfer-encoding: chunked\r\n"), "{head}");
    client
}

/// Reads the next event: its id and data (chunk framing skipped).
fn next_event(client: &mut Client) -> (String, String) {
    let raw = String::from_utf8(client.read_past(b"\n\n")).unwrap();
    let field = |name: &str| {
        raw.lines()
            .find_map(|line| line.strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} in {raw:?}"))
            .to_owned()
    };
    assert!(!raw.contains("event:"), "unnamed, for onmessage: {raw:?}");
    (field("id: "), field("data: "))
}

/// Publishes until a subscriber is there to see it: the stream's subscription is
/// made once its request is served, which the client cannot see.
fn publish_once_heard(hub: &Hub, client: &mut Client, data: &str) -> String {
    let began = Instant::now();
    loop {
        hub.publish("/picture/1/likes", data.to_owned());
        if client.has_answer_within(Duration::from_millis(100)) {
            return next_event(client).0;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "never heard");
    }
}

#[test]
fn an_event_stream_carries_posts_and_resumes_after_the_last_id_seen() {
    let hub = Hub::new();
    let server = support::start(app(&hub));
    let mut first = events(server.local_addr(), None);
    publish_once_heard(&hub, &mut first, "hello");
    hub.publish("/user/1", "not a like");
    hub.publish("/picture/1/likes", "one\ntwo");
    hub.publish("/picture/1/likes", "three");
    // Past any other hello published while the stream was being opened.
    let (seen, data) = std::iter::repeat_with(|| next_event(&mut first))
        .find(|(_, data)| data != "hello")
        .unwrap();
    assert_eq!(data, "one");
    assert_eq!(next_event(&mut first).1, "three");
    drop(first);
    // Back after the first event: what followed it, from the hub's history.
    let mut back = events(server.local_addr(), Some(&seen));
    assert_eq!(next_event(&mut back).1, "three");
}

#[test]
fn when_shutdown_begins_an_event_stream_ends_and_the_server_stops_early() {
    let hub = Hub::new();
    let server = support::start_with(app(&hub), |config| {
        config.timeouts.shutdown = Duration::from_secs(30);
    });
    let mut client = events(server.local_addr(), None);
    publish_once_heard(&hub, &mut client, "hi");
    let began = Instant::now();
    let stopping = std::thread::spawn(move || server.shutdown());
    // The last chunk, then the close.
    client.read_past(b"0\r\n\r\n");
    assert!(client.is_closed_within(Duration::from_secs(5)));
    stopping.join().unwrap();
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "shutdown took {took:?}, its deadline 30 s"
    );
}

#[test]
fn a_websocket_fed_by_the_hub_gets_the_posts_to_its_pattern() {
    let hub = Hub::new();
    let server = support::start(app(&hub));
    let mut client = websocket::open(server.local_addr(), "/feed");
    let began = Instant::now();
    loop {
        hub.publish("/picture/1/likes", "liked");
        if client.has_answer_within(Duration::from_millis(100)) {
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "never fed");
    }
    assert_eq!(
        websocket::read_frame(&mut client),
        (true, websocket::TEXT, b"liked".to_vec())
    );
    hub.publish("/user/1", "not for this feed");
    hub.publish("/picture/2/likes", "also liked");
    let mut frames = Vec::new();
    while frames.last() != Some(&b"also liked".to_vec()) {
        frames.push(websocket::read_frame(&mut client).2);
    }
    assert!(
        frames.iter().all(|f| f == b"liked" || f == b"also liked"),
        "{frames:?}"
    );
}
