//! A cluster's crew of threads, each taking ready instances from the cluster's one
//! queue: started, grown and shrunk by the thread-pool controller, stopped — and a
//! thread whose turn will not end stood aside ([`Seat::stand_aside`]), a new one in
//! its place.

use std::cell::RefCell;
use std::sync::Arc;
#[cfg(feature = "lua")]
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use super::error::StageError;
use super::node::{Shared, now};
use super::plan::PlannedCluster;
use super::ready::{Ready, Ticket};
use super::stats::ClusterStats;

pub(crate) struct Crew {
    pub(crate) name: String,
    min: usize,
    max: usize,
    /// The nice value each thread takes as it starts (`[clusters.NAME] nice`).
    nice: Option<i32>,
    pub(crate) ready: Arc<Ready>,
    exited: Sender<()>,
    live: AtomicUsize,
    grown: AtomicU64,
    shrunk: AtomicU64,
    stood_aside: AtomicU64,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

/// A crew thread's place in its crew, for a turn running on it to give up (the Lua
/// scripts stage's, the one that does).
#[derive(Clone)]
pub(crate) struct Seat {
    #[cfg(feature = "lua")]
    crew: Weak<Crew>,
    #[cfg(feature = "lua")]
    shared: Weak<Shared>,
    /// Set once the thread is stood aside: it leaves when its turn ends.
    leaving: Arc<AtomicBool>,
}

thread_local! {
    /// This thread's seat, on a crew thread.
    static SEAT: RefCell<Option<Seat>> = const { RefCell::new(None) };
}

/// Returns this thread's seat, when it is a crew thread.
#[cfg(feature = "lua")]
pub(crate) fn seat() -> Option<Seat> {
    SEAT.with_borrow(Clone::clone)
}

#[cfg(feature = "lua")]
impl Seat {
    /// Puts a new thread in this one's place and has this one leave its crew once its
    /// turn ends — for a turn stuck past its deadline (the staged server's Lua pages):
    /// the cluster keeps its threads while the stuck one finishes. From any thread;
    /// returns whether it stood the thread aside (not twice, nor once the graph has
    /// stopped).
    pub(crate) fn stand_aside(&self) -> bool {
        let (Some(crew), Some(shared)) = (self.crew.upgrade(), self.shared.upgrade()) else {
            return false;
        };
        if self.leaving.swap(true, Ordering::SeqCst) {
            return false;
        }
        // No longer one of the crew's: the controller and `stop` count the others.
        crew.live.fetch_sub(1, Ordering::Relaxed);
        crew.stood_aside.fetch_add(1, Ordering::Relaxed);
        if let Err(error) = crew.add(&shared, None) {
            tracing::warn!(%error, cluster = crew.name, "no thread could take a stuck one's place");
        }
        true
    }
}

impl Crew {
    /// Returns a crew of no thread yet for `cluster`, to run between its threads and
    /// its most threads; each thread tells `exited` when it leaves.
    pub(crate) fn new(cluster: &PlannedCluster, exited: Sender<()>) -> Self {
        Self {
            name: cluster.name.clone(),
            min: cluster.threads,
            max: cluster.max_threads,
            nice: cluster.nice,
            ready: Arc::new(Ready::new()),
            exited,
            live: AtomicUsize::new(0),
            grown: AtomicU64::new(0),
            shrunk: AtomicU64::new(0),
            stood_aside: AtomicU64::new(0),
            handles: Mutex::new(Vec::new()),
        }
    }

    /// Returns whether a controller has room to work: more threads allowed than the
    /// least.
    pub(crate) fn is_elastic(&self) -> bool {
        self.max > self.min
    }

    /// Starts the crew's `min` threads, and returns once each has run the graph's
    /// thread start: a server that says it has started has every loop ready to take
    /// work (a request handed between loops could miss one still starting).
    pub(crate) fn start(self: &Arc<Self>, shared: &Arc<Shared>) -> Result<(), StageError> {
        let (started, each_started) = std::sync::mpsc::channel();
        (0..self.min).try_for_each(|_| self.add(shared, Some(started.clone())))?;
        drop(started);
        // Returns when every thread has let its sender go: started, or died starting
        // (its panic shows at stop).
        let _ = each_started.recv();
        Ok(())
    }

    /// Adds a thread if under the maximum; returns whether it did.
    pub(crate) fn grow(self: &Arc<Self>, shared: &Arc<Shared>) -> bool {
        if self.live.load(Ordering::Relaxed) >= self.max {
            return false;
        }
        match self.add(shared, None) {
            Ok(()) => {
                self.grown.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "the thread-pool controller could not grow a cluster");
                false
            }
        }
    }

    /// Retires a thread (at its next ticket) if over the minimum; returns whether it
    /// did.
    pub(crate) fn shrink(&self) -> bool {
        if self.live.load(Ordering::Relaxed) <= self.min {
            return false;
        }
        self.retire(1);
        self.shrunk.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Tells every live thread to leave, and returns the handles of all it ever
    /// started.
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        self.retire(self.live.load(Ordering::Relaxed));
        std::mem::take(&mut *self.handles.lock())
    }

    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    pub(crate) fn stats(&self) -> ClusterStats {
        ClusterStats {
            cluster: self.name.clone(),
            threads: self.live(),
            min_threads: self.min,
            max_threads: self.max,
            grown: self.grown.load(Ordering::Relaxed),
            shrunk: self.shrunk.load(Ordering::Relaxed),
            stood_aside: self.stood_aside.load(Ordering::Relaxed),
        }
    }

