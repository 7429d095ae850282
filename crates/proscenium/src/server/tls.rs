//! The server's TLS (`[tls]`): its configuration and certificates (reloaded on
//! SIGHUP), the ACME task, and the plain-HTTP listener beside it (`[tls.plain]`).

use std::sync::Arc;

use super::Started;
use crate::config::{PlainServes, PlainSpec};
use crate::http::h1::Http1;
use crate::rt::event_loop::LoopSpec;
use crate::tls::Tls;
use crate::tls::acme::{AcmeHandle, Http01Tokens};
use crate::tls::plain::PlainListener;
use crate::transport::ServerConfig;
use crate::{App, Config, Error};

/// The server's TLS and its ACME task, stopped when it is dropped.
#[derive(Debug)]
pub(super) struct Secure {
    tls: Tls,
    _acme: Option<AcmeHandle>,
}

impl Secure {
    /// The TLS `config` asks for, if any, its files watched; the process holding the
    /// ACME store's lock orders and renews, the others take its certificate from the
    /// store.
    pub(super) fn start(config: &Config) -> Result<Option<Self>, Error> {
        let tls = Tls::new(&config.tls, config.http2.enabled)
            .map_err(|e| Error::app(format!("TLS: {e}")))?;
        Ok(tls.map(|tls| {
            tls.watch();
            let acme = crate::tls::acme::start(&config.tls, tls.certs.clone());
            Self { tls, _acme: acme }
        }))
    }

    /// What each connection's session is made from.
    pub(super) fn server_config(&self) -> Arc<ServerConfig> {
        self.tls.config.clone()
    }

    /// Reads the certificates again (SIGHUP).
    pub(super) fn reload(&self) {
        tracing::info!("SIGHUP: reloading the TLS certificates");
        self.tls.certs.reload();
    }

    /// Starts the plain-HTTP listener beside the TLS one (`[tls.plain]`): one event loop of
    /// its own (in a prefork server, the supervisor's), answering ACME's HTTP-01 challenges
    /// and then redirecting to the TLS listener's `https_port` or serving `app` as the TLS
    /// listener does.
    pub(super) fn start_plain(
        &self,
        plain: &PlainSpec,
        server: &Config,
        spec: &LoopSpec<Http1>,
        app: Arc<App>,
        https_port: u16,
    ) -> Result<Started, Error> {
        let tokens = server
            .tls
            .acme
            .is_some()
            .then(|| Http01Tokens::new(&server.tls));
        let listener = PlainListener {
            tokens,
            app: (plain.serve == PlainServes::App).then_some(app),
            https_port,
        };
        // Its one loop answers redirects, or the app as the TLS listener's loops do.
        let config = super::side::config(server, plain.bind);
        let started = super::side::start(&config, Arc::new(listener), spec)?;
        tracing::info!("plain HTTP on {} ({:?})", started.addr, plain.serve);
        Ok(started)
    }
}
