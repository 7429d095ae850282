//! How to spawn an actor: its name, dispatcher and mailbox.

use super::mailbox::Overflow;

/// How to spawn one actor: its name, dispatcher and mailbox.
#[derive(Debug, Clone)]
pub struct Props {
    pub(crate) name: String,
    pub(crate) dispatcher: String,
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
}

/// The default mailbox capacity.
const CAPACITY: usize = 1024;

impl Props {
    /// An actor named `name` on the default dispatcher, with a mailbox of 1,024
    /// messages and backpressure.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            dispatcher: DEFAULT.to_owned(),
            capacity: CAPACITY,
            overflow: Overflow::default(),
        }
    }

    /// Runs the actor on the dispatcher named `name`.
    #[must_use]
    pub fn dispatcher(mut self, name: impl Into<String>) -> Self {
        self.dispatcher = name.into();
        self
    }

    /// The same props for member `i` of a pool: named `NAME-i`.
    pub(crate) fn numbered(&self, i: usize) -> Self {
        Self {
            name: format!("{}-{i}", self.name),
            ..self.clone()
        }
    }

    /// A mailbox of `capacity` messages, and what to do when it is full. (Besides these,
    /// the actor holds the messages of the turn it is in: at most its dispatcher's
    /// `throughput`.)
    #[must_use]
    pub fn mailbox(mut self, capacity: usize, overflow: Overflow) -> Self {
        self.capacity = capacity;
        self.overflow = overflow;
        self
    }
}

/// The dispatcher actors run on unless their `Props` name another.
pub(crate) const DEFAULT: &str = "default";
