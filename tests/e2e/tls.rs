//! HTTPS over real sockets, a rustls client trusting a CA of the test's own: TLS 1.3
//! and ALPN, requests on kept-alive connections, bodies and files both ways, SNI,
//! certificates reloaded while connections stay open, the plain listener's redirect
//! and HSTS, WebSocket over TLS, and what hostile clients send to the TLS port —
//! under every model.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use proscenium::tls::{CertFiles, PlainSpec};
use proscenium::ws::WebSocketUpgrade;
use proscenium::{App, Config, ServerHandle};

use crate::support::tls::{
    Authority, Files, TlsStream, connect, presented_names, write_atomically,
};
use crate::support::{self, Client};
use crate::websocket::{TEXT, echo_on, frame, read_frame};

fn app() -> App {
    App::new()
        .get("/", || async { "over TLS" })
        .post("/length", |body: proscenium::Bytes| async move {
            body.len().to_string()
        })
        .get("/ws", |ws: WebSocketUpgrade| async move { echo_on(ws) })
}

/// Serves `app()` over TLS with `files`, and `more` configuration.
fn serve(files: &Files, more: impl FnOnce(&mut Config)) -> ServerHandle {
    support::start_with(app(), |config| {
        config.tls.cert = Some(files.cert.clone());
        config.tls.key = Some(files.key.clone());
        more(config);
    })
}

