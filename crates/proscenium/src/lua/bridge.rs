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
use std::time::Instant;

use mlua::{Lua, LuaSerdeExt as _, Table, Value};
use parking_lot::Mutex;
use tokio::time::error::Elapsed;

use super::{LuaSpec, helpers, json};
use crate::app::IntoResponse;
use crate::app::state_extractors::{Read, StateRejection, Write};
use crate::http::Response;
use crate::http::response::unavailable;
use crate::hub::Hub;
use crate::shared::{Access, Held, LockSet, StateAccess, States};

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
    bounds: Bounds,
}

/// How much of what scripts hand the server a bridge takes: `[lua]`'s bounds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// Bytes the values may take together (`[lua] state_memory`).
    pub(super) values: usize,
    /// Bytes of JSON one value made JSON may take, for `json.encode` and `publish`
    /// (`[lua] memory`: larger, it could not be a string of the state's either).
    pub(super) converted: usize,
    /// Log lines and bytes a request may write (`[lua] log_lines`, `log_bytes`).
    pub(super) log_lines: usize,
    pub(super) log_bytes: usize,
}

impl Bounds {
    fn of(spec: &LuaSpec) -> Self {
        Self {
            values: spec.state_memory,
            converted: spec.memory,
            log_lines: spec.log_lines,
            log_bytes: spec.log_bytes,
        }
    }
}

/// The values behind `proscenium.state`: names to JSON values (nil, booleans,
/// numbers, strings, and tables of them — nothing that lives only in one state), each
/// with its size (its name's bytes and its [weight](json::weight)), and their sum.
#[derive(Debug, Default)]
pub(crate) struct Values {
    by_name: HashMap<String, (serde_json::Value, usize)>,
    bytes: usize,
}

impl Values {
    /// Bytes `name`'s value may take within `bound`, given what the others take.
    fn room_for(&self, name: &str, bound: usize) -> usize {
        let own = self.by_name.get(name).map_or(0, |(_, size)| *size);
        bound.saturating_sub(self.bytes - own)
    }

    /// Stores `value` under `name` (`None` removes it), unless the values would take
    /// more than `bound` bytes then: the sizes they would take, as an error.
    fn put(
        &mut self,
        name: String,
        value: Option<serde_json::Value>,
        bound: usize,
    ) -> Result<(), String> {
        let old = self.by_name.get(&name).map_or(0, |(_, size)| *size);
        let others = self.bytes - old;
        let Some(value) = value else {
            self.by_name.remove(&name);
            self.bytes = others;
            return Ok(());
        };
        let size = name.len() + json::weight(&value);
        if others + size > bound {
            return Err(format!(
                "{name:?} would take {size} bytes, the values {} in all, past [lua] state_memory = {bound}",
                others + size
            ));
        }
        self.by_name.insert(name, (value, size));
        self.bytes = others + size;
        Ok(())
    }
}

impl Bridge {
    /// A bridge to `hub`, with no values yet, taking as much as `[lua]`'s defaults
    /// allow (see [`bounded_by`](Self::bounded_by)).
    pub fn new(hub: Hub) -> Self {
        let mut states = States::default();
        states.insert(Values::default());
        Self {
            hub,
            states: Arc::new(states),
            bounds: Bounds::of(&LuaSpec::default()),
        }
    }

    /// Takes `spec`'s bounds: the bytes the shared values may take together
    /// (`state_memory`), one value made JSON (`memory`), and a request's log lines
    /// (`log_lines`, `log_bytes`).
    #[must_use]
    pub fn bounded_by(mut self, spec: &LuaSpec) -> Self {
        self.bounds = Bounds::of(spec);
        self
    }

    pub(super) fn hub(&self) -> &Hub {
        &self.hub
    }

