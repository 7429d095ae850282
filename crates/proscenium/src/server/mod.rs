//! Starting and stopping a server: listeners, loops, dispatcher and watchdog, and
//! the admin listener beside them.

#[cfg(feature = "metrics")]
mod admin;
#[cfg(not(feature = "metrics"))]
#[path = "no_admin.rs"]
mod admin;
#[cfg(any(feature = "metrics", feature = "tls"))]
mod side;
mod signals;
#[cfg(feature = "tls")]
mod tls;
#[cfg(not(feature = "tls"))]
#[path = "no_tls.rs"]
mod tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::{Notify, watch};

use crate::app::Mode;
use crate::config::reload::{self, Settled};
use crate::config::{Dispatch, Model};
use crate::http::h1::Http1;
use crate::rt::dispatcher::{self, Target};
use crate::rt::event_loop::{self, LoopSpec};
use crate::rt::overload::Gate;
use crate::rt::{Pools, RuntimeSettings, prefork, systemd, threads, watchdog};
use crate::{App, Config, Error, Method, site};

use self::admin::{Admin, Metering};
pub(crate) use self::signals::Signals;
use self::tls::Secure;

/// Pending connections the kernel holds for each listener (capped by
/// `net.core.somaxconn`): as nginx's `backlog=4096`, so a burst of thousands of
/// connections opened at once waits rather than being refused.
const BACKLOG: i32 = 4096;

/// A server: an [`App`] and the [`Config`] that says how to run it.
///
/// # Examples
///
/// ```no_run
/// use proscenium::{App, Server, inline};
///
/// let app = App::new().get("/", inline(|| "Hello, World!"));
/// Server::new(app).bind("127.0.0.1:3000".parse().unwrap()).run().unwrap();
/// ```
#[derive(Debug)]
pub struct Server {
    app: App,
    config: Config,
    worker_command: Option<prefork::WorkerCommand>,
}

impl Server {
    /// Returns a server for `app` with the default configuration.
    pub fn new(app: App) -> Self {
        Self {
            app,
            config: Config::default(),
            worker_command: None,
        }
    }

