//! A cluster's ready queue: instances with work, waiting for one of the cluster's
//! threads. A thread waits for a ticket on its loop (async handlers may be running
//! there), so it parks on a `Notify` beside the channel of tickets and a count of the
//! tickets not yet claimed.
//!
//! Wake-ups are what a hop costs most (each one a syscall on each side: an eventfd
//! write, and a thread leaving `epoll_wait`), so the queue wakes as few threads as it
//! can, as tokio's scheduler does: one thread at a time *searches* — spins a moment
//! for the next ticket before it parks — and a ticket pushed while one searches wakes
//! no one; a thread that takes a ticket wakes a parked one if more are waiting.
//! With more threads than cores (Leda's two a core), threads that all spun and were all
//! woken per ticket took the cores from the stages: the CEP job at 4 threads on 2
//! cores ran 5× slower than at 2.
//!
//! Tickets wait by priority (`[clusters.NAME] priority`, Leda's priority mechanism): a
//! thread takes the oldest ticket of the highest priority that has one, so under
//! overload the stages given a higher priority run first and the lower ones wait.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::Notify;

use super::definition::Instance;

/// How many times the searching thread looks for a ticket before it parks.
const SPINS: usize = 200;

/// The priorities a ticket may have: 0 (the default) to 7.
pub(crate) const PRIORITIES: usize = 8;

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
    /// The tickets of each priority, lowest first.
    tickets: [(Sender<Ticket>, Receiver<Ticket>); PRIORITIES],
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
            tickets: std::array::from_fn(|_| crossbeam_channel::unbounded()),
            unclaimed: AtomicUsize::new(0),
            searching: AtomicBool::new(false),
            parked: Notify::new(),
        }
    }

    /// Queues `ticket` at `priority` (at most `PRIORITIES - 1`).
    pub(crate) fn push(&self, ticket: Ticket, priority: usize) {
        let level = priority.min(PRIORITIES - 1);
        // The queue holds a receiver itself, so the send cannot fail.
        let _ = self.tickets[level].0.send(ticket);
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
        // More tickets than this one, and no searcher to find them: wake another
        // thread. Pushes during a search wake no one, and a thread that takes a ticket
        // may not come back for the rest for as long as a sync turn runs — sources
        // blocked on a full queue held every running thread while the turn that
        // would have drained it sat here, with threads parked.
        if self.unclaimed.load(Ordering::SeqCst) > 0 && !self.searching.load(Ordering::SeqCst) {
            self.parked.notify_one();
        }
        self.take()
    }

    /// Takes the claimed ticket: the oldest of the highest priority. At every moment
    /// the tickets queued are at least those claimed and not taken (a push sends
    /// before it counts), so one is there; another thread may take it between two
    /// looks at a priority, and then this looks again.
    fn take(&self) -> Ticket {
        loop {
            let found = self
                .tickets
                .iter()
                .rev()
                .find_map(|(_, queued)| queued.try_recv().ok());
            if let Some(ticket) = found {
                return ticket;
            }
            std::hint::spin_loop();
        }
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
        // Pushes while this thread searched woke no one: `pop` passes the wake on.
        self.searching.store(false, Ordering::SeqCst);
        found
    }

    /// Claims a queued ticket, if there is one.
    fn claim(&self) -> bool {
        self.unclaimed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;

    /// Threads parked; tickets pushed while another thread searched (so they woke no
    /// one), and that thread, done searching, takes one. The rest must not wait for it
    /// to come back: it may hold its ticket for good (a sync turn that does not
    /// return, as sources blocked on a full queue do) — each parked thread is woken
    /// for one.
    #[test]
    fn tickets_pushed_during_a_search_wake_the_parked_threads_however_long_turns_last() {
        const PARKED: usize = 5;
        let ready = Arc::new(Ready::new());
        let (took, taken) = crossbeam_channel::unbounded();
        let release = Arc::new(std::sync::Barrier::new(PARKED + 2));
        let take_and_hold = |ready: Arc<Ready>| {
            let (took, release) = (took.clone(), release.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                if let Ticket::Turn(n) = runtime.block_on(ready.pop()) {
                    took.send(n).unwrap();
                }
                release.wait();
            })
        };
        let mut threads: Vec<_> = (0..PARKED).map(|_| take_and_hold(ready.clone())).collect();
        // Parked: each searched (one at a time) and found nothing.
        std::thread::sleep(Duration::from_millis(200));
        ready.searching.store(true, Ordering::SeqCst);
        for n in 0..=PARKED {
            ready.push(Ticket::Turn(n), 0);
        }
        ready.searching.store(false, Ordering::SeqCst);
        threads.push(take_and_hold(ready));
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got: Vec<usize> = (0..=PARKED)
            .map_while(|_| {
                taken
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .ok()
            })
            .collect();
        got.sort_unstable();
        assert_eq!(
            got,
            (0..=PARKED).collect::<Vec<_>>(),
            "tickets left waiting"
        );
        release.wait();
        threads.into_iter().for_each(|t| t.join().unwrap());
    }

    #[test]
    fn issue39_a_thread_takes_the_oldest_ticket_of_the_highest_priority() {
        let ready = Ready::new();
        for (node, priority) in [(0, 0), (1, 3), (2, 0), (3, 7), (4, 3), (5, 99)] {
            ready.push(Ticket::Turn(node), priority);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let order: Vec<usize> = (0..6)
            .map(|_| match runtime.block_on(ready.pop()) {
                Ticket::Turn(node) => node,
                _ => unreachable!("only turns were pushed"),
            })
            .collect();
        assert_eq!(order, [3, 5, 1, 4, 0, 2], "past 7 is 7; FIFO within one");
    }
}
