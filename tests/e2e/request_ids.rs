//! Request ids (`[request_id]`, issue 36): every answer carries one in `x-request-id`,
//! the access log line ends with it and the handler sees it; refusals get one too; a
//! trusted proxy's own id is kept and anyone else's replaced; HTTP/2 answers carry it.

use proscenium::http::RequestId;
use proscenium::{App, Config, inline};

use crate::support::h2::H2;
use crate::support::{self, Client};

/// Answers with the id the handler was given.
fn app() -> App {
    App::new().get("/id", inline(|id: RequestId| id.to_string()))
}

fn is_made(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[test]
fn every_answer_carries_an_id_the_handler_and_the_access_log_share() {
    support::in_process("its log");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let server = support::start_with(app(), |c| c.log = Some(log.clone()));
    let mut client = Client::connect(server.local_addr());
    let first = client.get("/id").response();
    let second = client.get("/id").response();
    let missing = client.get("/missing").response();
    let ids: Vec<&str> = [&first, &second, &missing]
        .iter()
        .map(|res| res.header("x-request-id").expect("an x-request-id"))
        .collect();
    assert!(ids.iter().all(|id| is_made(id)), "{ids:?}");
    assert_eq!(first.text(), ids[0]);
    assert_eq!(second.text(), ids[1]);
    assert_ne!(ids[0], ids[1]);
    let lines = support::log_lines(&log, 3);
    for (line, id) in lines.iter().zip(&ids) {
        assert!(line.ends_with(&format!(" \"{id}\"")), "{line}");
    }
}

#[test]
fn a_refused_request_gets_an_id_in_its_answer_and_its_log_line() {
    support::in_process("its log");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let server = support::start_with(app(), |c| c.log = Some(log.clone()));
    let res = support::exchange(server.local_addr(), "G@T / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(res.status, 400);
    let id = res.header("x-request-id").expect("an x-request-id");
    assert!(is_made(id), "{id}");
    let lines = support::log_lines(&log, 1);
    assert!(lines[0].contains("\"-\" 400 "), "{}", lines[0]);
    assert!(lines[0].ends_with(&format!(" \"{id}\"")), "{}", lines[0]);
}

#[test]
fn a_trusted_proxys_id_is_kept_and_an_untrusted_peers_replaced() {
    let ask = "GET /id HTTP/1.1\r\nHost: t\r\nX-Request-Id: edge-7f3a\r\n\r\n";
    let trusting = support::start_with(app(), |c| {
        c.request_id.trust = vec!["127.0.0.0/8".parse().unwrap()];
    });
    let res = support::exchange(trusting.local_addr(), ask);
    assert_eq!(res.header("x-request-id"), Some("edge-7f3a"));
    assert_eq!(res.text(), "edge-7f3a");
    let wary = support::start_with(app(), |c| {
        c.request_id.trust = vec!["10.0.0.0/8".parse().unwrap()];
    });
    let res = support::exchange(wary.local_addr(), ask);
    let id = res.header("x-request-id").expect("an x-request-id");
    assert!(is_made(id), "{id}");
    assert_eq!(res.text(), id);
}

#[test]
fn an_answer_over_http2_carries_the_id() {
    let server = support::start(app());
    let mut h2 = H2::connect(server.local_addr());
    let answer = h2.get("/id");
    let id = answer.headers["x-request-id"].to_str().unwrap();
    assert!(is_made(id), "{id}");
    assert_eq!(answer.text(), id);
}

#[test]
fn with_request_ids_off_no_answer_carries_one() {
    let server = support::start_with(app(), |c: &mut Config| c.request_id.enabled = false);
    let res = support::get(server.local_addr(), "/id");
    assert_eq!(res.status, 200);
    assert_eq!(res.header("x-request-id"), None);
    // The handler still gets an id, made for it alone.
    assert!(is_made(&res.text()));
}
