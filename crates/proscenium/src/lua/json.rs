//! A Lua value made a JSON value in Rust — for `proscenium.json.encode`,
//! `proscenium.publish` and `proscenium.state.set` alike — measured first, inside the
//! state and without recursion, so that what mlua's conversion then does is bounded:
//! it recurses once a level of tables (some 10,000 levels overflowed a thread's
//! stack and aborted the process) and allocates in Rust, where the state's memory
//! bound does not reach. A table nested past [`MAX_DEPTH`] levels — or holding itself,
//! which has no depth — and a value weighing more than the room it is given fail as
//! the script's error (500, its file and line logged).
//!
//! A value's weight is about what Rust holds it in: its JSON text and, for each value
//! and key within it, the [`ITEM`] bytes of a `serde_json::Value` — the text alone
//! undercounts a list of small items some 17 times (`[1,1,…]` is 2 bytes an item
//! as text and 32 as values). The measure is a Lua function (`MEASURE`), so that its
//! steps count against the request's instructions and its memory against the
//! state's; its weight is exact for strings' contents and integers (keys of a list,
//! its indices, are not written), a float as long as Lua writes it. [`weight`] is the
//! exact figure, of the value made.

use mlua::{DeserializeOptions, Function, Lua, LuaSerdeExt as _, Value};

use super::helpers;

/// Levels of tables a value may nest: as many as serde_json reads (its recursion
/// limit of 128 refuses the 128th level), so that what a script writes, publishes
/// or stores reads back — `json.decode` included.
pub(super) const MAX_DEPTH: usize = 127;

/// Bytes a value or a key weighs besides its text: a `serde_json::Value`'s size.
pub(super) const ITEM: usize = std::mem::size_of::<serde_json::Value>();

/// Where a state keeps its `MEASURE` function.
const MEASURE_KEY: &str = "proscenium.json.measure";

/// Given the depth bound and [`ITEM`], returns `measure(value, room)`: the weight of
/// `value` (about), or nil and "deep" or "large". It walks tables depth first with a path of
/// its own (a table and the key reached in it at each level), using `next`, which
/// reads past metatables as mlua's conversion does.
const MEASURE: &str = r#"
local max_depth, per_item = ...
local next, type, tostring = next, type, tostring
local function scalar(value)
  local kind = type(value)
  if kind == "string" then
    return #value + 2 + per_item
  elseif kind == "number" then
    return #tostring(value) + per_item
  elseif kind == "boolean" then
    return (value and 4 or 5) + per_item
  end
  return 4 + per_item
