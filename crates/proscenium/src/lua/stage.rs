//! Stages written in Lua: [`LuaStage`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mlua::{ChunkMode, DeserializeOptions, Function, Lua, LuaSerdeExt as _, Value};
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::bridge::Bridge;
use super::sandbox::{self, Sandboxed};
use super::{Failure, LuaSpec, json, log};
use crate::hub::Hub;
use crate::stage::{Context, Out, Stage, StageError};

/// Sends one emitted value on its port, as the port's type.
type Emit =
    Arc<dyn Fn(serde_json::Value, &mut Context<'_>) -> Result<(), StageError> + Send + Sync>;

/// What a call emitted, in order, kept in its state until the call returns.
#[derive(Default)]
struct Emitted(Mutex<Vec<(String, serde_json::Value)>>);

/// A stage written in Lua, as Leda's were: a file defining `handle(event)`, run by a
/// [`Stage`] of a graph beside stages written in Rust.
///
/// ```lua
/// -- filter.lua
/// function handle(window)
///   local errors = 0
///   for _, entry in ipairs(window.entries) do
///     if entry.status >= 500 then errors = errors + 1 end
///   end
///   if errors >= 20 then emit("alarms", { window = window.index, errors = errors }) end
/// end
/// ```
///
/// An event crosses into Lua through serde: its `Serialize` form as a table (a struct's
/// fields by name, a sequence as a list, an enum as serde writes it: `{ Scan = {...} }`
/// for a variant with data, its name for one without). `emit(port, value)` sends
/// `value` on an output port declared with [`LuaStage::output`], turned into the port's
/// type through `Deserialize` (an empty table is an empty list, and the global `null` is
/// a value that is not there, Rust's `None`, where a table cannot hold `nil`); what a
/// call emits is sent when it returns, in order, and nothing of it when it fails.
///
/// Each instance has its own state, sandboxed as a Lua page's is (the same libraries,
/// `require` of the file's own directory, `print` to the log), and each call has the
/// page's budgets: `[lua] instructions` and `[lua] memory`, and `[lua] log_lines` and
/// `log_bytes` of `print`. A call that fails, passes a
/// budget or emits what its port cannot take is the stage's error for that event
/// (counted and logged by the graph, the event dropped); past a budget its state is
/// thrown away and the next event loads the file again in a new one.
pub struct LuaStage {
    script: Script,
    outputs: Vec<Box<dyn FnOnce(Stage) -> Stage>>,
}

/// What every instance of a Lua stage shares: the file, the budgets, the ports.
struct Script {
    name: String,
    file: PathBuf,
    spec: LuaSpec,
    bridge: Bridge,
    ports: HashMap<&'static str, Emit>,
}

/// One instance's state: the sandboxed interpreter and the file's `handle`.
struct Instance {
    state: Sandboxed,
    handle: Function,
}

impl std::fmt::Debug for LuaStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaStage")
            .field("name", &self.script.name)
            .field("file", &self.script.file)
            .finish_non_exhaustive()
    }
}

impl LuaStage {
    /// A stage `name` running `file`'s `handle(event)` within `spec`'s budgets.
    pub fn new(name: &str, file: impl AsRef<Path>, spec: &LuaSpec) -> Self {
        let file = file.as_ref();
        Self {
            script: Script {
                name: name.to_owned(),
                file: std::path::absolute(file).unwrap_or_else(|_| file.to_owned()),
                spec: spec.clone(),
                bridge: Bridge::new(Hub::new()).bounded_by(spec),
                ports: HashMap::new(),
            },
            outputs: Vec::new(),
        }
    }

    /// Declares `port`: `emit(port's name, value)` sends `value` on it as a `T`.
    #[must_use]
    pub fn output<T: DeserializeOwned + Send + 'static>(mut self, port: &Out<T>) -> Self {
        let sent = port.clone();
        let emit: Emit = Arc::new(move |value, ctx| {
            let event: T = serde_json::from_value(value).map_err(|e| {
                let port = sent.name();
                StageError::handler(format!("emitted on `{port}` what it does not take: {e}"))
            })?;
            Ok(ctx.send(&sent, event)?)
        });
        self.script.ports.insert(port.name(), emit);
        let port = port.clone();
        self.outputs
            .push(Box::new(move |stage| stage.output(&port)));
        self
    }

    /// The stage, stateful: one instance, events one at a time, in order.
    pub fn stateful<E: Serialize + Send + 'static>(self) -> Stage {
        let (script, outputs) = (Arc::new(self.script), self.outputs);
        with_outputs(
            Stage::stateful(&script.name.clone(), || None, handler::<E>(script)),
            outputs,
        )
    }

    /// The stage, stateless: as many instances as its cluster says, each with a state
    /// of its own.
    pub fn stateless<E: Serialize + Send + 'static>(self) -> Stage {
        let (script, outputs) = (Arc::new(self.script), self.outputs);
        with_outputs(
            Stage::stateless(&script.name.clone(), || None, handler::<E>(script)),
            outputs,
        )
    }
}

