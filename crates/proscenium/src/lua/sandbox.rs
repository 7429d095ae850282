//! A sandboxed interpreter state: the libraries that touch nothing outside the state
//! (`string`, `table`, `math`, `utf8`, `coroutine`, and `os`'s clock and dates),
//! `load` of text only, `require` of modules in the script's own directory, `print`
//! to the log (bounded per request, see [`log`]), the `proscenium` helpers, every
//! library read-only once made (see [`readonly`]) — and a budget of instructions,
//! checked by a hook set when a request runs long (see [`watch`]; none with `[lua]
//! instructions = 0`).

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::bridge::Bridge;
use super::stamp::{self, Stamp};
use super::watch::{self, Main};
use super::{helpers, log, readonly};
use mlua::{ChunkMode, Function, IntoLua as _, Lua, LuaOptions, StdLib, Table, Value};

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
    globals.set("print", log::print(&lua, bridge.bounds())?)?;
    globals.set("require", require_below(&lua, dir.to_owned())?)?;
    globals.set("proscenium", helpers::table(&lua, bridge)?)?;
    lua.load(BOUNDS).set_name("=bounds").call::<()>(MAX_MOVE)?;
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
    readonly::seal(&lua)?;
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
/// see [`watch`]). What catches errors — `pcall`, `xpcall`, `coroutine.resume` —
/// raises the budget's error again once the budget is spent: caught and ignored, it
/// would let a script run on forever, a step of instructions between two catches. And
/// an `xpcall` message handler is not run once the budget is spent: the budget's error
/// is raised from the hook, and Lua runs the handler of an error raised there with
/// hooks off (`luaD_hook` leaves them off when the hook does not return), so a handler
/// that looped would never be stopped.
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
xpcall = function(f, handler, ...)
  local function handle(...)
    if spent() then
      return "past its instruction budget"
    end
    return handler(...)
  end
  return unless_spent(caught_with(f, handle, ...))
end
"#;

/// The most elements one `table.move` may move: 16 M plain moves take some 0.1 s.
const MAX_MOVE: i64 = 1 << 24;

/// Bounds on C functions that loop a count a script chooses, with no instruction
/// counted meanwhile (so the budget cannot stop them). `string.rep` of an empty string
/// (and separator) is empty whatever the count, returned at once; any other result
/// past the memory budget fails at once, when its buffer is allocated. `table.move`
/// moves at most [`MAX_MOVE`] elements a call: moving nils between empty tables
/// allocates nothing. `setmetatable` refuses a metatable with a `__gc` field: Lua runs
/// finalizers with hooks off, so one that looped would never be stopped; and Lua marks
/// a table for finalization only when its metatable is set with the field there, so
/// one added later is never run. `table.concat`, `string.format`, `string.byte`,
/// `string.char` and `utf8`'s functions loop over what they are given (bounded by
/// memory or by the stack), or call back into counted Lua. Lua's pattern matching
/// cannot be bounded here: a pathological pattern is stopped by the retirement of its
/// script thread ([`threads`](super::threads)).
const BOUNDS: &str = r#"
local rep, move, set, rawget, type, tonumber, error = string.rep, table.move, setmetatable, rawget, type, tonumber, error
local MAX_MOVE = ...
string.rep = function(s, n, sep)
  if s == "" and (sep == nil or sep == "") and tonumber(n) then
    return ""
  end
  return rep(s, n, sep)
end
table.move = function(a1, f, e, t, a2)
  f, e = tonumber(f), tonumber(e)
  if f and e and e >= f and e - f >= MAX_MOVE then
    error("table.move: more than " .. MAX_MOVE .. " elements", 2)
  end
  return move(a1, f, e, t, a2)
end
setmetatable = function(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: __gc finalizers are not allowed", 2)
  end
  return set(t, mt)
end
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

    /// Runs `script` as [`run`] does, on a state bounded to 1 MiB more memory, on a
    /// thread of its own: its error, or a panic if it is not done within 30 s (a C
    /// function that loops would never be).
    fn run_bounded(script: &'static str) -> String {
        let (done, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let bridge = Bridge::new(crate::hub::Hub::new());
            let state = state(Path::new("."), &bridge, 1_000_000).unwrap();
            let limit = state.lua.used_memory() + (1 << 20);
            state.lua.set_memory_limit(limit).unwrap();
            state.budget.refill(1_000_000);
            let ran = state.run(|| state.lua.load(script).exec());
            let _ = done.send(ran.map_or_else(|e| e.to_string(), |()| "ok".to_owned()));
        });
        outcome
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{script}: still running after 30 s"))
    }

    #[test]
    fn issue33_c_functions_that_loop_a_scripts_count_end_at_once() {
        let ok = [
            // An empty string repeated any count is empty, at once.
            r#"assert(string.rep("", math.maxinteger) == "")"#,
            r#"assert((""):rep(1e18, "") == "")"#,
            r#"assert(string.rep("ab", 3, ",") == "ab,ab,ab")"#,
            "assert(select(2, table.move({1, 2, 3}, 1, 3, 2)) == nil)",
        ];
        for script in ok {
            assert_eq!(run_bounded(script), "ok", "{script}");
        }
        let refused = [
            (r#"string.rep("x", 1 << 30)"#, "memory"),
            (r#"string.rep("", 1 << 30, "x")"#, "memory"),
            ("table.move({}, 1, math.maxinteger - 1, 1, {})", "elements"),
            ("table.move({}, 1, 1 << 40, 1)", "elements"),
        ];
        for (script, why) in refused {
            let error = run_bounded(script);
            assert!(error.contains(why), "{script}: {error}");
        }
    }

    #[test]
    fn issue33_no_finalizer_runs_and_no_message_handler_once_the_budget_is_spent() {
        let error = run_bounded("setmetatable({}, { __gc = function() while true do end end })");
        assert!(error.contains("__gc"), "{error}");
        // Added later, the field is never a finalizer.
        let later = "local mt = {} setmetatable({}, mt) \
                     mt.__gc = function() while true do end end collectgarbage()";
        assert_eq!(run_bounded(later), "ok");
        let looping = "xpcall(function() while true do end end, function() while true do end end)";
        let error = run_bounded(looping);
        assert!(error.contains("instruction budget"), "{error}");
        // A handler of an ordinary error still runs.
        let handled = r#"local ok, why = xpcall(error, function(e) return "handled " .. e end, "x")
                         assert(not ok and why == "handled x")"#;
        assert_eq!(run_bounded(handled), "ok");
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
