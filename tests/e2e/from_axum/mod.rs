//! docs/guide/from-axum.md's app — an axum app (routes, state, CORS and trace layers,
//! an async session middleware, a form login setting a cookie, a multipart upload),
//! `axum_app.rs`, and its port line by line, `app.rs` — each used as its users would:
//! the port under every model, the original on hyper, with the same requests and the
//! same answers expected.

mod app;
mod axum_app;

use std::net::SocketAddr;

use tower::ServiceExt;

use crate::support;

/// The guide shows both apps as they are compiled and tested here, word for word.
#[test]
fn the_guide_shows_both_apps_as_they_are_tested() {
    let guide = include_str!("../../../docs/guide/from-axum.md");
    let block = |file: &str| {
        let marker = format!("<!-- tests/e2e/from_axum/{file} -->\n```rust\n");
        let start = guide.find(&marker).expect("the guide marks the app") + marker.len();
        let end = start + guide[start..].find("```\n").expect("the block ends");
        &guide[start..end]
    };
    assert_eq!(block("axum_app.rs"), include_str!("axum_app.rs"));
    assert_eq!(block("app.rs"), include_str!("app.rs"));
}

/// Serves the axum original on hyper, on a thread of its own.
fn serve_axum() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum_app::app();
    std::thread::spawn(move || {
        crate::tower_layers::serve_with_hyper(listener, move || {
            let router = router.clone();
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                router.clone().oneshot(req.map(axum::body::Body::new))
            })
        });
    });
    addr
}

fn post(path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn the_ported_app_logs_in_takes_notes_and_uploads_behind_its_session_middleware() {
    support::in_process("uploads kept in a temporary directory of its own");
    let server = support::start(app::app());
    logs_in_takes_notes_and_uploads(server.local_addr());
}

#[test]
fn the_axum_original_answers_the_same() {
    let addr = serve_axum();
    logs_in_takes_notes_and_uploads(addr);
    answers_cors(addr);
}

#[test]
fn the_ported_app_answers_cors_as_tower_http_does() {
    let server = support::start(app::app());
    answers_cors(server.local_addr());
}

fn logs_in_takes_notes_and_uploads(addr: SocketAddr) {
    let listed = support::get(addr, "/notes");
    assert_eq!((listed.status, listed.text().as_str()), (200, "[]"));

    let anonymous = support::exchange(
        addr,
        post("/notes", "Content-Type: application/json\r\n", "\"hi\""),
    );
    assert_eq!(
        anonymous.status, 401,
        "the middleware refuses a request without a session"
    );

    let login = support::exchange(
        addr,
        post(
            "/login",
            "Content-Type: application/x-www-form-urlencoded\r\n",
            "name=ada",
        ),
    );
    assert_eq!(login.status, 303);
    assert_eq!(login.header("location"), Some("/notes"));
    let cookie = login.header("set-cookie").expect("a session cookie");
    assert!(cookie.starts_with("session=session-ada"), "{cookie}");

    let session = "Cookie: session=session-ada\r\n";
    let added = support::exchange(
        addr,
        post(
            "/notes",
            &format!("{session}Content-Type: application/json\r\n"),
            "\"hello\"",
        ),
    );
    assert_eq!(added.status, 201, "{}", added.text());
    let one = support::get(addr, "/notes/0");
    assert_eq!((one.status, one.text().as_str()), (200, "\"ada: hello\""));
    assert_eq!(support::get(addr, "/notes/7").status, 404);

    let form = "--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\ncat\r\n\
                --b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.png\"\r\n\r\n\
                12345\r\n--b--\r\n";
    let uploaded = support::exchange(
        addr,
        post(
            "/upload",
            &format!("{session}Content-Type: multipart/form-data; boundary=b\r\n"),
            form,
        ),
    );
    assert_eq!(
        (uploaded.status, uploaded.text().as_str()),
        (200, "title=3,file=5")
    );
    let forged = support::exchange(
        addr,
        post(
            "/upload",
            "Cookie: session=forged\r\nContent-Type: multipart/form-data; boundary=b\r\n",
            form,
        ),
    );
    assert_eq!(forged.status, 401);
}

fn answers_cors(addr: SocketAddr) {
    let preflight = support::exchange(
        addr,
        "OPTIONS /notes HTTP/1.1\r\nHost: t\r\nOrigin: https://example.com\r\n\
         Access-Control-Request-Method: POST\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(preflight.status, 200);
    assert!(
        preflight.header("access-control-allow-methods").is_some(),
        "{preflight:?}"
    );
    let simple = support::exchange(
        addr,
        "GET /notes HTTP/1.1\r\nHost: t\r\nOrigin: https://example.com\r\n\r\n",
    );
    assert_eq!(simple.status, 200);
    assert_eq!(simple.header("access-control-allow-origin"), Some("*"));
}