/// An instance's handler: `script`'s `handle(event)` on the instance's state.
fn handler<E: Serialize>(
    script: Arc<Script>,
) -> impl Fn(&mut Option<Instance>, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static
{
    move |instance, event, ctx| script.handle(instance, &event, ctx)
}

fn with_outputs(stage: Stage, outputs: Vec<Box<dyn FnOnce(Stage) -> Stage>>) -> Stage {
    outputs
        .into_iter()
        .fold(stage, |stage, output| output(stage))
}

impl Script {
    /// Runs `handle(event)` on the instance's state (made first if it has none), then
    /// sends what it emitted.
    fn handle<E: Serialize>(
        &self,
        instance: &mut Option<Instance>,
        event: &E,
        ctx: &mut Context<'_>,
    ) -> Result<(), StageError> {
        let fail = |failure: Failure| {
            StageError::handler(format!("lua stage `{}`: {}", self.name, failure.describe()))
        };
        let loaded = match instance {
            Some(loaded) => loaded,
            None => instance.insert(self.load().map_err(fail)?),
        };
        let event = serde_json::to_value(event)
            .map_err(|e| StageError::handler(format!("an event Lua cannot take: {e}")))?;
        loaded.state.budget.refill(self.spec.instructions as u64);
        // Each call may print `[lua] log_lines` and `log_bytes`, as a request may.
        let ran = log::per_request(&loaded.state.lua, &self.name, || {
            loaded.state.run(|| {
                let event = loaded.state.lua.to_value(&event)?;
                loaded.handle.call::<()>(event)
            })
        });
        let emitted = (loaded.state.lua.app_data_ref::<Emitted>())
            .map(|emitted| std::mem::take(&mut *emitted.0.lock()));
        if let Err(error) = ran {
            let failure = Failure::of(error, loaded.state.budget.is_exhausted());
            if failure.spoils_state() {
                *instance = None;
            }
            return Err(fail(failure));
        }
        for (port, value) in emitted.unwrap_or_default() {
            let emit = self.ports.get(port.as_str()).ok_or_else(|| {
                StageError::handler(format!(
                    "lua stage `{}` emitted on `{port}`, a port it does not have",
                    self.name
                ))
            })?;
            emit(value, ctx)?;
        }
        Ok(())
    }

    /// A new state with the file loaded: its `handle`, and `emit` to call.
    fn load(&self) -> Result<Instance, Failure> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        let loaded = sandbox::state(dir, &self.bridge, self.spec.instructions).and_then(|state| {
            state.lua.set_app_data(Emitted::default());
            let globals = state.lua.globals();
            globals.set(
                "emit",
                emit_function(&state.lua, self.bridge.bounds().converted)?,
            )?;
            globals.set("null", state.lua.null())?;
            let text = std::fs::read(&self.file).map_err(mlua::Error::external)?;
            state.run(|| {
                state
                    .lua
                    .load(text)
                    .set_mode(ChunkMode::Text)
                    .set_name(format!("@{}", self.file.display()))
                    .exec()
            })?;
            let handle = state
                .lua
                .globals()
                .get::<Option<Function>>("handle")?
                .ok_or_else(|| {
                    mlua::Error::runtime(format!(
                        "{}: defines no handle(event)",
                        self.file.display()
                    ))
                })?;
            let limit = state.lua.used_memory().saturating_add(self.spec.memory);
            state.lua.set_memory_limit(limit)?;
            Ok(Instance { state, handle })
        });
        loaded.map_err(|e| Failure::of(e, false))
    }
}

/// `emit(port, value)`: keeps `value` (as JSON, at most `room` bytes) for `port`. An
/// empty table is an empty list: Rust events hold lists far more often than maps
/// that may be empty.
fn emit_function(lua: &Lua, room: usize) -> mlua::Result<Function> {
    lua.create_function(move |lua, (port, value): (String, Value)| {
        let options = DeserializeOptions::default().encode_empty_tables_as_array(true);
        let value = json::from_lua_as(lua, "emit", value, room, options)?;
        if let Some(emitted) = lua.app_data_ref::<Emitted>() {
            emitted.0.lock().push((port, value));
        }
        Ok(())
    })
}

#[cfg(test)]
#[path = "stage_tests.rs"]
mod tests;
