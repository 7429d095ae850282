//! A request's environment as Rack and WSGI take it: the CGI meta-variables (the
//! request line, the server, the peer, the body's length and type) and each header
//! field as `HTTP_*`; the adapter adds its interface's own (`rack.input`,
//! `wsgi.input`, ...).

use http::{HeaderName, Version, header};
use serde_json::{Map, Value};

use crate::http::Request;

/// How the request's path is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathForm {
    /// As the request line has it (Rack: the app unescapes what it needs).
    Raw,
    /// Percent-decoded, each byte a character (PEP 3333's "bytes as latin-1").
    Decoded,
}

/// Header fields not passed as `HTTP_*`: the body's (given as `CONTENT_LENGTH` and
/// `CONTENT_TYPE`) and `Proxy`, which would become `HTTP_PROXY`, the variable HTTP
/// libraries take for their outgoing proxy (httpoxy, CVE-2016-5385).
const NOT_PASSED: [HeaderName; 3] = [
    header::CONTENT_LENGTH,
    header::CONTENT_TYPE,
    HeaderName::from_static("proxy"),
];

/// The environment of `req`, served on `port` (0: the `Host` field's, else 80).
pub(super) fn build(req: &Request, path: PathForm, port: u16) -> Map<String, Value> {
    let mut env = Map::with_capacity(24);
    let mut set = |name: &str, value: String| {
        env.insert(name.to_owned(), Value::String(value));
    };
    set("REQUEST_METHOD", req.method().as_str().to_owned());
    set("SCRIPT_NAME", String::new());
    let raw = req.uri().path();
    set(
        "PATH_INFO",
        match path {
            PathForm::Raw => raw.to_owned(),
            PathForm::Decoded => percent_encoding::percent_decode_str(raw)
                .map(char::from)
                .collect(),
        },
    );
    set("QUERY_STRING", req.uri().query().unwrap_or("").to_owned());
    let uri = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    set("REQUEST_URI", uri.to_owned());
    set(
        "SERVER_PROTOCOL",
        match req.version() {
            Version::HTTP_10 => "HTTP/1.0",
            Version::HTTP_2 => "HTTP/2",
            _ => "HTTP/1.1",
        }
        .to_owned(),
    );
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let (name, given_port) = split_host(host);
    set("SERVER_NAME", name.to_owned());
    let port = match port {
        0 => given_port.unwrap_or(80),
        port => port,
    };
    set("SERVER_PORT", port.to_string());
    if let Some(peer) = req.peer_addr() {
        set("REMOTE_ADDR", peer.ip().to_string());
        set("REMOTE_PORT", peer.port().to_string());
    }
    let headers = req.headers();
    if !req.body().is_empty() || headers.contains_key(header::CONTENT_LENGTH) {
        set("CONTENT_LENGTH", req.body().len().to_string());
    }
    if let Some(kind) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|k| k.to_str().ok())
    {
        set("CONTENT_TYPE", kind.to_owned());
    }
    for name in headers.keys().filter(|name| !NOT_PASSED.contains(name)) {
        let separator = if name == header::COOKIE { "; " } else { ", " };
        let value: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let variable = format!(
            "HTTP_{}",
            name.as_str().to_ascii_uppercase().replace('-', "_")
        );
        set(&variable, value.join(separator));
    }
    env
}

/// A `Host` field's name and port: `example.org:8080`, `[::1]:3000`, `example.org`.
fn split_host(host: &str) -> (&str, Option<u16>) {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once("]:") {
            Some((ip, port)) => (&host[..ip.len() + 2], Some(port)),
            None => (host, None),
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    (name, port.and_then(|p| p.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(raw: &str) -> Request {
        let mut req = http::Request::builder();
        for line in raw.lines().skip(1) {
            let (name, value) = line.split_once(": ").unwrap();
            req = req.header(name, value);
        }
        let path = raw.lines().next().unwrap();
        Request::from(
            req.uri(path)
                .body(bytes::Bytes::from_static(b"abc"))
                .unwrap(),
        )
    }

    #[test]
    fn the_environment_has_the_request_line_the_server_and_each_field() {
        let req = request(
            "/a%20b?x=1\nHost: example.org:8080\nCookie: a=1\nCookie: b=2\nProxy: evil\nContent-Type: text/plain",
        );
        let env = build(&req, PathForm::Decoded, 0);
        let text = |name: &str| env.get(name).and_then(Value::as_str).map(str::to_owned);
        assert_eq!(text("PATH_INFO").as_deref(), Some("/a b"));
        assert_eq!(text("QUERY_STRING").as_deref(), Some("x=1"));
        assert_eq!(text("SERVER_NAME").as_deref(), Some("example.org"));
        assert_eq!(text("SERVER_PORT").as_deref(), Some("8080"));
        assert_eq!(text("HTTP_COOKIE").as_deref(), Some("a=1; b=2"));
        assert_eq!(text("CONTENT_LENGTH").as_deref(), Some("3"));
        assert_eq!(text("CONTENT_TYPE").as_deref(), Some("text/plain"));
        assert_eq!(text("HTTP_PROXY"), None, "httpoxy");
        assert_eq!(text("HTTP_CONTENT_TYPE"), None);
        assert_eq!(split_host("[::1]:3000"), ("[::1]", Some(3000)));
        assert_eq!(split_host("[::1]"), ("[::1]", None));
        let raw = build(&req, PathForm::Raw, 3000);
        assert_eq!(raw["PATH_INFO"], "/a%20b");
        assert_eq!(raw["SERVER_PORT"], "3000");
    }
}
