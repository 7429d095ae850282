//! `[client]` in the configuration: how a [`Client`](crate::client::Client) connects,
//! times out and retries.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::CaFile;

/// How a client is set up: `[client]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientSpec {
    /// How long connecting may take; seconds.
    #[serde(
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub connect_timeout: Duration,
    /// How long a request may take in all — waiting for a connection, connecting,
    /// sending, the answer and its body, every retry; seconds.
    #[serde(
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub timeout: Duration,
    /// Requests (so connections) open to one host at once; more wait their turn.
    #[serde(deserialize_with = "crate::config::value::count::<_, 1, 100_000>")]
    pub max_per_host: usize,
    /// How long an unused pooled connection is kept; seconds.
    #[serde(
        deserialize_with = "crate::config::value::seconds::within::<_, 1, { crate::config::value::DAY }>",
        serialize_with = "crate::config::value::seconds::serialize"
    )]
    pub idle_timeout: Duration,
    /// How many times a request safe to repeat (GET, HEAD, PUT, DELETE, OPTIONS,
    /// TRACE) is tried again after its connection failed.
    #[serde(deserialize_with = "crate::config::value::number::<_, u32, 0, 100>")]
    pub retries: u32,
    /// The largest response body read, in bytes.
    #[serde(
        deserialize_with = "crate::config::value::bytes::within::<_, usize, 0, { 1 << 40 }>",
        serialize_with = "crate::config::value::bytes::serialize"
    )]
    pub max_body: usize,
    /// A PEM file of CA certificates trusted for `https://` besides the web's roots
    /// (a private CA's); read with the configuration.
    pub ca: Option<CaFile>,
}

impl Default for ClientSpec {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(30),
            max_per_host: 64,
            idle_timeout: Duration::from_secs(90),
            retries: 2,
            max_body: 16 << 20,
            ca: None,
        }
    }
}
