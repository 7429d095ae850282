//! A bounded mailbox with a policy for when it is full, and beside it the orders an
//! actor takes ahead of its messages (from its supervisor, about its children). Nothing
//! leaves it unaccounted for: what the policy drops, and what is left when it closes,
//! is handed back to the caller, who reports it to dead letters.
//!
//! Orders share the messages' lock and wake-up rather than having a channel of their
//! own: an idle actor is then one mutex, two queues that allocate nothing until used,
//! and two `Notify`s — what a million idle actors cost.
//!
//! The actor takes a turn's messages (its dispatcher's `throughput`) under one lock,
//! and a sender wakes the actor only when it found nothing: a busy actor and its
//! senders then meet on the lock once per turn rather than twice per message. An order
//! or the close raises a flag the actor looks at before each message in hand, so orders
//! still go ahead of every message not yet handled.
//!
//! This file takes its lock and atomics from its parent's `sync` module and its
//! spinning from `spin`, so that `tests/mailbox_model.rs` compiles it unchanged against
//! loom's primitives (and no spinning) and checks every interleaving of the protocol.

use std::collections::VecDeque;

use tokio::sync::Notify;

use super::Failure;
use super::spin::{self, spin_turn};
use super::sync::{AtomicBool, Mutex, MutexGuard, Ordering};

/// What a full mailbox does with one more message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overflow {
    /// The sender waits for room (`tell` is pending until then).
    #[default]
    Backpressure,
    /// The send fails at once with [`SendError::Full`](super::SendError::Full).
    Fail,
    /// The new message goes to dead letters. (`try_tell` hands it back instead.)
    DropNewest,
    /// The oldest queued message goes to dead letters; the new one is queued.
    DropOldest,
}

/// Orders to an actor that go ahead of its messages.
#[derive(Debug)]
pub(crate) enum Control {
    Restart,
    Resume,
    Stop,
    /// The child with id `child` failed with `why`; it waits for a directive.
    Failed {
        child: u64,
        why: Failure,
    },
    /// The child with id `child` has stopped.
    Stopped {
        child: u64,
    },
}

/// The work an actor takes from its mailbox: an order, or a turn of messages.
pub(crate) enum Work {
    Order(Control),
    /// Handle the messages in hand.
    Turn,
}

/// The outcome of one push. What comes back is the caller's to account for: the mailbox
/// drops nothing itself.
pub(crate) enum Push<T> {
    Queued,
    /// Queued, in place of this oldest waiting item (policy `DropOldest`).
    Displaced(T),
    /// Full: the item back (any policy but `DropOldest` with an item to displace).
    Full(T),
    /// Closed: the item back.
    Closed(T),
}

/// A bounded mailbox: at most `capacity` messages waiting, as in Akka — the message
/// being handled is not counted, those the actor has taken for the rest of its turn
/// are (so a turn of several messages does not widen the bound; the count of a turn is
/// updated at the actor's next look, so within a turn it may refuse early, never late).
///
/// Laid out in this order (`repr(C)`): the flag the actor reads before every message
/// sits 88 bytes before the lock senders take, so the two are never on one cache line.
/// Sharing one, telling an actor from another thread took 490 ns a message instead of
/// 160 (bench/actors.sh `tell`).
#[repr(C)]
pub(crate) struct Mailbox<T> {
    /// Raised (under the lock) by an order, the close, or a message to an idle actor;
    /// lowered by the actor once it has taken every order: the actor's cheap look
    /// between the messages of a turn, and while it spins idle.
    attention: AtomicBool,
    overflow: Overflow,
    capacity: usize,
    /// Messages the actor takes in one turn (its dispatcher's `throughput`).
    turn: usize,
    /// Signalled when a message arrives or the mailbox closes.
    arrived: Notify,
    /// Signalled when room frees up or the mailbox closes.
    room: Notify,
    state: Mutex<State<T>>,
}

struct State<T> {
    queue: VecDeque<T>,
    orders: VecDeque<Control>,
    closed: bool,
    /// The actor found nothing and waits for `arrived`: the next arrival signals it.
    idle: bool,
    /// Idle and parked, its spin over: the next arrival wakes its thread.
    parked: bool,
    /// Woken from its park (counted in `spin::waking`) and not yet looking.
    woken: bool,
    /// Messages taken for the turn and waiting in the actor's hand at its last look.
    in_hand: usize,
}

