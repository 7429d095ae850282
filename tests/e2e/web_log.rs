//! What the server writes down: the access log in Combined Log Format, and the
//! watchdog's warning about a stalled loop.

use std::sync::Arc;
use std::time::Duration;

use proscenium::{App, Model, blocking, inline};

use crate::support::{self, Client};

/// A path for an access log in a directory of its own (removed when dropped).
fn log_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    (dir, log)
}

#[test]
fn the_access_log_writes_one_combined_line_per_request() {
    support::in_process("its log");
    let (_dir, log) = log_file();
    let app = App::new().get("/hello", inline(|| "Hello, World!"));
    let server = support::start_with(app, |c| c.log = Some(log.clone()));
    let mut client = Client::connect(server.local_addr());
    client.send("GET /hello?x=1 HTTP/1.1\r\nHost: t\r\nReferer: http://r/\r\nUser-Agent: test \"agent\"\r\n\r\n").response();
    let missing = client.get("/missing").response();
    let lines = support::log_lines(&log, 2);
    let line = &lines[0];
    assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
    assert!(
        line.contains(
            " +0000] \"GET /hello?x=1 HTTP/1.1\" 200 13 \"http://r/\" \"test \\\"agent\\\"\""
        ),
        "{line}"
    );
    // The error page's size, not `-`: issue 14.
    let logged = format!(
        "\"GET /missing HTTP/1.1\" 404 {} \"-\" \"-\"",
        missing.body.len()
    );
    assert!(lines[1].contains(&logged), "{}", lines[1]);
}

/// Issue 14: requests the HTTP layer refuses never reached the access log.
#[test]
fn issue_14_refused_requests_are_logged_with_what_was_parsed() {
    support::in_process("its log");
    let (_dir, log) = log_file();
    let app = App::new().post("/upload", inline(|| "stored"));
    let server = support::start_with(app, |c| {
        c.log = Some(log.clone());
        c.limits.max_uri = 256;
        c.limits.max_headers = 10;
        c.limits.max_body = 64;
        c.timeouts.body = Duration::from_millis(200);
    });
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "u".repeat(300));
    let many = format!(
        "GET / HTTP/1.1\r\nHost: t\r\n{}\r\n",
        "X-A: b\r\n".repeat(11)
    );
    let table: Vec<(String, &str)> = vec![
        ("G@T / HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(), "\"-\" 400"),
        (long_uri, "\"-\" 414"),
        (many, "\"-\" 431"),
        (
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n".to_owned(),
            "\"-\" 501",
        ),
        ("GET / HTTP/2.0\r\nHost: t\r\n\r\n".to_owned(), "\"-\" 505"),
        (
            "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 65\r\n\r\n".to_owned(),
            "\"POST /upload HTTP/1.1\" 413",
        ),
        (
            "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc".to_owned(),
            "\"POST /upload HTTP/1.1\" 408",
        ),
    ];
    let mut sizes = Vec::new();
    for (raw, _) in &table {
        let res = Client::connect(server.local_addr()).send(raw).response();
        sizes.push(res.body.len());
    }
    let lines = support::log_lines(&log, table.len());
    for ((line, (_, logged)), size) in lines.iter().zip(&table).zip(sizes) {
        assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
        assert!(line.contains(&format!("{logged} {size} ")), "{line}");
    }
}

/// Issue 14: overload 503s — past the in-flight bound of a loop, past the thread
/// pool's queue — never reached the access log.
#[test]
fn issue_14_overload_answers_are_logged() {
    support::in_process("its log");
    let (_dir, log) = log_file();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let held = gate.clone();
    let app = App::new().get("/hold", move || {
        let (held, entered) = (held.clone(), entered_tx.clone());
        async move {
            let _ = entered.send(());
            let _ = held.acquire().await;
            "released"
        }
    });
    let thread_pool = support::model().model == Model::ThreadPool;
    if !support::has_loops() && !thread_pool {
        // Documented: thread-per-conn bounds neither requests in flight (one thread
        // serves one request at a time) nor a queue (accepting waits at the cap).
        return;
    }
    let server = support::start_with(app, |c| {
        c.log = Some(log.clone());
        c.loops = Some(1);
        c.limits.max_inflight = 1;
        c.threads = Some(1);
        c.thread_queue = 1;
    });
    let addr = server.local_addr();
    let hold = "GET /hold HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let mut holding = Client::connect(addr);
    // Closed after its answer, so that the one thread goes on to the queued connection.
    holding.send(hold);
    entered.recv().unwrap();
    // Under thread-pool the one thread is held and the next connection waits in the
    // queue; the one after it is refused.
    let mut queued = thread_pool.then(|| Client::connect(addr));
    if let Some(queued) = &mut queued {
        queued.get("/hold");
    }
    let refused = Client::connect(addr).send(hold).response();
    assert_eq!(refused.status, 503);
    gate.add_permits(2);
    assert_eq!(holding.response().text(), "released");
    let expected_lines = if let Some(mut queued) = queued {
        assert_eq!(queued.response().text(), "released");
        3
    } else {
        2
    };
    let lines = support::log_lines(&log, expected_lines);
    let request_line = if thread_pool {
        "\"-\""
    } else {
        "\"GET /hold HTTP/1.1\""
    };
    let logged = format!("{request_line} 503 {} ", refused.body.len());
    assert!(lines.iter().any(|l| l.contains(&logged)), "{lines:?}");
}

