//! `cep` over live logs (issue 39, CEP as Leda ran it): two followed files and a
//! socket, each a source of its own; lines appended to a file, sent on a connection,
//! or written to a file put in place of a rotated one raise their alarms while the
//! run goes on, and SIGTERM ends it with their count.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long an alarm may take on a machine busy with the whole suite: the window
/// closes half a second after the lines stop.
const PATIENCE: Duration = Duration::from_secs(60);

/// `count` log lines of `client` answered `status`.
fn lines(client: &str, status: u16, count: usize) -> String {
    let line = format!(
        "{client} - - [29/Nov/2026:10:00:00 +0000] \"GET /admin/{status} HTTP/1.1\" {status} 12 \"-\" \"probe\"\n"
    );
    line.repeat(count)
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Hands `stdout`'s lines to the test as they come.
fn read_lines(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (sent, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sent.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Waits for a line that starts with `start`; returns it.
fn wait_for(lines: &mpsc::Receiver<String>, start: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("no line starting {start:?}"));
        if line.starts_with(start) {
            return line;
        }
    }
}

#[test]
fn issue39_live_sources_raise_alarms_as_their_logs_grow() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a.log"), dir.path().join("b.log"));
    // The first does not exist yet: it is waited for.
    append(&second, &lines("10.0.0.1", 200, 10));
    let mut cep = Command::new(env!("CARGO_BIN_EXE_cep"))
        .arg("--follow")
        .arg(&first)
        .arg("--follow")
        .arg(&second)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = read_lines(cep.stdout.take().unwrap());
    let addr = wait_for(&out, "listening on ")["listening on ".len()..].to_owned();
    wait_for(&out, "cep: 3 live sources");

    append(&first, &lines("198.51.100.7", 404, 25));
    let scan = wait_for(&out, "alarm: ");
    assert!(scan.ends_with("by 198.51.100.7"), "{scan}");

    let mut socket = TcpStream::connect(&addr).unwrap();
    socket
        .write_all(lines("10.0.0.2", 503, 25).as_bytes())
        .unwrap();
    let burst = wait_for(&out, "alarm: ");
    assert!(burst.starts_with("alarm: burst of 5xx"), "{burst}");

    // Rotated: the file renamed, a new one in its place, read from its start.
    std::fs::rename(&first, dir.path().join("a.log.1")).unwrap();
    append(&first, &lines("198.51.100.8", 404, 25));
    let rotated = wait_for(&out, "alarm: ");
    assert!(rotated.ends_with("by 198.51.100.8"), "{rotated}");

    append(&second, &lines("198.51.100.9", 404, 25));
    let grown = wait_for(&out, "alarm: ");
    assert!(grown.ends_with("by 198.51.100.9"), "{grown}");

    let pid = nix::unistd::Pid::from_raw(i32::try_from(cep.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(wait_for(&out, "alarms: "), "alarms: 4");
    assert!(cep.wait().unwrap().success());
}
