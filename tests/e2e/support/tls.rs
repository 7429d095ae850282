//! TLS for tests: a certificate authority of the test's own, certificates it signs
//! written as PEM files, and a client that trusts it.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proscenium::testing::TestCa;
use rustls::pki_types::ServerName;
use rustls::pki_types::pem::PemObject;
use rustls::{
    ClientConfig, ClientConnection, RootCertStore, StreamOwned, SupportedProtocolVersion,
};

use super::{Client, Wire};

/// A client's TLS stream.
pub type TlsStream = StreamOwned<ClientConnection, TcpStream>;

impl Wire for TlsStream {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }
}

/// A test's certificate authority (`proscenium::testing::TestCa`), its certificates
/// written below `dir`.
pub struct Authority {
    ca: TestCa,
    pub dir: tempfile::TempDir,
}

/// A certificate and key as files.
#[derive(Debug, Clone)]
pub struct Files {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Authority {
    pub fn new() -> Self {
        Self {
            ca: TestCa::new(),
            dir: tempfile::tempdir().expect("a directory for certificates"),
        }
    }

    /// Signs a certificate for `names` (an IP address as well as DNS names), written
    /// whole (a reader sees the old files or the new) as `FILE.pem` and `FILE.key`.
    pub fn issue(&self, file: &str, names: &[&str]) -> Files {
        let leaf = self.ca.leaf(names);
        let files = Files {
            cert: self.dir.path().join(format!("{file}.pem")),
            key: self.dir.path().join(format!("{file}.key")),
        };
        write_atomically(&files.key, &leaf.key);
        write_atomically(&files.cert, &leaf.cert);
        files
    }

    /// A client config trusting this authority alone, offering `alpn`.
    pub fn client(&self, alpn: &[&[u8]]) -> Arc<ClientConfig> {
        self.client_of(alpn, rustls::DEFAULT_VERSIONS)
    }

    /// A client config trusting this authority alone, offering `alpn` over `versions`.
    pub fn client_of(
        &self,
        alpn: &[&[u8]],
        versions: &[&'static SupportedProtocolVersion],
    ) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(self.ca.pem().as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let mut config = ClientConfig::builder_with_protocol_versions(versions)
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    /// Connects to `addr` over TLS as a client asking for `name`, the handshake done.
    pub fn connect(&self, addr: SocketAddr, name: &str) -> Client<TlsStream> {
        connect(addr, name, self.client(&[b"http/1.1"]))
    }
}

/// Connects to `addr` over TLS with `config`, asking for `name`; the handshake done.
pub fn connect(addr: SocketAddr, name: &str, config: Arc<ClientConfig>) -> Client<TlsStream> {
    let server = ServerName::try_from(name.to_owned()).expect("a server name");
    let conn = ClientConnection::new(config, server).expect("a client session");
    let mut stream = StreamOwned::new(conn, TcpStream::connect(addr).expect("connect"));
    stream
        .sock
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    while stream.conn.is_handshaking() {
        stream
            .conn
            .complete_io(&mut stream.sock)
            .expect("the TLS handshake completes");
    }
    Client::over(stream)
}

/// Writes `text` to `path` whole: a reader sees the old file or the new one.
pub fn write_atomically(path: &Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, path).unwrap();
}

/// The names on the certificate the server presented.
pub fn presented_names(stream: &TlsStream) -> Vec<String> {
    proscenium::testing::dns_names(&stream.conn.peer_certificates().expect("a certificate")[0])
}
