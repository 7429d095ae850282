//! The admin listener through the binary (issue 36): `--admin-bind`, named in the
//! start line, and under prefork bound by the supervisor alone; the dashboard in
//! headless Chromium while the server is under load.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use proscenium::testing::{Redis, free_port};

use super::{children, get, keep_asking, signal, start, wait_exit, within};

#[test]
fn issue36_under_prefork_the_supervisor_alone_binds_the_admin_listener() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    // A worker binding the same fixed address would fail to start, and the
    // supervisor would have no worker to serve the files.
    let (mut child, addr, line) = start(dir.path(), &["--workers", "2", "--admin-bind", &admin]);
    assert!(
        line.contains(&format!("; admin on http://{admin};")),
        "{line}"
    );
    assert!(get(&admin, "/healthz").ends_with("\r\n\r\nok\n"));
    assert!(get(&admin, "/readyz").starts_with("HTTP/1.1 200 "));
    for _ in 0..10 {
        assert!(get(&addr, "/f.txt").ends_with("same file"));
    }
    assert!(get(&addr, "/metrics").starts_with("HTTP/1.1 404 "));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Returns the sum of the samples of `family` (every label set) in the admin
/// listener's `/metrics` at `admin`.
fn scraped(admin: &str, family: &str) -> u64 {
    let answer = get(admin, "/metrics");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    answer
        .lines()
        .filter(|l| l.starts_with(&format!("{family}{{")) || l.starts_with(&format!("{family} ")))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn issue36_a_prefork_supervisors_metrics_sum_its_workers_and_survive_a_dead_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let (mut child, addr, _) = start(dir.path(), &["--workers", "2", "--admin-bind", &admin]);
    within(30, "two workers", || children(child.id()).len() == 2);
    let ask = |n: usize| {
        for _ in 0..n {
            assert!(get(&addr, "/f.txt").ends_with("same file"));
        }
    };
    ask(20);
    assert_eq!(scraped(&admin, "proscenium_http_requests_total"), 20);
    assert_eq!(
        scraped(&admin, "proscenium_http_request_duration_seconds_count"),
        20
    );
    assert_eq!(scraped(&admin, "proscenium_connections_accepted_total"), 20);
    // A worker dies: what it counted up to the last scrape stays in the sum.
    let first = children(child.id());
    for pid in &first {
        signal_pid(*pid, "KILL");
    }
    within(60, "two new workers", || {
        let now = children(child.id());
        now.len() == 2 && now.iter().all(|pid| !first.contains(pid))
    });
    assert_eq!(scraped(&admin, "proscenium_http_requests_total"), 20);
    ask(5);
    assert_eq!(scraped(&admin, "proscenium_http_requests_total"), 25);
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// `/readyz` follows the Redis that `[redis] url` names: ready while it answers,
/// 503 `redis unreachable` while it is down, ready again once it is back on its port.
#[test]
fn issue36_readyz_is_503_while_the_configured_redis_is_unreachable() {
    let redis = Redis::start();
    let port = redis.port();
    let served = tempfile::tempdir().unwrap();
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("proscenium.toml");
    std::fs::write(&file, format!("[redis]\nurl = \"{}\"\n", redis.url())).unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let args = ["--config", file.to_str().unwrap(), "--admin-bind", &admin];
    let (mut child, _, _) = start(served.path(), &args);
    let ready = |status: &str, body: &str| {
        let answer = get(&admin, "/readyz");
        answer.starts_with(&format!("HTTP/1.1 {status} ")) && answer.ends_with(body)
    };
    within(60, "ready with Redis up", || ready("200", "ready\n"));
    drop(redis);
    within(60, "503 with Redis down", || {
        ready("503", "redis unreachable\n")
    });
    let _redis = Redis::start_on(port);
    within(60, "ready with Redis back", || ready("200", "ready\n"));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Redis round trips are counted by whose and how they ended: the hub's, one per post
/// a Lua route publishes to `[feeds] redis`, and the readiness ping's; with Redis
/// killed, the pings' errors rise.
#[test]
fn issue36_metrics_count_redis_round_trips_and_errors_by_user() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.lua");
    std::fs::write(
        &app,
        "app:get('/post', function(req) proscenium.publish('/t', 'hi') return 'ok' end)\n",
    )
    .unwrap();
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("proscenium.toml");
    std::fs::write(&file, format!("[feeds]\nredis = \"{}\"\n", redis.url())).unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let args = [
        "--app",
        app.to_str().unwrap(),
        "--config",
        file.to_str().unwrap(),
        "--admin-bind",
        &admin,
    ];
    let (mut child, addr, _) = start(dir.path(), &args);
    let count = |user: &str, outcome: &str| {
        let series =
            format!("proscenium_redis_commands_total{{user=\"{user}\",outcome=\"{outcome}\"}}");
        scraped(&admin, &series)
    };
    within(60, "the hub's publishes counted", || {
        assert!(get(&addr, "/post").starts_with("HTTP/1.1 200 "));
        count("hub", "ok") >= 3
    });
    within(60, "the pings counted", || count("ready", "ok") >= 1);
    let timed = "proscenium_redis_round_trip_seconds_count{user=\"hub\"}";
    assert!(scraped(&admin, timed) >= 3);
    let errors = count("ready", "error");
    drop(redis);
    within(60, "the pings' errors counted", || {
        count("ready", "error") > errors
    });
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Lua and CGI runs are counted in `/metrics` by how they ended: a Lua route that
/// returns, one that raises, one stopped past its instruction budget; a CGI script
/// that answers and one whose output is not a CGI response.
#[test]
fn issue36_metrics_count_lua_and_cgi_runs_by_outcome() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.lua");
    std::fs::write(
        &app,
        "app:get('/ok', function(req) return 'ok' end)\n\
         app:get('/boom', function(req) error('boom') end)\n\
         app:get('/spin', function(req) while true do end end)\n",
    )
    .unwrap();
    let bin = dir.path().join("cgi-bin");
    std::fs::create_dir(&bin).unwrap();
    for (name, body) in [
        ("ok.sh", "printf 'Content-Type: text/plain\\r\\n\\r\\nok'"),
        ("bad.sh", "echo 'not a header'"),
    ] {
        let script = bin.join(name);
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("proscenium.toml");
    std::fs::write(&file, "[lua]\ninstructions = 100000\n").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let args = [
        "--app",
        app.to_str().unwrap(),
        "--cgi",
        "--config",
        file.to_str().unwrap(),
        "--admin-bind",
        &admin,
    ];
    let (mut child, addr, _) = start(dir.path(), &args);
    for (path, status) in [
        ("/ok", "200"),
        ("/boom", "500"),
        ("/spin", "503"),
        ("/cgi-bin/ok.sh", "200"),
        ("/cgi-bin/bad.sh", "502"),
    ] {
        let answer = get(&addr, path);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{path}: {answer}"
        );
    }
    let count = |series: &str| scraped(&admin, series);
    assert_eq!(count("proscenium_lua_runs_total{outcome=\"ok\"}"), 1);
    assert_eq!(
        count("proscenium_lua_runs_total{outcome=\"script_error\"}"),
        1
    );
    assert_eq!(
        count("proscenium_lua_runs_total{outcome=\"instructions\"}"),
        1
    );
    assert_eq!(count("proscenium_lua_runs_total{outcome=\"memory\"}"), 0);
    assert_eq!(count("proscenium_cgi_runs_total"), 2);
    assert_eq!(
        count("proscenium_cgi_failures_total{reason=\"bad_gateway\"}"),
        1
    );
    assert_eq!(
        count("proscenium_cgi_failures_total{reason=\"timeout\"}"),
        0
    );
    assert!(get(&admin, "/metrics").contains("\nproscenium_lua_run_seconds_total "));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Each loop's turns — its runs between two waits — are timed in
/// `proscenium_loop_turn_seconds`, a histogram by thread.
#[test]
fn issue36_metrics_time_each_loops_turns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let (mut child, addr, _) = start(dir.path(), &["--loops", "2", "--admin-bind", &admin]);
    for _ in 0..10 {
        assert!(get(&addr, "/f.txt").ends_with("same file"));
    }
    let text = get(&admin, "/metrics");
    assert!(
        text.contains(
            "proscenium_loop_turn_seconds_bucket{thread=\"proscenium-loop-1\",le=\"+Inf\"}"
        ),
        "{text}"
    );
    assert!(scraped(&admin, "proscenium_loop_turn_seconds_count") >= 10);
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Each loop's queue — connections handed to it and not yet taken — is a gauge of
/// `proscenium_loop_queued`, one series per loop.
#[test]
fn issue36_metrics_give_each_loops_queue_length() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let (mut child, addr, _) = start(dir.path(), &["--loops", "2", "--admin-bind", &admin]);
    for _ in 0..4 {
        assert!(get(&addr, "/f.txt").ends_with("same file"));
    }
    let text = get(&admin, "/metrics");
    assert!(
        text.contains("# TYPE proscenium_loop_queued gauge\n"),
        "{text}"
    );
    for thread in ["proscenium-loop-0", "proscenium-loop-1"] {
        let series = format!("\nproscenium_loop_queued{{thread=\"{thread}\"}} ");
        assert!(text.contains(&series), "{thread}: {text}");
    }
    let series = text
        .lines()
        .filter(|l| l.starts_with("proscenium_loop_queued{"));
    assert_eq!(series.count(), 2, "{text}");
    // Every connection was served: each was taken off its loop's queue.
    assert_eq!(scraped(&admin, "proscenium_loop_queued"), 0, "{text}");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

fn signal_pid(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The dashboard in headless Chromium (Debian's), driven by `tests/browser/dashboard.mjs`
/// (playwright-core from npm; `scripts/test` installs both), while four clients keep
/// asking for a file: the page draws the samples its event stream brings, the route's
/// rate among them, and is kept as a screenshot (`target/tmp/dashboard.png`).
#[test]
fn issue36_the_dashboard_draws_the_live_load_in_a_browser() {
    let browser = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        browser.join("node_modules/playwright-core").is_dir(),
        "playwright-core is missing: npm ci --prefix {} (scripts/test does)",
        browser.display()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    let (mut child, addr, _) = start(dir.path(), &["--admin-bind", &admin]);
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..4)
        .map(|_| keep_asking(addr.clone(), stop.clone()))
        .collect();
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    let run = Command::new("node")
        .arg(browser.join("dashboard.mjs"))
        .arg(format!("http://{admin}/"))
        .arg(&screenshot)
        .output()
        .expect("node runs");
    stop.store(true, Ordering::Relaxed);
    let failed: usize = load.into_iter().map(|l| l.join().unwrap().1).sum();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the browser run failed: {out}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let shown: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    eprintln!(
        "the dashboard showed {shown} (screenshot: {})",
        screenshot.display()
    );
    assert_eq!(failed, 0);
    assert!(shown["samples"].as_u64().unwrap() >= 3, "{shown}");
    assert_eq!(shown["state"], "live");
    let rate = |text: &serde_json::Value| text.as_str().unwrap().replace(',', "").parse::<f64>();
    assert!(rate(&shown["requests_per_s"]).unwrap() > 0.0, "{shown}");
    let routes = shown["routes"].as_array().unwrap();
    let fallback = routes
        .iter()
        .find(|row| row[0] == "<fallback>")
        .unwrap_or_else(|| panic!("no <fallback> row: {shown}"));
    assert!(rate(&fallback[1]).unwrap() > 0.0, "{shown}");
    assert!(shown["threads"].as_u64().unwrap() >= 1, "{shown}");
    assert!(screenshot.is_file());
    // The page and its stream are the admin listener's alone.
    assert!(get(&addr, "/events").starts_with("HTTP/1.1 404 "));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}
