//! A socket's send queue, bounded in bytes, and the [`Sender`] handles that feed it
//! from anywhere — another task, thread or actor — without waiting.
//!
//! Messages wait here as they were given (their bytes shared, never copied per
//! socket); the socket frames and, if negotiated, compresses each as it writes it.
//! What a reader too slow for its feed costs is the bound: past it the
//! [`SlowReader`] policy drops the oldest fed messages or closes the socket with 1008.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;

use futures_util::task::AtomicWaker;
use parking_lot::Mutex;

use super::message::Message;

/// What a socket does when messages fed to it would pass its send queue's bound —
/// its reader is slower than its feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SlowReader {
    /// Close the socket with 1008 (policy violation); its reader can reconnect and
    /// catch up by other means. The default: nothing is lost unannounced.
    #[default]
    Close,
    /// Drop the oldest fed messages until the new one fits, counting them
    /// ([`Sender::dropped`]): for feeds where only the latest matters.
    DropOldest,
}

/// The socket no longer takes messages: it is closed, or closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the WebSocket is closed")]
pub struct Closed;

/// Feeds messages to one socket from anywhere, without waiting: cloned freely, sent
/// between threads. Messages from one `Sender` arrive in the order fed.
#[derive(Debug, Clone)]
pub struct Sender(Arc<Outbox>);

impl Sender {
    /// Queues `message` for the socket, which writes it when its reader takes it. Past
    /// the queue's bound the socket's [`SlowReader`] policy applies.
    ///
    /// # Errors
    ///
    /// [`Closed`] once the socket is closed or closing (a slow reader's included):
    /// a feed can forget it.
    pub fn feed(&self, message: Message) -> Result<(), Closed> {
        self.0.push(message, true).map(drop)
    }

    /// Returns how many fed messages were dropped for a slow reader.
    pub fn dropped(&self) -> u64 {
        self.0.queue.lock().dropped
    }

    /// Returns whether the socket is closed or closing.
    pub fn is_closed(&self) -> bool {
        self.0.queue.lock().closed
    }
}

#[derive(Debug)]
pub(super) struct Outbox {
    queue: Mutex<Queue>,
    /// Wakes the socket when a message is fed.
    waker: AtomicWaker,
}

#[derive(Debug)]
struct Queue {
    entries: VecDeque<Entry>,
    /// Payload bytes waiting.
    bytes: usize,
    limit: usize,
    policy: SlowReader,
    dropped: u64,
    closed: bool,
    /// A fed message found the queue full under [`SlowReader::Close`].
    overflowed: bool,
    /// How many messages were ever queued, and taken by the socket.
    pushed: u64,
    taken: u64,
}

#[derive(Debug)]
struct Entry {
    message: Message,
    /// Fed by a [`Sender`] (so it may be dropped), not sent by the socket's owner.
    fed: bool,
}

impl Outbox {
    pub(super) fn new(limit: usize, policy: SlowReader) -> Self {
        Self {
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                bytes: 0,
                limit,
                policy,
                dropped: 0,
                closed: false,
                overflowed: false,
                pushed: 0,
                taken: 0,
            }),
            waker: AtomicWaker::new(),
        }
    }

    /// Queues `message`, returning its place in the order of all queued; a `fed` one
    /// meets the bound and its policy.
    pub(super) fn push(&self, message: Message, fed: bool) -> Result<u64, Closed> {
        let size = payload_len(&message);
        let place = {
            let mut queue = self.queue.lock();
            if queue.closed {
                return Err(Closed);
            }
            if fed && queue.bytes + size > queue.limit {
                match queue.make_room(size) {
                    Room::Made => {}
                    // Dropped, the message is as good as sent: the feed goes on.
                    Room::Dropped => return Ok(queue.pushed),
                    Room::Closing => return Err(Closed),
                }
            }
            queue.bytes += size;
            queue.pushed += 1;
            queue.entries.push_back(Entry { message, fed });
            queue.pushed
        };
        self.waker.wake();
        Ok(place)
    }

    /// The next message to write.
    pub(super) fn pop(&self) -> Option<Message> {
        let mut queue = self.queue.lock();
        let entry = queue.entries.pop_front()?;
        queue.bytes -= payload_len(&entry.message);
        queue.taken += 1;
        Some(entry.message)
    }

    /// Returns whether messages wait to be written.
    pub(super) fn is_waiting(&self) -> bool {
        !self.queue.lock().entries.is_empty()
    }

    /// Asks to be woken when a message is fed.
    pub(super) fn register(&self, waker: &Waker) {
        self.waker.register(waker);
    }

    /// Returns how many queued messages the socket has taken.
    pub(super) fn taken(&self) -> u64 {
        self.queue.lock().taken
    }

    /// Returns whether a fed message overflowed the queue under [`SlowReader::Close`].
    pub(super) fn overflowed(&self) -> bool {
        self.queue.lock().overflowed
    }

    /// Takes no more messages and lets go of those waiting.
    pub(super) fn close(&self) {
        let mut queue = self.queue.lock();
        queue.closed = true;
        queue.entries.clear();
        queue.bytes = 0;
    }

    pub(super) fn sender(self: &Arc<Self>) -> Sender {
        Sender(Arc::clone(self))
    }
}

impl Queue {
    /// Makes room for a fed message of `size` bytes as the policy says.
    fn make_room(&mut self, size: usize) -> Room {
        match self.policy {
            SlowReader::Close => {
                self.overflowed = true;
                self.closed = true;
                self.entries.retain(|entry| !entry.fed);
                self.bytes = self.entries.iter().map(|e| payload_len(&e.message)).sum();
                Room::Closing
            }
            SlowReader::DropOldest => {
                while self.bytes + size > self.limit {
                    let Some(oldest) = self.entries.iter().position(|entry| entry.fed) else {
                        break;
                    };
                    let entry = self.entries.remove(oldest).expect("found just now");
                    self.bytes -= payload_len(&entry.message);
                    self.dropped += 1;
                }
                if self.bytes + size <= self.limit {
                    Room::Made
                } else {
                    self.dropped += 1;
                    Room::Dropped
                }
            }
        }
    }
}

/// What making room for a fed message came to.
enum Room {
    Made,
    /// It cannot fit even alone: it is dropped.
    Dropped,
    /// The socket is to close.
    Closing,
}

/// The bytes a message holds.
fn payload_len(message: &Message) -> usize {
    match message {
        Message::Text(text) => text.len(),
        Message::Binary(bytes) | Message::Ping(bytes) | Message::Pong(bytes) => bytes.len(),
        Message::Close(frame) => frame.as_ref().map_or(0, |(_, reason)| reason.len() + 2),
    }
}
