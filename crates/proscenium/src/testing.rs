//! What tests of Proscenium and of its apps start for themselves (with the `testing`
//! feature, for a dev-dependency): a `redis-server` and a PostgreSQL of a test's own,
//! on a loopback port in a temporary directory, stopped when dropped (`scripts/test`
//! installs them); Pebble, Let's Encrypt's ACME test server ([`Pebble`]);
//! and [`Host`]s — network namespaces joined to this one by a veth pair — to run a
//! process on "another machine" and cut it off the network; and certificates of a
//! test's own ([`TestCa`]) with an [`HttpsServer`] presenting them; and an OTLP
//! [`otlp::Collector`] that keeps the spans a process exports.

// Its decoder comes with the feature alone, not with the crate's own unit tests.
#[cfg(feature = "testing")]
pub mod otlp;
#[cfg(feature = "tls")]
mod pebble;
#[cfg(feature = "tls")]
mod tls;

#[cfg(feature = "tls")]
pub use self::pebble::Pebble;
#[cfg(feature = "tls")]
pub use self::tls::{HttpsServer, Leaf, Received, TestCa, dns_names};

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Starts the app binary `bin` with `serve --bind 127.0.0.1:0` and `args`, and
/// returns it with the address its start line names (read as it comes, however long
/// a busy machine takes to start it).
#[cfg(feature = "cli")]
pub fn serve<I, S>(bin: &str, args: I) -> (Child, std::net::SocketAddr)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut child = Command::new(bin)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the app starts");
    let (_, addr) =
        crate::launch::read_start_line(&mut child).expect("the app prints its start line");
    (child, addr)
}

/// Sends `request` (raw bytes, its last header line asking `Connection: close`) on
/// a connection of its own and returns all the server answers before it closes;
/// panics if none comes within 30 s.
pub fn exchange(addr: impl std::net::ToSocketAddrs, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("the server listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    stream
        .write_all(request.as_bytes())
        .expect("the request is sent");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("the server answers");
    answer
}

/// Sends `child` SIGTERM and waits for it to exit, at most 60 s (a busy machine's
/// margin); returns its exit code.
pub fn terminate(child: &mut Child) -> Option<i32> {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM is sent");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("the child is ours") {
            return status.code();
        }
        assert!(Instant::now() < deadline, "did not exit within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port nothing listens on now, and that no socket bound to port 0 will be
/// given meanwhile: it is picked below the kernel's ephemeral range, so a server (or
/// Pebble) told it binds it later without another test's listener or client taking
/// it first — which a port the kernel chose, let go and chose again for the next
/// `bind(0)` allowed while a whole suite ran.
pub fn free_port() -> u16 {
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // Below the ephemeral range, above the well-known ports and those of most
    // services a machine runs.
    let (low, high) = (ephemeral.saturating_sub(12_000).max(1024), ephemeral);
    // From a random place, then onwards: no two calls of a process give one port.
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static GIVEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let base = *BASE.get_or_init(|| {
        std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            std::process::id(),
        )
    });
    let span = u64::from(high - low);
    (0..span)
        .map(|_| {
            let next = base.wrapping_add(GIVEN.fetch_add(1, Ordering::Relaxed));
            low + u16::try_from(next % span).unwrap_or(0)
        })
        .find(|port| TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).is_ok())
        .expect("a free port below the ephemeral range")
}

/// How long a server a test starts may take to answer while it runs: long, for a
/// machine busy with the whole suite (a redis-server once took more than 10 s there).
/// A server that exits fails the test at once, with its log.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// Tries a server on another free port when the one picked was taken meanwhile (a
/// port free when picked may be bound by another test before the server binds it).
const PORT_TRIES: usize = 5;

