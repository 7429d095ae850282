//! The library tables a state's scripts share made read-only: `proscenium` and its
//! tables, `string`, `table`, `math`, `utf8`, `coroutine` and `os` — so that one page
//! replacing `proscenium.html.escape` cannot make the next page write a script tag
//! unescaped — and each page's own globals ([`page_env`]).
//!
//! A library's global is a view: an empty table whose metatable reads the library
//! (`__index`), iterates it (`__pairs`), measures it (`__len`), refuses writes naming
//! it (`__newindex`: "proscenium.html is read-only") and hides itself
//! (`__metatable`, so that `setmetatable` cannot take it off). `rawset` refuses views
//! too, and `getmetatable("")` gives a view of the string metatable, so neither
//! `string`'s methods nor the views can be changed behind their backs.
//!
//! A view costs a library call one `__index` step more; a string's methods (`s:rep(2)`)
//! go through the string metatable as before, at no cost. The measurement is at the
//! bottom, its counts in docs/performance.md ("The read-only library views").

use mlua::{Function, Lua, Table};

/// Where a state keeps the function making a page's environment.
const PAGE_ENV_KEY: &str = "proscenium.page_env";

/// Given the globals, makes the libraries views and returns the function making a
/// page's environment.
const SEAL: &str = r#"
local globals = ...
local setmetatable, getmetatable, next, error, type = setmetatable, getmetatable, next, error, type
local raw_set, load = rawset, globals.load
local names = setmetatable({}, { __mode = "k" })
local function view_of(library, name)
  for key, value in next, library do
    if type(value) == "table" and not names[value] then
      library[key] = view_of(value, name .. "." .. key)
    end
  end
  local view = setmetatable({}, {
    __index = library,
    __newindex = function() error(name .. " is read-only", 2) end,
    __pairs = function() return next, library, nil end,
    __len = function() return #library end,
    __metatable = name .. " is read-only",
  })
  names[view] = name
  return view
end
for _, name in ipairs({ "proscenium", "string", "table", "math", "utf8", "coroutine", "os" }) do
  globals[name] = view_of(globals[name], name)
end
getmetatable("").__metatable = view_of({ __index = globals.string }, "the string metatable")
globals.rawset = function(t, key, value)
  if names[t] then error(names[t] .. " is read-only", 2) end
  return raw_set(t, key, value)
end
-- A page's globals are its own: `_G` is them, `load` compiles into them, and its
-- environment's metatable — the way to the state's globals — is hidden.
local page_meta = { __index = globals, __metatable = "a page's environment" }
return function()
  local env = setmetatable({}, page_meta)
  env._G = env
  env.load = function(chunk, name, mode, chunk_env) return load(chunk, name, mode, chunk_env or env) end
  return env
end
"#;

/// Makes `lua`'s libraries read-only: to be done last, once they are what every
/// script is to see (the budget's guards replace some of `coroutine`'s functions).
pub(super) fn seal(lua: &Lua) -> mlua::Result<()> {
    let page_env: Function = lua.load(SEAL).set_name("=seal").call(lua.globals())?;
    lua.set_named_registry_value(PAGE_ENV_KEY, page_env)
}

