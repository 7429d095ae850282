//! A sandboxed interpreter state: the libraries that touch nothing outside the state
//! (`string`, `table`, `math`, `utf8`, `coroutine`, and `os`'s clock and dates),
//! `load` of text only, `require` of modules in the script's own directory, `print`
//! to the log, the `proscenium` helpers — and a budget of instructions, checked by a
//! hook set when a request runs long (see [`watch`]; none with `[lua] instructions = 0`).

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::bridge::{self, Bridge};
use super::stamp::{self, Stamp};
use super::watch::{self, Main};
use crate::http::error_page::html_escape;
use mlua::{
    ChunkMode, Function, IntoLua as _, Lua, LuaOptions, LuaSerdeExt as _, StdLib, Table, Value,
    Variadic,
};

/// What `os` keeps: time and dates, nothing that touches the system.
const OS_KEPT: [&str; 4] = ["clock", "date", "difftime", "time"];

/// A state's budget of instructions for the request it runs.
#[derive(Debug, Default)]
pub(super) struct Budget {
    /// Instructions left to the request.
    left: AtomicU64,
    /// The request ran out of them.
    exhausted: AtomicBool,
}

impl Budget {
    /// Gives the next request `instructions`.
    pub(super) fn refill(&self, instructions: u64) {
        self.left.store(instructions, Ordering::Relaxed);
        self.exhausted.store(false, Ordering::Relaxed);
    }

    /// Whether the request ran out of instructions.
    pub(super) fn is_exhausted(&self) -> bool {
        self.exhausted.load(Ordering::Relaxed)
    }

    /// Takes `instructions` from what is left; false, and exhausted, when too few are.
    pub(super) fn spend(&self, instructions: u64) -> bool {
        let left = self.left.load(Ordering::Relaxed);
        if left < instructions {
            self.exhausted.store(true, Ordering::Relaxed);
            return false;
        }
        self.left.store(left - instructions, Ordering::Relaxed);
        true
    }
}

/// The files a state loaded (`require`d modules), each stamped before it was read,
/// for reloading when one changes.
#[derive(Debug, Default)]
pub(super) struct Loaded(pub(super) Mutex<Vec<(PathBuf, Stamp)>>);

/// A sandboxed state, its instruction budget, and the function requests are made
/// through (`invoke.lua`).
pub(super) struct Sandboxed {
    pub(super) lua: Lua,
    /// Its main thread, where the budget's hook is set.
    main: Main,
    /// At a fixed place, for the hook to find.
    pub(super) budget: Arc<Budget>,
    pub(super) invoke: Function,
    /// Whether its requests' instructions are counted (`[lua] instructions` > 0).
    counted: bool,
}

/// A new state whose `require` reads modules below `dir`, whose `proscenium` helpers
/// reach `bridge`, and whose requests each run at most `instructions` (0: uncounted;
/// the scripts it loads next run within one such budget).
pub(super) fn state(dir: &Path, bridge: &Bridge, instructions: usize) -> mlua::Result<Sandboxed> {
    let libs = StdLib::TABLE
        | StdLib::STRING
        | StdLib::MATH
        | StdLib::UTF8
        | StdLib::COROUTINE
        | StdLib::OS;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    let globals = lua.globals();
    let os: Table = globals.get("os")?;
    let system: Vec<String> = os
        .pairs::<String, Value>()
        .filter_map(Result::ok)
        .map(|(name, _)| name)
        .filter(|name| !OS_KEPT.contains(&name.as_str()))
        .collect();
    for name in system {
        os.set(name, Value::Nil)?;
    }
    for name in ["dofile", "loadfile"] {
        globals.set(name, Value::Nil)?;
    }
    globals.set("load", lua.create_function(load_text)?)?;
    globals.set("print", lua.create_function(print)?)?;
    globals.set("require", require_below(&lua, dir.to_owned())?)?;
    globals.set("proscenium", helpers(&lua, bridge)?)?;
    lua.set_app_data(Loaded::default());
    let invoke: Function = lua
        .load(include_str!("invoke.lua"))
        .set_name("=invoke")
        .eval()?;
    let counted = instructions > 0;
    let budget = Arc::new(Budget::default());
    budget.refill(instructions as u64);
    if counted {
        let from_now = lua.create_function(|_, ()| {
            watch::count_from_now();
            Ok(())
        })?;
        let spending = Arc::clone(&budget);
        let spent = lua.create_function(move |_, ()| Ok(spending.is_exhausted()))?;
        lua.load(GUARDS)
            .set_name("=guards")
            .call::<()>((from_now, spent))?;
    }
    Ok(Sandboxed {
        main: Main::of(&lua)?,
        lua,
        budget,
        invoke,
        counted,
    })
}

