//! `[traces]` in the configuration: where request spans go.

use serde::{Deserialize, Serialize};

/// Traces (`[traces]`): each request a span (`tracing`, target `proscenium::request`,
/// with its method, target, id and status), the app's own spans at `info` and up
/// beside them, exported over OTLP/HTTP (protobuf) to a collector when `otlp` names
/// one. Off by default: with no collector no request span is made.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config = toml::from_str(
///     "[traces]\notlp = \"http://127.0.0.1:4318/v1/traces\"\nservice = \"shop\"",
/// )
/// .unwrap();
/// assert_eq!(config.traces.otlp.as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
/// assert_eq!(proscenium::Config::default().traces.otlp, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TracesSpec {
    /// The collector's OTLP/HTTP traces endpoint, whole (`http://HOST:4318/v1/traces`;
    /// `https://` too); `None` (the default) exports nothing.
    pub otlp: Option<String>,
    /// The service name the spans carry (`service.name`); by default the program's
    /// name.
    pub service: Option<String>,
}
