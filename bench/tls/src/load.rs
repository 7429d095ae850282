//! The handshake load generator: THREADS blocking clients, each opening a new TLS
//! connection for every request (`Connection: close`, so the server closes first and
//! the TIME_WAIT sockets are its own), for SECONDS. Prints one row:
//! "handshakes per_second failures not_resumed client_core_percent".
//!
//! `--mode resumed` keeps sessions (TLS 1.3 tickets, TLS 1.2 tickets or IDs) in one
//! store shared by the threads; each thread's first handshake is full, and any later
//! one that was not resumed is counted in `not_resumed`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustls::{ClientConfig, ClientConnection, HandshakeKind, StreamOwned};

use crate::args::Args;
use crate::{config, cpu};

/// Counters shared by the client threads.
#[derive(Default)]
struct Counts {
    ok: AtomicU64,
    failed: AtomicU64,
    not_resumed: AtomicU64,
}

/// Runs the `load` command.
pub fn run(args: &mut Args) -> Result<(), String> {
    let addr: SocketAddr = args.required("addr")?.parse().map_err(|_| "bad --addr")?;
    let threads: usize = args.get("threads", 32)?;
    let seconds: f64 = args.get("seconds", 10.0)?;
    let resume = match args.get("mode", "full".to_string())?.as_str() {
        "full" => false,
        "resumed" => true,
        other => return Err(format!("bad --mode {other:?}: full or resumed")),
    };
    let version = config::Version::parse(&args.get("tls", "1.3".to_string())?)?;
    let path: String = args.get("path", "/plaintext".to_string())?;
    let config = config::client(config::provider("aws-lc-rs")?, version, resume);
    let request = format!("GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n");
    let counts = Arc::new(Counts::default());
    let cpu_before = cpu::used(libc::RUSAGE_SELF);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (config, counts, request) = (config.clone(), counts.clone(), request.clone());
            std::thread::spawn(move || {
                client_loop(addr, &config, &request, deadline, resume, &counts)
            })
        })
        .collect();
    for worker in workers {
        worker.join().map_err(|_| "a client thread panicked")?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = (cpu::used(libc::RUSAGE_SELF) - cpu_before).as_secs_f64();
    let ok = counts.ok.load(Ordering::Relaxed);
    println!(
        "{ok} {:.0} {} {} {:.0}",
        ok as f64 / elapsed,
        counts.failed.load(Ordering::Relaxed),
        counts.not_resumed.load(Ordering::Relaxed),
        cpu / elapsed * 100.0
    );
    Ok(())
}

/// Makes requests one connection each until `deadline`, counting outcomes.
fn client_loop(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
    request: &str,
    deadline: Instant,
    resume: bool,
    counts: &Counts,
) {
    let mut first = true;
    while Instant::now() < deadline {
        match one_request(addr, config, request) {
            Ok(kind) => {
                counts.ok.fetch_add(1, Ordering::Relaxed);
                if resume && !first && kind != Some(HandshakeKind::Resumed) {
                    counts.not_resumed.fetch_add(1, Ordering::Relaxed);
                }
                first = false;
            }
            Err(error) => {
                if counts.failed.fetch_add(1, Ordering::Relaxed) < 3 {
                    eprintln!("tls-bench load: {error}");
                }
            }
        }
    }
}

/// Connects, sends `request`, reads a 200 answer whole and waits for the server to
/// close; returns the handshake's kind.
fn one_request(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
    request: &str,
) -> Result<Option<HandshakeKind>, String> {
    let tcp = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let conn =
        ClientConnection::new(config.clone(), config::server_name()).map_err(|e| e.to_string())?;
    let mut stream = StreamOwned::new(conn, tcp);
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("handshake or write: {e}"))?;
    read_answer(&mut stream)?;
    // The server closes (Connection: close); rustls reports a close without
    // close_notify as an error, which is still the end.
    let mut rest = [0u8; 256];
    while let Ok(n @ 1..) = stream.read(&mut rest) {
        let _ = n;
    }
    Ok(stream.conn.handshake_kind())
}

/// Reads one answer: checks its status is 200 and reads its Content-Length body.
pub fn read_answer(stream: &mut impl Read) -> Result<(), String> {
    let mut answer = Vec::with_capacity(512);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("closed before the answer".into());
        }
        answer.extend_from_slice(&chunk[..n]);
        let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&answer[..end]);
        if !head.starts_with("HTTP/1.1 200") {
            return Err(format!("answer {:?}", head.lines().next().unwrap_or("")));
        }
        let length = content_length(&head).ok_or("no Content-Length")?;
        if answer.len() >= end + 4 + length {
            return Ok(());
        }
    }
}

fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}
