//! Hostile clients (issue 15): a connection that says nothing, or waits in the thread
//! pool's queue, holds a place only up to its deadline; silent, slow and idle clients
//! hold no thread of a thread model; a request or a reader slower than the minimum
//! rate is cut off.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use proscenium::App;

use crate::support::{self, Client};

/// The size of `GET /big`: more than loopback's socket buffers hold, so a client that
/// reads slowly keeps the server waiting to write.
const BIG: usize = 64 << 20;

fn app() -> App {
    App::new()
        .get("/", proscenium::inline(|| "hi"))
        // Blocks its thread under the thread models (the tests below run it only there).
        .get(
            "/sleep",
            proscenium::inline(|| {
                std::thread::sleep(Duration::from_secs(1));
                "slept"
            }),
        )
        .get("/big", proscenium::inline(|| vec![b'x'; BIG]))
}

#[test]
fn issue_15_a_silent_new_connection_is_closed_at_the_header_deadline() {
    if !support::has_waiting_room() {
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
    support::in_process("a cap on the threads of the whole server");
    if support::has_loops() {
        // Loops queue no connection for a thread: a loop (under `staged`, a stage
        // thread's loop) takes it at once.
        return;
    }
    let server = support::start_with(app(), |c| {
        c.threads = Some(1);
        c.timeouts.queue = Duration::from_millis(200);
    });
    let addr = server.local_addr();
    // The one thread sleeps in a handler for a second, far past the queue's deadline.
    let mut busy = Client::connect(addr);
    busy.get("/sleep");
    std::thread::sleep(Duration::from_millis(200));
    let mut queued = Client::connect(addr);
    queued.get("/");
    let res = queued.response();
    assert_eq!(res.status, 503, "{}", res.text());
    assert_eq!(busy.response().text(), "slept");
    let mut next = Client::connect(addr);
    assert_eq!(
        next.get("/").response().text(),
        "hi",
        "the thread is free again"
    );
}

#[test]
fn issue_15_silent_slow_and_idle_clients_hold_no_thread() {
    // One thread under the thread models (the loops ignore it).
    let server = support::start_with(app(), |c| c.threads = Some(1));
    let addr = server.local_addr();
    let silent: Vec<Client> = (0..10).map(|_| Client::connect(addr)).collect();
    let slow: Vec<Client> = (0..10)
        .map(|_| {
            let mut client = Client::connect(addr);
            client.send("GET / HTTP/1.1\r\nHost: test\r\nX-Slow: ");
            client
        })
        .collect();
    let mut idle = Client::connect(addr);
    assert_eq!(idle.get("/").response().text(), "hi");
    let mut halfway = Client::connect(addr);
    assert_eq!(halfway.get("/").response().text(), "hi");
    halfway.send("GET / HTTP/1.1\r\nHo");
    // Long enough for a thread to give up waiting on any of them.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    assert_eq!(support::get(addr, "/").text(), "hi");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered while {} clients wait, in {:?}",
        silent.len() + slow.len() + 2,
        started.elapsed()
    );
    // The idle connection and the one halfway through a head are served on.
    assert_eq!(idle.get("/").response().text(), "hi");
    halfway.send("st: test\r\n\r\n");
    assert_eq!(halfway.response().text(), "hi");
    drop((silent, slow));
}

/// Starts a server requiring `min_rate` bytes a second after half a second, with
/// timeouts far longer (20 s), and sends it `request` on a new connection.
fn paced(min_rate: u64, request: &str) -> (proscenium::ServerHandle, TcpStream) {
    let server = support::start_with(app(), |c| {
        c.limits.min_rate = min_rate;
        c.timeouts.grace = Duration::from_millis(500);
        c.timeouts.body = Duration::from_secs(20);
        c.timeouts.header = Duration::from_secs(20);
    });
    let mut stream = TcpStream::connect(server.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    (server, stream)
}

#[test]
fn issue_15_a_body_slower_than_the_minimum_rate_gets_408() {
    let request = "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n";
    let (_server, mut stream) = paced(1000, request);
    let mut writer = stream.try_clone().unwrap();
    let started = Instant::now();
    // 100 bytes a second, a tenth of the minimum rate; each gap far inside the body
    // timeout, so only the rate can end it.
    std::thread::spawn(move || {
        while started.elapsed() < Duration::from_secs(12) && writer.write_all(&[b'x'; 10]).is_ok() {
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cut off by the rate, not the body timeout: {:?}",
        started.elapsed()
    );
}

#[test]
fn issue_15_a_reader_slower_than_the_minimum_rate_is_dropped() {
    let (_server, mut stream) = paced(1_000_000, "GET /big HTTP/1.1\r\nHost: test\r\n\r\n");
    // 100 KB a second for 3 s, a tenth of the minimum rate; then as fast as it can.
    let mut got = 0;
    let mut chunk = [0u8; 10_000];
    for _ in 0..30 {
        match support::read_some(&mut stream, &mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    // Dropped, the connection ends after what the kernel's socket buffers held when it
    // was (a few MB); kept, it would deliver all of it (the pauses are far inside the
    // send timeout).
    assert!(
        got + rest.len() < BIG,
        "the whole answer arrived: the slow reader was not dropped"
    );
}
