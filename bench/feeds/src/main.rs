//! Fan-out through a WebSocket feed, for `bench/feeds.sh`: opens N subscribers on
//! a feed, publishes M messages over HTTP (`POST /publish`, one keep-alive connection,
//! each awaited before the next — as fast as the server takes them), and measures
//! every delivery: its latency from the moment its message was posted, the
//! deliveries a second, the server's CPU per delivery, and how many never came.
//!
//! Usage: feeds-bench WS_URL PUBLISH_ADDR SUBSCRIBERS MESSAGES RATE [PID...]
//!   WS_URL        ws://127.0.0.1:8080/feed (a replica's)
//!   PUBLISH_ADDR  127.0.0.1:8080 (the same replica, or another)
//!   RATE          messages a second to post at, or 0: back to back, as fast as the
//!                 server answers (its most deliveries a second; latency then includes
//!                 the queues that builds)
//!   PID...        the servers' processes (and Redis's), for their CPU time

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use std::sync::Mutex;

/// Connections opened at once while subscribing.
const OPENING: usize = 256;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, ws_url, publish_addr, subscribers, messages, rate, pids @ ..] = &args[..] else {
        eprintln!("usage: feeds-bench WS_URL PUBLISH_ADDR SUBSCRIBERS MESSAGES RATE [PID...]");
        std::process::exit(2);
    };
    let rate: f64 = rate.parse().expect("a rate");
    let (subscribers, messages): (usize, usize) =
        (subscribers.parse().expect("a count"), messages.parse().expect("a count"));
    let pids: Vec<u32> = pids.iter().map(|p| p.parse().expect("a pid")).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run(ws_url, publish_addr, subscribers, messages, rate, &pids));
}

/// What the readers gather.
#[derive(Default)]
struct Gathered {
    latencies_us: Vec<u64>,
    last: Option<Instant>,
}

async fn run(
    ws_url: &str,
    publish_addr: &str,
    subscribers: usize,
    messages: usize,
    rate: f64,
    pids: &[u32],
) {
    let epoch = Instant::now();
    let warmed = Arc::new(AtomicUsize::new(0));
    let gathered = Arc::new(Mutex::new(Gathered::default()));
    let mut opened = 0;
    while opened < subscribers {
        let batch = (subscribers - opened).min(OPENING);
        let sockets = futures_util::future::join_all(
            (0..batch).map(|_| tokio_tungstenite::connect_async(ws_url.to_owned())),
        )
        .await;
        for socket in sockets {
            let (socket, _) = socket.expect("the feed opens");
            let (warmed, gathered) = (Arc::clone(&warmed), Arc::clone(&gathered));
            tokio::spawn(read(socket, epoch, warmed, gathered));
        }
        opened += batch;
    }
    let mut publisher = TcpStream::connect(publish_addr).await.expect("the publisher connects");
    publisher.set_nodelay(true).expect("nodelay");
    // Until every subscriber has one: the servers subscribe a socket after its
    // handshake, which the client cannot see.
    while warmed.load(Ordering::Relaxed) < subscribers {
        post(&mut publisher, "warm").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu_before: u64 = pids.iter().map(|&pid| cpu_ms(pid)).sum();
    let started = Instant::now();
    for seq in 0..messages {
        // Paced, a message's latency counts from when it was due, so a server that
        // answers posts late (the publisher falls behind) pays for it here.
        let sent = if rate > 0.0 {
            let due = started + Duration::from_secs_f64(seq as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
            (due - epoch).as_micros()
        } else {
            epoch.elapsed().as_micros()
        };
        post(&mut publisher, &format!("{seq} {sent}")).await;
    }
    let published = started.elapsed();
    let expected = subscribers * messages;
    let deadline = Instant::now() + Duration::from_secs(30);
    while gathered.lock().unwrap().latencies_us.len() < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cpu_ms_spent = pids.iter().map(|&pid| cpu_ms(pid)).sum::<u64>() - cpu_before;
    let mut gathered = gathered.lock().unwrap();
    let delivered = gathered.latencies_us.len();
    let took = gathered.last.map_or(published, |last| last - started);
    gathered.latencies_us.sort_unstable();
    let at = |q: f64| gathered.latencies_us.get(((delivered as f64 - 1.0) * q) as usize).copied().unwrap_or(0);
    println!(
        "subscribers {subscribers}, messages {messages}: {:.0} deliveries/s ({:.0} messages/s published), latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; missing {} of {expected}; server CPU {:.2} µs a delivery",
        delivered as f64 / took.as_secs_f64(),
        messages as f64 / published.as_secs_f64(),
        at(0.5) as f64 / 1000.0,
        at(0.99) as f64 / 1000.0,
        at(1.0) as f64 / 1000.0,
        expected - delivered,
        cpu_ms_spent as f64 * 1000.0 / delivered.max(1) as f64,
    );
}

/// Reads a subscriber's messages: the first (a warm-up) counts it in, every measured
/// one adds its latency.
async fn read(
    mut socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    epoch: Instant,
    warmed: Arc<AtomicUsize>,
    gathered: Arc<Mutex<Gathered>>,
) {
    let mut first = true;
    while let Some(Ok(message)) = socket.next().await {
        let Ok(text) = message.to_text() else { continue };
        if first {
            first = false;
            warmed.fetch_add(1, Ordering::Relaxed);
        }
        let Some((_, sent)) = text.split_once(' ') else { continue };
        let Ok(sent) = sent.parse::<u128>() else { continue };
        let now = epoch.elapsed().as_micros();
        let mut gathered = gathered.lock().unwrap();
        gathered.latencies_us.push(u64::try_from(now.saturating_sub(sent)).unwrap_or(u64::MAX));
        gathered.last = Some(Instant::now());
    }
}

/// `POST /publish` with `body`, waiting for the answer's head (a 204: no body).
async fn post(stream: &mut TcpStream, body: &str) {
    let request = format!(
        "POST /publish HTTP/1.1\r\nHost: bench\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("the post is sent");
    let mut head = Vec::with_capacity(128);
    let mut byte = [0];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.expect("an answer");
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 204"), "{}", String::from_utf8_lossy(&head));
}

/// A process's CPU time so far (user and system), in milliseconds.
fn cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |s| s.1).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) * 10
}
