//! WebSocket frame layers side by side, for issue 19's choice: an echo server on one
//! thread over tungstenite's protocol (through tokio-tungstenite) and over
//! fastwebsockets', the same hand-written handshake in front of each, and the message
//! layer chosen, Proscenium's own (`proscenium::ws`, under the event-loop model, its
//! own handshake) on tungstenite's frame layer; all driven by the
//! same client (tokio-tungstenite): 64 connections each sending binary messages and
//! waiting for each echo. Server on core 0, client on core 1 (`bench/websocket.sh`);
//! three interleaved rounds; medians of messages a second and of the server's CPU per
//! message (its `/proc` times).
//!
//! `ws-bench server tungstenite|fastwebsockets|proscenium` is the server: it prints its port, then
//! serves until killed.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tungstenite::Message;

const CONNECTIONS: usize = 64;
const ROUNDS: usize = 3;
const SERVERS: [&str; 3] = ["tungstenite", "fastwebsockets", "proscenium"];
/// Message sizes, and messages per connection at each.
const SIZES: [(usize, usize); 2] = [(16, 6_000), (16 * 1024, 1_000)];

/// Reads the opening handshake and answers it (RFC 6455 §4.2.2), the same for both.
async fn handshake(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let key = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| value.trim().to_owned())
        })
        .ok_or(std::io::ErrorKind::InvalidData)?;
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    stream
        .write_all(
            format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                 Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
}

async fn echo_tungstenite(stream: TcpStream) {
    let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
        stream,
        tungstenite::protocol::Role::Server,
        None,
    )
    .await;
    while let Some(Ok(message)) = ws.next().await {
        if message.is_close() {
            return;
        }
        let echoed = message.is_binary() || message.is_text();
        if echoed && ws.send(message).await.is_err() {
            return;
        }
    }
}

async fn echo_fastwebsockets(stream: TcpStream) {
    let mut ws = fastwebsockets::WebSocket::after_handshake(stream, fastwebsockets::Role::Server);
    ws.set_auto_close(true);
    ws.set_auto_pong(true);
    let mut ws = fastwebsockets::FragmentCollector::new(ws);
    while let Ok(frame) = ws.read_frame().await {
        let echoed = match frame.opcode {
            fastwebsockets::OpCode::Close => return,
            fastwebsockets::OpCode::Text | fastwebsockets::OpCode::Binary => true,
            _ => false,
        };
        if echoed && ws.write_frame(frame).await.is_err() {
            return;
        }
    }
}

/// Proscenium's echo, as `examples/hello`'s `/ws/echo` (without compression), on one
/// event loop.
fn proscenium_server() {
    use proscenium::ws::{Message as WsMessage, WebSocketUpgrade};
    let app = proscenium::App::new().get("/", |ws: WebSocketUpgrade| async move {
        ws.on_upgrade(|mut socket| async move {
            while let Some(Ok(message)) = socket.recv().await {
                if matches!(message, WsMessage::Text(_) | WsMessage::Binary(_))
                    && socket.send(message).await.is_err()
                {
                    break;
                }
            }
        })
    });
    let mut config = proscenium::Config {
        bind: "127.0.0.1:0".parse().expect("an address"),
        ..proscenium::Config::default()
    };
    let model: proscenium::ModelSpec = "event-loop".parse().expect("a model");
    model.apply(&mut config);
    let server = proscenium::Server::new(app)
        .config(config)
        .start()
        .expect("the server starts");
    println!("{}", server.local_addr().port());
    loop {
        std::thread::park();
    }
}

fn server(kind: &str) {
    if kind == "proscenium" {
        return proscenium_server();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        println!("{}", listener.local_addr().expect("an address").port());
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let kind = kind.to_owned();
            tokio::task::spawn_local(async move {
                if handshake(&mut stream).await.is_err() {
                    return;
                }
                match kind.as_str() {
                    "tungstenite" => echo_tungstenite(stream).await,
                    _ => echo_fastwebsockets(stream).await,
                }
            });
        }
    });
}

/// Sends `messages` binary messages of `size` bytes on each of the connections and
/// waits for each echo; returns the time taken.
fn drive(port: u16, size: usize, messages: usize) -> Duration {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut sockets = Vec::new();
        for _ in 0..CONNECTIONS {
            let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/"))
                .await
                .expect("the server answers the handshake");
            sockets.push(ws);
        }
        let payload = vec![7u8; size];
        let started = Instant::now();
        let runs = sockets.into_iter().map(|mut ws| {
            let payload = payload.clone();
            async move {
                for _ in 0..messages {
                    ws.send(Message::binary(payload.clone()))
                        .await
                        .expect("sent");
                    let echo = ws.next().await.expect("an echo").expect("a message");
                    assert_eq!(echo.len(), size);
                }
                let _ = ws.close(None).await;
            }
        });
        futures_util::future::join_all(runs).await;
        started.elapsed()
    })
}

/// The CPU time a process has spent: its `/proc/PID/stat` user and system ticks.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("a stat line")
        .1
        .split_whitespace()
        .collect();
    let ticks =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// One run: a fresh server of `kind` on core 0; messages a second and server CPU µs
/// per message.
fn run(kind: &str, size: usize, messages: usize) -> (f64, f64) {
    let exe = std::env::current_exe().expect("its own path");
    let mut child = Command::new("taskset")
        .args(["-c", "0"])
        .arg(exe)
        .args(["server", kind])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("the server says its port");
    let port: u16 = line.trim().parse().expect("a port");
    let before = cpu_of(child.id());
    let took = drive(port, size, messages);
    let cpu = cpu_of(child.id()) - before;
    let _ = child.kill();
    let _ = child.wait();
    let total = (CONNECTIONS * messages) as f64;
    (total / took.as_secs_f64(), cpu.as_secs_f64() * 1e6 / total)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("server") {
        server(&args[2]);
        return;
    }
    println!("| frame layer | message | echoes/s | server CPU µs/message |");
    println!("|---|---:|---:|---:|");
    for (size, messages) in SIZES {
        let mut results: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); SERVERS.len()];
        for _ in 0..ROUNDS {
            for (at, kind) in SERVERS.iter().enumerate() {
                let (rate, cpu) = run(kind, size, messages);
                results[at].0.push(rate);
                results[at].1.push(cpu);
            }
        }
        for (kind, (rates, cpus)) in SERVERS.iter().zip(results) {
            println!(
                "| {kind} | {size} B | {:.0} | {:.2} |",
                median(rates),
                median(cpus)
            );
        }
    }
}