/// Waits until `ready` says `server` answers; `Err` with why not (its exit and the
/// `log` it wrote, or its silence past [`READY_WITHIN`], when it is killed).
fn wait_ready(
    server: &mut Child,
    log: &Path,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if ready() {
            return Ok(());
        }
        if let Ok(Some(status)) = server.try_wait() {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("exited ({status}):\n{log}"));
        }
        if Instant::now() >= deadline {
            let _ = server.kill();
            let _ = server.wait();
            return Err(format!(
                "did not answer within {} s",
                READY_WITHIN.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a server's failure to start was a port taken before it bound it.
fn lost_its_port(why: &str) -> bool {
    why.contains("Address already in use")
}

/// A `redis-server` of a test's own, stopped when dropped.
pub struct Redis {
    server: Child,
    setup: Setup,
    dir: tempfile::TempDir,
}

/// Where a Redis listens, whether it keeps what it is told, and whether it speaks TLS
/// (on `port`, then, and on no plain one).
#[derive(Debug, Clone, Copy)]
struct Setup {
    bind: Ipv4Addr,
    port: u16,
    durable: bool,
    tls: bool,
}

impl Redis {
    /// Starts one on a free port, keeping nothing on disk.
    ///
    /// # Panics
    ///
    /// When `redis-server` does not start, exits, or does not answer within 60 s: a
    /// test needs it.
    pub fn start() -> Self {
        Self::launch(Ipv4Addr::LOCALHOST, false, false)
    }

    /// Starts one that speaks TLS only, its certificate (for `localhost` and
    /// 127.0.0.1) signed by a CA of its own: its [`url`](Self::url) is `rediss://`,
    /// and [`ca`](Self::ca) the file a client trusts.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    #[cfg(feature = "tls")]
    pub fn start_tls() -> Self {
        Self::launch(Ipv4Addr::LOCALHOST, false, true)
    }

    /// Starts one on `port` (a restart of one stopped, to the same URL).
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_on(port: u16) -> Self {
        let setup = Setup {
            bind: Ipv4Addr::LOCALHOST,
            port,
            durable: false,
            tls: false,
        };
        Self::launch_in(setup, tempfile::tempdir().unwrap())
            .unwrap_or_else(|why| panic!("redis-server on {port} {why}"))
    }

    /// Starts one listening on `bind` (a [`Host`]'s gateway, for the processes on it)
    /// and on a free port.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_bound(bind: Ipv4Addr) -> Self {
        Self::launch(bind, false, false)
    }

    /// Starts one that writes every change to its append-only file before it answers
    /// (`appendfsync always`), so a restart ([`restart`](Self::restart)) loses nothing.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_durable() -> Self {
        Self::launch(Ipv4Addr::LOCALHOST, true, false)
    }

    /// Kills it (SIGKILL: no last save), leaves it down for `down_for`, and starts it
    /// again on the same port and directory, from what it had written there.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn restart(&mut self, down_for: Duration) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        std::thread::sleep(down_for);
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let port = self.setup.port;
        *self = Self::launch_in(self.setup, dir)
            .unwrap_or_else(|why| panic!("redis-server on {port} {why}"));
    }

    /// Starts one on `bind` and a free port, another if that port is taken first.
    fn launch(bind: Ipv4Addr, durable: bool, tls: bool) -> Self {
        let mut tries = 0;
        loop {
            let setup = Setup {
                bind,
                port: free_port(),
                durable,
                tls,
            };
            match Self::launch_in(setup, tempfile::tempdir().unwrap()) {
                Ok(redis) => return redis,
                Err(why) if lost_its_port(&why) && tries + 1 < PORT_TRIES => tries += 1,
                Err(why) => panic!("redis-server on {} {why}", setup.port),
            }
        }
    }

    fn launch_in(setup: Setup, dir: tempfile::TempDir) -> Result<Self, String> {
        let Setup {
            bind, port, tls, ..
        } = setup;
        let log = dir.path().join("redis.log");
        // A restart's readiness is read from a log of its own, not its predecessor's.
        let _ = std::fs::remove_file(&log);
        let server = command(setup, dir.path()).spawn().unwrap_or_else(|e| {
            panic!("redis-server does not start ({e}): scripts/test installs it (apt-get install redis-server)")
        });
        let mut redis = Self { server, setup, dir };
        wait_ready(&mut redis.server, &log, || {
            if tls {
                // Answering PING would take a TLS client: its log says it listens.
                std::fs::read_to_string(&log)
                    .is_ok_and(|log| log.contains("Ready to accept connections"))
            } else {
                pongs(bind, port)
            }
        })?;
        Ok(redis)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.setup.port
    }

    /// Its URL, as `[redis] url` takes it: `rediss://` for one started with
    /// [`start_tls`](Self::start_tls).
    pub fn url(&self) -> String {
        let scheme = if self.setup.tls { "rediss" } else { "redis" };
        format!("{scheme}://{}:{}", self.setup.bind, self.setup.port)
    }

    /// The file of the CA that signed its certificate, as `[redis] ca` takes it; `None`
    /// for one that does not speak TLS.
    pub fn ca(&self) -> Option<PathBuf> {
        self.setup.tls.then(|| self.dir.path().join("ca.pem"))
    }

    /// Its `[redis]` settings: its URL and, for one speaking TLS, its CA.
    ///
    /// # Panics
    ///
    /// When its CA's file cannot be read.
    pub fn spec(&self) -> crate::config::RedisSpec {
        crate::config::RedisSpec {
            url: Some(self.url()),
            ca: self
                .ca()
                .map(|ca| crate::config::CaFile::read(ca).expect("its CA's file")),
            ..crate::config::RedisSpec::default()
        }
    }

    /// Its URL and CA, as streams take them.
    ///
    /// # Panics
    ///
    /// As [`spec`](Self::spec).
    #[cfg(feature = "redis")]
    pub fn target(&self) -> crate::stream::RedisTarget {
        self.spec().target().expect("a URL")
    }

    /// The `redis-server` process's id (for a benchmark to read its CPU time).
    pub fn pid(&self) -> u32 {
        self.server.id()
    }
}

