//! Issue 35: HTTP/2's known attacks, each over a real socket against a server in a
//! child process (as in `http_memory`): rapid reset (CVE-2023-44487), a CONTINUATION
//! flood (2024), an HPACK bomb, PING and SETTINGS floods from a client that reads
//! nothing, a window that never opens, zero-length DATA floods, a body that never
//! ends. Each costs bounded memory, and another client is served meanwhile.

use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use proscenium::{App, inline};

use crate::http_memory::{ChildServer, MIB};
use crate::support::frames::{self, frame};
use crate::support::h2::{H2, request};
use crate::support::{self, Client};

/// Whether this run of the suite sends the attacks: under the default model only. They
/// test HTTP/2's frame layer, the same under every model, each against a child
/// server of its own; once is enough, and CI's time is bounded.
fn defended_here() -> bool {
    std::env::var("PROSCENIUM_TEST_MODEL").is_err()
}

/// What a flood came to.
struct Flood {
    sent: usize,
    /// The server closed the connection (after a GOAWAY, or a reset).
    closed: bool,
}

/// Opens a connection, sends `opening`, then `unit(0)`, `unit(1)`, ... until `max`
/// bytes are sent or the server takes no more — it closed the connection, or it
/// stopped reading for 5 s (backpressure). With `drain`, all the server sends is read
/// meanwhile; without, nothing is.
fn flood(
    addr: SocketAddr,
    opening: &[u8],
    mut unit: impl FnMut(u32) -> Vec<u8>,
    max: usize,
    drain: bool,
) -> Flood {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let eof = Arc::new(AtomicBool::new(false));
    let drainer = drain.then(|| {
        let mut reader = conn.try_clone().unwrap();
        let eof = eof.clone();
        std::thread::spawn(move || {
            let mut sink = [0u8; 64 * 1024];
            while matches!(support::read_some(&mut reader, &mut sink), Ok(n) if n > 0) {}
            eof.store(true, Ordering::SeqCst);
        })
    });
    let mut sent = 0;
    let mut closed = false;
    let mut bytes = frames::preface();
    bytes.extend(opening);
    let mut i = 0;
    while sent < max {
        match conn.write_all(&bytes) {
            Ok(()) => sent += bytes.len(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(_) => {
                closed = true;
                break;
            }
        }
        if eof.load(Ordering::SeqCst) {
            closed = true;
            break;
        }
        bytes = unit(i);
        i += 1;
    }
    let _ = conn.shutdown(std::net::Shutdown::Both);
    if let Some(drainer) = drainer {
        let _ = drainer.join();
    }
    Flood { sent, closed }
}

/// Runs `attack` against a child server while sampling its memory; asserts it grew by
/// less than `bound` and that another client is answered afterwards; returns the
/// attack's outcome.
fn bounded(
    bound: u64,
    what: &str,
    attack: impl FnOnce(SocketAddr) -> Flood + Send + 'static,
) -> Flood {
    let server = ChildServer::start("suite", None);
    assert_eq!(support::get(server.addr, "/").text(), "root");
    let before = server.rss();
    let addr = server.addr;
    let attacker = std::thread::spawn(move || attack(addr));
    let mut peak = before;
    while !attacker.is_finished() {
        peak = peak.max(server.rss());
        std::thread::sleep(Duration::from_millis(20));
    }
    let outcome = attacker.join().expect("the attack runs");
    eprintln!(
        "{what}: {} KiB sent, {}; RSS before {} MiB, at most {} MiB",
        outcome.sent / 1024,
        if outcome.closed {
            "closed by the server"
        } else {
            "not closed"
        },
        before / MIB,
        peak / MIB
    );
    assert!(
        peak < before + bound,
        "grew from {before} to {peak} bytes while {what}"
    );
    let mut h2 = H2::connect(server.addr);
    assert_eq!(
        h2.get("/").text(),
        "root",
        "another client is served after {what}"
    );
    outcome
}

#[test]
fn issue35_rapid_reset_costs_bounded_memory() {
    if !defended_here() {
        return;
    }
    let block = frames::request_block("GET");
    bounded(
        32 * MIB,
        "opening and resetting 50,000 streams",
        move |addr| {
            flood(
                addr,
                &[],
                |i| {
                    let stream = 2 * i + 1;
                    let mut unit = frame(
                        frames::HEADERS,
                        frames::END_HEADERS | frames::END_STREAM,
                        stream,
                        &block,
                    );
                    unit.extend(frame(frames::RST_STREAM, 0, stream, &8u32.to_be_bytes()));
                    unit
                },
                50_000 * (2 * 9 + block.len() + 4),
                true,
            )
        },
    );
}

#[test]
fn issue35_a_continuation_flood_is_cut_off() {
    if !defended_here() {
        return;
    }
    let opening = frame(frames::HEADERS, 0, 1, &frames::request_block("GET"));
    let field = frames::literal_new(b"x-flood", &[b'a'; 16_000]);
    let flood = bounded(
        32 * MIB,
        "one header block continued without end",
        move |addr| {
            flood(
                addr,
                &opening,
                |_| frame(frames::CONTINUATION, 0, 1, &field),
                256 * MIB as usize,
                true,
            )
        },
    );
    assert!(
        flood.closed,
        "the server closed the connection ({} bytes taken)",
        flood.sent
    );
}

#[test]
fn issue35_an_hpack_bomb_is_refused() {
    if !defended_here() {
        return;
    }
    // One 4 KiB field in the dynamic table, then header blocks that name it 4,000
    // times each (16 MiB decoded from 4 KiB sent).
    let mut first = frames::request_block("GET");
    first.extend(frames::indexed_new(b"x-bomb", &[b'b'; 4096]));
    let opening = frame(
        frames::HEADERS,
        frames::END_HEADERS | frames::END_STREAM,
        1,
        &first,
    );
    let mut block = frames::request_block("GET");
    block.extend(std::iter::repeat_n(0xbe, 4000));
    bounded(32 * MIB, "header blocks of 16 MiB decoded", move |addr| {
        flood(
            addr,
            &opening,
            |i| {
                frame(
                    frames::HEADERS,
                    frames::END_HEADERS | frames::END_STREAM,
                    2 * i + 3,
                    &block,
                )
            },
            64 * MIB as usize,
            true,
        )
    });
}

#[test]
fn issue35_ping_and_settings_floods_from_a_client_that_reads_nothing_cost_bounded_memory() {
    if !defended_here() {
        return;
    }
    bounded(32 * MIB, "PINGs sent, no PONG read", |addr| {
        flood(
            addr,
            &[],
            |_| frame(frames::PING, 0, 0, &[7; 8]),
            64 * MIB as usize,
            false,
        )
    });
    bounded(32 * MIB, "SETTINGS sent, no ACK read", |addr| {
        flood(
            addr,
            &[],
            |_| frames::settings(&[(frames::INITIAL_WINDOW_SIZE, 65_535)]),
            64 * MIB as usize,
            false,
        )
    });
}

#[test]
fn issue35_zero_length_data_floods_cost_bounded_memory() {
    if !defended_here() {
        return;
    }
    let opening = frame(
        frames::HEADERS,
        frames::END_HEADERS,
        1,
        &frames::request_block("POST"),
    );
    bounded(32 * MIB, "empty DATA frames on one stream", move |addr| {
        flood(
            addr,
            &opening,
            |_| frame(frames::DATA, 0, 1, &[]),
            16 * MIB as usize,
            true,
        )
    });
}

#[test]
fn issue35_a_window_that_never_opens_costs_bounded_memory() {
    if !defended_here() {
        return;
    }
    // 100 streams asking for 64 KiB each, on a connection that grants no window and
    // reads nothing.
    let mut opening = frames::settings(&[(frames::INITIAL_WINDOW_SIZE, 0)]);
    let mut block = frames::request_block("GET");
    block[1] = 0x04; // `:path` as a literal: /mid64k.bin
    block.insert(2, 11);
    block.splice(3..3, b"/mid64k.bin".iter().copied());
    for i in 0..100 {
        opening.extend(frame(
            frames::HEADERS,
            frames::END_HEADERS | frames::END_STREAM,
            2 * i + 1,
            &block,
        ));
    }
    bounded(32 * MIB, "100 answers wait for a window", move |addr| {
        let mut conn = TcpStream::connect(addr).unwrap();
        let mut bytes = frames::preface();
        bytes.extend(&opening);
        conn.write_all(&bytes).unwrap();
        std::thread::sleep(Duration::from_secs(2));
        Flood {
            sent: bytes.len(),
            closed: false,
        }
    });
}

#[test]
fn issue35_a_body_that_never_ends_gets_408_at_the_body_timeout() {
    let app = App::new().post("/", inline(|body: Bytes| body.len().to_string()));
    let server = support::start_with(app, |c| c.timeouts.body = Duration::from_secs(1));
    let h2 = H2::connect(server.local_addr());
    let send = h2.sender();
    let status = h2.block_on(async move {
        let mut send = send.ready().await.unwrap();
        let mut req = request("POST", "/");
        req.headers_mut()
            .insert("content-length", "10".parse().unwrap());
        let (answer, mut stream) = send.send_request(req, false).unwrap();
        stream
            .send_data(Bytes::from_static(b"half!"), false)
            .unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(60), answer).await;
        answer
            .expect("an answer within 60 s")
            .expect("an answer")
            .status()
    });
    assert_eq!(status, 408);
    assert_eq!(
        Client::connect(server.local_addr())
            .get("/none")
            .response()
            .status,
        404
    );
}
