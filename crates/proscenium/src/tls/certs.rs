//! The certificates a server presents: loaded from PEM files, chosen by the name a
//! client asks for (SNI), reloaded when their files change or on SIGHUP, and the
//! ACME challenge certificates (TLS-ALPN-01) beside them.
//!
//! rustls asks [`Certificates`] for a certificate on every handshake; the table it
//! reads is replaced whole by a reload, so a handshake sees the old table or the new,
//! never half of one, and a reload that fails leaves the old one in place.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Mutex, RwLock};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::config::TlsSpec;
use crate::transport::ACME_TLS_ALPN;

/// Why a certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct CertError {
    /// The file at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

impl CertError {
    fn new(path: &Path, why: &impl ToString) -> Self {
        Self {
            path: path.to_owned(),
            why: why.to_string(),
        }
    }
}

/// A certificate chain and key where files name them: `[tls] cert, key`, each of
/// `[[tls.certs]]`, and ACME's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    /// A file that may not exist yet (ACME's, before its first order): skipped, not
    /// refused.
    pub(crate) optional: bool,
}

/// One certificate as served: the key rustls signs with, the names it is for, and
/// when it expires.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The chain and signing key.
    pub key: Arc<CertifiedKey>,
    /// The DNS names of its leaf (`*.example.com` for a wildcard), lower case.
    pub names: Vec<String>,
    /// The leaf's notAfter.
    pub not_after: SystemTime,
}

/// The certificates in use, their sources and their files' stamps.
#[derive(Debug, Default)]
struct Table {
    /// In the order of the sources: the first is served to names no other covers.
    loaded: Vec<Loaded>,
    stamps: Vec<Option<Stamp>>,
}

/// What says a file changed: its modification time, size and inode.
type Stamp = (SystemTime, u64, u64);

/// The server's certificates: rustls' resolver, reloadable.
#[derive(Debug)]
pub struct Certificates {
    sources: Vec<Source>,
    table: RwLock<Arc<Table>>,
    /// TLS-ALPN-01 answers by name, while an order waits for them.
    challenges: Mutex<HashMap<String, Arc<CertifiedKey>>>,
    /// The store and the names whose TLS-ALPN-01 answers another process (the one
    /// that orders) may have put there.
    acme: Option<(PathBuf, Vec<String>)>,
}

impl Certificates {
    /// Loads the certificates `spec` names; an error names the file and what is wrong.
    pub fn load(spec: &TlsSpec) -> Result<Self, CertError> {
        let certs = Self {
            sources: sources(spec),
            table: RwLock::default(),
            challenges: Mutex::default(),
            acme: spec.acme.as_ref().map(|acme| {
                let names = acme.domains.iter().map(|d| d.to_ascii_lowercase());
                (spec.store_dir(), names.collect())
            }),
        };
        let stamps = certs.stamps();
        let loaded = certs.read_all()?;
        *certs.table.write() = Arc::new(Table { loaded, stamps });
        Ok(certs)
    }

    /// Reads every source anew if any file changed; keeps what it has (and logs one
    /// line) when a new file is unreadable or wrong. Returns whether the table changed.
    pub fn reload_if_changed(&self) -> bool {
        if self.stamps() == self.table.read().stamps {
            return false;
        }
        self.reload()
    }

    /// Reads every source anew; keeps what it has (and logs one line why) when a file
    /// is unreadable or wrong. Returns whether the table changed.
    pub fn reload(&self) -> bool {
        // Stamped before reading: a file replaced while it is read (ACME writes the
        // key, then the certificate) differs from the stamp, so it is read again.
        let stamps = self.stamps();
        match self.read_all() {
            Ok(loaded) => {
                let names: Vec<_> = loaded.iter().flat_map(|l| l.names.clone()).collect();
                tracing::info!("TLS certificates loaded for {}", names.join(", "));
                *self.table.write() = Arc::new(Table { loaded, stamps });
                true
            }
            Err(e) => {
                tracing::error!("TLS certificates kept as they were: {e}");
                // The stamps of what failed are noted, so a broken file is reported
                // once, not every second until it is fixed.
                let mut table = self.table.write();
                *table = Arc::new(Table {
                    loaded: table.loaded.clone(),
                    stamps,
                });
                false
            }
        }
    }

    /// The certificates in use.
    pub fn loaded(&self) -> Vec<Loaded> {
        self.table.read().loaded.clone()
    }

    /// Serves `key` to TLS-ALPN-01 handshakes for `name` until it is withdrawn.
    pub fn set_challenge(&self, name: &str, key: Arc<CertifiedKey>) {
        self.challenges
            .lock()
            .insert(name.to_ascii_lowercase(), key);
    }

    /// Withdraws the TLS-ALPN-01 answer for `name`.
    pub fn clear_challenge(&self, name: &str) {
        self.challenges.lock().remove(&name.to_ascii_lowercase());
    }

    /// The TLS-ALPN-01 answer for `name` that the process ordering put in the store,
    /// if `name` is one ACME orders for.
    fn stored_challenge(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let (store, names) = self.acme.as_ref()?;
        if !names.iter().any(|n| n == name) {
            return None;
        }
        let pem = std::fs::read(super::acme::tls_alpn01_path(store, name)).ok()?;
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .ok()?;
        let private = PrivateKeyDer::from_pem_slice(&pem).ok()?;
        certified_key(chain, &private).ok().map(Arc::new)
    }

