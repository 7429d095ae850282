//! rustls' providers side by side, in memory (no sockets, no kernel): a client and a
//! server connection pump their bytes through buffers, and the time spent in the
//! server's calls is summed. Measures, per TLS version, full and resumed handshakes a
//! second of the server alone on one core, and AES-128-GCM record throughput (16 KiB
//! writes) encrypting and decrypting — in rounds, each round measuring every figure
//! under both providers back to back (the first alternating), so that the machine's
//! drift falls on both. Prints per figure each provider's median and every round, and
//! aws-lc-rs' ratio to ring within each round, median over rounds.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::{
    ClientConfig, ClientConnection, Connection, HandshakeKind, ServerConfig, ServerConnection,
};

use crate::args::Args;
use crate::config::{self, Version};

const PROVIDERS: [&str; 2] = ["aws-lc-rs", "ring"];

/// One measured value: (figure, provider) and the value.
type Value = ((String, &'static str), f64);

/// Runs the `providers` command: `providers --cert C --key K [--seconds S] [--rounds R]`.
pub fn run(args: &mut Args) -> Result<(), String> {
    let (cert, key) = (args.required("cert")?, args.required("key")?);
    let budget = Duration::from_secs_f64(args.get("seconds", 1.0)?);
    let rounds: usize = args.get("rounds", 5)?;
    // figure -> provider -> one value a round
    let mut figures: BTreeMap<String, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
    for round in 0..rounds {
        for (figure, value) in one_round(&cert, &key, budget, round)? {
            let (name, provider) = figure;
            figures
                .entry(name)
                .or_default()
                .entry(provider)
                .or_default()
                .push(value);
        }
    }
    for (figure, by_provider) in &figures {
        for (provider, values) in by_provider {
            println!(
                "{figure:<24} {provider:<9} median {:>8.0}  rounds {}",
                median(values),
                list(values)
            );
        }
        let ratios: Vec<f64> = by_provider["aws-lc-rs"]
            .iter()
            .zip(&by_provider["ring"])
            .map(|(a, r)| a / r)
            .collect();
        println!(
            "{figure:<24} aws-lc-rs/ring {:.2}x  rounds {}",
            median(&ratios),
            list(&ratios)
        );
    }
    Ok(())
}

/// Measures every figure once under each provider, starting with provider
/// `round % 2`; returns ((figure, provider), value) pairs.
fn one_round(cert: &str, key: &str, budget: Duration, round: usize) -> Result<Vec<Value>, String> {
    let order = [PROVIDERS[round % 2], PROVIDERS[(round + 1) % 2]];
    let mut values = Vec::new();
    for (label, version) in [("1.3", Version::Tls13), ("1.2", Version::Tls12)] {
        for resume in [false, true] {
            let kind = if resume { "resumed" } else { "full" };
            for name in order {
                let server = Arc::new(config::server(name, cert, key, true)?);
                let client = config::client(config::provider(name)?, version, resume);
                let rate = handshakes(&server, &client, resume, budget)?;
                values.push(((format!("handshakes/s {label} {kind}"), name), rate));
            }
        }
    }
    for name in order {
        let server = Arc::new(config::server(name, cert, key, false)?);
        let client = config::client(config::provider(name)?, Version::Tls13, false);
        let (encrypt, decrypt) = throughput(&server, &client, budget)?;
        values.push((("AES-128-GCM enc MB/s".to_string(), name), encrypt));
        values.push((("AES-128-GCM dec MB/s".to_string(), name), decrypt));
    }
    Ok(values)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

fn list(values: &[f64]) -> String {
    let shown: Vec<String> = values
        .iter()
        .map(|v| {
            if *v < 10.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.0}")
            }
        })
        .collect();
    format!("[{}]", shown.join(", "))
}

/// Runs handshakes for `budget` of wall time (the first one warms the session store);
/// returns the server's handshakes a second of its own time.
fn handshakes(
    server: &Arc<ServerConfig>,
    client: &Arc<ClientConfig>,
    resume: bool,
    budget: Duration,
) -> Result<f64, String> {
    let want = if resume {
        HandshakeKind::Resumed
    } else {
        HandshakeKind::Full
    };
    let mut server_time = Duration::ZERO;
    handshake(server, client, &mut server_time)?;
    server_time = Duration::ZERO;
    let (start, mut count) = (Instant::now(), 0u64);
    while start.elapsed() < budget {
        let (_, kind) = handshake(server, client, &mut server_time)?;
        if kind != Some(want) {
            return Err(format!("a {want:?} handshake was {kind:?}"));
        }
        count += 1;
    }
    Ok(count as f64 / server_time.as_secs_f64())
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
