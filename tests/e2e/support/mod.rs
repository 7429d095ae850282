//! Fixtures: start a server on a free port, and a raw HTTP/1.1 client that reads
//! responses exactly as they come off the wire (over TCP, or TLS: `tls`).

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use proscenium::{App, Config, Model, ModelSpec, Server, ServerHandle};

pub mod frames;
pub mod h2;
pub mod tls;

/// How long a test waits for any one read before failing.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts `app` on a free loopback port with two loops.
pub fn start(app: App) -> ServerHandle {
    start_with(app, |_| {})
}

/// Returns the execution model this run of the suite tests: `PROSCENIUM_TEST_MODEL`
/// (as `--model` spells it), `loops` by default. `scripts/test` runs the suite once per
/// model.
pub fn model() -> ModelSpec {
    let spec: ModelSpec = std::env::var("PROSCENIUM_TEST_MODEL")
        .unwrap_or_else(|_| "loops".to_owned())
        .parse()
        .expect("PROSCENIUM_TEST_MODEL names a model");
    // Workers re-execute their binary, which here would be this test harness.
    assert!(
        spec.model != Model::Prefork,
        "prefork is tested through the binary: crates/proscenium-cli/tests"
    );
    spec
}

/// Returns whether the model under test is a thread model (`thread-pool`,
/// `thread-per-conn`): a connection with a request holds a thread.
pub fn is_thread_model() -> bool {
    matches!(model().model, Model::ThreadPool | Model::ThreadPerConn)
}

/// Returns whether the model under test serves connections on event loops, many to a
/// thread: every model but the thread models.
pub fn has_loops() -> bool {
    !is_thread_model()
}

/// Returns whether the model under test has a watchdog reporting a stalled loop:
/// `loops` and `event-loop` (the thread models' threads may block by design; the
/// staged model's stalls show in its stage stats).
pub fn has_watchdog() -> bool {
    matches!(
        model().model,
        Model::Loops | Model::EventLoop | Model::Prefork
    )
}

/// Returns whether a connection without a request waits in a waiting room, closed
/// at its header deadline (the thread models, `staged`), rather than on a loop's
/// shelf until the idle timeout.
pub fn has_waiting_room() -> bool {
    !has_watchdog()
}

/// Returns the worker processes this run of the suite serves in:
/// `PROSCENIUM_TEST_WORKERS`, none by default (the server in the test's process).
/// `scripts/test` runs the suite in two workers under every model.
pub fn workers() -> Option<usize> {
    let workers = std::env::var("PROSCENIUM_TEST_WORKERS").ok()?;
    Some(workers.parse().expect("PROSCENIUM_TEST_WORKERS is a count"))
}

thread_local! {
    /// Whether this test has started a server already, or runs them all in process.
    static STARTED: Cell<bool> = const { Cell::new(false) };
}

/// Starts `app` with a configuration adjusted by `configure`, under the model of this
/// run (two loops, or 16 threads, unless `configure` says otherwise), in the worker
/// processes of this run if it has some.
///
/// A worker is this test binary again, running this test alone: the test builds its
/// app as here, and at this call serves it until the supervisor stops it. So only a
/// test's first server runs in workers, and the others in its process; a test that
/// cannot run in workers says why with [`in_process`].
pub fn start_with(app: App, configure: impl FnOnce(&mut Config)) -> ServerHandle {
    let first = !STARTED.with(|started| started.replace(true));
    let config = configured(configure);
    let workers = match workers() {
        Some(workers) if first => workers,
        _ => return start_config(app, config),
    };
    let config = Config {
        workers: Some(workers),
        ..config
    };
    if proscenium::rt::prefork_worker().is_some() {
        let handle = start_config(app, config);
        handle.run_until_signal().expect("the worker serves");
        std::process::exit(0);
    }
    let test = std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .expect("a test runs on a thread named after it (not --test-threads=1)")
        .to_owned();
    Server::new(app)
        .config(config)
        .worker_command(move |command| {
            command
                .args([test.as_str(), "--exact", "--test-threads=1", "--quiet"])
                .stdout(Stdio::null());
        })
        .start()
        .expect("server starts")
}

/// Has this test start its servers in its own process whatever the run's workers,
/// for the reason given: it looks inside its server (what its handlers record, its log,
/// its memory, a cap on the whole server), or gives it files, certificates or a
/// service made for this run, which the test re-executed as a worker would make anew.
pub fn in_process(_because: &str) {
    STARTED.with(|started| started.set(true));
}

