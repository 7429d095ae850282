//! A script's environment, built from nothing: the meta-variables of RFC 3875 §4.1,
//! the request's header fields as `HTTP_*`, and the few variables scripts commonly
//! need (`PATH`, `SCRIPT_FILENAME`, `DOCUMENT_ROOT`, `REQUEST_URI`). Nothing of the
//! server's own environment is passed on.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;

use http::{HeaderName, Version, header};

use super::Inner;
use super::locate::Script;
use crate::http::Request;

/// Where a script finds the programs it runs (`#!/usr/bin/env ruby`).
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Header fields never passed as `HTTP_*`: the body's (given as `CONTENT_LENGTH` and
/// `CONTENT_TYPE`), credentials (RFC 3875 §4.1.18: the server has not checked them),
/// and `Proxy`, which would become `HTTP_PROXY` — the variable HTTP libraries take
/// for their outgoing proxy (httpoxy, CVE-2016-5385).
const NOT_PASSED: [&str; 5] = [
    "content-length",
    "content-type",
    "authorization",
    "proxy-authorization",
    "proxy",
];

/// The environment `script` runs in for `req`.
pub(super) fn build(cgi: &Inner, script: &Script, req: &Request) -> Vec<(String, OsString)> {
    let mut env: Vec<(String, OsString)> = Vec::with_capacity(32);
    let mut set = |name: &str, value: OsString| env.push((name.to_owned(), value));
    let text = |s: &str| OsString::from(s);
    set("GATEWAY_INTERFACE", text("CGI/1.1"));
    set("SERVER_SOFTWARE", text(&cgi.software));
    set(
        "SERVER_PROTOCOL",
        text(match req.version() {
            Version::HTTP_10 => "HTTP/1.0",
            _ => "HTTP/1.1",
        }),
    );
    let (server_name, server_port) = server(cgi, req);
    set("SERVER_NAME", text(&server_name));
    set("SERVER_PORT", text(&server_port.to_string()));
    set("REQUEST_METHOD", text(req.method().as_str()));
    set("QUERY_STRING", text(req.uri().query().unwrap_or("")));
    let uri = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    set("REQUEST_URI", text(uri));
    set("SCRIPT_NAME", text(&script.name));
    set("SCRIPT_FILENAME", script.file.clone().into_os_string());
    set("DOCUMENT_ROOT", cgi.root.clone().into_os_string());
    if !script.path_info.is_empty() {
        set("PATH_INFO", text(&script.path_info));
        let translated = cgi.root.join(script.path_info.trim_start_matches('/'));
        set("PATH_TRANSLATED", translated.into_os_string());
    }
    if let Some(peer) = req.peer_addr() {
        set("REMOTE_ADDR", text(&peer.ip().to_string()));
        set("REMOTE_HOST", text(&peer.ip().to_string()));
        set("REMOTE_PORT", text(&peer.port().to_string()));
    }
    let headers = req.headers();
    if !req.body().is_empty() || headers.contains_key(header::CONTENT_LENGTH) {
        set("CONTENT_LENGTH", text(&req.body().len().to_string()));
    }
    if let Some(kind) = headers.get(header::CONTENT_TYPE) {
        set("CONTENT_TYPE", OsString::from_vec(kind.as_bytes().to_vec()));
    }
    set("REDIRECT_STATUS", text("200"));
    set("PATH", text(PATH));
    for name in headers.keys() {
        if let Some(variable) = variable_of(name) {
            let separator: &[u8] = if name == header::COOKIE { b"; " } else { b", " };
            let value = headers
                .get_all(name)
                .iter()
                .map(http::HeaderValue::as_bytes)
                .collect::<Vec<_>>()
                .join(separator);
            set(&variable, OsString::from_vec(value));
        }
    }
    env
}

/// `HTTP_` and the field's name in capitals, `-` made `_`; `None` for a field not
/// passed, and for a name with `_` in it — which would pass as the same variable as
/// its `-` spelling, letting a client forge a field a proxy in front had set (as
/// nginx and Apache drop them).
fn variable_of(name: &HeaderName) -> Option<String> {
    let name = name.as_str();
    if NOT_PASSED.contains(&name) || name.contains('_') {
        return None;
    }
    Some(format!(
        "HTTP_{}",
        name.to_ascii_uppercase().replace('-', "_")
    ))
}

/// The server's name as the client addressed it (`Host`), and the port the request
/// came in on (RFC 3875 §4.1.15): the one the server listens on, if known, else
/// the one the client named.
fn server(cgi: &Inner, req: &Request) -> (String, u16) {
    let authority: Option<http::uri::Authority> = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse().ok());
    let name = authority
        .as_ref()
        .map_or_else(|| "localhost".to_owned(), |a| a.host().to_owned());
    let port = cgi
        .port
        .or_else(|| authority.and_then(|a| a.port_u16()))
        .unwrap_or(80);
    (name, port)
}
