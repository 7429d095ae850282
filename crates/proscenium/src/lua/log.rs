//! `print`: a script's lines to the log, at info, bounded per request — `[lua]
//! log_lines` lines and `log_bytes` bytes, each line cut at [`LINE_MAX`] — so that a
//! page printing in a loop cannot flood the log (one wrote 100 MB in 0.9 s). What is
//! past the bound is dropped and counted, and the request's end logs one line saying
//! how much ([`per_request`]); a state's count starts again with every request.

use mlua::{Lua, Value, Variadic};

use super::bridge::Bounds;

/// Bytes of a line kept, at most: the rest is cut (and counted).
const LINE_MAX: usize = 4096;

/// What a state's current request wrote and dropped.
#[derive(Debug, Default)]
struct Written {
    lines: usize,
    bytes: usize,
    dropped: u64,
    cut: u64,
}

/// The `print` of a state whose requests each write at most `bounds`' lines and bytes.
pub(super) fn print(lua: &Lua, bounds: Bounds) -> mlua::Result<mlua::Function> {
    lua.set_app_data(Written::default());
    lua.create_function(move |lua, values: Variadic<Value>| {
        let room = {
            let written = lua.app_data_ref::<Written>();
            let written = written.as_deref();
            match written {
                Some(w) if w.lines < bounds.log_lines && w.bytes < bounds.log_bytes => {
                    (bounds.log_bytes - w.bytes).min(LINE_MAX)
                }
                _ => 0,
            }
        };
        // Made with no borrow held: a value's `__tostring` may print in turn.
        let line = (room > 0).then(|| line_of(&values, room));
        if let Some(mut written) = lua.app_data_mut::<Written>() {
            match &line {
                Some((text, cut)) => {
                    written.lines += 1;
                    written.bytes += text.len();
                    written.cut += u64::from(*cut);
                }
                None => written.dropped += 1,
            }
        }
        if let Some((text, _)) = line {
            tracing::info!("lua: {text}");
        }
        Ok(())
    })
}

/// `values` as one line of at most `room` bytes, tab-separated, and whether it was
/// cut. A string is read only as far as the line needs.
fn line_of(values: &[Value], room: usize) -> (String, bool) {
    let mut line = String::new();
    let mut cut = false;
    for (at, value) in values.iter().enumerate() {
        if at > 0 {
            line.push('\t');
        }
        let left = room.saturating_sub(line.len());
        let text = match value {
            Value::String(s) => {
                let bytes = s.as_bytes();
                cut |= bytes.len() > left;
                String::from_utf8_lossy(&bytes[..bytes.len().min(left)]).into_owned()
            }
            other => other
                .to_string()
                .unwrap_or_else(|_| other.type_name().to_owned()),
        };
        line.push_str(&text);
        if line.len() > room {
            cut = true;
            let mut end = room;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
        }
        if line.len() >= room && at + 1 < values.len() {
            cut = true;
            break;
        }
    }
    (line, cut)
}

/// Runs `call`, a request to the page or route `name` on `lua`, then logs how many of
/// its lines were dropped or cut, if any, and starts the state's count again.
pub(super) fn per_request<R>(lua: &Lua, name: &str, call: impl FnOnce() -> R) -> R {
    let result = call();
    let written = lua
        .app_data_mut::<Written>()
        .map(|mut written| std::mem::take(&mut *written));
    if let Some(w) = written.filter(|w| w.dropped > 0 || w.cut > 0) {
        tracing::warn!(
            "lua: {name}: {} log lines dropped, {} cut (a request writes at most [lua] log_lines and log_bytes)",
            w.dropped,
            w.cut
        );
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(lua: &Lua, script: &str, room: usize) -> (String, bool) {
        let values: Variadic<Value> = lua.load(script).eval().unwrap();
        line_of(&values, room)
    }

    #[test]
    fn a_line_is_cut_at_its_room_on_a_character_boundary() {
        let lua = Lua::new();
        assert_eq!(
            line(&lua, "return 'a', 1, true", 100),
            ("a\t1\ttrue".to_owned(), false)
        );
        assert_eq!(
            line(&lua, "return string.rep('x', 10)", 4),
            ("xxxx".to_owned(), true)
        );
        assert_eq!(
            line(&lua, "return 'ab', 'cd', 'ef'", 4),
            ("ab\tc".to_owned(), true)
        );
        // 'é' is two bytes: cut before it rather than through it.
        let (text, cut) = line(&lua, "return 'aé', 12345", 4);
        assert!(cut && text == "a\u{e9}\t", "{text:?}");
        let (text, cut) = line(&lua, "return 12345678", 4);
        assert_eq!((text.as_str(), cut), ("1234", true));
    }
}
