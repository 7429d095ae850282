//! The social network over real sockets, against SQLite and against a real
//! PostgreSQL the test starts: the API end to end (Program 4.1's 201/409/500),
//! uploads of several pictures with their thumbnails, likes reaching the live feed
//! (WebSocket and server-sent events), the owner's push service (over HTTPS, its CA
//! trusted through `[client] ca`) and the Mailman's outbox — and two replicas sharing
//! likes through Redis, plain or over TLS.

mod client;
mod common;

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proscenium::client::Client;
use proscenium::testing::{HttpsServer, Postgres, Redis, TestCa};
use serde_json::{Value, json};

use crate::client::{
    call, feed_message, feed_socket, member, multipart, sent, two_pictures, upload,
};
use crate::common::{Social, image};

/// A push service of the test's own, over HTTPS with a certificate from a CA of its
/// own — which the social trusts through `[client] ca` alone.
struct PushService {
    server: HttpsServer,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

impl PushService {
    fn start() -> Self {
        let (dir, ca) = (tempfile::tempdir().unwrap(), TestCa::new());
        Self {
            server: HttpsServer::start(&ca.leaf(&["localhost"])),
            ca: ca.write(dir.path()),
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("https://localhost:{}/push", self.server.addr().port())
    }

    /// The setting that makes the social trust its CA.
    fn trusted(&self) -> (&'static str, String) {
        ("PROSCENIUM_CLIENT_CA", self.ca.display().to_string())
    }

    /// What it was posted so far.
    fn pushed(&self) -> Vec<Value> {
        let received = self.server.received();
        received
            .iter()
            .map(|request| serde_json::from_slice(&request.body).unwrap())
            .collect()
    }
}

/// Waits up to 30 s (a machine busy with the whole suite) for `check`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let began = Instant::now();
    while !check() {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "{what} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The whole API against the database `url` names (SQLite in the data directory
/// when `None`).
fn the_api_end_to_end(url: Option<String>) {
    let data = tempfile::tempdir().unwrap();
    let push = PushService::start();
    let mut env: Vec<_> = url
        .into_iter()
        .map(|url| ("PROSCENIUM_DATABASE_URL", url))
        .collect();
    env.push(push.trusted());
    let social = Social::start(data.path(), Some(&push.url()), &env);
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
    // The feed socket opens before the upload: it has joined the Feeder by the time
    // the thumbnails are made, and the like it waits for is sent once.
    let mut socket = feed_socket(&social);
    // Two pictures in one upload; a thumbnail of each, made after the answer.
    let (status, pictures) = upload(
        &client,
        &social,
        &ana,
        &[
            ("sunset.png", image(640, 480, image::ImageFormat::Png)),
            ("harbour.jpg", image(300, 900, image::ImageFormat::Jpeg)),
        ],
    );
    assert_eq!(status, 201);
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
    let like = social.url(&format!("/picture/{}/likes", ids[0]));
    let liked = call(&client, "POST", &like, Some(&bob), None);
    let news = feed_message(&mut socket);
    assert_eq!(liked.0, 201);
    assert_eq!(liked.1["likes"], 1);
    let again = call(&client, "POST", &like, Some(&bob), None);
    assert_eq!(
        (again.0, &again.1["likes"]),
        (200, &json!(1)),
        "liked again, counted once"
    );
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
    eventually("the push service is told over HTTPS", || {
        push.pushed().iter().any(|p| {
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

#[test]
fn two_replicas_share_their_likes_through_redis() {
    two_replicas_share_their_likes_through(&Redis::start());
}

#[test]
fn issue34_two_replicas_share_their_likes_through_rediss_trusting_its_ca() {
    two_replicas_share_their_likes_through(&Redis::start_tls());
}

/// Two replicas behind nothing but `redis` (and one PostgreSQL): a like on A reaches
/// a feed socket on B.
fn two_replicas_share_their_likes_through(redis: &Redis) {
    let postgres = Postgres::start();
    let mut env = vec![
        ("PROSCENIUM_DATABASE_URL", postgres.url()),
        ("PROSCENIUM_FEEDS_REDIS", redis.url()),
    ];
    if let Some(ca) = redis.ca() {
        env.push(("PROSCENIUM_FEEDS_CA", ca.display().to_string()));
    }
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Social::start(data_a.path(), None, &env);
    let b = Social::start(data_b.path(), None, &env);
    let client = Client::new();
    let ana = member(&client, &a, "ana");
    let mut on_b = feed_socket(&b);
    on_b.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let began = Instant::now();
    let mut liked = Vec::new();
    let news = loop {
        // A like of a new picture on A (a user likes a picture once); B's feed has
        // one once B's socket and subscription are up.
        let (status, picture) = upload(
            &client,
            &a,
            &ana,
            &[("one.png", image(20, 20, image::ImageFormat::Png))],
        );
        assert_eq!(status, 201);
        let id = picture[0]["id"].as_i64().unwrap();
        liked.push(id);
        let ana_likes = call(
            &client,
            "POST",
            &a.url(&format!("/picture/{id}/likes")),
            Some(&ana),
            None,
        );
        assert_eq!(ana_likes.0, 201);
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
    assert!(liked.contains(&news["picture"].as_i64().unwrap()), "{news}");
    assert_eq!(news["by"].as_str(), Some("ana"));
}

/// A PNG whose header declares `width`×`height` RGBA pixels, with a few bytes of
/// image data: a decompression bomb's header, which is all a server may read of it.
fn png_declaring(width: u32, height: u32) -> Vec<u8> {
    fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        png.extend((data.len() as u32).to_be_bytes());
        let start = png.len();
        png.extend(kind);
        png.extend(data);
        let crc = crc32(&png[start..]);
        png.extend(crc.to_be_bytes());
    }
    let mut header = Vec::new();
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    // 8 bits a sample, RGBA, deflate, adaptive filtering, not interlaced.
    header.extend([8, 6, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &[0x78, 0x9c, 0x03, 0x00]);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// The CRC-32 a PNG chunk ends with (ISO 3309, bit by bit).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Sign-up takes a plain address only: a line break would write headers of the
/// client's choosing into the mail (`Bcc:`, a second `Subject:`).
#[test]
fn issue33_a_sign_up_address_that_is_not_plain_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let social = Social::start(data.path(), None, &[]);
    let client = Client::new();
    for email in [
        "eve@example.org\r\nBcc: all@example.org\r\nSubject: Free",
        "eve@example.org\nBcc: all@example.org",
        "Eve <eve@example.org>",
        "eve@example.org, all@example.org",
        "eve",
    ] {
        let form = json!({"name": "eve", "email": email, "password": "correct horse"});
        let (status, body) = call(&client, "POST", &social.url("/users"), None, Some(form));
        assert_eq!(status, 400, "{email:?}");
        assert!(body["error"].is_string(), "{email:?}: {body}");
    }
    member(&client, &social, "ana");
    let outbox = data.path().join("outbox");
    eventually("the welcome", || {
        std::fs::read_dir(&outbox).unwrap().any(|entry| {
            let path = entry.unwrap().path();
            path.extension().is_some_and(|e| e == "eml")
        })
    });
    for entry in std::fs::read_dir(&outbox).unwrap() {
        let mail = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(mail.starts_with("To: ana <ana@example.org>\r\n"), "{mail}");
        assert!(!mail.contains("Bcc:"), "{mail}");
    }
}

/// One upload holds at most 10 pictures (a 3.7 MB upload once stored 20,000), and a
/// picture whose header declares more than 64 MiB decoded is refused before anything
/// is decoded (a 471 kB PNG once cost 463 MB); the server goes on.
#[test]
fn issue33_an_upload_is_bounded_in_pictures_and_in_decoded_size() {
    let data = tempfile::tempdir().unwrap();
    let social = Social::start(data.path(), None, &[]);
    let client = Client::new();
    let ana = member(&client, &social, "ana");
    let small = || ("small.png", image(2, 2, image::ImageFormat::Png));
    let eleven: Vec<_> = (0..11).map(|_| small()).collect();
    let (status, body) = upload(&client, &social, &ana, &eleven);
    assert_eq!(
        (status, body),
        (413, json!({"error": "at most 10 pictures in one upload"}))
    );
    let (status, body) = upload(&client, &social, &ana, &eleven[..10]);
    assert_eq!((status, body.as_array().map(Vec::len)), (201, Some(10)));
    for (width, height) in [(60_000, 60_000), (4097, 4096), (1, 1 << 30)] {
        let bomb = png_declaring(width, height);
        assert!(bomb.len() < 100, "{} bytes", bomb.len());
        let (status, body) = upload(&client, &social, &ana, &[small(), ("bomb.png", bomb)]);
        assert_eq!(status, 413, "{width}×{height}: {body}");
        assert!(
            body["error"].as_str().unwrap().starts_with("bomb.png: "),
            "{body}"
        );
    }
    let listed = call(
        &client,
        "GET",
        &social.url("/users/ana/pictures"),
        None,
        None,
    )
    .1;
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(10),
        "nothing of a refused upload is kept"
    );
    let (status, _) = upload(
        &client,
        &social,
        &ana,
        &[("fits.png", png_declaring(4096, 4096))],
    );
    assert_eq!(status, 201, "a picture of 64 MiB decoded is taken");
}

/// A user likes a picture once: liking it again answers 200 and sends no event and
/// no notification (300 likes once sent 300 of each).
#[test]
fn issue33_a_second_like_of_a_picture_tells_no_one() {
    let data = tempfile::tempdir().unwrap();
    let push = PushService::start();
    let social = Social::start(data.path(), Some(&push.url()), &[push.trusted()]);
    let client = Client::new();
    let (ana, bob) = (
        member(&client, &social, "ana"),
        member(&client, &social, "bob"),
    );
    let pictures = two_pictures(&client, &social, &ana);
    let likes = |at: usize| social.url(&format!("/picture/{}/likes", pictures[at]["id"]));
    let first = call(&client, "POST", &likes(0), Some(&bob), None);
    assert_eq!((first.0, &first.1["likes"]), (201, &json!(1)));
    for _ in 0..5 {
        let again = call(&client, "POST", &likes(0), Some(&bob), None);
        assert_eq!((again.0, &again.1["likes"]), (200, &json!(1)));
    }
    assert_eq!(call(&client, "POST", &likes(1), Some(&bob), None).0, 201);
    // The Notifier sends in order: once the second picture's is in, any for a
    // repeated like of the first would be too.
    let about = |title: &str| {
        let pushed = push.pushed();
        let text = format!("bob likes your picture {title}");
        pushed.iter().filter(|p| p["text"] == text.as_str()).count()
    };
    eventually("the second picture's notification", || {
        about("two.png") == 1
    });
    assert_eq!(about("one.png"), 1);
    let events = sent(
        &social,
        b"GET /feed/events HTTP/1.1\r\nHost: t\r\nLast-Event-ID: 0\r\n\r\n",
    );
    let mut stream = String::new();
    let mut reader = BufReader::new(events);
    while !stream.contains("two.png") {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "{stream}");
        stream.push_str(&line);
    }
    assert_eq!(stream.matches("\"by\":\"bob\"").count(), 2, "{stream}");
}

/// SIGTERM completes with a reminder mail pending a day away (the Mailman's timer
/// slept out its delay before shutdown could end, and the process ran on).
#[test]
fn issue33_sigterm_completes_with_a_reminder_pending_a_day_away() {
    let data = tempfile::tempdir().unwrap();
    let mut social = Social::with_args(data.path(), None, &[], &["--reminder-after", "86400"]);
    let client = Client::new();
    member(&client, &social, "ana");
    eventually("the welcome, which sets the reminder", || {
        social.log.lock().unwrap().contains("mail written")
    });
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &social.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let began = Instant::now();
    let exited = loop {
        if let Some(status) = social.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "still running 30 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(exited.code(), Some(0));
}
