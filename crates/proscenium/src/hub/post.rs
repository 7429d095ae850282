//! What a hub carries: a post, published once and shared by every subscriber it
//! reaches, its forms for a WebSocket and an event stream made once each; and the
//! queue of posts a history or a subscriber keeps, bounded in posts and in bytes.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

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

/// Posts in order, bounded in number and in bytes ([`Post::size`]): a replica's
/// history, a subscriber's queue.
#[derive(Debug, Default)]
pub(super) struct Queue {
    posts: VecDeque<Arc<Post>>,
    /// The sum of the posts' sizes.
    bytes: usize,
}

impl Queue {
    pub(super) fn with_capacity(posts: usize) -> Self {
        Self {
            posts: VecDeque::with_capacity(posts),
            bytes: 0,
        }
    }

    /// Adds `post` last, then lets the oldest go while past `max_posts` or
    /// `max_bytes` (`post` too, if it alone passes `max_bytes`); returns how many went.
    pub(super) fn push(&mut self, post: &Arc<Post>, max_posts: usize, max_bytes: usize) -> u64 {
        self.posts.push_back(Arc::clone(post));
        self.bytes += post.size();
        let mut gone = 0;
        while self.posts.len() > max_posts || self.bytes > max_bytes {
            if self.pop().is_none() {
                break;
            }
            gone += 1;
        }
        gone
    }

    /// Takes the oldest post.
    pub(super) fn pop(&mut self) -> Option<Arc<Post>> {
        let post = self.posts.pop_front()?;
        self.bytes -= post.size();
        Some(post)
    }

    /// Returns how many posts it holds.
    pub(super) fn len(&self) -> usize {
        self.posts.len()
    }

    /// Returns the posts, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Arc<Post>> {
        self.posts.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(payload: usize) -> Arc<Post> {
        // A topic and an id of one byte each.
        Arc::new(Post::new("i".into(), "t".into(), vec![0; payload].into()))
    }

    #[test]
    fn a_queue_lets_its_oldest_go_past_either_bound() {
        let mut queue = Queue::default();
        assert_eq!(queue.push(&post(98), 3, 300), 0);
        assert_eq!(queue.push(&post(98), 3, 300), 0);
        assert_eq!(queue.push(&post(98), 3, 300), 0);
        // A fourth passes the count.
        assert_eq!(queue.push(&post(8), 3, 300), 1);
        // 100 + 10 + 150 bytes fit in 300 once the oldest went.
        assert_eq!(queue.push(&post(148), 5, 300), 1);
        let sizes: Vec<usize> = queue.iter().map(|p| p.size()).collect();
        assert_eq!(sizes, [100, 10, 150]);
        // One past the bytes alone goes, with everything before it.
        assert_eq!(queue.push(&post(398), 5, 300), 4);
        assert!(queue.pop().is_none());
        assert_eq!(queue.bytes, 0);
    }
}
