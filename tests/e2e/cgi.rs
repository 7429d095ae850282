//! Issue 20: CGI/1.1 over the wire — RFC 3875's meta-variables as a script sees
//! them, a body on standard input, the response parsed and streamed, redirects, and
//! every way a script can fail: too slow (504, its processes gone), its client gone
//! (killed), crashing or writing garbage (502, logged), too many at once (503).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proscenium::App;
use proscenium::cgi::CgiSpec;

use crate::support::{self, Client};

/// A root with `cgi-bin/` scripts (`name`, shell text) and a static file.
fn site(scripts: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("cgi-bin")).unwrap();
    std::fs::write(root.join("hello.txt"), "Hello, file!").unwrap();
    for (name, text) in scripts {
        let path = root.join("cgi-bin").join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{text}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (dir, root)
}

fn serve(root: &Path, adjust: impl FnOnce(&mut CgiSpec)) -> proscenium::ServerHandle {
    let mut spec = CgiSpec {
        enabled: true,
        ..CgiSpec::default()
    };
    adjust(&mut spec);
    support::start_with(App::new(), |c| {
        c.root = Some(root.to_owned());
        c.cgi = spec;
    })
}

/// The variables a script printed with `env`, as `NAME=value` lines.
fn variables(text: &str) -> Vec<(&str, &str)> {
    text.lines().filter_map(|l| l.split_once('=')).collect()
}

#[test]
fn a_script_sees_the_meta_variables_of_rfc_3875_and_nothing_of_the_server() {
    support::in_process("scripts written to a temporary directory of its own");
    let (_dir, root) = site(&[("env.sh", "printf 'Content-Type: text/plain\\n\\n'; env")]);
    let server = serve(&root, |_| {});
    let port = server.local_addr().port();
    let res = Client::connect(server.local_addr())
        .send(format!(
            "GET /cgi-bin/env.sh/extra/p%20ath?a=1&b=%202 HTTP/1.1\r\nHost: example.test:{port}\r\n\
             X-Custom: one\r\nX-Custom: two\r\nProxy: http://evil.test/\r\nX_Custom: forged\r\n\
             Authorization: Basic c2VjcmV0\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n"
        ))
        .response();
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.header("content-type"), Some("text/plain"));
    let text = res.text();
    let vars = variables(&text);
    let expected = [
        ("GATEWAY_INTERFACE", "CGI/1.1".to_owned()),
        ("SERVER_PROTOCOL", "HTTP/1.1".to_owned()),
        ("SERVER_NAME", "example.test".to_owned()),
        ("SERVER_PORT", port.to_string()),
        ("REQUEST_METHOD", "GET".to_owned()),
        ("QUERY_STRING", "a=1&b=%202".to_owned()),
        ("SCRIPT_NAME", "/cgi-bin/env.sh".to_owned()),
        ("PATH_INFO", "/extra/p ath".to_owned()),
        ("PATH_TRANSLATED", format!("{}/extra/p ath", root.display())),
        (
            "SCRIPT_FILENAME",
            format!("{}/cgi-bin/env.sh", root.display()),
        ),
        ("DOCUMENT_ROOT", root.display().to_string()),
        (
            "REQUEST_URI",
            "/cgi-bin/env.sh/extra/p%20ath?a=1&b=%202".to_owned(),
        ),
        ("REMOTE_ADDR", "127.0.0.1".to_owned()),
        ("HTTP_HOST", format!("example.test:{port}")),
        ("HTTP_X_CUSTOM", "one, two".to_owned()),
        ("HTTP_COOKIE", "a=1; b=2".to_owned()),
    ];
    for (name, value) in &expected {
        assert!(
            vars.contains(&(name, value.as_str())),
            "{name}={value} missing:\n{text}"
        );
    }
    assert!(
        vars.iter()
            .any(|(n, v)| *n == "SERVER_SOFTWARE" && v.starts_with("proscenium/"))
    );
    // httpoxy, forged underscore names, credentials, no body: none of them.
    for absent in [
        "HTTP_PROXY",
        "HTTP_X_CUSTOM=forged",
        "HTTP_AUTHORIZATION",
        "CONTENT_LENGTH",
    ] {
        assert!(!text.contains(absent), "{absent} present:\n{text}");
    }
    // Built from scratch: nothing of the test process's environment (cargo sets
    // CARGO_* for it) reaches the script.
    assert!(!vars.iter().any(|(n, _)| n.starts_with("CARGO")), "{text}");
    assert!(!vars.iter().any(|(n, _)| *n == "HOME"), "{text}");
}

