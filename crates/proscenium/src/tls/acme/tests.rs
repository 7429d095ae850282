//! ACME against Pebble, Let's Encrypt's test server, end to end: each test starts a
//! Pebble of its own and answers its challenges with the resolver the server uses
//! ([`Certificates`] behind a rustls `ServerConfig` made by [`Tls::new`]) or with
//! [`Http01Tokens`], on listeners of its own.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use super::*;
use crate::testing::{Pebble, free_port};
use crate::tls::{Tls, load_pair, store_paths};

const DOMAIN: &str = "acme.proscenium.test";

/// Paced for a test: checks and retries within a second.
const FAST: Timing = Timing {
    check_every: Duration::from_millis(200),
    retry_first: Duration::from_millis(200),
    retry_most: Duration::from_secs(1),
    order_within: Duration::from_secs(60),
};

/// Whether the test can run: without Go there is no Pebble, said loudly.
fn pebble_runs() -> bool {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let runs = Pebble::go_is_installed();
    if !runs {
        eprintln!("\n\n*** SKIPPED: `go` is not installed, so Pebble cannot run ***\n");
    }
    runs
}

fn spec(pebble: &Pebble, store: &Path, challenge: Challenge, renew_days: u64) -> TlsSpec {
    TlsSpec {
        store: Some(store.to_owned()),
        acme: Some(AcmeSpec {
            directory: pebble.directory(),
            email: Some("ops@proscenium.test".to_owned()),
            domains: vec![DOMAIN.to_owned()],
            challenge,
            ca: Some(pebble.ca()),
            renew_before: Duration::from_secs(renew_days * 86_400),
        }),
        ..TlsSpec::default()
    }
}

/// Polls `done` for up to 60 s.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "60 s without {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The stored certificate's bytes, once there is one.
fn stored_cert(spec: &TlsSpec) -> Option<Vec<u8>> {
    let (cert, _) = store_paths(&spec.store_dir(), &spec.acme.as_ref().unwrap().domains);
    std::fs::read(cert).ok()
}

/// A listener that serves each connection on a thread of its own, until dropped.
struct Responder {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Responder {
    fn bind() -> (TcpListener, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        (listener, port)
    }

    fn serve(listener: TcpListener, answer: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let answer = answer.clone();
                std::thread::spawn(move || answer(stream));
            }
        });
        Self { port, stop }
    }

    /// TLS handshakes resolved by `tls`'s certificates, as the server's are: what
    /// Pebble's TLS-ALPN-01 check needs.
    fn tls(listener: TcpListener, tls: Tls) -> Self {
        Self::serve(listener, move |mut tcp| {
            let mut session = rustls::ServerConnection::new(tls.config.clone()).unwrap();
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            while session.is_handshaking() {
                if session.complete_io(&mut tcp).is_err() {
                    return;
                }
            }
            session.send_close_notify();
            let _ = session.complete_io(&mut tcp);
        })
    }

    /// HTTP-01 answers from `tokens`, as the plain listener gives them.
    fn http(listener: TcpListener, tokens: Http01Tokens) -> Self {
        Self::serve(listener, move |mut tcp| {
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            let mut head = [0; 4096];
            let read = tcp.read(&mut head).unwrap_or(0);
            let head = String::from_utf8_lossy(&head[..read]);
            let path = head.split(' ').nth(1).unwrap_or_default();
            let token = path.strip_prefix("/.well-known/acme-challenge/");
            let answer = match token.and_then(|t| tokens.get(t)) {
                Some(body) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned(),
            };
            let _ = tcp.write_all(answer.as_bytes());
        })
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Checks the stored certificate as a client of the server would: for `DOMAIN`, its
/// chain verified up to Pebble's issuing root, its key readable by its owner alone.
fn assert_issued_by(pebble: &Pebble, spec: &TlsSpec) {
    let certs = Certificates::load(spec).unwrap();
    let loaded = certs.loaded();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].names, [DOMAIN]);
    let chain: &[CertificateDer<'_>] = &loaded[0].key.cert;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pebble.issuing_root()).unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        crate::tls::provider(),
    )
    .build()
    .unwrap();
    let name = ServerName::try_from(DOMAIN).unwrap();
    verifier
        .verify_server_cert(&chain[0], &chain[1..], &name, &[], UnixTime::now())
        .expect("the chain verifies against Pebble's root");
    let (_, key) = store_paths(&spec.store_dir(), &[DOMAIN.to_owned()]);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(key).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

