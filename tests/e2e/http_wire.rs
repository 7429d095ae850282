//! HTTP/1.1 on the wire: exact bytes for pipelining, persistence, chunked bodies,
//! 100-continue, HEAD, request-target forms, and panicking handlers.

use std::time::Duration;

use proscenium::{App, Body, Bytes, Request, StatusCode, blocking, inline};

use crate::support::{self, Client};

fn app() -> App {
    App::new()
        .get(
            "/path/*rest",
            inline(|req: Request| req.uri().path().to_owned()),
        )
        .post(
            "/len",
            inline(|body: Bytes| {
                format!("{} bytes: {}", body.len(), String::from_utf8_lossy(&body))
            }),
        )
        .post("/ignore", inline(|| "ignored"))
        .get(
            "/stream",
            inline(|| {
                let chunks =
                    ["one", "two", "three"].map(|s| Ok::<_, std::io::Error>(Bytes::from(s)));
                Body::from_stream(futures_util::stream::iter(chunks))
            }),
        )
        .get(
            "/panic/inline",
            inline(|| -> &'static str { panic!("inline handler failed") }),
        )
        .get("/panic/async", || async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            panic!("async handler failed after an await");
            #[allow(unreachable_code)]
            ""
        })
        .get(
            "/panic/blocking",
            blocking(|| -> &'static str { panic!("blocking handler failed") }),
        )
        .put("/only-put", inline(|| StatusCode::NO_CONTENT))
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    let batch: String = (0..10)
        .map(|i| format!("GET /path/{i} HTTP/1.1\r\nHost: t\r\n\r\n"))
        .collect();
    client.send(batch);
    for i in 0..10 {
        assert_eq!(client.response().text(), format!("/path/{i}"));
    }
}

#[test]
fn answers_behind_a_slow_one_still_come_in_order() {
    let app = app().get("/slow", || async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        "slow"
    });
    let server = support::start(app);
    let mut client = Client::connect(server.local_addr());
    client.send("GET /path/a HTTP/1.1\r\nHost: t\r\n\r\nGET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /path/b HTTP/1.1\r\nHost: t\r\n\r\n");
    let texts: Vec<String> = (0..3).map(|_| client.response().text()).collect();
    assert_eq!(texts, ["/path/a", "slow", "/path/b"]);
}

#[test]
fn the_simplest_response_is_exactly_these_bytes() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    client.send("GET /path/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let raw = String::from_utf8(client.read_to_close()).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let lines: Vec<&str> = head.split("\r\n").collect();
    assert_eq!(lines[0], "HTTP/1.1 200 OK");
    assert_eq!(lines[1], "content-type: text/plain; charset=utf-8");
    assert_eq!(lines[2], "server: proscenium");
    let date = lines[3].strip_prefix("date: ").unwrap();
    assert_eq!(date.len(), 29, "IMF-fixdate");
    assert!(date.ends_with(" GMT"));
    let id = lines[4].strip_prefix("x-request-id: ").unwrap();
    assert_eq!(id.len(), 16, "sixteen hex digits");
    assert_eq!(&lines[5..], ["content-length: 7", "connection: close"]);
    assert_eq!(body, "/path/x");
}

