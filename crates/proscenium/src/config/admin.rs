//! `[admin]` in the configuration: the admin listener's address.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// The admin listener (`[admin]`): `/healthz`, `/readyz` and `/metrics` on an address
/// of their own, never on the public listener. Off unless `bind` is given (or
/// `PROSCENIUM_ADMIN_BIND`, or `--admin-bind`); a build without the `metrics` feature
/// refuses `bind` at start.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config = toml::from_str("[admin]\nbind = \"127.0.0.1:9090\"").unwrap();
/// assert_eq!(config.admin.bind, Some("127.0.0.1:9090".parse().unwrap()));
/// assert_eq!(proscenium::Config::default().admin.bind, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminSpec {
    /// Where the admin listener listens, as [`parse_bind`](super::parse_bind) takes
    /// it; `None` (the default) runs none. Keep it off the public network: it tells
    /// anyone who asks how the server is doing.
    #[serde(deserialize_with = "super::value::some_bind")]
    pub bind: Option<SocketAddr>,
}
