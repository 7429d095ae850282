//! WebSocket over real sockets, frames written and read as raw bytes: the opening
//! handshake (RFC 6455's own example key), echoes of text, binary and a fragmented
//! message, a ping answered, the close handshake, and what breaks the protocol or a
//! limit answered with its close code — under every model.

use std::time::{Duration, Instant};

use proscenium::App;
use proscenium::ws::{Message, WebSocketUpgrade};

use crate::support::{self, Client};

/// RFC 6455's example key and the accept it calls for (§1.3).
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

pub(crate) const TEXT: u8 = 1;
pub(crate) const BINARY: u8 = 2;
const CONTINUATION: u8 = 0;
pub(crate) const CLOSE: u8 = 8;
const PING: u8 = 9;
const PONG: u8 = 10;

/// Echoes every text and binary message, on a socket taking messages up to `limit`.
async fn echo(ws: WebSocketUpgrade, limit: usize) -> proscenium::Response {
    echo_on(ws.max_message_size(limit))
}

/// Echoes every text and binary message on the socket `ws` opens.
pub(crate) fn echo_on(ws: WebSocketUpgrade) -> proscenium::Response {
    ws.on_upgrade(|mut socket| async move {
        while let Some(Ok(message)) = socket.recv().await {
            if matches!(message, Message::Text(_) | Message::Binary(_))
                && socket.send(message).await.is_err()
            {
                break;
            }
        }
    })
}

fn app() -> App {
    App::new()
        .get("/ws/echo", |ws: WebSocketUpgrade| echo(ws, 1 << 20))
        .get("/ws/small", |ws: WebSocketUpgrade| echo(ws, 1024))
        .get("/ws/large", |ws: WebSocketUpgrade| echo(ws, 4 << 20))
        .get("/ws/lively", |ws: WebSocketUpgrade| async move {
            echo_on(ws.keep_alive(Some(Duration::from_millis(200))))
        })
        .get("/ws/deflate", |ws: WebSocketUpgrade| async move {
            echo_on(ws.compression(true))
        })
}

/// A client frame: masked, as RFC 6455 §5.3 requires of clients.
pub(crate) fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![(u8::from(fin) << 7) | opcode];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | u8::try_from(len).unwrap());
    } else if let Ok(len) = u16::try_from(len) {
        out.push(0x80 | 126);
        out.extend(len.to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend((len as u64).to_be_bytes());
    }
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    out.extend(mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Reads one server frame (unmasked): whether it is final, its opcode and payload.
pub(crate) fn read_frame<S: support::Wire>(client: &mut Client<S>) -> (bool, u8, Vec<u8>) {
    let head = client.read_bytes(2);
    assert_eq!(head[1] & 0x80, 0, "a server frame is not masked");
    let len = match head[1] & 0x7f {
        126 => usize::from(u16::from_be_bytes(client.read_bytes(2).try_into().unwrap())),
        127 => {
            usize::try_from(u64::from_be_bytes(client.read_bytes(8).try_into().unwrap())).unwrap()
        }
        n => usize::from(n),
    };
    (head[0] & 0x80 != 0, head[0] & 0x0f, client.read_bytes(len))
}

/// Sends the opening handshake for `path` with these extra `fields`; returns the
/// client and the answer.
fn handshake(addr: std::net::SocketAddr, path: &str, fields: &str) -> (Client, support::Response) {
    let mut client = Client::connect(addr);
    client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n"));
    let answer = client.response();
    (client, answer)
}

pub(crate) fn open(addr: std::net::SocketAddr, path: &str) -> Client {
    let fields = format!(
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: {KEY}\r\n"
    );
    let (client, answer) = handshake(addr, path, &fields);
    assert_eq!(answer.status, 101);
    assert_eq!(answer.header("sec-websocket-accept"), Some(ACCEPT));
    assert_eq!(answer.header("upgrade"), Some("websocket"));
    client
}

#[test]
fn a_websocket_opens_with_the_rfcs_accept_and_echoes_text_binary_and_fragments() {
    let server = support::start(app());
    let mut client = open(server.local_addr(), "/ws/echo");
    client.send(frame(true, TEXT, b"hello"));
    assert_eq!(read_frame(&mut client), (true, TEXT, b"hello".to_vec()));
    client.send(frame(true, BINARY, &[0, 1, 2, 255]));
    assert_eq!(read_frame(&mut client), (true, BINARY, vec![0, 1, 2, 255]));
    // A message in two fragments, a ping between them (control frames may interleave).
    client.send(frame(false, TEXT, b"frag"));
    client.send(frame(true, PING, b"still there?"));
    client.send(frame(true, CONTINUATION, b"mented"));
    let mut got = vec![read_frame(&mut client), read_frame(&mut client)];
    got.sort_by_key(|(_, opcode, _)| *opcode);
    assert_eq!(
        got,
        [
            (true, TEXT, b"fragmented".to_vec()),
            (true, PONG, b"still there?".to_vec())
        ]
    );
    // A message of 100 KiB, in the 64-bit length form.
    let big = vec![b'x'; 100 * 1024];
    client.send(frame(true, BINARY, &big));
    assert_eq!(read_frame(&mut client), (true, BINARY, big));
    // The close handshake: 1000 answered with a close.
    client.send(frame(true, CLOSE, &1000u16.to_be_bytes()));
    let (_, opcode, payload) = read_frame(&mut client);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1000u16.to_be_bytes()[..]));
}