#[test]
fn a_request_body_reaches_the_script_on_its_standard_input() {
    let (_dir, root) = site(&[(
        "echo.sh",
        "printf 'Content-Type: text/plain\\n\\n%s|%s|' \"$CONTENT_LENGTH\" \"$CONTENT_TYPE\"; cat",
    )]);
    let server = serve(&root, |_| {});
    let body = "x".repeat(300_000);
    let res = Client::connect(server.local_addr())
        .send(format!(
            "POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: t\r\nContent-Type: text/x-test\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ))
        .response();
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), format!("300000|text/x-test|{body}"));
}

#[test]
fn output_is_streamed_chunked_unless_the_script_gives_its_length() {
    let (_dir, root) = site(&[
        (
            "stream.sh",
            "printf 'Content-Type: text/plain\\n\\n'; for i in 1 2 3; do echo line $i; done",
        ),
        (
            "sized.sh",
            "printf 'Content-Type: text/plain\\r\\nContent-Length: 5\\r\\nX-Extra: yes\\r\\n\\r\\nhello'",
        ),
    ]);
    let server = serve(&root, |_| {});
    let streamed = support::get(server.local_addr(), "/cgi-bin/stream.sh");
    assert_eq!(streamed.header("transfer-encoding"), Some("chunked"));
    assert_eq!(streamed.text(), "line 1\nline 2\nline 3\n");
    let sized = support::get(server.local_addr(), "/cgi-bin/sized.sh");
    assert_eq!(sized.header("content-length"), Some("5"));
    assert_eq!(sized.header("x-extra"), Some("yes"));
    assert_eq!(sized.text(), "hello");
}

#[test]
fn status_and_location_make_the_answer() {
    let (_dir, root) = site(&[
        (
            "gone.sh",
            "printf 'Status: 410 Gone\\nContent-Type: text/plain\\n\\nno more'",
        ),
        (
            "away.sh",
            "printf 'Location: http://example.test/there\\n\\n'",
        ),
        ("local.sh", "printf 'Location: /hello.txt\\n\\n'"),
        (
            "to-script.sh",
            "printf 'Location: /cgi-bin/gone.sh?x=1\\n\\n'",
        ),
        ("loop.sh", "printf 'Location: /cgi-bin/loop.sh\\n\\n'"),
    ]);
    let server = serve(&root, |_| {});
    let get = |path| support::get(server.local_addr(), path);
    let gone = get("/cgi-bin/gone.sh");
    assert_eq!((gone.status, gone.text().as_str()), (410, "no more"));
    let away = get("/cgi-bin/away.sh");
    assert_eq!(away.status, 302);
    assert_eq!(away.header("location"), Some("http://example.test/there"));
    let local = get("/cgi-bin/local.sh");
    assert_eq!((local.status, local.text().as_str()), (200, "Hello, file!"));
    let chained = get("/cgi-bin/to-script.sh");
    assert_eq!(chained.status, 410);
    assert_eq!(get("/cgi-bin/loop.sh").status, 502);
}

#[test]
fn static_files_beside_scripts_are_served_and_a_script_is_never_sent_as_text() {
    let (_dir, root) = site(&[("secret.sh", "printf 'Content-Type: text/plain\\n\\nran'")]);
    std::fs::write(root.join("cgi-bin/plain.txt"), "not a program").unwrap();
    let server = serve(&root, |_| {});
    let get = |path| support::get(server.local_addr(), path);
    assert_eq!(get("/hello.txt").text(), "Hello, file!");
    assert_eq!(get("/cgi-bin/secret.sh").text(), "ran");
    assert_eq!(get("/cgi-bin/plain.txt").status, 403);
    assert_eq!(get("/cgi-bin/nothing.sh").status, 404);
    // `..` is refused as for static files, never resolved to a script or its text.
    assert_eq!(get("/cgi-bin/../cgi-bin/secret.sh").status, 404);
}

