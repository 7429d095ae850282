//! Issue 15: hostile clients cost bounded memory and no uptime. Pipelining without
//! reading, announcing bodies that never come, sending bodies past the server's
//! budgets, many large bodies at once (spooled to files), a large body followed by
//! pipelined requests.
//!
//! The memory tests measure a server in a child process (this test binary run again,
//! as the ignored test [`child`]), so that the other tests of the binary, running
//! alongside, do not move the figures, and so that an address-space limit applies to
//! the server alone.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proscenium::ws::{Message, SlowReader, WebSocketUpgrade};
use proscenium::{App, Body, Bytes, Config, Response, inline};

use crate::support::{self, Client};
use crate::websocket;

/// The size of the answer pipelined without reading: as large as an answer that is
/// copied into the write buffer gets (a static file up to 64 KiB is).
const ANSWER: usize = 64 * 1024;

/// What the child's environment variable names: which server to run.
pub(crate) const CHILD_ENV: &str = "PROSCENIUM_MEMORY_CHILD";

fn app() -> App {
    App::new()
        .get("/", inline(|| "root"))
        .get("/mid64k.bin", inline(|| Body::from(vec![b'm'; ANSWER])))
        .get("/1k", inline(|| Body::from(vec![b'k'; 1024])))
        .post("/", inline(|body: Bytes| format!("{} bytes", body.len())))
        .post(
            "/sum",
            inline(|body: Bytes| summary(body.len(), checksum(CHECKSUM_START, &body))),
        )
        .get("/ws/feed/drop", |ws: WebSocketUpgrade| async move {
            feed(ws, SlowReader::DropOldest)
        })
        .get("/ws/feed/close", |ws: WebSocketUpgrade| async move {
            feed(ws, SlowReader::Close)
        })
        .get("/ws/deflate", |ws: WebSocketUpgrade| async move {
            websocket::echo_on(ws.compression(true))
        })
}

/// How many messages a socket of `/ws/feed/...` is fed, and how large each is: 100 MiB.
const FEED_MESSAGES: u32 = 1600;
const FEED_MESSAGE: usize = 64 * 1024;

/// A socket fed [`FEED_MESSAGES`] binary messages (each its own allocation, every
/// page written, its number in its first four bytes) by a thread, as fast as the
/// thread can, through a 1 MiB send queue with `policy`; then, if the feed was not
/// refused, the socket's owner sends a text saying how many were dropped.
fn feed(ws: WebSocketUpgrade, policy: SlowReader) -> Response {
    ws.send_queue(1 << 20, policy)
        // Time to read the frames written before the close frame.
        .close_timeout(Duration::from_secs(60))
        .on_upgrade(|mut socket| async move {
            let sender = socket.sender();
            let (fed, dropped) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                for number in 0..FEED_MESSAGES {
                    let mut message = vec![0xfe; FEED_MESSAGE];
                    message[..4].copy_from_slice(&number.to_be_bytes());
                    if sender.feed(Message::binary(message)).is_err() {
                        return;
                    }
                }
                let _ = fed.send(sender.dropped());
            });
            // Fused: a oneshot may not be polled once it has answered.
            let mut dropped = futures_util::FutureExt::fuse(dropped);
            loop {
                tokio::select! {
                    next = socket.recv() => if next.is_none() { break },
                    Ok(dropped) = &mut dropped => {
                        let done = Message::text(format!("done, {dropped} dropped"));
                        let _ = socket.send(done).await;
                    }
                }
            }
        })
}

