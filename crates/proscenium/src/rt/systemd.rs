//! systemd's side of the lifecycle: readiness notifications (`sd_notify`) and socket
//! activation (`LISTEN_FDS`).
//!
//! Notifications are datagrams to the unix socket named in `NOTIFY_SOCKET` (a path, or
//! an abstract name written with a leading `@`): `READY=1` once the server accepts,
//! `RELOADING=1` and `READY=1` around a SIGHUP, `STOPPING=1` when shutdown begins, and
//! `WATCHDOG=1` every half of `WATCHDOG_USEC` while every loop of the process turns —
//! a frozen server stops petting, and systemd restarts it. They are sent with std's
//! `UnixDatagram`: the protocol is one `sendto` of `KEY=VALUE` lines, which needs no
//! crate. A `prefork` worker never notifies: its supervisor speaks for the service.
//!
//! Socket activation: when `LISTEN_PID` is this process and `LISTEN_FDS` is at least 1,
//! descriptor 3 is the listening socket, taken (once) instead of binding `bind`.

#![allow(unsafe_code)]

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::watchdog::{LiveStats, Turning};

/// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: i32 = 3;

/// Where this process tells systemd how it is doing; `None` when no one listens.
#[derive(Debug, Clone)]
pub(crate) struct Notifier {
    target: std::os::unix::net::SocketAddr,
}

impl Notifier {
    /// Returns the notifier `NOTIFY_SOCKET` names, unless this process is a `prefork`
    /// worker or the variable is unset or not a socket address.
    pub(crate) fn from_env() -> Option<Self> {
        if super::prefork_worker().is_some() {
            return None;
        }
        let name = std::env::var_os("NOTIFY_SOCKET")?;
        match address(name.as_encoded_bytes()) {
            Ok(target) => Some(Self { target }),
            Err(e) => {
                tracing::warn!("NOTIFY_SOCKET {name:?} is not usable: {e}");
                None
            }
        }
    }

    /// Sends `state` (newline-separated `KEY=VALUE` lines); a failure is logged, as
    /// systemd may have gone away while the server serves on.
    pub(crate) fn send(&self, state: &str) {
        let sent =
            UnixDatagram::unbound().and_then(|s| s.send_to_addr(state.as_bytes(), &self.target));
        if let Err(e) = sent {
            tracing::warn!("cannot notify systemd ({state:?}): {e}");
        }
    }

    /// Says a reload has begun, with the monotonic time systemd asks for.
    pub(crate) fn reloading(&self) {
        let usec = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .map(|t| Duration::from(t).as_micros())
            .unwrap_or_default();
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={usec}"));
    }

    /// Starts the thread that sends `WATCHDOG=1` every half of `WATCHDOG_USEC` while
    /// the loops `live` holds turn, when systemd asked for it.
    pub(crate) fn keep_petting(&self, live: LiveStats) -> std::io::Result<()> {
        let Some(period) = watchdog_period() else {
            return Ok(());
        };
        let notifier = self.clone();
        let mut loops = Turning::new(live);
        std::thread::Builder::new()
            .name("proscenium-sd-watchdog".to_owned())
            .spawn(move || {
                loop {
                    // A loop stuck for the whole period would miss systemd's deadline.
                    if loops.every_loop_within(period) {
                        notifier.send("WATCHDOG=1");
                    }
                    std::thread::sleep(period);
                }
            })
            .map(drop)
    }
}

/// Parses `NOTIFY_SOCKET`: a path, or `@name` for an abstract socket.
fn address(name: &[u8]) -> std::io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    match name.strip_prefix(b"@") {
        Some(abstract_name) => std::os::unix::net::SocketAddr::from_abstract_name(abstract_name),
        None => {
            use std::os::unix::ffi::OsStrExt;
            std::os::unix::net::SocketAddr::from_pathname(std::ffi::OsStr::from_bytes(name))
        }
    }
}

/// Returns half of `WATCHDOG_USEC`, when it is set for this process (`WATCHDOG_PID`,
/// if present, names it).
fn watchdog_period() -> Option<Duration> {
    let for_us =
        std::env::var("WATCHDOG_PID").map_or(true, |pid| pid.parse() == Ok(std::process::id()));
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (for_us && usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Returns the listening socket systemd passed, when `LISTEN_PID` names this process
/// and `LISTEN_FDS` counts at least one descriptor; the first is taken, once.
///
/// # Errors
///
/// When it was taken already, or the descriptor is not a listening TCP socket.
pub(crate) fn activated_listener() -> Option<std::io::Result<std::net::TcpListener>> {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    let pid: u32 = std::env::var("LISTEN_PID").ok()?.parse().ok()?;
    let fds: u32 = std::env::var("LISTEN_FDS").ok()?.parse().ok()?;
    if pid != std::process::id() || fds == 0 {
        return None;
    }
    if TAKEN.swap(true, Ordering::AcqRel) {
        return Some(Err(std::io::Error::other(
            "the activated socket was taken already",
        )));
    }
    // SAFETY: systemd (or a launcher doing as it does) left descriptor 3 open for this
    // process, named it in LISTEN_FDS/LISTEN_PID for this pid alone, nothing else here
    // opens or closes it, and `TAKEN` lets it be owned once.
    let fd = unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) };
    Some(check_listening(fd))
}

/// Makes `fd` a non-blocking TCP listener, once it is seen to be a listening stream.
fn check_listening(fd: OwnedFd) -> std::io::Result<std::net::TcpListener> {
    let socket = socket2::Socket::from(fd);
    if !socket.is_listener()? || socket.r#type()? != socket2::Type::STREAM {
        return Err(std::io::Error::other(
            "descriptor 3 is not a listening stream socket",
        ));
    }
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_socket_names_a_path_or_an_abstract_socket() {
        let path = address(b"/run/systemd/notify").unwrap();
        assert_eq!(
            path.as_pathname(),
            Some(std::path::Path::new("/run/systemd/notify"))
        );
        use std::os::linux::net::SocketAddrExt;
        let named = address(b"@sd-notify").unwrap();
        assert_eq!(named.as_abstract_name(), Some(&b"sd-notify"[..]));
    }
}
