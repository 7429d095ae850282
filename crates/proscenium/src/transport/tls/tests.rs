//! The session against a rustls client over an in-memory socket: handshakes in TLS
//! 1.3 and 1.2, requests and answers across many records, a key update, an alert on
//! a corrupt record, a close_notify — and no buffer held between requests.

use std::io::{self, Read, Write};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, SupportedProtocolVersion};

use super::*;
use crate::testing::TestCa;
use crate::tls::{Tls, TlsSpec};

/// The server's end of an in-memory connection: what the client sent, for the
/// session to read, and what the session wrote, for the client.
#[derive(Default)]
struct Pipe {
    to_server: Vec<u8>,
    to_client: Vec<u8>,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.to_server.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.to_server.len());
        buf[..n].copy_from_slice(&self.to_server[..n]);
        self.to_server.drain(..n);
        Ok(n)
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.to_client.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Peek for Pipe {
    fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        if self.to_server.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.to_server.len());
        buf[..n].copy_from_slice(&self.to_server[..n]);
        Ok(n)
    }
}

/// A test CA, and a server configuration as `Tls::new` makes it presenting a
/// certificate it signed for `localhost`.
fn server_config() -> (TestCa, Arc<ServerConfig>) {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = ca.leaf(&["localhost"]).write(dir.path(), "site");
    let spec = TlsSpec {
        cert: Some(cert),
        key: Some(key),
        ..TlsSpec::default()
    };
    let tls = Tls::new(&spec, false).unwrap().unwrap();
    (ca, tls.config)
}

/// A client and a server session over a [`Pipe`], the handshake done.
struct Pair {
    client: ClientConnection,
    server: Box<Session>,
    pipe: Pipe,
}