#[test]
fn a_request_that_is_no_websocket_handshake_gets_400_or_426() {
    let server = support::start(app());
    let addr = server.local_addr();
    let upgrade = "Connection: Upgrade\r\nUpgrade: websocket\r\n";
    let (_, missing) = handshake(
        addr,
        "/ws/echo",
        &format!("{upgrade}Sec-WebSocket-Version: 13\r\n"),
    );
    assert_eq!(missing.status, 400);
    let (_, short) = handshake(
        addr,
        "/ws/echo",
        &format!("{upgrade}Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: c2hvcnQ=\r\n"),
    );
    assert_eq!(short.status, 400);
    let (_, version) = handshake(
        addr,
        "/ws/echo",
        &format!("{upgrade}Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: {KEY}\r\n"),
    );
    assert_eq!(version.status, 426);
    assert_eq!(version.header("sec-websocket-version"), Some("13"));
    let (mut plain, not_one) = handshake(addr, "/ws/echo", "");
    assert_eq!(not_one.status, 426);
    assert_eq!(not_one.header("upgrade"), Some("websocket"));
    // Refused, the connection still speaks HTTP.
    assert_eq!(plain.get("/ws/echo").response().status, 426);
}

#[test]
fn a_message_past_the_limit_closes_with_1009_and_text_not_utf8_with_1007() {
    let server = support::start(app());
    let mut small = open(server.local_addr(), "/ws/small");
    small.send(frame(true, BINARY, &[7; 2000]));
    let (_, opcode, payload) = read_frame(&mut small);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1009u16.to_be_bytes()[..]));

    let mut echo = open(server.local_addr(), "/ws/echo");
    echo.send(frame(true, TEXT, &[0xff, 0xfe, 0xfd]));
    let (_, opcode, payload) = read_frame(&mut echo);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1007u16.to_be_bytes()[..]));
}

#[test]
fn when_shutdown_begins_an_open_websocket_is_closed_with_1001_and_the_server_stops_early() {
    let server = support::start_with(app(), |config| {
        config.timeouts.shutdown = Duration::from_secs(30);
    });
    let mut client = open(server.local_addr(), "/ws/echo");
    client.send(frame(true, TEXT, b"hi"));
    assert_eq!(read_frame(&mut client), (true, TEXT, b"hi".to_vec()));
    let began = Instant::now();
    let stopping = std::thread::spawn(move || server.shutdown());
    let (_, opcode, payload) = read_frame(&mut client);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1001u16.to_be_bytes()[..]));
    // The client answers the close; the server then has nothing left to wait for.
    client.send(frame(true, CLOSE, &1001u16.to_be_bytes()));
    stopping.join().unwrap();
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "shutdown took {took:?}, its deadline 30 s"
    );
}