    /// Replaces the whole configuration.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Sets the address to listen on.
    #[must_use]
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.config.bind = addr;
        self
    }

    /// Sets the number of event loops.
    #[must_use]
    pub fn loops(mut self, loops: usize) -> Self {
        self.config.loops = Some(loops);
        self
    }

    /// Sets how connections are given to loops.
    #[must_use]
    pub fn dispatch(mut self, dispatch: Dispatch) -> Self {
        self.config.dispatch = dispatch;
        self
    }

    /// Has `prepare` give each worker process its arguments (and any environment or
    /// standard streams of its own), in place of this process's arguments: a test
    /// harness re-executed as a worker must run only the test that started it.
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn worker_command(
        mut self,
        prepare: impl Fn(&mut std::process::Command) + Send + Sync + 'static,
    ) -> Self {
        self.worker_command = Some(prefork::WorkerCommand(Arc::new(prepare)));
        self
    }

    /// Starts serving in background threads and returns at once.
    ///
    /// # Errors
    ///
    /// When the address cannot be bound, a thread cannot start, or no file can be made
    /// in `limits.spool_dir`.
    pub fn start(self) -> Result<ServerHandle, Error> {
        let config = Arc::new(self.config);
        // The staged model's own graph, in `/_status` once it runs.
        let graph = Arc::new(OnceLock::new());
        let app = match config.serving_model() {
            Model::Staged => {
                let shown = graph.clone();
                self.app.status(crate::staged::STATUS, move || {
                    shown.get().map(crate::stage::GraphMonitor::stats)
                })
            }
            _ => self.app,
        };
        let app = site::configure(app, &config).map_err(|e| Error::app(e.to_string()))?;
        app.check_state().map_err(Error::app)?;
        check_pools(&app, &config)?;
        check_spool_dir(&config)?;
        let live = app.live.clone();
        let (shutdown_tx, shutdown) = watch::channel(false);
        if let Some(followed) = prefork::follow_supervisor() {
            followed.map_err(Error::io("follow the supervisor"))?;
        }
        let seat = match prefork::inherited_seat(live.clone()) {
            Some(seat) => Some(seat.map_err(Error::io("take the load board from the supervisor"))?),
            None => None,
        };
        let secure = Secure::start(&config)?;
        let metering = Metering::plan(&config, &app)?;
        let app = Arc::new(app);
        let http1 = Http1::new(app.clone(), &config);
        let protocol = match &metering {
            Some(metering) => http1.with_meters(metering.meters()),
            None => http1,
        };
        let spec = LoopSpec {
            protocol: Arc::new(protocol.clone()),
            settings: Arc::new(RuntimeSettings::of(&config)),
            pools: Pools::new(&config),
            shutdown,
            gate: Gate::new(config.limits.max_connections, seat),
            tls: secure.as_ref().map(Secure::server_config),
        };
        let for_plain = (spec.clone(), app.clone());
        let for_admin = spec.clone();
        let activated = match systemd::activated_listener() {
            Some(listener) => Some(listener.map_err(Error::io("take the activated socket"))?),
            None => None,
        };
        let inherited = match prefork::inherited_listener() {
            Some(listener) => {
                Some(listener.map_err(Error::io("take the socket from the supervisor"))?)
            }
            None => None,
        };
        let mut reloading = Reloading::Protocol(Box::new(protocol));
        // A worker serves its supervisor's socket, under the model the configuration
        // names now: it may have been read again since the supervisor started.
        let started = match (inherited, config.supervised()) {
            (Some(listener), _) => serve(&config, spec, &graph, app, &live, Some(listener))?,
            (None, true) => {
                let roll = Arc::new(Notify::new());
                reloading = Reloading::Workers(roll.clone());
                let links = metering.as_ref().and_then(Metering::links);
                let command = self.worker_command;
                start_supervisor(config.bind, spec, activated, roll, links, command)?
            }
            (None, false) => serve(&config, spec, &graph, app, &live, activated)?,
        };
        let notifier = systemd::Notifier::from_env();
        if let Some(notifier) = &notifier {
            notifier
                .keep_petting(live)
                .map_err(Error::io("start the systemd watchdog"))?;
        }
        let mut threads = started.threads;
        let mut plain_addr = None;
        if let (Some(plain), Some(secure)) = (&config.tls.plain, &secure) {
            // Under prefork the supervisor serves it: workers share only the TLS port.
            if crate::rt::prefork_worker().is_none() {
                let (spec, app) = for_plain;
                let plain = secure.start_plain(plain, &config, &spec, app, started.addr.port())?;
                plain_addr = Some(plain.addr);
                threads.extend(plain.threads);
            }
        }
        let admin = match metering {
            Some(metering) => metering.start(&config, &for_admin)?,
            None => None,
        };
        Ok(ServerHandle {
            config,
            reloading,
            reread: None,
            addr: started.addr,
            shutdown: shutdown_tx,
            threads,
            watchdog: started.watchdog,
            secure,
            plain_addr,
            admin,
            notifier,
        })
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully. SIGHUP meanwhile
    /// reloads the TLS certificates and, under `prefork`, replaces the workers; the
    /// configuration is read again only by an app started through
    /// [`launch`](crate::launch), which knows where it came from.
    ///
    /// # Errors
    ///
    /// When the server cannot start, or signals cannot be watched.
    pub fn run(self) -> Result<(), Error> {
        self.start()?.run_until_signal()
    }
}

/// Refuses an app with a route on a blocking pool the configuration does not define.
fn check_pools(app: &App, config: &Config) -> Result<(), Error> {
    let missing = app.routes().find_map(|route| match route.mode {
        Mode::Pool(name) if !config.pools.contains_key(name) => Some((route, name)),
        _ => None,
    });
    match missing {
        Some((route, name)) => Err(Error::app(format!(
            "route {} {} runs on blocking pool `{name}`, which the configuration does not define ([pools.{name}] threads = N)",
            route.method.as_ref().map_or("*", Method::as_str),
            route.pattern
        ))),
        None => Ok(()),
    }
}

/// Refuses a spool directory the server cannot make its files in, unless no body can
/// be spooled (`spool_above` at `max_body` or more): found at start-up, not by the
/// first large body.
fn check_spool_dir(config: &Config) -> Result<(), Error> {
    let limits = &config.limits;
    if limits.spool_above >= limits.max_body {
        return Ok(());
    }
    crate::http::intake::create_spool_file(&limits.spool_dir)
        .map(drop)
        .map_err(Error::io(format!(
            "spool request bodies in limits.spool_dir {}",
            limits.spool_dir.display()
        )))
}

