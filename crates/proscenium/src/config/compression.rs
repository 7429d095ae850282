//! `[compression]` in the configuration: which answers are compressed, and how hard.

use serde::{Deserialize, Serialize};

/// How the server compresses answers (`http::compress`): `[compression]` in the
/// configuration. On by default: an answer of a listed type, of at least `min_size`
/// bytes (or of a length not known in advance), goes out in the coding the request's
/// `Accept-Encoding` prefers among zstd, br and gzip — ties going to that order.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config =
///     toml::from_str("[compression]\nmin_size = 256\ngzip_level = 6").unwrap();
/// assert!(config.compression.enabled);
/// assert_eq!(config.compression.min_size, 256);
/// assert_eq!(config.compression.gzip_level, 6);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressionSpec {
    /// Whether answers are compressed at all (precompressed static files aside); on
    /// by default in a build with the `compression` feature, and only there.
    pub enabled: bool,
    /// Bytes below which a body of known length is sent as it is: smaller ones gain
    /// less than a packet and still cost an encoder's set-up.
    #[serde(
        deserialize_with = "super::value::bytes::within::<_, u64, 0, 1_073_741_824>",
        serialize_with = "super::value::bytes::serialize"
    )]
    pub min_size: u64,
    /// The media types compressed: `type/subtype`, `type/*`, or `type/*+suffix`
    /// (`application/*+json`); parameters of a `Content-Type` are ignored.
    pub types: Vec<String>,
    /// gzip's level (1 fastest … 9 smallest).
    #[serde(deserialize_with = "super::value::number::<_, u32, 1, 9>")]
    pub gzip_level: u32,
    /// Brotli's quality (0 fastest … 11 smallest).
    #[serde(deserialize_with = "super::value::number::<_, u32, 0, 11>")]
    pub brotli_level: u32,
    /// Zstandard's level (1 fastest … 19 smallest; the "ultra" levels past 19 take
    /// tens of megabytes per answer and are not offered).
    #[serde(deserialize_with = "super::value::number::<_, i32, 1, 19>")]
    pub zstd_level: i32,
    /// Serves a static file's precompressed sibling (`file.css.zst`, `.br`, `.gz`)
    /// when the client accepts its coding and it is not older than the file.
    pub precompressed: bool,
    /// Bytes of static files compressed on the fly kept in memory (the least recently
    /// used dropped first), so that a file without a precompressed sibling is
    /// compressed once per version and coding, not on every request; 0 keeps none.
    /// Files up to 1 MiB and an eighth of this are kept; larger ones are compressed as
    /// they are sent.
    #[serde(
        deserialize_with = "super::value::bytes::within::<_, u64, 0, 1_099_511_627_776>",
        serialize_with = "super::value::bytes::serialize"
    )]
    pub cache_size: u64,
}

/// The types compressed by default: text and the text-like formats of the web. Images,
/// audio, video, fonts in WOFF and archives are compressed already.
const TYPES: [&str; 13] = [
    "text/*",
    "application/json",
    "application/*+json",
    "application/javascript",
    "application/ecmascript",
    "application/xml",
    "application/*+xml",
    "application/wasm",
    "application/x-ndjson",
    "application/manifest+json",
    "application/graphql-response+json",
    "image/svg+xml",
    "image/x-icon",
];

impl Default for CompressionSpec {
    fn default() -> Self {
        Self {
            enabled: cfg!(feature = "compression"),
            min_size: 1024,
            types: TYPES.iter().map(|t| (*t).to_owned()).collect(),
            // As few bytes as nginx's default (`gzip_comp_level 1`, system zlib) for
            // less CPU: zlib-rs's level 1 is a quicker algorithm that sent 44% more
            // (docs/guide/compression.md, "The defaults").
            gzip_level: 2,
            // Zstandard's fastest level costs less than gzip's and compresses text
            // best; Brotli's level 1 about what nginx's gzip does, for far fewer bytes.
            brotli_level: 1,
            zstd_level: 1,
            precompressed: true,
            cache_size: 16 * 1024 * 1024,
        }
    }
}
