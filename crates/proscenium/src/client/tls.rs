//! The client's connector — plain TCP for `http://`, rustls over it for `https://`,
//! trusting the web's roots (webpki-roots) and the `[client] ca` file's — and the
//! reading of a refused certificate out of a failed request's causes.

use std::error::Error;

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::{CertificateError, ClientConfig, RootCertStore};

use super::{CertificateReason, ClientSpec};

/// Makes the connector `spec` says: its connect timeout, and its roots.
pub(super) fn connector(spec: &ClientSpec) -> HttpsConnector<HttpConnector> {
    let mut tcp = HttpConnector::new();
    tcp.set_connect_timeout(Some(spec.connect_timeout));
    tcp.set_nodelay(true);
    // The TLS layer above takes `https://` too, and passes `http://` through as is.
    tcp.enforce_http(false);
    crate::transport::provider();
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(ca) = &spec.ca {
        // Every one parses: `CaFile::read` added each to a store already.
        roots.add_parsable_certificates(ca.certificates().iter().cloned());
    }
    let tls = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp)
}

/// Returns why the server's certificate was refused, when that is what `error` (or
/// one of its causes) says.
pub(super) fn refused_certificate(error: &(dyn Error + 'static)) -> Option<CertificateReason> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(rustls::Error::InvalidCertificate(refused)) =
            error.downcast_ref::<rustls::Error>()
        {
            return Some(reason(refused));
        }
        // An I/O error's `source` skips the error it wraps: look inside it.
        let wrapped = error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref);
        if let Some(reason) = wrapped.and_then(|inner| refused_certificate(inner)) {
            return Some(reason);
        }
        cause = error.source();
    }
    None
}

/// What rustls said of a certificate, in the client's terms.
fn reason(refused: &CertificateError) -> CertificateReason {
    match refused {
        CertificateError::UnknownIssuer => CertificateReason::UnknownIssuer,
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            CertificateReason::NameMismatch
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            CertificateReason::Expired
        }
        other => CertificateReason::Other(other.to_string()),
    }
}
