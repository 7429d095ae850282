//! The `proscenium` binary as a user runs it: start line, serving a directory, exit
//! codes, and a clean exit on SIGTERM and SIGINT; over TLS (`tls.rs`) and HTTP/2
//! (`http2.rs`); the admin listener (`admin.rs`); systemd, signals and logs under a
//! supervisor (`lifecycle.rs`); each signal under every model (`signals.rs`); worker
//! processes under every model (`workers.rs`); a hosted app named as typed
//! (`hosted.rs`); a stage graph described in a file (`graph.rs`).

mod admin;
mod config;
mod graph;
mod hosted;
mod http2;
mod lifecycle;
mod signals;
mod tls;
mod traces;
mod workers;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn proscenium() -> Command {
    Command::new(env!("CARGO_BIN_EXE_proscenium"))
}

/// Starts `serve DIR ARGS` on a free port; returns the child, its address and its
/// start line.
fn start(dir: &std::path::Path, args: &[&str]) -> (Child, String, String) {
    start_on(dir, "127.0.0.1:0", args)
}

/// Starts `serve DIR ARGS` on `bind`, as [`start`].
fn start_on(dir: &std::path::Path, bind: &str, args: &[&str]) -> (Child, String, String) {
    let mut child = proscenium()
        .args(["serve", dir.to_str().unwrap(), "--bind", bind])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (line, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
    let addr = addr.to_string();
    (child, addr, line)
}

/// Starts `serve DIR` with one loop and returns the child and its address.
fn serve(dir: &std::path::Path) -> (Child, String) {
    let (child, addr, line) = start(dir, &["--loops", "1"]);
    assert!(
        line.contains("model loops, 1 loop, dispatch jsq, blocking pool 64"),
        "start line: {line}"
    );
    (child, addr)
}

/// Asks for `path` on a connection of its own; panics if no answer comes in 30 s.
fn get(addr: &str, path: &str) -> String {
    proscenium::testing::exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    )
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for the child to exit and returns its code: 60 s at most, the margin of a
/// shutdown on a machine busy with the whole suite.
fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("exited, not killed");
        }
        assert!(Instant::now() < deadline, "did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serves_a_directory_and_exits_zero_on_sigterm_and_sigint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hi from a file").unwrap();
    for sig in ["TERM", "INT"] {
        let (mut child, addr) = serve(dir.path());
        let answer = get(&addr, "/hello.txt");
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.ends_with("hi from a file"), "{answer}");
        signal(&child, sig);
        assert_eq!(wait_exit(&mut child), 0, "SIG{sig}");
    }
}

/// Runs `serve` over an empty directory with `args` and `env`, its stderr written to a
/// file, until it has started and then exited on SIGTERM (with 0); returns what it
/// logged.
fn logged_by_a_run(args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let mut child = proscenium()
        .args([
            "serve",
            dir.path().to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
        ])
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    proscenium::launch::read_start_line(&mut child).unwrap();
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    std::fs::read_to_string(&log).unwrap()
}

/// Issue 36: log lines written to a file (or a pipe, a journal) carry no colour codes.
#[test]
fn issue36_log_lines_off_a_terminal_are_plain_text() {
    let lines = logged_by_a_run(&[], &[]);
    assert!(lines.contains("INFO"), "a line was logged: {lines:?}");
    assert!(!lines.contains('\x1b'), "no escape codes: {lines:?}");
}