end
return function(value, room)
  if type(value) ~= "table" then
    local size = scalar(value)
    if size > room then return nil, "large" end
    return size
  end
  local tables, keys, depth, size = { value }, {}, 1, 2 + per_item
  while depth > 0 do
    local key, item = next(tables[depth], keys[depth])
    if key == nil then
      tables[depth], keys[depth], depth = nil, nil, depth - 1
    else
      keys[depth] = key
      -- A separator; a name also its quotes, colon and weight as a value.
      size = size + (type(key) == "string" and #key + 4 + per_item or 1)
      if type(item) == "table" then
        if depth == max_depth then return nil, "deep" end
        depth = depth + 1
        tables[depth] = item
        size = size + 2 + per_item
      else
        size = size + scalar(item)
      end
      if size > room then return nil, "large" end
    end
  end
  return size
end
"#;

/// Loads the measure into `lua`, for [`from_lua`].
pub(super) fn install(lua: &Lua) -> mlua::Result<()> {
    let measure: Function = lua
        .load(MEASURE)
        .set_name("=measure")
        .call((MAX_DEPTH, ITEM))?;
    lua.set_named_registry_value(MEASURE_KEY, measure)
}

/// Returns `value` as a JSON value, if it nests at most [`MAX_DEPTH`] levels and
/// weighs at most `room` bytes.
///
/// # Errors
///
/// Past either bound, or where mlua's conversion fails (a function, a table with keys
/// of mixed kinds), an error naming `proscenium.function` and the script's line.
pub(super) fn from_lua(
    lua: &Lua,
    function: &str,
    value: Value,
    room: usize,
) -> mlua::Result<serde_json::Value> {
    from_lua_as(lua, function, value, room, DeserializeOptions::default())
}

/// [`from_lua`], converting as `options` say.
pub(super) fn from_lua_as(
    lua: &Lua,
    function: &str,
    value: Value,
    room: usize,
    options: DeserializeOptions,
) -> mlua::Result<serde_json::Value> {
    let measure: Function = lua.named_registry_value(MEASURE_KEY)?;
    let room = i64::try_from(room).unwrap_or(i64::MAX);
    let (size, why): (Option<i64>, Option<String>) = measure.call((&value, room))?;
    if size.is_none() {
        let why = match why.as_deref() {
            Some("deep") => {
                format!("a table nested deeper than {MAX_DEPTH} levels, or holding itself")
            }
            _ => format!("a value of more than {room} bytes (its JSON and {ITEM} a value)"),
        };
        return Err(helpers::refusal(lua, function, &why));
    }
    lua.from_value_with(value, options)
        .map_err(|e| helpers::refusal(lua, function, &super::one_line(&e)))
}

/// What `value` weighs: its JSON text (counted as it is written, not kept) and
/// [`ITEM`] bytes for each value and key within it (counted with a list of its own).
pub(super) fn weight(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut text = Counter(0);
    serde_json::to_writer(&mut text, value).expect("a counter takes every byte");
    let (mut items, mut left) = (0, vec![value]);
    while let Some(value) = left.pop() {
        items += 1;
        match value {
            serde_json::Value::Array(list) => left.extend(list),
            serde_json::Value::Object(map) => {
                items += map.len();
                left.extend(map.values());
            }
            _ => {}
        }
    }
    text.0 + items * ITEM
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state with the measure, and `from_lua` of what `script` returns.
    fn convert(script: &str, room: usize) -> mlua::Result<serde_json::Value> {
        let lua = Lua::new();
        install(&lua).unwrap();
        let value: Value = lua.load(script).eval().unwrap();
        from_lua(&lua, "json.encode", value, room)
    }

    /// A script returning tables nested `depth` levels.
    fn nested(depth: usize) -> String {
        format!("local t = {{}} for i = 2, {depth} do t = {{ t }} end return t")
    }

    #[test]
    fn tables_nest_to_serde_jsons_bound_and_no_deeper() {
        let deepest = convert(&nested(MAX_DEPTH), usize::MAX).unwrap();
        let text = serde_json::to_string(&deepest).unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
        let deeper = format!("[{text}]");
        assert!(serde_json::from_str::<serde_json::Value>(&deeper).is_err());
        for script in [
            nested(MAX_DEPTH + 1),
            // Far past what mlua's conversion could take on a thread's stack.
            nested(100_000),
            "local t = {} t.self = t return t".to_owned(),
            "local a, b = {}, {} a.b = b b.list = { a } return a".to_owned(),
        ] {
            let error = convert(&script, usize::MAX).unwrap_err().to_string();
            assert!(error.contains("nested deeper than 127"), "{error}");
        }
    }

    #[test]
    fn a_value_past_its_room_is_refused_before_it_is_converted() {
        let list = "local t = {} for i = 1, 1000 do t[i] = 'abcdefgh' end return t";
        // 11,001 bytes of text, 1,001 values.
        let value = convert(list, 44_000).unwrap();
        assert_eq!(weight(&value), 11_001 + 1_001 * ITEM);
        let error = convert(list, 43_000).unwrap_err().to_string();
        assert!(error.contains("more than 43000 bytes"), "{error}");
        // A table shared by every item of a list counts as often as it is written.
        let shared = "local x = { 'abcdefgh' } local t = {} \
                      for i = 1, 1000 do t[i] = x end return t";
        assert!(convert(shared, 44_000).is_err());
        assert!(convert("return string.rep('x', 20000)", 10_000).is_err());
        // Text 22 bytes, five values and two keys: 246; measured 248 (the indices).
        let small = "return { a = 1, b = { true, 'x' } }";
        let value = convert(small, 248).unwrap();
        assert_eq!(value, serde_json::json!({ "a": 1, "b": [true, "x"] }));
        assert_eq!(weight(&value), 22 + 7 * ITEM);
        assert!(convert(small, 247).is_err());
    }
}
