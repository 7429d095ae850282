//! Entry points for the fuzz targets in `fuzz/` (`cargo +nightly fuzz run TARGET`),
//! compiled only with `--cfg fuzzing`, which `cargo fuzz` sets. Each takes arbitrary
//! bytes and panics only when a property fails (docs/security.md, Fuzzing, lists them).
//!
//! An input's first bytes steer the run — where its stream is cut into reads, which
//! limits apply — so that the fuzzer mutates those choices along with the bytes.

use std::rc::Rc;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::http::h1::readings::{Reading, pieces, readings, readings_with};
use crate::http::h1::{ChunkedDecoder, Head, Http1, ParseError, chunk, last_chunk, parse_head};
use crate::rt::{Host, Left, LocalProtocol, Progress, Protocol, Visit};
use crate::{App, Config, Limits, inline};

/// Splits an input into the cuts its first 4 bytes make and the stream after them.
fn cut(data: &[u8]) -> (Vec<usize>, &[u8]) {
    let (cuts, stream) = data.split_at(data.len().min(4));
    (cuts.iter().map(|&b| usize::from(b) * 7).collect(), stream)
}

/// Decodes `data` as a stream of requests, whole and cut into reads where its first
/// bytes say: never a panic, and the same messages (and the same refusal) either way.
pub fn decode(data: &[u8]) {
    let (cuts, stream) = cut(data);
    assert_eq!(readings(stream, &[]), readings(stream, &cuts), "{stream:?}");
}

/// Parses `data` as a request head, under limits its first 3 bytes choose: never a
/// panic; a head it takes is within the limits and ends at its blank line, and written
/// out again from what the parser reports (method, target, version, fields) it parses
/// to the same request; a head it waits on is left whole.
pub fn head(data: &[u8]) {
    let (knobs, raw) = data.split_at(data.len().min(3));
    let limits = head_limits(knobs);
    let mut buf = BytesMut::from(raw);
    let head = match parse_head(&mut buf, &limits) {
        Ok(Some(head)) => head,
        Ok(None) => {
            assert_eq!(&buf[..], raw, "a partial head was taken");
            return;
        }
        Err(_) => return,
    };
    let taken = &raw[..raw.len() - buf.len()];
    assert!(taken.len() <= limits.max_head, "max_head passed: {taken:?}");
    assert!(taken.ends_with(b"\n"), "not a whole head: {taken:?}");
    let (target, fields) = target_and_fields(taken);
    assert!(target.len() <= limits.max_uri, "max_uri passed: {taken:?}");
    assert!(
        fields <= limits.max_headers,
        "max_headers passed: {taken:?}"
    );
    assert_reparses(&head, taken);
}

/// Checks that `head`, written out from what the parser reports of it, parses to the
/// same request, under limits wide enough for what writing it out adds.
fn assert_reparses(head: &Head, taken: &[u8]) {
    let wire = write_head(&head.req);
    let wide = Limits {
        max_head: 1 << 20,
        max_uri: 1 << 20,
        max_headers: 256,
        ..Limits::default()
    };
    let mut again = BytesMut::from(&wire[..]);
    let second = parse_head(&mut again, &wide);
    let second = second.unwrap_or_else(|e| panic!("{e}: {taken:?} written out as {wire:?}"));
    let second = second.unwrap_or_else(|| panic!("{taken:?} written out as {wire:?} is partial"));
    assert!(again.is_empty(), "{wire:?} has bytes after its head");
    assert_eq!(
        summary(head),
        summary(&second),
        "{taken:?} written as {wire:?}"
    );
}

/// Head limits from up to 3 bytes: `max_head` 64 B to 16 KiB, `max_headers` 0 to
/// 255, `max_uri` 16 B to 8 KiB (the defaults for bytes missing).
fn head_limits(knobs: &[u8]) -> Limits {
    let knob = |at: usize| knobs.get(at).map(|&b| usize::from(b));
    Limits {
        max_head: knob(0).map_or(16 * 1024, |b| 64 + b * 64),
        max_headers: knob(1).unwrap_or(100),
        max_uri: knob(2).map_or(8 * 1024, |b| 16 + b * 32),
        ..Limits::default()
    }
}

