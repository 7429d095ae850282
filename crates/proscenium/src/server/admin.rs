//! The admin listener beside the server (`[admin] bind`), and under prefork the links
//! between a supervisor and its workers: which process counts requests, which serves
//! `/metrics`, which answers whose scrapes.

use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::admin::{Metrics, Workers};
use crate::http::h1::Http1;
use crate::http::meter::Meters;
use crate::rt::event_loop::LoopSpec;
use crate::rt::overload::Gate;
use crate::rt::prefork;
use crate::{App, Config, Error};

/// What a process meters, and where it serves what it metered: on the admin listener,
/// or to its prefork supervisor.
#[derive(Debug)]
pub(super) struct Metering {
    /// Where the admin listener listens, if this process serves it.
    bind: Option<SocketAddr>,
    /// A prefork worker's link to its supervisor, whose scrapes it answers.
    link: Option<UnixStream>,
    /// A prefork supervisor's links to its workers, whose metrics it adds to its own.
    workers: Option<Arc<Workers>>,
    meters: Arc<Meters>,
    /// The patterns of the app's routes in their order (their numbers).
    routes: Vec<String>,
}

impl Metering {
    /// Returns what this process meters for `app` as `config` says, or `None` when it
    /// serves no admin listener and answers no supervisor: then nothing is counted.
    pub(super) fn plan(config: &Config, app: &App) -> Result<Option<Self>, Error> {
        // Under prefork the supervisor serves the admin listener, and a worker answers
        // its supervisor's scrapes over the link it inherited.
        let bind = config
            .admin
            .bind
            .filter(|_| crate::rt::prefork_worker().is_none());
        let link = match prefork::inherited_metrics_link() {
            Some(link) => Some(link.map_err(Error::io("take the metrics link"))?),
            None => None,
        };
        if bind.is_none() && link.is_none() {
            return Ok(None);
        }
        Ok(Some(Self {
            bind,
            link,
            workers: (bind.is_some() && config.supervised()).then(Workers::new),
            meters: Meters::new(app.routes().count()),
            routes: app.routes().map(|r| r.pattern.clone()).collect(),
        }))
    }

    /// Returns the request counters the protocol writes to.
    pub(super) fn meters(&self) -> Arc<Meters> {
        self.meters.clone()
    }

    /// Returns the links a prefork supervisor opens to its workers, if it serves the
    /// admin listener.
    pub(super) fn links(&self) -> Option<Arc<dyn prefork::MetricsLinks>> {
        let workers = self.workers.clone()?;
        Some(workers)
    }

    /// Serves what is metered, with `config` the server's and `spec` its loops':
    /// starts the admin listener and returns it, or answers the supervisor over the
    /// link.
    pub(super) fn start(
        self,
        config: &Config,
        spec: &LoopSpec<Http1>,
    ) -> Result<Option<Admin>, Error> {
        let metrics = Metrics::new(
            self.meters,
            self.routes,
            spec.gate.clone(),
            spec.pools.clone(),
        );
        let metrics = match self.workers {
            Some(workers) => metrics.with_workers(workers),
            None => metrics,
        };
        match (self.bind, self.link) {
            (Some(bind), _) => Admin::start(bind, metrics, config, spec).map(Some),
            (None, Some(link)) => {
                crate::admin::answer_supervisor(link, metrics)
                    .map_err(Error::io("start the metrics thread"))?;
                Ok(None)
            }
            (None, None) => Ok(None),
        }
    }
}

/// The admin listener's loop, stopped after the server's.
#[derive(Debug)]
pub(super) struct Admin {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
}

impl Admin {
    /// Starts the admin listener on `bind` on a loop of its own, with a shutdown of its
    /// own: it answers `/readyz` with 503 while the server's listener drains, and
    /// stops once the server has.
    fn start(
        bind: SocketAddr,
        metrics: Metrics,
        server: &Config,
        spec: &LoopSpec<Http1>,
    ) -> Result<Self, Error> {
        let config = Config {
            log: None,
            debug: false,
            admin: crate::config::AdminSpec::default(),
            ..super::side::config(server, bind)
        };
        let (stop, stopped) = watch::channel(false);
        let redis = crate::admin::watch_redis(server, stopped.clone())
            .map_err(Error::io("start the Redis pings"))?;
        let (redis, pinger) = redis.unzip();
        let app = crate::admin::app(metrics, spec.shutdown.clone(), redis);
        let admin_spec = LoopSpec {
            gate: Gate::new(config.limits.max_connections, None),
            shutdown: stopped,
            ..spec.clone()
        };
        let started = super::side::start(&config, Arc::new(app), &admin_spec)?;
        tracing::info!("admin listener on http://{}", started.addr);
        Ok(Self {
            addr: started.addr,
            stop,
            threads: started.threads.into_iter().chain(pinger).collect(),
        })
    }

    /// Returns the address it listens on.
    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops it and waits for its threads.
    pub(super) fn stop(self) {
        let _ = self.stop.send(true);
        for thread in self.threads {
            if thread.join().is_err() {
                tracing::error!("an admin listener thread panicked");
            }
        }
    }
}
