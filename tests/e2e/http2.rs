//! HTTP/2 (issue 35): the same app over HTTP/2 as over HTTP/1.1 — in cleartext with
//! prior knowledge and over TLS by ALPN — under every model: routes, bodies both ways,
//! files, many streams at once on one connection, the limits, the access log, and a
//! graceful shutdown that lets the streams in flight finish.

use std::time::Duration;

use bytes::Bytes;
use proscenium::{App, Request, inline};

use crate::support::h2::{H2, request};
use crate::support::tls::Authority;
use crate::support::{self, Client};

fn app() -> App {
    App::new()
        .get("/", inline(|| "over HTTP/2"))
        .get(
            "/whole",
            inline(|req: Request| {
                let host = req
                    .headers()
                    .get("host")
                    .map(|h| h.to_str().unwrap().to_owned());
                format!(
                    "{} {} {:?}",
                    req.uri(),
                    host.unwrap_or_default(),
                    req.version()
                )
            }),
        )
        .post("/length", inline(|body: Bytes| body.len().to_string()))
        .get("/slow", || async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            "slow and whole"
        })
}

fn file_of(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn issue35_h2c_serves_routes_bodies_files_and_errors_as_http1_does() {
    let root = tempfile::tempdir().unwrap();
    let file = file_of(300 * 1024);
    std::fs::write(root.path().join("big.bin"), &file).unwrap();
    let server = support::start_with(app(), |c| c.root = Some(root.path().to_owned()));
    let mut h2 = H2::connect(server.local_addr());
    let res = h2.get("/");
    assert_eq!(
        (res.status.as_u16(), res.text().as_str()),
        (200, "over HTTP/2")
    );
    assert_eq!(res.headers["content-length"], "11");
    // The app sees the target in origin form and the host in `Host`, as over HTTP/1.1.
    assert_eq!(h2.get("/whole?a=1").text(), "/whole?a=1 t HTTP/2.0");
    let body = Bytes::from(vec![b'b'; 600 * 1024]);
    let res = h2.send(request("POST", "/length"), body.clone());
    assert_eq!(
        res.text(),
        body.len().to_string(),
        "a body past the window arrives whole"
    );
    let res = h2.get("/big.bin");
    assert_eq!(res.status, 200);
    assert!(res.body == file, "a file past the window arrives whole");
    let res = h2.send(request("HEAD", "/big.bin"), Bytes::new());
    assert_eq!(
        res.headers["content-length"],
        file.len().to_string().as_str()
    );
    assert!(res.body.is_empty(), "HEAD has no body");
    let res = h2.get("/none");
    assert_eq!(res.status, 404);
    assert!(!res.body.is_empty(), "an error page, as over HTTP/1.1");
}

#[test]
fn issue35_many_streams_on_one_connection_are_all_answered() {
    let server = support::start(app());
    let mut h2 = H2::connect(server.local_addr());
    let reqs = (0..60)
        .map(|i| match i % 3 {
            0 => (request("GET", "/slow"), Bytes::new()),
            1 => (
                request("POST", "/length"),
                Bytes::from(vec![b'x'; i * 1000]),
            ),
            _ => (request("GET", "/"), Bytes::new()),
        })
        .collect();
    for (i, res) in h2.all_at_once(reqs).into_iter().enumerate() {
        let expected = match i % 3 {
            0 => "slow and whole".to_owned(),
            1 => (i * 1000).to_string(),
            _ => "over HTTP/2".to_owned(),
        };
        assert_eq!(
            (res.status.as_u16(), res.text()),
            (200, expected),
            "stream {i}"
        );
    }
}

#[test]
fn issue35_https_agrees_on_h2_by_alpn_and_keeps_http1_for_clients_without_it() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let server = support::start_with(app(), |c| {
        c.tls.cert = Some(files.cert.clone());
        c.tls.key = Some(files.key.clone());
        c.tls.hsts = 600;
    });
    let mut h2 = H2::connect_tls(
        server.local_addr(),
        "localhost",
        ca.client(&[b"h2", b"http/1.1"]),
    );
    let res = h2.get("/whole");
    assert_eq!(res.text(), "/whole t HTTP/2.0");
    assert_eq!(res.headers["strict-transport-security"], "max-age=600");
    let mut http1 = ca.connect(server.local_addr(), "localhost");
    assert_eq!(
        http1.get("/whole").response().text(),
        "/whole test HTTP/1.1"
    );
}

#[test]
fn issue35_a_body_past_max_body_gets_413_and_the_connection_serves_on() {
    let server = support::start_with(app(), |c| c.limits.max_body = 64 * 1024);
    let mut h2 = H2::connect(server.local_addr());
    let res = h2.send(
        request("POST", "/length"),
        Bytes::from(vec![b'x'; 64 * 1024 + 1]),
    );
    assert_eq!(res.status, 413);
    assert_eq!(
        h2.get("/").text(),
        "over HTTP/2",
        "the connection serves on"
    );
}

#[test]
fn issue35_the_access_log_names_http2() {
    support::in_process("the access log it reads");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let server = support::start_with(app(), |c| c.log = Some(log.clone()));
    H2::connect(server.local_addr()).get("/whole");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text.lines().next() {
            break line.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "a line within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(line.contains("\"GET /whole HTTP/2.0\" 200 "), "{line}");
}

#[test]
fn issue35_shutdown_lets_the_streams_in_flight_finish() {
    let server = support::start(app());
    let h2 = H2::connect(server.local_addr());
    let send = h2.sender();
    let answer = h2.block_on(async move {
        let slow = tokio::spawn(crate::support::h2::exchange(
            send,
            request("GET", "/slow"),
            Bytes::new(),
        ));
        // The stream is in flight when shutdown begins.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let stopper = std::thread::spawn(move || server.shutdown());
        let answer = slow.await.expect("the exchange");
        stopper.join().expect("shutdown returns");
        answer
    });
    assert_eq!(
        (answer.status.as_u16(), answer.text().as_str()),
        (200, "slow and whole")
    );
}

#[test]
fn issue35_with_http2_off_the_preface_is_refused_as_http1_refuses_a_version() {
    let server = support::start_with(app(), |c| c.http2.enabled = false);
    let res = Client::connect(server.local_addr())
        .send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .response();
    assert_eq!(res.status, 505);
}
