//! Issue 20: embedded Lua over the wire — pages and apps, errors with file and line,
//! the sandbox, the budgets of instructions and memory, and reloading a changed file;
//! under every model (the suite runs once per model).

use std::path::{Path, PathBuf};
use std::time::Duration;

use proscenium::App;
use proscenium::lua::LuaSpec;

use crate::support::{self, Client};

/// A root holding `files` (relative path, text).
pub(crate) fn root(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (dir, root)
}

/// Serves `root` with Lua pages on, and the app `app` (relative to `root`) if given.
fn serve(
    root: &Path,
    app: Option<&str>,
    adjust: impl FnOnce(&mut LuaSpec),
) -> proscenium::ServerHandle {
    let mut spec = LuaSpec {
        enabled: true,
        app: app.map(|file| root.join(file)),
        ..LuaSpec::default()
    };
    adjust(&mut spec);
    support::start_with(App::new(), |c| {
        c.root = Some(root.to_owned());
        c.lua = spec;
    })
}

/// Why a server with the app `root/app.lua` did not start.
fn refused_start(root: &Path) -> String {
    let config = proscenium::Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        lua: LuaSpec {
            app: Some(root.join("app.lua")),
            ..LuaSpec::default()
        },
        ..proscenium::Config::default()
    };
    proscenium::Server::new(App::new())
        .config(config)
        .start()
        .unwrap_err()
        .to_string()
}

const PAGE: &str = r#"
function handle(req)
  local name = req.args.name or "world"
  return "<p>Hello, " .. proscenium.html.escape(name) .. " (" .. req.method .. " " .. req.path .. ")</p>"
end
"#;