    fn retire(&self, threads: usize) {
        for _ in 0..threads {
            // At the lowest priority: a thread leaves after the turns of a higher one.
            self.ready.push(Ticket::Exit, 0);
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Starts a thread; it drops `started` once it has run the graph's thread start.
    fn add(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        started: Option<std::sync::mpsc::Sender<()>>,
    ) -> Result<(), StageError> {
        let mut handles = self.handles.lock();
        let name = format!("stage-{}-{}", self.name, handles.len());
        let (shared, ready, exited, nice) = (
            Arc::clone(shared),
            Arc::clone(&self.ready),
            self.exited.clone(),
            self.nice,
        );
        let seat = Seat {
            #[cfg(feature = "lua")]
            crew: Arc::downgrade(self),
            #[cfg(feature = "lua")]
            shared: Arc::downgrade(&shared),
            leaving: Arc::default(),
        };
        let cluster = self.name.clone();
        // Each thread waits for tickets on its loop (a current-thread runtime and a
        // `LocalSet`): a sync stage's turn runs in place and holds the thread, an
        // async stage's is a task of the loop, which takes the next ticket while the
        // handler awaits.
        let handle = crate::rt::runtime::spawn_thread(name, move |runtime| {
            if let Some(nice) = nice {
                // Linux's nice value is the calling thread's (`setpriority` of thread
                // id 0); a thread left at the process's runs on, the cluster unranked.
                if let Err(error) = rustix::process::setpriority_process(None, nice) {
                    tracing::warn!(%error, nice, "a stage thread keeps its nice value");
                }
            }
            let leaving = Arc::clone(&seat.leaving);
            SEAT.set(Some(seat));
            let tasks = tokio::task::LocalSet::new();
            tasks.block_on(runtime, async {
                if let Some(start) = &shared.thread_start {
                    start.run(&cluster);
                }
                drop(started);
                let mut turns = tokio::task::JoinSet::new();
                loop {
                    let (node, instance) = match ready.pop().await {
                        Ticket::Turn(node) => match shared.nodes[node].pool.claim() {
                            Some(instance) => (node, instance),
                            // A cohort sender has the instance: no turn to run.
                            None => continue,
                        },
                        Ticket::Source(node, instance) => (node, instance),
                        Ticket::Exit => break,
                    };
                    if shared.nodes[node].asynchronous {
                        let shared = Arc::clone(&shared);
                        turns.spawn_local(async move {
                            shared.turn(node, instance).await;
                        });
                        while turns.try_join_next().is_some() {}
                    } else {
                        now(shared.turn(node, instance));
                        if leaving.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                }
                // Told to leave: the async turns under way finish first, their
                // instances going back to their stages. Other tasks on the loop (a
                // handler's, a protocol's timers) end with it.
                while turns.join_next().await.is_some() {}
            });
            let _ = exited.send(());
        })
        .map_err(|e| StageError::start(&self.name, &e))?;
        handles.push(handle);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(all(test, feature = "lua"))]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use parking_lot::Mutex;

    use super::super::tests::{DEADLINE, clusters, wait_until};
    use super::super::{Admission, Graph, Stage};
    use super::{Seat, seat};

    #[test]
    fn a_thread_stood_aside_is_replaced_at_once_and_leaves_when_its_turn_ends() {
        let (seats, seated) = mpsc::channel::<Seat>();
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let mut graph = Graph::new();
        // Event 0 holds its thread until released: a turn that will not end.
        let work = graph.stage(Stage::stateless(
            "work",
            || (),
            move |(), n: u64, _| {
                if n == 0 {
                    seats.send(seat().unwrap()).unwrap();
                    released.lock().recv().unwrap();
                }
                Ok(())
            },
        ));
        let one_thread = clusters("[clusters.main]\nthreads = 1\ninstances = { work = 2 }");
        let running = graph.start(&one_thread).unwrap();
        let inlet = running.inlet::<u64>("in", &work, Admission::Block).unwrap();
        inlet.send(0_u64).unwrap();
        let stuck = seated.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(stuck.stand_aside());
        assert!(!stuck.stand_aside(), "once");
        // The thread in its place takes the next event while the stuck turn runs.
        inlet.send(1).unwrap();
        let handled = || running.stats().stage("work").unwrap().handled;
        assert!(wait_until(|| handled() == 1));
        let main = running.stats().cluster("main").unwrap().clone();
        assert_eq!((main.threads, main.stood_aside), (1, 1), "{main:?}");
        release.send(()).unwrap();
        assert!(wait_until(|| handled() == 2));
        assert_eq!(running.stats().cluster("main").unwrap().threads, 1);
        // The stuck thread left once its turn ended: none is left behind at the stop.
        let report = running.shutdown(DEADLINE);
        assert_eq!((report.stuck_threads, report.abandoned), (0, 0));
    }
}