/// The request target of a head the parser took (`httparse` skips empty lines before
/// the request line, which has single spaces), and how many field lines follow it:
/// every line but the request line and the blank one (a field line cannot hold LF).
fn target_and_fields(head: &[u8]) -> (&[u8], usize) {
    let start = head.iter().position(|&b| b != b'\r' && b != b'\n');
    let head = &head[start.unwrap_or(head.len())..];
    let target = head.split(|&b| b == b' ').nth(1).unwrap_or_default();
    let lines = head.iter().filter(|&&b| b == b'\n').count();
    (target, lines.saturating_sub(2))
}

/// A request's head written out from what the parser reports of it.
fn write_head(req: &crate::Request) -> Vec<u8> {
    let line = format!("{} {} {:?}\r\n", req.method(), req.uri(), req.version());
    let mut wire = line.into_bytes();
    for (name, value) in req.headers() {
        wire.extend_from_slice(name.as_str().as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value.as_bytes());
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"\r\n");
    wire
}

/// Everything a parsed head says, for comparing two.
fn summary(head: &Head) -> impl PartialEq + std::fmt::Debug {
    let req = &head.req;
    (
        (req.method().clone(), req.uri().clone(), req.version()),
        req.headers().clone(),
        (head.framing, head.keep_alive, head.expect_continue),
        head.accept.clone(),
    )
}

/// Decodes `data` as a chunked body, with a body limit and a trailer limit its first 2
/// bytes choose, whole and cut into reads where the next 4 say: never a panic; the
/// same body, outcome and rest either way; never more body bytes than the input held
/// nor than the limit; and a body it decodes, encoded again by the server's chunk
/// encoder in other chunks, decodes to the same bytes and rest.
pub fn chunked(data: &[u8]) {
    let (knobs, rest) = data.split_at(data.len().min(2));
    let max_body = knobs.first().map_or(4096, |&b| u64::from(b) * 16);
    let max_trailers = knobs.get(1).map_or(4096, |&b| usize::from(b) * 4);
    let (cuts, stream) = cut(rest);
    let whole = dechunk(stream, &[], max_body, max_trailers);
    assert_eq!(whole, dechunk(stream, &cuts, max_body, max_trailers));
    let (outcome, body, rest) = whole;
    assert!(body.len() <= stream.len(), "more body than input");
    assert!(body.len() as u64 <= max_body, "max_body passed");
    if outcome == Ok(true) {
        let mut wire = BytesMut::new();
        for piece in pieces(&body, &cuts) {
            chunk(&mut wire, piece);
        }
        last_chunk(&mut wire);
        wire.extend_from_slice(&rest);
        let again = dechunk(&wire, &[], max_body, max_trailers);
        assert_eq!(again, (Ok(true), body, rest), "encoded as {wire:?}");
    }
}

/// What a chunked body decodes to, read in the pieces `cuts` make: whether it is
/// complete (or why it is refused), its data, and the bytes after it when complete.
fn dechunk(
    stream: &[u8],
    cuts: &[usize],
    max_body: u64,
    max_trailers: usize,
) -> (Result<bool, ParseError>, Vec<u8>, Vec<u8>) {
    let mut decoder = ChunkedDecoder::new();
    let (mut src, mut body) = (BytesMut::new(), BytesMut::new());
    let mut fed = 0;
    for piece in pieces(stream, cuts) {
        src.extend_from_slice(piece);
        fed += piece.len();
        match decoder.decode(&mut src, &mut body, max_body, max_trailers) {
            Ok(false) => {}
            Ok(true) => {
                src.extend_from_slice(&stream[fed..]);
                return (Ok(true), body.to_vec(), src.to_vec());
            }
            Err(e) => return (Err(e), body.to_vec(), Vec::new()),
        }
    }
    (Ok(false), body.to_vec(), Vec::new())
}

