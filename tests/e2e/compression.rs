//! Compression over the wire (issue 35): the coding the client's `Accept-Encoding`
//! ranks first, each decoding back to the original; what is never compressed; `Vary`;
//! streams compressed chunk by chunk; precompressed static siblings; HTTP/2 alike.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use proscenium::sse::{Event, Sse};
use proscenium::{App, Body, Bytes, StatusCode, inline};

use crate::support::{self, Client, Response};

/// A JSON document of some 20 KB that compresses well.
fn json() -> String {
    let items: Vec<String> = (0..400)
        .map(|i| format!("{{\"id\":{i},\"name\":\"item {i}\",\"tags\":[\"a\",\"b\"]}}"))
        .collect();
    format!("[{}]", items.join(","))
}

fn app() -> App {
    App::new()
        .get(
            "/json",
            inline(|| ([("content-type", "application/json")], json())),
        )
        .get("/small", inline(|| "x".repeat(100)))
        .get(
            "/png",
            inline(|| ([("content-type", "image/png")], vec![7u8; 20_000])),
        )
        .get(
            "/no-transform",
            inline(|| ([("cache-control", "public, no-transform")], json())),
        )
        .get(
            "/encoded",
            inline(|| ([("content-encoding", "gzip")], json())),
        )
        .get(
            "/vary",
            inline(|| ([("vary", "Origin"), ("etag", "\"v1\"")], json())),
        )
        .get(
            "/partial",
            inline(|| {
                (
                    StatusCode::PARTIAL_CONTENT,
                    [("content-range", "bytes 0-19999/40000")],
                    json(),
                )
            }),
        )
        .get(
            "/stream",
            inline(|| {
                let chunks = futures_util::stream::iter(
                    (0..50).map(|_| Ok::<_, std::io::Error>(Bytes::from(json()))),
                );
                ([("content-type", "text/plain")], Body::from_stream(chunks))
            }),
        )
        .get(
            "/events",
            inline(|| {
                let first = futures_util::stream::iter([Event::data("first event")]);
                // The stream then stays open: the event must not wait for its end.
                Sse::new(futures_util::StreamExt::chain(
                    first,
                    futures_util::stream::pending(),
                ))
                .keep_alive(None)
            }),
        )
}

fn request(addr: std::net::SocketAddr, path: &str, extra: &str) -> Response {
    support::exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n"),
    )
}

/// Decodes `data` in `coding`.
fn decode(coding: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "gzip" => flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .map(drop),
        "br" => brotli::Decompressor::new(data, 4096)
            .read_to_end(&mut out)
            .map(drop),
        "zstd" => zstd::stream::copy_decode(data, &mut out),
        other => panic!("no decoder for {other}"),
    }
    .expect("the body decodes");
    out
}

fn varies(res: &Response) -> bool {
    res.headers
        .iter()
        .any(|(k, v)| k == "vary" && v.to_ascii_lowercase().contains("accept-encoding"))
}

#[test]
fn issue35_each_coding_decodes_back_to_the_original() {
    let server = support::start(app());
    for coding in ["zstd", "br", "gzip"] {
        let res = request(
            server.local_addr(),
            "/json",
            &format!("Accept-Encoding: {coding}\r\n"),
        );
        assert_eq!(res.status, 200);
        assert_eq!(res.header("content-encoding"), Some(coding));
        assert!(varies(&res), "{coding}: {:?}", res.headers);
        let sent: usize = res.header("content-length").unwrap().parse().unwrap();
        assert!(sent < json().len() / 4, "{coding}: {sent} bytes");
        assert_eq!(decode(coding, &res.body), json().as_bytes(), "{coding}");
    }
}

#[test]
fn issue35_the_clients_weights_choose_and_ties_go_to_zstd_then_br_then_gzip() {
    let server = support::start(app());
    let cases = [
        ("gzip, deflate, br, zstd", Some("zstd")),
        ("gzip, br", Some("br")),
        ("gzip;q=1, br;q=0.5, zstd;q=0.4", Some("gzip")),
        ("br;q=0, *", Some("zstd")),
        ("*;q=0.5, gzip", Some("gzip")),
        ("x-gzip", Some("gzip")),
        ("gzip;q=0", None),
        ("identity", None),
        ("deflate, compress", None),
    ];
    for (accept, expected) in cases {
        let res = request(
            server.local_addr(),
            "/json",
            &format!("Accept-Encoding: {accept}\r\n"),
        );
        assert_eq!(res.header("content-encoding"), expected, "{accept}");
        assert!(varies(&res), "{accept}: Vary even when not compressed");
        let body = match expected {
            Some(coding) => decode(coding, &res.body),
            None => res.body,
        };
        assert_eq!(body, json().as_bytes(), "{accept}");
    }
    let res = request(server.local_addr(), "/json", "");
    assert_eq!(res.header("content-encoding"), None);
    assert!(varies(&res), "Vary without Accept-Encoding too");
}

