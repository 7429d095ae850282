//! Dead letters: every message not delivered — told to a full mailbox, sent to or left
//! in a stopped actor, or the message a handler panicked on — is logged, counted and
//! published to subscribers. (A message `try_tell` hands back is its sender's again,
//! not a dead letter.)

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::broadcast;

/// Why a message became a dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// A full mailbox refused it (policy `fail`) or dropped it (`drop-newest`,
    /// `drop-oldest`).
    Overflow,
    /// Its actor had stopped, or stopped with it still queued.
    Stopped,
    /// Its handler panicked with this message (the [`Failure`](super::Failure) as
    /// text); the actor's supervisor decided what came next.
    Failed(String),
    /// For an actor in another process that could not be reached: its name not held
    /// by a live node, or Redis down.
    Unreachable,
    /// A letter from another process that did not read as a message its actor takes
    /// (why, as text); it went to the mailbox's dead-letter stream.
    Unreadable(String),
}

/// One undelivered message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The actor it was for (a stage graph's office files its letters under the
    /// stage's name).
    pub actor: String,
    /// The message's type.
    pub message: &'static str,
    /// Why it was not delivered.
    pub reason: Reason,
}

/// The dead-letter office of one actor system.
#[derive(Debug)]
pub struct DeadLetters {
    count: AtomicU64,
    published: broadcast::Sender<DeadLetter>,
}

/// Dead letters a slow subscriber may fall behind by before it misses some (it is told
/// how many it missed).
const BACKLOG: usize = 1024;

impl Default for DeadLetters {
    fn default() -> Self {
        Self {
            count: AtomicU64::new(0),
            published: broadcast::channel(BACKLOG).0,
        }
    }
}

impl DeadLetters {
    /// How many dead letters there have been.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Every dead letter from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DeadLetter> {
        self.published.subscribe()
    }

    pub(crate) fn report(&self, actor: &str, message: &'static str, reason: Reason) {
        self.count.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(actor, message, ?reason, "dead letter");
        // No subscriber is not an error: the letter is logged and counted.
        let _ = self.published.send(DeadLetter {
            actor: actor.to_owned(),
            message,
            reason,
        });
    }
}