/// The fixed body of the connection target's `GET /`.
const FIXED: &[u8] = b"fixed";

/// The body of the connection target's `GET /big`: a few of them pipelined pass the
/// answers a connection buffers before it writes.
static BIG: [u8; 48 * 1024] = [b'b'; 48 * 1024];

/// Answers a connection buffers before it writes them (`conn.rs`'s `WRITE_FLUSH`).
const WRITE_FLUSH: usize = 64 * 1024;

/// Bytes a connection may hold for a client that sent `sent`: the answers it buffers
/// before writing, and the one answer past them, in a buffer that may have doubled
/// (docs/security.md, issue 15); what any connection holds (its read buffer's first
/// reservation, a request, an error page: some 25 KiB measured); and a few times what
/// the client sent — never what it announced, up to the 8 MiB `max_body`: a body's
/// buffer grows as bytes arrive.
fn held_bound(sent: usize) -> usize {
    2 * (WRITE_FLUSH + BIG.len()) + 64 * 1024 + 8 * sent
}

/// Serves `data` (cut into reads where its first 4 bytes say) on one connection of
/// the real connection code over loopback TCP, to an app with a fixed `GET /` (202),
/// a 48 KiB `GET /big` (203) and an `/echo` of the body (201: statuses the server
/// never answers of itself):
/// never a panic; the bytes the server holds stay within [`held_bound`] of what it was
/// sent; and the answers are what the decoder's reading of the stream calls for
/// ([`Expected`]).
///
/// # Panics
///
/// Also when the target's global allocator does not report to [`held`].
pub fn connection(data: &[u8]) {
    let (cuts, stream) = cut(data);
    let wire = RIG.with(|rig| rig.exchange(&pieces(stream, &cuts)));
    let peak = held::peak();
    assert!(peak > 0, "the target's allocator reports nothing to held");
    let bound = held_bound(stream.len());
    assert!(
        peak <= bound,
        "held {peak} bytes (bound {bound}): {stream:?}"
    );
    let expected = Expected::of(stream);
    let answers = answers(&wire, |at| expected.is_head(at));
    expected.check(&answers, stream, &wire);
}

/// The answers a stream calls for, from the reference decoder's reading of it.
struct Expected {
    readings: Vec<Reading>,
    /// How many of them are answered: the server reads no further than a request
    /// after which it closes.
    kept: usize,
    /// The status of the refusal answered after them, if any.
    refusal: Option<u16>,
    /// Whether the server closes after the last answer.
    closes: bool,
}

impl Expected {
    fn of(stream: &[u8]) -> Self {
        let (readings, refusal) = readings_with(stream, &[], &Rig::limits());
        let closing = readings.iter().position(|r| !r.keep_alive);
        let refusal = refusal.filter(|_| closing.is_none());
        Self {
            kept: closing.map_or(readings.len(), |at| at + 1),
            closes: closing.is_some() || refusal.is_some(),
            readings,
            refusal,
        }
    }

    /// Whether the `n`th answer is to a HEAD.
    fn is_head(&self, n: usize) -> bool {
        self.readings.get(n).is_some_and(|r| r.method == "HEAD")
    }

    /// Checks one answer per request kept, then the refusal with its status; each
    /// app answer's body; and that only the last answer announces a close.
    fn check(&self, answers: &[Answer], stream: &[u8], wire: &[u8]) {
        let count = self.kept + usize::from(self.refusal.is_some());
        assert_eq!(
            answers.len(),
            count,
            "{stream:?} read as {:?}, {:?}; answered {:?}",
            self.readings,
            self.refusal,
            String::from_utf8_lossy(wire)
        );
        for (answer, reading) in answers.iter().zip(&self.readings) {
            check_answer(answer, reading);
        }
        if let (Some(status), Some(last)) = (self.refusal, answers.last()) {
            assert_eq!(last.status, status, "the refusal of {stream:?}");
        }
        for (at, answer) in answers.iter().enumerate() {
            let closes = self.closes && at + 1 == count;
            assert_eq!(answer.close, closes, "answer {at} of {count}: {stream:?}");
        }
    }
}