#[test]
fn bad_flags_and_config_exit_two_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "loops = \"many\"\n").unwrap();
    for args in [
        vec!["serve", "--loops", "x"],
        vec!["serve", "--config", bad.to_str().unwrap()],
        vec!["serve", "/no/such/dir"],
    ] {
        let out = proscenium().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.trim().is_empty(), "{args:?}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn an_address_in_use_exits_one() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = proscenium()
        .args(["serve", "--bind", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("listen on"));
}

#[test]
fn routes_lists_the_configured_routes() {
    let out = proscenium().args(["routes", "--tools"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GET     /_status"), "{text}");
    assert!(text.contains("/_delay"), "{text}");
}

#[test]
fn the_demo_site_mounts_no_diagnostic_routes() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/site");
    let out = proscenium().args(["routes", site]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("/_"), "{text}");
}

/// Issue 20: `serve DIR --cgi` runs the demo site's script; without the flag its text
/// is a static file like any other.
#[test]
fn the_demo_sites_script_runs_with_cgi_and_is_a_file_without() {
    let site = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/site"));
    let (mut child, addr, _) = start(site, &["--cgi"]);
    let ran = get(&addr, "/cgi-bin/hello.sh/more?name=you");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    assert!(ran.starts_with("HTTP/1.1 200 OK\r\n"), "{ran}");
    assert!(
        ran.contains("Hello from /cgi-bin/hello.sh, run by proscenium/"),
        "{ran}"
    );
    assert!(
        ran.contains("QUERY_STRING=name=you\nPATH_INFO=/more\n"),
        "{ran}"
    );
    let (mut child, addr, _) = start(site, &[]);
    let text = get(&addr, "/cgi-bin/hello.sh");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    assert!(text.contains("printf 'Content-Type"), "{text}");
}

/// Issue 20: `serve DIR --app app.lua` serves a Lua app's routes before DIR's files;
/// one that does not compile stops the start with its file and line.
#[test]
fn a_lua_app_is_served_with_app_and_a_broken_one_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a file").unwrap();
    let app = dir.path().join("app.lua");
    std::fs::write(
        &app,
        "app:get('/hi/:who', function(req) return 'hi ' .. req.params.who end)\n",
    )
    .unwrap();
    let (mut child, addr, _) = start(dir.path(), &["--app", app.to_str().unwrap()]);
    let hi = get(&addr, "/hi/lua");
    let file = get(&addr, "/f.txt");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    assert!(hi.ends_with("hi lua"), "{hi}");
    assert!(file.ends_with("a file"), "{file}");

    std::fs::write(&app, "app:get('/x', function(req)\n  return 1 +\nend)\n").unwrap();
    let out = proscenium()
        .args([
            "serve",
            dir.path().to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
            "--app",
        ])
        .arg(&app)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("app.lua:3:"), "{stderr}");
}

/// Issue 33: a Lua pattern a client sends that backtracks for minutes holds script
/// threads, never a loop or a connection's thread: under every model, two such
/// requests get 503 at their deadline, another route is answered meanwhile, and
/// SIGTERM ends the process.
#[test]
fn issue33_a_backtracking_lua_pattern_leaves_every_model_serving_and_stoppable() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    let app = site.join("app.lua");
    std::fs::write(
        &app,
        "app:get('/find', function(req) return tostring(string.rep('a', 24):find(req.args.q)) end)\n\
         app:get('/hi', function(req) return 'hi' end)\n",
    )
    .unwrap();
    let config = dir.path().join("proscenium.toml");
    // Three script threads: the two attackers hold two, `/hi` (a Lua route too) gets
    // the third — with one a core (two here) it queued behind them on a busy machine
    // and got its 503 at the deadline as they did (the gate's run at 0a06252).
    std::fs::write(&config, "[lua]\ntimeout = 0.5\nthreads = 3\n").unwrap();
    let find = format!("/find?q={}x", ".-".repeat(12));
    let models = [
        "loops:2",
        "event-loop",
        "thread-pool:4",
        "thread-per-conn:8",
        "staged:2",
        "prefork:2",
    ];
    for model in models {
        let args = ["--model", model, "--app", app.to_str().unwrap()];
        let config = ["--config", config.to_str().unwrap()];
        let (mut child, addr, _) = start(&site, &[&args[..], &config[..]].concat());
        let attackers: Vec<_> = (0..2)
            .map(|_| {
                let (addr, find) = (addr.clone(), find.clone());
                std::thread::spawn(move || get(&addr, &find))
            })
            .collect();
        assert!(get(&addr, "/hi").ends_with("hi"), "{model}");
        for attacker in attackers {
            let answer = attacker.join().unwrap();
            assert!(answer.starts_with("HTTP/1.1 503"), "{model}: {answer}");
        }
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0, "{model}");
    }
}