#[test]
fn files_with_an_interpreters_extension_run_through_it_anywhere_below_the_root() {
    let (_dir, root) = site(&[]);
    std::fs::create_dir_all(root.join("pages")).unwrap();
    std::fs::write(
        root.join("pages/hi.sh"),
        "printf 'Content-Type: text/plain\\n\\nhi from %s' \"$SCRIPT_NAME\"",
    )
    .unwrap();
    std::fs::write(
        root.join("pages/hi.py"),
        "import os\nprint('Content-Type: text/plain')\nprint()\nprint('python', os.environ['QUERY_STRING'], end='')\n",
    )
    .unwrap();
    std::fs::write(
        root.join("pages/hi.rb"),
        "print \"Content-Type: text/plain\\n\\n\"\nprint \"ruby #{ENV['PATH_INFO']}\"\n",
    )
    .unwrap();
    let server = serve(&root, |spec| {
        spec.interpreters = [("sh", "sh"), ("py", "python3"), ("rb", "ruby")]
            .map(|(e, i)| (e.to_owned(), i.to_owned()))
            .into();
    });
    let get = |path| support::get(server.local_addr(), path);
    assert_eq!(get("/pages/hi.sh").text(), "hi from /pages/hi.sh");
    for (program, path, expected) in [
        ("python3", "/pages/hi.py?q=1", "python q=1"),
        ("ruby", "/pages/hi.rb/more", "ruby /more"),
    ] {
        if !has_program(program) {
            eprintln!("{program} is not installed here (scripts/test installs it): skipped");
            continue;
        }
        assert_eq!(get(path).text(), expected, "{program}");
    }
}

