//! What a hub carries: a post, published once and shared by every subscriber it
//! reaches, its forms for a WebSocket and an event stream made once each.

use std::sync::OnceLock;

use bytes::Bytes;

use crate::ws;

/// A message published to a topic. Every subscriber it reaches shares it: fan-out
/// copies a pointer, and the forms the transports need — a WebSocket text, a
/// server-sent event — are each made once, by the first subscriber that asks.
#[derive(Debug)]
pub struct Post {
    id: String,
    topic: String,
    payload: Bytes,
    /// The WebSocket message: text if the payload is UTF-8, else binary.
    message: OnceLock<ws::Message>,
    /// The server-sent event: `id`, `event` (the topic) and `data` lines.
    event: OnceLock<Bytes>,
}

impl Post {
    pub(crate) fn new(id: String, topic: String, payload: Bytes) -> Self {
        Self {
            id,
            topic,
            payload,
            message: OnceLock::new(),
            event: OnceLock::new(),
        }
    }

    /// Returns the post's id: unique across the replicas sharing a feed, the same on
    /// each, and what an event stream's client sends back as `Last-Event-ID`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Returns the topic it was published to.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Returns the payload as published.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// Returns what the post costs a history to keep: its payload, topic and id (the
    /// forms made for transports are not counted: a WebSocket text shares the
    /// payload, an event stream's event is a copy made once one is asked for).
    pub(crate) fn size(&self) -> usize {
        self.payload.len() + self.topic.len() + self.id.len()
    }

    /// Returns the payload as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.payload).ok()
    }

    /// Deserializes the payload as JSON.
    ///
    /// # Errors
    ///
    /// The payload is not JSON of a `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.payload)
    }

    /// Returns the post as a WebSocket message — text if the payload is UTF-8, else
    /// binary — made once, then shared by every socket it goes to.
    pub fn message(&self) -> ws::Message {
        self.message
            .get_or_init(|| match ws::Text::from_utf8(self.payload.clone()) {
                Some(text) => ws::Message::Text(text),
                None => ws::Message::Binary(self.payload.clone()),
            })
            .clone()
    }

    /// The post as a server-sent event (made once, then shared): its id and its
    /// payload as `data` lines (a line break in the payload starts another `data`
    /// line; bytes that are not UTF-8 are replaced). Unnamed, so a browser's
    /// `EventSource` hands it to `onmessage` whatever the topic: what a client needs
    /// of the topic belongs in the payload.
    pub(crate) fn event(&self) -> Bytes {
        self.event
            .get_or_init(|| {
                crate::sse::Event::data(String::from_utf8_lossy(&self.payload))
                    .id(&self.id)
                    .encode()
            })
            .clone()
    }
}