/// Checks that an answer of the app's carries what its request asked for: `GET /`
/// and `GET /big` their bodies, `/echo` the request's body (a HEAD's, none).
fn check_answer(answer: &Answer, reading: &Reading) {
    let asked: &[u8] = match answer.status {
        202 => FIXED,
        203 => &BIG,
        201 => &reading.body,
        _ => return,
    };
    let want = if reading.method == "HEAD" {
        &[][..]
    } else {
        asked
    };
    assert_eq!(answer.body, want, "answer to {reading:?}");
}

/// One answer as the client read it.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Whether it says `Connection: close`.
    close: bool,
    body: Vec<u8>,
}

/// Splits what a client read into answers, leaving out interim (1xx) ones;
/// `head_only(n)` says whether the `n`th answers a HEAD (whose length is not sent).
fn answers(mut wire: &[u8], head_only: impl Fn(usize) -> bool) -> Vec<Answer> {
    let mut out = Vec::new();
    while !wire.is_empty() {
        let mut fields = [httparse::EMPTY_HEADER; 32];
        let mut res = httparse::Response::new(&mut fields);
        let Ok(httparse::Status::Complete(len)) = res.parse(wire) else {
            panic!("not an answer: {:?}", String::from_utf8_lossy(wire));
        };
        let value = |name: &str| {
            let field = res
                .headers
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(name));
            field.map(|f| f.value)
        };
        let close = value("connection").is_some_and(|v| v.eq_ignore_ascii_case(b"close"));
        let length =
            value("content-length").and_then(|v| std::str::from_utf8(v).ok()?.parse().ok());
        let status = res.code.unwrap_or_default();
        wire = &wire[len..];
        if status < 200 {
            continue;
        }
        let length = match head_only(out.len()) {
            true => 0,
            false => length.expect("every answer here has a Content-Length"),
        };
        assert!(length <= wire.len(), "an answer cut short");
        let (body, rest) = wire.split_at(length);
        out.push(Answer {
            status,
            close,
            body: body.to_vec(),
        });
        wire = rest;
    }
    out
}

/// What the connection target's global allocator reports: bytes allocated less bytes
/// freed on this thread while the server's task is being polled, and the most that
/// ever was, since the last [`connection`]. Frees of the server's bytes outside its
/// polls go uncounted, so the count errs high.
pub mod held {
    use std::cell::Cell;
    use std::future::Future;

    thread_local! {
        static SERVING: Cell<bool> = const { Cell::new(false) };
        static HELD: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    /// Notes `bytes` allocated (negative: freed) on this thread.
    pub fn note(bytes: isize) {
        if SERVING.get() {
            let held = HELD.get() + bytes;
            HELD.set(held);
            PEAK.set(PEAK.get().max(held));
        }
    }

    /// The most the server held during the last connection, in bytes.
    pub(super) fn peak() -> usize {
        usize::try_from(PEAK.get()).unwrap_or(0)
    }

    /// Starts counting anew.
    pub(super) fn reset() {
        HELD.set(0);
        PEAK.set(0);
    }

    /// Counts what is allocated while `serving` is polled as the server's.
    pub(super) fn polled<F: Future>(serving: F) -> impl Future<Output = F::Output> {
        let mut serving = Box::pin(serving);
        std::future::poll_fn(move |cx| {
            SERVING.set(true);
            let out = serving.as_mut().poll(cx);
            SERVING.set(false);
            out
        })
    }
}

thread_local! {
    /// One runtime, listener and server side for every run on this thread: each run
    /// costs a connection, not a runtime.
    static RIG: Rig = Rig::new();
}

/// A current-thread runtime with a `LocalSet` (as on a loop), a loopback listener, and
/// the server's side of HTTP/1.1 serving the target's app. Its side is a thread
/// model's (`Host::Thread`): no date ticker task, and no shelf to take away a
/// connection idle a second.
struct Rig {
    runtime: tokio::runtime::Runtime,
    local: tokio::task::LocalSet,
    listener: TcpListener,
    server: Rc<<Http1 as Protocol>::Local>,
}

impl Rig {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
        listener.set_nonblocking(true).expect("non-blocking");
        let listener = {
            let _in = runtime.enter();
            TcpListener::from_std(listener).expect("registered")
        };
        let app = App::new()
            .get("/", inline(|| (StatusCode::ACCEPTED, FIXED)))
            .get(
                "/big",
                inline(|| (StatusCode::NON_AUTHORITATIVE_INFORMATION, &BIG[..])),
            )
            .any(
                "/echo",
                |body: Bytes| async move { (StatusCode::CREATED, body) },
            );
        // HTTP/1.1 alone: HTTP/2's preface, and the silent close of a first line that
        // may be a broken one, are not what the reference decoder reads.
        let mut config = Config {
            limits: Self::limits(),
            ..Config::default()
        };
        config.http2.enabled = false;
        let http1 = Http1::new(Arc::new(app), &config);
        let server = http1.local(Host::Thread);
        Self {
            runtime,
            local: tokio::task::LocalSet::new(),
            listener,
            server,
        }
    }

