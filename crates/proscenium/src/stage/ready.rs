//! A cluster's ready queue: instances with work, waiting for one of the cluster's
//! threads. A thread waits for a ticket on its loop (async handlers may be running
//! there), so the queue is a channel of tickets beside a semaphore holding one permit
//! per ticket: a permit taken is a ticket there to take.

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::Semaphore;

use super::definition::Instance;

/// How many times a thread looks for a ticket before it parks.
const SPINS: usize = 200;

/// Work for a cluster's thread.
pub(crate) enum Ticket {
    /// Run an instance of stage `node`: a turn over its queue, or a source's one run.
    Run(usize, Box<dyn Instance>),
    /// Leave the thread.
    Exit,
}

pub(crate) struct Ready {
    tickets: (Sender<Ticket>, Receiver<Ticket>),
    permits: Semaphore,
}

impl Ready {
    pub(crate) fn new() -> Self {
        Self {
            tickets: crossbeam_channel::unbounded(),
            permits: Semaphore::new(0),
        }
    }

    pub(crate) fn push(&self, ticket: Ticket) {
        // The queue holds a receiver itself, so the send cannot fail.
        let _ = self.tickets.0.send(ticket);
        // After the send: a permit never runs ahead of its ticket.
        self.permits.add_permits(1);
    }

    /// Waits for the next ticket.
    pub(crate) async fn pop(&self) -> Ticket {
        // A busy stage's next turn comes within microseconds: spinning that long spares
        // a park and a wake, each a syscall through the runtime's driver (eventfd and
        // epoll were 12 % of a hop's samples).
        let spun = (0..SPINS).find_map(|_| {
            let permit = self.permits.try_acquire().ok();
            if permit.is_none() {
                std::hint::spin_loop();
            }
            permit
        });
        match spun {
            Some(permit) => permit.forget(),
            // The semaphore is never closed.
            None => {
                if let Ok(permit) = self.permits.acquire().await {
                    permit.forget();
                }
            }
        }
        self.tickets
            .1
            .try_recv()
            .expect("a permit taken is a ticket queued")
    }
}
