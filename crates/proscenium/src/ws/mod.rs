//! WebSocket (RFC 6455) on an HTTP/1.1 connection, under every execution model. A
//! handler takes a [`WebSocketUpgrade`] — the opening handshake, checked (400 for a
//! bad key, 426 for a request that is not one or asks another version) — and answers
//! with [`WebSocketUpgrade::on_upgrade`]: `101 Switching Protocols`, then the function
//! given runs with the [`WebSocket`] on the loop (or thread) that served the request.
//!
//! Frames are read and written by tungstenite's frame layer; the messages are this
//! module's (the choice is measured in docs/performance.md, "WebSocket frame layers"):
//! fragments reassembled, pings answered, the close handshake, and every payload
//! checked as it arrives, so a message past its limit (256 KiB by default, inflated
//! bytes for a compressed one) closes the socket with 1009 and text that is not UTF-8
//! with 1007 at the byte that breaks it, any other breach of the protocol with 1002.
//! Messages being gathered draw on the server's memory budget for what clients send
//! (`limits.max_buffered_bodies`, shared with request bodies): one that cannot get
//! room closes its socket with 1013. Autobahn's fuzzing client passes every case
//! against `examples/hello` (`scripts/autobahn`, docs/results/autobahn.md).
//! permessage-deflate (RFC 7692) is taken when a route asks for it
//! ([`WebSocketUpgrade::compression`]) and the client offers it, with its
//! context-takeover and window terms. When the
//! server's shutdown begins, every socket is closed with 1001 (going away), so a
//! graceful shutdown does not wait its deadline for them. A peer silent for a whole
//! keep-alive interval (30 s by default, [`WebSocketUpgrade::keep_alive`]) is pinged,
//! and taken for gone if it stays silent for another.
//!
//! What a socket sends waits in a send queue bounded in bytes (1 MiB by default,
//! [`WebSocketUpgrade::send_queue`]): its owner's [`WebSocket::send`] waits for the
//! connection, while a [`Sender`] — cloned, sent to another task, thread or actor —
//! feeds it without waiting, and a reader too slow for its feed meets the
//! [`SlowReader`] policy: closed with 1008, or its oldest fed messages dropped and
//! counted. A slow client never grows the server's memory past its queue.
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
//!
//! A feed: whatever a [`Sender`] is given is written while the owner waits for what
//! the peer says.
//!
//! ```
//! use std::time::Duration;
//! use proscenium::App;
//! use proscenium::ws::{Message, SlowReader, WebSocketUpgrade};
//!
//! let app = App::new().get("/ticks", |ws: WebSocketUpgrade| async move {
//!     ws.send_queue(64 * 1024, SlowReader::DropOldest)
//!         .on_upgrade(|mut socket| async move {
//!             let feed = socket.sender();
//!             std::thread::spawn(move || {
//!                 for tick in 0u64.. {
//!                     if feed.feed(Message::text(tick.to_string())).is_err() {
//!                         return; // the socket closed
//!                     }
//!                     std::thread::sleep(Duration::from_secs(1));
//!                 }
//!             });
//!             while socket.recv().await.is_some() {}
//!         })
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