/// Issue 14: the server wrote its own field names capitalised (`Server`) and the
/// app's and the static files' in lower case (`etag`).
#[test]
fn issue_14_every_field_name_goes_out_in_lower_case() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "file").unwrap();
    let app = app().get("/tagged", inline(|| ([("ETag", "\"v1\"")], "tagged")));
    let server = support::start_with(app, |c| c.root = Some(dir.path().to_owned()));
    // The answer to `path` on its own connection, its date and request id masked.
    let raw = |path: &str| {
        let mut client = Client::connect(server.local_addr());
        client.send(format!(
            "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        ));
        let raw = String::from_utf8(client.read_to_close()).unwrap();
        let at = raw.find("\r\ndate: ").expect("a date field") + 8;
        let raw = format!("{}<date>{}", &raw[..at], &raw[at + 29..]);
        let at = raw.find("\r\nx-request-id: ").expect("a request id") + 16;
        format!("{}<id>{}", &raw[..at], &raw[at + 16..])
    };
    assert_eq!(
        raw("/tagged"),
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\netag: \"v1\"\r\n\
         server: proscenium\r\ndate: <date>\r\nx-request-id: <id>\r\ncontent-length: 6\r\n\
         connection: close\r\n\r\ntagged"
    );
    assert_eq!(
        raw("/stream"),
        "HTTP/1.1 200 OK\r\nserver: proscenium\r\ndate: <date>\r\nx-request-id: <id>\r\n\
         transfer-encoding: chunked\r\nconnection: close\r\n\r\n\
         3\r\none\r\n3\r\ntwo\r\n5\r\nthree\r\n0\r\n\r\n"
    );
    let file = raw("/a.txt");
    let (head, _) = file.split_once("\r\n\r\n").unwrap();
    for line in head.split("\r\n").skip(1) {
        let name = line.split_once(':').unwrap().0;
        assert_eq!(name, name.to_ascii_lowercase(), "{head}");
    }
}

#[test]
fn persistence_follows_version_and_connection() {
    let server = support::start(app());
    let addr = server.local_addr();
    let mut client = Client::connect(addr);
    client.get("/path/1").response();
    assert_eq!(
        client.get("/path/2").response().text(),
        "/path/2",
        "1.1 persists by default"
    );

    let mut client = Client::connect(addr);
    let res = client
        .send("GET /path/1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .response();
    assert_eq!(res.header("connection"), Some("close"));
    assert!(client.is_closed_within(Duration::from_secs(2)));

    let mut client = Client::connect(addr);
    let res = client.send("GET /path/1 HTTP/1.0\r\n\r\n").response();
    assert_eq!(res.header("connection"), Some("close"));
    assert!(client.is_closed_within(Duration::from_secs(2)));

    let mut client = Client::connect(addr);
    let res = client
        .send("GET /path/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .response();
    assert_eq!(res.header("connection"), Some("keep-alive"));
    let res = client
        .send("GET /path/2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .response();
    assert_eq!(res.text(), "/path/2");
}

#[test]
fn a_chunked_body_arrives_dechunked() {
    let server = support::start(app());
    let res = support::exchange(
        server.local_addr(),
        "POST /len HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: dropped\r\n\r\n",
    );
    assert_eq!(res.text(), "11 bytes: hello world");
}

#[test]
fn a_streamed_body_goes_out_chunked_or_until_close() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    client.send("GET /stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let raw = String::from_utf8(client.read_to_close()).unwrap();
    assert!(raw.contains("transfer-encoding: chunked\r\n"), "{raw}");
    assert!(
        raw.ends_with("\r\n\r\n3\r\none\r\n3\r\ntwo\r\n5\r\nthree\r\n0\r\n\r\n"),
        "{raw}"
    );

    let mut client = Client::connect(server.local_addr());
    client.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let raw = String::from_utf8(client.read_to_close()).unwrap();
    assert!(!raw.contains("chunked"), "{raw}");
    assert!(
        raw.contains("connection: close\r\n"),
        "no length, so the close delimits the body"
    );
    assert!(raw.ends_with("\r\n\r\nonetwothree"), "{raw}");
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let server = support::start_with(app(), |c| c.limits.max_body = 100);
    let mut client = Client::connect(server.local_addr());
    client
        .send("POST /len HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    let interim = client.response();
    assert_eq!(interim.status, 100);
    client.send("hello");
    assert_eq!(client.response().text(), "5 bytes: hello");

    let mut client = Client::connect(server.local_addr());
    let res = client
        .send(
            "POST /len HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 500\r\n\r\n",
        )
        .response();
    assert_eq!(res.status, 413, "too large: refused without 100");
}

#[test]
fn head_answers_have_headers_and_no_body() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    client.send(
        "HEAD /path/abc HTTP/1.1\r\nHost: t\r\n\r\nGET /path/next HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let head = client.response_to(true);
    assert_eq!(
        (head.status, head.header("content-length")),
        (200, Some("9"))
    );
    assert_eq!(client.response().text(), "/path/next");
}

#[test]
fn an_ignored_body_is_drained_before_the_next_request() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    client.send("POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 29\r\n\r\nGET /path/smuggled HTTP/1.1\r\nGET /path/real HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.response().text(), "ignored");
    assert_eq!(client.response().text(), "/path/real");
}

#[test]
fn absolute_form_routes_by_path_and_options_asterisk_answers() {
    let server = support::start(app());
    let addr = server.local_addr();
    let res = support::exchange(
        addr,
        "GET http://example.com/path/abs?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
    );
    assert_eq!(res.text(), "/path/abs");
    let res = support::exchange(addr, "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(res.status, 200);
    assert!(res.header("allow").is_some_and(|a| a.contains("GET")));
}

#[test]
fn a_panicking_handler_costs_its_client_a_500_and_nothing_else() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    for kind in ["inline", "async", "blocking"] {
        let res = client.get(&format!("/panic/{kind}")).response();
        assert_eq!(res.status, 500, "{kind}");
        assert_eq!(
            client.get("/path/after").response().text(),
            "/path/after",
            "same connection goes on after {kind}"
        );
    }
    assert_eq!(support::get(server.local_addr(), "/path/other").status, 200);
}

#[test]
fn unknown_paths_and_methods_get_404_and_405() {
    let server = support::start(app());
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/nowhere").status, 404);
    let res = support::exchange(addr, "DELETE /only-put HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((res.status, res.header("allow")), (405, Some("PUT")));
    let res = support::exchange(addr, "DELETE /path/x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(res.header("allow"), Some("GET, HEAD"));
}

#[test]
fn error_pages_are_html_for_browsers_and_text_otherwise() {
    let server = support::start(app());
    let addr = server.local_addr();
    let html = support::exchange(
        addr,
        "GET /nowhere HTTP/1.1\r\nHost: t\r\nAccept: text/html,*/*\r\n\r\n",
    );
    assert_eq!(
        html.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(html.text().contains("<h1>404 Not Found</h1>"));
    let text = support::get(addr, "/nowhere");
    assert_eq!(
        text.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(text.text().starts_with("404 Not Found"));
    let server_error = support::get(addr, "/panic/inline");
    assert!(server_error.text().starts_with("500 Internal Server Error"));
}
