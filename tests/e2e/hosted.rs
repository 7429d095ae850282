//! Hosted apps (issue 39): a plain Rack app (Debian's ruby-rack) and a plain WSGI app
//! (the standard library's types alone) served from pools of interpreter processes,
//! Proscenium serving the static files before them.

use std::path::Path;
use std::time::Duration;

use proscenium::{App, Config};

use crate::support::{self, Client};

const CONFIG_RU: &str = r#"
run lambda { |env|
  case env["PATH_INFO"]
  when "/echo" then [200, { "content-type" => "text/plain" }, [env["REQUEST_METHOD"], " ", env["rack.input"].read]]
  when "/slow" then sleep 3; [200, {}, ["slow"]]
  when "/big" then [200, {}, (0...200).map { |i| format("%04d", i) * 250 }]
  when "/boom" then raise "boom"
  when "/crash" then exit!(3)
  else [200, { "content-type" => "text/plain", "x-app" => "rack" },
        ["rack: ", env["REQUEST_METHOD"], " ", env["PATH_INFO"], " ", env["QUERY_STRING"], " pid ", Process.pid.to_s]]
  end
}
"#;

const WSGI_APP: &str = r#"
import os

def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/echo":
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ["REQUEST_METHOD"].encode(), b" ", body]
    if path == "/boom":
        raise RuntimeError("boom")
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-App", "wsgi")])
    return [("wsgi: %s %s pid %d" % (environ["REQUEST_METHOD"], path, os.getpid())).encode()]
"#;

/// A site directory `public/` (a static file) beside `app_file` holding `app`.
fn site(app_file: &str, app: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("public")).unwrap();
    std::fs::write(dir.path().join("public/static.txt"), "a file").unwrap();
    std::fs::write(dir.path().join(app_file), app).unwrap();
    dir
}

fn hosting(dir: &Path, configure: impl FnOnce(&mut Config)) -> proscenium::ServerHandle {
    let root = dir.join("public");
    support::start_with(App::new(), |c| {
        c.root = Some(root);
        c.hosted.processes = Some(2);
        configure(c);
    })
}

fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> support::Response {
    let raw = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    support::exchange(addr, raw)
}

#[test]
fn issue39_a_rack_app_is_served_from_ruby_processes_below_the_static_files() {
    let dir = site("config.ru", CONFIG_RU);
    let config_ru = dir.path().join("config.ru");
    let server = hosting(dir.path(), |c| c.hosted.rack = Some(config_ru));
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/static.txt").text(), "a file");
    let res = support::get(addr, "/hi?x=1");
    assert_eq!((res.status, res.header("x-app")), (200, Some("rack")));
    assert!(
        res.text().starts_with("rack: GET /hi x=1 pid "),
        "{}",
        res.text()
    );
    assert_eq!(post(addr, "/echo", "abc").text(), "POST abc");
    // A short answer comes whole; 200 kB come in pieces as the app writes them.
    let big = support::get(addr, "/big").text();
    let written: String = (0..200).map(|i| format!("{i:04}").repeat(250)).collect();
    assert_eq!((big.len(), big == written), (200_000, true));
    // An app that raises gets 500; one whose process dies, 502 — and the next
    // request is served, by a process started in its place.
    assert_eq!(support::get(addr, "/boom").status, 500);
    assert_eq!(support::get(addr, "/crash").status, 502);
    assert_eq!(support::get(addr, "/after").status, 200);
}

/// A slow app holds one interpreter process, never a loop: on one loop, with two
/// processes, a quick request is answered while a slow one runs.
#[test]
fn issue39_a_slow_rack_request_holds_one_process_and_no_loop() {
    let dir = site("config.ru", CONFIG_RU);
    let config_ru = dir.path().join("config.ru");
    let server = hosting(dir.path(), |c| {
        c.hosted.rack = Some(config_ru);
        c.loops = Some(1);
        c.threads = Some(4);
    });
    let addr = server.local_addr();
    let mut slow = Client::connect(addr);
    slow.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(300));
    let quick = support::get(addr, "/quick");
    assert_eq!(quick.status, 200);
    // Answered while the slow one runs: had it waited behind it, the slow answer
    // would be here already.
    let peek = slow.writer();
    peek.set_nonblocking(true).unwrap();
    let waiting = peek.peek(&mut [0; 1]);
    assert!(
        waiting.is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the slow answer came first"
    );
    peek.set_nonblocking(false).unwrap();
    assert_eq!(slow.response().text(), "slow");
}

#[test]
fn issue39_a_wsgi_app_is_served_from_python_processes() {
    let dir = site("hello.py", WSGI_APP);
    let module_dir = dir.path().to_owned();
    let server = hosting(dir.path(), |c| {
        c.hosted.wsgi = Some("hello:application".to_owned());
        c.hosted.dir = Some(module_dir);
    });
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/static.txt").text(), "a file");
    let res = support::get(addr, "/caf%C3%A9");
    assert_eq!((res.status, res.header("x-app")), (201, Some("wsgi")));
    assert!(
        res.text().starts_with("wsgi: GET /caf\u{c3}\u{a9} pid "),
        "{}",
        res.text()
    );
    assert_eq!(post(addr, "/echo", "xyz").text(), "POST xyz");
    assert_eq!(support::get(addr, "/boom").status, 500);
    assert_eq!(support::get(addr, "/again").status, 201);
}

#[test]
fn issue39_an_app_that_does_not_load_stops_the_start() {
    let dir = site("config.ru", "run undefined_thing_here\n");
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        hosted: proscenium::config::HostedSpec {
            rack: Some(dir.path().join("config.ru")),
            processes: Some(1),
            ..Default::default()
        },
        ..Config::default()
    };
    let refused = proscenium::Server::new(App::new())
        .config(config)
        .start()
        .unwrap_err()
        .to_string();
    assert!(refused.contains("before its app loaded"), "{refused}");
}

/// The pid in a Rack answer's body (`... pid N`).
fn rack_pid(res: &support::Response) -> String {
    let text = res.text();
    text.rsplit_once(" pid ")
        .unwrap_or_else(|| panic!("no pid in {text}"))
        .1
        .to_owned()
}

/// Clients that close with requests pipelined (as a load generator does when it
/// stops) cost no interpreter: the requests still waiting for the process are dropped,
/// the answers under way read to their end, and the process kept.
#[test]
fn issue39_clients_that_leave_with_requests_pipelined_keep_the_interpreter() {
    support::in_process("it compares the pid of its one interpreter before and after");
    let dir = site("config.ru", CONFIG_RU);
    let config_ru = dir.path().join("config.ru");
    let server = hosting(dir.path(), |c| {
        c.hosted.rack = Some(config_ru);
        c.hosted.processes = Some(1);
    });
    let addr = server.local_addr();
    let before = rack_pid(&support::get(addr, "/before"));
    let mut clients: Vec<Client> = (0..8).map(|_| Client::connect(addr)).collect();
    for client in &mut clients {
        client.send("GET /pipelined HTTP/1.1\r\nHost: t\r\n\r\n".repeat(20));
    }
    // Each has had an answer, so each has its next request with the app or waiting;
    // then each resets its connection, as a load generator does when it stops.
    for client in &mut clients {
        assert_eq!(client.response().status, 200);
        let reset = nix::libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        nix::sys::socket::setsockopt(&client.writer(), nix::sys::socket::sockopt::Linger, &reset)
            .unwrap();
    }
    drop(clients);
    let after = support::get(addr, "/after");
    assert_eq!(after.status, 200);
    assert_eq!(rack_pid(&after), before, "the interpreter was replaced");
}
