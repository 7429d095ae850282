//! HTTPS through the binary (issue 34): CA files checked at start, certificates
//! reloaded on SIGHUP and when their files change (prefork workers too), and ACME
//! certificates shared by prefork workers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::Duration;

use super::{children, proscenium, signal, start, start_on, wait_exit, within};

/// Issue 34: a CA file the configuration names (`[client] ca`, `[redis] ca`,
/// `[feeds] ca`) that is missing or holds no certificate stops the start with exit 2
/// and one line naming the key and the file — not a first request failing later.
#[test]
fn issue34_a_missing_or_garbled_ca_file_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let garbled = dir.path().join("garbled.pem");
    std::fs::write(&garbled, "not a certificate\n").unwrap();
    let missing = dir.path().join("missing.pem");
    let file = dir.path().join("tls.toml");
    for table in ["client", "redis", "feeds"] {
        for ca in [&missing, &garbled] {
            std::fs::write(&file, format!("[{table}]\nca = {:?}\n", ca.display())).unwrap();
            let out = proscenium()
                .args(["config", "--config", file.to_str().unwrap()])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{table}: {stderr}");
            assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
            let key = format!("{table}.ca");
            for part in [key.as_str(), ca.to_str().unwrap()] {
                assert!(stderr.contains(part), "{part} in {stderr}");
            }
        }
    }
}

/// Asks for `path` over TLS, trusting `roots`, as a client asking for `name`; `None`
/// when the handshake fails (no certificate for `name` that `roots` vouch for).
fn try_get_tls(
    addr: &str,
    roots: rustls::RootCertStore,
    name: &str,
    path: &str,
) -> Option<(String, Vec<String>)> {
    let mut stream = handshake(addr, roots, name, &[])?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    // A close without close_notify is the server's to choose after a whole answer.
    let _ = stream.read_to_end(&mut out);
    let names = proscenium::testing::dns_names(&stream.conn.peer_certificates().unwrap()[0]);
    Some((String::from_utf8_lossy(&out).into_owned(), names))
}

/// A TLS connection to `addr` that trusts `roots`, asks for `name` and offers `alpn`,
/// its handshake done; `None` when the handshake fails.
pub(super) fn handshake(
    addr: &str,
    roots: rustls::RootCertStore,
    name: &str,
    alpn: &[&[u8]],
) -> Option<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    proscenium::tls::provider();
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).ok()?;
    }
    Some(rustls::StreamOwned::new(conn, tcp))
}

/// A directory with `f.txt`, and certificates of a test CA's written as `site.pem` and
/// `site.key` (by `write`: key then certificate, each whole, so a reader sees a pair or
/// a mismatch it refuses, keeping what it had, never half a file).
pub(super) struct Site {
    dir: tempfile::TempDir,
    certs: tempfile::TempDir,
    ca: proscenium::testing::TestCa,
}

impl Site {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
        Self {
            dir,
            certs: tempfile::tempdir().unwrap(),
            ca: proscenium::testing::TestCa::new(),
        }
    }

    pub(super) fn write(&self, names: &[&str]) {
        let leaf = self.ca.leaf(names);
        for (file, text) in [("site.key", &leaf.key), ("site.pem", &leaf.cert)] {
            let next = self.certs.path().join("next");
            std::fs::write(&next, text).unwrap();
            std::fs::rename(&next, self.certs.path().join(file)).unwrap();
        }
    }

    /// Serves the site over TLS with `args`.
    pub(super) fn serve(&self, args: &[&str]) -> (Child, String, String) {
        let cert = self.certs.path().join("site.pem");
        let key = self.certs.path().join("site.key");
        let mut all = vec![
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ];
        all.extend(args);
        start(self.dir.path(), &all)
    }

    /// The site's directory.
    pub(super) fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// A TLS connection to `addr` asking for `localhost` and offering `alpn`, trusting
    /// the site's CA.
    pub(super) fn connect(
        &self,
        addr: &str,
        alpn: &[&[u8]],
    ) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
        handshake(addr, self.roots(), "localhost", alpn).expect("a TLS handshake")
    }

    /// The site's CA, as the roots a client trusts.
    fn roots(&self) -> rustls::RootCertStore {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(self.ca.pem().as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        roots
    }

    /// Whether a new connection is answered and presented the certificate naming
    /// `name`.
    fn presents(&self, addr: &str, name: &str) -> bool {
        let (answer, names) =
            try_get_tls(addr, self.roots(), "localhost", "/f.txt").expect("a TLS handshake");
        answer.ends_with("same file") && names.contains(&name.to_owned())
    }
}

