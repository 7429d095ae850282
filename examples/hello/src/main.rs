//! TechEmpower's two simplest tests and an echo route, on Proscenium's loops.
//!
//! Run with: `cargo run --release -p hello -- --bind 127.0.0.1:8080 --loops 1`
//! (`--model thread-pool`, `--model prefork:2`, `PROSCENIUM_MODEL=event-loop`, a
//! `proscenium.toml` ... run it under another model; `hello config` shows what it
//! would run with, `hello routes` its routes).
//!
//! - `GET /plaintext` → `Hello, World!`
//! - `GET /json` → `{"message":"Hello, World!"}`
//! - `ANY /echo` → the request exactly as parsed, as JSON (method, target, version,
//!   headers in order, body): for debugging clients and differential tests.
//! - `GET /ws/echo` → a WebSocket echoing every text and binary message as received
//!   (what Autobahn's fuzzing client tests).
//! - `GET /feed` → a WebSocket fed every message `POST /publish` is sent, through the
//!   hub: on every replica sharing `[feeds] redis` (`bench/feeds.sh`'s fan-out); a
//!   message past `[feeds] max_post` (1 MiB) gets 413.
//!
//! Left out on purpose: logging and static files, so the benchmark measures the
//! request path alone.

use std::process::ExitCode;

use proscenium::hub::Hub;
use proscenium::ws::{Message as WsMessage, WebSocketUpgrade};
use proscenium::{App, Bytes, Json, Response, StatusCode, inline, web};

/// TechEmpower's JSON test object, serialized for each request.
#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

fn app(hub: &Hub) -> App {
    let (feed, publish) = (hub.clone(), hub.clone());
    App::new()
        .get("/plaintext", inline(|| "Hello, World!"))
        .get(
            "/json",
            inline(|| {
                Json(Message {
                    message: "Hello, World!",
                })
            }),
        )
        .any("/echo", inline(web::echo))
        .get("/ws/echo", ws_echo)
        .get("/feed", move |ws: WebSocketUpgrade| {
            let feed = feed.clone();
            async move { feed.websocket("feed", ws) }
        })
        .post(
            "/publish",
            inline(
                move |message: Bytes| match publish.publish("feed", message) {
                    Ok(_) => StatusCode::NO_CONTENT,
                    // Past `[feeds] max_post`.
                    Err(_) => StatusCode::PAYLOAD_TOO_LARGE,
                },
            ),
        )
}

/// The largest message the echo takes: Autobahn's largest (cases 9.1.6 and 9.2.6
/// send 16 MiB in one frame), past the 256 KiB default.
const ECHO_MAX_MESSAGE: usize = 16 << 20;

/// Echoes every text and binary message until the peer closes, compressed when the
/// client offers permessage-deflate.
async fn ws_echo(ws: WebSocketUpgrade) -> Response {
    let ws = ws.compression(true).max_message_size(ECHO_MAX_MESSAGE);
    ws.on_upgrade(|mut socket| async move {
        while let Some(Ok(message)) = socket.recv().await {
            if matches!(message, WsMessage::Text(_) | WsMessage::Binary(_))
                && socket.send(message).await.is_err()
            {
                break;
            }
        }
    })
}

fn main() -> ExitCode {
    proscenium::main(|deploy| app(&Hub::with(deploy.config().feeds.clone())))
}
