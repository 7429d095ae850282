//! The social network over real sockets, against SQLite and against a real
//! PostgreSQL the test starts: the API end to end (Program 4.1's 201/409/500),
//! uploads of several pictures with their thumbnails, likes reaching the live feed
//! (WebSocket and server-sent events), the owner's push service and the Mailman's
//! outbox — and two replicas sharing likes through Redis.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proscenium::client::Client;
use proscenium::testing::{Postgres, Redis};
use serde_json::{Value, json};

use crate::common::{Social, image};

/// A request through Proscenium's own client: the status and the body as JSON
/// (`Null` when empty).
fn call(
    client: &Client,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http::Request::builder().method(method).uri(url);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let request = request
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let answer = client.send_blocking(request).unwrap();
    let json = serde_json::from_slice(answer.body()).unwrap_or(Value::Null);
    (answer.status().as_u16(), json)
}

/// Signs `name` up and logs in; returns the token.
fn member(client: &Client, social: &Social, name: &str) -> String {
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
fn multipart(files: &[(&str, Vec<u8>)]) -> (String, Bytes) {
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

/// A push service of the test's own: what it is posted, kept.
fn push_service() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/push", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&got);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let kept = Arc::clone(&kept);
            std::thread::spawn(move || serve_push(conn, &kept));
        }
    });
    (url, got)
}

fn serve_push(conn: TcpStream, kept: &Mutex<Vec<Value>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        kept.lock()
            .unwrap()
            .push(serde_json::from_slice(&body).unwrap());
        conn.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
    }
}

/// Waits up to 10 s for `check`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let began = Instant::now();
    while !check() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{what} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A raw WebSocket on `/feed`, past its handshake.
