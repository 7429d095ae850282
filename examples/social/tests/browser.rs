//! The page in headless Chromium (Debian's), driven by `tests/browser/like.mjs`
//! (playwright-core from npm; `scripts/test` installs both): two pages on two
//! replicas behind nothing but Redis and one PostgreSQL — a like on replica A shows
//! in the live feed of the page on replica B within a second. A is served over plain
//! HTTP/1.1, its feed a WebSocket; B over HTTPS, which Chromium speaks as HTTP/2
//! (ALPN), its feed server-sent events on an HTTP/2 stream. The page on B is kept as
//! a screenshot: `target/tmp/social-feed.png`.

mod common;

use std::path::Path;
use std::process::Command;

use proscenium::testing::{Postgres, Redis, TestCa};

use crate::common::{Social, image};

#[test]
fn a_like_on_one_replica_shows_in_a_browser_on_the_other_within_a_second() {
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
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("social-feed.png");
    let run = Command::new("node")
        .arg(browser.join("like.mjs"))
        .args([a.url("/"), b_url])
        .arg(&picture)
        .arg(&screenshot)
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
    let result: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let took = result["took_ms"].as_u64().unwrap();
    eprintln!(
        "B's feed showed A's like after {took} ms: {} (screenshot: {})",
        result["feed"],
        screenshot.display()
    );
    assert_eq!(result["feed"], "ana likes ana's harbour.png (1)");
    assert_eq!(result["a"], "http/1.1 (WebSocket)");
    assert_eq!(result["b"], "h2 (server-sent events)");
    assert!(took < 1000, "{took} ms");
    assert!(screenshot.is_file());
}
