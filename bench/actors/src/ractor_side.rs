//! The benchmarks on ractor, on a two-thread tokio runtime.

use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, call};

use crate::{Measure, report, rss_kib};

struct Sink;

enum SinkMsg {
    Inc,
    Get(RpcReplyPort<u64>),
}

impl Actor for Sink {
    type Msg = SinkMsg;
    type State = u64;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<SinkMsg>, (): ()) -> Result<u64, ActorProcessingErr> {
        Ok(0)
    }

    async fn handle(
        &self,
        _: ActorRef<SinkMsg>,
        message: SinkMsg,
        count: &mut u64,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SinkMsg::Inc => *count += 1,
            SinkMsg::Get(reply) => {
                let _ = reply.send(*count);
            }
        }
        Ok(())
    }
}

struct Player;

enum PlayerMsg {
    Meet(
        ActorRef<PlayerMsg>,
        Option<tokio::sync::mpsc::UnboundedSender<()>>,
    ),
    Ball(u64),
}

#[derive(Default)]
struct Court {
    other: Option<ActorRef<PlayerMsg>>,
    done: Option<tokio::sync::mpsc::UnboundedSender<()>>,
}

impl Actor for Player {
    type Msg = PlayerMsg;
    type State = Court;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<PlayerMsg>, (): ()) -> Result<Court, ActorProcessingErr> {
        Ok(Court::default())
    }

    async fn handle(
        &self,
        _: ActorRef<PlayerMsg>,
        message: PlayerMsg,
        court: &mut Court,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            PlayerMsg::Meet(other, done) => {
                court.other = Some(other);
                court.done = done;
            }
            PlayerMsg::Ball(0) => {
                if let Some(done) = &court.done {
                    let _ = done.send(());
                }
            }
            PlayerMsg::Ball(n) => {
                if let Some(other) = &court.other {
                    let _ = other.cast(PlayerMsg::Ball(n - 1));
                }
            }
        }
        Ok(())
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
                let (sink, _) = Actor::spawn(None, Sink, ()).await.unwrap();
                let began = Instant::now();
                for _ in 0..n {
                    sink.cast(SinkMsg::Inc).unwrap();
                }
                assert_eq!(call!(sink, SinkMsg::Get).unwrap(), n);
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "ask" => {
                let (sink, _) = Actor::spawn(None, Sink, ()).await.unwrap();
                let began = Instant::now();
                for _ in 0..n {
                    call!(sink, SinkMsg::Get).unwrap();
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "ping-pong" => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let (a, _) = Actor::spawn(None, Player, ()).await.unwrap();
                let (b, _) = Actor::spawn(None, Player, ()).await.unwrap();
                a.cast(PlayerMsg::Meet(b.clone(), Some(tx))).unwrap();
                b.cast(PlayerMsg::Meet(a.clone(), None)).unwrap();
                let began = Instant::now();
                a.cast(PlayerMsg::Ball(2 * n)).unwrap();
                rx.recv().await.unwrap();
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "fan-out" => {
                let mut sinks = Vec::new();
                for _ in 0..n {
                    sinks.push(Actor::spawn(None, Sink, ()).await.unwrap().0);
                }
                let began = Instant::now();
                for s in &sinks {
                    s.cast(SinkMsg::Inc).unwrap();
                }
                for s in &sinks {
                    assert_eq!(call!(s, SinkMsg::Get).unwrap(), 1);
                }
                Measure {
                    elapsed: began.elapsed(),
                    rss_kib: None,
                }
            }
            "spawn" => {
                let before = rss_kib();
                let began = Instant::now();
                let mut actors = Vec::new();
                for _ in 0..n {
                    actors.push(Actor::spawn(None, Sink, ()).await.unwrap());
                }
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
