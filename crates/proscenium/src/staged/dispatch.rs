//! Node.Scala's dispatch per request, for the staged server: every thread of the
//! `http` cluster has a queue of work of its own, drained by a task on its loop, and a
//! request read on a thread whose loop is busier (more requests in flight) than the
//! least busy thread's is handed there (`rt::hand_off`); its answer comes back to the
//! connection's thread, which writes it in order with the others. A request read on
//! an idle thread — every plaintext request, whose handler answers at once — runs
//! where it was read, at no cost.
//!
//! Outside the stage layer on purpose: its one ready queue per cluster gives a ticket
//! to whichever thread claims it first, which cannot place work on the thread with the
//! shortest queue (docs/models.md).

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::RwLock;
use tokio::sync::mpsc;

use crate::rt::context;
use crate::rt::hand_off::{self, Policy, Work};
use crate::rt::watchdog::LoopStats;

/// The cluster's threads: each one's load and its queue of work.
#[derive(Default)]
pub(super) struct Loops {
    threads: RwLock<Vec<Peer>>,
}

struct Peer {
    stats: Arc<LoopStats>,
    work: mpsc::UnboundedSender<Box<dyn Work>>,
}

impl Loops {
    /// Adds this thread (its loop context entered): starts the task that runs the
    /// work handed to it, and installs its way to hand work on.
    pub(super) fn join(self: &Arc<Self>) {
        let Some(stats) = context::with_current(|ctx| Arc::clone(&ctx.stats)) else {
            return;
        };
        let (work, mut handed) = mpsc::unbounded_channel::<Box<dyn Work>>();
        tokio::task::spawn_local(async move {
            while let Some(work) = handed.recv().await {
                tokio::task::spawn_local(work.run());
            }
        });
        self.threads.write().push(Peer {
            stats: Arc::clone(&stats),
            work,
        });
        let loops = Arc::clone(self);
        hand_off::install(
            Rc::new(move |work| loops.place(work, &stats)),
            Policy::WhenBusy,
        );
    }

    /// Hands `work` to the thread with the fewest requests in flight if it has fewer
    /// than this one (`own`); gives it back to run here otherwise.
    fn place(&self, work: Box<dyn Work>, own: &LoopStats) -> Result<(), Box<dyn Work>> {
        let load = |stats: &LoopStats| stats.inflight.load(Ordering::Relaxed);
        let placed = {
            let threads = self.threads.read();
            let least = threads.iter().min_by_key(|peer| load(&peer.stats));
            match least {
                Some(peer) if load(&peer.stats) < load(own) => {
                    peer.work.send(work).map_err(|refused| refused.0)
                }
                _ => return Err(work),
            }
        };
        if placed.is_err() {
            // A thread the cluster's pool retired: its queue is gone with its loop.
            self.threads.write().retain(|peer| !peer.work.is_closed());
        }
        placed
    }
}
