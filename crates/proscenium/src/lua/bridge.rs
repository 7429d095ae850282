//! What scripts reach beyond their own state: the pub/sub hub
//! (`proscenium.publish`) and the values every state of a server shares
//! (`proscenium.state`), under the lock classes of Rust routes ([`crate::state`]).
//!
//! A route (`app:get(path, { state = "read" }, handler)`) or a page (a global
//! `page = { state = "write" }`) declares what it does with the values; before its
//! script runs, the request takes the lock its class asks for — readers share it,
//! writers exclude each other and the readers; under contention the request's script
//! thread waits, until the request's deadline at most — and holds it until the script
//! has answered, or until its request is given up past its deadline: the values are
//! lent to the script through a [`Loan`] that is taken back then, so a script that will
//! not stop holds no lock ([`threads`](super::threads)). A script that declared
//! nothing fails when it touches the values, and one that declared `read` fails when
//! it writes (500, the line logged): an undeclared access would be a data race the
//! declaration exists to rule out.

use std::collections::HashMap;
use std::sync::Arc;

use mlua::{Lua, LuaSerdeExt as _, Table, Value};

use std::time::Instant;

use parking_lot::Mutex;
use tokio::runtime::Runtime;

use crate::app::IntoResponse;
use crate::http::Response;
use crate::http::response::unavailable;
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
enum Holding {
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

/// The values lent to one request's script, taken back when the request is given up
/// (past its deadline): their locks are released then, and `proscenium.state` fails
/// for the rest of that script.
#[derive(Default)]
pub(super) struct Loan(Mutex<Lent>);

#[derive(Default)]
struct Lent {
    holding: Option<Holding>,
    taken_back: bool,
}

impl Loan {
    /// Takes the values back, for good.
    pub(super) fn take_back(&self) {
        let holding = {
            let mut lent = self.0.lock();
            lent.taken_back = true;
            lent.holding.take()
        };
        drop(holding);
    }

    /// Lends `holding`, unless the values were taken back already.
    fn lend(&self, holding: Holding) {
        let mut lent = self.0.lock();
        if !lent.taken_back {
            lent.holding = Some(holding);
        }
    }

    /// Runs `use_` on the values lent (`None`: taken back).
    fn with<R>(&self, use_: impl FnOnce(Option<&mut Holding>) -> R) -> R {
        use_(self.0.lock().holding.as_mut())
    }
}

/// Takes the locks a script declared (`locks`) and lends their values to `loan`:
/// at once when they are free, else waiting on this script thread until `deadline`
/// (503 past it). Returns the loan to give the script, `None` when it declared none.
// A refusal is the whole response the client gets; boxing it would only add an
// allocation.
#[allow(clippy::result_large_err)]
pub(super) fn hold(
    locks: Option<&Arc<LockSet>>,
    loan: &Arc<Loan>,
    deadline: Instant,
    runtime: &Runtime,
) -> Result<Option<Arc<Loan>>, Response> {
    let Some(set) = locks else {
        return Ok(None);
    };
    let held = match set.try_hold() {
        Some(held) => held,
        // The timer is made inside the runtime, whose time driver it needs.
        None => runtime
            .block_on(async {
                tokio::time::timeout_at(deadline.into(), Arc::clone(set).hold()).await
            })
            .map_err(|_| unavailable("the shared values stayed busy past the deadline"))?,
    };
    let holding = Holding::of(&held, set).map_err(IntoResponse::into_response)?;
    loan.lend(holding);
    Ok(Some(Arc::clone(loan)))
}

/// Runs `call` on `lua` with `loan` lent to `proscenium.state` for its time.
pub(super) fn lending<R>(lua: &Lua, loan: Option<Arc<Loan>>, call: impl FnOnce() -> R) -> R {
    if let Some(loan) = loan {
        lua.set_app_data(loan);
    }
    let result = call();
    lua.remove_app_data::<Arc<Loan>>();
    result
}

/// What `proscenium.state` says once its request was given up.
const GIVEN_UP: &str = "the request was given up past its deadline";

/// The `proscenium.state` table: `get(name)`, `set(name, value)` (nil removes it) and
/// `incr(name [, by])`, which adds to an integer (absent: 0) and returns the sum.
pub(super) fn state_table(lua: &Lua) -> mlua::Result<Table> {
    let state = lua.create_table()?;
    state.set(
        "get",
        lua.create_function(|lua, name: String| {
            let loan = lua
                .app_data_ref::<Arc<Loan>>()
                .ok_or_else(|| misuse(lua, "get", "the script declared no state = \"read\""))?;
            loan.with(|holding| {
                let holding = holding.ok_or_else(|| misuse(lua, "get", GIVEN_UP))?;
                match holding.values().0.get(&name) {
                    Some(value) => lua.to_value(value),
                    None => Ok(Value::Nil),
                }
            })
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
    let Some(loan) = lua.app_data_ref::<Arc<Loan>>() else {
        return Err(misuse(
            lua,
            function,
            "the script declared no state = \"write\"",
        ));
    };
    loan.with(|holding| match holding {
        Some(Holding::Write(values)) => change(values),
        Some(Holding::Read(_)) => Err(misuse(
            lua,
            function,
            "the script declared state = \"read\", not \"write\"",
        )),
        None => Err(misuse(lua, function, GIVEN_UP)),
    })
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