/// The configuration of this run, adjusted by `configure`.
fn configured(configure: impl FnOnce(&mut Config)) -> Config {
    let mut config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        loops: Some(2),
        threads: Some(16),
        ..Config::default()
    };
    model().apply(&mut config);
    configure(&mut config);
    config
}

fn start_config(app: App, config: Config) -> ServerHandle {
    Server::new(app)
        .config(config)
        .start()
        .expect("server starts")
}

/// A response as read off the wire.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header fields in order, names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// Returns the first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What a raw client speaks over: TCP, or TLS over it (`tls::connect`).
pub trait Wire: Read + Write {
    /// The TCP socket under it, for its timeouts.
    fn tcp(&self) -> &TcpStream;
}

impl Wire for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// A raw client connection.
pub struct Client<S: Wire = TcpStream> {
    stream: S,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Self {
        Self::over(TcpStream::connect(addr).expect("connect"))
    }

    /// Returns a second handle on the connection, to write from another thread while
    /// this one reads.
    pub fn writer(&self) -> TcpStream {
        self.stream.try_clone().expect("clone the stream")
    }
}

impl<S: Wire> Client<S> {
    /// A client over a connected `stream`.
    pub fn over(stream: S) -> Self {
        stream.tcp().set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// The stream under the client.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// The stream under the client, to act on it (a TLS session's key update).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    pub fn send(&mut self, bytes: impl AsRef<[u8]>) -> &mut Self {
        self.stream.write_all(bytes.as_ref()).expect("write");
        self
    }

    /// Sends `GET path` with a Host header.
    pub fn get(&mut self, path: &str) -> &mut Self {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n"))
    }

    /// Reads one response; `head_only` for answers to HEAD (no body follows).
    pub fn response_to(&mut self, head_only: bool) -> Response {
        let head_end = self.read_until(|buf| find(buf, b"\r\n\r\n").map(|i| i + 4));
        let head = String::from_utf8(self.buf.drain(..head_end).collect()).expect("head is UTF-8");
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once(':').expect("header has a colon");
                (k.to_ascii_lowercase(), v.trim().to_owned())
            })
            .collect();
        let mut res = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
            return res;
        }
        res.body = if let Some(len) = res.header("content-length") {
            let len: usize = len.parse().unwrap();
            self.read_until(|buf| (buf.len() >= len).then_some(len));
            self.buf.drain(..len).collect()
        } else if res.header("transfer-encoding") == Some("chunked") {
            self.read_chunked()
        } else {
            self.read_to_close()
        };
        res
    }

    pub fn response(&mut self) -> Response {
        self.response_to(false)
    }

    /// Reads exactly `n` bytes (after any response read before): for what follows a
    /// `101 Switching Protocols`.
    pub fn read_bytes(&mut self, n: usize) -> Vec<u8> {
        self.read_until(|buf| (buf.len() >= n).then_some(n));
        self.buf.drain(..n).collect()
    }

    fn read_chunked(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let line_end = self.read_until(|buf| find(buf, b"\r\n").map(|i| i + 2));
            let line: Vec<u8> = self.buf.drain(..line_end).collect();
            let size =
                usize::from_str_radix(std::str::from_utf8(&line).unwrap().trim(), 16).unwrap();
            if size == 0 {
                let end = self.read_until(|buf| find(buf, b"\r\n").map(|i| i + 2));
                self.buf.drain(..end);
                return body;
            }
            self.read_until(|buf| (buf.len() >= size + 2).then_some(size + 2));
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }

    /// Reads until the server closes; returns what came.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        let mut chunk = [0u8; 8192];
        loop {
            match read_some(&mut self.stream, &mut chunk) {
                Ok(0) => return std::mem::take(&mut self.buf),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return std::mem::take(&mut self.buf);
                }
                Err(e) => panic!("read failed before close: {e}"),
            }
        }
    }

    /// Returns whether the server has closed the connection (reads EOF within `wait`).
    pub fn is_closed_within(&mut self, wait: Duration) -> bool {
        self.stream.tcp().set_read_timeout(Some(wait)).unwrap();
        let mut byte = [0u8; 1];
        // A wait that runs out is an open connection, not a closed one; a reset is closed.
        let closed = match read_some(&mut self.stream, &mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        } && self.buf.is_empty();
        self.stream
            .tcp()
            .set_read_timeout(Some(READ_TIMEOUT))
            .unwrap();
        closed
    }

    /// Returns whether the connection is still open, and silent, after `wait`.
    pub fn is_open_after(&mut self, wait: Duration) -> bool {
        self.stream.tcp().set_read_timeout(Some(wait)).unwrap();
        let mut byte = [0u8; 1];
        let open = matches!(
            read_some(&mut self.stream, &mut byte),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
        );
        self.stream
            .tcp()
            .set_read_timeout(Some(READ_TIMEOUT))
            .unwrap();
        open
    }

    /// Returns whether any byte of an answer arrives within `wait` (kept for the next
    /// read if so).
    pub fn has_answer_within(&mut self, wait: Duration) -> bool {
        self.stream.tcp().set_read_timeout(Some(wait)).unwrap();
        let mut chunk = [0u8; 4096];
        let answered = match read_some(&mut self.stream, &mut chunk) {
            Ok(n) if n > 0 => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            _ => false,
        };
        self.stream
            .tcp()
            .set_read_timeout(Some(READ_TIMEOUT))
            .unwrap();
        answered
    }

    /// Reads until `needle` comes; returns what came up to and including it (what
    /// came after stays for the next read).
    pub fn read_past(&mut self, needle: &[u8]) -> Vec<u8> {
        let end = self.read_until(|buf| find(buf, needle).map(|at| at + needle.len()));
        self.buf.drain(..end).collect()
    }

    fn read_until(&mut self, mut done: impl FnMut(&[u8]) -> Option<usize>) -> usize {
        let mut chunk = [0u8; 8192];
        loop {
            if let Some(n) = done(&self.buf) {
                return n;
            }
            match read_some(&mut self.stream, &mut chunk) {
                Ok(0) => panic!(
                    "connection closed early; got {:?}",
                    String::from_utf8_lossy(&self.buf)
                ),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!(
                    "read failed: {e}; got {:?}",
                    String::from_utf8_lossy(&self.buf)
                ),
            }
        }
    }
}