/// The CA reaches a process other than the one that orders (another prefork worker):
/// it answers from the store.
#[test]
fn issue34_acme_obtains_a_certificate_over_tls_alpn_01_answered_by_another_process() {
    if !pebble_runs() {
        return;
    }
    let (listener, tls_port) = Responder::bind();
    let pebble = Pebble::start(free_port(), tls_port);
    let store = tempfile::tempdir().unwrap();
    let spec = spec(&pebble, store.path(), Challenge::TlsAlpn01, 30);
    let _other_process = Responder::tls(listener, Tls::new(&spec, true).unwrap().unwrap());
    let orderer = Arc::new(Certificates::load(&spec).unwrap());
    let acme = start_with(&spec, orderer.clone(), FAST).unwrap();
    wait_for("a stored certificate", || stored_cert(&spec).is_some());
    wait_for("the orderer serving it", || !orderer.loaded().is_empty());
    assert_issued_by(&pebble, &spec);
    assert_eq!(acme.failures(), 0);
    let answers = store.path().join("challenges/tls-alpn-01");
    assert_eq!(
        std::fs::read_dir(answers).unwrap().count(),
        0,
        "answers withdrawn"
    );
}

#[test]
fn issue34_acme_obtains_a_certificate_over_http_01() {
    if !pebble_runs() {
        return;
    }
    let (listener, http_port) = Responder::bind();
    let pebble = Pebble::start(http_port, free_port());
    let store = tempfile::tempdir().unwrap();
    let spec = spec(&pebble, store.path(), Challenge::Http01, 30);
    let _plain = Responder::http(listener, Http01Tokens::new(&spec));
    let certs = Arc::new(Certificates::load(&spec).unwrap());
    let _acme = start_with(&spec, certs, FAST).unwrap();
    wait_for("a stored certificate", || stored_cert(&spec).is_some());
    assert_issued_by(&pebble, &spec);
}

/// A stored certificate with less than `renew_before` left is ordered again; another
/// process sharing the store reloads the new one.
#[test]
fn issue34_acme_renews_a_certificate_near_its_end_and_every_process_reloads_it() {
    if !pebble_runs() {
        return;
    }
    let (listener, tls_port) = Responder::bind();
    let pebble = Pebble::start(free_port(), tls_port);
    let store = tempfile::tempdir().unwrap();
    let first_spec = spec(&pebble, store.path(), Challenge::TlsAlpn01, 30);
    let tls = Tls::new(&first_spec, true).unwrap().unwrap();
    let _responder = Responder::tls(listener, tls.clone());
    let first = start_with(&first_spec, tls.certs.clone(), FAST).unwrap();
    wait_for("a first certificate", || stored_cert(&first_spec).is_some());
    let issued = stored_cert(&first_spec).unwrap();
    drop(first);
    let other_process = Certificates::load(&first_spec).unwrap();
    assert_eq!(other_process.loaded().len(), 1);

    let renewing = spec_renewing_at_once(&first_spec);
    let _renewal = start_with(&renewing, tls.certs, FAST).unwrap();
    wait_for("a renewed certificate", || {
        stored_cert(&renewing).is_some_and(|cert| cert != issued)
    });
    wait_for("the other process reloading it", || {
        other_process.reload_if_changed()
    });
    let served = other_process.loaded()[0].key.cert[0].clone();
    let first_leaf = CertificateDer::pem_slice_iter(&issued)
        .next()
        .unwrap()
        .unwrap();
    assert_ne!(served, first_leaf, "the renewed certificate is served");
}

/// Nothing answers the CA's check: the order fails (logged), the stored certificate
/// stays and is served, and the order is tried again.
#[test]
fn issue34_acme_keeps_the_old_certificate_when_a_challenge_fails_and_tries_again() {
    if !pebble_runs() {
        return;
    }
    let pebble = Pebble::start(free_port(), free_port());
    let store = tempfile::tempdir().unwrap();
    let spec = spec(&pebble, store.path(), Challenge::TlsAlpn01, 30);
    let old = store_self_signed(&spec, 10);
    let certs = Arc::new(Certificates::load(&spec).unwrap());
    let acme = start_with(&spec, certs.clone(), FAST).unwrap();
    wait_for("a second failed order", || acme.failures() >= 2);
    assert_eq!(
        stored_cert(&spec).unwrap(),
        old,
        "the store keeps the old certificate"
    );
    assert_eq!(
        certs.loaded().len(),
        1,
        "the old certificate is still served"
    );
    let answers = store.path().join("challenges/tls-alpn-01");
    let left = std::fs::read_dir(answers).map_or(0, Iterator::count);
    assert!(
        left <= 1,
        "failed orders' answers are withdrawn ({left} left)"
    );
}

