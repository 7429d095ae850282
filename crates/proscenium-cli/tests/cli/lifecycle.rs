//! Issue 36's lifecycle under a supervisor: systemd's notifications (`NOTIFY_SOCKET`),
//! socket activation (`LISTEN_FDS`), and SIGUSR1 reopening the access log — under the
//! default model and under prefork, where the supervisor speaks for its workers.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{get, logged_by_a_run, proscenium, signal, start, wait_exit};

/// Reads one notification; panics if none comes within the socket's timeout.
fn recv(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 512];
    let n = socket.recv(&mut buf).expect("a notification within 30 s");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Reads notifications until one other than `WATCHDOG=1` comes; counts the pets.
fn next_state(socket: &UnixDatagram, pets: &mut usize) -> String {
    loop {
        let state = recv(socket);
        if state != "WATCHDOG=1" {
            return state;
        }
        *pets += 1;
    }
}

/// Starts `serve DIR ARGS` told to notify `notify_socket`, with a watchdog of 200 ms.
fn serve_notifying(dir: &std::path::Path, notify_socket: &str, args: &[&str]) -> Child {
    let mut child = proscenium()
        .args(["serve", dir.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .args(args)
        .env("NOTIFY_SOCKET", notify_socket)
        .env("WATCHDOG_USEC", "200000")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    proscenium::launch::read_start_line(&mut child).unwrap();
    child
}

/// READY=1 once serving, RELOADING=1 (with MONOTONIC_USEC) then READY=1 around
/// SIGHUP, WATCHDOG=1 meanwhile, STOPPING=1 at SIGTERM, exit 0.
fn check_notifications(socket: &UnixDatagram, mut child: Child) {
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut pets = 0;
    assert_eq!(next_state(socket, &mut pets), "READY=1");
    signal(&child, "HUP");
    let reloading = next_state(socket, &mut pets);
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading:?}"
    );
    let usec: u64 = reloading.rsplit('=').next().unwrap().parse().unwrap();
    assert!(usec > 0, "{reloading:?}");
    assert_eq!(next_state(socket, &mut pets), "READY=1");
    if pets == 0 {
        assert_eq!(recv(socket), "WATCHDOG=1");
    }
    signal(&child, "TERM");
    assert_eq!(next_state(socket, &mut pets), "STOPPING=1");
    assert_eq!(wait_exit(&mut child), 0);
}

#[test]
fn issue36_systemd_hears_ready_reloading_watchdog_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let socket = UnixDatagram::bind(&path).unwrap();
    let child = serve_notifying(dir.path(), path.to_str().unwrap(), &["--loops", "1"]);
    check_notifications(&socket, child);
}

