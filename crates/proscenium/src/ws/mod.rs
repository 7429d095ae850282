//! WebSocket (RFC 6455) on an HTTP/1.1 connection, under every execution model. A
//! handler takes a [`WebSocketUpgrade`] — the opening handshake, checked (400 for a
//! bad key, 426 for a request that is not one or asks another version) — and answers
//! with [`WebSocketUpgrade::on_upgrade`]: `101 Switching Protocols`, then the function
//! given runs with the [`WebSocket`] on the loop (or thread) that served the request.
//!
//! Frames and messages are tungstenite's protocol (through tokio-tungstenite; the
//! choice is measured in docs/performance.md, "WebSocket frame layers"): fragmented
//! messages reassembled, pings answered, the close handshake, text checked as UTF-8;
//! a frame or message past its limit closes the socket with 1009, text that is not
//! UTF-8 with 1007, any other breach of the protocol with 1002; when the server's
//! shutdown begins, every socket is closed with 1001 (going away), so a graceful
//! shutdown does not wait its deadline for them. A peer silent for a whole
//! keep-alive interval (30 s by default, [`WebSocketUpgrade::keep_alive`]) is pinged,
//! and taken for gone if it stays silent for another.
//!
//! # Example
//!
//! ```
//! use proscenium::App;
//! use proscenium::ws::{Message, WebSocketUpgrade};
//!
//! // Every text and binary message comes back as it came.
//! let app = App::new().get("/ws/echo", |ws: WebSocketUpgrade| async move {
//!     ws.on_upgrade(|mut socket| async move {
//!         while let Some(Ok(message)) = socket.recv().await {
//!             if matches!(message, Message::Text(_) | Message::Binary(_))
//!                 && socket.send(message).await.is_err()
//!             {
//!                 break;
//!             }
//!         }
//!     })
//! });
//! ```

mod deflate;
mod handshake;
mod message;
mod outbox;
mod read;
mod socket;

pub use self::handshake::{WebSocketRejection, WebSocketUpgrade};
pub use self::message::{CloseCode, Message, Text};
pub use self::outbox::{Closed, Sender, SlowReader};
pub use self::socket::{WebSocket, WebSocketError};
