//! `[request_id]` in the configuration: whether requests get ids, and whose ids are
//! kept.

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// Request ids (`[request_id]`): every request gets one, answered in `x-request-id`,
/// written at the end of its access log line, and handed to handlers
/// ([`RequestId`](crate::http::RequestId)).
///
/// # Examples
///
/// ```
/// let config: proscenium::Config =
///     toml::from_str("[request_id]\ntrust = [\"10.0.0.0/8\", \"127.0.0.1/32\"]").unwrap();
/// assert!(config.request_id.enabled);
/// assert_eq!(config.request_id.trust.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestIdSpec {
    /// Whether requests get ids (default `true`).
    pub enabled: bool,
    /// The proxies in front (networks, `10.0.0.0/8`; one address is `/32` or `/128`)
    /// whose own `X-Request-Id` a request keeps, so one id follows a request through
    /// them. From any other peer the field is ignored and an id made: a client could
    /// put anything in it. Empty by default.
    pub trust: Vec<IpNet>,
}

impl Default for RequestIdSpec {
    fn default() -> Self {
        Self {
            enabled: true,
            trust: Vec::new(),
        }
    }
}
