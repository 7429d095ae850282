//! One command line for every app built on Proscenium: how an app runs is chosen where
//! it is deployed — `proscenium.toml`, `PROSCENIUM_*` variables, flags — never in its
//! code.
//!
//! [`main`] (or a [`Launcher`], for an app with defaults or options of its own) gives a
//! binary the commands `serve` (the default), `routes` and `config`, with the deploy
//! flags of `proscenium serve`. The app is built after the configuration is resolved,
//! by a function handed a [`Deploy`]: the configuration, the app's options, and an
//! actor system with the configured dispatchers.
//!
//! Over processes (`[processes.NAME]` in the configuration), `serve` starts and
//! supervises the processes mapped to `--host` (default `localhost`), and `serve
//! --process NAME` runs one of them: see [`Deploy::start_graph`].
//!
//! Exit codes: 0 after a clean shutdown, 1 when the server fails (address in use, ...),
//! 2 for a bad flag, variable or file, 78 for a process whose graph or mapping is
//! wrong (its supervisor does not restart it).
//!
//! # Examples
//!
//! ```no_run
//! use proscenium::{App, inline};
//!
//! fn main() -> std::process::ExitCode {
//!     proscenium::main(|_| App::new().get("/", inline(|| "Hello, World!")))
//! }
//! ```

mod args;
#[cfg(not(feature = "traces"))]
#[path = "no_otlp.rs"]
mod otlp;
#[cfg(feature = "traces")]
mod otlp;
mod processes;
mod report;
mod traces;

use std::cell::OnceCell;
use std::marker::PhantomData;
use std::process::ExitCode;
use std::sync::Arc;

use parking_lot::Mutex;

use clap::{Args, CommandFactory, FromArgMatches};

use self::args::{Action, Cli};
pub use self::args::{Command, DeployArgs, NoOptions, Options};
use self::processes::Part;
pub use self::report::{read_start_line, served_address};
use crate::actor::System;
use crate::config::{ConfigError, Settings, Sources};
#[cfg(feature = "redis")]
use crate::stage::Mapping;
use crate::stage::{EXIT_REFUSED, Graph, RunningGraph};
use crate::{App, Config};

/// Runs the app `build` returns with the command line and configuration of the
/// deployment: `serve` (the default), `routes` or `config`.
///
/// # Examples
///
/// ```no_run
/// use proscenium::{App, inline};
///
/// fn main() -> std::process::ExitCode {
///     proscenium::main(|_| App::new().get("/plaintext", inline(|| "Hello, World!")))
/// }
/// ```
pub fn main(build: impl FnOnce(&Deploy) -> App) -> ExitCode {
    Launcher::new().run(build)
}

/// Starts an app from its command line, for apps with defaults or options of their
/// own; [`main`] is `Launcher::new().run(build)`.
///
/// # Examples
///
/// ```no_run
/// use proscenium::{App, inline};
/// use proscenium::launch::Launcher;
///
/// /// The app's own options, after the deploy flags in `--help`.
/// #[derive(clap::Args)]
/// struct Greeting {
///     /// Whom to greet.
///     #[arg(long, default_value = "World")]
///     name: String,
/// }
///
/// fn main() -> std::process::ExitCode {
///     Launcher::new()
///         .defaults("loops = 1\n")
///         .options::<Greeting>()
///         .run(|deploy| {
///             let text = format!("Hello, {}!", deploy.options().name);
///             App::new().get("/", inline(move || text.clone()))
///         })
/// }
/// ```
#[derive(Debug)]
pub struct Launcher<O = NoOptions> {
    name: Option<String>,
    version: Option<String>,
    defaults: Option<String>,
    options: PhantomData<fn() -> O>,
}

impl Launcher {
    /// Returns a launcher for an app without options of its own.
    pub fn new() -> Self {
        Self {
            name: None,
            version: None,
            defaults: None,
            options: PhantomData,
        }
    }
}

impl Default for Launcher {
    fn default() -> Self {
        Self::new()
    }
}

impl<O: Args + FromArgMatches> Launcher<O> {
    /// Sets the name the app gives itself in messages [default: the binary's name].
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the version `--version` and the start line print.
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the app's own defaults, as TOML (`include_str!("../proscenium.toml")`):
    /// above Proscenium's defaults, below the file, the environment and the flags.
    #[must_use]
    pub fn defaults(mut self, toml: &str) -> Self {
        self.defaults = Some(toml.to_owned());
        self
    }

