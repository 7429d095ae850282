//! Issue 36's signals under every model, through the binary: SIGHUP reads the
//! configuration again (what can change live does, the rest is named in one line and
//! kept, a broken file changes nothing), and under prefork runs a binary replaced on
//! disk.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use super::{get, signal, wait_exit, within};

/// Every model, as `serve`'s flags, each small.
pub(super) const MODELS: [&[&str]; 7] = [
    &["--model", "loops:1"],
    &["--model", "event-loop"],
    &["--model", "thread-pool:4"],
    &["--model", "thread-per-conn:8"],
    &["--model", "staged:2"],
    &["--workers", "2"],
    &["--workers", "2", "--model", "thread-pool:2"],
];

fn is_prefork(model: &[&str]) -> bool {
    model[0] == "--workers"
}

/// A site (`hello.txt`), a configuration file beside it (not in it), and the server's
/// stderr, in one temporary directory.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("site")).unwrap();
        std::fs::write(dir.path().join("site/hello.txt"), "hi").unwrap();
        let setup = Self { dir };
        setup.configure(config);
        setup
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes the configuration file, as an editor would: a new file renamed over.
    fn configure(&self, config: &str) {
        std::fs::write(self.path("next.toml"), config).unwrap();
        std::fs::rename(self.path("next.toml"), self.path("proscenium.toml")).unwrap();
    }

    /// Starts `server serve SITE --config FILE ARGS`, its stderr to a file; returns
    /// the child and its address.
    fn start(&self, server: &Path, args: &[&str]) -> (Child, String) {
        let mut child = std::process::Command::new(server)
            .arg("serve")
            .arg(self.path("site"))
            .arg("--config")
            .arg(self.path("proscenium.toml"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.path("stderr.log")).unwrap())
            .spawn()
            .unwrap();
        let (_, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
        (child, addr.to_string())
    }

    /// The lines of stderr that contain `what`, once at least one does (within 30 s).
    fn logged(&self, what: &str) -> Vec<String> {
        let mut found = Vec::new();
        within(60, &format!("a line with {what:?}"), || {
            let text = std::fs::read_to_string(self.path("stderr.log")).unwrap();
            found = text
                .lines()
                .filter(|line| line.contains(what))
                .map(str::to_owned)
                .collect();
            !found.is_empty()
        });
        found
    }
}

/// Asks for `path` on a keep-alive connection and reads the one answer.
fn ask_on(stream: &mut TcpStream, path: &str) -> String {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let (mut head, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "closed: {head}");
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    head + &String::from_utf8_lossy(&body)
}

fn keep_alive(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

fn status(answer: &str) -> &str {
    answer.get(9..12).unwrap_or(answer)
}

/// A target longer than 100 bytes and shorter than 1024.
fn long_target() -> String {
    format!("/hello.txt?{}", "a".repeat(200))
}

fn server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_proscenium"))
}

#[test]
fn issue36_sighup_reloads_a_limit_under_every_model_and_serves_a_connection_opened_before() {
    for model in MODELS {
        let setup = Setup::new("bind = \"127.0.0.1:0\"\n[limits]\nmax_uri = 1024\n");
        let (mut child, addr) = setup.start(&server(), model);
        assert_eq!(status(&get(&addr, &long_target())), "200", "{model:?}");
        let mut before = keep_alive(&addr);
        assert_eq!(status(&ask_on(&mut before, "/hello.txt")), "200");
        setup.configure("bind = \"127.0.0.1:0\"\n[limits]\nmax_uri = 100\n");
        signal(&child, "HUP");
        within(60, &format!("{model:?}: 414 for a long target"), || {
            status(&get(&addr, &long_target())) == "414"
        });
        assert_eq!(setup.logged("configuration reloaded").len(), 1, "{model:?}");
        // Under prefork the old workers drain: their idle connections close.
        if !is_prefork(model) {
            let answer = ask_on(&mut before, "/hello.txt");
            assert_eq!(status(&answer), "200", "{model:?}: {answer}");
        }
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0, "{model:?}");
    }
}

/// A port free a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn issue36_sighup_keeps_the_bind_and_a_broken_file_out_with_one_line_each() {
    for model in MODELS {
        let config = |port| format!("bind = \"127.0.0.1:{port}\"\n[limits]\nmax_uri = 100\n");
        let setup = Setup::new(&config(free_port()));
        let (mut child, addr) = setup.start(&server(), model);
        setup.configure(&config(free_port()));
        signal(&child, "HUP");
        let kept = setup.logged("until a restart");
        assert_eq!(kept.len(), 1, "{model:?}: {kept:?}");
        assert!(
            kept[0].ends_with("until a restart: bind"),
            "{model:?}: {kept:?}"
        );
        assert_eq!(status(&get(&addr, "/hello.txt")), "200", "{model:?}");

        setup.configure("[limits]\nmax_uri = \"many\"\n");
        signal(&child, "HUP");
        let refused = setup.logged("not reloaded");
        assert_eq!(refused.len(), 1, "{model:?}: {refused:?}");
        assert!(refused[0].contains("max_uri"), "{model:?}: {refused:?}");
        // The running limit stays (the default is 8 KiB), and the server serves.
        assert_eq!(status(&get(&addr, &long_target())), "414", "{model:?}");
        assert_eq!(status(&get(&addr, "/hello.txt")), "200", "{model:?}");
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0, "{model:?}");
    }
}

/// Returns the pids of the children of `pid` (under prefork, the workers).
fn workers(pid: u32) -> Vec<u32> {
    super::children(pid)
}

/// The inode of the file `/proc/PID/exe` names, and whether it was deleted.
fn running_file(pid: u32) -> (u64, bool) {
    use std::os::unix::fs::MetadataExt as _;
    let exe = format!("/proc/{pid}/exe");
    let deleted = std::fs::read_link(&exe)
        .map(|target| target.to_string_lossy().ends_with(" (deleted)"))
        .unwrap_or(true);
    (std::fs::metadata(&exe).map_or(0, |m| m.ino()), deleted)
}

#[test]
fn issue36_prefork_sighup_starts_workers_from_a_binary_replaced_on_disk() {
    use std::os::unix::fs::MetadataExt as _;
    let setup = Setup::new("bind = \"127.0.0.1:0\"\n");
    let bin = setup.path("proscenium");
    // The first binary a link (no copy of a few hundred MB), the second a copy.
    std::fs::hard_link(server(), &bin)
        .or_else(|_| std::fs::copy(server(), &bin).map(drop))
        .unwrap();
    let (mut child, addr) = setup.start(&bin, &["--workers", "2"]);
    within(60, "two workers", || workers(child.id()).len() == 2);
    let old = workers(child.id());
    std::fs::copy(server(), setup.path("proscenium.new")).unwrap();
    std::fs::rename(setup.path("proscenium.new"), &bin).unwrap();
    let new_file = std::fs::metadata(&bin).unwrap().ino();
    signal(&child, "HUP");
    within(60, "two new workers", || {
        let now = workers(child.id());
        now.len() == 2 && now.iter().all(|pid| !old.contains(pid))
    });
    for pid in workers(child.id()) {
        assert_eq!(running_file(pid), (new_file, false), "worker {pid}");
    }
    assert_eq!(status(&get(&addr, "/hello.txt")), "200");
    let stderr = std::fs::read_to_string(setup.path("stderr.log")).unwrap();
    assert!(!stderr.contains("cannot start"), "{stderr}");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}
