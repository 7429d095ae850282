//! The mailer over real sockets: mails answered at once and all sent by the two-thread
//! mailer pool, none lost; a full queue refused with 503; an album answered first and
//! its files deleted after.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The mailer binary on a free port; stopped on drop.
struct Mailer {
    child: Child,
    addr: String,
}

impl Drop for Mailer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(albums: &std::path::Path, mail_ms: u64) -> Mailer {
    start_with(albums, mail_ms, &[])
}

/// The mailer started with `args` besides the usual ones.
fn start_with(albums: &std::path::Path, mail_ms: u64, args: &[&str]) -> Mailer {
    start_as(albums, mail_ms, |command| {
        command.args(args).stderr(Stdio::null());
    })
}

/// The mailer started as `configure` adjusts its command.
fn start_as(
    albums: &std::path::Path,
    mail_ms: u64,
    configure: impl FnOnce(&mut Command),
) -> Mailer {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mailer"));
    command
        .args(["--bind", "127.0.0.1:0", "--mail-ms", &mail_ms.to_string()])
        .arg("--albums")
        .arg(albums)
        .stdout(Stdio::piped());
    configure(&mut command);
    let mut child = command.spawn().unwrap();
    let (_, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
    let addr = addr.to_string();
    Mailer { child, addr }
}

/// One request on a fresh connection; returns the status and body.
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(raw.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

const MAIL: &str = r#"{"email":"ada@example.org","content":"your album is ready"}"#;

fn sent(addr: &str) -> u64 {
    request(addr, "GET", "/mail/sent", "")
        .1
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn every_mail_is_answered_at_once_and_sent_exactly_once() {
    let albums = tempfile::tempdir().unwrap();
    let mailer = start(albums.path(), 200);
    let began = Instant::now();
    for _ in 0..10 {
        assert_eq!(request(&mailer.addr, "POST", "/mail", MAIL).0, 202);
    }
    // Ten answers before two 200 ms mailers could have sent them all.
    assert!(sent(&mailer.addr) < 10, "answered before sending");
    let deadline = began + Duration::from_secs(5);
    while sent(&mailer.addr) < 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(sent(&mailer.addr), 10, "none lost");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sent(&mailer.addr), 10, "none twice");
}

#[test]
fn a_full_mail_queue_is_refused_with_503_and_retry_after() {
    let albums = tempfile::tempdir().unwrap();
    // Slow mailers: the 2 × 1,000-mail queues fill.
    let mailer = start(albums.path(), 5_000);
    let mut stream = TcpStream::connect(&mailer.addr).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut statuses = Vec::new();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let post = format!(
        "POST /mail HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{MAIL}",
        MAIL.len()
    );
    for _ in 0..2_005 {
        stream.write_all(post.as_bytes()).unwrap();
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        statuses.push(status[9..12].to_owned());
    }
    let refused = statuses.iter().filter(|s| *s == "503").count();
    assert!(refused >= 3, "refused {refused}");
    assert_eq!(
        statuses.iter().filter(|s| *s == "202").count() + refused,
        2_005
    );
}

#[test]
fn an_album_is_answered_first_and_its_files_deleted_after() {
    let albums = tempfile::tempdir().unwrap();
    let mailer = start(albums.path(), 200);
    assert_eq!(request(&mailer.addr, "GET", "/albums", "").1, "[1,2,3]");
    let (status, _) = request(&mailer.addr, "DELETE", "/albums/2", "");
    assert_eq!(status, 202);
    assert_eq!(request(&mailer.addr, "GET", "/albums", "").1, "[1,3]");
    let dir = albums.path().join("album-2");
    let deadline = Instant::now() + Duration::from_secs(5);
    while dir.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!dir.exists(), "the files were deleted");
    assert!(albums.path().join("album-1").exists());
    assert_eq!(request(&mailer.addr, "DELETE", "/albums/2", "").0, 404);
}

/// Posts `count` mails and returns the most sent at once once all are sent.
fn most_at_once(mailer: &Mailer, count: u64) -> u64 {
    for _ in 0..count {
        assert_eq!(request(&mailer.addr, "POST", "/mail", MAIL).0, 202);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while sent(&mailer.addr) < count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(sent(&mailer.addr), count, "none lost");
    let stats: serde_json::Value =
        serde_json::from_str(&request(&mailer.addr, "GET", "/mail/stats", "").1).unwrap();
    stats["most_at_once"].as_u64().unwrap()
}

#[test]
fn the_mailers_dispatcher_comes_from_configuration() {
    let albums = tempfile::tempdir().unwrap();
    // The embedded default: two threads.
    let mailer = start(albums.path(), 300);
    assert_eq!(most_at_once(&mailer, 6), 2);
    // A deployment's file narrows it to one.
    let file = albums.path().join("proscenium.toml");
    std::fs::write(
        &file,
        "[dispatchers.mailer]\nkind = \"pool\"\nthreads = 1\n",
    )
    .unwrap();
    let mailer = start_with(albums.path(), 300, &["--config", file.to_str().unwrap()]);
    assert_eq!(most_at_once(&mailer, 4), 1);
    let out = Command::new(env!("CARGO_BIN_EXE_mailer"))
        .args(["config", "--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("dispatchers.mailer.threads"))
        .expect(&text);
    assert!(
        line.contains("= 1") && line.ends_with(&format!("# {}:3", file.display())),
        "{line}"
    );
}

/// Regression for issue 14: the spawn path printed each actor's task size to stderr
/// when `FSIZE` was set (a debug probe). With logging off, the mailer — which spawns
/// actors at start and sends a mail — writes nothing to stderr, whatever the
/// environment.
#[test]
fn with_logging_off_nothing_reaches_stderr() {
    let albums = tempfile::tempdir().unwrap();
    let mut mailer = start_as(albums.path(), 1, |command| {
        command
            .env("FSIZE", "1")
            .env("RUST_LOG", "off")
            .stderr(Stdio::piped());
    });
    assert_eq!(request(&mailer.addr, "POST", "/mail", MAIL).0, 202);
    let deadline = Instant::now() + Duration::from_secs(5);
    while sent(&mailer.addr) < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &mailer.child.id().to_string()])
        .status();
    let mut stderr = String::new();
    mailer
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(mailer.child.wait().unwrap().success());
    assert_eq!(stderr, "");
}

/// Issue 36: SIGTERM ends the process under every model with the SMTP token's
/// renewal, a periodic schedule never cancelled, running and the digest a day away:
/// each timer ends when the actor system shuts down, rather than sleeping out its
/// delay (a day) or running on (forever). Waited for up to 60 s, the margin of a busy
/// machine; the timers would hold it far longer.
#[test]
fn issue36_sigterm_ends_every_model_with_a_periodic_schedule_and_a_timer_a_day_away() {
    let albums = tempfile::tempdir().unwrap();
    for model in [
        &["--model", "loops:1"][..],
        &["--model", "event-loop"],
        &["--model", "thread-pool:4"],
        &["--model", "thread-per-conn:8"],
        &["--model", "staged:2"],
        &["--workers", "2"],
    ] {
        let mut args = vec!["--token-renewal", "1", "--digest-after", "86400"];
        args.extend_from_slice(model);
        let mut mailer = start_with(albums.path(), 1, &args);
        let renewed = Instant::now() + Duration::from_secs(30);
        while request(&mailer.addr, "GET", "/mail/stats", "")
            .1
            .contains("\"token_renewals\":0")
        {
            assert!(Instant::now() < renewed, "{model:?}: no renewal in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        let sent = Command::new("kill")
            .args(["-TERM", &mailer.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = mailer.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "{model:?}: running 60 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{model:?}");
    }
}
