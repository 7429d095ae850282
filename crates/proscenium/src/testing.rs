//! What tests of Proscenium and of its apps start for themselves (with the `testing`
//! feature, for a dev-dependency): a `redis-server` of a test's own, on a loopback
//! port in a temporary directory, stopped when dropped (`scripts/test` installs it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// A `redis-server` of a test's own, stopped when dropped.
pub struct Redis {
    server: Child,
    port: u16,
    durable: bool,
    dir: tempfile::TempDir,
}

impl Redis {
    /// Starts one on a free port, keeping nothing on disk.
    ///
    /// # Panics
    ///
    /// When `redis-server` does not start or answer within 10 s: a test needs it.
    pub fn start() -> Self {
        Self::start_on(free_port())
    }

    /// Starts one on `port` (a restart of one stopped, to the same URL).
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_on(port: u16) -> Self {
        Self::launch(port, false, tempfile::tempdir().unwrap())
    }

    /// Starts one that writes every change to its append-only file before it answers
    /// (`appendfsync always`), so a restart ([`restart`](Self::restart)) loses nothing.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn start_durable() -> Self {
        Self::launch(free_port(), true, tempfile::tempdir().unwrap())
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
        *self = Self::launch(self.port, self.durable, dir);
    }

    fn launch(port: u16, durable: bool, dir: tempfile::TempDir) -> Self {
        let (appendonly, fsync) = if durable {
            ("yes", "always")
        } else {
            ("no", "everysec")
        };
        let server = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", appendonly])
            .args(["--appendfsync", fsync, "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("redis-server does not start ({e}): scripts/test installs it (apt-get install redis-server)")
            });
        let redis = Self {
            server,
            port,
            durable,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !redis.pongs() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    fn pongs(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let mut answer = [0; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut answer).is_ok()
            && &answer == b"+PONG\r\n"
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its URL, as `[redis] url` takes it.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
