//! `tally` over two processes by its configuration alone: `serve` starts and
//! supervises `front` (the routes) and `back` (the count stage), the words crossing
//! through a Redis of the test's own; SIGTERM stops them all. And `--process` naming
//! a process the configuration lacks is refused.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proscenium::testing::Redis;

fn two_processes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs/two-processes.toml")
}

/// Sends one request, returns the answer's status and body.
fn request(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

#[test]
fn serve_supervises_a_front_that_serves_and_a_back_that_counts_in_another_process() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("words.txt");
    let mut tally = Command::new(env!("CARGO_BIN_EXE_tally"))
        .arg("--config")
        .arg(two_processes())
        .arg("--out")
        .arg(&out)
        .args(["--bind", "127.0.0.1:0"])
        .env("PROSCENIUM_REDIS_URL", redis.url())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The supervisor's line and the processes' lines, in any order.
    let mut lines = BufReader::new(tally.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        printed.push(line.clone());
        if let Some(addr) = proscenium::launch::served_address(&line) {
            break addr;
        }
    };
    let (_, front) = request(addr, "GET", "/");
    let front_pid = front.trim().rsplit(' ').next().unwrap().to_owned();
    for word in ["apple", "pear", "apple", "apple"] {
        assert_eq!(request(addr, "POST", &format!("/words/{word}")).0, 202);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let counted = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.lines().count() == 4 || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let words: Vec<&str> = counted
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(words, ["apple", "pear", "apple", "apple"], "{counted}");
    let pids: Vec<&str> = counted
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert!(
        pids.iter()
            .all(|&pid| pid != front_pid && pid != tally.id().to_string()),
        "counted by {pids:?}; the front is {front_pid}"
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(tally.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = tally.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the supervisor did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    printed.extend(lines.map_while(Result::ok));
    assert!(
        printed.iter().any(|l| l.contains("running process back")),
        "{printed:?}"
    );
}

#[test]
fn a_process_the_configuration_lacks_is_refused_by_name() {
    let output = Command::new(env!("CARGO_BIN_EXE_tally"))
        .arg("--config")
        .arg(two_processes())
        .args(["--out", "/dev/null", "--process", "middle"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("middle") && stderr.contains("\"back\", \"front\""),
        "{stderr}"
    );
}