impl Pair {
    /// Shakes hands in `version`.
    fn new(version: &'static SupportedProtocolVersion) -> Self {
        let (ca, config) = server_config();
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca.pem().as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let client = ClientConfig::builder_with_provider(crate::transport::provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        let mut pair = Self {
            client: ClientConnection::new(Arc::new(client), name).unwrap(),
            server: session(&config).unwrap(),
            pipe: Pipe::default(),
        };
        while pair.client.is_handshaking() || pair.server.is_handshaking() {
            pair.deliver_to_server();
            let read = pair.server_reads(usize::MAX);
            assert!(read.is_empty(), "no plaintext in a handshake");
            pair.deliver_to_client().unwrap();
        }
        assert_eq!(pair.server.conn.protocol_version(), Some(version.version));
        pair
    }

    /// Moves what the client has encrypted to the server's end.
    fn deliver_to_server(&mut self) {
        while self.client.wants_write() {
            self.client.write_tls(&mut self.pipe.to_server).unwrap();
        }
    }

    /// Gives the client what the server wrote, decrypted.
    fn deliver_to_client(&mut self) -> Result<Vec<u8>, rustls::Error> {
        let mut sent = &std::mem::take(&mut self.pipe.to_client)[..];
        let mut plain = Vec::new();
        while !sent.is_empty() {
            self.client.read_tls(&mut sent).unwrap();
            self.client.process_new_packets()?;
            let _ = self.client.reader().read_to_end(&mut plain);
        }
        Ok(plain)
    }

    /// Reads the server's plaintext, `max` bytes at a time, until it would block.
    fn server_reads(&mut self, max: usize) -> Vec<u8> {
        let mut got = BytesMut::new();
        loop {
            match read(&mut self.server, &mut self.pipe, &mut got, max) {
                Ok(n) => assert!(n > 0 && n <= max, "{n} bytes read, {max} at most"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return got.to_vec(),
                Err(e) => panic!("the server's read fails: {e}"),
            }
        }
    }

    /// Sends `bytes` from the server, whole.
    fn server_sends(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = send(&mut self.server, bytes).unwrap();
            assert!(n > 0 && n <= SEND_LIMIT);
            bytes = &bytes[n..];
            flush(&mut self.server, &mut self.pipe).unwrap();
        }
    }
}

const VERSIONS: [&SupportedProtocolVersion; 2] = [&rustls::version::TLS13, &rustls::version::TLS12];

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn a_session_between_requests_holds_no_buffer() {
    for version in VERSIONS {
        let mut pair = Pair::new(version);
        pair.client
            .writer()
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .unwrap();
        pair.deliver_to_server();
        assert_eq!(pair.server_reads(8192), b"GET / HTTP/1.1\r\n\r\n");
        pair.server_sends(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        let answer = pair.deliver_to_client().unwrap();
        assert!(answer.starts_with(b"HTTP/1.1 200 OK"));
        assert!(!has_plaintext(&mut pair.server));
        trim(&mut pair.server);
        assert_eq!(
            pair.server.held(),
            0,
            "{:?}: {:?}",
            version.version,
            pair.server
        );
    }
}

#[test]
fn large_requests_and_answers_cross_many_records_whole() {
    for version in VERSIONS {
        let mut pair = Pair::new(version);
        let request = pattern(200 * 1024);
        let mut read = Vec::new();
        for piece in request.chunks(40_000) {
            pair.client.writer().write_all(piece).unwrap();
            pair.deliver_to_server();
            // Read in pieces smaller than a record: the rest of each is kept for the
            // next.
            read.extend(pair.server_reads(1000));
        }
        assert!(read == request, "{:?}", version.version);
        let answer = pattern(300 * 1024 + 17);
        pair.server_sends(&answer);
        assert!(
            pair.deliver_to_client().unwrap() == answer,
            "{:?}",
            version.version
        );
        trim(&mut pair.server);
        assert_eq!(pair.server.held(), 0);
    }
}

#[test]
fn pull_keeps_the_plaintext_for_the_next_read() {
    let mut pair = Pair::new(&rustls::version::TLS13);
    pair.client.writer().write_all(b"pipelined").unwrap();
    pair.deliver_to_server();
    assert!(!has_plaintext(&mut pair.server));
    assert!(pull(&mut pair.server, &mut pair.pipe).unwrap());
    assert!(has_plaintext(&mut pair.server));
    assert_eq!(pair.server_reads(4), b"pipelined");
    assert!(matches!(
        pull(&mut pair.server, &mut pair.pipe),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock
    ));
}

#[test]
fn a_key_update_from_the_client_keeps_traffic_going_both_ways() {
    let mut pair = Pair::new(&rustls::version::TLS13);
    // The client's new keys, and a request that the server update its own.
    pair.client.refresh_traffic_keys().unwrap();
    pair.client.writer().write_all(b"after the update").unwrap();
    pair.deliver_to_server();
    assert_eq!(pair.server_reads(8192), b"after the update");
    // The answer decrypts only if the server's key update went before it.
    pair.server_sends(b"answered");
    assert_eq!(pair.deliver_to_client().unwrap(), b"answered");
}

#[test]
fn a_corrupt_record_is_answered_with_an_alert_and_every_read_fails() {
    for version in VERSIONS {
        let mut pair = Pair::new(version);
        // Application data that no key decrypts.
        pair.pipe.to_server.extend([23, 3, 3, 0, 40]);
        pair.pipe.to_server.extend([0x5a; 40]);
        let failed = read(&mut pair.server, &mut pair.pipe, &mut BytesMut::new(), 100);
        assert_eq!(failed.unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            pair.deliver_to_client(),
            Err(rustls::Error::AlertReceived(
                rustls::AlertDescription::BadRecordMac
            )),
            "{:?}",
            version.version
        );
        let again = read(&mut pair.server, &mut pair.pipe, &mut BytesMut::new(), 100);
        assert_eq!(again.unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(
            has_plaintext(&mut pair.server),
            "the failure is there to read"
        );
    }
}

#[test]
fn a_close_notify_ends_reading_after_the_plaintext_before_it() {
    let mut pair = Pair::new(&rustls::version::TLS13);
    pair.client.writer().write_all(b"last words").unwrap();
    pair.client.send_close_notify();
    pair.deliver_to_server();
    let mut got = BytesMut::new();
    assert_eq!(
        read(&mut pair.server, &mut pair.pipe, &mut got, 100).unwrap(),
        10
    );
    assert_eq!(&got[..], b"last words");
    assert!(
        has_plaintext(&mut pair.server),
        "the close is there to read"
    );
    assert_eq!(
        read(&mut pair.server, &mut pair.pipe, &mut got, 100).unwrap(),
        0
    );
    // The server may still answer, and close in turn.
    pair.server_sends(b"bye");
    close(&mut pair.server);
    flush(&mut pair.server, &mut pair.pipe).unwrap();
    assert_eq!(pair.deliver_to_client().unwrap(), b"bye");
    assert!(pair.client.process_new_packets().unwrap().peer_has_closed());
}

#[test]
fn plain_http_on_the_tls_port_is_answered_in_plain_text() {
    let (_, config) = server_config();
    let mut server = session(&config).unwrap();
    let mut pipe = Pipe::default();
    pipe.to_server.extend(b"GET / HTTP/1.1\r\n\r\n");
    let refused = read(&mut server, &mut pipe, &mut BytesMut::new(), 100);
    assert_eq!(refused.unwrap_err().kind(), io::ErrorKind::InvalidData);
    assert!(pipe.to_client.starts_with(b"HTTP/1.1 400 Bad Request\r\n"));
}
