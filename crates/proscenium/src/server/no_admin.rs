//! The stand-in for the admin listener in a build without the `metrics` feature, where
//! `site::configure` refuses `[admin] bind`: there is never one, so no process counts
//! requests, and no prefork supervisor links to its workers.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::http::h1::Http1;
use crate::http::meter::Meters;
use crate::rt::event_loop::LoopSpec;
use crate::rt::prefork::MetricsLinks;
use crate::{App, Config, Error};

/// What a process meters, of which this build has nothing.
#[derive(Debug)]
pub(super) enum Metering {}

impl Metering {
    /// None: `[admin] bind` was refused before.
    pub(super) fn plan(_: &Config, _: &App) -> Result<Option<Self>, Error> {
        Ok(None)
    }

    pub(super) fn meters(&self) -> Arc<Meters> {
        match *self {}
    }

    pub(super) fn links(&self) -> Option<Arc<dyn MetricsLinks>> {
        match *self {}
    }

    pub(super) fn start(self, _: &Config, _: &LoopSpec<Http1>) -> Result<Option<Admin>, Error> {
        match self {}
    }
}

/// The admin listener, of which this build has none.
#[derive(Debug)]
pub(super) enum Admin {}

impl Admin {
    pub(super) fn addr(&self) -> SocketAddr {
        match *self {}
    }

    pub(super) fn stop(self) {
        match self {}
    }
}