    fn stamps(&self) -> Vec<Option<Stamp>> {
        self.sources
            .iter()
            .map(|s| stamp(&s.cert, &s.key))
            .collect()
    }

    /// Reads every source; the stamps are the caller's to note.
    fn read_all(&self) -> Result<Vec<Loaded>, CertError> {
        let mut loaded = Vec::new();
        for source in &self.sources {
            if source.optional && !source.cert.exists() {
                continue;
            }
            loaded.push(load_pair(&source.cert, &source.key)?);
        }
        Ok(loaded)
    }

    /// The certificate for `name`: one naming it exactly, then a wildcard covering
    /// it, then the first.
    fn for_name(&self, name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let table = self.table.read().clone();
        let chosen = name.and_then(|name| {
            let name = name.to_ascii_lowercase();
            let wildcard = name
                .split_once('.')
                .map(|(_, parent)| format!("*.{parent}"));
            let names = |l: &&Loaded, wanted: &str| l.names.iter().any(|n| n == wanted);
            table.loaded.iter().find(|l| names(l, &name)).or_else(|| {
                let wildcard = wildcard.as_deref()?;
                table.loaded.iter().find(|l| names(l, wildcard))
            })
        });
        chosen.or(table.loaded.first()).map(|l| l.key.clone())
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let acme = hello
            .alpn()
            .is_some_and(|mut protocols| protocols.any(|p| p == ACME_TLS_ALPN));
        if acme {
            let name = hello.server_name()?.to_ascii_lowercase();
            let answer = self.challenges.lock().get(&name).cloned();
            return answer.or_else(|| self.stored_challenge(&name));
        }
        self.for_name(hello.server_name())
    }
}

/// The files `spec` names, the default first.
fn sources(spec: &TlsSpec) -> Vec<Source> {
    let mut sources = Vec::new();
    if let (Some(cert), Some(key)) = (&spec.cert, &spec.key) {
        sources.push(Source {
            cert: cert.clone(),
            key: key.clone(),
            optional: false,
        });
    }
    sources.extend(spec.certs.iter().map(|c| Source {
        cert: c.cert.clone(),
        key: c.key.clone(),
        optional: false,
    }));
    if let Some(acme) = &spec.acme {
        let (cert, key) = super::store_paths(&spec.store_dir(), &acme.domains);
        sources.push(Source {
            cert,
            key,
            optional: true,
        });
    }
    sources
}

fn stamp(cert: &Path, key: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let one = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len(), meta.ino()))
    };
    let (c, k) = (one(cert)?, one(key)?);
    Some((
        c.0.max(k.0),
        c.1 ^ k.1.rotate_left(32),
        c.2 ^ k.2.rotate_left(32),
    ))
}

/// Loads a chain and its key, and checks that they belong together.
pub fn load_pair(cert: &Path, key: &Path) -> Result<Loaded, CertError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| CertError::new(cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::new(cert, &e))?;
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| CertError::new(key, &e))?;
    from_parts(chain, &private).map_err(|why| CertError::new(cert, &why))
}

/// Makes a served certificate of a chain and its key.
pub fn from_parts(
    chain: Vec<CertificateDer<'static>>,
    private: &PrivateKeyDer<'_>,
) -> Result<Loaded, String> {
    let leaf = chain.first().ok_or("no certificate in the file")?;
    let (names, not_after) = describe(leaf)?;
    let key = certified_key(chain, private)?;
    key.keys_match()
        .map_err(|e| format!("the key does not belong to the certificate ({e})"))?;
    Ok(Loaded {
        key: Arc::new(key),
        names,
        not_after,
    })
}

/// A chain and its key as rustls signs with them, unchecked: TLS-ALPN-01's
/// certificates carry a critical extension (RFC 8737 §3) that a check refuses.
pub(crate) fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    private: &PrivateKeyDer<'_>,
) -> Result<CertifiedKey, String> {
    let signer = super::provider()
        .key_provider
        .load_private_key(private.clone_key())
        .map_err(|e| format!("the key: {e}"))?;
    Ok(CertifiedKey::new(chain, signer))
}

/// The DNS names and notAfter of a leaf certificate.
pub(crate) fn describe(leaf: &CertificateDer<'_>) -> Result<(Vec<String>, SystemTime), String> {
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
    let (_, parsed) =
        X509Certificate::from_der(leaf).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let mut names: Vec<String> = parsed
        .subject_alternative_name()
        .ok()
        .flatten()
        .into_iter()
        .flat_map(|san| san.value.general_names.iter())
        .filter_map(|n| match n {
            GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    if names.is_empty() {
        names.extend(
            parsed
                .subject()
                .iter_common_name()
                .filter_map(|cn| cn.as_str().ok())
                .map(str::to_ascii_lowercase),
        );
    }
    let seconds = parsed.validity().not_after.timestamp();
    let not_after = SystemTime::UNIX_EPOCH
        + std::time::Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    Ok((names, not_after))
}
