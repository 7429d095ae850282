//! Diagnostic routes an operator can switch on (`tools = true`): `/_status` (the
//! process id and JSON counters per loop), `/_echo` (the request exactly as parsed, for debugging clients),
//! `/_delay?ms=N` (answers after N ms without using the CPU), and `/_cpu?ms=N` /
//! `/_cpu-blocking?ms=N` (burn N ms of CPU on the loop, or on the blocking pool: what a
//! stalled loop looks like, for the watchdog and the lab).

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::rt::watchdog::LiveStats;
use crate::{App, Json, Query, Request, blocking, inline};

/// The longest delay `/_delay` accepts.
const MAX_DELAY_MS: u64 = 10_000;

/// Adds the diagnostic routes to `app`.
pub(crate) fn mount(app: App, live: &LiveStats) -> App {
    let live = live.clone();
    app.get("/_status", inline(move || status(&live)))
        .any("/_echo", inline(echo))
        .get("/_delay", delay)
        .get("/_cpu", inline(burn))
        .get("/_cpu-blocking", blocking(burn))
}

fn status(live: &LiveStats) -> Json<serde_json::Value> {
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
    Json(json!({
        "server": "proscenium",
        "version": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
        "loops": loops,
    }))
}

/// Returns the request as parsed: method, target, version, headers in order, body.
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
        .map(|(k, v)| json!([k.as_str(), String::from_utf8_lossy(v.as_bytes())]))
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

/// Burns `ms` of CPU (at most [`MAX_DELAY_MS`]) and says how many rounds it took.
// Handlers take their extractors by value.
#[allow(clippy::needless_pass_by_value)]
fn burn(Query(q): Query<DelayQuery>) -> String {
    let until = std::time::Instant::now() + Duration::from_millis(q.ms.min(MAX_DELAY_MS));
    let mut rounds = 0u64;
    while std::time::Instant::now() < until {
        rounds = std::hint::black_box(rounds + 1);
    }
    format!("burned {} ms in {rounds} rounds\n", q.ms.min(MAX_DELAY_MS))
}

async fn delay(Query(q): Query<DelayQuery>) -> String {
    let ms = q.ms.min(MAX_DELAY_MS);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms\n")
}