/// What starting a model left running.
struct Started {
    addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
    watchdog: Option<(JoinHandle<()>, Arc<AtomicBool>)>,
}

/// Serves under the configuration's serving model, in this process: on `given` (a
/// worker's inherited socket, or the one systemd passed), else on sockets bound to
/// `config.bind`.
fn serve(
    config: &Config,
    spec: LoopSpec<Http1>,
    graph: &OnceLock<crate::stage::GraphMonitor>,
    app: Arc<App>,
    live: &watchdog::LiveStats,
    given: Option<std::net::TcpListener>,
) -> Result<Started, Error> {
    match config.serving_model() {
        Model::Loops | Model::EventLoop | Model::Prefork => {
            start_loops(config, &spec, Some(app), live, given)
        }
        Model::ThreadPool | Model::ThreadPerConn => start_threads(config, spec, given),
        Model::Staged => start_staged(config, spec, graph, given),
    }
}

/// Starts the loops, their dispatcher (unless each loop accepts for itself) and, given
/// the app whose routes it names, the watchdog.
///
/// A worker serves the `inherited` socket, and a socket-activated server the one
/// systemd passed, dispatching with JSQ.
fn start_loops(
    config: &Config,
    spec: &LoopSpec<Http1>,
    app: Option<Arc<App>>,
    live: &watchdog::LiveStats,
    inherited: Option<std::net::TcpListener>,
) -> Result<Started, Error> {
    let loops = config.loop_count();
    let own_listeners = config.dispatch == Dispatch::Reuseport && inherited.is_none();
    let mut listeners = match inherited {
        Some(listener) => vec![listener],
        None => listen(config.bind, config.dispatch, loops)?,
    };
    let addr = local_addr(&listeners[0])?;
    // A worker has one inherited socket, so there `reuseport` falls back to JSQ.
    let rule = match config.dispatch {
        Dispatch::Reuseport => Dispatch::Jsq,
        rule => rule,
    };
    let mut handles = Vec::with_capacity(loops);
    for id in 0..loops {
        let listener = own_listeners.then(|| listeners.remove(0));
        handles.push(
            event_loop::spawn(id, spec.clone(), listener).map_err(Error::io("start a loop"))?,
        );
    }
    let stats: Vec<_> = handles.iter().map(|h| h.stats.clone()).collect();
    live.set(stats.clone());
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    if !own_listeners {
        let targets = handles
            .iter()
            .map(|h| Target {
                conns: h.conns.clone(),
                stats: h.stats.clone(),
            })
            .collect();
        let dispatcher = dispatcher::spawn(
            listeners.remove(0),
            rule,
            targets,
            spec.gate.clone(),
            spec.shutdown.clone(),
        );
        threads.push(dispatcher.map_err(Error::io("start the dispatcher"))?);
    }
    threads.extend(handles.into_iter().map(|h| h.thread));
    let watchdog = match app {
        Some(app) => {
            let running = Arc::new(AtomicBool::new(true));
            let watchdog = spawn_watchdog(app, stats, config.timeouts.stall, running.clone())?;
            Some((watchdog, running))
        }
        None => None,
    };
    Ok(Started {
        addr,
        threads,
        watchdog,
    })
}

/// Starts the supervisor, which starts and watches the worker processes
/// (linked for their metrics by `links`), and replaces them one at a time at each
/// notification of `roll`.
fn start_supervisor(
    bind: SocketAddr,
    spec: LoopSpec<Http1>,
    activated: Option<std::net::TcpListener>,
    roll: Arc<Notify>,
    links: Option<Arc<dyn prefork::MetricsLinks>>,
    command: Option<prefork::WorkerCommand>,
) -> Result<Started, Error> {
    let listener = bind_listener(bind, activated)?;
    let addr = local_addr(&listener)?;
    let supervisor = prefork::spawn(listener, spec.settings, spec.shutdown, roll, links, command)
        .map_err(Error::io("start the workers"))?;
    Ok(Started {
        addr,
        threads: vec![supervisor],
        watchdog: None,
    })
}

/// Starts a thread model's acceptor, which owns its threads. No watchdog: these
/// threads may block by design.
fn start_threads(
    config: &Config,
    spec: LoopSpec<Http1>,
    given: Option<std::net::TcpListener>,
) -> Result<Started, Error> {
    let listener = bind_listener(config.bind, given)?;
    let addr = local_addr(&listener)?;
    let acceptor = threads::spawn(listener, spec).map_err(Error::io("start the acceptor"))?;
    Ok(Started {
        addr,
        threads: vec![acceptor],
        watchdog: None,
    })
}

