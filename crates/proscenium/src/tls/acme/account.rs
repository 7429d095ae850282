//! The ACME account: its credentials loaded from the store, or an account created on
//! the directory and its credentials stored; and the HTTPS client that speaks to the
//! directory, which trusts the web's roots plus `[tls.acme] ca`.

use std::path::Path;

use bytes::Bytes;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use instant_acme::{Account, AccountCredentials, BodyWrapper, HttpClient, NewAccount};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::AcmeError;
use super::store::{self, SECRET};
use crate::tls::AcmeSpec;

/// The account of `store` on `acme.directory`: loaded when its credentials are for that
/// directory, else created there (agreeing to its terms) and its credentials stored.
pub(super) async fn account(acme: &AcmeSpec, store: &Path) -> Result<Account, AcmeError> {
    let path = store::account_path(store);
    if let Some(credentials) = stored_credentials(&path, &acme.directory) {
        return Ok(Account::builder_with_http(client(acme)?)
            .from_credentials(credentials)
            .await?);
    }
    let contact = acme.email.as_ref().map(|email| format!("mailto:{email}"));
    let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
    let new = NewAccount {
        contact: &contact,
        terms_of_service_agreed: true,
        only_return_existing: false,
    };
    let (account, credentials) = Account::builder_with_http(client(acme)?)
        .create(&new, acme.directory.clone(), None)
        .await?;
    let json = serde_json::to_vec_pretty(&credentials).map_err(|e| AcmeError::store(&path, e))?;
    store::write_atomically(&path, &json, SECRET).map_err(|e| AcmeError::store(&path, e))?;
    tracing::info!("ACME account created on {}", acme.directory);
    Ok(account)
}

/// Forgets the stored account when the CA says it does not know it (its records
/// reset, as Pebble's on each start, or the account deactivated), so that the next
/// order creates one rather than failing the same way for ever.
pub(super) fn forget_if_unknown(error: &instant_acme::Error, store: &Path) {
    let instant_acme::Error::Api(problem) = error else {
        return;
    };
    if problem.r#type.as_deref() == Some("urn:ietf:params:acme:error:accountDoesNotExist") {
        tracing::warn!("the ACME CA does not know the stored account: a new one is made");
        let _ = std::fs::remove_file(store::account_path(store));
    }
}

/// The stored credentials, when there are some for `directory` (an account belongs to
/// one CA: a store moved from a staging directory to a real one gets a new account).
fn stored_credentials(path: &Path, directory: &str) -> Option<AccountCredentials> {
    let json = std::fs::read(path).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&json).ok()?;
    if value.get("directory").and_then(|d| d.as_str()) != Some(directory) {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// An HTTPS-only client trusting the web's roots plus `acme.ca`'s.
fn client(acme: &AcmeSpec) -> Result<Box<dyn HttpClient>, AcmeError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(ca) = &acme.ca {
        let certs = CertificateDer::pem_file_iter(ca).map_err(|e| AcmeError::store(ca, e))?;
        for cert in certs {
            let cert = cert.map_err(|e| AcmeError::store(ca, e))?;
            roots.add(cert).map_err(|e| AcmeError::store(ca, e))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(AcmeError::key)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    let client: HyperClient<_, BodyWrapper<Bytes>> =
        HyperClient::builder(TokioExecutor::new()).build(connector);
    Ok(Box::new(client))
}
