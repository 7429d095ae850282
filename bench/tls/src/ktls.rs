//! Kernel TLS for static files: one TLS 1.3 connection on loopback (AES-128-GCM), the
//! server thread pinned to core 0 and the client to core 1; the server sends FILE
//! `--files` times back to back, either through rustls (16 KiB `pread` chunks
//! encrypted in user space, as a server without kTLS does) or, after the handshake, by
//! handing rustls' traffic secrets to the kernel (`TCP_ULP` "tls", `TLS_TX`) and
//! calling `sendfile`; `--mode plain` sends it by `sendfile` with no TLS at all, the
//! floor kernel TLS could approach. Prints "cpu_us_per_file MB_per_s" of the server's
//! thread, or why the kernel refused.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Instant;

use rustls::{ClientConnection, ConnectionTrafficSecrets, ServerConnection, StreamOwned};

use crate::args::Args;
use crate::config::{self, Version};
use crate::cpu;

const TCP_ULP: libc::c_int = 31;
const SOL_TLS: libc::c_int = 282;
const TLS_TX: libc::c_int = 1;
const TLS_1_3_VERSION: u16 = 0x0304;
const TLS_CIPHER_AES_GCM_128: u16 = 51;

/// `struct tls12_crypto_info_aes_gcm_128` of linux/tls.h (used for TLS 1.3 too).
#[repr(C)]
struct CryptoInfoAesGcm128 {
    version: u16,
    cipher_type: u16,
    iv: [u8; 8],
    key: [u8; 16],
    salt: [u8; 4],
    rec_seq: [u8; 8],
}

/// How the file is sent.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    User,
    Kernel,
    Plain,
}

/// Runs the `ktls` command:
/// `ktls --cert C --key K --file F [--files N] [--mode user|kernel|plain]`.
pub fn run(args: &mut Args) -> Result<(), String> {
    let (cert, key, path) = (
        args.required("cert")?,
        args.required("key")?,
        args.required("file")?,
    );
    let files: u64 = args.get("files", 2000)?;
    let mode = match args.get("mode", "user".to_string())?.as_str() {
        "user" => Mode::User,
        "kernel" => Mode::Kernel,
        "plain" => Mode::Plain,
        other => return Err(format!("bad --mode {other:?}: user, kernel or plain")),
    };
    let file = File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let length = file.metadata().map_err(|e| e.to_string())?.len();
    let mut server_config = config::server("aws-lc-rs", &cert, &key, false)?;
    server_config.enable_secret_extraction = true;
    server_config.send_tls13_tickets = 0;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let client = std::thread::spawn(move || receive(addr, files * length, mode != Mode::Plain));
    cpu::pin(0)?;
    let (mut tcp, _) = listener.accept().map_err(|e| e.to_string())?;
    let mut conn = ServerConnection::new(Arc::new(server_config)).map_err(|e| e.to_string())?;
    while mode != Mode::Plain && (conn.is_handshaking() || conn.wants_write()) {
        conn.complete_io(&mut tcp)
            .map_err(|e| format!("handshake: {e}"))?;
    }
    let (before, started) = (cpu::used(libc::RUSAGE_THREAD), Instant::now());
    match mode {
        Mode::User => send_by_rustls(StreamOwned::new(conn, tcp), &file, length, files)?,
        Mode::Kernel => send_by_kernel(conn, &tcp, &file, length, files)?,
        Mode::Plain => send_file(&tcp, &file, length, files)?,
    }
    let cpu = cpu::used(libc::RUSAGE_THREAD) - before;
    client.join().map_err(|_| "the client panicked")??;
    let wall = started.elapsed().as_secs_f64();
    println!(
        "{:.1} {:.0}",
        cpu.as_secs_f64() * 1e6 / files as f64,
        (files * length) as f64 / wall / 1e6
    );
    Ok(())
}