#[test]
fn issue39_a_page_keeps_yarns_conventions_and_a_cgi_bin_program_rfc_3875s() {
    let (_dir, root) = site(&[("bare.sh", "echo '<p>hello</p>'")]);
    std::fs::create_dir_all(root.join("pages")).unwrap();
    let pages = [
        ("bare.sh", "echo '<p>hello</p>'"),
        ("words.sh", "echo 'just words'"),
        (
            "long.sh",
            "printf 'Content-Type: text/plain\\nContent-Length: 3\\n\\nabcdef'",
        ),
        (
            "fails.sh",
            "printf 'Content-Type: text/plain\\n\\npartial'; exit 3",
        ),
        ("bare_fails.sh", "echo oops; exit 1"),
        (
            "says.sh",
            "printf 'Status: 200 OK\\nContent-Type: text/plain\\n\\npartial'; exit 3",
        ),
        (
            "large_fails.sh",
            "printf 'Content-Type: text/plain\\n\\n'; head -c 100000 /dev/zero | tr '\\0' a; exit 1",
        ),
    ];
    for (name, text) in pages {
        std::fs::write(root.join("pages").join(name), text).unwrap();
    }
    let server = serve(&root, |spec| {
        spec.interpreters = [("sh".to_owned(), "sh".to_owned())].into();
    });
    let get = |path| support::get(server.local_addr(), path);
    // Output without a header section is the body (Yarn's `.rb` pages printed HTML).
    let bare = get("/pages/bare.sh");
    assert_eq!(
        (bare.status, bare.text()),
        (200, "<p>hello</p>\n".to_owned())
    );
    assert_eq!(
        bare.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let words = get("/pages/words.sh");
    assert_eq!(
        words.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    // Held, the body keeps to its Content-Length as a streamed one does.
    assert_eq!(get("/pages/long.sh").text(), "abc");
    // A page that exits non-zero after writing gets 500, unless it sent a status.
    assert_eq!(get("/pages/fails.sh").status, 500);
    assert_eq!(get("/pages/bare_fails.sh").status, 500);
    let says = get("/pages/says.sh");
    assert_eq!((says.status, says.text()), (200, "partial".to_owned()));
    // Past what is held, the answer has gone out: the failure is only logged.
    let large = get("/pages/large_fails.sh");
    assert_eq!((large.status, large.body.len()), (200, 100_000));
    // A program of cgi-bin/ writes a CGI response or gets 502 (RFC 3875).
    assert_eq!(get("/cgi-bin/bare.sh").status, 502);
}

fn has_program(name: &str) -> bool {
    std::process::Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

#[test]
fn a_script_past_its_time_gets_504_and_its_processes_are_killed() {
    support::in_process("scripts written to a temporary directory of its own");
    let (dir, root) = site(&[(
        "slow.sh",
        "echo $$ > \"$DOCUMENT_ROOT/../slow.pid\"; sleep 30 & echo $! > \"$DOCUMENT_ROOT/../child.pid\"; wait",
    )]);
    let server = serve(&root, |spec| spec.timeout = Duration::from_millis(500));
    let began = Instant::now();
    let res = support::get(server.local_addr(), "/cgi-bin/slow.sh");
    assert_eq!(res.status, 504);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    for pid_file in ["slow.pid", "child.pid"] {
        let pid = read_pid(&dir.path().join(pid_file));
        assert!(
            ends_within(pid, Duration::from_secs(2)),
            "{pid_file} {pid} still runs"
        );
    }
}

#[test]
fn a_client_that_hangs_up_has_its_script_killed() {
    support::in_process("scripts written to a temporary directory of its own");
    let (dir, root) = site(&[(
        "wait.sh",
        "echo $$ > \"$DOCUMENT_ROOT/../wait.pid\"; sleep 30",
    )]);
    let server = serve(&root, |_| {});
    let mut client = Client::connect(server.local_addr());
    client.get("/cgi-bin/wait.sh");
    let pid_file = dir.path().join("wait.pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pid_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = read_pid(&pid_file);
    assert!(
        !ends_within(pid, Duration::from_millis(300)),
        "the script ended by itself"
    );
    drop(client);
    assert!(
        ends_within(pid, Duration::from_secs(1)),
        "the script outlived its client"
    );
}

#[test]
fn a_failing_script_gets_502_and_its_reason_in_the_log() {
    support::in_process("scripts written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = site(&[
        ("crash.sh", "echo 'about to fail' >&2; exit 3"),
        ("garbage.sh", "echo 'this is no header'; echo; echo body"),
        ("endless-head.sh", "printf 'Content-Type: text/plain\\n'"),
    ]);
    let server = serve(&root, |_| {});
    let get = |path| support::get(server.local_addr(), path);
    assert_eq!(get("/cgi-bin/crash.sh").status, 502);
    assert!(support::logged_within(
        &["/cgi-bin/crash.sh", "exit status: 3", "before any output"],
        Duration::from_secs(5)
    ));
    assert!(support::logged_within(
        &["/cgi-bin/crash.sh", "about to fail"],
        Duration::from_secs(5)
    ));
    assert_eq!(get("/cgi-bin/garbage.sh").status, 502);
    assert!(support::logged_within(
        &["/cgi-bin/garbage.sh", "bad output"],
        Duration::from_secs(5)
    ));
    assert_eq!(get("/cgi-bin/endless-head.sh").status, 502);
    assert!(support::logged_within(
        &["/cgi-bin/endless-head.sh", "inside the header section"],
        Duration::from_secs(5)
    ));
    // And the server goes on serving.
    assert_eq!(get("/hello.txt").status, 200);
}

/// Past `max_scripts` running, a request is refused at once — except under the
/// staged model, where scripts are its *cgi* stage and a request waits its turn in
/// the stage's queue (up to `[cgi] timeout`).
#[test]
fn past_the_cap_on_running_scripts_a_request_gets_503_with_retry_after() {
    support::in_process("scripts written to a temporary directory of its own");
    let (_dir, root) = site(&[(
        "busy.sh",
        "sleep 1; printf 'Content-Type: text/plain\\n\\ndone'",
    )]);
    let server = serve(&root, |spec| spec.max_scripts = 1);
    let addr = server.local_addr();
    let first = std::thread::spawn(move || support::get(addr, "/cgi-bin/busy.sh"));
    std::thread::sleep(Duration::from_millis(300));
    let second = support::get(addr, "/cgi-bin/busy.sh");
    if support::model().model == proscenium::config::Model::Staged {
        assert_eq!(second.text(), "done", "waited for the slot");
    } else {
        assert_eq!(second.status, 503);
        assert_eq!(second.header("retry-after"), Some("1"));
    }
    assert_eq!(first.join().unwrap().text(), "done");
    assert_eq!(support::get(addr, "/cgi-bin/busy.sh").text(), "done");
}

/// Leda's Fig. 2: the staged server's scripts are a stage of its graph, *cgi*, whose
/// queue a request waits in past `max_scripts` running.
#[test]
fn issue39_the_staged_server_runs_cgi_scripts_as_its_cgi_stage() {
    support::in_process("stages of its own process");
    let (_dir, root) = site(&[(
        "busy.sh",
        "sleep 0.5; printf 'Content-Type: text/plain\\n\\ndone'",
    )]);
    let server = support::start_with(App::new(), |c| {
        c.model = proscenium::config::Model::Staged;
        c.tools = true;
        c.root = Some(root.clone());
        c.cgi = CgiSpec {
            enabled: true,
            max_scripts: 1,
            ..CgiSpec::default()
        };
    });
    let addr = server.local_addr();
    let started = Instant::now();
    let three: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || support::get(addr, "/cgi-bin/busy.sh").text()))
        .collect();
    for answer in three {
        assert_eq!(answer.join().unwrap(), "done");
    }
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "one at a time"
    );
    let cgi = crate::stages::stage_status(addr, "staged", "cgi", |s| s["handled"] == 3);
    assert_eq!(cgi["handled"], 3, "{cgi}");
}