#[test]
fn issue35_small_bodies_unlisted_types_and_no_transform_go_out_untouched() {
    let server = support::start(app());
    let accept = "Accept-Encoding: gzip, br, zstd\r\n";
    let small = request(server.local_addr(), "/small", accept);
    assert_eq!(small.header("content-length"), Some("100"));
    assert_eq!(small.header("content-encoding"), None);
    assert!(!varies(&small), "a small body is the same for every client");
    let png = request(server.local_addr(), "/png", accept);
    assert_eq!(png.body, vec![7u8; 20_000]);
    assert_eq!(png.header("content-encoding"), None);
    assert!(!varies(&png));
    let kept = request(server.local_addr(), "/no-transform", accept);
    assert_eq!(kept.header("content-encoding"), None);
    assert_eq!(kept.body, json().as_bytes());
    let encoded = request(server.local_addr(), "/encoded", accept);
    assert_eq!(encoded.header("content-encoding"), Some("gzip"));
    assert_eq!(encoded.body, json().as_bytes(), "encoded once only");
    let partial = request(server.local_addr(), "/partial", accept);
    assert_eq!(
        (partial.status, partial.header("content-encoding")),
        (206, None)
    );
}

#[test]
fn issue35_vary_is_merged_and_a_strong_etag_made_weak() {
    let server = support::start(app());
    let res = request(server.local_addr(), "/vary", "Accept-Encoding: gzip\r\n");
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    assert!(varies(&res));
    assert!(
        res.headers
            .iter()
            .any(|(k, v)| k == "vary" && v == "Origin")
    );
    assert_eq!(res.header("etag"), Some("W/\"v1\""));
    let identity = request(server.local_addr(), "/vary", "");
    assert_eq!(identity.header("etag"), Some("\"v1\""));
}

#[test]
fn issue35_range_requests_and_head_answers() {
    let server = support::start(app());
    let ranged = request(
        server.local_addr(),
        "/json",
        "Accept-Encoding: gzip\r\nRange: bytes=0-9\r\n",
    );
    assert_eq!(ranged.header("content-encoding"), None);
    assert_eq!(ranged.body, json().as_bytes());
    let mut client = Client::connect(server.local_addr());
    client.send("HEAD /json HTTP/1.1\r\nHost: test\r\nAccept-Encoding: br\r\n\r\n");
    let head = client.response_to(true);
    assert_eq!(head.header("content-encoding"), Some("br"));
    assert!(varies(&head));
    assert_eq!(
        head.header("content-length"),
        None,
        "its length is not known"
    );
    // The connection goes on after it.
    let next = client.get("/small").response();
    assert_eq!(next.status, 200);
}

/// Reads the next chunk of a chunked body (empty at its end).
fn next_chunk(client: &mut Client) -> Vec<u8> {
    let line = client.read_past(b"\r\n");
    let size = usize::from_str_radix(std::str::from_utf8(&line).unwrap().trim(), 16).unwrap();
    let chunk = client.read_bytes(size + 2);
    chunk[..size].to_vec()
}