/// Encrypts the file in user space, `files` times, 16 KiB `pread` chunks.
fn send_by_rustls(
    mut stream: StreamOwned<ServerConnection, TcpStream>,
    file: &File,
    length: u64,
    files: u64,
) -> Result<(), String> {
    let mut chunk = vec![0u8; 16 * 1024];
    for _ in 0..files {
        let mut offset = 0;
        while offset < length {
            let n = file
                .read_at(&mut chunk, offset)
                .map_err(|e| e.to_string())?;
            stream.write_all(&chunk[..n]).map_err(|e| e.to_string())?;
            offset += n as u64;
        }
    }
    stream.flush().map_err(|e| e.to_string())
}

/// Hands the connection's sending keys to the kernel and `sendfile`s the file.
fn send_by_kernel(
    conn: ServerConnection,
    tcp: &TcpStream,
    file: &File,
    length: u64,
    files: u64,
) -> Result<(), String> {
    let secrets = conn
        .dangerous_extract_secrets()
        .map_err(|e| e.to_string())?;
    let (seq, ConnectionTrafficSecrets::Aes128Gcm { key, iv }) = secrets.tx else {
        return Err("not AES-128-GCM".into());
    };
    let mut info = CryptoInfoAesGcm128 {
        version: TLS_1_3_VERSION,
        cipher_type: TLS_CIPHER_AES_GCM_128,
        iv: [0; 8],
        key: [0; 16],
        salt: [0; 4],
        rec_seq: seq.to_be_bytes(),
    };
    info.key.copy_from_slice(key.as_ref());
    info.salt.copy_from_slice(&iv.as_ref()[..4]);
    info.iv.copy_from_slice(&iv.as_ref()[4..]);
    let fd = tcp.as_raw_fd();
    setsockopt(fd, libc::SOL_TCP, TCP_ULP, b"tls")
        .map_err(|e| format!("setsockopt(TCP_ULP, \"tls\"): {e}"))?;
    // SAFETY: `info` is a repr(C) value that lives across the call; its size is given.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            &info as *const _ as *const u8,
            size_of::<CryptoInfoAesGcm128>(),
        )
    };
    setsockopt(fd, SOL_TLS, TLS_TX, bytes).map_err(|e| format!("setsockopt(TLS_TX): {e}"))?;
    send_file(tcp, file, length, files)
}

/// `sendfile`s the file `files` times.
fn send_file(tcp: &TcpStream, file: &File, length: u64, files: u64) -> Result<(), String> {
    for _ in 0..files {
        let mut offset: libc::off_t = 0;
        while (offset as u64) < length {
            let left = (length - offset as u64) as usize;
            // SAFETY: both descriptors are open for the call; `offset` is a valid pointer.
            let sent =
                unsafe { libc::sendfile(tcp.as_raw_fd(), file.as_raw_fd(), &mut offset, left) };
            if sent < 0 {
                return Err(format!("sendfile: {}", std::io::Error::last_os_error()));
            }
        }
    }
    Ok(())
}

fn setsockopt(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    value: &[u8],
) -> std::io::Result<()> {
    // SAFETY: `value` is a live slice of the given length.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The client, on core 1: handshakes (when `tls`), then reads (and decrypts) `total`
/// bytes.
fn receive(addr: std::net::SocketAddr, total: u64, tls: bool) -> Result<(), String> {
    cpu::pin(1)?;
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let mut stream: Box<dyn Read> = match tls {
        true => {
            let config = config::client(config::provider("aws-lc-rs")?, Version::Tls13, false);
            let conn =
                ClientConnection::new(config, config::server_name()).map_err(|e| e.to_string())?;
            Box::new(StreamOwned::new(conn, tcp))
        }
        false => Box::new(tcp),
    };
    let mut buffer = vec![0u8; 64 * 1024];
    let mut received = 0u64;
    while received < total {
        match stream.read(&mut buffer) {
            Ok(0) => return Err(format!("closed after {received} of {total} bytes")),
            Ok(n) => received += n as u64,
            Err(e) => return Err(format!("read after {received} bytes: {e}")),
        }
    }
    Ok(())
}