    /// The server's limits, and so the reference decoder's: the defaults.
    fn limits() -> Limits {
        Limits::default()
    }

    /// Connects, writes `reads` one at a time (yielding to the server between them),
    /// closes the writing side, and returns all the server answered.
    fn exchange(&self, reads: &[&[u8]]) -> Vec<u8> {
        self.local.block_on(&self.runtime, async {
            let addr = self.listener.local_addr().expect("an address");
            let (client, accepted) = tokio::join!(TcpStream::connect(addr), self.listener.accept());
            let (mut client, (stream, peer)) =
                (client.expect("connect"), accepted.expect("accept"));
            client.set_nodelay(true).expect("nodelay");
            stream.set_nodelay(true).expect("nodelay");
            held::reset();
            let serving = held::polled(self.serve(stream, peer));
            let server = tokio::task::spawn_local(serving);
            let wire = talk(&mut client, reads).await;
            server.await.expect("the connection's task");
            drop(client);
            // tokio frees a closed socket's registration on the driver's next turn:
            // taken now, a run frees what it allocated (but for the thread's bounded
            // caches), which spares libFuzzer a leak check after every run (it made
            // runs ten times slower).
            tokio::task::yield_now().await;
            wire
        })
    }

    /// Serves `stream` as a thread would, from the start to its close: a connection the
    /// thread hands back (it waited 100 ms for a request) is served again at once, as
    /// the waiting room would once the request came.
    fn serve(
        &self,
        stream: TcpStream,
        peer: std::net::SocketAddr,
    ) -> impl std::future::Future<Output = ()> + use<> {
        let server = self.server.clone();
        let now = tokio::time::Instant::now();
        let progress = Progress {
            served: 0,
            read: BytesMut::new(),
            since: now,
            due: now + Config::default().timeouts.header,
        };
        let visit = stream.into_std().map(|stream| Visit {
            stream: crate::transport::Parked::accepted(stream, None),
            peer,
            progress,
        });
        async move {
            let mut left = visit.map_or(Left::Closed, Left::Waiting);
            while let Left::Waiting(next) = left {
                left = server.serve_visit(next).await;
            }
        }
    }
}

/// Writes `reads` to `client` and reads its answers until the server closes.
async fn talk(client: &mut TcpStream, reads: &[&[u8]]) -> Vec<u8> {
    let (mut rx, mut tx) = client.split();
    let write = async {
        for read in reads.iter().filter(|r| !r.is_empty()) {
            // A refusal closes the connection: what follows it may find it closed.
            if tx.write_all(read).await.is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
        let _ = tx.shutdown().await;
    };
    let mut wire = Vec::new();
    let (_, read) = tokio::join!(write, rx.read_to_end(&mut wire));
    read.expect("the answers read to the end");
    wire
}
