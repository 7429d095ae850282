//! Automatic certificates (ACME, RFC 8555): `[tls.acme]` obtains a certificate for its
//! domains from a CA such as Let's Encrypt, over TLS-ALPN-01 (RFC 8737) or HTTP-01,
//! keeps it in `[tls] store`, and renews it before it expires.
//!
//! Every process of a server calls [`start`]; the one that takes the store's lock
//! (`store/.lock`, an `flock` the kernel releases when its holder exits) orders, the
//! others only try the lock now and then, to take over if the holder dies. The
//! certificate reaches every process through the store: each [`Certificates`] loads
//! the store's pair and reloads it when its files change ([`Tls::watch`](super::Tls::watch)).
//! The challenge answers are in the store too, so the CA's connection may reach any
//! process: TLS-ALPN-01 is answered by [`Certificates`] itself; HTTP-01 by the plain
//! listener, with [`Http01Tokens`].
//!
//! The holder's task: at start, and every hour, it reads the stored certificate; when
//! there is none, or it does not cover every domain, or less than `renew_before` of
//! its life is left, it orders one. A failed order logs one line and is tried again
//! after a wait drawn at random below a ceiling that doubles from a minute up to six
//! hours (`rt/backoff.rs`); meanwhile the server serves what it has.

mod account;
mod challenge;
mod order;
mod store;

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

pub use self::challenge::Http01Tokens;
pub(crate) use self::store::tls_alpn01_path;
use super::{AcmeSpec, Certificates, Challenge, TlsSpec};
use crate::rt::{Background, Backoff};

/// How the ordering task paces itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// How often the stored certificate is looked at, and the lock tried by the
    /// processes that do not hold it.
    pub(crate) check_every: Duration,
    /// The longest wait after a first failed order; it doubles with each failure that
    /// follows.
    pub(crate) retry_first: Duration,
    /// The longest wait between two failed orders.
    pub(crate) retry_most: Duration,
    /// How long one order may take, all of it (a CA that stops answering).
    pub(crate) order_within: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            check_every: Duration::from_secs(3600),
            // Let's Encrypt allows 5 failed validations an hour for a name.
            retry_first: Duration::from_secs(60),
            retry_most: Duration::from_secs(6 * 3600),
            order_within: Duration::from_secs(600),
        }
    }
}

/// The ACME task of a process, stopped when dropped.
#[derive(Debug)]
pub struct AcmeHandle {
    _runtime: Background,
    /// Orders failed in a row so far.
    failures: Arc<AtomicU32>,
}

impl AcmeHandle {
    /// How many orders in a row have failed (0 after one succeeds).
    pub fn failures(&self) -> u32 {
        self.failures.load(Ordering::Relaxed)
    }
}

/// Starts obtaining and renewing the certificate `spec.acme` asks for, on a thread of
/// its own, putting it where `certs` (the server's resolver) loads it from; `None`
/// when `spec` has no `[tls.acme]`, or names domains ACME cannot prove here (logged).
///
/// # Examples
///
/// ```no_run
/// let config: proscenium::Config = toml::from_str(
///     r#"
///     [tls]
///     store = "/var/lib/site/tls"
///     acme = { directory = "https://acme-v02.api.letsencrypt.org/directory", domains = ["example.com"] }
///     "#,
/// )
/// .unwrap();
/// let tls = proscenium::tls::Tls::new(&config.tls, true).unwrap().unwrap();
/// tls.watch();
/// let _acme = proscenium::tls::acme::start(&config.tls, tls.certs.clone());
/// ```
pub fn start(spec: &TlsSpec, certs: Arc<Certificates>) -> Option<AcmeHandle> {
    start_with(spec, certs, Timing::default())
}

pub(crate) fn start_with(
    spec: &TlsSpec,
    certs: Arc<Certificates>,
    timing: Timing,
) -> Option<AcmeHandle> {
    let acme = spec.acme.clone()?;
    if let Err(why) = check(&acme) {
        tracing::error!("[tls.acme] obtains no certificate: {why}");
        return None;
    }
    let runtime = Background::new("proscenium-acme");
    let store = spec.store_dir();
    let failures = Arc::new(AtomicU32::new(0));
    let counted = failures.clone();
    runtime.spawn(async move { run(acme, store, certs, timing, counted).await });
    Some(AcmeHandle {
        _runtime: runtime,
        failures,
    })
}

/// Why `acme` cannot be ordered, if it cannot.
fn check(acme: &AcmeSpec) -> Result<(), String> {
    if acme.domains.is_empty() {
        return Err("no domains".to_owned());
    }
    // RFC 8555 §7.1.3: a wildcard is proved only by DNS-01, which needs the zone.
    if let Some(wildcard) = acme.domains.iter().find(|d| d.contains('*')) {
        return Err(format!(
            "{wildcard}: a wildcard needs DNS-01, which is not supported"
        ));
    }
    Ok(())
}

/// The task: waits for the store's lock, then keeps the certificate ordered.
async fn run(
    acme: AcmeSpec,
    store: PathBuf,
    certs: Arc<Certificates>,
    timing: Timing,
    failures: Arc<AtomicU32>,
) {
    let _lock = loop {
        match store::try_lock(&store) {
            Ok(Some(lock)) => break lock,
            Ok(None) => {}
            Err(e) => tracing::error!("ACME store {}: {e}", store.display()),
        }
        tokio::time::sleep(timing.check_every).await;
    };
    let mut backoff = Backoff::new(timing.retry_first, timing.retry_most);
    loop {
        let due = store::needs_order(&store, &acme.domains, acme.renew_before, SystemTime::now());
        if !due {
            tokio::time::sleep(timing.check_every).await;
            continue;
        }
        match obtain(&acme, &store, &certs, timing).await {
            Ok(()) => {
                failures.store(0, Ordering::Relaxed);
                backoff.reset();
                tokio::time::sleep(timing.check_every).await;
            }
            Err(e) => {
                failures.fetch_add(1, Ordering::Relaxed);
                let wait = backoff.next_delay();
                tracing::error!(
                    "ACME order for {} failed (tried again in {wait:?}): {e}",
                    acme.domains.join(", "),
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// One order, written to the store and loaded by this process's `certs` at once.
async fn obtain(
    acme: &AcmeSpec,
    store: &Path,
    certs: &Certificates,
    timing: Timing,
) -> Result<(), AcmeError> {
    let ordered = async {
        let account = account::account(acme, store).await?;
        order::order(&account, acme, store, certs).await
    };
    let loaded = tokio::time::timeout(timing.order_within, ordered)
        .await
        .map_err(|_| AcmeError::refused("the CA did not finish in time".to_owned()))??;
    certs.reload();
    let left = loaded
        .not_after
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    tracing::info!(
        "ACME certificate obtained for {} ({} days left)",
        acme.domains.join(", "),
        left.as_secs() / 86_400
    );
    if left < acme.renew_before {
        tracing::warn!(
            "[tls.acme] renew_before is longer than the CA's certificates live: it is renewed every check"
        );
    }
    Ok(())
}

/// Why an order failed: said in one log line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct AcmeError(String);

impl AcmeError {
    fn store(path: &Path, e: impl Display) -> Self {
        Self(format!("{}: {e}", path.display()))
    }

    fn key(e: impl Display) -> Self {
        Self(format!("making a key or certificate: {e}"))
    }

    fn refused(why: String) -> Self {
        Self(why)
    }
}

impl From<instant_acme::Error> for AcmeError {
    fn from(e: instant_acme::Error) -> Self {
        Self(format!("the CA: {e}"))
    }
}

#[cfg(test)]
mod tests;