#[test]
fn a_script_runs_in_its_directory_and_as_the_configured_user() {
    support::in_process("scripts written to a temporary directory of its own");
    let (dir, root) = site(&[(
        "who.sh",
        "printf 'Content-Type: text/plain\\n\\n%s %s' \"$(id -u)\" \"$(pwd)\"",
    )]);
    // Where another user may reach the script.
    for path in [dir.path(), &root, &root.join("cgi-bin")] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let as_root = nix::unistd::geteuid().is_root();
    let server = serve(&root, |spec| spec.user = Some("nobody".to_owned()));
    let text = support::get(server.local_addr(), "/cgi-bin/who.sh").text();
    let (uid, cwd) = text.split_once(' ').unwrap();
    assert_eq!(Path::new(cwd), root.join("cgi-bin"));
    let expected = if as_root {
        nix::unistd::User::from_name("nobody").unwrap().unwrap().uid
    } else {
        // Not root: the server cannot switch, says so, and runs it as itself.
        nix::unistd::geteuid()
    };
    assert_eq!(uid, expected.to_string());
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Whether process `pid` is gone (or a zombie, killed but not reaped yet) within
/// `wait`.
fn ends_within(pid: i32, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .map(|(_, rest)| rest.trim().to_owned())
            });
        match state {
            None => return true,
            Some(rest) if rest.starts_with('Z') => return true,
            Some(_) if Instant::now() > deadline => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Sends `first` then a pipelined `GET /hello.txt` on one connection, and returns
/// everything the server wrote before it closed.
fn pipelined_after(addr: std::net::SocketAddr, first: &str) -> String {
    let mut client = Client::connect(addr);
    client.send(format!(
        "GET {first} HTTP/1.1\r\nHost: t\r\n\r\nGET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n"
    ));
    String::from_utf8_lossy(&client.read_to_close()).into_owned()
}

#[test]
fn issue33_output_past_its_content_length_is_cut_and_never_read_as_the_next_answer() {
    let (_dir, root) = site(&[(
        "liar.sh",
        "printf 'Content-Type: text/plain\\nContent-Length: 5\\n\\nhello'; \
         printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 6\\r\\n\\r\\nforged'",
    )]);
    let server = serve(&root, |_| {});
    let wire = pipelined_after(server.local_addr(), "/cgi-bin/liar.sh");
    assert!(wire.starts_with("HTTP/1.1 200"), "{wire}");
    assert!(wire.contains("content-length: 5\r\n"), "{wire}");
    assert!(wire.ends_with("\r\n\r\nhello"), "{wire}");
    assert!(!wire.contains("forged"), "{wire}");
    assert_eq!(wire.matches("HTTP/1.1 ").count(), 1, "{wire}");
}

#[test]
fn issue33_output_short_of_its_content_length_ends_with_the_connection_closed() {
    let (_dir, root) = site(&[(
        "short.sh",
        "printf 'Content-Type: text/plain\\nContent-Length: 50\\n\\nshort'",
    )]);
    let server = serve(&root, |_| {});
    let wire = pipelined_after(server.local_addr(), "/cgi-bin/short.sh");
    assert!(wire.contains("content-length: 50\r\n"), "{wire}");
    assert!(wire.ends_with("\r\n\r\nshort"), "{wire}");
    // The second request is never answered inside the first answer's missing bytes.
    assert_eq!(wire.matches("HTTP/1.1 ").count(), 1, "{wire}");
}

#[test]
fn issue33_a_1xx_final_status_or_a_bad_content_length_gets_502() {
    support::in_process("scripts written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = site(&[
        (
            "continue.sh",
            "printf 'Status: 100 Continue\\nContent-Type: text/plain\\n\\nx'",
        ),
        (
            "switching.sh",
            "printf 'Status: 101 Switching Protocols\\n\\n'",
        ),
        (
            "hints.sh",
            "printf 'Status: 103 Early Hints\\nLink: </a>\\n\\n'",
        ),
        (
            "nan-length.sh",
            "printf 'Content-Type: text/plain\\nContent-Length: ten\\n\\nx'",
        ),
        (
            "negative-length.sh",
            "printf 'Content-Type: text/plain\\nContent-Length: -1\\n\\nx'",
        ),
    ]);
    let server = serve(&root, |_| {});
    for (script, reason) in [
        ("continue.sh", "a 1xx Status"),
        ("switching.sh", "a 1xx Status"),
        ("hints.sh", "a 1xx Status"),
        ("nan-length.sh", "a bad Content-Length"),
        ("negative-length.sh", "a bad Content-Length"),
    ] {
        let path = format!("/cgi-bin/{script}");
        assert_eq!(
            support::get(server.local_addr(), &path).status,
            502,
            "{script}"
        );
        assert!(
            support::logged_within(&[&path, reason], Duration::from_secs(10)),
            "{script}: {reason} not logged"
        );
    }
}

