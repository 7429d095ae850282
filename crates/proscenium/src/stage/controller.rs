//! SEDA's thread-pool controller (Welsh et al.), one per elastic cluster: every tick
//! it compares the events waiting in the cluster's queues with its threads, adds a
//! thread while more events wait than threads run (up to `max_threads`), and retires
//! one after the queues have stayed empty a while (down to `threads`). Every
//! decision is logged and counted in the cluster's stats.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::crew::Crew;
use super::node::Shared;

/// How often the controller looks.
const TICK: Duration = Duration::from_millis(10);

/// Ticks of empty queues before a thread is retired: a pause between bursts is not
/// idleness.
const IDLE_TICKS: u32 = 20;

/// What the controller does at one tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Grow,
    Shrink,
    Hold,
}

fn decide(queued: usize, threads: usize, idle_ticks: u32) -> Decision {
    if queued > threads {
        Decision::Grow
    } else if idle_ticks >= IDLE_TICKS {
        Decision::Shrink
    } else {
        Decision::Hold
    }
}

/// Starts the controller of cluster `cluster`; it returns when `stop` is dropped.
pub(crate) fn spawn(
    cluster: usize,
    crew: Arc<Crew>,
    shared: Arc<Shared>,
    stop: Receiver<()>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("stage-{}-controller", crew.name))
        .spawn(move || {
            let mut idle_ticks = 0;
            while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
                let queued = shared.queued_in(cluster);
                idle_ticks = if queued == 0 { idle_ticks + 1 } else { 0 };
                let threads = crew.live();
                let changed = match decide(queued, threads, idle_ticks) {
                    Decision::Grow => crew.grow(&shared),
                    Decision::Shrink => crew.shrink(),
                    Decision::Hold => false,
                };
                if changed {
                    idle_ticks = 0;
                    tracing::info!(cluster = %crew.name, queued, from = threads, to = crew.live(), "thread-pool controller");
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::{Decision, IDLE_TICKS, decide};

    #[test]
    fn grows_while_more_events_wait_than_threads_run_and_shrinks_after_idling() {
        assert_eq!(decide(5, 4, 0), Decision::Grow);
        assert_eq!(decide(4, 4, 0), Decision::Hold);
        assert_eq!(decide(0, 4, IDLE_TICKS - 1), Decision::Hold);
        assert_eq!(decide(0, 4, IDLE_TICKS), Decision::Shrink);
    }
}
