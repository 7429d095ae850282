//! rustls' providers side by side, in memory (no sockets, no kernel): a client and a
//! server connection pump their bytes through buffers, and the time spent in the
//! server's calls is summed. Prints, per provider and TLS version, full and resumed
//! handshakes a second on one core for the server alone and for the pair, and
//! AES-128-GCM record throughput (16 KiB writes) to encrypt and to decrypt.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::{
    ClientConfig, ClientConnection, Connection, HandshakeKind, ServerConfig, ServerConnection,
};

use crate::args::Args;
use crate::config::{self, Version};

/// Runs the `providers` command: `providers --cert C --key K [--seconds S]`.
pub fn run(args: &mut Args) -> Result<(), String> {
    let (cert, key) = (args.required("cert")?, args.required("key")?);
    let seconds: f64 = args.get("seconds", 2.0)?;
    let budget = Duration::from_secs_f64(seconds);
    println!("provider  tls  handshake  server_per_s  pair_per_s  not_as_asked");
    for name in ["aws-lc-rs", "ring"] {
        let server = Arc::new(config::server(name, &cert, &key, true)?);
        for (label, version) in [("1.3", Version::Tls13), ("1.2", Version::Tls12)] {
            for resume in [false, true] {
                let client = config::client(config::provider(name)?, version, resume);
                let rate = handshakes(&server, &client, resume, budget)?;
                let kind = if resume { "resumed" } else { "full" };
                println!(
                    "{name:<9} {label}  {kind:<9} {:>12.0}  {:>10.0}  {:>12}",
                    rate.server, rate.pair, rate.not_as_asked
                );
            }
        }
    }
    println!("provider  AES-128-GCM  encrypt_MB/s  decrypt_MB/s");
    for name in ["aws-lc-rs", "ring"] {
        let server = Arc::new(config::server(name, &cert, &key, false)?);
        let client = config::client(config::provider(name)?, Version::Tls13, false);
        let (encrypt, decrypt) = throughput(&server, &client, budget)?;
        println!("{name:<9} TLS 1.3      {encrypt:>12.0}  {decrypt:>12.0}");
    }
    Ok(())
}

/// Handshakes a second, and how many were not of the kind asked for.
struct Rate {
    server: f64,
    pair: f64,
    not_as_asked: u64,
}

/// Runs handshakes for `budget` of wall time; the first one warms the session store.
fn handshakes(
    server: &Arc<ServerConfig>,
    client: &Arc<ClientConfig>,
    resume: bool,
    budget: Duration,
) -> Result<Rate, String> {
    let want = if resume {
        HandshakeKind::Resumed
    } else {
        HandshakeKind::Full
    };
    let mut server_time = Duration::ZERO;
    handshake(server, client, &mut server_time)?;
    server_time = Duration::ZERO;
    let (start, mut count, mut not_as_asked) = (Instant::now(), 0u64, 0);
    while start.elapsed() < budget {
        let (_, kind) = handshake(server, client, &mut server_time)?;
        not_as_asked += u64::from(kind != Some(want));
        count += 1;
    }
    Ok(Rate {
        server: count as f64 / server_time.as_secs_f64(),
        pair: count as f64 / start.elapsed().as_secs_f64(),
        not_as_asked,
    })
}

/// Completes one handshake (and the tickets that follow it); adds the time spent in
/// the server's calls to `server_time`; returns both ends and the handshake's kind.
fn handshake(
    server: &Arc<ServerConfig>,
    client: &Arc<ClientConfig>,
    server_time: &mut Duration,
) -> Result<((Connection, Connection), Option<HandshakeKind>), String> {
    let mut client = Connection::from(
        ClientConnection::new(client.clone(), config::server_name()).map_err(|e| e.to_string())?,
    );
    let started = Instant::now();
    let mut server =
        Connection::from(ServerConnection::new(server.clone()).map_err(|e| e.to_string())?);
    *server_time += started.elapsed();
    let (mut wire, mut client_time) = (Vec::with_capacity(8192), Duration::ZERO);
    loop {
        let to_server = pump(
            &mut client,
            &mut server,
            &mut wire,
            (&mut client_time, server_time),
        )?;
        let to_client = pump(
            &mut server,
            &mut client,
            &mut wire,
            (server_time, &mut client_time),
        )?;
        if !to_server && !to_client && !client.is_handshaking() && !server.is_handshaking() {
            let kind = client.handshake_kind();
            return Ok(((client, server), kind));
        }
    }
}

/// Moves every pending byte from `from` to `to`, `to` processing them; adds the time
/// of each side's calls to `time.0` and `time.1`. Returns whether any byte moved.
fn pump(
    from: &mut Connection,
    to: &mut Connection,
    wire: &mut Vec<u8>,
    time: (&mut Duration, &mut Duration),
) -> Result<bool, String> {
    wire.clear();
    let started = Instant::now();
    while from.wants_write() {
        from.write_tls(wire).map_err(|e| e.to_string())?;
    }
    *time.0 += started.elapsed();
    let started = Instant::now();
    let mut rest = &wire[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest).map_err(|e| e.to_string())?;
        to.process_new_packets().map_err(|e| e.to_string())?;
    }
    *time.1 += started.elapsed();
    Ok(!wire.is_empty())
}

/// Sends 16 KiB records server to client for `budget`; returns MB/s encrypting
/// (writing plaintext and taking the records) and decrypting (reading the records and
/// taking the plaintext).
fn throughput(
    server: &Arc<ServerConfig>,
    client: &Arc<ClientConfig>,
    budget: Duration,
) -> Result<(f64, f64), String> {
    let ((mut client, mut server), _) = handshake(server, client, &mut Duration::default())?;
    let plain = vec![0x5a_u8; 16 * 1024];
    let mut received = vec![0u8; 16 * 1024];
    let (mut encrypt, mut decrypt, mut bytes) = (Duration::ZERO, Duration::ZERO, 0u64);
    let mut wire = Vec::with_capacity(64 * 1024);
    while encrypt + decrypt < budget {
        let started = Instant::now();
        server
            .writer()
            .write_all(&plain)
            .map_err(|e| e.to_string())?;
        wire.clear();
        while server.wants_write() {
            server.write_tls(&mut wire).map_err(|e| e.to_string())?;
        }
        encrypt += started.elapsed();
        let started = Instant::now();
        let mut rest = &wire[..];
        while !rest.is_empty() {
            client.read_tls(&mut rest).map_err(|e| e.to_string())?;
            client.process_new_packets().map_err(|e| e.to_string())?;
        }
        client
            .reader()
            .read_exact(&mut received)
            .map_err(|e| e.to_string())?;
        decrypt += started.elapsed();
        bytes += plain.len() as u64;
    }
    let rate = |time: Duration| bytes as f64 / time.as_secs_f64() / 1e6;
    Ok((rate(encrypt), rate(decrypt)))
}
