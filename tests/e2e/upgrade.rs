//! Switching protocols: a handler answers `101` through `http::upgrade`, the connection
//! writes the head and becomes the next protocol's, the bytes the client sent after
//! its request included — under every model.

use std::time::Duration;

use proscenium::http::{Upgraded, upgrade};
use proscenium::{App, inline};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{self, Client};

/// Sends back whatever comes, until the client closes.
async fn echo(upgraded: Upgraded) {
    let (mut stream, first) = upgraded.into_parts();
    if stream.write_all(&first).await.is_err() {
        return;
    }
    let mut buf = [0; 1024];
    while let Ok(n @ 1..) = stream.read(&mut buf).await {
        if stream.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

fn echo_app() -> App {
    App::new()
        .get("/", inline(|| "hi"))
        .get("/echo", inline(|| upgrade("echo", echo)))
}

#[test]
fn an_upgraded_connection_speaks_the_next_protocol_from_the_bytes_after_its_request() {
    let server = support::start(echo_app());
    let addr = server.local_addr();
    let mut client = Client::connect(addr);
    client
        .send("GET /echo HTTP/1.1\r\nHost: t\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\nhello");
    let switched = client.response();
    assert_eq!(switched.status, 101);
    assert_eq!(switched.header("upgrade"), Some("echo"));
    assert_eq!(switched.header("connection"), Some("upgrade"));
    assert_eq!(switched.header("content-length"), None);
    assert_eq!(client.read_bytes(5), b"hello", "sent with the request");
    for word in ["world", "GET / HTTP/1.1\r\n\r\n"] {
        client.send(word);
        assert_eq!(
            client.read_bytes(word.len()),
            word.as_bytes(),
            "not HTTP any more"
        );
    }
    // The server goes on serving the others meanwhile.
    assert_eq!(support::get(addr, "/").text(), "hi");
    assert!(client.is_open_after(Duration::from_millis(100)));
}
