//! The stand-in for `otlp.rs` in a build without `traces`, where `traces::check`
//! refuses `[traces] otlp` before a start is tried: no export can exist.

use tracing_subscriber::layer::Identity;

use crate::config::TracesSpec;

/// No way to a collector.
pub(super) enum Export {}

impl Export {
    pub(super) fn start(_: &str, _: &TracesSpec, _: &str) -> Result<Self, &'static str> {
        Err("this build leaves out the `traces` feature")
    }

    pub(super) fn layer(&self) -> Identity {
        match *self {}
    }

    pub(super) fn finish(self) {
        match self {}
    }
}