/// The budget's guards. `coroutine.create` and `coroutine.wrap` count the request's
/// instructions from then on, before they make a coroutine (which takes its hook then;
/// see [`watch`]). And what catches errors — `pcall`, `xpcall`, `coroutine.resume` —
/// raises the budget's error again once the budget is spent: caught and ignored, it
/// would let a script run on forever, a step of instructions between two catches.
const GUARDS: &str = r#"
local from_now, spent = ...
local create, wrap, resume = coroutine.create, coroutine.wrap, coroutine.resume
local caught, caught_with = pcall, xpcall
local function unless_spent(...)
  if spent() then
    error("past its instruction budget", 0)
  end
  return ...
end
coroutine.create = function(f) from_now() return create(f) end
coroutine.wrap = function(f) from_now() return wrap(f) end
coroutine.resume = function(...) return unless_spent(resume(...)) end
pcall = function(...) return unless_spent(caught(...)) end
xpcall = function(...) return unless_spent(caught_with(...)) end
"#;

impl Sandboxed {
    /// Runs `call` — a request, or the loading of scripts — within the state's budget
    /// of instructions, if it has one (see [`watch`]).
    pub(super) fn run<R>(&self, call: impl FnOnce() -> R) -> R {
        if self.counted {
            watch::run(self.main, &self.budget, call)
        } else {
            call()
        }
    }
}

/// Lua's `load(chunk [, name [, mode [, env]]])` for text chunks only: compiled code
/// (`mode` "b") can break the interpreter's memory safety.
fn load_text(
    lua: &Lua,
    (chunk, name, _mode, env): (Value, Option<String>, Option<String>, Option<Table>),
) -> mlua::Result<(Value, Value)> {
    let Value::String(text) = chunk else {
        return Ok((Value::Nil, "load takes a string here".into_lua(lua)?));
    };
    let mut loading = lua
        .load(text.as_bytes().to_vec())
        .set_mode(ChunkMode::Text)
        .set_name(name.unwrap_or_else(|| "=(load)".to_owned()));
    if let Some(env) = env {
        loading = loading.set_environment(env);
    }
    match loading.into_function() {
        Ok(function) => Ok((Value::Function(function), Value::Nil)),
        Err(e) => Ok((Value::Nil, super::one_line(&e).into_lua(lua)?)),
    }
}

/// `print`: to the log, at info.
fn print(_: &Lua, values: Variadic<Value>) -> mlua::Result<()> {
    let words: Vec<String> = values
        .into_iter()
        .map(|v| v.to_string().unwrap_or_else(|_| v.type_name().to_owned()))
        .collect();
    tracing::info!("lua: {}", words.join("\t"));
    Ok(())
}

/// `require("a.b")`: `dir/a/b.lua`, run once per state (its result kept), in the
/// state's globals; names of letters, digits, `_` and dots only.
fn require_below(lua: &Lua, dir: PathBuf) -> mlua::Result<Function> {
    let modules = lua.create_table()?;
    lua.create_function(move |lua, name: String| {
        if let Some(module) = modules.get::<Option<Value>>(name.as_str())? {
            return Ok(module);
        }
        let relative = module_path(&name)
            .ok_or_else(|| mlua::Error::runtime(format!("require {name:?}: not a module name")))?;
        let path = dir.join(&relative);
        let stamp = stamp::take(&path);
        let text = std::fs::read(&path).map_err(|e| {
            mlua::Error::runtime(format!("require {name:?}: {}: {e}", relative.display()))
        })?;
        if let Some(loaded) = lua.app_data_ref::<Loaded>() {
            loaded.0.lock().expect("not poisoned").push((path, stamp));
        }
        let module: Value = lua
            .load(text)
            .set_mode(ChunkMode::Text)
            .set_name(format!("@{}", relative.display()))
            .call(name.as_str())?;
        let module = if module.is_nil() {
            Value::Boolean(true)
        } else {
            module
        };
        modules.set(name.as_str(), module.clone())?;
        Ok(module)
    })
}

