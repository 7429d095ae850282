//! The request as a Lua table, and what a script returns as a response.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, header};
use mlua::{Lua, MultiValue, Table, Value};

use crate::http::{Body, Request, Response};

/// The content type of a body a script returned without one.
const HTML: &str = "text/html; charset=utf-8";

/// `req` as a table: `method`, `path`, `query`, `args`, `headers`, `body`, `params`,
/// `remote_addr`.
pub(super) fn request(lua: &Lua, req: &Request) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 8)?;
    table.set("method", req.method().as_str())?;
    table.set("path", req.uri().path())?;
    let query = req.uri().query().unwrap_or("");
    table.set("query", query)?;
    let args = lua.create_table()?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    for (name, value) in pairs {
        args.set(name, value)?;
    }
    table.set("args", args)?;
    let headers = lua.create_table()?;
    for name in req.headers().keys() {
        let values: Vec<&[u8]> = req
            .headers()
            .get_all(name)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        headers.set(name.as_str(), lua.create_string(values.join(&b", "[..]))?)?;
    }
    table.set("headers", headers)?;
    table.set("body", lua.create_string(req.body())?)?;
    let params = lua.create_table()?;
    for (name, value) in req.params() {
        params.set(name, value)?;
    }
    table.set("params", params)?;
    if let Some(peer) = req.peer_addr() {
        table.set("remote_addr", peer.ip().to_string())?;
    }
    Ok(table)
}

/// What a script returned, as a response: a body (a string: 200, HTML); a status,
/// header fields and a body; or a table of `status`, `headers` and `body`; nothing
/// is 204. Anything else is the script's error, said in the returned text.
pub(super) fn response(returned: MultiValue) -> Result<Response, String> {
    let values: Vec<Value> = returned.into_iter().collect();
    match values.as_slice() {
        [] | [Value::Nil, ..] => answer(StatusCode::NO_CONTENT, None, None),
        [Value::String(body)] => answer(StatusCode::OK, None, Some(body.as_bytes().to_vec())),
        [Value::Table(parts)] => {
            let status = parts.get::<Value>("status").map_err(|e| e.to_string())?;
            let headers = parts
                .get::<Option<Table>>("headers")
                .map_err(|e| e.to_string())?;
            let body = parts.get::<Value>("body").map_err(|e| e.to_string())?;
            let status = match status {
                Value::Nil => StatusCode::OK,
                status => status_of(&status)?,
            };
            answer(status, headers.as_ref(), body_of(&body)?)
        }
        [status, rest @ ..] => {
            let status = status_of(status)?;
            let headers = match rest.first() {
                None | Some(Value::Nil) => None,
                Some(Value::Table(headers)) => Some(headers),
                Some(other) => return Err(format!("headers were a {}", other.type_name())),
            };
            answer(
                status,
                headers,
                body_of(rest.get(1).unwrap_or(&Value::Nil))?,
            )
        }
    }
}

fn status_of(value: &Value) -> Result<StatusCode, String> {
    let code = match value {
        Value::Integer(code) => u16::try_from(*code).ok(),
        Value::Number(code) if code.fract() == 0.0 && (100.0..1000.0).contains(code) => {
            Some(*code as u16)
        }
        _ => None,
    };
    code.and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| format!("the status was {value:?}, not a number from 100 to 999"))
}

fn body_of(value: &Value) -> Result<Option<Vec<u8>>, String> {
    match value {
        Value::Nil => Ok(None),
        Value::String(body) => Ok(Some(body.as_bytes().to_vec())),
        Value::Integer(_) | Value::Number(_) => Ok(value.to_string().ok().map(String::into_bytes)),
        other => Err(format!("the body was a {}", other.type_name())),
    }
}

fn answer(
    status: StatusCode,
    headers: Option<&Table>,
    body: Option<Vec<u8>>,
) -> Result<Response, String> {
    let has_body = body.is_some();
    let mut res = Response::new(body.map_or_else(Body::empty, |b| Body::from(Bytes::from(b))));
    *res.status_mut() = status;
    if let Some(headers) = headers {
        for pair in headers.pairs::<String, Value>() {
            let (name, value) = pair.map_err(|e| e.to_string())?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("a bad header name {name:?}"))?;
            let values = match value {
                Value::Table(list) => list
                    .sequence_values::<mlua::String>()
                    .map(|v| v.map(|s| s.as_bytes().to_vec()))
                    .collect::<mlua::Result<Vec<_>>>()
                    .map_err(|e| e.to_string())?,
                Value::String(one) => vec![one.as_bytes().to_vec()],
                other => vec![other.to_string().map_err(|e| e.to_string())?.into_bytes()],
            };
            for value in values {
                let value = HeaderValue::from_bytes(&value)
                    .map_err(|_| format!("a bad value of {name}"))?;
                res.headers_mut().append(name.clone(), value);
            }
        }
    }
    if has_body && !res.headers().contains_key(header::CONTENT_TYPE) {
        res.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(HTML));
    }
    Ok(res)
}