impl<T> Mailbox<T> {
    pub(crate) fn new(capacity: usize, overflow: Overflow, turn: usize) -> Self {
        Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                orders: VecDeque::new(),
                closed: false,
                idle: false,
                parked: false,
                woken: false,
                in_hand: 0,
            }),
            capacity: capacity.max(1),
            turn: turn.max(1),
            overflow,
            attention: AtomicBool::new(false),
            arrived: Notify::new(),
            room: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock()
    }

    /// Whether the actor was woken from its park and has not looked since.
    #[cfg(test)]
    pub(crate) fn is_woken(&self) -> bool {
        self.state().woken
    }

    pub(crate) fn turn(&self) -> usize {
        self.turn
    }

    pub(crate) fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// Queues `item` unless the mailbox is full or closed.
    pub(crate) fn push(&self, item: T) -> Push<T> {
        let mut state = self.state();
        if state.closed {
            return Push::Closed(item);
        }
        let outcome = if state.queue.len() + state.in_hand < self.capacity {
            state.queue.push_back(item);
            Push::Queued
        } else {
            let oldest = match self.overflow {
                Overflow::DropOldest => state.queue.pop_front(),
                _ => None,
            };
            match oldest {
                Some(oldest) => {
                    state.queue.push_back(item);
                    Push::Displaced(oldest)
                }
                // Every unhandled message may be in the actor's hand: none to displace.
                None => return Push::Full(item),
            }
        };
        let wake = self.rouse(&mut state);
        drop(state);
        if wake {
            self.arrived.notify_one();
        }
        outcome
    }

    /// Marks an idle actor roused by an arrival; returns whether it is to be signalled
    /// (once the lock is dropped).
    fn rouse(&self, state: &mut State<T>) -> bool {
        if !std::mem::take(&mut state.idle) {
            return false;
        }
        self.attention.store(true, Ordering::Release);
        if std::mem::take(&mut state.parked) {
            state.woken = true;
            spin::waking();
        }
        true
    }

    /// Queues `item`, waiting for room when full (for `Backpressure`).
    pub(crate) async fn push_waiting(&self, mut item: T) -> Push<T> {
        // Registering as a waiter takes the `Notify`'s own lock: only when full.
        match self.push(item) {
            Push::Full(back) => item = back,
            done => return done,
        }
        loop {
            // Registered before the attempt, so a slot freed in between is not missed.
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.push(item) {
                Push::Full(back) => item = back,
                done => return done,
            }
            room.await;
        }
    }

    /// Queues an order ahead of every message; none is taken once closed.
    pub(crate) fn order(&self, order: Control) {
        let mut state = self.state();
        if state.closed {
            return;
        }
        state.orders.push_back(order);
        self.attention.store(true, Ordering::Release);
        let wake = self.rouse(&mut state);
        drop(state);
        if wake {
            self.arrived.notify_one();
        }
    }

    /// The next order, or else (when `messages`) a turn: `hand` topped up to a turn's
    /// messages from the queue. `None` once closed. (The turn's length is the mailbox's,
    /// not an argument: every argument enlarges every idle actor's task.)
    pub(crate) async fn recv(&self, messages: bool, hand: &mut VecDeque<T>) -> Option<Work> {
        let mut idle_since = None;
        let mut look = true;
        loop {
            // Look first; register as a waiter (the `Notify`'s own lock) only to park.
            if look {
                if let Some(next) = self.take(messages, hand, false) {
                    return next;
                }
            }
            if let Some(_turn) = spin_turn(&mut idle_since) {
                tokio::task::yield_now().await;
                // Spinning, look again only once the flag is up: taking the lock at
                // every turn would slow the very senders the actor waits for.
                look = self.wants_attention();
                continue;
            }
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            // Registered: what arrives from here on wakes it.
            if let Some(next) = self.take(messages, hand, true) {
                return next;
            }
            arrived.await;
        }
    }

    /// The next order or turn if there is one (`Some(None)`: closed); otherwise marks
    /// the actor idle (and `parking`, parked), so that the next arrival signals it.
    pub(crate) fn take(
        &self,
        messages: bool,
        hand: &mut VecDeque<T>,
        parking: bool,
    ) -> Option<Option<Work>> {
        let mut state = self.state();
        if std::mem::take(&mut state.woken) {
            spin::awake();
        }
        if state.closed {
            return Some(None);
        }
        let before = state.queue.len() + state.in_hand;
        let next = if let Some(order) = state.orders.pop_front() {
            Some(Work::Order(order))
        } else {
            self.attention.store(false, Ordering::Relaxed);
            if messages {
                let wanted = self.turn.saturating_sub(hand.len());
                let taken = wanted.min(state.queue.len());
                hand.extend(state.queue.drain(..taken));
            }
            (messages && !hand.is_empty()).then_some(Work::Turn)
        };
        // A turn starts on its first message at once: the rest wait in hand.
        state.in_hand = hand.len() - usize::from(matches!(next, Some(Work::Turn)));
        state.idle = next.is_none();
        state.parked = parking && state.idle;
        let freed = before.saturating_sub(state.queue.len() + state.in_hand);
        drop(state);
        // Only a full mailbox has senders waiting for room.
        if before >= self.capacity {
            for _ in 0..freed {
                self.room.notify_one();
            }
        }
        next.map(Some)
    }

    /// Closes the mailbox; returns what was still queued. Waiting senders wake to find
    /// it closed.
    pub(crate) fn close(&self) -> Vec<T> {
        let left = {
            let mut state = self.state();
            state.closed = true;
            self.rouse(&mut state);
            self.attention.store(true, Ordering::Release);
            state.orders.clear();
            state.queue.drain(..).collect()
        };
        self.arrived.notify_waiters();
        self.arrived.notify_one();
        self.room.notify_waiters();
        left
    }

    /// Whether an order or the close waits: the actor leaves the rest of its turn in
    /// hand and looks.
    pub(crate) fn wants_attention(&self) -> bool {
        self.attention.load(Ordering::Acquire)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state().closed
    }

    /// Messages waiting: queued, or taken for the rest of the turn (as of the actor's
    /// last look).
    pub(crate) fn len(&self) -> usize {
        let state = self.state();
        state.queue.len() + state.in_hand
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        // Woken, and its task gone before it looked: spinners must not yield for it.
        if self.state.get_mut().woken {
            spin::awake();
        }
    }
}