#[test]
fn help_names_every_serve_flag() {
    let out = proscenium().args(["serve", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--bind",
        "--loops",
        "--dispatch",
        "--config",
        "--log",
        "--debug",
        "--tools",
        "--cgi",
        "--lua",
        "--app",
        "--rack",
        "--wsgi",
        "--set",
    ] {
        assert!(text.contains(flag), "{flag} missing from help");
    }
}

#[test]
fn every_model_serves_and_names_itself_in_the_start_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let cases = [
        ("loops:2", "model loops, 2 loops"),
        (
            "event-loop",
            "model event-loop, 1 loop, dispatch jsq, blocking inline",
        ),
        ("thread-pool:4", "model thread-pool, 4 threads"),
        (
            "thread-per-conn:8",
            "model thread-per-conn, at most 8 threads",
        ),
        ("staged:2", "model staged, one cluster `http` of 2 threads"),
    ];
    for (model, says) in cases {
        let (mut child, addr, line) = start(dir.path(), &["--model", model]);
        assert!(line.contains(says), "{model}: {line}");
        assert!(get(&addr, "/f.txt").ends_with("same file"), "{model}");
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0, "{model}");
    }
}

/// Returns the pids of the children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let out = Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Sends requests until `stop` is set; returns how many failed.
fn keep_asking(
    addr: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<(usize, usize)> {
    std::thread::spawn(move || {
        let (mut ok, mut failed) = (0, 0);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match std::panic::catch_unwind(|| get(&addr, "/f.txt")) {
                Ok(answer) if answer.ends_with("same file") => ok += 1,
                _ => failed += 1,
            }
        }
        (ok, failed)
    })
}

/// Waits for `done` as [`within`] does, with a minute's margin: workers start, die
/// and are replaced while the rest of the suite keeps both cores busy (10 s timed
/// out once, the stopped worker's replacement among 47 tests).
fn wait_for(done: impl FnMut() -> bool) {
    within(60, "done", done);
}

/// Waits up to `secs` seconds for `done`, panicking with `what` past that.
fn within(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A spool directory that does not exist, or is a file, stops start-up with exit 1
/// and a message naming the key and the directory, instead of failing the first
/// large body. (Tests run as root here, which may write any directory, so an
/// unwritable one is not among the cases.)
#[test]
fn issue_15_a_spool_dir_the_server_cannot_use_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    for spool_dir in [dir.path().join("missing"), file] {
        // timeout(1) bounds the test should the server start after all.
        let out = Command::new("timeout")
            .arg("10")
            .arg(env!("CARGO_BIN_EXE_proscenium"))
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("PROSCENIUM_LIMITS_SPOOL_DIR", &spool_dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{spool_dir:?}: {stderr}");
        assert!(
            stderr.contains(&format!("limits.spool_dir {}", spool_dir.display())),
            "{stderr}"
        );
    }
}

/// Issue 33: `serve DIR` never serves nor lists the configuration — the file it read
/// (found in DIR, or named by `--config` below DIR) or DIR's `proscenium.toml`, under
/// its own name or a link's — where passwords go.
#[test]
fn issue33_the_configuration_file_is_never_served_nor_listed() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "[redis]\nurl = \"redis://:s3cret-pw@127.0.0.1:6379\"\n";
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("proscenium.toml"), secret).unwrap();
    std::fs::write(dir.path().join("conf/site.toml"), secret).unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hi").unwrap();
    std::os::unix::fs::symlink("proscenium.toml", dir.path().join("link.toml")).unwrap();
    std::os::unix::fs::symlink("site.toml", dir.path().join("conf/other.toml")).unwrap();
    let named = dir.path().join("conf/site.toml");
    // The staged model's cache of small files answers the second asking of a file.
    for args in [
        vec![],
        vec!["--config", named.to_str().unwrap()],
        vec!["--model", "staged"],
    ] {
        let (mut child, addr, _) = start(dir.path(), &args);
        assert!(get(&addr, "/hello.txt").starts_with("HTTP/1.1 200"));
        for path in ["/proscenium.toml", "/link.toml", "/./proscenium.toml"].repeat(2) {
            let answer = get(&addr, path);
            assert!(
                answer.starts_with("HTTP/1.1 404"),
                "{args:?} {path}: {answer}"
            );
        }
        let listing = get(&addr, "/");
        assert!(listing.contains("hello.txt"), "{listing}");
        assert!(!listing.contains("proscenium.toml"), "{args:?}: {listing}");
        assert!(!listing.contains("link.toml"), "{args:?}: {listing}");
        if args.first() == Some(&"--config") {
            for path in ["/conf/site.toml", "/conf/other.toml"] {
                let answer = get(&addr, path);
                assert!(answer.starts_with("HTTP/1.1 404"), "{path}: {answer}");
            }
            assert!(!get(&addr, "/conf/").contains("site.toml"));
        }
        signal(&child, "TERM");
        assert_eq!(wait_exit(&mut child), 0);
    }
}

