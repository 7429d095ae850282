//! What crosses between nodes: a letter to a named actor — its message's type, the
//! node that sent it, the ask it belongs to — and the reply to an ask. Both go in the
//! stream wire format (`crate::wire`); a reader takes a letter's head first
//! (its message skipped) to know which type to read the message as.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::actor::{AskError, SendError};

/// A letter as written: the message borrowed.
#[derive(Serialize)]
pub(super) struct Letter<'a, M> {
    /// The message's type (`std::any::type_name`): one app binary in every process
    /// names each type alike.
    pub(super) kind: &'a str,
    /// The sending node, whose reply stream an answer goes to.
    pub(super) from: &'a str,
    /// The ask this letter belongs to, at its sender; `None` for a tell.
    pub(super) ask: Option<u64>,
    pub(super) message: &'a M,
}

/// A letter as read: its message of type `M`, or skipped (`IgnoredAny`) to read the
/// head alone.
#[derive(Deserialize)]
pub(super) struct Received<M> {
    pub(super) kind: String,
    pub(super) from: String,
    pub(super) ask: Option<u64>,
    pub(super) message: M,
}

/// A letter's head: all but its message.
pub(super) type Head = Received<IgnoredAny>;

/// The answer to an ask: the reply, or why there is none.
#[derive(Serialize, Deserialize)]
pub(super) struct Reply<R> {
    pub(super) ask: u64,
    pub(super) outcome: Result<R, Failure>,
}

/// A reply's head: which ask it answers.
pub(super) type ReplyHead = Reply<IgnoredAny>;

/// Why an ask that reached its node got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Failure {
    /// The actor's mailbox refused it (full, or the actor stopped).
    NotDelivered(Refusal),
    /// The actor failed or stopped before replying.
    NoReply,
    /// The letter did not read as a message the actor takes remotely.
    Unreadable,
}

/// A mailbox's refusal, as it crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Refusal {
    Full,
    Dropped,
    Stopped,
}

impl From<SendError> for Failure {
    fn from(error: SendError) -> Self {
        match error {
            SendError::Full => Self::NotDelivered(Refusal::Full),
            SendError::Dropped => Self::NotDelivered(Refusal::Dropped),
            SendError::Stopped => Self::NotDelivered(Refusal::Stopped),
            // A node posts only to its own actors.
            SendError::Unreachable | SendError::Unserializable => Self::Unreadable,
        }
    }
}

impl From<Failure> for AskError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NotDelivered(Refusal::Full) => Self::Send(SendError::Full),
            Failure::NotDelivered(Refusal::Dropped) => Self::Send(SendError::Dropped),
            Failure::NotDelivered(Refusal::Stopped) => Self::Send(SendError::Stopped),
            Failure::NoReply => Self::NoReply,
            Failure::Unreadable => Self::Send(SendError::Unserializable),
        }
    }
}
