//! The stand-in for the server's TLS in a build without the `tls` feature, where
//! `site::configure` refuses `[tls]`: there is never any.

use std::sync::Arc;

use super::Started;
use crate::config::PlainSpec;
use crate::http::h1::Http1;
use crate::rt::event_loop::LoopSpec;
use crate::transport::ServerConfig;
use crate::{App, Config, Error};

/// The server's TLS, of which this build has none.
#[derive(Debug)]
pub(super) enum Secure {}

impl Secure {
    /// None: `[tls]` was refused before.
    pub(super) fn start(_: &Config) -> Result<Option<Self>, Error> {
        Ok(None)
    }

    pub(super) fn server_config(&self) -> Arc<ServerConfig> {
        match *self {}
    }

    pub(super) fn reload(&self) {
        match *self {}
    }

    pub(super) fn start_plain(
        &self,
        _: &PlainSpec,
        _: &Config,
        _: &LoopSpec<Http1>,
        _: Arc<App>,
        _: u16,
    ) -> Result<Started, Error> {
        match *self {}
    }
}
