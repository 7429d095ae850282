//! The answers to ACME's challenges, published while an order waits for the CA to
//! check them and withdrawn after: kept in the store, so whichever process (or
//! prefork worker) the CA's connection reaches can answer, and, for TLS-ALPN-01, also
//! in this process's [`Certificates`] so it answers without reading a file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use instant_acme::{ChallengeHandle, ChallengeType};
use rcgen::{CertificateParams, CustomExtension, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::store::{self, PUBLIC};
use super::{AcmeError, Challenge};
use crate::tls::{Certificates, TlsSpec};

/// The key authorizations of pending HTTP-01 challenges (RFC 8555 §8.3), as the plain
/// listener serves them at `/.well-known/acme-challenge/TOKEN`. Read from the store:
/// every process sharing it answers for the one that orders.
///
/// # Examples
///
/// ```
/// let spec: proscenium::tls::TlsSpec = toml::from_str("store = \"/nonexistent\"").unwrap();
/// let tokens = proscenium::tls::acme::Http01Tokens::new(&spec);
/// assert_eq!(tokens.get("unknown-token"), None);
/// assert_eq!(tokens.get("../account.json"), None);
/// ```
#[derive(Debug, Clone)]
pub struct Http01Tokens {
    store: PathBuf,
}

impl Http01Tokens {
    /// The tokens of the store `spec` names.
    pub fn new(spec: &TlsSpec) -> Self {
        Self {
            store: spec.store_dir(),
        }
    }

    /// The key authorization to answer for `token`, while its challenge is pending;
    /// `None` for a token that is not (or could not be) one.
    pub fn get(&self, token: &str) -> Option<String> {
        if !store::is_token(token) {
            return None;
        }
        std::fs::read_to_string(store::http01_path(&self.store, token)).ok()
    }
}

/// The answers one order published, withdrawn when it is dropped (the order done,
/// failed, or its task stopped).
pub(super) struct Answers<'a> {
    store: &'a Path,
    certs: &'a Certificates,
    files: Vec<PathBuf>,
    names: Vec<String>,
}

impl<'a> Answers<'a> {
    pub(super) fn new(store: &'a Path, certs: &'a Certificates) -> Self {
        Self {
            store,
            certs,
            files: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Publishes the answer to `challenge`, of the kind `kind`.
    pub(super) fn publish(
        &mut self,
        kind: Challenge,
        challenge: &ChallengeHandle<'_>,
    ) -> Result<(), AcmeError> {
        let authorization = challenge.key_authorization();
        match kind {
            Challenge::Http01 => {
                let path = store::http01_path(self.store, &challenge.token);
                self.write(path, authorization.as_str().as_bytes())
            }
            Challenge::TlsAlpn01 => {
                let name = challenge.identifier().to_string();
                let (pem, key) = tls_alpn01_certificate(&name, authorization.digest().as_ref())?;
                self.write(store::tls_alpn01_path(self.store, &name), pem.as_bytes())?;
                self.certs.set_challenge(&name, key);
                self.names.push(name);
                Ok(())
            }
        }
    }

    fn write(&mut self, path: PathBuf, bytes: &[u8]) -> Result<(), AcmeError> {
        store::write_atomically(&path, bytes, PUBLIC).map_err(|e| AcmeError::store(&path, e))?;
        self.files.push(path);
        Ok(())
    }
}

impl Drop for Answers<'_> {
    fn drop(&mut self) {
        for name in &self.names {
            self.certs.clear_challenge(name);
        }
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// The challenge type instant-acme names `kind`.
pub(super) fn challenge_type(kind: Challenge) -> ChallengeType {
    match kind {
        Challenge::Http01 => ChallengeType::Http01,
        Challenge::TlsAlpn01 => ChallengeType::TlsAlpn01,
    }
}

/// The self-signed certificate that answers TLS-ALPN-01 for `name` (RFC 8737 §3): the
/// name as its only SAN, the SHA-256 of the key authorization in its critical
/// acmeIdentifier extension. Returns it as one PEM file (certificate and key) and as
/// rustls serves it.
fn tls_alpn01_certificate(
    name: &str,
    digest: &[u8],
) -> Result<(String, Arc<rustls::sign::CertifiedKey>), AcmeError> {
    let mut params = CertificateParams::new(vec![name.to_owned()]).map_err(AcmeError::key)?;
    params.custom_extensions = vec![CustomExtension::new_acme_identifier(digest)];
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(AcmeError::key)?;
    let cert = params.self_signed(&key).map_err(AcmeError::key)?;
    let pem = format!("{}{}", cert.pem(), key.serialize_pem());
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let chain = vec![CertificateDer::from(cert.der().to_vec())];
    let served = crate::tls::certified_key(chain, &private).map_err(AcmeError::key)?;
    Ok((pem, Arc::new(served)))
}