/// The CA forgot the stored account (Pebble restarted): the failed order drops it,
/// and the next one makes a new account and succeeds.
#[test]
fn issue34_acme_makes_a_new_account_when_the_ca_forgot_the_stored_one() {
    if !pebble_runs() {
        return;
    }
    let (listener, http_port) = Responder::bind();
    let mut pebble = Pebble::start(http_port, free_port());
    let store = tempfile::tempdir().unwrap();
    let spec = spec(&pebble, store.path(), Challenge::Http01, 30);
    let _plain = Responder::http(listener, Http01Tokens::new(&spec));
    let certs = Arc::new(Certificates::load(&spec).unwrap());
    let first = start_with(&spec, certs.clone(), FAST).unwrap();
    wait_for("a first certificate", || stored_cert(&spec).is_some());
    drop(first);
    let account = std::fs::read(store::account_path(store.path())).unwrap();
    pebble.restart();

    let renewing = spec_renewing_at_once(&spec);
    let issued = stored_cert(&spec).unwrap();
    let _acme = start_with(&renewing, certs, FAST).unwrap();
    wait_for("a certificate from the restarted CA", || {
        stored_cert(&spec).is_some_and(|cert| cert != issued)
    });
    let now = std::fs::read(store::account_path(store.path())).unwrap();
    assert_ne!(now, account, "a new account is stored");
    assert_issued_by(&pebble, &spec);
}

/// `spec` renewing any certificate Pebble issues (they live 90 days).
fn spec_renewing_at_once(spec: &TlsSpec) -> TlsSpec {
    let mut spec = spec.clone();
    if let Some(acme) = spec.acme.as_mut() {
        acme.renew_before = Duration::from_secs(100 * 86_400);
    }
    spec
}

/// Writes a self-signed certificate for `DOMAIN` with `days_left` of life to the store;
/// returns its PEM.
fn store_self_signed(spec: &TlsSpec, days_left: i64) -> Vec<u8> {
    let mut params = rcgen::CertificateParams::new(vec![DOMAIN.to_owned()]).unwrap();
    params.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(days_left);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_path, key_path) = store_paths(&spec.store_dir(), &[DOMAIN.to_owned()]);
    store::write_atomically(&key_path, key.serialize_pem().as_bytes(), store::SECRET).unwrap();
    store::write_atomically(&cert_path, cert.pem().as_bytes(), store::PUBLIC).unwrap();
    cert.pem().into_bytes()
}

#[test]
fn a_stored_certificate_is_ordered_again_once_less_than_renew_before_is_left() {
    let store = tempfile::tempdir().unwrap();
    let spec = TlsSpec {
        store: Some(store.path().to_owned()),
        ..TlsSpec::default()
    };
    store_self_signed(&spec, 10);
    let domains = [DOMAIN.to_owned()];
    let days = |n: u64| Duration::from_secs(n * 86_400);
    let now = SystemTime::now();
    assert!(!store::needs_order(store.path(), &domains, days(5), now));
    assert!(store::needs_order(store.path(), &domains, days(30), now));
    let more = [DOMAIN.to_owned(), "www.proscenium.test".to_owned()];
    assert!(
        store::needs_order(store.path(), &more, days(5), now),
        "a certificate that does not cover a new domain is ordered again"
    );
    assert!(
        load_pair(
            &store_paths(store.path(), &domains).0,
            &store_paths(store.path(), &domains).1
        )
        .is_ok()
    );
}

#[test]
fn wildcards_and_empty_domain_lists_are_refused_at_start() {
    let mut acme = AcmeSpec {
        directory: "https://acme.invalid/dir".to_owned(),
        email: None,
        domains: vec![],
        challenge: Challenge::TlsAlpn01,
        ca: None,
        renew_before: Duration::from_secs(86_400),
    };
    assert!(check(&acme).is_err());
    acme.domains = vec!["*.proscenium.test".to_owned()];
    assert!(check(&acme).unwrap_err().contains("DNS-01"));
    acme.domains = vec![DOMAIN.to_owned()];
    assert!(check(&acme).is_ok());
}
