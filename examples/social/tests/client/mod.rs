//! The API as the tests call it: requests through Proscenium's own client, members,
//! uploads, and a feed WebSocket spoken in raw frames.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use proscenium::client::Client;
use serde_json::{Value, json};

use crate::common::Social;

/// A request through Proscenium's own client: the status and the body as JSON
/// (`Null` when empty).
pub(crate) fn call(
    client: &Client,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let request = http::Request::builder().method(method).uri(url);
    answered(client, request, token, "application/json", body)
}

/// Sends `request` with `body` (as `token`'s, when given): the status and the body
/// of the answer as JSON (`Null` when empty).
fn answered(
    client: &Client,
    mut request: http::request::Builder,
    token: Option<&str>,
    content_type: &str,
    body: Bytes,
) -> (u16, Value) {
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    let answer = client.send_blocking(request).unwrap();
    let json = serde_json::from_slice(answer.body()).unwrap_or(Value::Null);
    (answer.status().as_u16(), json)
}

/// Signs `name` up and logs in; returns the token.
pub(crate) fn member(client: &Client, social: &Social, name: &str) -> String {
    let form =
        json!({"name": name, "email": format!("{name}@example.org"), "password": "correct horse"});
    assert_eq!(
        call(client, "POST", &social.url("/users"), None, Some(form)).0,
        201
    );
    let (status, session) = call(
        client,
        "POST",
        &social.url("/sessions"),
        None,
        Some(json!({"name": name, "password": "correct horse"})),
    );
    assert_eq!(status, 200);
    session["token"].as_str().unwrap().to_owned()
}

/// A `multipart/form-data` body of `files`, and its content type.
pub(crate) fn multipart(files: &[(&str, Vec<u8>)]) -> (String, Bytes) {
    let boundary = "proscenium-test-boundary";
    let mut body = Vec::new();
    for (name, bytes) in files {
        body.extend(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").bytes());
        body.extend(bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").bytes());
    (
        format!("multipart/form-data; boundary={boundary}"),
        Bytes::from(body),
    )
}

/// Uploads `files` as `token`'s: the status and the answer as JSON.
pub(crate) fn upload(
    client: &Client,
    social: &Social,
    token: &str,
    files: &[(&str, Vec<u8>)],
) -> (u16, Value) {
    let (content_type, body) = multipart(files);
    let request = http::Request::post(social.url("/pictures"));
    answered(client, request, Some(token), &content_type, body)
}

/// Ana's two pictures, `one.png` and `two.png`, uploaded with her `token`.
pub(crate) fn two_pictures(client: &Client, social: &Social, token: &str) -> Value {
    let png = || crate::common::image(2, 2, image::ImageFormat::Png);
    let (status, pictures) = upload(
        client,
        social,
        token,
        &[("one.png", png()), ("two.png", png())],
    );
    assert_eq!(status, 201);
    pictures
}

/// A connection that has sent `request`, its reads waiting 60 s at most: the margin
/// of a machine busy with the whole suite.
pub(crate) fn sent(social: &Social, request: &[u8]) -> TcpStream {
    let mut socket = TcpStream::connect(social.addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    socket.write_all(request).unwrap();
    socket
}

/// A raw WebSocket on `/feed`, past its handshake.
pub(crate) fn feed_socket(social: &Social) -> TcpStream {
    let mut socket = sent(social, b"GET /feed HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0];
        socket.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    socket
}

/// The next text message on a feed socket, as JSON.
pub(crate) fn feed_message(socket: &mut TcpStream) -> Value {
    let mut head = [0; 2];
    socket.read_exact(&mut head).unwrap();
    assert_eq!(head[0], 0x81, "a whole text frame");
    let len = match head[1] {
        126 => {
            let mut len = [0; 2];
            socket.read_exact(&mut len).unwrap();
            usize::from(u16::from_be_bytes(len))
        }
        len => usize::from(len),
    };
    let mut payload = vec![0; len];
    socket.read_exact(&mut payload).unwrap();
    serde_json::from_slice(&payload).unwrap()
}