#[test]
fn a_silent_peer_is_pinged_kept_while_it_answers_and_closed_once_it_does_not() {
    let server = support::start(app());
    let mut client = open(server.local_addr(), "/ws/lively");
    let began = Instant::now();
    let (_, opcode, payload) = read_frame(&mut client);
    assert_eq!((opcode, payload.len()), (PING, 0));
    assert!(
        began.elapsed() >= Duration::from_millis(150),
        "pinged only once silent"
    );
    client.send(frame(true, PONG, b""));
    // Answered, it is kept: the next ping comes after another silence.
    assert_eq!(read_frame(&mut client).1, PING);
    // Not answered, it is taken for gone.
    let (_, opcode, payload) = read_frame(&mut client);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1001u16.to_be_bytes()[..]));
}

/// RFC 7692 §7.2.3.1–2: "Hello" compressed, then "Hello" again referring back to
/// the first (so read only with the context taken over).
const HELLO: [u8; 7] = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
const HELLO_AGAIN: [u8; 5] = [0xf2, 0x00, 0x11, 0x00, 0x00];
/// A frame's RSV1 bit: the message is compressed.
const RSV1: u8 = 0x40;

/// Inflates a compressed message's payload as RFC 7692 §7.2.2 says: with the flush
/// tail its sender left off put back.
fn inflate(inflater: &mut flate2::Decompress, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let input = [payload, &[0, 0, 0xff, 0xff]].concat();
    inflater
        .decompress_vec(&input, &mut out, flate2::FlushDecompress::Sync)
        .unwrap();
    out
}

#[test]
fn permessage_deflate_is_taken_when_offered_and_inflates_across_messages() {
    let server = support::start(app());
    let addr = server.local_addr();
    let offer = format!(
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: {KEY}\r\n\
         Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
    );
    let (mut client, answer) = handshake(addr, "/ws/deflate", &offer);
    assert_eq!(answer.status, 101);
    assert_eq!(
        answer.header("sec-websocket-extensions"),
        Some("permessage-deflate")
    );
    let mut inflater = flate2::Decompress::new(false);
    for compressed in [&HELLO[..], &HELLO_AGAIN[..]] {
        client.send(frame(true, RSV1 | TEXT, compressed));
        let head = client.read_bytes(2);
        assert_eq!(head[0], 0x80 | RSV1 | TEXT, "a compressed text frame");
        let payload = client.read_bytes(usize::from(head[1]));
        assert_eq!(inflate(&mut inflater, &payload), b"Hello");
    }
    // Not taken where the route does not ask for it; RSV1 is then a breach.
    let (mut plain, answer) = handshake(addr, "/ws/echo", &offer);
    assert_eq!(answer.header("sec-websocket-extensions"), None);
    plain.send(frame(true, RSV1 | TEXT, &HELLO));
    let (_, opcode, payload) = read_frame(&mut plain);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1002u16.to_be_bytes()[..]));
}

/// Idle sockets held open past the threads of a thread model, by
/// [`issue33_idle_websockets_hold_no_thread`].
const IDLE_SOCKETS: usize = 50;

/// Under the thread models an open WebSocket used to hold its thread: 4 idle ones
/// filled a pool of 4, and every request and handshake after them waited in the
/// queue until it was refused 503 (issue 33). With 50 idle sockets open on 4
/// threads, a plain request and a new socket are answered, and every idle socket
/// still echoes — under every model.
#[test]
fn issue33_idle_websockets_hold_no_thread() {
    let app = app().get("/hello", || async { "hello" });
    let server = support::start_with(app, |config| config.threads = Some(4));
    let addr = server.local_addr();
    let mut idle: Vec<Client> = (0..IDLE_SOCKETS).map(|_| open(addr, "/ws/echo")).collect();
    let plain = support::get(addr, "/hello");
    assert_eq!((plain.status, plain.text()), (200, "hello".to_owned()));
    let mut fresh = open(addr, "/ws/echo");
    fresh.send(frame(true, TEXT, b"fresh"));
    assert_eq!(read_frame(&mut fresh), (true, TEXT, b"fresh".to_vec()));
    for (i, socket) in idle.iter_mut().enumerate() {
        let message = format!("idle {i}");
        socket.send(frame(true, TEXT, message.as_bytes()));
        assert_eq!(read_frame(socket), (true, TEXT, message.into_bytes()));
    }
}

