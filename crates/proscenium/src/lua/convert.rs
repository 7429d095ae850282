//! A request handed to a Lua handler, and its answer made a response — through the
//! state's `invoke.lua`, so that what crosses between Rust and Lua is a few plain
//! strings each way: every table or string mlua hands over is a reference it must
//! register and free, and building the request table field by field from Rust cost
//! twice what the rest of a Lua request did (bench/scripts.sh, `lua`).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, header};
use mlua::{Either, Function, Value};

use super::Failure;
use super::pool::{Pool, Slot};
use super::sandbox::Sandboxed;
use super::threads::Turn;
use super::{bridge, log};
use crate::http::{Body, Request, Response};
use crate::shared::LockSet;

/// The content type of a body a script returned without one.
const HTML: &str = "text/html; charset=utf-8";

/// Answers `req` with `handler` on `slot`, on its script thread (`turn`) — holding
/// the shared values its script declared (`locks`) while it runs — or with what went
/// wrong, logged under `name`.
pub(super) fn respond<T>(
    turn: &Turn<'_>,
    pool: &Pool<T>,
    slot: Slot<T>,
    (handler, locks): (&Function, Option<&Arc<LockSet>>),
    req: &Request,
    name: &str,
) -> Response {
    let loan = match turn.hold(locks) {
        Ok(loan) => loan,
        Err(refused) => {
            pool.give(slot);
            return refused;
        }
    };
    pool.run(slot, |state, _| {
        log::per_request(&state.lua, name, || {
            bridge::lending(&state.lua, loan, || call(state, handler, req))
        })
    })
    .and_then(|answer| answer.map_err(|why| Failure::Script(mlua::Error::runtime(why))))
    .unwrap_or_else(|failure| failure.answer(name))
}

/// Calls `handler` with `req` on `state`: the script's error, or its answer as a
/// response (or what is wrong with that answer).
fn call(
    state: &Sandboxed,
    handler: &Function,
    req: &Request,
) -> mlua::Result<Result<Response, String>> {
    let mut headers = Vec::with_capacity(256);
    for name in req.headers().keys() {
        headers.extend_from_slice(name.as_str().as_bytes());
        headers.push(0);
        for (at, value) in req.headers().get_all(name).iter().enumerate() {
            if at > 0 {
                headers.extend_from_slice(b", ");
            }
            headers.extend_from_slice(value.as_bytes());
        }
        headers.push(0);
    }
    let mut params = String::new();
    for (name, value) in req.params() {
        params.extend([name, "\0", value, "\0"]);
    }
    let remote = req
        .peer_addr()
        .map_or_else(String::new, |peer| peer.ip().to_string());
    let (status, body, fields): (Value, Option<mlua::String>, Option<mlua::String>) =
        state.invoke.call((
            handler,
            req.method().as_str(),
            req.uri().path(),
            req.uri().query().unwrap_or(""),
            text(state, req.body())?,
            remote.as_str(),
            text(state, &headers)?,
            params.as_str(),
        ))?;
    Ok(answer(&status, body.as_ref(), fields.as_ref()))
}

/// `bytes` as the plain string it is when it is UTF-8 (pushed as it is), else as a Lua
/// string made for it.
fn text<'a>(state: &Sandboxed, bytes: &'a [u8]) -> mlua::Result<Either<&'a str, mlua::String>> {
    Ok(match std::str::from_utf8(bytes) {
        Ok(text) => Either::Left(text),
        Err(_) => Either::Right(state.lua.create_string(bytes)?),
    })
}

/// The response of a status, a body and `name\0value\0` header fields.
fn answer(
    status: &Value,
    body: Option<&mlua::String>,
    fields: Option<&mlua::String>,
) -> Result<Response, String> {
    let status = status_of(status)?;
    let mut res = Response::new(body.map_or_else(Body::empty, |body| {
        Body::from(Bytes::copy_from_slice(&body.as_bytes()))
    }));
    *res.status_mut() = status;
    if let Some(fields) = fields {
        let fields = fields.as_bytes();
        let mut parts = fields.split(|&b| b == 0);
        while let (Some(name), Some(value)) = (parts.next(), parts.next()) {
            let name = HeaderName::from_bytes(name)
                .map_err(|_| format!("a bad header name {:?}", String::from_utf8_lossy(name)))?;
            let value =
                HeaderValue::from_bytes(value).map_err(|_| format!("a bad value of {name}"))?;
            res.headers_mut().append(name, value);
        }
    }
    if body.is_some() && !res.headers().contains_key(header::CONTENT_TYPE) {
        res.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(HTML));
    }
    Ok(res)
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