fn feed_socket(social: &Social) -> TcpStream {
    let mut socket = TcpStream::connect(social.addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    socket
        .write_all(b"GET /feed HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        .unwrap();
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
fn feed_message(socket: &mut TcpStream) -> Value {
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

/// The whole API against the database `url` names (SQLite in the data directory
/// when `None`).
fn the_api_end_to_end(url: Option<String>) {
    let data = tempfile::tempdir().unwrap();
    let (push, pushed) = push_service();
    let env: Vec<_> = url
        .into_iter()
        .map(|url| ("PROSCENIUM_DATABASE_URL", url))
        .collect();
    let social = Social::start(data.path(), Some(&push), &env);
    let client = Client::new();
    // Program 4.1: created, taken, refused.
    let ana = member(&client, &social, "ana");
    let again = json!({"name": "ana", "email": "x@example.org", "password": "something long"});
    assert_eq!(
        call(&client, "POST", &social.url("/users"), None, Some(again)),
        (409, json!({"error": "the name is taken"}))
    );
    assert_eq!(
        call(
            &client,
            "POST",
            &social.url("/users"),
            None,
            Some(json!({"name": "a b", "email": "", "password": ""}))
        )
        .0,
        400
    );
    let wrong = json!({"name": "ana", "password": "not it at all"});
    assert_eq!(
        call(&client, "POST", &social.url("/sessions"), None, Some(wrong)).0,
        401
    );
    let bob = member(&client, &social, "bob");
    assert_eq!(
        call(
            &client,
            "POST",
            &social.url("/users/ana/followers"),
            Some(&bob),
            None
        )
        .0,
        204
    );
    assert_eq!(
        call(
            &client,
            "GET",
            &social.url("/users/ana/followers"),
            None,
            None
        )
        .1,
        json!(["bob"])
    );
    // Two pictures in one upload; a thumbnail of each, made after the answer.
    let (content_type, body) = multipart(&[
        ("sunset.png", image(640, 480, image::ImageFormat::Png)),
        ("harbour.jpg", image(300, 900, image::ImageFormat::Jpeg)),
    ]);
    let upload = http::Request::post(social.url("/pictures"))
        .header("authorization", format!("Bearer {ana}"))
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    let answer = client.send_blocking(upload).unwrap();
    assert_eq!(answer.status(), 201);
    let pictures: Value = serde_json::from_slice(answer.body()).unwrap();
    let ids: Vec<i64> = pictures
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    for (id, size) in ids.iter().zip([(200, 150), (67, 200)]) {
        eventually("a thumbnail", || {
            let answer = client
                .send_blocking(
                    http::Request::get(social.url(&format!("/thumbs/{id}")))
                        .body(Bytes::new())
                        .unwrap(),
                )
                .unwrap();
            answer.status() == 200
                && image::load_from_memory(answer.body())
                    .is_ok_and(|t| (t.width(), t.height()) == size)
        });
    }
    let bad = multipart(&[("notes.txt", b"not an image".to_vec())]);
    let refused = http::Request::post(social.url("/pictures"))
        .header("authorization", format!("Bearer {ana}"))
        .header("content-type", bad.0)
        .body(bad.1)
        .unwrap();
    assert_eq!(client.send_blocking(refused).unwrap().status(), 400);
    // A like: counted once, on the feed, and to the owner's devices.
    let mut socket = feed_socket(&social);
    let like = social.url(&format!("/picture/{}/likes", ids[0]));
    // The socket joins the Feeder as it opens; like until the feed carries one.
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let (liked, news) = loop {
        let liked = call(&client, "POST", &like, Some(&bob), None);
        let mut head = [0; 1];
        if socket.peek(&mut head).is_ok() {
            socket
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            break (liked, feed_message(&mut socket));
        }
    };
    assert_eq!(liked.0, 201);
    assert_eq!(liked.1["likes"], 1, "liked again, counted once");
    assert_eq!(
        (
            news["by"].as_str(),
            news["owner"].as_str(),
            news["likes"].as_i64()
        ),
        (Some("bob"), Some("ana"), Some(1))
    );
    assert_eq!(
        call(
            &client,
            "POST",
            &social.url("/picture/99999/likes"),
            Some(&bob),
            None
        )
        .0,
        404
    );
    assert_eq!(call(&client, "POST", &like, None, None).0, 401);
    let listed = call(
        &client,
        "GET",
        &social.url("/users/ana/pictures"),
        None,
        None,
    )
    .1;
    assert_eq!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["likes"].as_i64().unwrap())
            .sum::<i64>(),
        1
    );
    let bobs = call(&client, "GET", &social.url("/users/bob/likes"), None, None).1;
    assert_eq!(bobs[0]["id"], ids[0]);
    eventually("the push service is told", || {
        pushed.lock().unwrap().iter().any(|p| {
            p["to"] == "ana"
                && p["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("bob likes your picture")
        })
    });
    // The Mailman's welcome, then (a second later) the reminder, for each.
    let outbox = || -> Vec<PathBuf> {
        std::fs::read_dir(data.path().join("outbox"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "eml"))
            .collect()
    };
    eventually("four mails", || outbox().len() == 4);
    let mails: Vec<String> = outbox()
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    assert_eq!(
        mails
            .iter()
            .filter(|m| m.contains("Subject: Welcome"))
            .count(),
        2
    );
    assert_eq!(
        mails
            .iter()
            .filter(|m| m.contains("Subject: We miss you"))
            .count(),
        2
    );
}

#[test]
fn the_api_end_to_end_on_sqlite() {
    the_api_end_to_end(None);
}

#[test]
fn the_api_end_to_end_on_postgresql() {
    let postgres = Postgres::start();
    the_api_end_to_end(Some(postgres.url()));
}

/// The store failing is a 500 with its cause in the log, and the server goes on.
#[test]
fn a_store_failure_is_a_500_with_its_cause_logged() {
    let data = tempfile::tempdir().unwrap();
    let social = Social::start(data.path(), None, &[]);
    let client = Client::new();
    member(&client, &social, "ana");
    // The users table goes, behind the server's back.
    let database = format!("sqlite://{}", data.path().join("social.db").display());
    sqlx::any::install_default_drivers();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = sqlx::AnyPool::connect(&database).await.unwrap();
        sqlx::query("ALTER TABLE users RENAME TO gone")
            .execute(&pool)
            .await
            .unwrap();
    });
    let form = json!({"name": "bob", "email": "bob@example.org", "password": "correct horse"});
    let (status, body) = call(&client, "POST", &social.url("/users"), None, Some(form));
    assert_eq!(
        (status, body),
        (500, json!({"error": "the server could not do that"}))
    );
    eventually("the cause is logged", || {
        let log = social.log.lock().unwrap();
        log.contains("the store failed") && log.contains("no such table: users")
    });
    assert_eq!(
        call(
            &client,
            "GET",
            &social.url("/users/ana/followers"),
            None,
            None
        )
        .0,
        500
    );
    assert_eq!(
        client
            .send_blocking(
                http::Request::get(social.url("/"))
                    .body(Bytes::new())
                    .unwrap()
            )
            .unwrap()
            .status(),
        200
    );
}

/// Two replicas behind nothing but Redis (and one PostgreSQL): a like on A reaches
/// a feed socket on B, and an event stream on B.
#[test]
fn two_replicas_share_their_likes_through_redis() {
    let (redis, postgres) = (Redis::start(), Postgres::start());
    let env = [
        ("PROSCENIUM_DATABASE_URL", postgres.url()),
        ("PROSCENIUM_FEEDS_REDIS", redis.url()),
    ];
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Social::start(data_a.path(), None, &env);
    let b = Social::start(data_b.path(), None, &env);
    let client = Client::new();
    let ana = member(&client, &a, "ana");
    let (content_type, body) = multipart(&[("one.png", image(20, 20, image::ImageFormat::Png))]);
    let upload = http::Request::post(a.url("/pictures"))
        .header("authorization", format!("Bearer {ana}"))
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    let picture: Value =
        serde_json::from_slice(client.send_blocking(upload).unwrap().body()).unwrap();
    let id = picture[0]["id"].as_i64().unwrap();
    let mut on_b = feed_socket(&b);
    on_b.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let began = Instant::now();
    let news = loop {
        // A like on A; B's feed has it once B's socket and subscription are up.
        let bob_likes = call(
            &client,
            "POST",
            &a.url(&format!("/picture/{id}/likes")),
            Some(&ana),
            None,
        );
        assert_eq!(bob_likes.0, 201);
        let mut head = [0; 1];
        if on_b.peek(&mut head).is_ok() {
            on_b.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            break feed_message(&mut on_b);
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "B's feed never had A's like"
        );
    };
    assert_eq!(
        (news["picture"].as_i64(), news["by"].as_str()),
        (Some(id), Some("ana"))
    );
}
