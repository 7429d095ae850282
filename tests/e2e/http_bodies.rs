//! Request bodies read as a stream (`BodyStream`) and as `multipart/form-data`
//! (`Multipart`), over raw HTTP/1.1 (with a length and chunked) and HTTP/2: chunks in
//! order as they arrive, the limits (`max_body`, the body timeout, the `multipart_*`
//! settings), `100 Continue` sent only once the handler reads, malformed bodies, an
//! early answer, and the memory a 50 MiB upload costs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use proscenium::app::{BodyStream, Multipart, MultipartError};
use proscenium::extract::TypedHeader;
use proscenium::{App, inline};

use crate::http_memory::{CHILD_ENV, ChildServer, MIB, assert_grew_less_than, peak_rss};
use crate::support::h2::{H2, request};
use crate::support::{self, Client};

/// The boundary of the multipart bodies these tests send.
const BOUNDARY: &str = "X-BOUNDARY-7f3a";

/// A routes whose `/count` counts the calls that reach it in `calls`.
fn app(calls: Arc<AtomicUsize>) -> App {
    App::new()
        .post("/count", move |body: BodyStream| {
            calls.fetch_add(1, Ordering::Relaxed);
            async move { count(body).await }
        })
        .post("/first", |body: BodyStream| async move {
            let first = body.into_data_stream().next().await;
            format!("first {}", first.map_or(0, |c| c.unwrap().len()))
        })
        .post(
            "/typed",
            |_: TypedHeader<proscenium::headers::ContentType>, body: BodyStream| count(body),
        )
        .post("/form", |form: Multipart| fields(form))
        .get("/", inline(|| "root"))
}

/// Answers how many bytes came, whether in chunks of at most 64 KiB, and their sum
/// modulo 2^32.
async fn count(body: BodyStream) -> String {
    let mut chunks = body.into_data_stream();
    let (mut len, mut largest, mut sum) = (0usize, 0usize, 0u32);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.expect("the body arrives whole");
        len += chunk.len();
        largest = largest.max(chunk.len());
        sum = chunk.iter().fold(sum, |s, &b| s.wrapping_add(u32::from(b)));
    }
    let within = if largest <= 64 * 1024 {
        "within"
    } else {
        "past"
    };
    format!("{len} bytes in chunks {within} 64 KiB, sum {sum}")
}

/// Answers one line per field: its name, file name, type, and length or text.
async fn fields(mut form: Multipart) -> Result<String, MultipartError> {
    let mut lines = Vec::new();
    while let Some(field) = form.next_field().await? {
        let name = field.name().unwrap_or_default().to_owned();
        let line = match field.file_name().map(str::to_owned) {
            Some(file) => {
                let kind = field.content_type().unwrap_or_default().to_owned();
                format!("{name} {file} {kind} {} bytes", field.bytes().await?.len())
            }
            None => format!("{name}={}", field.text().await?),
        };
        lines.push(line);
    }
    Ok(lines.join("\n"))
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn sum(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0u32, |s, &b| s.wrapping_add(u32::from(b)))
}

