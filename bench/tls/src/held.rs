//! What rustls itself holds for an idle server connection: N in-memory connection
//! pairs each complete a TLS 1.3 handshake (aws-lc-rs, Proscenium's provider and
//! settings: tickets, a session cache) and one request and answer; the clients are
//! dropped, and the heap still held by the N `ServerConnection`s is counted by the
//! process's allocator (`Counting`) and divided by N.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use rustls::{ClientConnection, Connection, ServerConnection};

use crate::args::Args;
use crate::config::{self, Version};

/// The system allocator, counting the bytes it has handed out and not had back.
pub struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the count is
// only a statistic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on as it came.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs the `held` command: `held --cert C --key K [--conns N]`.
pub fn run(args: &mut Args) -> Result<(), String> {
    let (cert, key) = (args.required("cert")?, args.required("key")?);
    let conns: usize = args.get("conns", 1000)?;
    let mut server_config = config::server("aws-lc-rs", &cert, &key, true)?;
    server_config.session_storage = rustls::server::ServerSessionMemoryCache::new(4096);
    server_config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let server_config = Arc::new(server_config);
    let client_config = config::client(config::provider("aws-lc-rs")?, Version::Tls13, false);
    let mut servers = Vec::with_capacity(conns);
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..conns {
        let client = ClientConnection::new(client_config.clone(), config::server_name())
            .map_err(|e| e.to_string())?;
        let server = ServerConnection::new(server_config.clone()).map_err(|e| e.to_string())?;
        let (mut client, mut server) = (Connection::from(client), Connection::from(server));
        exchange(&mut client, &mut server)?;
        servers.push(server);
    }
    let held = LIVE.load(Ordering::Relaxed)
        - before
        - (servers.capacity() * size_of::<Connection>()) as isize;
    println!(
        "{conns} idle server connections: {} B of heap each, plus {} B inline (size_of ServerConnection)",
        held / conns as isize,
        size_of::<ServerConnection>()
    );
    Ok(())
}

/// Handshakes, then sends a request to the server and its answer back.
fn exchange(client: &mut Connection, server: &mut Connection) -> Result<(), String> {
    let mut wire = Vec::new();
    let mut move_bytes = |from: &mut Connection, to: &mut Connection| -> Result<(), String> {
        wire.clear();
        while from.wants_write() {
            from.write_tls(&mut wire).map_err(|e| e.to_string())?;
        }
        let mut rest = &wire[..];
        while !rest.is_empty() {
            to.read_tls(&mut rest).map_err(|e| e.to_string())?;
            to.process_new_packets().map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    while client.is_handshaking() || server.is_handshaking() {
        move_bytes(client, server)?;
        move_bytes(server, client)?;
    }
    client
        .writer()
        .write_all(b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n")
        .map_err(|e| e.to_string())?;
    move_bytes(client, server)?;
    let mut request = [0u8; 512];
    let n = server
        .reader()
        .read(&mut request)
        .map_err(|e| e.to_string())?;
    if n == 0 {
        return Err("no request".into());
    }
    server
        .writer()
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, World!")
        .map_err(|e| e.to_string())?;
    move_bytes(server, client)?;
    move_bytes(client, server)
}
