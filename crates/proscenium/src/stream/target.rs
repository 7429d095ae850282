//! Where a Redis is: its URL (`redis://`, `rediss://`, `unix://`) and, for a
//! `rediss://` one whose certificate a private CA signed, that CA — what streams, the
//! hub and remote actors connect with.

use crate::config::{CaFile, RedisSpec};
use crate::counters::User;

/// A Redis to connect to: its URL, and the CA its `rediss://` certificate chains to
/// when that is not one of the web's roots (`[redis] ca`, `[feeds] ca`).
///
/// # Examples
///
/// ```
/// use proscenium::stream::RedisTarget;
///
/// let plain = RedisTarget::from("redis://127.0.0.1:6379");
/// assert_eq!(plain.url(), "redis://127.0.0.1:6379");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisTarget {
    url: String,
    ca: Option<CaFile>,
    /// Whose round trips its connections make, for `/metrics`.
    user: User,
}

impl RedisTarget {
    /// The Redis at `url`, trusting `ca` (when `Some`) alone for its certificate.
    pub fn new(url: impl Into<String>, ca: Option<CaFile>) -> Self {
        Self {
            url: url.into(),
            ca,
            user: User::default(),
        }
    }

    /// Returns it with its connections' round trips counted as `user`'s.
    pub(crate) fn for_user(self, user: User) -> Self {
        Self { user, ..self }
    }

    /// Returns whose round trips its connections make.
    pub(crate) fn user(&self) -> User {
        self.user
    }

    /// Returns its URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns a client for it: over TLS trusting the CA when one is given, else as
    /// its URL says (`rediss://` trusting the web's roots).
    ///
    /// # Errors
    ///
    /// The URL is not a Redis URL, or a CA is given for one that is not `rediss://`.
    pub(crate) fn client(&self) -> redis::RedisResult<redis::Client> {
        // Every `rediss://` connection is made by rustls, which needs its provider.
        crate::transport::provider();
        let Some(ca) = &self.ca else {
            return redis::Client::open(self.url.as_str());
        };
        let roots = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca.pem().to_vec()),
        };
        redis::Client::build_with_tls(self.url.as_str(), roots)
    }
}

// The settings stay plain data in `config`; making a target of them is this module's.
impl RedisSpec {
    /// Returns the Redis it names, with its CA; `None` without a URL.
    pub fn target(&self) -> Option<RedisTarget> {
        let url = self.url.clone()?;
        Some(RedisTarget::new(url, self.ca.clone()))
    }
}

impl From<&str> for RedisTarget {
    fn from(url: &str) -> Self {
        Self::new(url, None)
    }
}

impl From<String> for RedisTarget {
    fn from(url: String) -> Self {
        Self::new(url, None)
    }
}

impl From<&String> for RedisTarget {
    fn from(url: &String) -> Self {
        Self::new(url.as_str(), None)
    }
}

impl From<&RedisTarget> for RedisTarget {
    fn from(target: &RedisTarget) -> Self {
        target.clone()
    }
}