/// An open WebSocket keeps its place under `limits.max_connections` wherever it runs
/// (under the thread models, off the thread that switched it): with a cap of 2 and
/// two sockets open a third connection waits, and is served once a socket closes.
#[test]
fn issue33_an_open_websocket_counts_under_the_connection_cap() {
    support::in_process("a connection cap of the whole server");
    let app = app().get("/hello", || async { "hello" });
    let server = support::start_with(app, |config| config.limits.max_connections = 2);
    let addr = server.local_addr();
    let first = open(addr, "/ws/echo");
    let mut second = open(addr, "/ws/echo");
    let mut third = Client::connect(addr);
    third.get("/hello");
    assert!(
        !third.has_answer_within(Duration::from_millis(300)),
        "the third waits while two sockets are open"
    );
    drop(first);
    assert_eq!(
        third.response().text(),
        "hello",
        "and is served once one closes"
    );
    second.send(frame(true, TEXT, b"still"));
    assert_eq!(read_frame(&mut second), (true, TEXT, b"still".to_vec()));
}

/// Sockets held open at once by [`two_thousand_websockets_open_at_once_each_echo_and_close`].
const SOCKETS: usize = 2000;

/// Opens a socket on `path` over tokio, its handshake checked.
async fn open_async(addr: std::net::SocketAddr, path: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.unwrap());
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}

/// Reads one server frame over tokio: its opcode and payload (short frames only).
async fn read_frame_async(stream: &mut tokio::net::TcpStream) -> (u8, Vec<u8>) {
    use tokio::io::AsyncReadExt as _;
    let mut head = [0; 2];
    stream.read_exact(&mut head).await.unwrap();
    assert!(head[1] < 126, "a short frame");
    let mut payload = vec![0; usize::from(head[1])];
    stream.read_exact(&mut payload).await.unwrap();
    (head[0] & 0x0f, payload)
}

/// 2,000 WebSockets open at once on one server: every one echoes its own message
/// while all are open, then closes with the handshake — under every model (the
/// thread models given a place in the queue for each handshake; an open socket holds
/// no thread).
#[test]
fn two_thousand_websockets_open_at_once_each_echo_and_close() {
    use tokio::io::AsyncWriteExt as _;
    crate::overload::raise_fd_limit();
    let server = support::start_with(app(), |config| {
        if support::is_thread_model() {
            // Room for all of them at once: the 2,000 connect in one burst, and on a
            // busy machine the pool's threads wake to take them more slowly than the
            // acceptor queues them (the default 1,024 then refused some with 503).
            config.thread_queue = SOCKETS;
        }
    });
    let addr = server.local_addr();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut sockets =
            futures_util::future::join_all((0..SOCKETS).map(|_| open_async(addr, "/ws/echo")))
                .await;
        let echoes = sockets
            .iter_mut()
            .enumerate()
            .map(|(i, socket)| async move {
                let message = format!("socket {i}");
                socket
                    .write_all(&frame(true, TEXT, message.as_bytes()))
                    .await
                    .unwrap();
                read_frame_async(socket).await == (TEXT, message.into_bytes())
            });
        let echoed = futures_util::future::join_all(echoes).await;
        assert_eq!(
            echoed.iter().filter(|&&ok| ok).count(),
            SOCKETS,
            "every socket echoed"
        );
        let closes = sockets.iter_mut().map(|socket| async move {
            socket
                .write_all(&frame(true, CLOSE, &1000u16.to_be_bytes()))
                .await
                .unwrap();
            read_frame_async(socket).await
        });
        let closed = futures_util::future::join_all(closes).await;
        let answered = closed
            .iter()
            .filter(|(opcode, payload)| *opcode == CLOSE && payload[..] == 1000u16.to_be_bytes());
        assert_eq!(answered.count(), SOCKETS, "every close answered");
    });
}

/// Issue 33: a 64-bit frame length with its most significant bit set breaks RFC 6455
/// §5.2 ("MUST be 0"): the socket is closed with 1002 (it was 1009, as if it were a
/// size).
#[test]
fn issue33_a_frame_length_with_its_top_bit_set_closes_with_1002() {
    let server = support::start(app());
    let mut client = open(server.local_addr(), "/ws/echo");
    let mut wire = vec![0x80 | BINARY, 0x80 | 127];
    wire.extend((1u64 << 63 | 5).to_be_bytes());
    wire.extend([0x37, 0xfa, 0x21, 0x3d]);
    client.send(wire);
    let (_, opcode, payload) = read_frame(&mut client);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1002u16.to_be_bytes()[..]));
}

