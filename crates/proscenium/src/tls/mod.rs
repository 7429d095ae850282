//! HTTPS: the server's TLS (rustls on aws-lc-rs), its certificates — files chosen by
//! SNI and reloaded when they change or on SIGHUP, or obtained by ACME. The settings
//! of `[tls]` ([`TlsSpec`] and its parts) are plain data in `config`, re-exported here.
//!
//! The bytes of a TLS connection are read and written by `transport`; this module
//! makes what it needs: one [`ServerConfig`] per server, whose certificate resolver is
//! [`Certificates`].
//!
//! ```no_run
//! let config: proscenium::Config =
//!     toml::from_str("[tls]\ncert = \"site.pem\"\nkey = \"site.key\"").unwrap();
//! let tls = proscenium::tls::Tls::new(&config.tls, true).unwrap();
//! assert!(tls.is_some());
//! ```

pub mod acme;
pub(crate) mod certs;
pub(crate) mod plain;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;

pub(crate) use self::certs::certified_key;
pub use self::certs::{CertError, Certificates, Loaded, from_parts, load_pair};
pub use crate::config::{AcmeSpec, CertFiles, Challenge, PlainServes, PlainSpec, TlsSpec};
pub use crate::transport::{ACME_TLS_ALPN, provider};

/// How often the certificates' files are looked at for a change.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Resumed sessions remembered by a server (by ID, for TLS 1.2 clients without
/// tickets); tickets need no memory on the server.
const SESSION_CACHE: usize = 4096;

/// A server's TLS: its rustls config and its certificates.
#[derive(Debug, Clone)]
pub struct Tls {
    /// What every connection's session is made from.
    pub config: Arc<ServerConfig>,
    /// The certificates `config` resolves to, reloadable.
    pub certs: Arc<Certificates>,
}

impl Tls {
    /// Loads what `spec` names; `None` when it names nothing (plain HTTP). ALPN offers
    /// `h2` first when `http2`, then `http/1.1`.
    pub fn new(spec: &TlsSpec, http2: bool) -> Result<Option<Self>, CertError> {
        if !spec.enabled() {
            return Ok(None);
        }
        let certs = Arc::new(Certificates::load(spec)?);
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| CertError {
                path: PathBuf::new(),
                why: e.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(certs.clone());
        if http2 {
            config.alpn_protocols.push(crate::http::h2::ALPN.to_vec());
        }
        config.alpn_protocols.push(b"http/1.1".to_vec());
        if spec.acme.is_some() {
            config.alpn_protocols.push(ACME_TLS_ALPN.to_vec());
        }
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
        if let Ok(ticketer) = rustls::crypto::aws_lc_rs::Ticketer::new() {
            config.ticketer = ticketer;
        }
        // Answers are written whole by the connection; rustls need not hold more.
        config.send_half_rtt_data = false;
        Ok(Some(Self {
            config: Arc::new(config),
            certs,
        }))
    }

    /// Starts the thread that reloads the certificates when their files change, for
    /// as long as the process lives.
    pub fn watch(&self) {
        let certs = Arc::downgrade(&self.certs);
        let started = std::thread::Builder::new()
            .name("proscenium-tls-watch".to_owned())
            .spawn(move || {
                while let Some(certs) = certs.upgrade() {
                    certs.reload_if_changed();
                    drop(certs);
                    std::thread::sleep(WATCH_EVERY);
                }
            });
        if let Err(e) = started {
            tracing::error!("TLS certificates will not be reloaded when they change: {e}");
        }
    }
}

/// Where ACME keeps the certificate for `domains` below `store`: the chain and key.
pub fn store_paths(store: &Path, domains: &[String]) -> (PathBuf, PathBuf) {
    let name = domains.first().map_or("default", String::as_str);
    let dir = store.join(name.replace('*', "_wildcard"));
    (dir.join("cert.pem"), dir.join("key.pem"))
}