/// One `read`, repeated while a signal interrupts it. The servers under test handle
/// SIGCHLD (CGI children) in this process, and a read on a socket with a timeout is
/// not restarted after a handler (signal(7)), so a plain read fails with EINTR now and
/// then — seen in CI.
pub fn read_some(from: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match from.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            done => return done,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends one GET on a fresh connection and returns the response.
pub fn get(addr: SocketAddr, path: &str) -> Response {
    Client::connect(addr).get(path).response()
}

/// Sends raw bytes on a fresh connection and returns the first response.
pub fn exchange(addr: SocketAddr, raw: impl AsRef<[u8]>) -> Response {
    Client::connect(addr).send(raw).response()
}

/// Log lines of every server in this test binary, captured from `tracing`.
static LOGS: std::sync::OnceLock<std::sync::Arc<std::sync::Mutex<Vec<u8>>>> =
    std::sync::OnceLock::new();

#[derive(Clone)]
struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How many captured log lines hold every one of `needles`.
/// The lines of the access log at `path` once it has `lines` of them: its writer is a
/// thread of its own, so they come a moment after the answers (within a minute on a
/// busy machine).
pub fn log_lines(path: &std::path::Path, lines: usize) -> Vec<String> {
    for _ in 0..3000 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return text.lines().map(str::to_owned).collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the access log has fewer than {lines} lines");
}

pub fn logged_lines(needles: &[&str]) -> usize {
    LOGS.get().map_or(0, |logs| {
        String::from_utf8_lossy(&logs.lock().unwrap())
            .lines()
            .filter(|line| needles.iter().all(|n| line.contains(n)))
            .count()
    })
}

/// Starts capturing the servers' log messages (idempotent).
pub fn capture_logs() {
    LOGS.get_or_init(|| {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = Capture(buf.clone());
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
            .init();
        buf
    });
}

/// Waits up to `wait` for a captured log line containing every one of `needles`.
pub fn logged_within(needles: &[&str], wait: Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    loop {
        let found = LOGS.get().is_some_and(|logs| {
            let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
            text.lines()
                .any(|line| needles.iter().all(|n| line.contains(n)))
        });
        if found || std::time::Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