/// A decoder written to piece by piece, its output shared.
fn stream_decoder(coding: &str, out: Rc<RefCell<Vec<u8>>>) -> Box<dyn Write> {
    struct Shared(Rc<RefCell<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Shared(out);
    match coding {
        "gzip" => Box::new(flate2::write::GzDecoder::new(sink)),
        "br" => Box::new(brotli::DecompressorWriter::new(sink, 4096)),
        "zstd" => Box::new(zstd::stream::write::Decoder::new(sink).unwrap()),
        other => panic!("no decoder for {other}"),
    }
}

#[test]
fn issue35_an_event_is_compressed_and_sent_before_its_stream_ends() {
    let server = support::start(app());
    for coding in ["zstd", "br", "gzip"] {
        let mut client = Client::connect(server.local_addr());
        client.send(format!(
            "GET /events HTTP/1.1\r\nHost: test\r\nAccept-Encoding: {coding}\r\n\r\n"
        ));
        let head = client.read_past(b"\r\n\r\n");
        let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
        assert!(
            head.contains(&format!("content-encoding: {coding}")),
            "{head}"
        );
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        let decoded = Rc::new(RefCell::new(Vec::new()));
        let mut decoder = stream_decoder(coding, decoded.clone());
        // The stream never ends: each chunk read must make progress to the event.
        while !String::from_utf8_lossy(&decoded.borrow()).contains("data: first event\n\n") {
            let chunk = next_chunk(&mut client);
            assert!(!chunk.is_empty(), "{coding}: the stream ended");
            decoder.write_all(&chunk).unwrap();
            decoder.flush().unwrap();
        }
    }
}

#[test]
fn issue35_a_streamed_body_is_compressed_as_it_streams() {
    let server = support::start(app());
    let res = request(server.local_addr(), "/stream", "Accept-Encoding: gzip\r\n");
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    assert_eq!(res.header("transfer-encoding"), Some("chunked"));
    assert_eq!(decode("gzip", &res.body), json().repeat(50).as_bytes());
}

/// A site with a small and a large stylesheet, and precompressed siblings: fresh for
/// `fresh.css`, older than the file for `stale.css`.
fn site() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let css = css();
    for name in ["fresh.css", "stale.css", "plain.css"] {
        std::fs::write(root.join(name), &css).unwrap();
    }
    std::fs::write(root.join("large.css"), css.repeat(40)).unwrap();
    std::fs::write(root.join("fresh.css.br"), b"BR-SIBLING").unwrap();
    std::fs::write(root.join("fresh.css.gz"), b"GZ-SIBLING").unwrap();
    std::fs::write(root.join("stale.css.gz"), b"STALE-SIBLING").unwrap();
    let past = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(root.join("stale.css.gz"))
        .unwrap()
        .set_modified(past)
        .unwrap();
    (dir, root)
}

fn css() -> String {
    (0..300)
        .map(|i| format!(".c{i} {{ color: #{i:06x}; margin: {i}px; }}\n"))
        .collect()
}

fn serve(root: &Path, configure: impl FnOnce(&mut proscenium::Config)) -> proscenium::ServerHandle {
    support::start_with(App::new(), |c| {
        c.root = Some(root.to_owned());
        configure(c);
    })
}

