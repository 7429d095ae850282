//! The one rustls crypto provider, for a build that speaks TLS (`client`, `redis` or
//! `tls`).

use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;

/// The crypto every TLS endpoint of the process uses: aws-lc-rs (docs/performance.md,
/// "TLS", has the measurement that chose it), installed as the process default the
/// first time it is asked for, so the crates that make their own rustls configs (the
/// redis crate's, ACME's client) agree with ours.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            let provider = rustls::crypto::aws_lc_rs::default_provider();
            let _ = provider.clone().install_default();
            Arc::new(provider)
        })
        .clone()
}