/// Starts the staged model's graph, and the thread that stops it. No watchdog: its
/// threads run the stages' handlers, and the stage stats show a stuck one.
fn start_staged(
    config: &Config,
    spec: LoopSpec<Http1>,
    graph: &OnceLock<crate::stage::GraphMonitor>,
    given: Option<std::net::TcpListener>,
) -> Result<Started, Error> {
    let listener = bind_listener(config.bind, given)?;
    let addr = local_addr(&listener)?;
    let stopper = crate::staged::spawn(listener, config, spec, graph)
        .map_err(|e| Error::io("start the staged server")(std::io::Error::other(e.to_string())))?;
    Ok(Started {
        addr,
        threads: vec![stopper],
        watchdog: None,
    })
}

/// Returns the socket `given` (a worker's inherited one, or systemd's), else binds
/// `addr`.
fn bind_listener(
    addr: SocketAddr,
    given: Option<std::net::TcpListener>,
) -> Result<std::net::TcpListener, Error> {
    match given {
        Some(listener) => Ok(listener),
        None => bind(addr, false).map_err(Error::io(format!("listen on {addr}"))),
    }
}

fn local_addr(listener: &std::net::TcpListener) -> Result<SocketAddr, Error> {
    listener
        .local_addr()
        .map_err(Error::io("read the bound address"))
}

fn spawn_watchdog(
    app: Arc<App>,
    stats: Vec<Arc<watchdog::LoopStats>>,
    threshold: std::time::Duration,
    running: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, Error> {
    std::thread::Builder::new()
        .name("proscenium-watchdog".to_owned())
        .spawn(move || {
            watchdog::watch(&stats, threshold, &|id| app.route_label(id), &|| {
                running.load(Ordering::Relaxed)
            });
        })
        .map_err(Error::io("start the watchdog"))
}

/// Binds the listeners: one, or one per loop sharing the port with `SO_REUSEPORT`.
fn listen(
    addr: SocketAddr,
    dispatch: Dispatch,
    loops: usize,
) -> Result<Vec<std::net::TcpListener>, Error> {
    let count = if dispatch == Dispatch::Reuseport {
        loops
    } else {
        1
    };
    let mut listeners = Vec::with_capacity(count);
    let mut addr = addr;
    for _ in 0..count {
        let listener = bind(addr, dispatch == Dispatch::Reuseport)
            .map_err(Error::io(format!("listen on {addr}")))?;
        addr = local_addr(&listener)?;
        listeners.push(listener);
    }
    Ok(listeners)
}

fn bind(addr: SocketAddr, reuse_port: bool) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Where a SIGHUP's configuration goes.
#[derive(Debug)]
enum Reloading {
    /// The protocol of this process's loops and threads, which serve their next
    /// connections with it.
    Protocol(Box<Http1>),
    /// A prefork supervisor's workers, replaced one at a time: each new one reads
    /// the configuration itself.
    Workers(Arc<Notify>),
}

/// Reads the configuration again from the sources it was read from at start.
pub(crate) struct Reread(Box<dyn Fn() -> Result<Config, String> + Send>);

impl std::fmt::Debug for Reread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reread")
    }
}

/// A running server; dropping it shuts the server down gracefully.
#[derive(Debug)]
pub struct ServerHandle {
    /// The configuration it runs with, as the last SIGHUP settled it.
    config: Arc<Config>,
    /// Where a reloaded configuration goes.
    reloading: Reloading,
    /// How SIGHUP reads the configuration again; without it, SIGHUP reloads the
    /// certificates and (under prefork) replaces the workers.
    reread: Option<Reread>,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
    watchdog: Option<(JoinHandle<()>, Arc<AtomicBool>)>,
    /// The server's TLS, its certificates reloaded on SIGHUP, and its ACME task.
    secure: Option<Secure>,
    /// Where the plain-HTTP listener beside the TLS one listens, if it does.
    plain_addr: Option<SocketAddr>,
    /// The admin listener (`[admin]`), if this process serves it.
    admin: Option<Admin>,
    /// systemd's notify socket (`NOTIFY_SOCKET`), if it listens.
    notifier: Option<systemd::Notifier>,
}