#[test]
fn a_page_answers_with_what_handle_returns() {
    let (_dir, root) = root(&[
        ("hello.lua", PAGE),
        (
            "full.lua",
            r#"function handle(req)
                 return 201, { ["X-Made"] = "yes", ["Content-Type"] = "application/json" },
                   proscenium.json.encode({ got = proscenium.json.decode(req.body), n = #req.body })
               end"#,
        ),
        (
            "table.lua",
            r#"function handle(req) return { status = 418, body = "teapot" } end"#,
        ),
        ("nothing.lua", "function handle(req) end"),
        ("plain.txt", "a static file"),
    ]);
    let server = serve(&root, None, |_| {});
    let addr = server.local_addr();
    let hello = support::get(addr, "/hello.lua?name=%3Cb%3E");
    assert_eq!(hello.status, 200);
    assert_eq!(
        hello.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(hello.text(), "<p>Hello, &lt;b&gt; (GET /hello.lua)</p>");
    let full = Client::connect(addr)
        .send("POST /full.lua HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\n{\"a\":[1]}")
        .response();
    assert_eq!(full.status, 201);
    assert_eq!(full.header("x-made"), Some("yes"));
    let json: serde_json::Value = serde_json::from_slice(&full.body).unwrap();
    assert_eq!(json, serde_json::json!({ "got": { "a": [1] }, "n": 9 }));
    let table = support::get(addr, "/table.lua");
    assert_eq!((table.status, table.text().as_str()), (418, "teapot"));
    assert_eq!(support::get(addr, "/nothing.lua").status, 204);
    assert_eq!(support::get(addr, "/plain.txt").text(), "a static file");
    assert_eq!(support::get(addr, "/missing.lua").status, 404);
}

const APP: &str = r#"
local greet = require("lib.greet")
local count = 0
app:get("/hello/:name", function(req)
  return greet.hello(req.params.name)
end)
app:post("/echo", function(req)
  return 200, { ["content-type"] = req.headers["content-type"] }, req.body
end)
app:get("/count", function(req)
  count = count + 1
  return tostring(count)
end)
app:any("/files/*path", function(req) return req.method .. " " .. req.params.path end)
"#;

const GREET: &str = r#"
local M = {}
function M.hello(name) return "Hello, " .. proscenium.html.escape(name) .. "!" end
return M
"#;

#[test]
fn a_lua_app_routes_requests_and_leaves_the_rest_to_the_files() {
    let (_dir, root) = root(&[
        ("app.lua", APP),
        ("lib/greet.lua", GREET),
        ("index.html", "<h1>static</h1>"),
    ]);
    let server = serve(&root, Some("app.lua"), |_| {});
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/hello/you").text(), "Hello, you!");
    let echo = Client::connect(addr)
        .send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: text/x-a\r\nContent-Length: 3\r\n\r\nabc")
        .response();
    assert_eq!(echo.header("content-type"), Some("text/x-a"));
    assert_eq!(echo.text(), "abc");
    let delete = Client::connect(addr)
        .send("DELETE /files/a/b.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .response();
    assert_eq!(delete.text(), "DELETE a/b.txt");
    let wrong = Client::connect(addr)
        .send("POST /hello/you HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        .response();
    assert_eq!(wrong.status, 405);
    assert_eq!(support::get(addr, "/").text(), "<h1>static</h1>");
    // A state keeps its globals between requests (one state per loop or thread).
    let counts: Vec<u64> = (0..4)
        .map(|_| support::get(addr, "/count").text().parse().unwrap())
        .collect();
    assert!(counts.iter().all(|&n| n >= 1), "{counts:?}");
}

#[test]
fn script_errors_are_500_with_file_and_line_in_the_log() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = root(&[
        (
            "syntax.lua",
            "function handle(req)\n  return 'unfinished\nend\n",
        ),
        (
            "runtime.lua",
            "function handle(req)\n  local t = nil\n  return t.field\nend\n",
        ),
        ("nohandle.lua", "x = 1\n"),
        ("badreturn.lua", "function handle(req) return true end\n"),
    ]);
    let server = serve(&root, None, |_| {});
    let get = |path| support::get(server.local_addr(), path);
    assert_eq!(get("/syntax.lua").status, 500);
    assert!(support::logged_within(
        &["lua: /syntax.lua", "syntax.lua:2:"],
        Duration::from_secs(30)
    ));
    assert_eq!(get("/runtime.lua").status, 500);
    assert!(support::logged_within(
        &["lua: /runtime.lua", "runtime.lua:3:"],
        Duration::from_secs(30)
    ));
    assert_eq!(get("/nohandle.lua").status, 500);
    assert!(support::logged_within(
        &["nohandle.lua: defines no handle(request)"],
        Duration::from_secs(30)
    ));
    assert_eq!(get("/badreturn.lua").status, 500);
    assert!(support::logged_within(
        &["lua: /badreturn.lua", "status was"],
        Duration::from_secs(30)
    ));
}

#[test]
fn the_sandbox_refuses_the_system_and_files_outside() {
    let (dir, root) = root(&[(
        "probe.lua",
        r#"function handle(req)
             local out = {}
             for _, name in ipairs({ "io", "debug", "dofile", "loadfile", "package" }) do
               out[#out + 1] = name .. "=" .. type(_G[name])
             end
             out[#out + 1] = "execute=" .. type(os.execute)
             out[#out + 1] = "getenv=" .. type(os.getenv)
             out[#out + 1] = "time=" .. type(os.time)
             local ok = pcall(require, "..secret")
             out[#out + 1] = "require_out=" .. tostring(ok)
             local f, err = load("\27Lua", "b", "b")
             out[#out + 1] = "binary=" .. tostring(f)
             local g = load("return 6 * 7")
             out[#out + 1] = "text=" .. tostring(g())
             return table.concat(out, " ")
           end"#,
    )]);
    std::fs::write(dir.path().join("secret.lua"), "return 'leaked'").unwrap();
    let server = serve(&root, None, |_| {});
    let text = support::get(server.local_addr(), "/probe.lua").text();
    assert_eq!(
        text,
        "io=nil debug=nil dofile=nil loadfile=nil package=nil execute=nil getenv=nil \
         time=function require_out=false binary=nil text=42"
    );
}

#[test]
fn a_runaway_loop_and_a_memory_bomb_are_stopped_and_the_server_goes_on() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = root(&[
        ("spin.lua", "function handle(req) while true do end end"),
        (
            "spin_in_coroutine.lua",
            "function handle(req) coroutine.wrap(function() while true do end end)() end",
        ),
        (
            "spin_caught.lua",
            "function handle(req) while true do pcall(function() while true do end end) end end",
        ),
        (
            "bomb.lua",
            "function handle(req) local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1024) .. i end end",
        ),
        ("hello.lua", PAGE),
    ]);
    let server = serve(&root, None, |spec| {
        spec.instructions = 5_000_000;
        spec.memory = 8 << 20;
    });
    let get = |path| support::get(server.local_addr(), path);
    assert_eq!(get("/spin.lua").status, 503);
    assert!(support::logged_within(
        &["lua: /spin.lua", "instruction budget"],
        Duration::from_secs(30)
    ));
    assert_eq!(get("/spin_in_coroutine.lua").status, 503);
    // A script catching the budget's error does not get to go on.
    assert_eq!(get("/spin_caught.lua").status, 503);
    assert_eq!(get("/bomb.lua").status, 503);
    assert!(support::logged_within(
        &["lua: /bomb.lua", "memory budget"],
        Duration::from_secs(30)
    ));
    assert_eq!(get("/hello.lua").status, 200);
}

#[test]
fn a_changed_page_or_app_is_served_anew_without_a_restart() {
    support::in_process("pages it changes in a temporary directory of its own");
    let (_dir, root) = root(&[
        ("page.lua", "function handle(req) return 'one' end"),
        ("app.lua", "app:get('/v', function(req) return 'first' end)"),
    ]);
    let server = serve(&root, Some("app.lua"), |_| {});
    let get = |path| support::get(server.local_addr(), path).text();
    assert_eq!(get("/page.lua"), "one");
    assert_eq!(get("/v"), "first");
    std::fs::write(
        root.join("page.lua"),
        "function handle(req) return 'two, longer' end",
    )
    .unwrap();
    std::fs::write(
        root.join("app.lua"),
        "app:get('/v', function(req) return 'second' end)\napp:get('/new', function(req) return 'added' end)",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(get("/page.lua"), "two, longer");
    assert_eq!(get("/v"), "second");
    assert_eq!(get("/new"), "added");
}

#[test]
fn a_lua_app_that_does_not_load_stops_the_start_with_its_file_and_line() {
    let (_dir, root) = root(&[(
        "app.lua",
        "app:get('/x', function(req)\n  return 1 +\nend)\n",
    )]);
    let error = refused_start(&root);
    assert!(error.contains("app.lua:3:"), "{error}");
}

#[test]
fn a_lua_app_publishes_to_the_hub_and_serves_its_feed() {
    support::in_process("posts published to the hub of its own process");
    let (_dir, root) = root(&[(
        "app.lua",
        r#"
app:post("/picture/:id/likes", function(req)
  local post = { picture = tonumber(req.params.id), by = req.body }
  return 201, nil, proscenium.publish("/picture/" .. req.params.id .. "/likes", post)
end)
app:events("/feed/events", "/picture/*/likes")
"#,
    )]);
    let server = serve(&root, Some("app.lua"), |_| {});
    let addr = server.local_addr();
    let mut feed = Client::connect(addr);
    feed.get("/feed/events");
    let head = String::from_utf8_lossy(&feed.read_past(b"\r\n\r\n")).into_owned();
    assert!(head.contains("text/event-stream"), "{head}");
    let like = Client::connect(addr)
        .send("POST /picture/7/likes HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nann")
        .response();
    assert_eq!(like.status, 201);
    let mut events = String::new();
    while !events.contains("data:") {
        events.push_str(&String::from_utf8_lossy(&feed.read_past(b"\n\n")));
    }
    assert!(
        events.contains(r#"data: {"by":"ann","picture":7}"#),
        "{events}"
    );
    assert!(events.contains(&format!("id: {}", like.text())), "{events}");
}

const SHARING_APP: &str = r#"
app:post("/hit", { state = "write" }, function(req)
  local n = proscenium.state.get("hits") or 0
  local spin = 0
  for i = 1, 20000 do spin = spin + i end -- a window for a lost update, were writes not exclusive
  proscenium.state.set("hits", n + 1)
  return tostring(n + 1)
end)
app:get("/hits", { state = "read" }, function(req)
  return tostring(proscenium.state.get("hits"))
end)
app:post("/incr", { state = "write" }, function(req)
  return tostring(proscenium.state.incr("count", 2))
end)
app:put("/doc", { state = "write" }, function(req)
  proscenium.state.set("doc", proscenium.json.decode(req.body))
end)
app:get("/doc", { state = "read" }, function(req)
  return 200, { ["content-type"] = "application/json" }, proscenium.json.encode(proscenium.state.get("doc"))
end)
app:get("/undeclared", function(req)
  return tostring(proscenium.state.get("hits"))
end)
app:post("/sneaky", { state = "read" }, function(req)
  proscenium.state.set("hits", 0)
end)
"#;

#[test]
fn lua_routes_and_pages_share_values_under_the_lock_class_they_declare() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = root(&[
        ("app.lua", SHARING_APP),
        (
            "count.lua",
            "page = { state = \"read\" }\nfunction handle(req) return tostring(proscenium.state.get(\"hits\")) end\n",
        ),
    ]);
    let server = serve(&root, Some("app.lua"), |_| {});
    let addr = server.local_addr();
    let post = |path: &str| {
        Client::connect(addr)
            .send(format!(
                "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
            ))
            .response()
    };
    // Four clients at once read, compute and write back: every write excluded the
    // others, so none was lost (the thread models run them in parallel).
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    assert_eq!(post("/hit").status, 200);
                }
            });
        }
    });
    assert_eq!(support::get(addr, "/hits").text(), "100");
    assert_eq!(support::get(addr, "/count.lua").text(), "100");
    assert_eq!(post("/incr").text(), "2");
    assert_eq!(post("/incr").text(), "4");
    let put = Client::connect(addr)
        .send(
            "PUT /doc HTTP/1.1\r\nHost: t\r\nContent-Length: 21\r\n\r\n{\"a\":[1,2],\"b\":\"x\"}  ",
        )
        .response();
    assert_eq!(put.status, 204);
    assert_eq!(support::get(addr, "/doc").text(), r#"{"a":[1,2],"b":"x"}"#);
    // Touching the values without declaring it, or writing under a read, fails.
    assert_eq!(support::get(addr, "/undeclared").status, 500);
    assert!(support::logged_within(
        &["app.lua:22: proscenium.state.get: the script declared no state"],
        Duration::from_secs(30)
    ));
    assert_eq!(post("/sneaky").status, 500);
    assert!(support::logged_within(
        &["app.lua:25: proscenium.state.set: the script declared state = \"read\""],
        Duration::from_secs(30)
    ));
    assert_eq!(support::get(addr, "/hits").text(), "100");
}

#[test]
fn a_lua_route_declaring_a_class_that_is_not_one_stops_the_start() {
    let (_dir, root) = root(&[(
        "app.lua",
        "app:get('/x', { state = 'rw' }, function(req) end)\n",
    )]);
    let error = refused_start(&root);
    assert!(error.contains("GET /x: state = rw"), "{error}");
}

/// Builds a table nested 10,000 levels deep in `t` (mlua's conversion recursed once a
/// level and overflowed the stack, aborting the process).
const DEEP: &str = "local t = {} for i = 1, 10000 do t = { t } end";

#[test]
fn issue33_a_table_nested_10000_deep_or_holding_itself_is_500_and_the_server_goes_on() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let page = |call: &str| format!("{DEEP}\nfunction handle(req)\n  {call}\nend\n");
    let (_dir, root) = root(&[
        ("encode.lua", &page("return proscenium.json.encode(t)")),
        ("publish.lua", &page("return proscenium.publish('deep', t)")),
        (
            "store.lua",
            &format!(
                "page = {{ state = \"write\" }}\n{}",
                page("proscenium.state.set('deep', t)")
            ),
        ),
        (
            "cycle.lua",
            "function handle(req)\n  local c = {}\n  c.self = { c }\n  return proscenium.json.encode(c)\nend\n",
        ),
        (
            "deepest.lua",
            "function handle(req)\n  local t = {}\n  for i = 2, 127 do t = { t } end\n  \
             return proscenium.json.encode(proscenium.json.decode(proscenium.json.encode(t)))\nend\n",
        ),
        ("hello.lua", PAGE),
    ]);
    let server = serve(&root, None, |_| {});
    let get = |path| support::get(server.local_addr(), path);
    // As deep as JSON reads back is written, there and back again.
    let deepest = get("/deepest.lua");
    assert_eq!(deepest.status, 200);
    assert!(deepest.text().starts_with("[[[[") && deepest.text().len() == 2 * 127);
    for (path, line) in [
        ("/encode.lua", "encode.lua:3: proscenium.json.encode"),
        ("/publish.lua", "publish.lua:3: proscenium.publish"),
        ("/store.lua", "store.lua:4: proscenium.state.set"),
        ("/cycle.lua", "cycle.lua:4: proscenium.json.encode"),
    ] {
        assert_eq!(get(path).status, 500, "{path}");
        assert!(
            support::logged_within(&[line, "nested deeper than 127"], Duration::from_secs(30)),
            "{path}"
        );
    }
    assert_eq!(get("/hello.lua").status, 200);
}

const STORING_APP: &str = r#"
app:post("/text/:name", { state = "write" }, function(req)
  proscenium.state.set(req.params.name, string.rep("x", tonumber(req.args.kib) * 1024))
end)
app:post("/list/:name", { state = "write" }, function(req)
  local list = {}
  for i = 1, tonumber(req.args.n) do list[i] = "abcdefgh" end
  proscenium.state.set(req.params.name, list)
end)
app:post("/drop/:name", { state = "write" }, function(req)
  proscenium.state.set(req.params.name, nil)
end)
app:get("/size/:name", { state = "read" }, function(req)
  local value = proscenium.state.get(req.params.name)
  return tostring(value and #value or 0)
end)
"#;

#[test]
fn issue33_shared_values_past_state_memory_are_refused_and_the_rest_kept() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let (_dir, root) = root(&[("app.lua", STORING_APP)]);
    let server = serve(&root, Some("app.lua"), |spec| spec.state_memory = 1 << 20);
    let addr = server.local_addr();
    let post = |path: &str| {
        Client::connect(addr)
            .send(format!(
                "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
            ))
            .response()
            .status
    };
    // Three values of 300 KiB fit in 1 MiB; a fourth does not, again and again.
    for name in ["a", "b", "c"] {
        assert_eq!(post(&format!("/text/{name}?kib=300")), 204, "{name}");
    }
    for _ in 0..3 {
        assert_eq!(post("/text/d?kib=300"), 500);
    }
    assert!(support::logged_within(
        &["app.lua:3: proscenium.state.set", "bytes (its JSON"],
        Duration::from_secs(30)
    ));
    // A table is measured before it is converted: 200,000 items weigh some 8.6 MB.
    assert_eq!(post("/list/e?n=200000"), 500);
    assert!(support::logged_within(
        &["app.lua:8: proscenium.state.set", "bytes (its JSON"],
        Duration::from_secs(30)
    ));
    assert_eq!(support::get(addr, "/size/d").text(), "0");
    // A value replaced has its own room again; one removed leaves its room to others.
    assert_eq!(post("/text/a?kib=300"), 204);
    assert_eq!(post("/drop/b"), 204);
    assert_eq!(post("/text/d?kib=300"), 204);
    assert_eq!(support::get(addr, "/size/d").text(), "307200");
    assert_eq!(support::get(addr, "/size/c").text(), "307200");
}

#[test]
fn issue33_a_page_cannot_change_the_libraries_another_page_uses() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let hijack = |code: &str| format!("function handle(req)\n  {code}\n  return 'changed'\nend\n");
    let (_dir, root) = root(&[
        (
            "escape.lua",
            &hijack("proscenium.html.escape = function(s) return s end"),
        ),
        (
            "format.lua",
            &hijack("string.format = function() return '' end"),
        ),
        ("methods.lua", &hijack("getmetatable('').__index.rep = nil")),
        (
            "rawset.lua",
            &hijack("rawset(proscenium.html, 'escape', tostring)"),
        ),
        (
            "globals.lua",
            &hijack(
                "_G.print = nil; _G.tostring = function() return 'hijacked' end; load('proscenium = nil')()",
            ),
        ),
        (
            "victim.lua",
            "function handle(req)\n  return proscenium.html.escape('<script>') .. string.format('%d', 7) .. ('a'):rep(2) .. tostring(1)\nend\n",
        ),
    ]);
    let server = serve(&root, None, |_| {});
    // One connection: its requests run on one state (each page on it in turn).
    let mut client = Client::connect(server.local_addr());
    for (path, named) in [
        ("/escape.lua", "escape.lua:2: proscenium.html is read-only"),
        ("/format.lua", "format.lua:2: string is read-only"),
        ("/methods.lua", "methods.lua:2: string is read-only"),
        ("/rawset.lua", "rawset.lua:2: proscenium.html is read-only"),
    ] {
        assert_eq!(client.get(path).response().status, 500, "{path}");
        assert!(
            support::logged_within(&[named], Duration::from_secs(30)),
            "{path}"
        );
        let victim = client.get("/victim.lua").response();
        assert_eq!(victim.text(), "&lt;script&gt;7aa1", "after {path}");
    }
    // A page's `_G` and what it loads are its own globals: changed for it alone.
    assert_eq!(client.get("/globals.lua").response().text(), "changed");
    let victim = client.get("/victim.lua").response();
    assert_eq!(victim.text(), "&lt;script&gt;7aa1");
}

#[test]
fn issue33_a_page_printing_in_a_loop_logs_its_bound_and_one_summary_a_request() {
    support::in_process("pages written to a temporary directory of its own");
    support::capture_logs();
    let marker = "issue33-flood-marker";
    let (_dir, root) = root(&[(
        "flood.lua",
        &format!(
            "function handle(req)\n  for i = 1, 100000 do print('{marker}', i, string.rep('y', 100)) end\n  return 'ok'\nend\n"
        ),
    )]);
    let server = serve(&root, None, |spec| spec.log_lines = 10);
    for request in 1..=2 {
        assert_eq!(support::get(server.local_addr(), "/flood.lua").text(), "ok");
        assert!(support::logged_within(
            &["lua: /flood.lua: 99990 log lines dropped"],
            Duration::from_secs(30)
        ));
        // The count starts again with each request (its state is pooled).
        assert_eq!(support::logged_lines(&[marker]), 10 * request);
    }
    assert_eq!(
        support::logged_lines(&["lua: /flood.lua: 99990 log lines dropped"]),
        2
    );
}
