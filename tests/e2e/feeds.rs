//! Live feeds over real sockets: a hub's posts to an event stream (resumed after
//! `Last-Event-ID`) and to a WebSocket, and an event stream ended when shutdown
//! begins — under every model; the event stream over HTTP/2 too.

use std::time::{Duration, Instant};

use proscenium::hub::{FeedsSpec, Hub};
use proscenium::sse::LastEventId;
use proscenium::ws::WebSocketUpgrade;
use proscenium::{App, Bytes, StatusCode, inline};

use crate::support::h2::{H2, request};
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
        hub.publish("/picture/1/likes", data.to_owned()).unwrap();
        if client.has_answer_within(Duration::from_millis(100)) {
            return next_event(client).0;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "never heard");
    }
}

#[test]
fn an_event_stream_carries_posts_and_resumes_after_the_last_id_seen() {
    support::in_process("posts published to the hub of its own process");
    let hub = Hub::new();
    let server = support::start(app(&hub));
    let mut first = events(server.local_addr(), None);
    publish_once_heard(&hub, &mut first, "hello");
    hub.publish("/user/1", "not a like").unwrap();
    hub.publish("/picture/1/likes", "one\ntwo").unwrap();
    hub.publish("/picture/1/likes", "three").unwrap();
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
    support::in_process("posts published to the hub of its own process");
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
    support::in_process("posts published to the hub of its own process");
    let hub = Hub::new();
    let server = support::start(app(&hub));
    let mut client = websocket::open(server.local_addr(), "/feed");
    let began = Instant::now();
    loop {
        hub.publish("/picture/1/likes", "liked").unwrap();
        if client.has_answer_within(Duration::from_millis(100)) {
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "never fed");
    }
    assert_eq!(
        websocket::read_frame(&mut client),
        (true, websocket::TEXT, b"liked".to_vec())
    );
    hub.publish("/user/1", "not for this feed").unwrap();
    hub.publish("/picture/2/likes", "also liked").unwrap();
    let mut frames = Vec::new();
    while frames.last() != Some(&b"also liked".to_vec()) {
        frames.push(websocket::read_frame(&mut client).2);
    }
    assert!(
        frames.iter().all(|f| f == b"liked" || f == b"also liked"),
        "{frames:?}"
    );
}

/// What [`issue33_published_bodies_release_the_body_budget_and_the_history_is_bounded_in_bytes`]
/// publishes: half a MiB, under `max_post`.
const POST: usize = 512 << 10;

/// A hub keeping at most 2 MiB of posts, each at most 1 MiB, published by
/// `POST /publish` (hello's, 413 past `max_post`) beside `POST /sink`, any other route
/// taking a body.
fn publishing_app(hub: &Hub) -> App {
    let publish = hub.clone();
    App::new()
        .post(
            "/publish",
            inline(move |body: Bytes| match publish.publish("feed", body) {
                Ok(_) => StatusCode::NO_CONTENT,
                Err(error) if error.is_too_large() => StatusCode::PAYLOAD_TOO_LARGE,
                Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
            }),
        )
        .post("/sink", inline(|body: Bytes| body.len().to_string()))
}

/// Posts `len` bytes to `path` on `client`; returns the status.
fn post(client: &mut Client, path: &str, len: usize) -> u16 {
    client.send(format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n"
    ));
    client.send(vec![b'p'; len]);
    client.response().status
}

/// Issue 33: the hub's history held request bodies, and so their room in the
/// server's budget for bodies: after 300 posts of 1 MiB, every body over 64 KiB on any
/// route got 503 until 1,000 newer posts pushed them out. Now a post keeps a copy of
/// its payload, the history keeps at most `history_bytes`, and a payload past
/// `max_post` is refused. With a 1 MiB budget for bodies (less than the history
/// keeps), 16 posts of 512 KiB are published, then a body on another route is taken.
#[test]
fn issue33_published_bodies_release_the_body_budget_and_the_history_is_bounded_in_bytes() {
    support::in_process("posts published to the hub of its own process");
    let hub = Hub::with(FeedsSpec {
        history_bytes: 2 << 20,
        max_post: 1 << 20,
        ..FeedsSpec::default()
    });
    let server = support::start_with(publishing_app(&hub), |config| {
        config.limits.max_buffered_bodies = 1 << 20;
    });
    let mut client = Client::connect(server.local_addr());
    for n in 0..16 {
        assert_eq!(post(&mut client, "/publish", POST), 204, "post {n}");
    }
    assert_eq!(post(&mut client, "/sink", POST), 200);
    // What a stream resuming after an id the hub does not know gets: all it kept.
    let mut kept = hub.subscribe_after("feed", Some("unknown"));
    let held: usize = std::iter::from_fn(|| kept.try_recv())
        .map(|post| post.payload().len())
        .sum();
    assert!(
        (POST..=2 << 20).contains(&held),
        "the history holds {held} bytes of payloads"
    );
    assert_eq!(post(&mut client, "/publish", (1 << 20) + 1), 413);
}

#[test]
fn issue35_an_event_stream_carries_posts_over_http2() {
    support::in_process("posts published to the hub of its own process");
    let hub = Hub::new();
    let server = support::start(app(&hub));
    let h2 = H2::connect(server.local_addr());
    let send = h2.sender();
    h2.block_on(async move {
        let mut send = send.ready().await.expect("a stream");
        let (answer, _) = send
            .send_request(request("GET", "/events"), true)
            .expect("a request");
        let res = tokio::time::timeout(Duration::from_secs(60), answer)
            .await
            .expect("a head within a minute")
            .expect("a head");
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        assert!(
            !res.headers().contains_key("transfer-encoding"),
            "HTTP/2 frames the body itself"
        );
        let mut body = res.into_body();
        let mut read = String::new();
        let mut next = async || {
            let chunk = body.data().await.expect("the stream open")?;
            let _ = body.flow_control().release_capacity(chunk.len());
            Ok::<_, h2::Error>(String::from_utf8(chunk.to_vec()).unwrap())
        };
        // Published until heard: the subscription is made once the request is served.
        let began = Instant::now();
        loop {
            hub.publish("/picture/1/likes", "hello").unwrap();
            if let Ok(chunk) = tokio::time::timeout(Duration::from_millis(100), next()).await {
                read.push_str(&chunk.expect("a chunk"));
                break;
            }
            assert!(began.elapsed() < Duration::from_secs(60), "never heard");
        }
        hub.publish("/picture/1/likes", "one").unwrap();
        while !read.contains("data: one\n\n") {
            let chunk = tokio::time::timeout(Duration::from_secs(60), next())
                .await
                .expect("the event within a minute");
            read.push_str(&chunk.expect("a chunk"));
        }
        assert!(read.starts_with("id: "), "{read:?}");
    });
}