/// The opening handshake's fields offering permessage-deflate.
fn deflate_offer() -> String {
    format!(
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
    )
}

/// A compressed message's first fragment, `inflated` zero bytes as a raw DEFLATE
/// stream flushed to a byte boundary (RFC 7692 §7.2.1), to be sent and never
/// finished: about 1,000 times smaller than what it inflates to.
fn deflate_bomb(inflated: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let zeros = vec![0; 1 << 20];
    let mut deflater = Compress::new(Compression::best(), false);
    let mut out = Vec::with_capacity(inflated / 256);
    for _ in 0..inflated / zeros.len() {
        deflater
            .compress_vec(&zeros, &mut out, FlushCompress::None)
            .unwrap();
    }
    deflater
        .compress_vec(&[], &mut out, FlushCompress::Sync)
        .unwrap();
    assert_eq!(deflater.total_in(), inflated as u64, "all of it compressed");
    out
}

/// Issue 33: one compressed fragment of about 60 KiB, never finished, inflated to
/// 60 MiB and was held (under the 64 MiB limit of then), the socket kept alive by
/// pings; 30 such sockets took a server to 1.9 GB. Now a message's limit (256 KiB by
/// default) counts inflated bytes as they come, in bounded steps: each of 8 such
/// sockets is closed with 1009 at once, the server's memory stays flat, and it goes
/// on serving others.
#[test]
fn issue33_compressed_fragments_inflating_past_the_limit_close_with_1009_in_flat_memory() {
    use crate::http_memory::{ChildServer, MIB, peak_rss};
    let mut server = ChildServer::start("suite", None);
    let bomb = frame(false, RSV1 | BINARY, &deflate_bomb(60 << 20));
    assert!(bomb.len() < 64 * 1024, "{} bytes", bomb.len());
    let before = server.rss();
    let mut sockets: Vec<Client> = (0..8)
        .map(|_| {
            let (mut client, answer) = handshake(server.addr, "/ws/deflate", &deflate_offer());
            assert_eq!(answer.status, 101);
            client.send(&bomb);
            client
        })
        .collect();
    let peak = peak_rss(&server, Duration::from_secs(1));
    eprintln!(
        "RSS before {} MiB, with 8 sockets {} MiB",
        before / MIB,
        peak / MIB
    );
    assert!(
        peak < before + 32 * MIB,
        "grew from {before} to {peak} bytes"
    );
    for socket in &mut sockets {
        let (_, opcode, payload) = read_frame(socket);
        assert_eq!((opcode, &payload[..2]), (CLOSE, &1009u16.to_be_bytes()[..]));
    }
    assert!(server.is_alive());
    let (mut other, _) = handshake(server.addr, "/ws/deflate", &deflate_offer());
    other.send(frame(true, RSV1 | TEXT, &HELLO));
    let (_, opcode, _) = read_frame(&mut other);
    assert_eq!(opcode, TEXT);
}

/// Issue 33: every socket's messages draw on the server's memory budget for what
/// clients send (`limits.max_buffered_bodies`, which request bodies share): a message
/// within its socket's limit that the budget has no room for closes the socket with
/// 1013 (try again later), and the room comes back once the socket lets it go.
#[test]
fn issue33_a_message_past_the_servers_memory_budget_closes_with_1013() {
    let server = support::start_with(app(), |config| {
        config.limits.max_buffered_bodies = 1 << 20;
    });
    let mut client = open(server.local_addr(), "/ws/large");
    client.send(frame(true, BINARY, &vec![7; 2 << 20]));
    let (_, opcode, payload) = read_frame(&mut client);
    assert_eq!((opcode, &payload[..2]), (CLOSE, &1013u16.to_be_bytes()[..]));
    let mut next = open(server.local_addr(), "/ws/large");
    let fits = vec![9; 512 << 10];
    next.send(frame(true, BINARY, &fits));
    assert_eq!(read_frame(&mut next), (true, BINARY, fits));
}
