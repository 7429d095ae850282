//! Diagnostic routes an operator can switch on (`tools = true`, off by default):
//! `/_status` (the process id, JSON counters per loop and the sections the app adds
//! with [`App::status`]), `/_echo` (the request as
//! parsed, credentials redacted, for debugging clients) and `/_delay?ms=N` (answers
//! after N ms without using the CPU). Nothing here costs the server more than the
//! request itself: CPU-burning load-test routes are the lab's (`examples/lab-app`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use http::header;
use serde::Deserialize;
use serde_json::json;

use crate::app::StatusReader;
use crate::rt::watchdog::LiveStats;
use crate::{App, Json, Query, Request, inline};

/// The longest delay `/_delay` accepts.
const MAX_DELAY_MS: u64 = 10_000;

/// Header fields whose values `echo` never reflects: credentials, which a page that
/// can read the echo (or a log or screenshot of it) would otherwise carry away.
const CREDENTIALS: [header::HeaderName; 4] = [
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::COOKIE,
    header::SET_COOKIE,
];

/// What `echo` shows in place of a credential's value.
const REDACTED: &str = "[redacted]";

/// Adds the diagnostic routes to `app`.
pub(crate) fn mount(app: App) -> App {
    let live = app.live.clone();
    let sections = app.status.clone();
    app.get("/_status", inline(move || status(&live, &sections)))
        .any("/_echo", inline(echo))
        .get("/_delay", delay)
}

/// Returns the server's own keys, then each section the app added
/// ([`App::status`]).
fn status(live: &LiveStats, sections: &[(&'static str, StatusReader)]) -> Json<serde_json::Value> {
    let loops: Vec<_> = live
        .get()
        .iter()
        .enumerate()
        .map(|(id, s)| {
            json!({
                "loop": id,
                "connections": s.conns.load(Ordering::Relaxed),
                "in_flight": s.inflight.load(Ordering::Relaxed),
                "requests": s.requests.load(Ordering::Relaxed),
            })
        })
        .collect();
    let mut page = json!({
        "server": "proscenium",
        "version": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
        "loops": loops,
    });
    for (name, read) in sections {
        page[*name] = read();
    }
    Json(page)
}

/// Returns the request as parsed: method, target, version, headers in order, body.
/// The values of `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` are
/// replaced by `[redacted]`.
///
/// # Examples
///
/// ```
/// let req = proscenium::Request::from(http::Request::new(bytes::Bytes::from("hi")));
/// let echoed = proscenium::web::echo(req).0;
/// assert_eq!(echoed["body"], "hi");
/// ```
// Handlers take their extractors by value; `Request` is the whole-request extractor.
#[allow(clippy::needless_pass_by_value)]
pub fn echo(req: Request) -> Json<serde_json::Value> {
    let headers: Vec<_> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            if CREDENTIALS.contains(k) {
                json!([k.as_str(), REDACTED])
            } else {
                json!([k.as_str(), String::from_utf8_lossy(v.as_bytes())])
            }
        })
        .collect();
    Json(json!({
        "method": req.method().as_str(),
        "target": req.uri().to_string(),
        "version": format!("{:?}", req.version()),
        "headers": headers,
        "body": String::from_utf8_lossy(req.body()),
    }))
}

#[derive(Deserialize)]
struct DelayQuery {
    ms: u64,
}

async fn delay(Query(q): Query<DelayQuery>) -> String {
    let ms = q.ms.min(MAX_DELAY_MS);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms\n")
}