#[test]
fn issue36_under_prefork_the_supervisor_alone_notifies_systemd_on_an_abstract_socket() {
    use std::os::linux::net::SocketAddrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = format!("proscenium-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
    let socket = UnixDatagram::bind_addr(&addr).unwrap();
    let child = serve_notifying(dir.path(), &format!("@{name}"), &["--workers", "2"]);
    check_notifications(&socket, child);
}

/// Starts `serve DIR ARGS` as systemd would a socket-activated service: the bound
/// socket as descriptor 3, `LISTEN_FDS=1` and `LISTEN_PID` its own pid (set by the
/// shell that then becomes the server). The socket reaches the shell as its stdin,
/// which std passes open across exec, and the shell moves it to 3.
fn serve_activated(
    dir: &std::path::Path,
    listener: std::net::TcpListener,
    args: &[&str],
) -> (Child, String) {
    let server = env!("CARGO_BIN_EXE_proscenium");
    let mut child = std::process::Command::new("/bin/sh")
        .args([
            "-c",
            r#"LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@" 3<&0 0</dev/null"#,
            server,
        ])
        .args(["serve", dir.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::from(OwnedFd::from(listener)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (_, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
    (child, addr.to_string())
}

#[test]
fn issue36_a_socket_activated_server_serves_the_socket_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "activated").unwrap();
    for args in [
        &["--loops", "1"][..],
        &["--workers", "2"],
        &["--model", "thread-pool"],
    ] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let given = listener.local_addr().unwrap().to_string();
        let (mut child, addr) = serve_activated(dir.path(), listener, args);
        assert_eq!(
            addr, given,
            "{args:?}: the start line names the socket given"
        );
        let answer = get(&addr, "/hello.txt");
        assert!(answer.ends_with("activated"), "{args:?}: {answer}");
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0, "{args:?}");
    }
}

/// systemd's own launcher, where installed: it binds the port, waits for the first
/// connection, then starts the server with the socket as descriptor 3.
#[test]
fn issue36_systemd_socket_activate_starts_a_server_that_answers_the_first_connection() {
    let Some(launcher) = which("systemd-socket-activate") else {
        eprintln!("systemd-socket-activate is not installed: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "activated").unwrap();
    // A port free a moment ago; the launcher binds it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(launcher)
        .args(["-l", &addr, env!("CARGO_BIN_EXE_proscenium")])
        .args([
            "serve",
            dir.path().to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
            "--loops",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "the launcher never listened on {addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let answer = get(&addr, "/hello.txt");
    assert!(answer.ends_with("activated"), "{answer}");
    let (_, served) = proscenium::launch::read_start_line(&mut child).unwrap();
    assert_eq!(served.to_string(), addr);
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Returns the path of `program` on `PATH`.
fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Asks for `/two.txt` until a line of it is logged at `path`, for up to 30 s;
/// returns the file.
fn wait_for_answer_logged(addr: &str, path: &std::path::Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        get(addr, "/two.txt");
        std::thread::sleep(Duration::from_millis(50));
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains("GET /two.txt") {
            return text;
        }
        assert!(Instant::now() < deadline, "{}: {text:?}", path.display());
    }
}

/// Polls until the file at `path` holds `lines` lines, for up to 30 s; returns it.
fn wait_for_lines(path: &std::path::Path, lines: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return text;
        }
        assert!(Instant::now() < deadline, "{}: {text:?}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue36_sigusr1_reopens_the_access_log_after_it_is_renamed_under_every_model() {
    for model in super::signals::MODELS {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("one.txt"), "1").unwrap();
        std::fs::write(dir.path().join("two.txt"), "2").unwrap();
        let log = dir.path().join("access.log");
        let rotated = dir.path().join("access.log.1");
        let mut args = vec!["--log", log.to_str().unwrap()];
        args.extend_from_slice(model);
        let (mut child, addr, _) = start(dir.path(), &args);
        get(&addr, "/one.txt");
        wait_for_lines(&log, 1);
        std::fs::rename(&log, &rotated).unwrap();
        signal(&child, "USR1");
        // Asked until a line lands at the path again: under prefork the workers
        // reopen a moment after the supervisor passes the signal on.
        let fresh = wait_for_answer_logged(&addr, &log);
        assert!(!fresh.contains("one.txt"), "{model:?}: {fresh}");
        let old = std::fs::read_to_string(&rotated).unwrap();
        assert!(old.contains("GET /one.txt"), "{model:?}: {old}");
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0, "{model:?}");
    }
}

#[test]
fn issue36_log_format_json_writes_one_object_a_line_on_stderr() {
    let stderr = logged_by_a_run(&["--workers", "1"], &[("PROSCENIUM_LOG_FORMAT", "json")]);
    let messages: Vec<String> = stderr
        .lines()
        .map(|line| {
            let object: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
            assert!(object["level"].is_string(), "{line}");
            object["fields"]["message"].as_str().unwrap().to_owned()
        })
        .collect();
    let said = |what: &str| messages.iter().any(|m| m.starts_with(what));
    assert!(said("worker 0 started"), "{stderr}");
    assert!(said("shutting down"), "{stderr}");
}