/// The pid of the child of process `parent` that runs `--process NAME` (a process of
/// a graph mapped over processes, started by its host's supervisor), once there is
/// one.
pub fn process_of(parent: u32, name: &str) -> Option<u32> {
    let wanted = format!("--process\0{name}\0");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:"))?.trim();
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let runs = cmdline
                .windows(wanted.len())
                .any(|w| w == wanted.as_bytes());
            (ppid == parent.to_string() && runs).then_some(pid)
        })
}

/// The command that starts a `redis-server` as `setup` says, in `dir`.
fn command(setup: Setup, dir: &Path) -> Command {
    let Setup { bind, port, .. } = setup;
    let (appendonly, fsync) = if setup.durable {
        ("yes", "always")
    } else {
        ("no", "everysec")
    };
    let mut command = Command::new("redis-server");
    command.args(["--bind", &bind.to_string()]);
    #[cfg(feature = "tls")]
    if setup.tls {
        command.args(["--port", "0", "--tls-port", &port.to_string()]);
        command.args(tls_arguments(dir, bind));
    }
    if !setup.tls {
        command.args(["--port", &port.to_string()]);
    }
    command
        // Off loopback only on a test's own link to its hosts.
        .args(["--protected-mode", "no"])
        .args(["--save", "", "--appendonly", appendonly])
        .args(["--appendfsync", fsync, "--dir"])
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"))
        .stdout(Stdio::null());
    command
}

/// The arguments that make a `redis-server` speak TLS with a certificate for
/// `localhost` and `bind` signed by a CA of its own, both made in `dir` (once: a
/// restart keeps them, so its clients still trust it).
#[cfg(feature = "tls")]
fn tls_arguments(dir: &Path, bind: Ipv4Addr) -> Vec<std::ffi::OsString> {
    let ca = dir.join("ca.pem");
    let (cert, key) = (dir.join("redis.pem"), dir.join("redis.key"));
    if !ca.exists() {
        let authority = TestCa::new();
        authority
            .leaf(&["localhost", &bind.to_string()])
            .write(dir, "redis");
        authority.write(dir);
    }
    let mut arguments: Vec<std::ffi::OsString> = Vec::new();
    for (flag, path) in [
        ("--tls-cert-file", &cert),
        ("--tls-key-file", &key),
        ("--tls-ca-cert-file", &ca),
    ] {
        arguments.push(flag.into());
        arguments.push(path.into());
    }
    arguments.extend(["--tls-auth-clients".into(), "no".into()]);
    arguments
}

/// Whether a Redis on `bind`:`port` answers PING (a read that hangs counts as no).
fn pongs(bind: Ipv4Addr, port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((bind, port)) else {
        return false;
    };
    let mut answer = [0; 7];
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .is_ok()
        && stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && &answer == b"+PONG\r\n"
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Hosts made by this process so far: each has its own subnet, 10.77.N.0/30.
static HOSTS: AtomicU8 = AtomicU8::new(0);

/// A simulated host: a network namespace joined to this one by a veth pair, its address
/// `10.77.N.2` and this side's `10.77.N.1` (its gateway); removed when dropped. Needs
/// the right to make namespaces (root): without it, [`new`](Self::new) panics saying so,
/// so a test that needs hosts never passes without them.
#[derive(Debug)]
pub struct Host {
    namespace: String,
    veth: String,
    subnet: u8,
}

impl Host {
    /// Makes a host.
    ///
    /// # Panics
    ///
    /// When the namespace or its link cannot be made (no `ip`, no right to).
    pub fn new() -> Self {
        let subnet = HOSTS.fetch_add(1, Ordering::SeqCst);
        let tag = format!("{}{subnet}", std::process::id() % 100_000);
        let host = Self {
            namespace: format!("proscenium-{tag}"),
            veth: format!("px{tag}"),
            subnet,
        };
        let (gateway, address) = (host.gateway(), host.address());
        let inside = format!("{}i", host.veth);
        let steps: [&[&str]; 7] = [
            &["netns", "add", &host.namespace],
            &[
                "link", "add", &host.veth, "type", "veth", "peer", "name", &inside,
            ],
            &["link", "set", &inside, "netns", &host.namespace],
            &["addr", "add", &format!("{gateway}/30"), "dev", &host.veth],
            &["link", "set", &host.veth, "up"],
            &[
                "-n",
                &host.namespace,
                "addr",
                "add",
                &format!("{address}/30"),
                "dev",
                &inside,
            ],
            &["-n", &host.namespace, "link", "set", &inside, "up"],
        ];
        for step in steps {
            ip(step);
        }
        ip(&["-n", &host.namespace, "link", "set", "lo", "up"]);
        host
    }

    /// This host's address.
    pub fn address(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.subnet, 2)
    }

    /// The address this side has on the host's link: where the host reaches it.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.subnet, 1)
    }

    /// A command that runs `program` on the host.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.namespace])
            .arg(program);
        command
    }

    /// Cuts the host off the network (its link down), or joins it again.
    pub fn set_connected(&self, connected: bool) {
        let state = if connected { "up" } else { "down" };
        ip(&["link", "set", &self.veth, state]);
    }
}

