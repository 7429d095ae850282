//! Certificates of a test's own — a CA, and leaves it signs for the names a test
//! server answers to — and an HTTPS server on a thread that records what it is sent:
//! what a test of a TLS client (the HTTP client, a push service's caller) talks to.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ProtocolVersion, ServerConfig, ServerConnection, StreamOwned};

/// A certificate authority of a test's own.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate a [`TestCa`] signed, and its key, both PEM.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The certificate.
    pub cert: String,
    /// Its private key.
    pub key: String,
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    /// Makes one (an ECDSA P-256 key and a self-signed certificate).
    ///
    /// # Panics
    ///
    /// When rcgen cannot make a key or a certificate.
    pub fn new() -> Self {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "Proscenium test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("a CA key");
        Self {
            issuer: CertifiedIssuer::self_signed(params, key).expect("a CA certificate"),
        }
    }

    /// Returns its certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// Writes its certificate to `dir/ca.pem` and returns that path.
    ///
    /// # Panics
    ///
    /// When the file cannot be written.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.pem()).expect("the CA's file");
        path
    }

    /// Signs a certificate for `names` (host names or IP addresses).
    ///
    /// # Panics
    ///
    /// When rcgen cannot make a key or a certificate.
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        self.sign(names, false)
    }

    /// Signs a certificate for `names` that expired yesterday.
    ///
    /// # Panics
    ///
    /// As [`leaf`](Self::leaf).
    pub fn expired_leaf(&self, names: &[&str]) -> Leaf {
        self.sign(names, true)
    }

    fn sign(&self, names: &[&str], expired: bool) -> Leaf {
        let names: Vec<String> = names.iter().map(|&name| name.to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("names for a certificate");
        if expired {
            let now = time::OffsetDateTime::now_utc();
            params.not_before = now - time::Duration::days(30);
            params.not_after = now - time::Duration::days(1);
        }
        let key = KeyPair::generate().expect("a leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("a leaf");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// The DNS names of a certificate (DER): what a test reads of the one a server
/// presented.
///
/// # Panics
///
/// When `der` is no X.509 certificate.
pub fn dns_names(der: &[u8]) -> Vec<String> {
    crate::tls::certs::describe(&CertificateDer::from(der))
        .expect("an X.509 certificate")
        .0
}

impl Leaf {
    /// Writes the certificate and the key to `dir/NAME.pem` and `dir/NAME.key`;
    /// returns both paths.
    ///
    /// # Panics
    ///
    /// When the files cannot be written.
    pub fn write(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let (cert, key) = (
            dir.join(format!("{name}.pem")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&cert, &self.cert).expect("the certificate's file");
        std::fs::write(&key, &self.key).expect("the key's file");
        (cert, key)
    }

    /// A rustls server configuration presenting this certificate.
    fn server_config(&self) -> Arc<ServerConfig> {
        crate::transport::provider();
        let chain = CertificateDer::pem_slice_iter(self.cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("the leaf parses");
        let key = PrivateKeyDer::from_pem_slice(self.key.as_bytes()).expect("the key parses");
        let config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("a server configuration");
        Arc::new(config)
    }
}

/// A request an [`HttpsServer`] was sent, with the TLS version it came over.
#[derive(Debug, Clone)]
pub struct Received {
    /// The TLS version negotiated.
    pub version: Option<ProtocolVersion>,
    /// The request line and headers.
    pub head: String,
    /// The body (as long as its `content-length`).
    pub body: Vec<u8>,
}

/// An HTTPS server on loopback, on threads of its own, that answers every request
/// `200 ok` and records it. Its threads outlive it (as a test's do).
pub struct HttpsServer {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl HttpsServer {
    /// Starts one presenting `leaf` on a free port.
    ///
    /// # Panics
    ///
    /// When it cannot bind or start its thread.
    pub fn start(leaf: &Leaf) -> Self {
        let config = leaf.server_config();
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the HTTPS server");
        let addr = listener.local_addr().expect("its address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let recording = Arc::clone(&received);
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let (config, recording) = (Arc::clone(&config), Arc::clone(&recording));
                // A failed handshake (a client refusing the certificate) ends its
                // connection alone.
                std::thread::spawn(move || serve(config, tcp, &recording));
            }
        });
        Self { addr, received }
    }

    /// Returns the address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Returns the requests it was sent so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().clone()
    }
}

/// Answers the requests of one connection, until it closes or fails.
fn serve(
    config: Arc<ServerConfig>,
    tcp: TcpStream,
    received: &Mutex<Vec<Received>>,
) -> io::Result<()> {
    tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut tls = StreamOwned::new(
        ServerConnection::new(config).map_err(io::Error::other)?,
        tcp,
    );
    while let Some((head, body)) = read_request(&mut tls)? {
        received.lock().push(Received {
            version: tls.conn.protocol_version(),
            head,
            body,
        });
        tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")?;
        tls.flush()?;
    }
    Ok(())
}

/// Reads one request's head and body; `None` when the connection closes first.
fn read_request(from: &mut impl Read) -> io::Result<Option<(String, Vec<u8>)>> {
    let mut head = Vec::new();
    let mut byte = [0];
    while !head.ends_with(b"\r\n\r\n") {
        match from.read(&mut byte) {
            Ok(0) => return Ok(None),
            Ok(_) => head.push(byte[0]),
            // A socket read with a timeout is not restarted after a signal handler
            // (signal(7)), and a test process may handle SIGCHLD.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    from.read_exact(&mut body)?;
    Ok(Some((head, body)))
}