/// A multipart body of a text field `title` and a file field `picture` of `file`.
fn form_body(file: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nA cat\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"cat.png\"\r\n\
         Content-Type: image/png\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// A `POST /form` of `body` as multipart with a length, on a connection of its own.
fn post_form(addr: std::net::SocketAddr, body: &[u8]) -> support::Response {
    let mut raw = format!(
        "POST /form HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    support::exchange(addr, raw)
}

#[test]
fn a_chunked_upload_reaches_a_streaming_handler_whole_in_order_in_chunks_of_64_kib_at_most() {
    let server = support::start(app(Arc::default()));
    let body = pattern(200 * 1024);
    let mut client = Client::connect(server.local_addr());
    client.send("POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for piece in body.chunks(30_000) {
        client.send(format!("{:x}\r\n", piece.len()));
        client.send(piece);
        client.send("\r\n");
    }
    client.send("0\r\n\r\n");
    let expected = format!("204800 bytes in chunks within 64 KiB, sum {}", sum(&body));
    assert_eq!(client.response().text(), expected);
    // The same with a length, on the same connection.
    client.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 204800\r\n\r\n");
    client.send(&body);
    assert_eq!(client.response().text(), expected);
}

#[test]
fn a_body_past_max_body_gets_413_announced_or_while_it_streams() {
    support::in_process("what its handlers record");
    let calls = Arc::new(AtomicUsize::new(0));
    let server = support::start_with(app(calls.clone()), |c| c.limits.max_body = 64 * 1024);
    let addr = server.local_addr();
    let mut client = Client::connect(addr);
    client.send("POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for _ in 0..3 {
        client.send(format!("{:x}\r\n", 30_000));
        client.send(pattern(30_000));
        client.send("\r\n");
    }
    let res = client.response();
    assert_eq!(res.status, 413);
    assert_eq!(res.header("connection"), Some("close"));
    // The streaming handler ran, and was dropped with its answer unsent.
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    let announced = support::exchange(
        addr,
        "POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 65537\r\n\r\n",
    );
    assert_eq!(announced.status, 413);
    assert_eq!(calls.load(Ordering::Relaxed), 1, "refused before routing");
    assert_eq!(support::get(addr, "/").text(), "root");
}

#[test]
fn a_streamed_body_reaches_its_handler_before_it_has_all_arrived() {
    let server = support::start(app(Arc::default()));
    let mut client = Client::connect(server.local_addr());
    client.send("POST /first HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    // Answered with five bytes of ten sent: the handler had its first chunk as it came.
    let first = client.response().text();
    let n: usize = first.strip_prefix("first ").unwrap().parse().unwrap();
    assert!((1..=5).contains(&n), "{first}");
    // The rest of the answered body is drained; the connection goes on.
    client.send("world");
    assert_eq!(client.get("/").response().text(), "root");
    // A handler that reads one chunk of a large body and answers: the same.
    client.send("POST /first HTTP/1.1\r\nHost: t\r\nContent-Length: 204800\r\n\r\n");
    client.send(pattern(200 * 1024));
    let first = client.response().text();
    let n: usize = first.strip_prefix("first ").unwrap().parse().unwrap();
    assert!((1..=64 * 1024).contains(&n), "{first}");
    assert_eq!(client.get("/").response().text(), "root");
}

#[test]
fn continue_is_sent_once_the_handler_reads_and_never_to_a_refused_request() {
    let server = support::start(app(Arc::default()));
    let addr = server.local_addr();
    let mut client = Client::connect(addr);
    client.send(
        "POST /count HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    );
    assert_eq!(
        client.read_past(b"\r\n\r\n"),
        b"HTTP/1.1 100 Continue\r\n\r\n"
    );
    client.send("hello");
    let expected = format!("5 bytes in chunks within 64 KiB, sum {}", sum(b"hello"));
    assert_eq!(client.response().text(), expected);
    // Refused by a head extractor before the body is asked for: no `100`, and the
    // connection closes rather than wait for a body that will not come.
    let mut client = Client::connect(addr);
    client.send(
        "POST /typed HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    );
    let res = client.response();
    assert_eq!(res.status, 400, "{}", res.text());
    assert_eq!(res.header("connection"), Some("close"));
    assert!(client.is_closed_within(Duration::from_secs(30)));
}

#[test]
fn a_streamed_body_that_stops_arriving_gets_408() {
    support::in_process("what its handlers record");
    let calls = Arc::new(AtomicUsize::new(0));
    let server = support::start_with(app(calls.clone()), |c| {
        c.timeouts.body = Duration::from_millis(500);
    });
    let mut client = Client::connect(server.local_addr());
    client.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    let res = client.response();
    assert_eq!(res.status, 408, "{}", res.text());
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!(support::get(server.local_addr(), "/").text(), "root");
}

#[test]
fn an_http2_upload_reaches_streaming_and_multipart_handlers_under_the_limits() {
    // Under the thread models an HTTP/2 stream's handler runs on a request thread:
    // the limits must reach it there too.
    let server = support::start_with(app(Arc::default()), |c| c.limits.multipart_fields = 2);
    let mut h2 = H2::connect(server.local_addr());
    let body = pattern(600 * 1024);
    let res = h2.send(request("POST", "/count"), Bytes::from(body.clone()));
    assert_eq!(
        res.text(),
        format!("614400 bytes in chunks within 64 KiB, sum {}", sum(&body))
    );
    let form = || {
        let mut form = request("POST", "/form");
        let kind = format!("multipart/form-data; boundary={BOUNDARY}");
        form.headers_mut()
            .insert("content-type", kind.parse().unwrap());
        form
    };
    let res = h2.send(form(), Bytes::from(form_body(&pattern(1000))));
    assert_eq!(
        res.text(),
        "title=A cat\npicture cat.png image/png 1000 bytes"
    );
    let mut three_fields =
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n")
            .into_bytes();
    three_fields.extend_from_slice(&form_body(b"png"));
    assert_eq!(h2.send(form(), Bytes::from(three_fields)).status, 413);
}

#[test]
fn multipart_with_a_file_and_text_fields_is_read_field_by_field() {
    let server = support::start(app(Arc::default()));
    let res = post_form(server.local_addr(), &form_body(&pattern(100 * 1024)));
    assert_eq!(res.status, 200);
    assert_eq!(
        res.text(),
        "title=A cat\npicture cat.png image/png 102400 bytes"
    );
}

#[test]
fn malformed_multipart_gets_400_with_the_reason() {
    let server = support::start(app(Arc::default()));
    let addr = server.local_addr();
    let mut cut = form_body(b"png");
    cut.truncate(cut.len() - BOUNDARY.len() - 8);
    let res = post_form(addr, &cut);
    assert_eq!(res.status, 400);
    assert!(
        res.text().contains("malformed multipart body"),
        "{}",
        res.text()
    );
    let res = support::exchange(
        addr,
        "POST /form HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(res.status, 400);
    assert!(res.text().contains("multipart/form-data"), "{}", res.text());
    assert_eq!(support::get(addr, "/").text(), "root");
}

#[test]
fn multipart_past_its_field_count_or_field_size_gets_413() {
    let few_fields = support::start_with(app(Arc::default()), |c| {
        c.limits.multipart_fields = 1;
    });
    let res = post_form(few_fields.local_addr(), &form_body(b"png"));
    assert_eq!(res.status, 413);
    assert!(res.text().contains("more than 1 fields"), "{}", res.text());
    let small_fields = support::start_with(app(Arc::default()), |c| {
        c.limits.multipart_field = 1024;
    });
    let res = post_form(small_fields.local_addr(), &form_body(&pattern(2048)));
    assert_eq!(res.status, 413);
    let small_body = support::start_with(app(Arc::default()), |c| {
        c.limits.multipart_body = 1024;
    });
    let res = post_form(small_body.local_addr(), &form_body(&pattern(2048)));
    assert_eq!(res.status, 413);
}

/// The size of the file the memory test uploads.
const UPLOAD: usize = 50 * 1024 * 1024;

/// The server of [`a_50_mib_multipart_upload_is_read_in_bounded_memory`]'s child
/// process: `/upload` reads the file field chunk by chunk and answers its length.
#[test]
#[ignore = "the server of a memory test's child process"]
fn child() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    let app =
        App::new()
            .get("/", inline(|| "root"))
            .post("/upload", |mut form: Multipart| async move {
                let mut len = 0;
                while let Some(mut field) = form.next_field().await? {
                    while let Some(chunk) = field.chunk().await? {
                        len += chunk.len();
                    }
                }
                Ok::<_, MultipartError>(format!("{len} bytes"))
            });
    let server = support::start_with(app, |c| {
        c.limits.max_body = 64 * MIB;
        c.limits.multipart_field = 64 * MIB;
    });
    println!("listening on {}", server.local_addr());
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
}

/// A 50 MiB file uploaded as multipart streams to `Multipart` as it arrives, read a
/// chunk at a time: the memory the server must keep (`RssAnon` + `RssShmem`) grows by
/// less than 24 MiB.
#[test]
fn a_50_mib_multipart_upload_is_read_in_bounded_memory() {
    let server = ChildServer::start_test("http_bodies::child", "suite", None);
    assert_eq!(
        Client::connect(server.addr).get("/").response().text(),
        "root"
    );
    let before = server.rss();
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"big\"\r\n\r\n"
    );
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let server_addr = server.addr;
    let upload = std::thread::spawn(move || {
        let mut client = Client::connect(server_addr);
        client.send(format!(
            "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n\
             Content-Length: {}\r\n\r\n{head}",
            head.len() + UPLOAD + tail.len()
        ));
        let piece = vec![b'z'; MIB as usize];
        for _ in 0..UPLOAD / piece.len() {
            client.send(&piece);
        }
        client.send(&tail);
        client.response().text()
    });
    let mut during = before;
    while !upload.is_finished() {
        during = during.max(peak_rss(&server, Duration::from_millis(100)));
    }
    assert_eq!(upload.join().unwrap(), format!("{UPLOAD} bytes"));
    assert_grew_less_than(24 * MIB, before, during, "a 50 MiB upload was read");
}
