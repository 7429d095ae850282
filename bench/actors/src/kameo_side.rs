//! The benchmarks on kameo (default bounded mailboxes), on a two-thread tokio runtime.

use std::time::Instant;

use kameo::Actor;
use kameo::actor::{ActorRef, Spawn};
use kameo::message::{Context, Message};

use crate::{Measure, report, rss_kib};

#[derive(Actor, Default)]
struct Sink(u64);

struct Inc;
impl Message<Inc> for Sink {
    type Reply = ();
    async fn handle(&mut self, _: Inc, _: &mut Context<Self, ()>) {
        self.0 += 1;
    }
}

struct Get;
impl Message<Get> for Sink {
    type Reply = u64;
    async fn handle(&mut self, _: Get, _: &mut Context<Self, u64>) -> u64 {
        self.0
    }
}

#[derive(Actor, Default)]
struct Player {
    other: Option<ActorRef<Player>>,
    done: Option<tokio::sync::mpsc::UnboundedSender<()>>,
}

struct Meet(
    ActorRef<Player>,
    Option<tokio::sync::mpsc::UnboundedSender<()>>,
);
impl Message<Meet> for Player {
    type Reply = ();
    async fn handle(&mut self, Meet(other, done): Meet, _: &mut Context<Self, ()>) {
        self.other = Some(other);
        self.done = done;
    }
}

struct Ball(u64);
impl Message<Ball> for Player {
    type Reply = ();
    async fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self, ()>) {
        if n == 0 {
            if let Some(done) = &self.done {
                let _ = done.send(());
            }
        } else if let Some(other) = &self.other {
            let _ = other.tell(Ball(n - 1)).await;
        }
    }
}

pub(crate) fn run(bench: &str, n: u64) -> Measure {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        match bench {
            "tell" | "tell-local" => {
                let sink = Sink::spawn(Sink::default());
                let began = Instant::now();
                for _ in 0..n {
                    sink.tell(Inc).await.unwrap();
                }
                assert_eq!(sink.ask(Get).await.unwrap(), n);
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "ask" => {
                let sink = Sink::spawn(Sink::default());
                let began = Instant::now();
                for _ in 0..n {
                    sink.ask(Get).await.unwrap();
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "ping-pong" => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let a = Player::spawn(Player::default());
                let b = Player::spawn(Player::default());
                a.ask(Meet(b.clone(), Some(tx))).await.unwrap();
                b.ask(Meet(a.clone(), None)).await.unwrap();
                let began = Instant::now();
                a.tell(Ball(2 * n)).await.unwrap();
                rx.recv().await.unwrap();
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "fan-out" => {
                let sinks: Vec<_> = (0..n).map(|_| Sink::spawn(Sink::default())).collect();
                let began = Instant::now();
                for s in &sinks {
                    s.tell(Inc).await.unwrap();
                }
                for s in &sinks {
                    assert_eq!(s.ask(Get).await.unwrap(), 1);
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "spawn" => {
                let before = rss_kib();
                let began = Instant::now();
                let actors: Vec<_> = (0..n).map(|_| Sink::spawn(Sink::default())).collect();
                actors.last().unwrap().ask(Get).await.unwrap();
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