impl Default for Host {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // The veth pair goes with the namespace.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .status();
    }
}

/// Runs `ip ARGS`, panicking with what it said when it fails.
fn ip(args: &[&str]) {
    let output = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("`ip` does not run ({e}): a host needs iproute2"));
    assert!(
        output.status.success(),
        "ip {}: {} (making hosts needs network namespaces: root, or CAP_NET_ADMIN)",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
}

/// A PostgreSQL server of a test's own: `initdb` in a temporary directory, then
/// `postgres` on a free loopback port, durability off (a test's data need not
/// survive a crash), stopped when dropped. Run as the `postgres` user when the test
/// runs as root, which PostgreSQL refuses to run as. Debian's `postgresql` package
/// (`scripts/test` installs it).
pub struct Postgres {
    server: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// Makes a database cluster and starts its server.
    ///
    /// # Panics
    ///
    /// When PostgreSQL is not installed, does not start, exits, or does not answer
    /// within 60 s: a test needs it.
    pub fn start() -> Self {
        let bin = postgres_bin();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let user = run_as_postgres();
        if let Some((uid, gid)) = user {
            nix::unistd::chown(dir.path(), Some(uid.into()), Some(gid.into())).unwrap();
        }
        let as_postgres = |program: &str| {
            let mut command = Command::new(bin.join(program));
            if let Some((uid, gid)) = user {
                std::os::unix::process::CommandExt::uid(&mut command, uid);
                std::os::unix::process::CommandExt::gid(&mut command, gid);
            }
            command.stdout(Stdio::null()).stderr(Stdio::null());
            command
        };
        let made = as_postgres("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .status()
            .unwrap_or_else(|e| {
                panic!("initdb does not run ({e}): scripts/test installs postgresql")
            });
        assert!(made.success(), "initdb failed");
        let log = dir.path().join("postgres.log");
        let mut tries = 0;
        loop {
            let port = free_port();
            let mut server = as_postgres("postgres");
            server
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-k"])
                .arg(dir.path())
                .args([
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                ])
                .stderr(std::fs::File::create(&log).unwrap());
            let mut server = server.spawn().unwrap();
            let ready = || {
                Command::new(bin.join("pg_isready"))
                    .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                    .status()
                    .is_ok_and(|s| s.success())
            };
            match wait_ready(&mut server, &log, ready) {
                Ok(()) => {
                    return Self {
                        server,
                        port,
                        _dir: dir,
                    };
                }
                Err(why) if lost_its_port(&why) && tries + 1 < PORT_TRIES => tries += 1,
                Err(why) => panic!("postgres on {port} {why}"),
            }
        }
    }

    /// Its URL, as `[database] url` takes it.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // A fast shutdown: its backends end with it, nothing is left behind.
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.server.id()).unwrap_or(0));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.server.try_wait().is_ok_and(|exited| exited.is_some()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The directory of PostgreSQL's server programs: Debian's newest, else `PATH`'s.
fn postgres_bin() -> std::path::PathBuf {
    let mut versions: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("postgres").is_file())
        .collect();
    versions.sort();
    versions.pop().unwrap_or_default()
}

/// The `postgres` user's ids, when this process runs as root (and so must not run
/// PostgreSQL as itself).
fn run_as_postgres() -> Option<(u32, u32)> {
    if !nix::unistd::Uid::effective().is_root() {
        return None;
    }
    let user = nix::unistd::User::from_name("postgres")
        .ok()
        .flatten()
        .expect("a postgres user: scripts/test installs postgresql");
    Some((user.uid.as_raw(), user.gid.as_raw()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that cannot start fails the test at once with its log, rather than
    /// after a deadline with "did not answer" (a busy suite once passed 10 s).
    #[test]
    #[should_panic(expected = "Address already in use")]
    fn a_redis_that_exits_fails_at_once_with_its_log() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        Redis::start_on(taken.local_addr().unwrap().port());
    }
}