    pub(super) fn bounds(&self) -> Bounds {
        self.bounds
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
/// at once when they are free, else waiting until `deadline` (503 past it) as the
/// script's thread blocks on a future (`block_on`). Returns the loan to give the script, `None` when it declared none.
// A refusal is the whole response the client gets; boxing it would only add an
// allocation.
#[allow(clippy::result_large_err)]
pub(super) fn hold(
    locks: Option<&Arc<LockSet>>,
    loan: &Arc<Loan>,
    deadline: Instant,
    block_on: impl FnOnce(Waiting<'_>) -> Option<Result<Held, Elapsed>>,
) -> Result<Option<Arc<Loan>>, Response> {
    let Some(set) = locks else {
        return Ok(None);
    };
    let held = match set.try_hold() {
        Some(held) => held,
        // The timer is made inside the runtime, whose time driver it needs.
        None => block_on(Box::pin(async {
            tokio::time::timeout_at(deadline.into(), Arc::clone(set).hold()).await
        }))
        .and_then(Result::ok)
        .ok_or_else(|| unavailable("the shared values stayed busy past the deadline"))?,
    };
    let holding = Holding::of(&held, set).map_err(IntoResponse::into_response)?;
    loan.lend(holding);
    Ok(Some(Arc::clone(loan)))
}

/// A wait for busy locks, until the request's deadline, for a script's thread to
/// block on (`None`: it could not).
pub(super) type Waiting<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Held, Elapsed>> + Send + 'a>>;

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
/// `incr(name [, by])`, which adds to an integer (absent: 0) and returns the sum; the
/// values take at most `bridge`'s bound in bytes.
pub(super) fn state_table(lua: &Lua, bridge: &Bridge) -> mlua::Result<Table> {
    let bound = bridge.bounds().values;
    let state = lua.create_table()?;
    state.set(
        "get",
        lua.create_function(|lua, name: String| {
            let loan = lua
                .app_data_ref::<Arc<Loan>>()
                .ok_or_else(|| misuse(lua, "get", "the script declared no state = \"read\""))?;
            loan.with(|holding| {
                let holding = holding.ok_or_else(|| misuse(lua, "get", GIVEN_UP))?;
                match holding.values().by_name.get(&name) {
                    Some((value, _)) => lua.to_value(value),
                    None => Ok(Value::Nil),
                }
            })
        })?,
    )?;
    state.set(
        "set",
        lua.create_function(move |lua, (name, value): (String, Value)| {
            // Measured within the room left before it is made a Rust value at all.
            let room = writing(lua, "set", |values| Ok(values.room_for(&name, bound)))?;
            let value = match value {
                Value::Nil => None,
                value => Some(json::from_lua(lua, "state.set", value, room)?),
            };
            writing(lua, "set", |values| {
                values
                    .put(name, value, bound)
                    .map_err(|why| misuse(lua, "set", &why))
            })
        })?,
    )?;
    state.set(
        "incr",
        lua.create_function(move |lua, (name, by): (String, Option<i64>)| {
            writing(lua, "incr", |values| {
                let now = match values.by_name.get(&name) {
                    None => 0,
                    Some((serde_json::Value::Number(n), _)) if n.is_i64() => {
                        n.as_i64().unwrap_or(0)
                    }
                    Some((other, _)) => {
                        let why = format!("{name:?} holds {other}, not an integer");
                        return Err(misuse(lua, "incr", &why));
                    }
                };
                let sum = now
                    .checked_add(by.unwrap_or(1))
                    .ok_or_else(|| misuse(lua, "incr", "the sum overflows"))?;
                values
                    .put(name, Some(sum.into()), bound)
                    .map_err(|why| misuse(lua, "incr", &why))?;
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

/// `proscenium.state.function` used against its declaration or its bound, as an
/// error naming the script's file and line.
fn misuse(lua: &Lua, function: &str, why: &str) -> mlua::Error {
    helpers::refusal(lua, &format!("state.{function}"), why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_their_names_and_weight_within_their_bound() {
        let mut values = Values::default();
        let text = |n: usize| Some(serde_json::Value::String("x".repeat(n)));
        let bound = 100 + 2 * json::ITEM;
        // "a" and "xxxx…" in quotes, a value: 1 + 10 + 2 + ITEM bytes.
        values.put("a".to_owned(), text(10), bound).unwrap();
        assert_eq!(values.bytes, 13 + json::ITEM);
        assert_eq!(values.room_for("b", bound), 87 + json::ITEM);
        assert_eq!(values.room_for("a", bound), bound);
        let refused = values.put("b".to_owned(), text(85), bound).unwrap_err();
        assert!(
            refused.contains(&format!("the values {} in all", bound + 1)),
            "{refused}"
        );
        values.put("b".to_owned(), text(84), bound).unwrap();
        assert_eq!(values.bytes, bound);
        // Replacing a value frees its own bytes first; removing one frees them all.
        values.put("a".to_owned(), text(9), bound).unwrap();
        assert_eq!(values.bytes, bound - 1);
        values.put("a".to_owned(), None, bound).unwrap();
        assert_eq!((values.bytes, values.by_name.len()), (87 + json::ITEM, 1));
    }
}
