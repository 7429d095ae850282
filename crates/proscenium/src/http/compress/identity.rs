//! Answers as they are: the stand-in for compression on the fly in a build without
//! the `compression` feature, where `[compression] enabled` defaults to off and is
//! refused on (`site::configure`). Precompressed static files are served all the same.

use http::HeaderValue;

use crate::config::CompressionSpec;
use crate::http::Response;

/// Nothing to hold: no answer is compressed.
#[derive(Debug)]
pub(crate) struct Compression;

impl Compression {
    /// Returns the stand-in; `spec` is off (see the module).
    pub(crate) fn new(_: &CompressionSpec) -> Self {
        Self
    }
}

/// Leaves the answer as it is.
pub(crate) fn compress(_: &mut Response, _: Option<&HeaderValue>, _: bool, _: &Compression) {}
