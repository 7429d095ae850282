//! Issue 33: no script freezes a loop. Lua runs on script threads of its own; a
//! request whose script will not stop gets 503 at its deadline, its thread is retired
//! and replaced, and the server goes on and shuts down; the C functions that looped
//! unbounded end at once. Under every model (the suite runs once per model), with a
//! small pool under the thread models.

use std::path::Path;
use std::time::Duration;

use proscenium::App;
use proscenium::lua::LuaSpec;

use crate::lua::root;
use crate::stages::stage_status;
use crate::support::{self, Client};

/// A pattern that backtracks for seconds against [`TEXT`] and matches nothing: ten
/// lazy wildcards and a letter not there.
const PATTERN: &str = ".-.-.-.-.-.-.-.-.-.-x";

/// The page matching the query's pattern against twenty letters.
const FIND: &str = r#"function handle(req)
  return tostring(string.rep("a", 20):find(req.args.q))
end"#;

/// Serves `root`'s pages with three script threads, a deadline of 0.3 s, at most
/// `retired` retired threads, and four threads under the thread models.
fn serve(root: &Path, retired: usize) -> proscenium::ServerHandle {
    support::start_with(App::new(), |c| {
        c.root = Some(root.to_owned());
        c.threads = Some(4);
        c.lua = LuaSpec {
            enabled: true,
            threads: 3,
            timeout: Duration::from_millis(300),
            retired,
            ..LuaSpec::default()
        };
    })
}

/// Sends `path` twice at once, each on a connection of its own, then asks for
/// `/hello.lua` on a third while they run; returns the two statuses and the third's.
fn two_at_once_then_hello(addr: std::net::SocketAddr, path: &str) -> (Vec<u16>, u16) {
    let mut attackers: Vec<Client> = (0..2).map(|_| Client::connect(addr)).collect();
    for client in &mut attackers {
        client.get(path);
    }
    let hello = support::get(addr, "/hello.lua");
    assert_eq!(hello.text(), "hello", "{path}");
    let statuses = attackers.iter_mut().map(|c| c.response().status).collect();
    (statuses, hello.status)
}

/// Shuts `server` down on a thread of its own; panics unless it is done within 30 s.
fn shut_down_within_30s(server: proscenium::ServerHandle) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        server.shutdown();
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("the server shut down within 30 s");
}

#[test]
fn issue33_scripts_that_would_freeze_a_loop_leave_the_server_serving_and_stoppable() {
    support::in_process("its log");
    support::capture_logs();
    let (_dir, root) = root(&[
        ("hello.lua", "function handle(req) return 'hello' end"),
        ("find.lua", FIND),
        (
            "rep.lua",
            "function handle(req) return '[' .. string.rep('', math.maxinteger) .. ']' end",
        ),
        (
            "gc.lua",
            "function handle(req)
               setmetatable({}, { __gc = function() while true do end end })
             end",
        ),
        (
            "gc_later.lua",
            "function handle(req)
               local mt = {}
               setmetatable({}, mt)
               mt.__gc = function() while true do end end
               collectgarbage()
               return 'collected'
             end",
        ),
        (
            "xpcall.lua",
            "function handle(req)
               xpcall(function() while true do end end, function() while true do end end)
             end",
        ),
    ]);
    let server = serve(&root, 8);
    let addr = server.local_addr();
    let find = format!("/find.lua?q={PATTERN}");
    // The pattern matcher cannot be stopped: the deadline answers, and the watcher
    // retires both threads and puts new ones in their place.
    assert_eq!(two_at_once_then_hello(addr, &find), (vec![503, 503], 200));
    assert!(support::logged_within(
        &["lua: a script ran past its deadline and would not stop"],
        Duration::from_secs(30)
    ));
    // The others end at once: an empty string repeated, a finalizer refused (the
    // script fails: 500) or never made one, a message handler not run past the budget.
    assert_eq!(
        two_at_once_then_hello(addr, "/rep.lua"),
        (vec![200, 200], 200)
    );
    assert_eq!(
        two_at_once_then_hello(addr, "/gc.lua"),
        (vec![500, 500], 200)
    );
    assert_eq!(
        two_at_once_then_hello(addr, "/gc_later.lua"),
        (vec![200, 200], 200)
    );
    assert_eq!(
        two_at_once_then_hello(addr, "/xpcall.lua"),
        (vec![503, 503], 200)
    );
    // The pool kept its three threads: three requests at once are each answered.
    let mut clients: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();
    for client in &mut clients {
        client.get("/hello.lua");
    }
    for client in &mut clients {
        assert_eq!(client.response().status, 200);
    }
    // The retired threads are still matching; shutting down waits for none of them.
    shut_down_within_30s(server);
}