/// Waits up to a busy machine's margin for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn issue34_https_speaks_tls13_with_alpn_and_serves_bodies_files_and_kept_alive_requests() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost", "127.0.0.1"]);
    let root = tempfile::tempdir().unwrap();
    let file: Vec<u8> = (0..300 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(root.path().join("big.bin"), &file).unwrap();
    let server = serve(&files, |c| {
        c.root = Some(root.path().to_owned());
        c.tls.hsts = 31_536_000;
    });
    let mut client = ca.connect(server.local_addr(), "localhost");
    let conn = &client.stream().conn;
    assert_eq!(
        conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    assert_eq!(conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let res = client.get("/").response();
    assert_eq!((res.status, res.text().as_str()), (200, "over TLS"));
    assert_eq!(
        res.header("strict-transport-security"),
        Some("max-age=31536000")
    );
    // Past a thread model's hand-back (100 ms) and a loop's shelf wait (1 s): the
    // session goes with the connection to the waiting room or the shelf, and back.
    std::thread::sleep(Duration::from_millis(1_500));
    let body = vec![b'b'; 200 * 1024];
    client.send(format!(
        "POST /length HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    client.send(&body);
    assert_eq!(client.response().text(), body.len().to_string());
    let res = client.get("/big.bin").response();
    assert_eq!(res.status, 200);
    assert!(res.body == file, "the file arrives whole over TLS");
    // Pipelined: both answers, in order.
    client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\nGET /none HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.response().status, 200);
    assert_eq!(client.response().status, 404);
}

/// Posts a 200 KB body and fetches `file` as `/big.bin` over `client`: each many
/// records long.
fn carries_bodies_both_ways(client: &mut Client<TlsStream>, file: &[u8]) {
    let body = vec![b'b'; 200 * 1024];
    client.send(format!(
        "POST /length HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    client.send(&body);
    assert_eq!(client.response().text(), body.len().to_string());
    let res = client.get("/big.bin").response();
    assert_eq!(res.status, 200);
    assert!(res.body == file, "the file arrives whole over TLS");
}

#[test]
fn issue34_tls12_and_a_tls13_key_update_carry_bodies_both_ways_across_many_records() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let root = tempfile::tempdir().unwrap();
    let file: Vec<u8> = (0..300 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(root.path().join("big.bin"), &file).unwrap();
    let server = serve(&files, |c| c.root = Some(root.path().to_owned()));
    let tls12 = ca.client_of(&[b"http/1.1"], &[&rustls::version::TLS12]);
    let mut old = connect(server.local_addr(), "localhost", tls12);
    assert_eq!(
        old.stream().conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    carries_bodies_both_ways(&mut old, &file);
    // New keys for the client's records, and a request that the server change its own
    // (which it must send before its next answer), between two requests.
    let mut new = ca.connect(server.local_addr(), "localhost");
    assert_eq!(new.get("/").response().status, 200);
    new.stream_mut().conn.refresh_traffic_keys().unwrap();
    carries_bodies_both_ways(&mut new, &file);
}

#[test]
fn issue34_sni_picks_the_certificate_for_the_name_asked_and_the_first_for_others() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let first = ca.issue("first", &["localhost", "first.test"]);
    let second = ca.issue("second", &["second.test", "*.wild.test"]);
    let server = serve(&first, |c| {
        c.tls.certs = vec![CertFiles {
            cert: second.cert.clone(),
            key: second.key.clone(),
        }];
    });
    let names = |name: &str| {
        let mut client = ca.connect(server.local_addr(), name);
        assert_eq!(client.get("/").response().status, 200);
        presented_names(client.stream())
    };
    assert!(names("second.test").contains(&"second.test".to_owned()));
    assert!(names("a.wild.test").contains(&"*.wild.test".to_owned()));
    assert!(names("first.test").contains(&"first.test".to_owned()));
    assert!(names("localhost").contains(&"first.test".to_owned()));
}

#[test]
fn issue34_certificates_reload_when_their_files_change_without_dropping_a_connection() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost", "v1.test"]);
    let server = serve(&files, |_| {});
    let mut before = ca.connect(server.local_addr(), "localhost");
    assert_eq!(before.get("/").response().status, 200);
    let serves = |name: &str| {
        let mut client = ca.connect(server.local_addr(), "localhost");
        client.get("/").response();
        presented_names(client.stream()).contains(&name.to_owned())
    };
    assert!(serves("v1.test"));
    ca.issue("site", &["localhost", "v2.test"]);
    eventually("the new certificate is served", || serves("v2.test"));
    // The connection made before the change goes on.
    assert_eq!(before.get("/").response().status, 200);
    // A broken certificate is not taken: what was served is served on.
    write_atomically(&files.cert, "-----BEGIN CERTIFICATE-----\nnot base64\n");
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        serves("v2.test"),
        "the broken file left the old certificate in use"
    );
    assert_eq!(before.get("/").response().status, 200);
}

#[test]
fn issue34_the_plain_listener_redirects_to_https_and_sends_no_hsts() {
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let server = serve(&files, |c| {
        c.tls.hsts = 600;
        c.tls.plain = Some(PlainSpec {
            bind: "127.0.0.1:0".parse().unwrap(),
            serve: Default::default(),
        });
    });
    let plain = server.plain_addr().expect("a plain listener");
    let mut client = Client::connect(plain);
    client.send("GET /a/b?c=1 HTTP/1.1\r\nHost: localhost:80\r\n\r\n");
    let res = client.response();
    assert_eq!(res.status, 308);
    let https = server.local_addr().port();
    assert_eq!(
        res.header("location"),
        Some(format!("https://localhost:{https}/a/b?c=1").as_str())
    );
    assert_eq!(res.header("strict-transport-security"), None);
    client.send("GET / HTTP/1.1\r\n\r\n");
    assert_eq!(client.response().status, 400, "no host, no redirect");
}

#[test]
fn issue34_websocket_upgrades_and_echoes_over_tls() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let server = serve(&files, |_| {});
    let mut client = ca.connect(server.local_addr(), "localhost");
    client.send(
        "GET /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    );
    assert_eq!(client.response().status, 101);
    for size in [5, 70 * 1024] {
        let message = vec![b'w'; size];
        client.send(frame(true, TEXT, &message));
        assert_eq!(read_frame(&mut client), (true, TEXT, message));
    }
}

/// Whether the server closes `stream` within a busy machine's margin, reading (and
/// dropping) what it sends first.
fn closes(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match support::read_some(stream, &mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn issue34_hostile_bytes_on_the_tls_port_get_defined_answers_while_others_are_served() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let server = serve(&files, |c| c.timeouts.header = Duration::from_secs(1));
    let addr = server.local_addr();
    // Plain HTTP: a plain-text 400, as nginx answers it.
    let mut plain = Client::connect(addr);
    plain.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let answer = String::from_utf8(plain.read_to_close()).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(answer.contains("https://"));
    // A client that connects and never begins, or stops inside, its handshake: closed
    // at the header deadline.
    let mut silent = TcpStream::connect(addr).unwrap();
    let mut truncated = TcpStream::connect(addr).unwrap();
    truncated.write_all(&[22, 3, 1, 0, 200, 1, 0, 0]).unwrap();
    // Garbage that is no TLS record, and a record longer than TLS allows.
    let mut garbage = TcpStream::connect(addr).unwrap();
    garbage.write_all(&[0u8; 64]).unwrap();
    let mut huge = TcpStream::connect(addr).unwrap();
    huge.write_all(&[22, 3, 3, 0xff, 0xff]).unwrap();
    huge.write_all(&[0u8; 1024]).unwrap();
    // Meanwhile the server serves.
    let mut good = ca.connect(addr, "localhost");
    assert_eq!(good.get("/").response().status, 200);
    for (what, stream) in [
        ("a silent client", &mut silent),
        ("a truncated handshake", &mut truncated),
        ("garbage", &mut garbage),
        ("an over-long record", &mut huge),
    ] {
        assert!(closes(stream), "{what} is closed");
    }
    assert_eq!(good.get("/").response().status, 200);
}

#[test]
fn issue34_a_client_hello_past_what_tls_allows_is_refused_in_bounded_memory() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let server = serve(&files, |_| {});
    let mut stream = TcpStream::connect(server.local_addr()).unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    // A ClientHello announcing 16 MiB, sent in full-size records: the server must give
    // up long before the end (a handshake message is at most 64 KiB to rustls).
    let mut sent = 0usize;
    let mut record = vec![22, 3, 3, 0x40, 0x00];
    record.extend([1, 0xff, 0xff, 0xff]);
    record.resize(5 + 0x4000, 0);
    let refused = loop {
        if stream.write_all(&record).is_err() {
            break true;
        }
        sent += record.len();
        record.truncate(5);
        record.resize(5 + 0x4000, 0);
        if sent > 4 << 20 {
            break false;
        }
    };
    assert!(
        refused || closes(&mut stream),
        "refused before 4 MiB of ClientHello"
    );
    let mut good = ca.connect(server.local_addr(), "localhost");
    assert_eq!(good.get("/").response().status, 200);
}

#[test]
fn issue34_a_close_notify_closes_and_a_corrupt_record_gets_an_alert_while_others_are_served() {
    support::in_process("certificates made for this run");
    let ca = Authority::new();
    let files = ca.issue("site", &["localhost"]);
    let server = serve(&files, |_| {});
    let addr = server.local_addr();
    let mut leaving = ca.connect(addr, "localhost");
    assert_eq!(leaving.get("/").response().status, 200);
    leaving.stream_mut().conn.send_close_notify();
    leaving.stream_mut().flush().unwrap();
    assert!(leaving.is_closed_within(Duration::from_secs(60)));
    let mut corrupt = ca.connect(addr, "localhost");
    assert_eq!(corrupt.get("/").response().status, 200);
    // Application data that no key decrypts, under the client's session.
    let mut record = vec![23, 3, 3, 0, 40];
    record.extend([0x5a; 40]);
    corrupt.stream_mut().sock.write_all(&record).unwrap();
    let mut sink = [0u8; 256];
    let refused = loop {
        match std::io::Read::read(corrupt.stream_mut(), &mut sink) {
            Ok(0) => panic!("closed without an alert"),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    let alert = refused
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>());
    assert_eq!(
        alert,
        Some(&rustls::Error::AlertReceived(
            rustls::AlertDescription::BadRecordMac
        )),
        "{refused}"
    );
    let mut good = ca.connect(addr, "localhost");
    assert_eq!(good.get("/").response().status, 200);
}
