//! `[tls]` in the configuration: the certificates, the plain-HTTP listener beside the
//! TLS one, HSTS, and automatic certificates (ACME).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the server speaks TLS: `[tls]` in the configuration. Off (plain HTTP) unless
/// a certificate, a list of them or ACME is configured.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config = toml::from_str(
///     "[tls]\ncert = \"site.pem\"\nkey = \"site.key\"\nhsts = 31536000",
/// )
/// .unwrap();
/// assert!(config.tls.enabled());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSpec {
    /// The certificate chain (PEM, leaf first), for every name the server is asked.
    pub cert: Option<PathBuf>,
    /// The private key of `cert` (PEM: PKCS#8, SEC1 or PKCS#1).
    pub key: Option<PathBuf>,
    /// More certificates, each served to the names it is for (SNI); `cert` and `key`
    /// serve the names none of them covers.
    pub certs: Vec<CertFiles>,
    /// A listener for plain HTTP beside the TLS one: redirects to HTTPS (or serves the
    /// app), and answers ACME's HTTP-01 challenges.
    pub plain: Option<PlainSpec>,
    /// `Strict-Transport-Security: max-age=` this many seconds on every HTTPS answer;
    /// 0 (the default) sends none.
    #[serde(
        deserialize_with = "crate::config::value::seconds::whole::<_, 0, 315_360_000>",
        serialize_with = "crate::config::value::seconds::serialize_whole"
    )]
    pub hsts: u64,
    /// Adds `includeSubDomains` to the HSTS field.
    pub hsts_subdomains: bool,
    /// Where certificates obtained by ACME are kept (default `tls-store`), shared by
    /// every process of the server that names the same directory.
    pub store: Option<PathBuf>,
    /// Certificates obtained and renewed automatically (ACME, RFC 8555).
    pub acme: Option<AcmeSpec>,
}

/// One certificate chain and its key (`[[tls.certs]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CertFiles {
    /// The certificate chain (PEM, leaf first).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
}

/// The plain-HTTP listener (`[tls.plain]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlainSpec {
    /// Where it listens (`0.0.0.0:80`, say).
    #[serde(deserialize_with = "crate::config::value::bind")]
    pub bind: SocketAddr,
    /// What it does with requests other than ACME's challenges.
    #[serde(default)]
    pub serve: PlainServes,
}

/// What the plain-HTTP listener answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlainServes {
    /// `308 Permanent Redirect` to the same path over HTTPS.
    #[default]
    Redirect,
    /// The app, as over HTTPS (without HSTS, which browsers ignore over HTTP).
    App,
}

/// Automatic certificates (`[tls.acme]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AcmeSpec {
    /// The ACME directory URL (Let's Encrypt's is
    /// `https://acme-v02.api.letsencrypt.org/directory`).
    pub directory: String,
    /// The account's contact address.
    pub email: Option<String>,
    /// The names the certificate is for.
    pub domains: Vec<String>,
    /// How the CA checks the names are ours: `tls-alpn-01` (on the TLS port, the
    /// default) or `http-01` (on the plain listener's port 80).
    #[serde(default)]
    pub challenge: Challenge,
    /// A PEM file of roots the directory's own HTTPS certificate is checked against,
    /// beside the platform's (a test CA such as Pebble's).
    pub ca: Option<PathBuf>,
    /// Renews once this little of the certificate's life is left; seconds (default 30
    /// days).
    #[serde(
        default = "AcmeSpec::default_renew_before",
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { 365 * crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub renew_before: Duration,
}

impl AcmeSpec {
    fn default_renew_before() -> Duration {
        Duration::from_secs(30 * 86_400)
    }
}

/// An ACME challenge type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Challenge {
    /// TLS-ALPN-01 (RFC 8737): answered on the TLS listener.
    #[default]
    TlsAlpn01,
    /// HTTP-01: answered on the plain listener.
    Http01,
}

impl TlsSpec {
    /// Whether the server speaks TLS.
    pub fn enabled(&self) -> bool {
        self.cert.is_some() || !self.certs.is_empty() || self.acme.is_some()
    }

    /// The directory ACME's certificates are kept in.
    pub fn store_dir(&self) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| PathBuf::from("tls-store"))
    }
}