#[test]
fn issue33_a_script_past_its_deadline_holds_no_lock_and_its_values_fail_it_after() {
    support::in_process("its log");
    support::capture_logs();
    let (_dir, root) = root(&[
        (
            "hold.lua",
            r#"page = { state = "write" }
               function handle(req)
                 string.rep("a", 20):find(req.args.q)
                 proscenium.state.incr("n")
               end"#,
        ),
        (
            "read.lua",
            r#"page = { state = "read" }
               function handle(req) return tostring(proscenium.state.get("n")) end"#,
        ),
    ]);
    let server = serve(&root, 8);
    let addr = server.local_addr();
    let hold = support::get(addr, &format!("/hold.lua?q={PATTERN}"));
    assert_eq!(hold.status, 503);
    // The write lock was taken back at the deadline: a reader is answered.
    let read = support::get(addr, "/read.lua");
    assert_eq!((read.status, read.text().as_str()), (200, "nil"));
    // When the match ends at last, the script's write fails rather than lands.
    assert!(support::logged_within(
        &[
            "lua: /hold.lua",
            "proscenium.state.incr",
            "given up past its deadline"
        ],
        Duration::from_secs(60)
    ));
    assert_eq!(support::get(addr, "/read.lua").text(), "nil");
    shut_down_within_30s(server);
}

#[test]
fn issue33_past_the_bound_of_retired_threads_lua_requests_get_503_until_they_end() {
    support::in_process("its log");
    support::capture_logs();
    let (_dir, root) = root(&[
        ("hello.lua", "function handle(req) return 'hello' end"),
        ("find.lua", FIND),
    ]);
    let server = serve(&root, 1);
    let addr = server.local_addr();
    let find = support::get(addr, &format!("/find.lua?q={PATTERN}"));
    assert_eq!(find.status, 503);
    assert!(support::logged_within(
        &["would not stop", "(1 retired threads running, at most 1)"],
        Duration::from_secs(30)
    ));
    let refused = support::get(addr, "/hello.lua");
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert!(support::logged_within(
        &["retired script threads still running past their deadline"],
        Duration::from_secs(30)
    ));
    // Once the match ends, its thread exits and Lua is served again.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while support::get(addr, "/hello.lua").status != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "still refused after 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Other routes never were refused.
    assert_eq!(support::get(addr, "/missing").status, 404);
}

/// Leda's Fig. 2 has a stage running the server's scripts: under `--model staged` Lua
/// pages run as stage `lua` in cluster `scripts`, and a script past its deadline has
/// its thread stood aside in the cluster — a new thread in its place — as a script
/// thread is retired.
#[test]
fn issue39_the_staged_server_runs_lua_pages_as_a_stage_and_stands_a_stuck_thread_aside() {
    support::in_process("stages of its own process");
    let (_dir, root) = root(&[
        ("hello.lua", "function handle(req) return 'hello' end"),
        ("find.lua", FIND),
    ]);
    let server = support::start_with(App::new(), |c| {
        c.model = proscenium::config::Model::Staged;
        c.tools = true;
        c.root = Some(root.clone());
        c.lua = LuaSpec {
            enabled: true,
            threads: 1,
            timeout: Duration::from_millis(300),
            ..LuaSpec::default()
        };
    });
    let addr = server.local_addr();
    for _ in 0..3 {
        assert_eq!(support::get(addr, "/hello.lua").text(), "hello");
    }
    let lua = stage_status(addr, "staged", "lua", |s| s["handled"] == 3);
    assert_eq!(lua["handled"], 3, "{lua}");
    // The one thread of `scripts` is held by a match that will not stop: the page is
    // answered 503 at its deadline, its thread stood aside a margin later, and a
    // thread in its place serves the next.
    assert_eq!(
        support::get(addr, &format!("/find.lua?q={PATTERN}")).status,
        503
    );
    let scripts = || {
        let page: serde_json::Value =
            serde_json::from_slice(&support::get(addr, "/_status").body).unwrap();
        let clusters = page["staged"]["clusters"].as_array().cloned();
        let scripts = clusters.and_then(|c| c.into_iter().find(|c| c["cluster"] == "scripts"));
        scripts.expect("a cluster `scripts`")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while scripts()["stood_aside"] != 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let now = scripts();
    assert_eq!(
        (&now["stood_aside"], &now["threads"]),
        (&1.into(), &1.into()),
        "{now}"
    );
    assert_eq!(support::get(addr, "/hello.lua").text(), "hello");
    // Four pages handled by then; the match is counted when it ends.
    let lua = stage_status(addr, "staged", "lua", |s| s["handled"].as_u64() >= Some(4));
    assert!(lua["handled"].as_u64() >= Some(4), "{lua}");
    shut_down_within_30s(server);
}
