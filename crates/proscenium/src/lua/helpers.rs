//! The `proscenium` table every script has: `json.encode`, `json.decode`,
//! `html.escape`, `publish(topic, payload)` — a string as it is, anything else as JSON
//! — which returns the post's id, and `state` (see [`bridge`]). What a script hands
//! them to be made JSON is measured first ([`json`]): past the nesting bound or its
//! room, the call fails with the script's file and line.

use mlua::{Lua, LuaSerdeExt as _, Table, Value};

use super::bridge::{self, Bridge};
use super::json;
use crate::http::error_page::html_escape;

/// The `proscenium` table of a state reaching `bridge`.
pub(super) fn table(lua: &Lua, bridge: &Bridge) -> mlua::Result<Table> {
    json::install(lua)?;
    let room = bridge.bounds().converted;
    let json = lua.create_table()?;
    json.set(
        "encode",
        lua.create_function(move |lua, value: Value| {
            let value = json::from_lua(lua, "json.encode", value, room)?;
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
                    let value = json::from_lua(lua, "publish", other, room)?;
                    serde_json::to_vec(&value).map_err(mlua::Error::external)?
                }
            };
            hub.publish(&topic, payload).map_err(mlua::Error::external)
        })?,
    )?;
    helpers.set("state", bridge::state_table(lua, bridge)?)?;
    Ok(helpers)
}

/// `proscenium.function` refused for `why`, as an error naming the script's file and
/// line (the caller's: a Rust function's error has no place of its own).
pub(super) fn refusal(lua: &Lua, function: &str, why: &str) -> mlua::Error {
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
    mlua::Error::runtime(format!("{place}proscenium.{function}: {why}"))
}
