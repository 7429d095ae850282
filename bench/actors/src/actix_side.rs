//! The benchmarks on actix: one `System` (an arbiter on this thread), a second
//! arbiter for the ping-pong partner.

use std::time::Instant;

use actix::prelude::*;

use crate::{Measure, report, rss_kib};

#[derive(Default)]
struct Sink(u64);
impl Actor for Sink {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Inc;
impl Handler<Inc> for Sink {
    type Result = ();
    fn handle(&mut self, _: Inc, _: &mut Context<Self>) {
        self.0 += 1;
    }
}

#[derive(Message)]
#[rtype(result = "u64")]
struct Get;
impl Handler<Get> for Sink {
    type Result = u64;
    fn handle(&mut self, _: Get, _: &mut Context<Self>) -> u64 {
        self.0
    }
}

#[derive(Default)]
struct Player {
    other: Option<Addr<Player>>,
    done: Option<std::sync::mpsc::Sender<()>>,
}
impl Actor for Player {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Meet(Addr<Player>, Option<std::sync::mpsc::Sender<()>>);
impl Handler<Meet> for Player {
    type Result = ();
    fn handle(&mut self, Meet(other, done): Meet, _: &mut Context<Self>) {
        self.other = Some(other);
        self.done = done;
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Ball(u64);
impl Handler<Ball> for Player {
    type Result = ();
    fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) {
        if n == 0 {
            if let Some(done) = &self.done {
                let _ = done.send(());
            }
        } else if let Some(other) = &self.other {
            other.do_send(Ball(n - 1));
        }
    }
}

pub(crate) fn run(bench: &str, n: u64) -> Measure {
    let system = System::new();
    system.block_on(async move {
        match bench {
            "tell" | "tell-local" => {
                // `tell`: the sink on an arbiter of its own, so the messages cross
                // threads as they do for the others; `tell-local`: on this one.
                let arbiter = Arbiter::new();
                let sink = if bench == "tell" {
                    Sink::start_in_arbiter(&arbiter.handle(), |_| Sink::default())
                } else {
                    Sink::default().start()
                };
                let began = Instant::now();
                for _ in 0..n {
                    sink.do_send(Inc);
                }
                assert_eq!(sink.send(Get).await.unwrap(), n);
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "ask" => {
                let sink = Sink::default().start();
                let began = Instant::now();
                for _ in 0..n {
                    sink.send(Get).await.unwrap();
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "ping-pong" => {
                let (tx, rx) = std::sync::mpsc::channel();
                let a = Player::default().start();
                let arbiter = Arbiter::new();
                let b = Player::start_in_arbiter(&arbiter.handle(), |_| Player::default());
                a.send(Meet(b.clone(), Some(tx))).await.unwrap();
                b.send(Meet(a.clone(), None)).await.unwrap();
                let began = Instant::now();
                a.do_send(Ball(2 * n));
                // The ball bounces on this arbiter too: wait without blocking it.
                loop {
                    if rx.try_recv().is_ok() {
                        break;
                    }
                    actix::clock::sleep(std::time::Duration::from_micros(50)).await;
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "fan-out" => {
                let sinks: Vec<_> = (0..n).map(|_| Sink::default().start()).collect();
                let began = Instant::now();
                for s in &sinks {
                    s.do_send(Inc);
                }
                for s in &sinks {
                    assert_eq!(s.send(Get).await.unwrap(), 1);
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "spawn" => {
                let before = rss_kib();
                let began = Instant::now();
                let actors: Vec<_> = (0..n).map(|_| Sink::default().start()).collect();
                actors.last().unwrap().send(Get).await.unwrap();
                let measure = Measure {
                    elapsed: began.elapsed(),
                    rss_kib: Some(rss_kib().saturating_sub(before)),
                };
                std::process::exit(report(measure, n));
            }
            other => panic!("unknown benchmark {other}"),
        }
    })
}