/// Where [`checksum`] starts.
const CHECKSUM_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over 8-byte words (the last padded with zeros) of `bytes`, continued from
/// `hash` (so pieces of a body but its last must be multiples of 8 bytes): the
/// checksum `/sum` answers, so a test knows the handler saw every byte it sent, in
/// order. Words, not bytes: these tests run unoptimized, and a byte at a time cost
/// seconds of CPU over the 200 MiB of the busiest one, which slowed the tests beside
/// it.
fn checksum(hash: u64, bytes: &[u8]) -> u64 {
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    let mut last = [0; 8];
    last[..tail.len()].copy_from_slice(tail);
    words
        .map(|word| u64::from_le_bytes(word.try_into().unwrap()))
        .chain((!tail.is_empty()).then_some(u64::from_le_bytes(last)))
        .fold(hash, |h, word| (h ^ word).wrapping_mul(0x0100_0000_01b3))
}

/// What `/sum` answers for a body of `len` bytes with checksum `hash`.
fn summary(len: usize, hash: u64) -> String {
    format!("{len} bytes, checksum {hash:016x}")
}

/// Bytes `offset..offset + len` (multiples of 8) of the body numbered `seed`:
/// different for every body and word, so a misplaced piece changes the checksum.
fn piece(seed: usize, offset: usize, len: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(len);
    for word in offset / 8..(offset + len) / 8 {
        let value = (word as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed as u64;
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// The server of a child process: started with the suite's model (or the loops
/// model with `loops`), its address printed, served until stdin closes. The thread
/// models get a thread for each of a test's 50 clients sending at once.
#[test]
#[ignore = "the server of the memory tests' child process"]
fn child() {
    let Ok(kind) = std::env::var(CHILD_ENV) else {
        return;
    };
    let scripts = cgi_root();
    let server = support::start_with(app(), |c| {
        c.threads = Some(64);
        if kind == "loops" {
            *c = Config {
                bind: c.bind,
                loops: Some(2),
                ..Config::default()
            };
        }
        c.root = Some(scripts.path().to_owned());
        c.cgi.enabled = true;
    });
    println!("listening on {}", server.local_addr());
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
}

/// The bytes `/cgi-bin/100m.sh` writes after its header section: 100 MiB.
const SCRIPT_OUTPUT: u64 = 100 * MIB;

/// The child's root: a CGI script writing [`SCRIPT_OUTPUT`] bytes, with its length.
fn cgi_root() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("cgi-bin")).unwrap();
    let script = root.path().join("cgi-bin/100m.sh");
    let text = format!(
        "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\nContent-Length: {SCRIPT_OUTPUT}\\n\\n'\nhead -c {SCRIPT_OUTPUT} /dev/zero\n"
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    root
}

/// A server in a child process, killed when dropped.
pub(crate) struct ChildServer {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl ChildServer {
    /// Starts the child's server (`kind`: `suite` or `loops`), with the address
    /// space limited to `max_address_space` bytes if given.
    pub(crate) fn start(kind: &str, max_address_space: Option<u64>) -> Self {
        Self::start_test("http_memory::child", kind, max_address_space)
    }

    /// Starts the child process that runs the ignored test `test` (a module's own
    /// server), with `CHILD_ENV` set to `kind`.
    pub(crate) fn start_test(test: &str, kind: &str, max_address_space: Option<u64>) -> Self {
        // prlimit(1) sets the limit and executes the child in its place (the same
        // process), so the limit applies to the server alone.
        let mut command = Command::new("prlimit");
        if let Some(limit) = max_address_space {
            command.arg(format!("--as={limit}"));
        }
        command
            .arg(std::env::current_exe().unwrap())
            .args([test, "--exact", "--ignored", "--nocapture"])
            .env(CHILD_ENV, kind)
            // Its own memory is what is measured: its server runs in it, not in workers.
            .env_remove("PROSCENIUM_TEST_WORKERS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("child starts");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let addr = stdout
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
            .expect("child prints its address")
            .parse()
            .unwrap();
        Self { child, addr }
    }

    /// Returns the resident memory the child must keep, in bytes: its anonymous and
    /// shared-memory pages (`RssAnon` + `RssShmem`). Mapped file pages (`RssFile`: the
    /// binary, a spooled body a handler is reading) are page cache the kernel may
    /// evict, and counting them made a test fail whenever its sample caught handlers
    /// reading spooled bodies (VmRSS 8 → 82 MiB, RssAnon flat).
    pub(crate) fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("child is alive");
        let kib = |field: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("status has {field}"))
        };
        (kib("RssAnon:") + kib("RssShmem:")) * 1024
    }

    /// Returns the anonymous pages of the child's thread stacks, in bytes: each
    /// mapping that directly follows a one-page guard (`---p`), as glibc lays a
    /// thread's stack out. A stack keeps the pages its deepest call touched (about
    /// 200 KiB in a debug build's request path), so a pool of 64 threads keeps about
    /// 13 MiB once each has served: the pool's fixed cost, not the connections'.
    pub(crate) fn stacks(&self) -> u64 {
        let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", self.child.id()))
            .expect("child is alive");
        let mut total = 0;
        let mut guard_end = None;
        let mut in_stack = false;
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or_default();
            if let Some((start, end)) = first.split_once('-')
                && let (Ok(start), Ok(end)) =
                    (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
            {
                let perms = words.next().unwrap_or_default();
                in_stack = perms == "rw-p" && guard_end == Some(start);
                guard_end = (perms == "---p" && end - start == 4096).then_some(end);
            } else if in_stack && first == "Anonymous:" {
                total += words
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024;
            }
        }
        total
    }

    /// Returns whether the child is still running.
    pub(crate) fn is_alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes to every connection, without blocking, what each takes of `bytes` repeated
/// without end (each from where it stopped), for `rounds` rounds a tenth of a second
/// apart. A connection the server dropped — a client that reads nothing falls behind
/// the write pace once the grace is over, which a busy machine's slow rounds reach —
/// is written to no more.
fn push(conns: &mut [TcpStream], bytes: &[u8], rounds: usize) {
    let mut offsets: Vec<Option<usize>> = vec![Some(0); conns.len()];
    for _ in 0..rounds {
        for (conn, at) in conns.iter_mut().zip(&mut offsets) {
            while let Some(offset) = at {
                match conn.write(&bytes[*offset..]) {
                    Ok(n) => *offset = (*offset + n) % bytes.len(),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
                        ) =>
                    {
                        *at = None;
                    }
                    Err(e) => panic!("write: {e}"),
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Returns the largest RSS the child reaches within `within`.
pub(crate) fn peak_rss(server: &ChildServer, within: Duration) -> u64 {
    let end = Instant::now() + within;
    let mut most = server.rss();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        most = most.max(server.rss());
    }
    most
}

/// Returns the smallest RSS the child reaches within `within`, less its threads'
/// stacks ([`ChildServer::stacks`]): what it keeps for anything but its threads.
fn settled_rss(server: &ChildServer, within: Duration) -> u64 {
    let kept = || server.rss() - server.stacks();
    let end = Instant::now() + within;
    let mut least = kept();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        least = least.min(kept());
    }
    least
}

pub(crate) const MIB: u64 = 1024 * 1024;

/// 100 connections pipelining `GET /mid64k.bin` and reading nothing grew the server
/// by 1.4 GB (every answer to one read was built before any was written), which it
/// kept after they closed. Now each holds at most about a write flush and a read of
/// the server's memory: growth stays under 64 MiB, and falls back after they close
/// (to within 16 MiB, not counting the pages the pool threads' stacks touched).
#[test]
fn issue15_pipelining_without_reading_costs_bounded_memory() {
    let server = ChildServer::start("suite", None);
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/mid64k.bin").response().body.len(), ANSWER);
    let before = server.rss() - server.stacks();
    let batch = "GET /mid64k.bin HTTP/1.1\r\nHost: t\r\n\r\n".repeat(1000);
    let mut conns: Vec<TcpStream> = (0..100)
        .map(|_| {
            let conn = TcpStream::connect(server.addr).unwrap();
            conn.set_nonblocking(true).unwrap();
            conn
        })
        .collect();
    push(&mut conns, batch.as_bytes(), 20);
    let during = server.rss();
    drop(conns);
    let after = settled_rss(&server, Duration::from_secs(2));
    eprintln!(
        "RSS besides thread stacks before {} MiB, after the 100 connections closed {} MiB \
         ({} MiB with them, {} MiB of stacks)",
        before / MIB,
        after / MIB,
        during / MIB,
        server.stacks() / MIB
    );
    assert!(
        during < before + 64 * MIB,
        "grew from {before} to {during} bytes"
    );
    assert!(
        after < before + 16 * MIB,
        "kept {after} bytes ({before} before)"
    );
    assert_eq!(client.get("/").response().text(), "root");
}

/// 400 heads announcing 8 MiB bodies that never come: the server reserved 8 MiB for
/// each, and under a 2 GiB address-space limit aborted. Now it reserves nothing for
/// a body before it arrives, and answers the next request.
#[test]
fn issue15_announced_bodies_reserve_nothing() {
    let mut server = ChildServer::start("loops", Some(2 << 30));
    let head = "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 8388608\r\n\r\n";
    let conns: Vec<TcpStream> = (0..400)
        .map(|_| {
            let mut conn = TcpStream::connect(server.addr).unwrap();
            conn.write_all(head.as_bytes()).unwrap();
            conn
        })
        .collect();
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/").response().text(), "root");
    assert!(server.is_alive(), "the server died");
    drop(conns);
}

/// A body that needs more room than the server's budget for buffered bodies gets
/// 503 with Retry-After, and the server goes on answering others.
#[test]
fn issue15_bodies_past_the_budget_get_503() {
    let server = support::start_with(app(), |c| {
        c.limits.max_body = 4 * MIB;
        c.limits.max_buffered_bodies = 256 * 1024;
    });
    assert_a_1_mib_body_is_refused_then_others_served(server.local_addr());
}

/// A spooled body that needs more room than the server's budget for spooled bodies
/// gets 503 with Retry-After, and the server goes on answering others.
#[test]
fn issue15_spooled_bodies_past_the_disk_budget_get_503() {
    let server = support::start_with(app(), |c| {
        c.limits.spool_above = 64 * 1024;
        c.limits.max_spooled_bodies = 256 * 1024;
    });
    assert_a_1_mib_body_is_refused_then_others_served(server.local_addr());
}

/// Sends a 1 MiB body, which the server at `addr` has no room for: it is answered 503
/// with Retry-After, and a request on a new connection is answered.
fn assert_a_1_mib_body_is_refused_then_others_served(addr: SocketAddr) {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut writer = conn.try_clone().unwrap();
    let sending = std::thread::spawn(move || {
        let head = format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {MIB}\r\n\r\n");
        // The server refuses partway and closes: the rest may not be taken.
        let _ = writer.write_all(head.as_bytes());
        let _ = writer.write_all(&vec![b'b'; MIB as usize]);
    });
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut conn, &mut answer);
    sending.join().unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 503 "), "{answer}");
    assert!(answer.contains("\r\nretry-after: 1\r\n"), "{answer}");

    let mut client = Client::connect(addr);
    client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(client.response().text(), "5 bytes");
}

/// The size of the large bodies of the tests below: past `spool_above` (1 MiB).
const LARGE: usize = 4 * MIB as usize;

/// 50 clients each sending a 4 MiB body slowly, in 256 KiB pieces: every body waited
/// in memory until complete, so the server grew by about 200 MiB (measured 7 → 196
/// MiB). Now each goes to a spool file as it arrives (its announced length is past
/// `spool_above`), page cache rather than the server's memory: the memory it must keep
/// grows by less than 48 MiB (measured 0 → 1 MiB), and every handler sees its body
/// exactly.
#[test]
fn issue15_many_large_bodies_at_once_are_spooled_not_buffered() {
    const CLIENTS: usize = 50;
    const PIECE: usize = 256 * 1024;
    let server = ChildServer::start("suite", None);
    assert_eq!(
        Client::connect(server.addr).get("/").response().text(),
        "root"
    );
    let before = server.rss();
    let head = format!("POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: {LARGE}\r\n\r\n");
    let mut clients: Vec<(Client, u64)> = (0..CLIENTS)
        .map(|_| {
            let mut client = Client::connect(server.addr);
            client.send(&head);
            (client, CHECKSUM_START)
        })
        .collect();
    let mut during = before;
    for offset in (0..LARGE).step_by(PIECE) {
        for (seed, (client, hash)) in clients.iter_mut().enumerate() {
            let bytes = piece(seed, offset, PIECE);
            *hash = checksum(*hash, &bytes);
            client.send(bytes);
        }
        during = during.max(server.rss());
        std::thread::sleep(Duration::from_millis(50));
    }
    for (client, hash) in &mut clients {
        assert_eq!(client.response().text(), summary(LARGE, *hash));
    }
    assert_grew_less_than(48 * MIB, before, during, "50 clients sent 4 MiB bodies");
}

/// Reports how the child's RSS grew (`before` to at most `during`) while `what`
/// happened, and asserts it grew less than `bound`.
pub(crate) fn assert_grew_less_than(bound: u64, before: u64, during: u64, what: &str) {
    eprintln!(
        "RSS before {} MiB, at most {} MiB while {what}",
        before / MIB,
        during / MIB
    );
    assert!(
        during < before + bound,
        "grew from {before} to {during} bytes while {what}"
    );
}

/// One connection sends a 4 MiB body and, in the same write, 2 MiB of pipelined
/// `GET`s of a 1 KiB answer (72 MiB of answers, far more than the sockets' buffers
/// hold), then reads nothing for 2 s. A body waits outside the read buffer, a read
/// takes in at most 64 KiB and the server stops reading while 64 KiB of answers wait
/// (issue 15, point 1): the memory it must keep grows by less than 32 MiB (measured
/// 0 → 0 MiB), and then every answer arrives, in order.
#[test]
fn issue15_a_large_body_then_pipelined_requests_unread_cost_bounded_memory() {
    const GETS: usize = 72_000;
    let server = ChildServer::start("suite", None);
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/").response().text(), "root");
    let before = server.rss();
    let body = piece(1, 0, LARGE);
    let want = summary(LARGE, checksum(CHECKSUM_START, &body));
    let mut bytes =
        format!("POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: {LARGE}\r\n\r\n").into_bytes();
    bytes.extend_from_slice(&body);
    bytes.extend_from_slice(
        "GET /1k HTTP/1.1\r\nHost: t\r\n\r\n"
            .repeat(GETS)
            .as_bytes(),
    );
    let mut writer = client.writer();
    let sending = std::thread::spawn(move || writer.write_all(&bytes));
    let mut during = before;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(100));
        during = during.max(server.rss());
    }
    assert_eq!(client.response().text(), want);
    for i in 0..GETS {
        assert_eq!(client.response().body.len(), 1024, "answer {i}");
    }
    sending
        .join()
        .unwrap()
        .expect("the server took every request");
    assert_grew_less_than(32 * MIB, before, during, "the answers waited unread");
}

/// Bodies past `spool_above` reach the handler exactly, with Content-Length and
/// chunked, though the memory budget is smaller than they are (without spooling
/// both were refused 503).
#[test]
fn issue15_spooled_bodies_reach_the_handler_exactly() {
    let server = support::start_with(app(), |c| {
        c.limits.spool_above = 64 * 1024;
        c.limits.max_buffered_bodies = 64 * 1024;
    });
    let body = piece(2, 0, 3 * MIB as usize);
    let want = summary(body.len(), checksum(CHECKSUM_START, &body));
    let mut client = Client::connect(server.local_addr());
    client.send(format!(
        "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    for part in body.chunks(100_000) {
        client.send(part);
    }
    assert_eq!(client.response().text(), want);
    client.send("POST /sum HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for part in body.chunks(77_777) {
        client
            .send(format!("{:x}\r\n", part.len()))
            .send(part)
            .send("\r\n");
    }
    client.send("0\r\n\r\n");
    assert_eq!(client.response().text(), want);
}

/// Twenty WebSockets whose readers never read, each fed 100 MiB (2 GB in all) as fast
/// as a thread can: each costs the server at most its 1 MiB send queue and a write's
/// worth, not its feed — growth stays under 32 MiB (measured: 8 MiB; 33 MiB with
/// 4 MiB queues, so the queues are what it measures). Ten drop the oldest messages: read at
/// last, each gets the newest, in order, and every message fed is either delivered
/// or counted as dropped. Ten are closed with 1008 (policy) once their queue is full.
#[test]
fn websocket_readers_that_never_read_cost_their_send_queue_not_their_feed() {
    let server = ChildServer::start("suite", None);
    let before = server.rss();
    let mut dropping: Vec<Client> = (0..10)
        .map(|_| websocket::open(server.addr, "/ws/feed/drop"))
        .collect();
    let mut closing: Vec<Client> = (0..10)
        .map(|_| websocket::open(server.addr, "/ws/feed/close"))
        .collect();
    let during = peak_rss(&server, Duration::from_secs(3));
    assert_grew_less_than(32 * MIB, before, during, "20 sockets were fed 100 MiB each");
    for client in &mut dropping {
        let mut numbers = Vec::new();
        let dropped = loop {
            let (_, opcode, payload) = websocket::read_frame(client);
            if opcode == websocket::TEXT {
                let text = String::from_utf8(payload).unwrap();
                let dropped = text
                    .strip_prefix("done, ")
                    .and_then(|t| t.strip_suffix(" dropped"));
                break dropped.unwrap().parse::<u32>().unwrap();
            }
            assert_eq!((opcode, payload.len()), (websocket::BINARY, FEED_MESSAGE));
            numbers.push(u32::from_be_bytes(payload[..4].try_into().unwrap()));
        };
        assert!(numbers.is_sorted(), "in the order fed");
        assert_eq!(
            numbers.last(),
            Some(&(FEED_MESSAGES - 1)),
            "the newest kept"
        );
        assert!(dropped > 0);
        assert_eq!(
            numbers.len() as u32 + dropped,
            FEED_MESSAGES,
            "none lost unannounced"
        );
    }
    for client in &mut closing {
        let mut got = 0;
        let close = loop {
            let (_, opcode, payload) = websocket::read_frame(client);
            if opcode == websocket::CLOSE {
                break payload;
            }
            got += 1;
        };
        assert_eq!(close[..2], 1008u16.to_be_bytes(), "closed for a policy");
        assert!(got < FEED_MESSAGES);
    }
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/").response().text(), "root");
}

/// Issue 20: a CGI script's output is streamed, never held: 100 MiB through the
/// server grow it by a few buffers.
#[test]
fn a_cgi_scripts_100_mib_output_streams_through_flat_memory() {
    let server = ChildServer::start("suite", None);
    let before = server.rss();
    let mut conn = TcpStream::connect(server.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"GET /cgi-bin/100m.sh HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut received = 0u64;
    let mut most = before;
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        let n = std::io::Read::read(&mut conn, &mut chunk).unwrap();
        if n == 0 {
            break;
        }
        received += n as u64;
        if received % (8 * MIB) < n as u64 {
            most = most.max(server.rss());
        }
    }
    assert!(received > SCRIPT_OUTPUT, "{received} bytes, head included");
    assert!(
        received < SCRIPT_OUTPUT + 1024,
        "{received} bytes: chunked, or more than the script wrote"
    );
    assert_grew_less_than(16 * MIB, before, most, "streaming 100 MiB of CGI output");
}
