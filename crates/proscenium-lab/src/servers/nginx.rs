//! nginx's config: `bench/nginx.conf.in`, the one the benchmark scripts fill too
//! (`bench/lib.sh`'s `nginx_conf`), filled for a server of the lab.

use std::path::{Path, PathBuf};

use super::Placement;
use crate::Error;

/// The config with `@NAME@` placeholders, shared with `bench/lib.sh`.
const TEMPLATE: &str = include_str!("../../../../bench/nginx.conf.in");

/// Debian's build of lua-nginx-module (on LuaJIT), and the kit it needs loaded first.
pub(super) const LUA_MODULE: &str = "/usr/lib/nginx/modules/ngx_http_lua_module.so";
const KIT_MODULE: &str = "/usr/lib/nginx/modules/ndk_http_module.so";

/// Writes nginx's config for `at` (one worker per core, sendfile on, `/plaintext` and
/// `/json` as fixed answers, the root below; with `lua`, the directory of
/// `bench/peers/lua/`, its Lua module answering `/leda.lua` with `nginx.lua`) and
/// returns its path.
pub(super) fn conf(at: &Placement<'_>, lua: Option<&Path>) -> Result<PathBuf, Error> {
    let dir = at.workdir.join("nginx");
    for sub in ["logs", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(Error::io("create nginx's directories"))?;
    }
    let path = dir.join("nginx.conf");
    std::fs::write(&path, filled(at, &dir, lua)).map_err(Error::io("write nginx's config"))?;
    Ok(path)
}

/// The template with the lab's values: its pid, logs and temporary files under `dir`,
/// HTML typed as such (the dynamic pages), a longer backlog than the scripts' for the
/// lab's thousands of clients.
fn filled(at: &Placement<'_>, dir: &Path, lua: Option<&Path>) -> String {
    let (modules, http, server) = lua.map(lua_parts).unwrap_or_default();
    let values = [
        ("@MODULES@", modules),
        ("@WORKERS@", at.core_count.to_string()),
        ("@DIR@", dir.display().to_string()),
        ("@TYPES@", "text/html html; ".to_owned()),
        ("@HTTP@", http),
        ("@PORT@", at.port.to_string()),
        ("@LISTEN@", String::new()),
        ("@BACKLOG@", "4096".to_owned()),
        ("@ROOT@", at.root.display().to_string()),
        ("@SERVER@", server),
    ];
    values
        .iter()
        .fold(TEMPLATE.to_owned(), |conf, (name, value)| {
            conf.replace(name, value)
        })
}

/// The lines `nginx-lua` adds: its modules loaded, Leda's Lua files on the package
/// path, and `/leda.lua` answered by `nginx.lua` (all under `lua`).
fn lua_parts(lua: &Path) -> (String, String, String) {
    (
        format!("load_module {KIT_MODULE};\nload_module {LUA_MODULE};\n"),
        format!("lua_package_path '{}/?.lua;;';", lua.join("leda").display()),
        format!(
            "location = /leda.lua {{ default_type text/html; content_by_lua_file {}; }}",
            lua.join("nginx.lua").display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement<'a>(workdir: &'a Path, root: &'a Path) -> Placement<'a> {
        Placement {
            cores: "0,1",
            core_count: 2,
            port: 8080,
            root,
            upstream: "http://127.0.0.1:1/",
            workdir,
        }
    }

    #[test]
    fn every_placeholder_of_the_shared_template_is_filled() {
        let (workdir, root) = (Path::new("/w"), Path::new("/www"));
        let at = placement(workdir, root);
        for lua in [None, Some(Path::new("/lua"))] {
            let conf = filled(&at, Path::new("/w/nginx"), lua);
            assert!(!conf.contains('@'), "{conf}");
            assert!(conf.contains("worker_processes 2;"), "{conf}");
            assert!(
                conf.contains("listen 127.0.0.1:8080  backlog=4096;"),
                "{conf}"
            );
            assert!(conf.contains("pid /w/nginx/nginx.pid;"), "{conf}");
        }
    }

    #[test]
    fn nginx_lua_loads_its_modules_first_and_answers_leda_lua() {
        let (workdir, root) = (Path::new("/w"), Path::new("/www"));
        let conf = filled(
            &placement(workdir, root),
            Path::new("/w/nginx"),
            Some(Path::new("/lua")),
        );
        assert!(conf.starts_with(&format!(
            "load_module {KIT_MODULE};\nload_module {LUA_MODULE};\nworker_processes"
        )));
        assert!(conf.contains("  lua_package_path '/lua/leda/?.lua;;';\n"));
        assert!(conf.contains("content_by_lua_file /lua/nginx.lua;"));
    }
}
