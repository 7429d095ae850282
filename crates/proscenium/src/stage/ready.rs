//! A cluster's ready queue: instances with work, waiting for one of the cluster's
//! threads. A thread waits for a ticket on its loop (async handlers may be running
//! there), so it parks on a `Notify` beside the channel of tickets and a count of the
//! tickets not yet claimed.
//!
//! Wake-ups are what a hop costs most (each one a syscall on each side: an eventfd
//! write, and a thread leaving `epoll_wait`), so the queue wakes as few threads as it
//! can, as tokio's scheduler does: one thread at a time *searches* — spins a moment
//! for the next ticket before it parks — and a ticket pushed while one searches wakes
//! no one; a searcher that finds a ticket wakes a parked thread if more are waiting.
//! With more threads than cores (Leda's two a core), threads that all spun and were all
//! woken per ticket took the cores from the stages: the CEP job at 4 threads on 2
//! cores ran 5× slower than at 2.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::Notify;

use super::definition::Instance;

/// How many times the searching thread looks for a ticket before it parks.
const SPINS: usize = 200;

/// Work for a cluster's thread.
pub(crate) enum Ticket {
    /// Give stage `node` a turn over its queue, on an instance idle when the ticket
    /// is popped (`Pool::claim`).
    Turn(usize),
    /// Run an instance of source `node`, once.
    Source(usize, Box<dyn Instance>),
    /// Leave the thread.
    Exit,
}

pub(crate) struct Ready {
    tickets: (Sender<Ticket>, Receiver<Ticket>),
    /// Tickets queued and not yet claimed: a thread that claims one takes the next off
    /// the channel.
    unclaimed: AtomicUsize,
    /// Whether a thread is searching (spinning before it parks).
    searching: AtomicBool,
    parked: Notify,
}

impl Ready {
    pub(crate) fn new() -> Self {
        Self {
            tickets: crossbeam_channel::unbounded(),
            unclaimed: AtomicUsize::new(0),
            searching: AtomicBool::new(false),
            parked: Notify::new(),
        }
    }

    pub(crate) fn push(&self, ticket: Ticket) {
        // The queue holds a receiver itself, so the send cannot fail.
        let _ = self.tickets.0.send(ticket);
        // After the send: a claim never runs ahead of its ticket. Sequentially
        // consistent with `searching`: either this sees the searcher, which then sees
        // the ticket before it parks, or it wakes a thread.
        self.unclaimed.fetch_add(1, Ordering::SeqCst);
        if !self.searching.load(Ordering::SeqCst) {
            self.parked.notify_one();
        }
    }

    /// Waits for the next ticket.
    pub(crate) async fn pop(&self) -> Ticket {
        while !self.claim() {
            if self.search() {
                break;
            }
            let parked = self.parked.notified();
            tokio::pin!(parked);
            // Registered before the last look: a push after it wakes this thread.
            parked.as_mut().enable();
            if self.claim() {
                break;
            }
            parked.await;
        }
        self.tickets
            .1
            .try_recv()
            .expect("a ticket claimed is a ticket queued")
    }

    /// Spins for a ticket unless another thread already does; returns whether it
    /// claimed one.
    fn search(&self) -> bool {
        if self.searching.swap(true, Ordering::SeqCst) {
            return false;
        }
        let found = (0..SPINS).any(|_| {
            let claimed = self.claim();
            if !claimed {
                std::hint::spin_loop();
            }
            claimed
        });
        self.searching.store(false, Ordering::SeqCst);
        // Pushes while this thread searched woke no one: a parked thread takes the
        // rest.
        if found && self.unclaimed.load(Ordering::SeqCst) > 0 {
            self.parked.notify_one();
        }
        found
    }

    /// Claims a queued ticket, if there is one.
    fn claim(&self) -> bool {
        self.unclaimed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}