/// Issue 33: hostile values of every kind of key — durations, sizes, counts, in
/// every table — stop the start with exit 2 and one line naming the source, the key
/// and the range, instead of failing later (a header timeout of 1e19 s killed every
/// loop while the process kept listening).
#[test]
fn issue33_hostile_configuration_values_stop_the_start_with_one_line() {
    let durations = [
        "timeouts.header",
        "timeouts.body",
        "timeouts.grace",
        "timeouts.idle",
        "timeouts.queue",
        "timeouts.shutdown",
        "timeouts.stall",
        "cgi.timeout",
        "client.connect_timeout",
        "client.timeout",
        "client.idle_timeout",
        "redis.claim_idle",
        "redis.heartbeat",
    ];
    let counts = [
        "loops",
        "threads",
        "workers",
        "thread_queue",
        "blocking_threads",
        "limits.max_body",
        "limits.max_connections",
        "limits.max_requests_per_conn",
        "cgi.max_scripts",
        "cgi.log_lines",
        "client.max_per_host",
        "client.retries",
        "client.max_body",
        "feeds.history",
        "feeds.queue",
        "lua.instructions",
        "lua.memory",
        "redis.max_deliveries",
        "dispatchers.d.threads",
        "dispatchers.d.throughput",
        "pools.p.queue",
        "clusters.c.threads",
        "clusters.c.queue",
        "clusters.c.batch",
        "clusters.c.target_wait_ms",
        "clusters.c.instances.stage",
    ];
    let hostile = ["1e19", "-1", "nan", "inf", "-inf", "9223372036854775807"];
    let mut cases: Vec<(&str, &str)> = Vec::new();
    for key in durations {
        cases.extend(hostile.iter().map(|v| (key, *v)));
        cases.extend([(key, "86401"), (key, "\"soon\"")]);
    }
    for key in counts {
        cases.extend(hostile.iter().map(|v| (key, *v)));
        cases.push((key, "1.5"));
    }
    // Zero where zero means nothing.
    for key in [
        "timeouts.header",
        "timeouts.idle",
        "cgi.timeout",
        "cgi.max_scripts",
    ] {
        cases.push((key, "0"));
    }
    cases.extend([("client.max_per_host", "0"), ("feeds.queue", "0")]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hostile.toml");
    for (key, value) in cases {
        let (table, name) = key.rsplit_once('.').unwrap_or(("", key));
        // A pool needs its threads; the value is on the file's last line.
        let extra = if table == "pools.p" {
            "threads = 1\n"
        } else {
            ""
        };
        let header = if table.is_empty() {
            String::new()
        } else {
            format!("[{table}]\n")
        };
        std::fs::write(&file, format!("{header}{extra}{name} = {value}\n")).unwrap();
        let out = proscenium()
            .args(["config", "--config", file.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key} = {value}: {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{key} = {value}: {stderr}"
        );
        for part in [file.to_str().unwrap(), key, "expected"] {
            assert!(
                stderr.contains(part),
                "{key} = {value}: {part} missing: {stderr}"
            );
        }
        let ranges = [
            "expected seconds from",
            "expected milliseconds from",
            "expected bytes from",
            "expected a number from",
        ];
        assert!(
            ranges.iter().any(|range| stderr.contains(range)),
            "{key} = {value}: no range: {stderr}"
        );
    }
    // From a variable and a flag, and through `serve`: no port is ever taken.
    for (env, args) in [
        (
            Some(("PROSCENIUM_TIMEOUTS_SHUTDOWN", "1e19")),
            vec!["serve"],
        ),
        (Some(("PROSCENIUM_TIMEOUTS_STALL", "nan")), vec!["serve"]),
        (None, vec!["serve", "--loops", "100000000000"]),
    ] {
        let mut command = proscenium();
        command.args(&args).args(["--bind", "127.0.0.1:0"]);
        if let Some((name, value)) = env {
            command.env(name, value);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?} {args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("expected"), "{stderr}");
    }
}