/// Issue 14: a 503 for a full blocking pool's queue is in the access log too.
#[test]
fn issue_14_a_full_blocking_queue_answer_is_logged() {
    support::in_process("its log");
    if support::model().model != Model::Loops {
        // Documented: the other models run blocking work inline (no pool, no queue).
        return;
    }
    let (_dir, log) = log_file();
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(released));
    let app = App::new().get(
        "/block",
        blocking(move || {
            let _ = entered_tx.send(());
            // Deliberately blocks a pool thread until the test releases it.
            let _ = released.lock().unwrap().recv();
            "released"
        }),
    );
    let server = support::start_with(app, |c| {
        c.log = Some(log.clone());
        c.tools = true;
        c.loops = Some(1);
        c.blocking_threads = Some(1);
        c.blocking_queue = 1;
    });
    let addr = server.local_addr();
    let block = "GET /block HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let mut running = Client::connect(addr);
    running.send(block);
    entered.recv().unwrap();
    let mut queued = Client::connect(addr);
    queued.send(block);
    // Queued once the loop counts it in flight beside the running one (and the status
    // request itself).
    while !support::get(addr, "/_status")
        .text()
        .contains("\"in_flight\":3")
    {
        std::thread::yield_now();
    }
    let refused = Client::connect(addr).send(block).response();
    assert_eq!(refused.status, 503);
    release.send(()).unwrap();
    release.send(()).unwrap();
    assert_eq!(running.response().text(), "released");
    assert_eq!(queued.response().text(), "released");
    let lines = support::log_lines(&log, 3);
    let logged = format!("\"GET /block HTTP/1.1\" 503 {} ", refused.body.len());
    assert!(lines.iter().any(|l| l.contains(&logged)), "{lines:?}");
}

#[test]
fn debug_adds_request_time_and_loop_to_the_access_log() {
    support::in_process("its log");
    let (_dir, log) = log_file();
    let app = App::new().get("/hello", inline(|| "Hello"));
    let server = support::start_with(app, |c| {
        c.log = Some(log.clone());
        c.debug = true;
    });
    support::get(server.local_addr(), "/hello");
    let line = &support::log_lines(&log, 1)[0];
    let tail: Vec<&str> = line.rsplitn(3, ' ').collect();
    assert!(tail[1].ends_with("ms"), "{line}");
    let id = tail[0].strip_prefix("loop=").expect(line);
    assert!(id.parse::<usize>().is_ok(), "{line}");
}

#[test]
fn the_watchdog_names_the_route_that_stalls_a_loop() {
    support::in_process("its log");
    if !support::has_watchdog() {
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

/// Dropped when the handler's future is: whether it was, and when.
struct Dropped(std::sync::mpsc::Sender<()>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A client that hangs up while its request is with an async handler takes the
/// request with it: the handler's future is dropped at once (a CGI script it runs is
/// killed: `cgi::a_client_that_hangs_up_has_its_script_killed`), and the access log
/// says 499, as nginx's does.
#[test]
fn a_client_that_hangs_up_cancels_its_request_and_is_logged_499() {
    support::in_process("its log");
    let (_dir, log) = log_file();
    let (dropped, was_dropped) = std::sync::mpsc::channel();
    let dropped = Arc::new(std::sync::Mutex::new(Some(dropped)));
    let app = App::new().get("/slow", move || {
        let guard = dropped.lock().unwrap().take().map(Dropped);
        async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(guard);
            "too late"
        }
    });
    let server = support::start_with(app, |c| c.log = Some(log.clone()));
    let mut client = Client::connect(server.local_addr());
    client.get("/slow");
    std::thread::sleep(Duration::from_millis(200));
    drop(client);
    was_dropped
        .recv_timeout(Duration::from_secs(2))
        .expect("the handler was dropped when its client hung up");
    let lines = support::log_lines(&log, 1);
    assert!(
        lines[0].contains("\"GET /slow HTTP/1.1\" 499 "),
        "{}",
        lines[0]
    );
}
