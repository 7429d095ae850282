//! One app binary, deployed every way: the model from `proscenium.toml`, from
//! `PROSCENIUM_MODEL` and from a flag, the precedence of the three, `routes`,
//! `config`, and each kind of bad input refused with one line and exit 2.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `hello` run in `dir` (where a `proscenium.toml` may wait) with `env` and `args`.
fn hello(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hello"));
    command
        .current_dir(dir)
        .env_remove("PROSCENIUM_MODEL")
        .envs(env.iter().copied())
        .args(args);
    command
}

/// A running `hello`; stopped with SIGTERM (so prefork's workers go too) on drop.
struct Running {
    child: Child,
    line: String,
    port: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `hello` on a free port and reads its start line.
fn start(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Running {
    start_on("127.0.0.1:0", dir, env, args)
}

fn start_on(bind: &str, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Running {
    let mut child = hello(dir, env, args)
        .args(["--bind", bind])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (line, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
    let port = addr.port().to_string();
    Running { child, line, port }
}

fn plaintext(port: &str) -> String {
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    stream
        .write_all(b"GET /plaintext HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn serves_as(running: &Running, plan: &str) {
    assert!(running.line.contains(plan), "start line: {}", running.line);
    let answer = plaintext(&running.port);
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("Hello, World!"),
        "{answer}"
    );
}

/// Each model's spelling and what the start line says of it.
const MODELS: [(&str, &str); 5] = [
    ("loops:2", "model loops, 2 loops"),
    ("event-loop", "model event-loop, 1 loop"),
    ("thread-pool:4", "model thread-pool, 4 threads"),
    ("thread-per-conn", "model thread-per-conn"),
    ("prefork:2", "; in each of 2 workers"),
];

#[test]
fn every_model_from_the_file_the_environment_and_a_flag() {
    for (model, plan) in MODELS {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("proscenium.toml"),
            format!("model = \"{model}\"\n"),
        )
        .unwrap();
        serves_as(&start(dir.path(), &[], &[]), plan);
        let empty = tempfile::tempdir().unwrap();
        serves_as(
            &start(empty.path(), &[("PROSCENIUM_MODEL", model)], &[]),
            plan,
        );
        serves_as(&start(empty.path(), &[], &["--model", model]), plan);
    }
}

#[test]
fn flags_beat_the_environment_which_beats_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("proscenium.toml"), "loops = 3\n").unwrap();
    let env = [("PROSCENIUM_LOOPS", "2")];
    serves_as(&start(dir.path(), &env, &["serve", "-l", "1"]), "1 loop,");
    serves_as(&start(dir.path(), &env, &[]), "2 loops");
    serves_as(&start(dir.path(), &[], &[]), "3 loops");
    let out = hello(dir.path(), &env, &["config", "-l", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let loops = text
        .lines()
        .find(|l| l.starts_with("loops ="))
        .expect(&text);
    assert!(
        loops.starts_with("loops = 1 ") && loops.ends_with("# --loops"),
        "{loops}"
    );
    let out = hello(dir.path(), &env, &["config"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# PROSCENIUM_LOOPS"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("bind = \"127.0.0.1:3000\"") && l.ends_with("# default")),
        "{text}"
    );
    let out = hello(dir.path(), &[], &["config"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# ./proscenium.toml:1"), "{text}");
}

#[test]
fn routes_are_the_apps_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = hello(dir.path(), &[], &["routes"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let routes: Vec<_> = text
        .lines()
        .map(|l| l.split_whitespace().take(4).collect::<Vec<_>>())
        .collect();
    assert_eq!(
        routes,
        [
            ["GET", "/plaintext", "inline", "stateless"],
            ["GET", "/json", "inline", "stateless"],
            ["*", "/echo", "inline", "stateless"],
            ["GET", "/ws/echo", "async", "stateless"],
            ["GET", "/feed", "async", "stateless"],
            ["POST", "/publish", "inline", "stateless"],
        ]
    );
}

#[test]
fn bind_takes_the_spellings_people_type() {
    let dir = tempfile::tempdir().unwrap();
    for bind in [":0", "localhost:0", "0.0.0.0:0"] {
        serves_as(&start_on(bind, dir.path(), &[], &[]), "model loops");
    }
}

/// A start that must fail: the file's text, the environment, the flags, and the
/// start of the one line expected on stderr.
struct Bad<'a> {
    file: &'a str,
    env: &'a [(&'a str, &'a str)],
    args: &'a [&'a str],
    says: &'a str,
}

#[test]
fn bad_input_stops_the_start_with_one_line_naming_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proscenium.toml");
    let cases = [
        Bad {
            file: "# tuned for two cores\n\nloops = \"two\"\n",
            env: &[],
            args: &[],
            says: "hello: ./proscenium.toml:3: loops: expected a number from 1 to 1024, got \"two\"",
        },
        Bad {
            file: "[timeouts]\nidel = 5\n",
            env: &[],
            args: &[],
            says: "hello: ./proscenium.toml:2: timeouts.idel: no such setting, did you mean `idle`?",
        },
        Bad {
            file: "",
            env: &[("PROSCENIUM_MODLE", "event-loop")],
            args: &[],
            says: "hello: PROSCENIUM_MODLE: no such setting, did you mean `PROSCENIUM_MODEL`?",
        },
        Bad {
            file: "",
            env: &[("PROSCENIUM_WORKERS", "0")],
            args: &[],
            says: "hello: PROSCENIUM_WORKERS: expected a number from 1 to 1024, got 0",
        },
        Bad {
            file: "",
            env: &[],
            args: &["--dispatch", "fastest"],
            says: "hello: --dispatch: unknown variant `fastest`, expected one of `jsq`, `round-robin`, `reuseport`",
        },
        Bad {
            file: "",
            env: &[],
            args: &["--bind", "3000"],
            says: "hello: --bind: expected an address",
        },
        Bad {
            file: "",
            env: &[],
            args: &["--lops", "2"],
            says: "hello: unexpected argument '--lops' found",
        },
    ];
    for bad in cases {
        std::fs::write(&file, bad.file).unwrap();
        let out = hello(dir.path(), bad.env, bad.args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{:?}: {stderr}", bad.args);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(bad.says), "{stderr}");
    }
}
