//! Memory per idle TLS connection: opens N connections, each with a full handshake and
//! one keep-alive request answered, keeps them open, and prints the growth of the
//! server's resident (RSS) and proportional (PSS: pages shared between nginx's master
//! and worker counted once) memory per connection, half a second and three seconds
//! after the last answer — as `bench/idle.py` does for plain HTTP.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

use crate::args::Args;
use crate::{config, load};

/// Runs the `idle` command: `idle --addr A --conns N PID...`.
pub fn run(args: &mut Args) -> Result<(), String> {
    let addr: SocketAddr = args.required("addr")?.parse().map_err(|_| "bad --addr")?;
    let conns: usize = args.get("conns", 5000)?;
    let version = config::Version::parse(&args.get("tls", "1.3".to_string())?)?;
    let pids = args.positional().to_vec();
    raise_file_limit();
    let config = config::client(config::provider("aws-lc-rs")?, version, false);
    let before = memory_kib(&pids)?;
    let mut open = Vec::with_capacity(conns);
    for i in 0..conns {
        let tcp = TcpStream::connect(addr).map_err(|e| format!("connection {i}: {e}"))?;
        let conn = ClientConnection::new(config.clone(), config::server_name())
            .map_err(|e| e.to_string())?;
        let mut stream = StreamOwned::new(conn, tcp);
        stream
            .write_all(b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n")
            .map_err(|e| format!("connection {i}: {e}"))?;
        load::read_answer(&mut stream).map_err(|e| format!("connection {i}: {e}"))?;
        open.push(stream);
    }
    let mut figures = Vec::new();
    for (idle, wait) in [(0.5, 0.5), (3.0, 2.5)] {
        std::thread::sleep(Duration::from_secs_f64(wait));
        let after = memory_kib(&pids)?;
        figures.push(format!(
            "idle {idle} s: RSS {} -> {} KiB, {:.0} B, PSS {} -> {} KiB, {:.0} B per connection",
            before.0,
            after.0,
            (after.0 - before.0) as f64 * 1024.0 / conns as f64,
            before.1,
            after.1,
            (after.1 - before.1) as f64 * 1024.0 / conns as f64,
        ));
    }
    println!("{conns} connections; {}", figures.join("; "));
    drop(open);
    Ok(())
}

/// Returns the summed (RSS, PSS) in KiB of processes `pids`.
fn memory_kib(pids: &[String]) -> Result<(i64, i64), String> {
    let mut total = (0, 0);
    for pid in pids {
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .map_err(|e| format!("process {pid}: {e}"))?;
        total.0 += field_kib(&rollup, "Rss:");
        total.1 += field_kib(&rollup, "Pss:");
    }
    Ok(total)
}

fn field_kib(rollup: &str, name: &str) -> i64 {
    rollup
        .lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Raises the open-file limit to its hard limit: N connections need N descriptors.
fn raise_file_limit() {
    // SAFETY: getrlimit fills the value it is given; setrlimit reads it.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
}
