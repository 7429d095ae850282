//! Remote actors against local ones: an actor exported by a node in another process,
//! through a Redis of the bench's own (redis-server on a free loopback port), asked
//! and told by this one — beside the same actor asked here. Three rounds of each,
//! in fresh nodes; prints a markdown table of the medians. Run by
//! `bench/actors-remote.sh`.
//!
//! - `ask`: sequential asks, one waiting at a time: the round trip (p50, p99).
//! - `ask ×64`: 64 asks in flight at once (one task each): asks a second.
//! - `tell`: tells from one sender, then one ask for the count: tells a second,
//!   until the last was handled.
//!
//! `actor-remote host URL` is the other process: it exports `echo` and runs until
//! its stdin closes.

use std::io::{BufRead as _, Read as _};
use std::process::{Command, Stdio};
use std::time::Instant;

use proscenium::actor::remote::Node;
use proscenium::actor::{Actor, Context, Handler, Message, Props, Recipient, System};
use proscenium::config::RedisSpec;
use proscenium::testing::Redis;
use serde::{Deserialize, Serialize};

const ASKS: usize = 10_000;
const CONCURRENT: usize = 64;
const CONCURRENT_ASKS: usize = 50_000;
const TELLS: u64 = 200_000;
const ROUNDS: usize = 3;

#[derive(Serialize, Deserialize)]
struct Echo(u64);
impl Message for Echo {
    type Reply = u64;
}

#[derive(Serialize, Deserialize)]
struct Bump;
impl Message for Bump {
    type Reply = ();
}

#[derive(Default)]
struct Echoer(u64);
impl Actor for Echoer {}
impl Handler<Echo> for Echoer {
    fn handle(&mut self, Echo(n): Echo, _: &mut Context<Self>) -> u64 {
        n + self.0
    }
}
impl Handler<Bump> for Echoer {
    fn handle(&mut self, _: Bump, _: &mut Context<Self>) {
        self.0 += 1;
    }
}

fn spec(url: &str) -> RedisSpec {
    RedisSpec {
        url: Some(url.to_owned()),
        ..RedisSpec::default()
    }
}

/// Exports `echo` until stdin closes.
fn host(url: &str) {
    let system = System::new();
    let node = system.block_on(async {
        let node = Node::join(&system, &spec(url)).await.expect("joins");
        let echo = system.spawn(Props::named("echo"), Echoer::default);
        node.export::<Echo>(&echo).await.expect("exports");
        node.export::<Bump>(&echo).await.expect("exports");
        node
    });
    println!("ready");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    node.leave();
    system.shutdown();
}

/// One round's figures.
#[derive(Default, Clone, Copy)]
struct Round {
    p50_us: f64,
    p99_us: f64,
    concurrent_per_s: f64,
    tells_per_s: f64,
}

/// Measures `echo` (and `bump`) as reached through these recipients.
async fn measure(echo: &Recipient<Echo>, bump: &Recipient<Bump>) -> Round {
    for n in 0..1_000 {
        echo.ask(Echo(n)).await.expect("warm-up answered");
    }
    let mut trips = Vec::with_capacity(ASKS);
    for n in 0..ASKS as u64 {
        let sent = Instant::now();
        echo.ask(Echo(n)).await.expect("answered");
        trips.push(sent.elapsed());
    }
    trips.sort_unstable();
    let quantile = |q: f64| trips[((trips.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    let started = Instant::now();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let tasks: Vec<_> = (0..CONCURRENT)
                .map(|_| {
                    let echo = echo.clone();
                    tokio::task::spawn_local(async move {
                        for n in 0..(CONCURRENT_ASKS / CONCURRENT) as u64 {
                            echo.ask(Echo(n)).await.expect("answered");
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("no task panics");
            }
        })
        .await;
    let concurrent = started.elapsed();
    let started = Instant::now();
    for _ in 0..TELLS {
        bump.tell(Bump).await.expect("told");
    }
    echo.ask(Echo(0)).await.expect("answered after the tells");
    let tells = started.elapsed();
    Round {
        p50_us: quantile(0.5),
        p99_us: quantile(0.99),
        concurrent_per_s: CONCURRENT_ASKS as f64 / concurrent.as_secs_f64(),
        tells_per_s: TELLS as f64 / tells.as_secs_f64(),
    }
}

fn remote_round(exe: &std::path::Path, url: &str) -> Round {
    let mut child = Command::new(exe)
        .args(["host", url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the host process starts");
    let mut ready = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut ready)
        .expect("the host answers");
    assert_eq!(ready.trim(), "ready");
    let system = System::new();
    let round = system.block_on(async {
        let node = Node::join(&system, &spec(url)).await.expect("joins");
        let echo = node.recipient::<Echo>("echo").await.expect("found");
        let bump = node.recipient::<Bump>("echo").await.expect("found");
        let round = measure(&echo, &bump).await;
        drop((echo, bump));
        node.leave();
        round
    });
    drop(child.stdin.take());
    child.wait().expect("the host ends");
    round
}

fn local_round() -> Round {
    let system = System::new();
    let echo = system.spawn(Props::named("echo"), Echoer::default);
    let round = system.block_on(measure(&echo.recipient(), &echo.recipient()));
    system.shutdown();
    round
}

/// One figure of a round.
type Field = fn(&Round) -> f64;

fn median(rounds: &[Round], field: Field) -> f64 {
    let mut values: Vec<f64> = rounds.iter().map(field).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("host") {
        host(&args[2]);
        return;
    }
    let exe = std::env::current_exe().expect("its own path");
    let redis = Redis::start();
    let url = redis.url();
    let local: Vec<Round> = (0..ROUNDS).map(|_| local_round()).collect();
    let remote: Vec<Round> = (0..ROUNDS).map(|_| remote_round(&exe, &url)).collect();
    println!(
        "| {ROUNDS} rounds, medians | local | remote (another process, via Redis) | remote / local |"
    );
    println!("|---|---:|---:|---:|");
    let rows: [(&str, Field, &str); 4] = [
        ("ask round trip p50", |r| r.p50_us, "µs"),
        ("ask round trip p99", |r| r.p99_us, "µs"),
        ("asks/s, 64 in flight", |r| r.concurrent_per_s, "/s"),
        ("tells/s, one sender", |r| r.tells_per_s, "/s"),
    ];
    for (name, field, unit) in rows {
        let (l, r) = (median(&local, field), median(&remote, field));
        let digits = usize::from(unit == "µs");
        println!(
            "| {name} | {l:.digits$} {unit} | {r:.digits$} {unit} | {:.3}× |",
            r / l
        );
    }
}
