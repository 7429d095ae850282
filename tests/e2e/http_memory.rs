//! Issue 15: hostile clients cost bounded memory and no uptime. Pipelining without
//! reading, announcing bodies that never come, sending bodies past the server's budget.
//!
//! The memory tests measure a server in a child process (this test binary run again,
//! as the ignored test [`child`]), so that the other tests of the binary, running
//! alongside, do not move the figures, and so that an address-space limit applies to
//! the server alone.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proscenium::{App, Body, Bytes, Config, inline};

use crate::support::{self, Client};

/// The size of the answer pipelined without reading: as large as an answer that is
/// copied into the write buffer gets (a static file up to 64 KiB is).
const ANSWER: usize = 64 * 1024;

/// What the child's environment variable names: which server to run.
const CHILD_ENV: &str = "PROSCENIUM_MEMORY_CHILD";

fn app() -> App {
    App::new()
        .get("/", inline(|| "root"))
        .get("/mid64k.bin", inline(|| Body::from(vec![b'm'; ANSWER])))
        .post("/", inline(|body: Bytes| format!("{} bytes", body.len())))
}

/// The server of a child process: started with the suite's model (or the loops
/// model with `loops`), its address printed, served until stdin closes.
#[test]
#[ignore = "the server of the memory tests' child process"]
fn child() {
    let Ok(kind) = std::env::var(CHILD_ENV) else {
        return;
    };
    let server = support::start_with(app(), |c| {
        if kind == "loops" {
            *c = Config {
                bind: c.bind,
                loops: Some(2),
                ..Config::default()
            };
        }
    });
    println!("listening on {}", server.local_addr());
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
}

/// A server in a child process, killed when dropped.
struct ChildServer {
    child: Child,
    addr: SocketAddr,
}

impl ChildServer {
    /// Starts the child's server (`kind`: `suite` or `loops`), with the address
    /// space limited to `max_address_space` bytes if given.
    fn start(kind: &str, max_address_space: Option<u64>) -> Self {
        // prlimit(1) sets the limit and executes the child in its place (the same
        // process), so the limit applies to the server alone.
        let mut command = Command::new("prlimit");
        if let Some(limit) = max_address_space {
            command.arg(format!("--as={limit}"));
        }
        command
            .arg(std::env::current_exe().unwrap())
            .args(["http_memory::child", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_ENV, kind)
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

    /// Returns the child's resident memory in bytes (`VmRSS`).
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("child is alive");
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("status has VmRSS");
        kib * 1024
    }

    /// Returns whether the child is still running.
    fn is_alive(&mut self) -> bool {
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
/// apart.
fn push(conns: &mut [TcpStream], bytes: &[u8], rounds: usize) {
    let mut offsets = vec![0; conns.len()];
    for _ in 0..rounds {
        for (conn, offset) in conns.iter_mut().zip(&mut offsets) {
            loop {
                match conn.write(&bytes[*offset..]) {
                    Ok(n) => *offset = (*offset + n) % bytes.len(),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("write: {e}"),
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Returns the smallest RSS the child reaches within `within`.
fn settled_rss(server: &ChildServer, within: Duration) -> u64 {
    let end = Instant::now() + within;
    let mut least = server.rss();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        least = least.min(server.rss());
    }
    least
}

const MIB: u64 = 1024 * 1024;

/// 100 connections pipelining `GET /mid64k.bin` and reading nothing grew the server
/// by 1.4 GB (every answer to one read was built before any was written), which it
/// kept after they closed. Now each holds at most about a write flush and a read of
/// the server's memory: growth stays under 64 MiB, and falls back after they close.
#[test]
fn issue15_pipelining_without_reading_costs_bounded_memory() {
    let server = ChildServer::start("suite", None);
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/mid64k.bin").response().body.len(), ANSWER);
    let before = server.rss();
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
        "RSS before {} MiB, with 100 connections {} MiB, after they closed {} MiB",
        before / MIB,
        during / MIB,
        after / MIB
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
    let addr = server.local_addr();
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
