//! ACME against the real server: Pebble (Let's Encrypt's test CA) checks TLS-ALPN-01 on
//! the server's TLS port, which answers from the store another process's ACME task
//! wrote its answer to, then serves the certificate that task stored; and the server
//! orders by itself, answering HTTP-01 on its plain listener — under every model.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proscenium::App;
use proscenium::testing::{Pebble, free_port};
use proscenium::tls::{AcmeSpec, Certificates, Challenge, PlainServes, PlainSpec, TlsSpec};
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
    support::in_process("certificates Pebble issues for this run");
    serves_a_certificate_obtained_over(Challenge::TlsAlpn01, Orderer::AnotherProcess);
}

#[test]
fn issue34_the_server_orders_by_itself_over_http_01_on_its_plain_listener() {
    support::in_process("certificates Pebble issues for this run");
    serves_a_certificate_obtained_over(Challenge::Http01, Orderer::TheServer);
}

/// Who orders the certificate.
#[derive(Clone, Copy)]
enum Orderer {
    /// An ACME task of the test's own, sharing the server's store (as another process
    /// would): the server answers the challenge from the store.
    AnotherProcess,
    /// The server's own ACME task alone.
    TheServer,
}

/// Pebble checks `challenge` against the server, the certificate is ordered by
/// `orderer`, and the server then serves it over HTTPS.
fn serves_a_certificate_obtained_over(challenge: Challenge, orderer: Orderer) {
    if !Pebble::go_is_installed() {
        eprintln!("\n\n*** SKIPPED: `go` is not installed, so Pebble cannot run ***\n");
        return;
    }
    let (http_port, tls_port) = (free_port(), free_port());
    let pebble = Pebble::start(http_port, tls_port);
    let store = tempfile::tempdir().unwrap();
    let spec = TlsSpec {
        store: Some(store.path().to_owned()),
        acme: Some(AcmeSpec {
            directory: pebble.directory(),
            email: None,
            domains: vec![DOMAIN.to_owned()],
            challenge,
            ca: Some(pebble.ca()),
            renew_before: Duration::from_secs(30 * 86_400),
        }),
        plain: Some(PlainSpec {
            bind: SocketAddr::from(([127, 0, 0, 1], http_port)),
            serve: PlainServes::Redirect,
        }),
        ..TlsSpec::default()
    };
    let app = App::new().get("/", || async { "over an ACME certificate" });
    let server = support::start_with(app, |config| {
        config.bind = SocketAddr::from(([127, 0, 0, 1], tls_port));
        config.tls = spec.clone();
    });
    let _acme = match orderer {
        Orderer::AnotherProcess => {
            let certs = Arc::new(Certificates::load(&spec).unwrap());
            Some(proscenium::tls::acme::start(&spec, certs).expect("an ACME task"))
        }
        Orderer::TheServer => None,
    };

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
