//! The graphs running in this process, for `/metrics` (`admin`) to read: a
//! [`RunningGraph`](super::RunningGraph) is listed from its start until it is dropped
//! (after its shutdown, or in its place).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::run::GraphMonitor;

/// A graph running: its monitor, and whether each of its stages runs in this
/// process (a process of a graph mapped over several shows its own stages alone).
#[derive(Debug, Clone)]
#[cfg_attr(
    not(feature = "metrics"),
    expect(dead_code, reason = "only /metrics reads it")
)]
pub(crate) struct Listed {
    pub(crate) monitor: GraphMonitor,
    pub(crate) here: Vec<bool>,
}

/// The graphs running, each with its listing's number.
static LISTED: Mutex<Vec<(u64, Listed)>> = Mutex::new(Vec::new());

/// The next listing's number.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A graph's place in the list: dropping it takes the graph off.
#[derive(Debug)]
pub(crate) struct Listing(u64);

impl Listing {
    /// Lists the graph `monitor` reads, whose stages run here where `here` says,
    /// until the listing is dropped.
    pub(crate) fn new(monitor: GraphMonitor, here: Vec<bool>) -> Self {
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        LISTED.lock().push((number, Listed { monitor, here }));
        Self(number)
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        LISTED.lock().retain(|(number, _)| *number != self.0);
    }
}

/// Returns the graphs running in this process, oldest first.
#[cfg_attr(
    not(feature = "metrics"),
    expect(dead_code, reason = "only /metrics reads it")
)]
pub(crate) fn running() -> Vec<Listed> {
    LISTED
        .lock()
        .iter()
        .map(|(_, listed)| listed.clone())
        .collect()
}
