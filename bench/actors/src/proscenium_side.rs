//! The benchmarks on Proscenium's actors: a `System` with its default dispatcher (one
//! thread per core, outside a server).

use std::sync::mpsc;
use std::time::Instant;

use proscenium::actor::{Actor, Addr, Context, Handler, Message, Props, System};

use crate::{Measure, report, rss_kib};

#[derive(Default)]
struct Sink(u64);
impl Actor for Sink {}

struct Inc;
impl Message for Inc {
    type Reply = ();
}
impl Handler<Inc> for Sink {
    fn handle(&mut self, _: Inc, _: &mut Context<Self>) {
        self.0 += 1;
    }
}

struct Get;
impl Message for Get {
    type Reply = u64;
}
impl Handler<Get> for Sink {
    fn handle(&mut self, _: Get, _: &mut Context<Self>) -> u64 {
        self.0
    }
}

#[derive(Default)]
struct Player {
    other: Option<Addr<Player>>,
    done: Option<mpsc::Sender<()>>,
}
impl Actor for Player {}

struct Meet(Addr<Player>, Option<mpsc::Sender<()>>);
impl Message for Meet {
    type Reply = ();
}
impl Handler<Meet> for Player {
    fn handle(&mut self, Meet(other, done): Meet, _: &mut Context<Self>) {
        self.other = Some(other);
        self.done = done;
    }
}

struct Ball(u64);
impl Message for Ball {
    type Reply = ();
}
impl Handler<Ball> for Player {
    fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) {
        if n == 0 {
            if let Some(done) = &self.done {
                let _ = done.send(());
            }
        } else if let Some(other) = &self.other {
            let _ = other.try_tell(Ball(n - 1));
        }
    }
}

/// Tells a sink `n` messages from its own thread.
struct Driver(Addr<Sink>);
impl Actor for Driver {}

struct Drive(u64);
impl Message for Drive {
    type Reply = ();
}
impl Handler<Drive> for Driver {
    fn handle(&mut self, Drive(n): Drive, _: &mut Context<Self>) {
        for _ in 0..n {
            self.0.try_tell(Inc).unwrap();
        }
    }
}

pub(crate) fn run(bench: &str, n: u64) -> Measure {
    if bench == "tell-local" {
        return tell_local(n);
    }
    let system = System::new();
    match bench {
        "tell" => {
            let sink = system.spawn(Props::named("sink"), Sink::default);
            let began = Instant::now();
            let got = system.block_on(async {
                for _ in 0..n {
                    sink.tell(Inc).await.unwrap();
                }
                sink.ask(Get).await.unwrap()
            });
            assert_eq!(got, n);
            Measure {
                elapsed: began.elapsed(),
                rss_kib: None,
            }
        }
        "ask" => {
            let sink = system.spawn(Props::named("sink"), Sink::default);
            let began = Instant::now();
            system.block_on(async {
                for _ in 0..n {
                    sink.ask(Get).await.unwrap();
                }
            });
            Measure {
                elapsed: began.elapsed(),
                rss_kib: None,
            }
        }
        "ping-pong" => {
            let (tx, rx) = mpsc::channel();
            let a = system.spawn(Props::named("a"), Player::default);
            let b = system.spawn(Props::named("b"), Player::default);
            system.block_on(async {
                a.ask(Meet(b.clone(), Some(tx))).await.unwrap();
                b.ask(Meet(a.clone(), None)).await.unwrap();
            });
            let began = Instant::now();
            // n round trips are 2n hand-overs; the ball reaches zero at `a`.
            a.try_tell(Ball(2 * n)).unwrap();
            rx.recv().unwrap();
            Measure {
                elapsed: began.elapsed(),
                rss_kib: None,
            }
        }
        "fan-out" => {
            let sinks: Vec<_> = (0..n)
                .map(|i| system.spawn(Props::named(format!("sink-{i}")), Sink::default))
                .collect();
            system.block_on(async {
                for s in &sinks {
                    s.ask(Get).await.unwrap();
                }
            });
            let began = Instant::now();
            system.block_on(async {
                for s in &sinks {
                    s.tell(Inc).await.unwrap();
                }
                for s in &sinks {
                    assert_eq!(s.ask(Get).await.unwrap(), 1);
                }
            });
            Measure {
                elapsed: began.elapsed(),
                rss_kib: None,
            }
        }
        "spawn" => {
            let before = rss_kib();
            let began = Instant::now();
            let actors: Vec<_> = (0..n)
                .map(|_| system.spawn(Props::named("idle"), Sink::default))
                .collect();
            // Every dispatcher thread has started the actors given to it once the last
            // two answer.
            system.block_on(async {
                for a in actors.iter().rev().take(2) {
                    a.ask(Get).await.unwrap();
                }
            });
            let measure = Measure {
                elapsed: began.elapsed(),
                rss_kib: Some(rss_kib().saturating_sub(before)),
            };
            // The process ends here: tearing down a million actors is not measured.
            std::process::exit(report(measure, n));
        }
        other => panic!("unknown benchmark {other}"),
    }
}

/// `tell` with the sender on the actor's thread: both on a one-thread dispatcher, the
/// sink's mailbox large enough to take every message at once and the closing `Get`.
fn tell_local(n: u64) -> Measure {
    let system = System::with_dispatchers(
        [(
            "solo".to_owned(),
            proscenium::actor::DispatcherSpec::pool(1),
        )]
        .into(),
    );
    let capacity = usize::try_from(n + 1).unwrap_or(usize::MAX);
    let sink = system.spawn(
        Props::named("sink")
            .dispatcher("solo")
            .mailbox(capacity, proscenium::actor::Overflow::Fail),
        Sink::default,
    );
    let target = sink.clone();
    let driver = system.spawn(Props::named("driver").dispatcher("solo"), move || {
        Driver(target.clone())
    });
    let began = Instant::now();
    let got = system.block_on(async {
        driver.ask(Drive(n)).await.unwrap();
        sink.ask(Get).await.unwrap()
    });
    assert_eq!(got, n);
    Measure {
        elapsed: began.elapsed(),
        rss_kib: None,
    }
}