/// The processes alive (not zombies) in process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        // After the name: state, ppid, pgrp.
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

/// Whether every process of group `pgid` is gone within `wait`.
fn group_ends_within(pgid: i32, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    while !group_members(pgid).is_empty() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn issue33_no_process_of_a_script_outlives_its_response_nor_holds_its_slot() {
    support::in_process("scripts written to a temporary directory of its own");
    let (dir, root) = site(&[
        (
            "closes.sh",
            "echo $$ > \"$DOCUMENT_ROOT/../closes.pid\"; printf 'Content-Type: text/plain\\n\\nbye'; \
             exec >&- 2>&-; sleep 60",
        ),
        (
            "forks.sh",
            "echo $$ > \"$DOCUMENT_ROOT/../forks.pid\"; (exec >&- 2>&-; sleep 60) & \
             printf 'Content-Type: text/plain\\n\\nbye'",
        ),
    ]);
    let server = serve(&root, |spec| spec.max_scripts = 1);
    for script in ["closes", "forks"] {
        let res = support::get(server.local_addr(), &format!("/cgi-bin/{script}.sh"));
        assert_eq!((res.status, res.text().as_str()), (200, "bye"), "{script}");
        let pgid = read_pid(&dir.path().join(format!("{script}.pid")));
        assert!(
            group_ends_within(pgid, Duration::from_secs(20)),
            "{script}: {:?} of its group still run",
            group_members(pgid)
        );
    }
    // With one slot, a script that left processes behind would have kept it: the
    // slot is free once the answer is whole.
    let again = support::get(server.local_addr(), "/cgi-bin/closes.sh");
    assert_eq!(again.status, 200);
}

#[test]
fn issue33_a_script_flooding_its_standard_error_logs_its_bound_and_one_summary() {
    support::in_process("scripts written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = site(&[(
        "flood.sh",
        "yes 'flood-marker-line' | head -n 200000 >&2; printf 'Content-Type: text/plain\\n\\ndone'",
    )]);
    let server = serve(&root, |_| {});
    let res = support::get(server.local_addr(), "/cgi-bin/flood.sh");
    assert_eq!(res.text(), "done");
    assert!(
        support::logged_within(
            &["/cgi-bin/flood.sh", "199900 more lines", "not logged"],
            Duration::from_secs(30)
        ),
        "no summary line"
    );
    let logged = support::logged_lines(&["/cgi-bin/flood.sh", "flood-marker-line"]);
    assert_eq!(logged, 100);
}
