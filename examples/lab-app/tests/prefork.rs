//! The lab app under `prefork`, through its binary: a worker whose loops are frozen in
//! a handler is replaced by its supervisor.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The lab app serving `prefork` with `workers` workers of one loop each, the
/// diagnostic routes mounted; stopped on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(workers: usize) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lab-app"))
            .args(["serve", "--bind", "127.0.0.1:0", "--loops", "1", "--tools"])
            .args(["--workers", &workers.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (_, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
        Self {
            child,
            addr: addr.to_string(),
        }
    }

    /// The pids of its workers.
    fn workers(&self) -> Vec<u32> {
        let out = Command::new("pgrep")
            .args(["-P", &self.child.id().to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to `secs` seconds for `done`, panicking with `what` past that.
fn within(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `GET path` on `stream` (kept alive); returns the answer's body, `None` if
/// there is none (within 5 s).
fn ask(stream: &mut TcpStream, path: &str) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").ok()?;
    let mut answer = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head.lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })?;
            if body.len() >= length {
                return Some(body.to_owned());
            }
        }
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
}

/// The pid of the worker that serves `stream`.
fn pid_of(stream: &mut TcpStream) -> u32 {
    let status = ask(stream, "/_status").expect("the status page");
    let pid = status.split("\"pid\":").nth(1).expect(&status);
    pid.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Every worker's only loop frozen in a handler (`/cpu` burns 10 s inline): the
/// supervisor replaces them and the server serves again. The heartbeat came from a
/// thread of its own, so frozen workers were never replaced.
#[test]
fn issue33_prefork_replaces_workers_whose_loops_are_frozen() {
    let server = Server::start(2);
    within(60, "two workers", || server.workers().len() == 2);
    let workers = server.workers();
    // A connection held on each worker (one held puts its worker above the other,
    // which then takes the next), learnt from its status page.
    let mut held = std::collections::HashMap::new();
    within(60, "a connection on each worker", || {
        let mut stream = TcpStream::connect(&server.addr).unwrap();
        held.insert(pid_of(&mut stream), stream);
        workers.iter().all(|pid| held.contains_key(pid))
    });
    for stream in held.values_mut() {
        stream
            .write_all(b"GET /cpu?ms=10000 HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
    }
    within(60, "both workers replaced", || {
        let now = server.workers();
        now.len() == 2 && now.iter().all(|pid| !workers.contains(pid))
    });
    within(60, "served again", || {
        TcpStream::connect(&server.addr)
            .ok()
            .and_then(|mut stream| ask(&mut stream, "/plaintext"))
            .is_some_and(|body| body == "Hello, World!")
    });
}