/// A new environment for a page: globals of its own (its `_G` too), reading through
/// to the state's, which it cannot reach to change.
pub(super) fn page_env(lua: &Lua) -> mlua::Result<Table> {
    lua.named_registry_value::<Function>(PAGE_ENV_KEY)?.call(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sealed state with `proscenium.html` and a `print` as the sandbox has.
    fn sealed() -> Lua {
        let lua = Lua::new();
        lua.load(
            "proscenium = { html = { escape = function(s) return (s:gsub('<', '&lt;')) end } }",
        )
        .exec()
        .unwrap();
        seal(&lua).unwrap();
        lua
    }

    fn run(lua: &Lua, script: &str) -> mlua::Result<String> {
        lua.load(script).set_environment(page_env(lua)?).eval()
    }

    #[test]
    fn writes_to_a_library_are_refused_naming_it() {
        let lua = sealed();
        for (script, named) in [
            ("proscenium.html.escape = tostring", "proscenium.html"),
            ("proscenium.html = {}", "proscenium"),
            ("string.format = nil", "string"),
            ("table.insert(math, 1)", "math"),
            (
                "rawset(proscenium.html, 'escape', tostring)",
                "proscenium.html",
            ),
            ("setmetatable(os, nil)", "protected metatable"),
            ("getmetatable('').__index.rep = nil", "string"),
            ("getmetatable('').__index = {}", "the string metatable"),
            ("getmetatable(_ENV).__index.print = nil", "attempt to index"),
        ] {
            let error = run(&lua, script).unwrap_err().to_string();
            assert!(error.contains(named), "{script}: {error}");
        }
        assert_eq!(
            run(&lua, "return proscenium.html.escape('<b>')").unwrap(),
            "&lt;b>"
        );
    }

    #[test]
    fn views_read_iterate_and_count_as_the_libraries_do() {
        let lua = sealed();
        let script = "local n = 0 for name in pairs(string) do n = n + 1 end \
                      local list = setmetatable({}, { __index = { 'a', 'b' } }) \
                      return ('x'):rep(3) .. string.format('%d', 7) .. tostring(n > 10) \
                      .. #utf8.char(233) .. table.concat({ 'p', 'q' }) .. math.max(1, 2) \
                      .. tostring(getmetatable('').__index == string)";
        assert_eq!(run(&lua, script).unwrap(), "xxx7true2pq2true");
    }

    #[test]
    fn a_pages_globals_its_g_and_what_it_loads_stay_its_own() {
        let lua = sealed();
        let own = "_G.print = false; tostring = function() return 'mine' end; load('x = 1')(); \
                   return tostring(x)";
        assert_eq!(run(&lua, own).unwrap(), "mine");
        let other = "return tostring(print ~= nil) .. tostring(tostring) .. tostring(x)";
        let seen = run(&lua, other).unwrap();
        assert!(
            seen.starts_with("truefunction") && seen.ends_with("nil"),
            "{seen}"
        );
    }
}

#[cfg(test)]
mod bench {
    use super::*;
    use crate::hub::Hub;
    use crate::lua::bridge::Bridge;
    use std::time::Instant;

    /// What views cost: 100,000 library calls on a state as the sandbox makes it,
    /// without views and with them — or only those `VIEWS` (0 or 1) and `CALL` (the
    /// call's start) name, to count one under callgrind. It asserts nothing.
    #[test]
    #[ignore = "a measurement, not a test"]
    fn views_cost() {
        let calls = [
            "math.max(i, 2)",
            "string.format('%d', i)",
            "proscenium.html.escape('<b>')",
            "('x'):rep(2)",
        ];
        let views = std::env::var("VIEWS").ok();
        let named = std::env::var("CALL").unwrap_or_default();
        for sealed in [false, true] {
            if views
                .as_deref()
                .is_some_and(|v| v != if sealed { "1" } else { "0" })
            {
                continue;
            }
            let bridge = Bridge::new(Hub::new());
            let state = crate::lua::sandbox::state(std::path::Path::new("."), &bridge, 0);
            let lua = state.unwrap().lua;
            if !sealed {
                lua.load(UNSEAL).exec().unwrap();
            }
            for call in calls.into_iter().filter(|c| c.starts_with(&named)) {
                let f: Function = lua
                    .load(format!(
                        "return function() for i = 1, 100000 do local _ = {call} end end"
                    ))
                    .eval()
                    .unwrap();
                let start = Instant::now();
                f.call::<()>(()).unwrap();
                println!("views {sealed}: {call}: {:?}", start.elapsed());
            }
        }
    }

    /// Puts the libraries behind the views back in the globals (and `proscenium.html`
    /// in `proscenium`).
    const UNSEAL: &str = r#"
    for _, name in ipairs({ "proscenium", "string", "table", "math", "utf8", "coroutine", "os" }) do
      local library = {}
      for key, value in pairs(_G[name]) do library[key] = value end
      _G[name] = library
    end
    local html = {}
    for key, value in pairs(proscenium.html) do html[key] = value end
    proscenium.html = html
    "#;
}