#[test]
fn issue34_sighup_reloads_the_certificates_and_the_server_serves_on() {
    let site = Site::new();
    site.write(&["localhost", "v1.test"]);
    let (mut child, addr, _) = site.serve(&["--loops", "1"]);
    assert!(site.presents(&addr, "v1.test"));
    site.write(&["localhost", "v2.test"]);
    signal(&child, "HUP");
    within(60, "the new certificate is served", || {
        site.presents(&addr, "v2.test")
    });
    signal(&child, "HUP");
    assert!(
        site.presents(&addr, "v2.test"),
        "a second SIGHUP changes nothing"
    );
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

#[test]
fn issue34_prefork_workers_serve_https_and_each_reloads_a_changed_certificate() {
    let site = Site::new();
    site.write(&["localhost", "v1.test"]);
    let (mut child, addr, line) = site.serve(&["--workers", "2"]);
    assert!(line.contains(" on https://"), "{line}");
    assert!(site.presents(&addr, "v1.test"));
    // Every worker watches the files: ten connections in a row all see the new one.
    site.write(&["localhost", "v2.test"]);
    within(60, "both workers serve the new certificate", || {
        (0..10).all(|_| site.presents(&addr, "v2.test"))
    });
    // A rolling restart on SIGHUP: its new workers serve HTTPS as the old did.
    let before_hup = children(child.id());
    signal(&child, "HUP");
    within(60, "the workers are replaced", || {
        let now = children(child.id());
        now.len() == 2 && now.iter().all(|pid| !before_hup.contains(pid))
    });
    assert!(site.presents(&addr, "v2.test"));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}

/// Issue 34: prefork workers share one ACME store: one of them orders (it holds the
/// store's lock), Pebble checks TLS-ALPN-01 on whichever worker its connection reaches
/// (each answers from the store), and every worker serves the certificate stored.
#[test]
fn issue34_prefork_workers_obtain_an_acme_certificate_and_all_serve_it() {
    use proscenium::testing::{Pebble, free_port};
    if !Pebble::go_is_installed() {
        eprintln!("\n\n*** SKIPPED: `go` is not installed, so Pebble cannot run ***\n");
        return;
    }
    const DOMAIN: &str = "acme.proscenium.test";
    let (http_port, tls_port) = (free_port(), free_port());
    let pebble = Pebble::start(http_port, tls_port);
    let site = tempfile::tempdir().unwrap();
    std::fs::write(site.path().join("f.txt"), "same file").unwrap();
    let state = tempfile::tempdir().unwrap();
    let config = state.path().join("proscenium.toml");
    std::fs::write(
        &config,
        format!(
            "[tls]\nstore = {:?}\n\n[tls.acme]\ndirectory = {:?}\ndomains = [{DOMAIN:?}]\nca = {:?}\n",
            state.path().join("store"),
            pebble.directory(),
            pebble.ca(),
        ),
    )
    .unwrap();
    let bind = format!("127.0.0.1:{tls_port}");
    let args = ["--workers", "2", "--config", config.to_str().unwrap()];
    let (mut child, addr, line) = start_on(site.path(), &bind, &args);
    assert!(line.contains(" on https://"), "{line}");
    let root = pebble.issuing_root();
    let roots = || {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root.clone()).unwrap();
        roots
    };
    let served = || {
        try_get_tls(&addr, roots(), DOMAIN, "/f.txt").is_some_and(|(answer, names)| {
            answer.ends_with("same file") && names.contains(&DOMAIN.to_owned())
        })
    };
    within(120, "a certificate Pebble issued is served", served);
    // The worker that did not order takes the certificate from the store when it
    // looks again (each second, later on a busy machine): then ten connections in a
    // row, which reach both workers, are all served with it.
    within(120, "every worker serves it", || (0..10).all(|_| served()));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}
