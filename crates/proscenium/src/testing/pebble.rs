//! Pebble, Let's Encrypt's ACME test server, with pebble-challtestsrv as its DNS (every
//! name resolves to 127.0.0.1), on loopback ports of a test's own: `go install
//! github.com/letsencrypt/pebble/v2/cmd/pebble@latest` and `.../pebble-challtestsrv`
//! (`scripts/test` installs them).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use super::{PORT_TRIES, free_port, wait_ready};

/// A Pebble of a test's own and its DNS, stopped when dropped.
pub struct Pebble {
    pebble: Child,
    dns: Child,
    port: u16,
    management: u16,
    dns_port: u16,
    module: PathBuf,
    dir: tempfile::TempDir,
}

impl Pebble {
    /// Whether Go is installed: without it there is no Pebble, and a test says so
    /// loudly and passes (with it, a missing Pebble fails the test).
    pub fn go_is_installed() -> bool {
        go(&["version"]).is_some()
    }

    /// Starts one whose validation authority checks HTTP-01 on port `http_port` and
    /// TLS-ALPN-01 on port `tls_port` of 127.0.0.1, without the pause it makes
    /// before each check (`PEBBLE_VA_NOSLEEP`), and proving every name anew on every
    /// order (`PEBBLE_AUTHZREUSE=0`).
    ///
    /// # Panics
    ///
    /// When Pebble or pebble-challtestsrv is missing, exits, or does not answer within
    /// 60 s.
    pub fn start(http_port: u16, tls_port: u16) -> Self {
        let module = module_dir();
        let mut tries = 0;
        loop {
            let dir = tempfile::tempdir().unwrap();
            match Self::launch(&module, dir, http_port, tls_port) {
                Ok(pebble) => return pebble,
                Err(why)
                    if why.to_ascii_lowercase().contains("address already in use")
                        && tries + 1 < PORT_TRIES =>
                {
                    tries += 1;
                }
                Err(why) => panic!("pebble {why}"),
            }
        }
    }

    fn launch(
        module: &Path,
        dir: tempfile::TempDir,
        http_port: u16,
        tls_port: u16,
    ) -> Result<Self, String> {
        let (port, management, dns_port, dns_management) =
            (free_port(), free_port(), free_port(), free_port());
        let dns_log = dir.path().join("challtestsrv.log");
        let mut dns = Command::new(binary("pebble-challtestsrv"))
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
            .args(["-dnsserver", &format!("127.0.0.1:{dns_port}")])
            .args(["-management", &format!("127.0.0.1:{dns_management}")])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", ""])
            .stdout(std::fs::File::create(&dns_log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("-challtestsrv does not start ({e})"))?;
        let answers = || TcpStream::connect(("127.0.0.1", dns_management)).is_ok();
        wait_ready(&mut dns, &dns_log, answers)?;
        let config = dir.path().join("pebble.json");
        let certs = module.join("test/certs/localhost");
        let json = serde_json::json!({ "pebble": {
            "listenAddress": format!("127.0.0.1:{port}"),
            "managementListenAddress": format!("127.0.0.1:{management}"),
            "certificate": certs.join("cert.pem"),
            "privateKey": certs.join("key.pem"),
            "httpPort": http_port,
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
            "retryAfter": { "authz": 1, "order": 1 },
            "keyAlgorithm": "ecdsa",
        }});
        std::fs::write(&config, json.to_string()).unwrap();
        let mut pebble = spawn(dir.path(), dns_port)?;
        let answers = || TcpStream::connect(("127.0.0.1", port)).is_ok();
        if let Err(why) = wait_ready(&mut pebble, &dir.path().join("pebble.log"), answers) {
            let _ = dns.kill();
            let _ = dns.wait();
            return Err(why);
        }
        Ok(Self {
            pebble,
            dns,
            port,
            management,
            dns_port,
            module: module.to_owned(),
            dir,
        })
    }

    /// Stops Pebble and starts it again on the same ports: it forgets every account,
    /// order and certificate, and issues from a new root.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start).
    pub fn restart(&mut self) {
        let _ = self.pebble.kill();
        let _ = self.pebble.wait();
        let port = self.port;
        let answers = || TcpStream::connect(("127.0.0.1", port)).is_ok();
        self.pebble =
            spawn(self.dir.path(), self.dns_port).unwrap_or_else(|why| panic!("pebble {why}"));
        let log = self.dir.path().join("pebble.log");
        wait_ready(&mut self.pebble, &log, answers).unwrap_or_else(|why| panic!("pebble {why}"));
    }

    /// Its ACME directory's URL, as `[tls.acme] directory` takes it.
    pub fn directory(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.port)
    }

    /// The PEM file of the CA that signed Pebble's own HTTPS certificate, for
    /// `[tls.acme] ca`.
    pub fn ca(&self) -> PathBuf {
        self.module.join("test/certs/pebble.minica.pem")
    }

    /// The root the certificates Pebble issues chain to (a new one each start), from
    /// its management port's `/roots/0`.
    ///
    /// # Panics
    ///
    /// When Pebble does not answer with a PEM certificate.
    pub fn issuing_root(&self) -> CertificateDer<'static> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(self.ca()).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(crate::transport::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let session = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", self.management)).unwrap();
        let mut stream = rustls::StreamOwned::new(session, tcp);
        stream
            .write_all(b"GET /roots/0 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        // Go closes without close_notify at times: what came before the end is whole.
        let _ = stream.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        let (_, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        CertificateDer::from_pem_slice(body.as_bytes()).expect("a PEM certificate")
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        for child in [&mut self.pebble, &mut self.dns] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts Pebble with the configuration in `dir`, asking `dns_port` for names.
fn spawn(dir: &Path, dns_port: u16) -> Result<Child, String> {
    Command::new(binary("pebble"))
        .arg("-config")
        .arg(dir.join("pebble.json"))
        .args(["-dnsserver", &format!("127.0.0.1:{dns_port}")])
        .env("PEBBLE_VA_NOSLEEP", "1")
        .env("PEBBLE_AUTHZREUSE", "0")
        .env("PEBBLE_WFE_NONCEREJECT", "0")
        .stdout(std::fs::File::create(dir.join("pebble.log")).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("does not start ({e})"))
}

/// What `go ARGS` prints, when Go runs.
fn go(args: &[&str]) -> Option<String> {
    let output = Command::new("go").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `program` from `PATH`, else where `go install` puts it.
fn binary(program: &str) -> PathBuf {
    let in_path = Command::new(program).arg("-version").output().is_ok();
    if in_path {
        return PathBuf::from(program);
    }
    let gopath = go(&["env", "GOPATH"]).unwrap_or_default();
    let first = gopath.split(':').next().unwrap_or_default();
    let installed = Path::new(first).join("bin").join(program);
    assert!(
        installed.is_file(),
        "{program} is not installed: scripts/test installs it \
         (go install github.com/letsencrypt/pebble/v2/cmd/{program}@latest)"
    );
    installed
}

/// Pebble's module in Go's module cache (the newest there): its test certificates.
fn module_dir() -> PathBuf {
    let cache = go(&["env", "GOMODCACHE"]).unwrap_or_default();
    let parent = Path::new(&cache).join("github.com/letsencrypt/pebble");
    let mut versions: Vec<_> = std::fs::read_dir(&parent)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("test/certs/pebble.minica.pem").is_file())
        .collect();
    versions.sort();
    versions.pop().unwrap_or_else(|| {
        panic!(
            "no Pebble module in {}: scripts/test installs it",
            parent.display()
        )
    })
}