#[test]
fn issue35_precompressed_siblings_are_served_when_present_and_fresh() {
    let (_dir, root) = site();
    let server = serve(&root, |_| {});
    let addr = server.local_addr();
    let fresh = request(addr, "/fresh.css", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(fresh.body, b"BR-SIBLING");
    assert_eq!(fresh.header("content-encoding"), Some("br"));
    assert_eq!(
        fresh.header("content-type"),
        Some("text/css; charset=utf-8")
    );
    assert!(varies(&fresh));
    let gzip = request(addr, "/fresh.css", "Accept-Encoding: gzip\r\n");
    assert_eq!(gzip.body, b"GZ-SIBLING");
    // Stale, or absent: compressed from the file itself.
    for path in ["/stale.css", "/plain.css"] {
        let res = request(addr, path, "Accept-Encoding: gzip\r\n");
        assert_eq!(res.header("content-encoding"), Some("gzip"), "{path}");
        assert!(res.header("etag").unwrap().starts_with("W/"), "{path}");
        assert_eq!(decode("gzip", &res.body), css().as_bytes(), "{path}");
    }
    // Not accepted, or a range: the file.
    let identity = request(addr, "/fresh.css", "");
    assert_eq!(identity.body, css().as_bytes());
    let range = request(
        addr,
        "/fresh.css",
        "Accept-Encoding: br\r\nRange: bytes=0-4\r\n",
    );
    assert_eq!(
        (range.status, range.body.as_slice()),
        (206, &css().as_bytes()[..5])
    );
    assert_eq!(range.header("content-encoding"), None);
}

#[test]
fn issue35_a_large_file_is_compressed_as_it_is_sent() {
    let (_dir, root) = site();
    // No cache of compressed files: each answer is compressed as it goes.
    let server = serve(&root, |c| c.compression.cache_size = 0);
    let res = request(
        server.local_addr(),
        "/large.css",
        "Accept-Encoding: zstd\r\n",
    );
    assert_eq!(res.header("content-encoding"), Some("zstd"));
    assert_eq!(res.header("content-length"), None);
    assert_eq!(decode("zstd", &res.body), css().repeat(40).as_bytes());
}

#[test]
fn issue35_a_file_compressed_once_is_kept_until_it_changes() {
    support::in_process("a file it changes in a temporary directory of its own");
    let (_dir, root) = site();
    let server = serve(&root, |_| {});
    let addr = server.local_addr();
    let first = request(addr, "/large.css", "Accept-Encoding: br\r\n");
    assert_eq!(first.header("content-encoding"), Some("br"));
    assert!(
        first.header("content-length").is_some(),
        "kept whole, its length known"
    );
    assert_eq!(decode("br", &first.body), css().repeat(40).as_bytes());
    let again = request(addr, "/large.css", "Accept-Encoding: br\r\n");
    assert_eq!(again.body, first.body);
    let mut client = Client::connect(addr);
    client.send("HEAD /large.css HTTP/1.1\r\nHost: test\r\nAccept-Encoding: br\r\n\r\n");
    let head = client.response_to(true);
    assert_eq!(head.header("content-encoding"), Some("br"));
    assert_eq!(
        head.header("content-length"),
        first.header("content-length"),
        "HEAD of a kept file announces GET's length"
    );
    let changed = css().repeat(41);
    std::fs::write(root.join("large.css"), &changed).unwrap();
    let later = SystemTime::now() + Duration::from_secs(10);
    std::fs::File::options()
        .write(true)
        .open(root.join("large.css"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    let after = request(addr, "/large.css", "Accept-Encoding: br\r\n");
    assert_eq!(decode("br", &after.body), changed.as_bytes());
}

#[test]
fn issue35_configuration_turns_compression_and_siblings_off() {
    let (_dir, root) = site();
    let server = serve(&root, |c| {
        c.compression.enabled = false;
        c.compression.precompressed = false;
    });
    let res = request(
        server.local_addr(),
        "/fresh.css",
        "Accept-Encoding: gzip, br\r\n",
    );
    assert_eq!(res.header("content-encoding"), None);
    assert_eq!(res.body, css().as_bytes());
    assert!(!varies(&res));
}

#[test]
fn issue35_configured_levels_and_minimum_size_apply() {
    let (_dir, root) = site();
    let server = serve(&root, |c| {
        c.compression.min_size = 100_000;
        c.compression.types = vec!["application/json".into()];
    });
    let res = request(
        server.local_addr(),
        "/plain.css",
        "Accept-Encoding: gzip\r\n",
    );
    assert_eq!(res.header("content-encoding"), None, "below the minimum");
    let large = request(
        server.local_addr(),
        "/large.css",
        "Accept-Encoding: gzip\r\n",
    );
    assert_eq!(large.header("content-encoding"), None, "not a listed type");
}

#[test]
fn issue35_http2_answers_are_compressed_alike() {
    let server = support::start(app());
    let addr = server.local_addr();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let mut get = |path: &str, accept: &str| {
            let req = http::Request::get(format!("http://{addr}{path}"))
                .header("accept-encoding", accept)
                .body(())
                .unwrap();
            client.send_request(req, true).unwrap().0
        };
        let res = get("/json", "gzip, br").await.unwrap();
        assert_eq!(res.headers()["content-encoding"], "br");
        assert!(
            res.headers()["vary"]
                .to_str()
                .unwrap()
                .contains("accept-encoding")
        );
        let mut body = res.into_body();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            body.flow_control().release_capacity(chunk.len()).unwrap();
            bytes.extend_from_slice(&chunk);
        }
        assert_eq!(decode("br", &bytes), json().as_bytes());
        // An event stream: its first event decodes while the stream stays open.
        let res = get("/events", "gzip").await.unwrap();
        assert_eq!(res.headers()["content-encoding"], "gzip");
        let mut body = res.into_body();
        let decoded = Rc::new(RefCell::new(Vec::new()));
        let mut decoder = stream_decoder("gzip", decoded.clone());
        while !String::from_utf8_lossy(&decoded.borrow()).contains("data: first event\n\n") {
            let chunk = body.data().await.expect("the stream stays open").unwrap();
            body.flow_control().release_capacity(chunk.len()).unwrap();
            decoder.write_all(&chunk).unwrap();
            decoder.flush().unwrap();
        }
    });
}
