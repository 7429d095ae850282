//! rustls configurations shared by the measurements: one key exchange (X25519; P-256
//! offered too, as OpenSSL serves an ECDSA P-256 certificate over TLS 1.2 only to a
//! client that lists its curve) and the AES-128-GCM suites, so that every server and
//! provider does the same work; a client
//! that does not verify (the load generator's core is spent on the server's work, not
//! on checking a certificate it made itself).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, aws_lc_rs, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};

/// A TLS version the measurements pin.
#[derive(Clone, Copy)]
pub enum Version {
    Tls12,
    Tls13,
}

impl Version {
    /// Parses "1.2" or "1.3".
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "1.2" => Ok(Self::Tls12),
            "1.3" => Ok(Self::Tls13),
            _ => Err(format!("bad TLS version {text:?}: 1.2 or 1.3")),
        }
    }

    fn protocol(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            Self::Tls12 => &rustls::version::TLS12,
            Self::Tls13 => &rustls::version::TLS13,
        }
    }
}

/// Returns provider `name` ("aws-lc-rs" or "ring") cut to X25519 (then P-256) and
/// AES-128-GCM.
pub fn provider(name: &str) -> Result<CryptoProvider, String> {
    let provider = match name {
        "aws-lc-rs" => CryptoProvider {
            cipher_suites: vec![
                aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256,
                aws_lc_rs::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            ],
            kx_groups: vec![aws_lc_rs::kx_group::X25519, aws_lc_rs::kx_group::SECP256R1],
            ..aws_lc_rs::default_provider()
        },
        "ring" => CryptoProvider {
            cipher_suites: vec![
                ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
                ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            ],
            kx_groups: vec![ring::kx_group::X25519, ring::kx_group::SECP256R1],
            ..ring::default_provider()
        },
        _ => return Err(format!("unknown provider {name:?}: aws-lc-rs or ring")),
    };
    Ok(provider)
}

/// Returns a client config for `version` that keeps sessions for resumption when
/// `resume` and accepts any certificate.
pub fn client(provider: CryptoProvider, version: Version, resume: bool) -> Arc<ClientConfig> {
    let verifier = Arc::new(AcceptAny(provider.signature_verification_algorithms));
    let mut config = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version.protocol()])
        .expect("the provider supports both versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    if !resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Arc::new(config)
}

/// Returns a server config on provider `name` with the chain and key of PEM files
/// `cert` and `key`, session tickets from the provider's ticketer when `tickets`.
pub fn server(name: &str, cert: &str, key: &str, tickets: bool) -> Result<ServerConfig, String> {
    let provider = provider(name)?;
    let ticketer = match (tickets, name) {
        (false, _) => None,
        (true, "ring") => Some(ring::Ticketer::new().map_err(|e| e.to_string())?),
        (true, _) => Some(aws_lc_rs::Ticketer::new().map_err(|e| e.to_string())?),
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{cert}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{key}: {e}"))?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    if let Some(ticketer) = ticketer {
        config.ticketer = ticketer;
    }
    Ok(config)
}

/// Returns the name every client connects with (the certificate is not checked).
pub fn server_name() -> ServerName<'static> {
    ServerName::try_from("localhost").expect("a valid name")
}

/// A verifier that accepts every certificate and signature.
#[derive(Debug)]
struct AcceptAny(rustls::crypto::WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}
