//! ACME against the real server: Pebble (Let's Encrypt's test CA) checks TLS-ALPN-01 on
//! the server's TLS port, which answers from the store another process's ACME task
//! wrote its answer to, then serves the certificate that task stored — under every
//! model (under prefork, whichever worker the CA reaches).

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proscenium::App;
use proscenium::testing::{Pebble, free_port};
use proscenium::tls::{AcmeSpec, Certificates, Challenge, TlsSpec};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use crate::support;

const DOMAIN: &str = "acme.proscenium.test";

/// Whether the server completes a handshake for `DOMAIN` with a certificate `config`
/// trusts.
fn handshakes(addr: SocketAddr, config: &Arc<ClientConfig>) -> bool {
    let name = ServerName::try_from(DOMAIN).unwrap();
    let mut conn = ClientConnection::new(config.clone(), name).unwrap();
    let Ok(mut tcp) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
    while conn.is_handshaking() {
        if conn.complete_io(&mut tcp).is_err() {
            return false;
        }
    }
    true
}

#[test]
fn issue34_the_server_answers_tls_alpn_01_from_the_store_and_serves_the_certificate_obtained() {
    if !Pebble::go_is_installed() {
        eprintln!("\n\n*** SKIPPED: `go` is not installed, so Pebble cannot run ***\n");
        return;
    }
    let port = free_port();
    let pebble = Pebble::start(free_port(), port);
    let store = tempfile::tempdir().unwrap();
    let spec = TlsSpec {
        store: Some(store.path().to_owned()),
        acme: Some(AcmeSpec {
            directory: pebble.directory(),
            email: None,
            domains: vec![DOMAIN.to_owned()],
            challenge: Challenge::TlsAlpn01,
            ca: Some(pebble.ca()),
            renew_before: Duration::from_secs(30 * 86_400),
        }),
        ..TlsSpec::default()
    };
    let app = App::new().get("/", || async { "over an ACME certificate" });
    let server = support::start_with(app, |config| {
        config.bind = SocketAddr::from(([127, 0, 0, 1], port));
        config.tls = spec.clone();
    });
    let orderer = Arc::new(Certificates::load(&spec).unwrap());
    let _acme = proscenium::tls::acme::start(&spec, orderer).expect("an ACME task");

    let mut roots = RootCertStore::empty();
    roots.add(pebble.issuing_root()).unwrap();
    let client = Arc::new(
        ClientConfig::builder_with_provider(proscenium::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !handshakes(server.local_addr(), &client) {
        assert!(
            Instant::now() < deadline,
            "the server serves a certificate Pebble issued within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut https = crate::support::tls::connect(server.local_addr(), DOMAIN, client);
    let answer = https.get("/").response();
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), "over an ACME certificate");
}