    /// Adds the app's own options (a `clap::Args` type) to every command.
    #[must_use]
    pub fn options<P: Args + FromArgMatches>(self) -> Launcher<P> {
        Launcher {
            name: self.name,
            version: self.version,
            defaults: self.defaults,
            options: PhantomData,
        }
    }

    /// Parses the process's command line and runs the command it names.
    pub fn run(self, build: impl FnOnce(&Deploy<O>) -> App) -> ExitCode {
        let args = args::default_to_serve(std::env::args_os().collect());
        let name = self.name_or_binary(args.first());
        let mut command = Cli::<O>::command().name(name.clone());
        if let Some(version) = &self.version {
            command = command.version(version.clone());
        }
        let parsed = command
            .try_get_matches_from(args)
            .and_then(|matches| Cli::<O>::from_arg_matches(&matches));
        match parsed {
            Ok(cli) => self.name(name).execute(cli.command, build),
            Err(e) if e.use_stderr() => {
                eprintln!("{name}: {}", report::one_line(&e.render().to_string()));
                ExitCode::from(2)
            }
            Err(e) => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
        }
    }

    /// Runs `command` (parsed by the caller, as a binary with commands of its own
    /// does) on the app `build` returns.
    pub fn execute(self, command: Command<O>, build: impl FnOnce(&Deploy<O>) -> App) -> ExitCode {
        let name = self.name_or_binary(std::env::args_os().next().as_ref());
        let (action, options) = command.into_parts();
        let env = std::env::vars().collect();
        let sources = options.deploy.sources(self.defaults.as_deref(), env);
        let (process, host) = (options.deploy.process, options.deploy.host);
        let settings = match Settings::resolve(&sources)
            .and_then(check_root)
            .and_then(traces::check)
            .and_then(|s| check_process(s, process.as_deref()))
        {
            Ok(settings) => settings,
            Err(e) => {
                eprintln!("{name}: {e}");
                return ExitCode::from(2);
            }
        };
        let config = &settings.config;
        let traces = traces::init(config.debug, config.log_format, &config.traces, &name);
        let part = Part::of(&settings.config, process.clone(), host);
        let deploy = Deploy {
            settings,
            sources,
            options: options.app,
            actors: OnceCell::new(),
            name: name.clone(),
            process,
            graphs: Mutex::default(),
        };
        let heading = report::Heading {
            name: &name,
            version: self.version.as_deref(),
        };
        let code = match (action, part) {
            (Action::Serve, Part::Whole) => report::serve(&heading, build(&deploy), &deploy),
            (Action::Serve, Part::Host(host)) => {
                processes::supervise(&name, deploy.config(), &host)
            }
            (Action::Serve, Part::Process(process)) => {
                processes::run(&heading, &deploy, &process, build)
            }
            (Action::Routes, _) => report::routes(&heading, build(&deploy), deploy.config()),
            // The app is not built: printing the configuration has no side effects.
            (Action::Config, _) => {
                report::config(&deploy.settings);
                ExitCode::SUCCESS
            }
        };
        deploy.shutdown();
        traces.finish();
        code
    }

    fn name_or_binary(&self, argv0: Option<&std::ffi::OsString>) -> String {
        self.name.clone().unwrap_or_else(|| {
            argv0
                .map(std::path::Path::new)
                .and_then(std::path::Path::file_stem)
                .map_or_else(|| "app".to_owned(), |s| s.to_string_lossy().into_owned())
        })
    }
}

/// A served directory must be one.
fn check_root(settings: Settings) -> Result<Settings, ConfigError> {
    match &settings.config.root {
        Some(root) if !root.is_dir() => Err(ConfigError {
            origin: settings.origin("root").clone(),
            key: Some("root".to_owned()),
            message: format!("{}: not a directory", root.display()),
        }),
        _ => Ok(settings),
    }
}

/// A process named by `--process` must be one of the configuration's, and processes
/// (which reach one another through Redis) need the `redis` feature.
fn check_process(settings: Settings, process: Option<&str>) -> Result<Settings, ConfigError> {
    if !cfg!(feature = "redis") && !settings.config.processes.is_empty() {
        return Err(ConfigError {
            origin: settings.origin("processes").clone(),
            key: Some("processes".to_owned()),
            message: "processes reach one another through Redis, which this build leaves \
                      out: build proscenium with its `redis` feature"
                .to_owned(),
        });
    }
    match process {
        Some(process) if !settings.config.processes.contains_key(process) => {
            let mut known: Vec<&str> = settings
                .config
                .processes
                .keys()
                .map(String::as_str)
                .collect();
            known.sort_unstable();
            Err(ConfigError {
                origin: settings.origin("processes").clone(),
                key: Some("processes".to_owned()),
                message: format!(
                    "--process {process}: no such process; the configuration's are {known:?}"
                ),
            })
        }
        _ => Ok(settings),
    }
}

