//! One order (RFC 8555 §7.4): the names' challenges answered, the certificate
//! finalized with a fresh ECDSA P-256 key, checked, and written to the store.

use std::path::Path;
use std::time::Duration;

use instant_acme::{
    Account, AuthorizationStatus, Identifier, NewOrder, Order, OrderStatus, RetryPolicy,
};
use rcgen::{CertificateParams, DistinguishedName, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::AcmeError;
use super::challenge::{Answers, challenge_type};
use super::store::{self, PUBLIC, SECRET};
use crate::tls::{AcmeSpec, Certificates, Loaded};

/// How long the CA may take to check the challenges, then to issue.
const POLL_FOR: Duration = Duration::from_secs(120);

/// Orders a certificate for `acme.domains` and writes it to the store, where every
/// process watching it loads it; returns it as served.
pub(super) async fn order(
    account: &Account,
    acme: &AcmeSpec,
    store: &Path,
    certs: &Certificates,
) -> Result<Loaded, AcmeError> {
    let identifiers: Vec<_> = acme.domains.iter().cloned().map(Identifier::Dns).collect();
    let mut order = account
        .new_order(&NewOrder::new(&identifiers))
        .await
        .inspect_err(|e| super::account::forget_if_unknown(e, store))?;
    let answers = answer_challenges(&mut order, acme, store, certs).await?;
    let polling = RetryPolicy::new().timeout(POLL_FOR);
    let status = order.poll_ready(&polling).await?;
    drop(answers);
    if status != OrderStatus::Ready {
        return Err(AcmeError::refused(why_invalid(&mut order).await));
    }
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(AcmeError::key)?;
    let mut params = CertificateParams::new(acme.domains.clone()).map_err(AcmeError::key)?;
    params.distinguished_name = DistinguishedName::new();
    let csr = params.serialize_request(&key).map_err(AcmeError::key)?;
    order.finalize_csr(csr.der()).await?;
    let chain = order.poll_certificate(&polling).await?;
    save(store, &acme.domains, &chain, &key.serialize_pem())
}

/// Publishes the answer to each pending authorization's challenge and tells the CA it
/// may check it; the answers stay published until what is returned is dropped.
async fn answer_challenges<'a>(
    order: &mut Order,
    acme: &AcmeSpec,
    store: &'a Path,
    certs: &'a Certificates,
) -> Result<Answers<'a>, AcmeError> {
    let mut answers = Answers::new(store, certs);
    let mut authorizations = order.authorizations();
    while let Some(authorization) = authorizations.next().await {
        let mut authorization = authorization?;
        match authorization.status {
            AuthorizationStatus::Pending => {}
            // Proved by an earlier order, and still valid.
            AuthorizationStatus::Valid => continue,
            other => {
                let name = authorization.identifier().to_string();
                return Err(AcmeError::refused(format!(
                    "{name}: authorization {other:?}"
                )));
            }
        }
        let name = authorization.identifier().to_string();
        let mut challenge = authorization
            .challenge(challenge_type(acme.challenge))
            .ok_or_else(|| {
                AcmeError::refused(format!("{name}: the CA offers no {:?}", acme.challenge))
            })?;
        answers.publish(acme.challenge, &challenge)?;
        challenge.set_ready().await?;
    }
    Ok(answers)
}

/// What the CA said of the challenges that failed.
async fn why_invalid(order: &mut Order) -> String {
    let mut why = Vec::new();
    let mut authorizations = order.authorizations();
    while let Some(Ok(mut authorization)) = authorizations.next().await {
        let Ok(state) = authorization.refresh().await else {
            continue;
        };
        let name = state.identifier().to_string();
        why.extend(
            state
                .challenges
                .iter()
                .filter_map(|c| c.error.as_ref())
                .map(|problem| format!("{name}: {problem}")),
        );
    }
    if why.is_empty() {
        "the order became invalid".to_owned()
    } else {
        why.join("; ")
    }
}

/// Checks the issued chain and its key belong together, then writes them to the store:
/// the key first, so a process that reads the new certificate finds its key.
fn save(store: &Path, domains: &[String], chain: &str, key: &str) -> Result<Loaded, AcmeError> {
    let certificates: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(chain.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| AcmeError::refused(format!("the issued chain: {e}")))?;
    let private = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(AcmeError::key)?;
    let loaded = crate::tls::from_parts(certificates, &private)
        .map_err(|e| AcmeError::refused(format!("the issued certificate: {e}")))?;
    let (cert_path, key_path) = crate::tls::store_paths(store, domains);
    store::write_atomically(&key_path, key.as_bytes(), SECRET)
        .map_err(|e| AcmeError::store(&key_path, e))?;
    store::write_atomically(&cert_path, chain.as_bytes(), PUBLIC)
        .map_err(|e| AcmeError::store(&cert_path, e))?;
    Ok(loaded)
}
