//! The page in headless Chromium (Debian's), driven by `tests/browser/like.mjs`
//! (playwright-core from npm; `scripts/test` installs both): two users on two
//! replicas behind nothing but Redis and one PostgreSQL walk the site — sign up,
//! upload, find and follow, a reload that keeps the sign-in, likes, unfollow — and a
//! like on replica A shows on the page on replica B within a second. A is served
//! over plain HTTP/1.1, its feed a WebSocket; B over HTTPS, which Chromium speaks as
//! HTTP/2 (ALPN), its feed server-sent events on an HTTP/2 stream. Each page is kept
//! as a screenshot in `target/tmp`: `social-signin.png`, `social-user.png`,
//! `social-timeline.png` and `social-feed.png`.

mod common;

use std::path::Path;
use std::process::Command;

use proscenium::testing::{Postgres, Redis, TestCa};

use crate::common::{Social, image};

#[test]
fn two_users_on_two_replicas_follow_and_like_and_see_likes_within_a_second() {
    let browser = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        browser.join("node_modules/playwright-core").is_dir(),
        "playwright-core is missing: npm install --prefix {} (scripts/test does)",
        browser.display()
    );
    let (redis, postgres) = (Redis::start(), Postgres::start());
    let env = [
        ("PROSCENIUM_DATABASE_URL", postgres.url()),
        ("PROSCENIUM_FEEDS_REDIS", redis.url()),
    ];
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (cert, key) = TestCa::new()
        .leaf(&["localhost"])
        .write(data_b.path(), "localhost");
    let over_tls = [
        ("PROSCENIUM_TLS_CERT", cert.display().to_string()),
        ("PROSCENIUM_TLS_KEY", key.display().to_string()),
    ];
    let (a, b) = (
        Social::start(data_a.path(), None, &env),
        Social::start(data_b.path(), None, &[&env[..], &over_tls].concat()),
    );
    // The browser trusts no test CA: it is told to take the certificate as it is.
    let b_url = format!("https://localhost:{}/?transport=sse", b.addr.port());
    let picture = data_a.path().join("harbour.png");
    std::fs::write(&picture, image(320, 240, image::ImageFormat::Png)).unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let screenshots = [
        "social-signin.png",
        "social-user.png",
        "social-timeline.png",
        "social-feed.png",
    ]
    .map(|name| shots.join(name));
    for screenshot in &screenshots {
        let _ = std::fs::remove_file(screenshot);
    }
    let run = Command::new("node")
        .arg(browser.join("like.mjs"))
        .args([a.url("/"), b_url])
        .arg(&picture)
        .arg(shots)
        .output()
        .expect("node runs");
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the browser run failed: {out}{}\nreplica A:\n{}\nreplica B:\n{}",
        String::from_utf8_lossy(&run.stderr),
        a.log.lock().unwrap(),
        b.log.lock().unwrap()
    );
    let seen: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let took = seen["took_ms"].as_u64().unwrap();
    eprintln!(
        "B's page showed A's like after {took} ms; the pages showed {seen} (screenshots in {})",
        shots.display()
    );
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    // ana's upload on A; bob on B finds her page, follows her, and is still signed
    // in after a reload, her picture on his timeline.
    assert_eq!(seen["a_timeline"], json(r#"["harbour.png"]"#));
    assert_eq!(seen["b_timeline_first"], json("[]"));
    assert_eq!(seen["user"], json(r#"{"name": "ana", "button": "Follow"}"#));
    assert_eq!(
        seen["followed"],
        json(r#"{"button": "Unfollow", "pictures": "1", "followers": "1", "following": "0"}"#)
    );
    assert_eq!(seen["kept_signed_in"], "signed in as bob");
    assert_eq!(seen["b_timeline_following"], json(r#"["harbour.png"]"#));
    // ana's like on A, on B's page within a second; bob's like counted on both.
    assert_eq!(seen["feed"], "ana likes ana's harbour.png (1)");
    assert_eq!(seen["a"], "http/1.1 (WebSocket)");
    assert_eq!(seen["b"], "h2 (server-sent events)");
    assert!(took < 1000, "{took} ms");
    assert_eq!(seen["likes"], json(r#"{"a": "2", "b": "2"}"#));
    assert_eq!(
        seen["bob_button"],
        json(r#"{"text": "Liked", "disabled": true}"#)
    );
    // Liking again is answered 200 and published to no one.
    assert_eq!(
        seen["repeated_like"],
        json(r#"{"status": 200, "likes": 2}"#)
    );
    let both = r#"["bob likes ana's harbour.png (2)", "ana likes ana's harbour.png (1)"]"#;
    assert_eq!(seen["feed_after"]["a"], json(both));
    assert_eq!(seen["feed_after"]["b"], json(both));
    // Unfollowed, her picture leaves his timeline; signed out, the token is gone,
    // and a token the server does not know is forgotten.
    assert_eq!(
        seen["unfollowed"],
        json(r#"{"button": "Follow", "followers": "0"}"#)
    );
    assert_eq!(seen["b_timeline_unfollowed"], json("[]"));
    assert_eq!(seen["signed_out"], serde_json::Value::Null);
    assert_eq!(
        seen["unknown_token"],
        json(r#"{"token": null, "status": "You were signed out: please log in again."}"#)
    );
    assert_eq!(seen["errors"], json("[]"));
    for screenshot in &screenshots {
        assert!(screenshot.is_file(), "{} is missing", screenshot.display());
    }
}
