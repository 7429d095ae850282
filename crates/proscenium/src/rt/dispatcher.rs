//! The dispatcher: accepts connections on one listener and gives each to a loop.
//!
//! Choice rule: `jsq` picks the loop with the smallest load (live connections plus
//! requests in flight), scanning from the loop after the last pick so ties rotate;
//! `round-robin` picks each loop in turn. (`reuseport` needs no dispatcher: each loop
//! accepts on its own listener.)

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::event_loop::Handoff;
use super::overload::Gate;
use super::watchdog::LoopStats;
use crate::config::Dispatch;

/// One loop as the dispatcher sees it.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) conns: mpsc::UnboundedSender<Handoff>,
    pub(crate) stats: Arc<LoopStats>,
}

/// Picks loops by the dispatch rule.
#[derive(Debug)]
struct Chooser {
    rule: Dispatch,
    next: usize,
}

impl Chooser {
    fn pick(&mut self, targets: &[Target]) -> usize {
        let n = targets.len();
        let start = self.next % n;
        let chosen = match self.rule {
            Dispatch::Jsq => (0..n)
                .map(|i| (start + i) % n)
                .min_by_key(|&i| targets[i].stats.load())
                .unwrap_or(start),
            Dispatch::RoundRobin | Dispatch::Reuseport => start,
        };
        self.next = chosen + 1;
        chosen
    }
}

/// Starts the acceptor thread for `listener`.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    rule: Dispatch,
    targets: Vec<Target>,
    gate: Arc<Gate>,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<JoinHandle<()>> {
    super::runtime::spawn_thread("proscenium-accept".to_owned(), move |runtime| {
        runtime.block_on(accept(listener, rule, targets, gate, shutdown));
    })
}

async fn accept(
    listener: std::net::TcpListener,
    rule: Dispatch,
    targets: Vec<Target>,
    gate: Arc<Gate>,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return tracing::error!("cannot register listener: {e}"),
    };
    let mut chooser = Chooser { rule, next: 0 };
    loop {
        tokio::select! {
            accepted = async {
                let reserved = gate.admit().await;
                let (stream, peer) = listener.accept().await?;
                Ok::<_, std::io::Error>((stream.into_std()?, peer, reserved))
            } => match accepted {
                Ok((stream, peer, reserved)) => {
                    let target = &targets[chooser.pick(&targets)];
                    target.stats.conns.fetch_add(1, Ordering::Relaxed);
                    target.stats.handed.fetch_add(1, Ordering::Relaxed);
                    if target.conns.send((stream, peer, reserved.accept())).is_err() {
                        target.stats.conns.fetch_sub(1, Ordering::Relaxed);
                        target.stats.handed.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                Err(e) => pause_after_accept_error(&e).await,
            },
            _ = shutdown.changed() => return gate.withdraw(),
        }
    }
}

/// Logs an accept error and, when descriptors ran out, pauses before the next accept
/// instead of spinning on the error.
pub(crate) async fn pause_after_accept_error(e: &std::io::Error) {
    tracing::warn!("accept failed: {e}");
    if e.raw_os_error()
        .is_some_and(|code| code == nix::libc::EMFILE || code == nix::libc::ENFILE)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(loads: &[usize]) -> Vec<Target> {
        loads
            .iter()
            .map(|&load| {
                let stats = Arc::new(LoopStats::default());
                stats.conns.store(load, Ordering::Relaxed);
                Target {
                    conns: mpsc::unbounded_channel().0,
                    stats,
                }
            })
            .collect()
    }

    #[test]
    fn jsq_picks_the_shortest_loop_and_rotates_ties() {
        let mut chooser = Chooser {
            rule: Dispatch::Jsq,
            next: 0,
        };
        assert_eq!(chooser.pick(&targets(&[3, 1, 2])), 1);
        let even = targets(&[0, 0, 0]);
        let picks: Vec<usize> = (0..3).map(|_| chooser.pick(&even)).collect();
        assert_eq!(picks, [2, 0, 1]);
    }

    #[test]
    fn round_robin_takes_each_loop_in_turn() {
        let mut chooser = Chooser {
            rule: Dispatch::RoundRobin,
            next: 0,
        };
        let loops = targets(&[5, 0]);
        let picks: Vec<usize> = (0..4).map(|_| chooser.pick(&loops)).collect();
        assert_eq!(picks, [0, 1, 0, 1]);
    }
}