/// What an app is built from: the deployment's configuration, the app's options, its
/// actor system, and which process of a deployment over processes this one is.
pub struct Deploy<O = NoOptions> {
    settings: Settings,
    /// Where the settings were read from, to read them again at SIGHUP.
    sources: Sources,
    options: O,
    actors: OnceCell<System>,
    /// The app's name, for messages.
    name: String,
    /// `--process NAME`, if given.
    process: Option<String>,
    /// The graphs started through `start_graph`, shut down after the app.
    graphs: Mutex<Vec<Arc<RunningGraph>>>,
}

impl<O: std::fmt::Debug> std::fmt::Debug for Deploy<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deploy")
            .field("settings", &self.settings)
            .field("options", &self.options)
            .field("process", &self.process)
            .field("graphs", &self.graphs.lock().len())
            .finish_non_exhaustive()
    }
}

impl<O> Deploy<O> {
    /// Returns the resolved configuration.
    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    /// Returns the configuration with where each value came from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Returns what reads the configuration again from the sources it was read from
    /// (SIGHUP's), with the same checks as at start.
    fn rereader(&self) -> impl Fn() -> Result<Config, String> + Send + 'static {
        let sources = self.sources.clone();
        let process = self.process.clone();
        move || {
            Settings::resolve(&sources)
                .and_then(check_root)
                .and_then(|s| check_process(s, process.as_deref()))
                .map(|settings| settings.config)
                .map_err(|e| e.to_string())
        }
    }

    /// Returns the app's own options.
    pub fn options(&self) -> &O {
        &self.options
    }

    /// Returns the app's actor system, with the dispatchers the configuration names
    /// (`[dispatchers.NAME]`); it is shut down after the server stops.
    pub fn actors(&self) -> &System {
        self.actors
            .get_or_init(|| System::with_dispatchers(self.settings.config.dispatchers.clone()))
    }

    /// Returns the process of `[processes]` this one runs (`--process NAME`), if any.
    pub fn process(&self) -> Option<&str> {
        self.process.as_deref()
    }

    /// Starts `graph`, named `name` alike in every process, as the deployment says:
    /// whole, with the configuration's `[clusters]`; or, under `--process NAME`, this
    /// process's clusters alone, its connectors to the others' through `[redis]`
    /// (`stage::Mapping::for_process`, with the `redis` feature). It is shut down, draining, after the server stops.
    /// Its stages time one event in `[stages] sample` unless it says otherwise.
    ///
    /// A graph that cannot start leaves the app nothing to serve: the error is printed
    /// and the process exits — 78 for a wrong graph or mapping (a supervisor does not
    /// restart it), 1 otherwise (Redis not reachable yet: it is restarted).
    pub fn start_graph(&self, name: &str, mut graph: Graph) -> Arc<RunningGraph> {
        // The graph's own choice ([`Graph::sample`]) stands over `[stages] sample`.
        if graph.sample.is_none() {
            graph.sample(self.config().stages.sample);
        }
        let clusters = &self.config().clusters;
        let started = match &self.process {
            #[cfg(feature = "redis")]
            Some(process) => Mapping::for_process(name, process, self.config())
                .and_then(|mapping| graph.start_mapped(clusters, &mapping)),
            // Without the `redis` feature, `check_process` refused every process.
            _ => graph.start(clusters),
        };
        match started {
            Ok(running) => {
                let running = Arc::new(running);
                self.graphs.lock().push(Arc::clone(&running));
                running
            }
            Err(error) => {
                eprintln!("{}: graph {name}: {error}", self.name);
                std::process::exit(if error.is_graph() { EXIT_REFUSED } else { 1 });
            }
        }
    }

    /// Shuts down, after the app: its graphs (draining, once nothing else holds
    /// them), then its actors.
    fn shutdown(&self) {
        for graph in self.graphs.lock().drain(..) {
            if let Ok(graph) = Arc::try_unwrap(graph) {
                graph.shutdown(processes::DRAIN);
            }
        }
        if let Some(system) = self.actors.get() {
            system.shutdown();
        }
    }
}
