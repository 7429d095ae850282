//! What the server writes down: the access log in Combined Log Format, and the
//! watchdog's warning about a stalled loop.

use std::time::Duration;

use proscenium::{App, inline};

use crate::support::{self, Client};

fn read_log(path: &std::path::Path, lines: usize) -> Vec<String> {
    for _ in 0..100 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return text.lines().map(str::to_owned).collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the access log has fewer than {lines} lines");
}

#[test]
fn the_access_log_writes_one_combined_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let app = App::new().get("/hello", inline(|| "Hello, World!"));
    let server = support::start_with(app, |c| c.log = Some(log.clone()));
    let mut client = Client::connect(server.local_addr());
    client.send("GET /hello?x=1 HTTP/1.1\r\nHost: t\r\nReferer: http://r/\r\nUser-Agent: test \"agent\"\r\n\r\n").response();
    client.get("/missing").response();
    let lines = read_log(&log, 2);
    let line = &lines[0];
    assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
    assert!(
        line.contains(
            " +0000] \"GET /hello?x=1 HTTP/1.1\" 200 13 \"http://r/\" \"test \\\"agent\\\"\""
        ),
        "{line}"
    );
    assert!(
        lines[1].contains("\"GET /missing HTTP/1.1\" 404 - \"-\" \"-\""),
        "{}",
        lines[1]
    );
}

#[test]
fn debug_adds_request_time_and_loop_to_the_access_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let app = App::new().get("/hello", inline(|| "Hello"));
    let server = support::start_with(app, |c| {
        c.log = Some(log.clone());
        c.debug = true;
    });
    support::get(server.local_addr(), "/hello");
    let line = &read_log(&log, 1)[0];
    let tail: Vec<&str> = line.rsplitn(3, ' ').collect();
    assert!(tail[1].ends_with("ms"), "{line}");
    let id = tail[0].strip_prefix("loop=").expect(line);
    assert!(id.parse::<usize>().is_ok(), "{line}");
}

#[test]
fn the_watchdog_names_the_route_that_stalls_a_loop() {
    if !support::has_loops() {
        // Documented: the thread models have no watchdog, their threads may block.
        return;
    }
    support::capture_logs();
    let app = App::new().get(
        "/stall-the-loop",
        inline(|| {
            // Deliberately blocks the loop: this is what the watchdog exists to report.
            std::thread::sleep(Duration::from_millis(400));
            "done"
        }),
    );
    let server = support::start_with(app, |c| c.timeouts.stall = Duration::from_millis(100));
    assert_eq!(
        support::get(server.local_addr(), "/stall-the-loop").status,
        200
    );
    assert!(support::logged_within(
        &["stalled", "GET /stall-the-loop"],
        Duration::from_secs(2)
    ));
}
