//! What scripts reach beyond their own state: the pub/sub hub
//! (`proscenium.publish`) and the values every state of a server shares
//! (`proscenium.state`), under the lock classes of Rust routes ([`crate::state`]).
//!
//! A route (`app:get(path, { state = "read" }, handler)`) or a page (a global
//! `page = { state = "write" }`) declares what it does with the values; before its
//! script runs, the request takes the lock its class asks for — readers share it,
//! writers exclude each other and the readers, contention defers the request so its
//! loop serves others, as for a Rust route — and holds it until the script has
//! answered. A script that declared nothing fails when it touches the values, and one
//! that declared `read` fails when it writes (500, the line logged): an undeclared
//! access would be a data race the declaration exists to rule out.

use std::collections::HashMap;
use std::sync::Arc;

use mlua::{Lua, LuaSerdeExt as _, Table, Value};

use crate::app::{IntoResponse as _, Reply};
use crate::http::Response;
use crate::hub::Hub;
use crate::state::{Access, Held, LockSet, Read, StateAccess, StateRejection, States, Write};

/// The hub and the shared values the scripts of one server reach: one for its Lua
/// app and pages, so that they see one another's values and posts.
///
/// # Examples
///
/// ```
/// use proscenium::hub::Hub;
/// use proscenium::lua::{Bridge, LuaPages, LuaSpec};
///
/// let bridge = Bridge::new(Hub::new());
/// let pages = LuaPages::new("site", &LuaSpec::default()).with_bridge(&bridge);
/// ```
#[derive(Debug, Clone)]
pub struct Bridge {
    hub: Hub,
    states: Arc<States>,
}

/// The values behind `proscenium.state`: names to JSON values (nil, booleans,
/// numbers, strings, and tables of them — nothing that lives only in one state).
#[derive(Debug, Default)]
pub(crate) struct Values(HashMap<String, serde_json::Value>);

impl Bridge {
    /// A bridge to `hub`, with no values yet.
    pub fn new(hub: Hub) -> Self {
        let mut states = States::default();
        states.insert(Values::default());
        Self {
            hub,
            states: Arc::new(states),
        }
    }

    pub(super) fn hub(&self) -> &Hub {
        &self.hub
    }

    /// The locks a script declaring `access` takes, named `route` when one is held
    /// long.
    pub(super) fn locks(&self, access: Access, route: &str) -> Arc<LockSet> {
        self.states
            .resolve(&[StateAccess::of::<Values>(access)], route)
            .expect("the values are registered with every bridge")
    }
}

/// What `options.state` declares, for `what` (a route or page, in errors).
pub(super) fn declared(options: Option<&Table>, what: &str) -> mlua::Result<Option<Access>> {
    let Some(options) = options else {
        return Ok(None);
    };
    match options.get::<Value>("state")? {
        Value::Nil => Ok(None),
        Value::String(s) if s.as_bytes().as_ref() == b"read" => Ok(Some(Access::Read)),
        Value::String(s) if s.as_bytes().as_ref() == b"write" => Ok(Some(Access::Write)),
        other => Err(mlua::Error::runtime(format!(
            "{what}: state = {}: it takes \"read\" or \"write\"",
            other
                .to_string()
                .unwrap_or_else(|_| other.type_name().to_owned())
        ))),
    }
}

/// The values a request holds while its script runs, as its class allows.
pub(super) enum Holding {
    Read(Read<Values>),
    Write(Write<Values>),
}

impl Holding {
    fn of(held: &Held, set: &LockSet) -> Result<Self, StateRejection> {
        let held = Some(held);
        match set.locks[0].1 {
            Access::Read => Read::from_held(held).map(Self::Read),
            Access::Write => Write::from_held(held).map(Self::Write),
        }
    }

    fn values(&self) -> &Values {
        match self {
            Self::Read(values) => values,
            Self::Write(values) => values,
        }
    }
}

