//! A listener beside the server's: one loop of plain HTTP/1.1 on an address of its
//! own, with the server's limits and timeouts — the admin listener, and the plain
//! listener beside TLS.

use std::net::SocketAddr;
use std::sync::Arc;

use super::{Started, start_loops};
use crate::config::{Dispatch, Model, TlsSpec};
use crate::http::h1::Http1;
use crate::http::response::Respond;
use crate::rt::event_loop::LoopSpec;
use crate::rt::{RuntimeSettings, watchdog};
use crate::{Config, Error};

/// The configuration of a side listener on `bind`: the `server`'s, on one loop, no
/// TLS.
pub(super) fn config(server: &Config, bind: SocketAddr) -> Config {
    Config {
        bind,
        model: Model::EventLoop,
        loops: Some(1),
        dispatch: Dispatch::Jsq,
        tls: TlsSpec::default(),
        ..server.clone()
    }
}

/// Starts a side listener serving `app` as `config` says, with `spec`'s gate, pools
/// and shutdown. No watchdog of its own: the server's speaks for the app.
pub(super) fn start(
    config: &Config,
    app: Arc<dyn Respond>,
    spec: &LoopSpec<Http1>,
) -> Result<Started, Error> {
    let side = LoopSpec {
        protocol: Arc::new(Http1::new(app, config)),
        settings: Arc::new(RuntimeSettings::of(config)),
        tls: None,
        ..spec.clone()
    };
    start_loops(config, &side, None, &watchdog::LiveStats::default(), None)
}
