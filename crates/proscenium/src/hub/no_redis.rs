//! The stand-in for the hub's Redis link in a build without the `redis` feature,
//! where `[feeds] redis` is refused: a hub shares nothing with other replicas.

use std::sync::{Arc, Weak};

use super::Inner;
use super::post::Post;
use crate::config::FeedsSpec;

/// A link to Redis, of which this build has none.
#[derive(Debug)]
pub(super) enum Bridge {}

impl Bridge {
    /// None: `[feeds] redis` is refused when the configuration is read.
    pub(super) fn start_if_named(_: &FeedsSpec, _: u64, _: Weak<Inner>) -> Option<Self> {
        None
    }

    pub(super) fn send(&self, _: u64, _: &Arc<Post>) -> bool {
        match *self {}
    }

    pub(super) fn is_connected(&self) -> bool {
        match *self {}
    }

    pub(super) fn carries_raw(&self, _: &str) -> bool {
        match *self {}
    }
}