/// Answers with `run`, given the values when `locks` are declared: at once when their
/// lock is free, else once the loop has taken it (deferring, then waiting).
pub(super) fn holding(
    locks: Option<&Arc<LockSet>>,
    run: impl FnOnce(Option<Holding>) -> Response + 'static,
) -> Reply {
    let Some(set) = locks else {
        return Reply::ready(run(None));
    };
    let answer = move |held: Held, set: &LockSet| match Holding::of(&held, set) {
        Ok(holding) => run(Some(holding)),
        Err(refused) => refused.into_response(),
    };
    if let Some(held) = set.try_hold() {
        return Reply::ready(answer(held, set));
    }
    let set = Arc::clone(set);
    Reply::later(async move {
        let held = Arc::clone(&set).hold().await;
        answer(held, &set)
    })
}

/// Runs `call` on `lua` with `holding` lent to `proscenium.state` for its time.
pub(super) fn lending<R>(lua: &Lua, holding: Option<Holding>, call: impl FnOnce() -> R) -> R {
    if let Some(holding) = holding {
        lua.set_app_data(holding);
    }
    let result = call();
    lua.remove_app_data::<Holding>();
    result
}

/// The `proscenium.state` table: `get(name)`, `set(name, value)` (nil removes it) and
/// `incr(name [, by])`, which adds to an integer (absent: 0) and returns the sum.
pub(super) fn state_table(lua: &Lua) -> mlua::Result<Table> {
    let state = lua.create_table()?;
    state.set(
        "get",
        lua.create_function(|lua, name: String| {
            let holding = lua
                .app_data_ref::<Holding>()
                .ok_or_else(|| misuse(lua, "get", "the script declared no state = \"read\""))?;
            match holding.values().0.get(&name) {
                Some(value) => lua.to_value(value),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    state.set(
        "set",
        lua.create_function(|lua, (name, value): (String, Value)| {
            let value: Option<serde_json::Value> = match value {
                Value::Nil => None,
                value => Some(lua.from_value(value)?),
            };
            writing(lua, "set", |values| {
                match value {
                    Some(value) => values.0.insert(name, value),
                    None => values.0.remove(&name),
                };
                Ok(())
            })
        })?,
    )?;
    state.set(
        "incr",
        lua.create_function(|lua, (name, by): (String, Option<i64>)| {
            writing(lua, "incr", |values| {
                let now = match values.0.get(&name) {
                    None => 0,
                    Some(serde_json::Value::Number(n)) if n.is_i64() => n.as_i64().unwrap_or(0),
                    Some(other) => {
                        let why = format!("{name:?} holds {other}, not an integer");
                        return Err(misuse(lua, "incr", &why));
                    }
                };
                let sum = now
                    .checked_add(by.unwrap_or(1))
                    .ok_or_else(|| misuse(lua, "incr", "the sum overflows"))?;
                values.0.insert(name, sum.into());
                Ok(sum)
            })
        })?,
    )?;
    Ok(state)
}

/// Runs `change` on the values, for a script that declared `state = "write"`.
fn writing<R>(
    lua: &Lua,
    function: &str,
    change: impl FnOnce(&mut Values) -> mlua::Result<R>,
) -> mlua::Result<R> {
    let mut holding = lua.app_data_mut::<Holding>();
    match holding.as_deref_mut() {
        Some(Holding::Write(values)) => change(values),
        Some(Holding::Read(_)) => Err(misuse(
            lua,
            function,
            "the script declared state = \"read\", not \"write\"",
        )),
        None => Err(misuse(
            lua,
            function,
            "the script declared no state = \"write\"",
        )),
    }
}

/// `proscenium.state.function` used against its declaration, as an error naming the
/// script's file and line.
fn misuse(lua: &Lua, function: &str, why: &str) -> mlua::Error {
    let place = lua
        .inspect_stack(1, |frame| {
            let source = frame.source();
            let file = source.short_src.as_deref().unwrap_or("?").to_owned();
            match frame.current_line() {
                Some(line) => format!("{file}:{line}: "),
                None => format!("{file}: "),
            }
        })
        .unwrap_or_default();
    mlua::Error::runtime(format!("{place}proscenium.state.{function}: {why}"))
}
