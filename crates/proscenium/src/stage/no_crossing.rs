//! The stand-in for a mapped graph's crossings in a build without the `redis` feature:
//! a graph runs in one process, so no mapping, writer or reader can exist, and every
//! connector stays inside the process.

use std::sync::Arc;
use std::time::Duration;

use super::definition::Payload;
use super::error::StageError;
use super::graph::{Edge, Entry, Graph};
use super::node::Shared;
use super::plan::Plan;

/// A graph's mapping onto processes, of which this build has none.
pub(crate) enum Mapping {}

/// A writer to another process, of which this build has none.
pub(crate) enum Outbound {}

impl Outbound {
    pub(crate) fn send_timeout(&self, _: Payload, _: Duration) -> Result<(), Payload> {
        match *self {}
    }

    pub(crate) fn try_send(&self, _: Payload) -> Result<(), Payload> {
        match *self {}
    }
}

/// A writer's progress, of which this build has none.
pub(crate) enum Progress {}

/// A reader of another process's events, of which this build has none.
pub(crate) enum Inbound {}

/// No crossings: every connector stays in the process.
pub(super) struct Crossings;

impl Crossings {
    pub(super) fn new(
        _: &Graph,
        _: &Plan,
        _: Option<&Mapping>,
        _: &[bool],
    ) -> Result<Self, StageError> {
        Ok(Self)
    }

    pub(super) fn edge(&mut self, _: &Edge) -> Result<Option<Arc<Outbound>>, StageError> {
        Ok(None)
    }

    pub(super) fn entry(&mut self, _: &Entry) -> Result<Option<Arc<Outbound>>, StageError> {
        Ok(None)
    }

    pub(super) fn written(&mut self) -> Arc<[Arc<Progress>]> {
        Arc::new([])
    }

    pub(super) fn inbounds(&self, _: &Arc<Shared>) -> Result<Vec<Inbound>, StageError> {
        Ok(Vec::new())
    }
}

/// Every cluster runs in this process.
pub(super) fn here(plan: &Plan, _: Option<&Mapping>) -> Result<Vec<bool>, StageError> {
    Ok(vec![true; plan.clusters.len()])
}
