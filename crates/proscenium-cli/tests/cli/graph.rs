//! `proscenium graph FILE` (issue 39, Leda's graphs described in Lua): the same graph
//! of a source of lines and two Lua stages, described in TOML and in Lua, runs to the
//! end of its log and prints what its last stage prints; a file that is no graph is
//! refused with 2, a source that cannot read its file ends the run with 1.

use std::path::Path;

use super::proscenium;

const LOG: &str = r#"1.2.3.4 - - [29/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 404 10 "-" "x"
5.6.7.8 - - [29/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 10 "-" "x"
1.2.3.4 - - [29/Nov/2026:10:00:01 +0000] "GET /b HTTP/1.1" 404 10 "-" "x"
1.2.3.4 - - [29/Nov/2026:10:00:02 +0000] "GET /c HTTP/1.1" 404 10 "-" "x"
"#;

const PARSE: &str = r#"
function handle(line)
  local client, status = line:match('^(%S+) .-" (%d+) ')
  if client then emit("entries", { client = client, status = tonumber(status) }) end
end
"#;

const COUNT: &str = r#"
local misses = {}
function handle(entry)
  if entry.status == 404 then
    misses[entry.client] = (misses[entry.client] or 0) + 1
    if misses[entry.client] == 3 then print("scan by " .. entry.client) end
  end
end
"#;

const TOML: &str = r#"
[stage.log]
lines = "access.log"
to = { lines = "parse" }

[stage.parse]
lua = "parse.lua"
to = { entries = "count" }

[stage.count]
lua = "count.lua"
stateful = true

[clusters.read]
stages = ["log"]

[clusters.work]
stages = ["parse", "count"]
threads = 2
"#;

const LUA: &str = r#"
return {
  stage = {
    log = { lines = "access.log", to = { lines = "parse" } },
    parse = { lua = "parse.lua", to = { entries = "count" } },
    count = { lua = "count.lua", stateful = true },
  },
}
"#;

/// Runs `proscenium graph` on `file` in `dir`; returns its exit code and standard error.
fn run(dir: &Path, file: &str) -> (Option<i32>, String) {
    let out = proscenium()
        .current_dir(dir)
        .args(["graph", file])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn issue39_a_graph_of_lua_stages_described_in_toml_or_lua_runs_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("access.log", LOG),
        ("parse.lua", PARSE),
        ("count.lua", COUNT),
        ("graph.toml", TOML),
        ("graph.lua", LUA),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    for file in ["graph.toml", "graph.lua"] {
        let (code, log) = run(dir.path(), file);
        assert_eq!(code, Some(0), "{file}: {log}");
        assert_eq!(
            log.matches("lua: scan by 1.2.3.4").count(),
            1,
            "{file}: {log}"
        );
        assert!(!log.contains("5.6.7.8"), "{file}: {log}");
    }
}

#[test]
fn issue39_a_graph_file_that_is_no_graph_is_refused_with_2() {
    let dir = tempfile::tempdir().unwrap();
    for (text, why) in [
        (
            "[stage.a]\nlines = \"x\"\nto = { lines = \"b\" }\n",
            "feeds `b`, which is no stage",
        ),
        ("[stage.a]\n", "name one of `lua` and `lines`"),
        (
            "[stage.a]\nlua = \"a.lua\"\nshape = 1\n",
            "unknown field `shape`",
        ),
        (
            "[stage.a]\nlines = \"x\"\nto = { other = \"a\" }\n",
            "one port, `lines`",
        ),
    ] {
        std::fs::write(dir.path().join("graph.toml"), text).unwrap();
        let (code, log) = run(dir.path(), "graph.toml");
        assert_eq!(code, Some(2), "{text}: {log}");
        assert!(log.contains(why), "{text}: {log}");
    }
}

#[test]
fn issue39_a_graph_whose_source_cannot_read_its_file_ends_with_1() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("count.lua"), COUNT).unwrap();
    let graph = "[stage.log]\nlines = \"absent.log\"\nto = { lines = \"count\" }\n\n[stage.count]\nlua = \"count.lua\"\n";
    std::fs::write(dir.path().join("graph.toml"), graph).unwrap();
    let (code, log) = run(dir.path(), "graph.toml");
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("source `log` did not read its file whole"),
        "{log}"
    );
}