impl ServerHandle {
    /// Returns the address the server listens on (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Returns the address of the plain-HTTP listener beside the TLS one
    /// (`[tls.plain]`), if this process serves it.
    pub fn plain_addr(&self) -> Option<SocketAddr> {
        self.plain_addr
    }

    /// Returns the address of the admin listener (`[admin] bind`), if this process
    /// serves it (under prefork, the supervisor does).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(Admin::addr)
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully. SIGHUP meanwhile
    /// reloads the TLS certificates and, under `prefork`, replaces the workers; the
    /// configuration is read again only by an app started through
    /// [`launch`](crate::launch), which knows where it came from.
    ///
    /// # Errors
    ///
    /// When signals cannot be watched (the server is shut down all the same).
    pub fn run_until_signal(self) -> Result<(), Error> {
        match Signals::watch() {
            Ok(signals) => {
                self.run_until(signals);
                Ok(())
            }
            Err(e) => {
                self.shutdown();
                Err(e)
            }
        }
    }

    #[cfg(feature = "cli")]
    /// Has SIGHUP read the configuration again with `reread` (the sources it was
    /// read from at start: file, environment, flags).
    #[must_use]
    pub(crate) fn rereading(
        mut self,
        reread: impl Fn() -> Result<Config, String> + Send + 'static,
    ) -> Self {
        self.reread = Some(Reread(Box::new(reread)));
        self
    }

    /// Serves until SIGTERM or SIGINT arrives, then shuts down gracefully; SIGHUP
    /// meanwhile reloads (see [`ServerHandle::reload`]). Tells systemd, when it
    /// listens, that the server is ready, reloading, or stopping.
    pub(crate) fn run_until(mut self, signals: Signals) {
        self.notify("READY=1");
        signals.wait(|| self.reload());
        self.notify("STOPPING=1");
        tracing::info!("shutting down: finishing requests in flight");
        self.shutdown();
    }

    /// SIGHUP: reloads the TLS certificates, reads the configuration again and
    /// takes up what can change live, saying in one line which keys wait for a
    /// restart; under prefork, then replaces the workers. A configuration that does
    /// not read or check keeps the running one, and the workers, and says why.
    fn reload(&mut self) {
        if let Some(notifier) = &self.notifier {
            notifier.reloading();
        }
        if let Some(secure) = &self.secure {
            secure.reload();
        }
        match self.reread() {
            Ok(settled) => {
                if let Some(settled) = settled {
                    self.take_up(settled);
                }
                if let Reloading::Workers(roll) = &self.reloading {
                    roll.notify_one();
                }
            }
            Err(e) => tracing::error!(
                "SIGHUP: the configuration is not reloaded, the running one stays: {e}"
            ),
        }
        self.notify("READY=1");
    }

    /// Reads the configuration again and settles it against the running one;
    /// `None` when this server has no sources to read it from.
    fn reread(&self) -> Result<Option<Settled>, String> {
        let Some(reread) = &self.reread else {
            return Ok(None);
        };
        let settled = reload::settle(&self.config, (reread.0)()?);
        check_spool_dir(&settled.config).map_err(|e| e.to_string())?;
        Ok(Some(settled))
    }

    fn take_up(&mut self, settled: Settled) {
        if !settled.kept.is_empty() {
            tracing::warn!(
                "SIGHUP: these keys keep their running values until a restart: {}",
                settled.kept.join(", ")
            );
        }
        self.config = Arc::new(settled.config);
        if let Reloading::Protocol(protocol) = &self.reloading {
            protocol.reload(&self.config);
        }
        tracing::info!("SIGHUP: configuration reloaded");
    }

    fn notify(&self, state: &str) {
        if let Some(notifier) = &self.notifier {
            notifier.send(state);
        }
    }

    /// Stops accepting, lets requests in flight finish (up to the shutdown timeout),
    /// closes idle connections, and returns when every thread has ended.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Reloading::Protocol(protocol) = &self.reloading {
            protocol.forget_reloads();
        }
        let _ = self.shutdown.send(true);
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a server thread panicked");
            }
        }
        if let Some((thread, running)) = self.watchdog.take() {
            running.store(false, Ordering::Relaxed);
            let _ = thread.join();
        }
        // Last: it says "draining" on /readyz until the server has stopped.
        if let Some(admin) = self.admin.take() {
            admin.stop();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