/// `a.b` as `a/b.lua`, or `None` for a name that could lead anywhere else.
fn module_path(name: &str) -> Option<PathBuf> {
    let ok = !name.is_empty()
        && name
            .split('.')
            .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    if !ok {
        return None;
    }
    let path = PathBuf::from(format!("{}.lua", name.replace('.', "/")));
    path.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then_some(path)
}

/// The `proscenium` table: `json.encode`, `json.decode`, `html.escape`,
/// `publish(topic, payload)` — a string as it is, anything else as JSON — which
/// returns the post's id, and `state` (see [`bridge`]).
fn helpers(lua: &Lua, bridge: &Bridge) -> mlua::Result<Table> {
    let json = lua.create_table()?;
    json.set(
        "encode",
        lua.create_function(|lua, value: Value| {
            let value: serde_json::Value = lua.from_value(value)?;
            serde_json::to_string(&value).map_err(mlua::Error::external)
        })?,
    )?;
    json.set(
        "decode",
        lua.create_function(|lua, text: mlua::String| {
            let value: serde_json::Value =
                serde_json::from_slice(&text.as_bytes()).map_err(mlua::Error::external)?;
            lua.to_value(&value)
        })?,
    )?;
    let html = lua.create_table()?;
    html.set(
        "escape",
        lua.create_function(|_, text: String| Ok(html_escape(&text)))?,
    )?;
    let helpers = lua.create_table()?;
    helpers.set("json", json)?;
    helpers.set("html", html)?;
    let hub = bridge.hub().clone();
    helpers.set(
        "publish",
        lua.create_function(move |lua, (topic, payload): (String, Value)| {
            let payload = match payload {
                Value::String(text) => text.as_bytes().to_vec(),
                other => {
                    let value: serde_json::Value = lua.from_value(other)?;
                    serde_json::to_vec(&value).map_err(mlua::Error::external)?
                }
            };
            hub.publish(&topic, payload).map_err(mlua::Error::external)
        })?,
    )?;
    helpers.set("state", bridge::state_table(lua)?)?;
    Ok(helpers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` on a state whose requests may run `instructions`.
    fn run(instructions: usize, script: &str) -> (mlua::Result<()>, bool) {
        let bridge = Bridge::new(crate::hub::Hub::new());
        let state = state(Path::new("."), &bridge, instructions).unwrap();
        state.budget.refill(instructions as u64);
        let ran = state.run(|| state.lua.load(script).exec());
        (ran, state.budget.is_exhausted())
    }

    #[test]
    fn an_endless_loop_is_stopped_past_its_budget_in_a_coroutine_too() {
        for script in [
            "while true do end",
            "coroutine.wrap(function() while true do end end)()",
            // Swallowing the budget's error and going on does not go far.
            "local co = coroutine.create(function() while true do end end) \
             while true do coroutine.resume(co) pcall(function() while true do end end) end",
        ] {
            let (ran, exhausted) = run(1_000_000, script);
            let error = ran.unwrap_err().to_string();
            assert!(
                exhausted && error.contains("instruction budget"),
                "{script}: {error}"
            );
        }
    }

    #[test]
    fn a_short_request_runs_uncounted_and_a_long_one_within_its_budget() {
        // 2,000 iterations, far under the grace of 10 ms: not counted, so a budget
        // smaller than the hook's step does not stop it.
        let (ran, exhausted) = run(1_000, "for i = 1, 2000 do end");
        assert!(ran.is_ok() && !exhausted, "{ran:?}");
        // Counted once a coroutine is made: the same budget stops the same loop.
        let (ran, exhausted) = run(
            1_000,
            "coroutine.wrap(function() for i = 1, 20000 do end end)()",
        );
        assert!(ran.is_err() && exhausted, "{ran:?}");
        let (ran, exhausted) = run(
            0,
            "coroutine.wrap(function() for i = 1, 20000 do end end)()",
        );
        assert!(ran.is_ok() && !exhausted, "{ran:?}");
    }

    #[test]
    fn module_names_stay_below_the_directory() {
        assert_eq!(
            module_path("lib.greet"),
            Some(PathBuf::from("lib/greet.lua"))
        );
        for bad in ["", "..", "a..b", "a/b", "a.b.", "/etc/passwd"] {
            assert_eq!(module_path(bad), None, "{bad}");
        }
    }
}
