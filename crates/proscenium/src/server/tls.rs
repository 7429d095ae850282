//! The server's TLS (`[tls]`): its configuration and certificates (reloaded on
//! SIGHUP), the ACME task, and the plain-HTTP listener beside it (`[tls.plain]`).

use std::sync::Arc;

use super::{Started, start_loops};
use crate::config::{Dispatch, Model, PlainServes, PlainSpec, TlsSpec};
use crate::http::h1::Http1;
use crate::rt::event_loop::LoopSpec;
use crate::rt::{RuntimeSettings, watchdog};
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
        let mut config = server.clone();
        config.bind = plain.bind;
        config.model = Model::EventLoop;
        config.loops = Some(1);
        config.dispatch = Dispatch::Jsq;
        let tokens = config
            .tls
            .acme
            .is_some()
            .then(|| Http01Tokens::new(&config.tls));
        config.tls = TlsSpec::default();
        let listener = PlainListener {
            tokens,
            app: (plain.serve == PlainServes::App).then_some(app),
            https_port,
        };
        let plain_spec = LoopSpec {
            protocol: Arc::new(Http1::new(Arc::new(listener), &config)),
            settings: Arc::new(RuntimeSettings::of(&config)),
            tls: None,
            ..spec.clone()
        };
        // Its one loop answers redirects, or the app as the TLS listener's loops do (whose
        // watchdog speaks for the app): no watchdog of its own.
        let started = start_loops(
            &config,
            &plain_spec,
            None,
            &watchdog::LiveStats::default(),
            None,
        )?;
        tracing::info!("plain HTTP on {} ({:?})", started.addr, plain.serve);
        Ok(started)
    }
}
