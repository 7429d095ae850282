//! Deploy-time configuration: where to listen, how many loops, how to dispatch, and the
//! limits every connection obeys.
//!
//! A [`Config`] is plain data. It deserializes from `proscenium.toml` (every field has a
//! default, so an empty file is valid); [`Settings`] resolves it from every source a
//! deployment has — defaults, the app's own defaults, the platform's `PORT`, the file,
//! `PROSCENIUM_*` variables, `--set` and the other flags, in that order — and
//! remembers where each value came from.

mod admin;
mod ca;
mod cgi;
mod client;
mod clusters;
mod compression;
mod dispatchers;
mod feeds;
mod hosted;
mod http2;
mod limits;
mod lua;
pub(crate) mod reload;
mod request_id;
mod services;
mod sources;
mod stages;
mod tls;
mod traces;
mod units;
pub(crate) mod value;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use self::admin::AdminSpec;
pub use self::ca::{CaFile, CaFileError};
pub use self::cgi::CgiSpec;
pub use self::client::ClientSpec;
pub use self::clusters::ClusterSpec;
pub(crate) use self::clusters::DEFAULT_QUEUE;
pub use self::compression::CompressionSpec;
pub use self::dispatchers::{DispatcherKind, DispatcherSpec};
pub use self::feeds::FeedsSpec;
pub use self::hosted::HostedSpec;
pub use self::http2::Http2Spec;
pub use self::limits::{Limits, Timeouts};
pub use self::lua::LuaSpec;
pub use self::request_id::RequestIdSpec;
pub use self::services::{DatabaseSpec, RedisSpec};
pub use self::sources::{ConfigError, Entry, Flag, Origin, Settings, Sources};
pub use self::stages::{DEFAULT_SAMPLE, StagesSpec};
pub use self::tls::{AcmeSpec, CertFiles, Challenge, PlainServes, PlainSpec, TlsSpec};
pub use self::traces::TracesSpec;
pub use self::value::parse_bind;

/// The whole deploy-time configuration of a server.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config = toml::from_str("loops = 2\ndispatch = \"round-robin\"").unwrap();
/// assert_eq!(config.loops, Some(2));
///
/// let config: proscenium::Config =
///     toml::from_str("[dispatchers.images]\nkind = \"pool\"\nthreads = 2").unwrap();
/// assert_eq!(config.dispatchers["images"], proscenium::actor::DispatcherSpec::pool(2));
/// ```
///
/// Durations and sizes as text, or as bare numbers of the key's unit (seconds, bytes):
///
/// ```
/// use std::time::Duration;
///
/// let config: proscenium::Config = toml::from_str(
///     r#"
///     [timeouts]
///     header = "10s"
///     idle = "1m30s"
///     stall = "250ms"
///
///     [limits]
///     max_body = "8MiB"
///     spool_above = "64KiB"
///
///     [redis]
///     claim_idle = "2h"
///     "#,
/// )
/// .unwrap();
/// assert_eq!(config.timeouts.idle, Duration::from_secs(90));
/// assert_eq!(config.timeouts.stall, Duration::from_millis(250));
/// assert_eq!(config.limits.max_body, 8 * 1024 * 1024);
/// assert_eq!(config.limits.spool_above, 64 * 1024);
/// assert_eq!(config.redis.claim_idle, Duration::from_secs(7200));
///
/// let config: proscenium::Config = toml::from_str("[timeouts]\nidle = 0.5").unwrap();
/// assert_eq!(config.timeouts.idle, Duration::from_millis(500));
/// ```
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The address to listen on (Yarn's default, `127.0.0.1:3000`); see [`parse_bind`]
    /// for the spellings taken.
    #[serde(deserialize_with = "value::bind")]
    pub bind: SocketAddr,
    /// How the server executes: `loops` (default), `event-loop`, `thread-pool`,
    /// `thread-per-conn`, `prefork` or `staged` — in each worker process when
    /// `workers` is set.
    pub model: Model,
    /// Number of event loops of the `loops` model, or threads of the `staged` model's
    /// cluster; `None` means one per core.
    #[serde(deserialize_with = "value::some_count::<_, 1, 1024>")]
    pub loops: Option<usize>,
    /// Threads of `thread-pool` (default 200, as Jetty), or the most threads
    /// `thread-per-conn` runs at once (default 10,000; accepting waits past it).
    #[serde(deserialize_with = "value::some_count::<_, 1, 100_000>")]
    pub threads: Option<usize>,
    /// Connections that may wait for a `thread-pool` thread; past it new ones get 503.
    #[serde(deserialize_with = "value::count::<_, 1, 1_000_000>")]
    pub thread_queue: usize,
    /// Worker processes, each running `model`, supervised by the first process (Yarn,
    /// Unicorn, Puma's cluster mode); `prefork` alone means one per core.
    #[serde(deserialize_with = "value::some_count::<_, 1, 1024>")]
    pub workers: Option<usize>,
    /// How accepted connections are given to loops.
    pub dispatch: Dispatch,
    /// Threads of the pool that runs blocking handlers; 0 runs them inline on the
    /// loop. `None` means the model's default: 64 for `loops`, 0 for `event-loop`.
    #[serde(deserialize_with = "value::some_count::<_, 0, 10_000>")]
    pub blocking_threads: Option<usize>,
    /// Jobs that may wait for a blocking thread before new ones are refused with 503.
    #[serde(deserialize_with = "value::count::<_, 1, 1_000_000>")]
    pub blocking_queue: usize,
    /// Per-request limits.
    pub limits: Limits,
    /// Connection timeouts.
    pub timeouts: Timeouts,
    /// Where the access log goes: `"-"` for stdout, a path for a file, absent for none.
    pub log: Option<PathBuf>,
    /// Adds per-request time and loop id to the access log.
    pub debug: bool,
    /// How the process writes its own log lines on stderr: `text`, or `json` (one
    /// object a line). The access log (`log`) keeps its Combined Log Format.
    pub log_format: LogFormat,
    /// A directory served as static files below every route.
    pub root: Option<PathBuf>,
    /// Serves dotfiles from `root` (hidden by default).
    pub show_dotfiles: bool,
    /// Mounts the diagnostic routes `/_status`, `/_echo` and `/_delay`.
    pub tools: bool,
    /// Actor dispatchers by name (`[dispatchers.images] kind = "pool"`, `threads = 2`),
    /// for [`System::with_dispatchers`](crate::actor::System::with_dispatchers); an app
    /// started by [`Launcher`](crate::launch::Launcher) gets a system built with them.
    pub dispatchers: HashMap<String, DispatcherSpec>,
    /// Named blocking pools (`[pools.images] threads = 2`), for handlers made with
    /// [`blocking_on`](crate::blocking_on): blocking work on a dedicated set of
    /// threads, bounded apart from the rest.
    pub pools: HashMap<String, PoolSpec>,
    /// Stage graph clusters by name (`[clusters.extrusion] stages = ["extrusion"]`,
    /// `threads = 4`), for [`Graph::start`](crate::stage::Graph::start): the same graph
    /// runs under another partition by changing this alone.
    pub clusters: HashMap<String, ClusterSpec>,
    /// What the stage graphs the server runs measure (`[stages] sample = 64`: one
    /// event in 64 timed).
    pub stages: StagesSpec,
    /// The Redis that carries what crosses processes (`[redis] url = "redis://..."`,
    /// or `PROSCENIUM_REDIS_URL`; `rediss://` with `ca` for TLS); without one,
    /// everything stays in one process.
    pub redis: RedisSpec,
    /// Processes by name, each running some of the graph's clusters on a host
    /// (`[processes.correlate] clusters = ["correlate"]`, `host = "h2"`): Leda's
    /// mapping, in configuration.
    pub processes: HashMap<String, ProcessSpec>,
    /// The pub/sub hub's settings: the Redis its replicas share posts through (or
    /// `PROSCENIUM_FEEDS_REDIS`), the history kept for resuming event streams, each
    /// subscriber's queue.
    pub feeds: FeedsSpec,
    /// The HTTP client's settings (`proscenium::client`): timeouts, connections per
    /// host, retries, a private CA for `https://`.
    pub client: ClientSpec,
    /// HTTPS: certificates (files, by SNI, or ACME), the plain-HTTP listener, HSTS.
    pub tls: TlsSpec,
    /// HTTP/2: on or off, its windows and its streams per connection.
    pub http2: Http2Spec,
    /// Compression of answers by the request's `Accept-Encoding`: on or off, the types
    /// and sizes compressed, each coding's level, precompressed static files.
    pub compression: CompressionSpec,
    /// The admin listener: `/healthz`, `/readyz` and `/metrics` on an address of
    /// their own (`[admin] bind`); off by default.
    pub admin: AdminSpec,
    /// Request ids: on by default, and whose `X-Request-Id` is kept (`[request_id]`).
    pub request_id: RequestIdSpec,
    /// Request spans exported over OTLP (`[traces] otlp`); off by default.
    pub traces: TracesSpec,
    /// The app's database, for the app to connect to (Proscenium itself does not):
    /// `[database] url`, or `PROSCENIUM_DATABASE_URL` — Play's `db.default.url`.
    pub database: DatabaseSpec,
    /// CGI scripts below `root` (`[cgi] enabled = true`, or `--cgi`): the CGI
    /// directories, interpreters by extension, the time a script may run, how many
    /// run at once, the user they run as.
    pub cgi: CgiSpec,
    /// A Rack or WSGI app run by a pool of interpreter processes, below the static
    /// files: `[hosted] rack` or `wsgi`, its processes and timeout.
    pub hosted: HostedSpec,
    /// Embedded Lua (`[lua]`): `.lua` pages below `root` (`enabled`, or `--lua`), an
    /// app written in Lua (`app`, or `--app FILE`), and each request's budgets.
    pub lua: LuaSpec,
    /// The configuration file this was read from, if any ([`Settings::resolve`] sets
    /// it; no key of its own): never served as a static file, nor listed.
    #[serde(skip)]
    pub file: Option<PathBuf>,
}

/// A process of the mapping: the clusters it runs, the host it runs on, and whether
/// it serves the app's routes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// The clusters (`[clusters.NAME]`) this process runs.
    pub clusters: Vec<String>,
    /// The host it runs on, as `serve --host` names it (default: `localhost`).
    #[serde(default = "ProcessSpec::default_host")]
    pub host: String,
    /// Whether this process serves the app's routes on `bind` (default: no — it runs
    /// its clusters until stopped).
    #[serde(default)]
    pub serve: bool,
}

impl ProcessSpec {
    fn default_host() -> String {
        "localhost".to_owned()
    }
}

/// A named blocking pool: its threads and the jobs that may wait for them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// Threads of the pool.
    #[serde(deserialize_with = "value::count::<_, 1, 10_000>")]
    pub threads: usize,
    /// Jobs that may wait for a thread before new ones are refused with 503.
    #[serde(
        default = "PoolSpec::default_queue",
        deserialize_with = "value::count::<_, 1, 1_000_000>"
    )]
    pub queue: usize,
}

impl PoolSpec {
    /// Returns a pool of `threads` threads with the default queue of 1,024 jobs.
    pub fn threads(threads: usize) -> Self {
        Self {
            threads,
            queue: Self::default_queue(),
        }
    }

    fn default_queue() -> usize {
        1024
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 3000)),
            model: Model::Loops,
            loops: None,
            threads: None,
            thread_queue: 1024,
            workers: None,
            dispatch: Dispatch::Jsq,
            blocking_threads: None,
            blocking_queue: 1024,
            limits: Limits::default(),
            timeouts: Timeouts::default(),
            log: None,
            debug: false,
            log_format: LogFormat::Text,
            root: None,
            show_dotfiles: false,
            tools: false,
            dispatchers: HashMap::new(),
            pools: HashMap::new(),
            clusters: HashMap::new(),
            stages: StagesSpec::default(),
            redis: RedisSpec::default(),
            processes: HashMap::new(),
            feeds: FeedsSpec::default(),
            cgi: CgiSpec::default(),
            hosted: HostedSpec::default(),
            lua: LuaSpec::default(),
            file: None,
            client: ClientSpec::default(),
            tls: TlsSpec::default(),
            http2: Http2Spec::default(),
            compression: CompressionSpec::default(),
            admin: AdminSpec::default(),
            request_id: RequestIdSpec::default(),
            traces: TracesSpec::default(),
            database: DatabaseSpec::default(),
        }
    }
}

impl Config {
    /// Returns whether worker processes serve, supervised by this one: `workers` is
    /// set, or the model is `prefork`.
    pub fn supervised(&self) -> bool {
        self.workers.is_some() || self.model == Model::Prefork
    }

    /// Returns the model that serves connections — in each worker when
    /// [`supervised`](Self::supervised), else in this process: `model`, where
    /// `prefork` means `loops` in workers.
    pub fn serving_model(&self) -> Model {
        match self.model {
            Model::Prefork => Model::Loops,
            model => model,
        }
    }

    /// Returns the number of loops to run (in each worker when supervised): one for
    /// `event-loop`; for `loops` and `staged` the configured count, else one per
    /// core, shared among the workers; none for the thread models.
    pub fn loop_count(&self) -> usize {
        let share = || {
            if self.supervised() {
                cores() / self.worker_count()
            } else {
                cores()
            }
        };
        match self.serving_model() {
            Model::ThreadPerConn | Model::ThreadPool => 0,
            Model::EventLoop => 1,
            Model::Loops | Model::Prefork | Model::Staged => {
                self.loops.unwrap_or_else(share).max(1)
            }
        }
    }

    /// Returns the number of worker processes when supervised: `workers`, else one
    /// per core.
    pub fn worker_count(&self) -> usize {
        self.workers.unwrap_or_else(cores).max(1)
    }

    /// Returns the size of the blocking pool (0: blocking handlers run inline). The
    /// thread models run them inline: their threads may block.
    pub fn blocking_pool_size(&self) -> usize {
        self.blocking_threads.unwrap_or(match self.serving_model() {
            Model::EventLoop | Model::ThreadPerConn | Model::ThreadPool => 0,
            Model::Loops | Model::Prefork | Model::Staged => 64,
        })
    }

    /// Returns the thread count of a thread model: the pool's size, or the cap on
    /// threads per connection.
    pub fn thread_count(&self) -> usize {
        let default = match self.serving_model() {
            Model::ThreadPerConn => 10_000,
            _ => 200,
        };
        self.threads.unwrap_or(default).max(1)
    }
}

/// An execution model: how the same [`App`](crate::App) is run.
///
/// Spelled `loops`, `loops:N`, `event-loop`, `thread-pool`, `thread-pool:N`,
/// `thread-per-conn`, `thread-per-conn:N`, `prefork`, `prefork:P`, `staged` or
/// `staged:N` in the config and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// One event loop per core (or `loops`), connections dispatched among them.
    Loops,
    /// One event loop; blocking handlers run on it unless a blocking pool is
    /// configured — Node.js, faithfully.
    EventLoop,
    /// A fixed pool of threads, each serving one connection at a time from a bounded
    /// queue; a handler's awaits block its thread (Spring MVC on Jetty).
    ThreadPool,
    /// A thread for each connection, up to a cap (classic Apache).
    ThreadPerConn,
    /// Worker processes (the same binary re-executed, the listening socket inherited),
    /// each running `loops`, supervised by the first process (nginx): short for
    /// `loops` with `workers` set, one per core unless `prefork:P` says.
    Prefork,
    /// Leda's staged server: the server is a stage graph (wait client → handle client
    /// → route handler, and back to handle client for the next request), its one
    /// cluster `http` of `loops` threads tuned by `[clusters.http]`.
    Staged,
}

/// A model as written, with the count `loops:N`, `thread-pool:N`,
/// `thread-per-conn:N`, `prefork:P` or `staged:N` may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// The model.
    pub model: Model,
    /// The count given after a colon: loops, or threads.
    pub count: Option<usize>,
}

impl ModelSpec {
    /// Sets the model, and its count if one was given, in `config`.
    pub fn apply(self, config: &mut Config) {
        config.model = self.model;
        match self.model {
            Model::Loops | Model::Staged => config.loops = self.count.or(config.loops),
            Model::ThreadPool | Model::ThreadPerConn => {
                config.threads = self.count.or(config.threads);
            }
            Model::Prefork => config.workers = self.count.or(config.workers),
            Model::EventLoop => {}
        }
    }
}

impl std::str::FromStr for ModelSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, count) = match s.split_once(':') {
            Some((name, n)) => {
                let n = n.parse::<usize>().ok().filter(|&n| n > 0);
                (
                    name,
                    Some(n.ok_or_else(|| {
                        format!("`{s}`: the count after `:` must be a positive number")
                    })?),
                )
            }
            None => (s, None),
        };
        let model = match (name, count) {
            ("loops", _) => Model::Loops,
            ("event-loop", None) => Model::EventLoop,
            ("thread-pool", _) => Model::ThreadPool,
            ("thread-per-conn", _) => Model::ThreadPerConn,
            ("prefork", _) => Model::Prefork,
            ("staged", _) => Model::Staged,
            _ => {
                return Err(format!(
                    "unknown model `{s}` (expected loops[:N], event-loop, thread-pool[:N], thread-per-conn[:N], prefork[:P] or staged[:N])"
                ));
            }
        };
        Ok(Self { model, count })
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Loops => "loops",
            Self::EventLoop => "event-loop",
            Self::ThreadPool => "thread-pool",
            Self::ThreadPerConn => "thread-per-conn",
            Self::Prefork => "prefork",
            Self::Staged => "staged",
        })
    }
}

impl Serialize for Model {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Model {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spec: ModelSpec = String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)?;
        match spec.count {
            None => Ok(spec.model),
            Some(_) => Err(serde::de::Error::custom(
                "in the config, set the count with `loops = N` or `threads = N`",
            )),
        }
    }
}

/// The cores this process may run on: the default count of loops, threads and
/// dispatcher threads.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// How the process's own log lines (`tracing`, on stderr) are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Human-readable lines; colours only on a terminal.
    #[default]
    Text,
    /// One JSON object a line (time, level, target, message and fields), for a log
    /// collector.
    Json,
}

/// The rule that gives each accepted connection to a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dispatch {
    /// Join the shortest queue: the loop with the fewest live connections plus requests
    /// in flight (Node.Scala's rule).
    Jsq,
    /// Each loop in turn.
    RoundRobin,
    /// One `SO_REUSEPORT` listener per loop; the kernel spreads connections.
    Reuseport,
}

impl std::str::FromStr for Dispatch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "jsq" => Ok(Self::Jsq),
            "round-robin" => Ok(Self::RoundRobin),
            "reuseport" => Ok(Self::Reuseport),
            _ => Err(format!(
                "unknown dispatch `{s}` (expected jsq, round-robin or reuseport)"
            )),
        }
    }
}

impl std::fmt::Display for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Jsq => "jsq",
            Self::RoundRobin => "round-robin",
            Self::Reuseport => "reuseport",
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let config: Config = toml::from_str("").unwrap();
        assert_eq!(config.bind.to_string(), "127.0.0.1:3000");
        assert_eq!(config.dispatch, Dispatch::Jsq);
    }

    #[test]
    fn timeouts_read_as_fractional_seconds() {
        let config: Config = toml::from_str("[timeouts]\nheader = 0.5").unwrap();
        assert_eq!(config.timeouts.header, Duration::from_millis(500));
    }

    #[test]
    fn models_parse_with_their_counts() {
        let spec: ModelSpec = "loops:4".parse().unwrap();
        assert_eq!((spec.model, spec.count), (Model::Loops, Some(4)));
        let mut config = Config::default();
        "thread-pool:8"
            .parse::<ModelSpec>()
            .unwrap()
            .apply(&mut config);
        assert_eq!(
            (
                config.model,
                config.thread_count(),
                config.blocking_pool_size()
            ),
            (Model::ThreadPool, 8, 0)
        );
        assert_eq!(
            "event-loop".parse::<ModelSpec>().unwrap().model,
            Model::EventLoop
        );
        for bad in ["loops:0", "loops:x", "event-loop:2", "fibers"] {
            assert!(bad.parse::<ModelSpec>().is_err(), "{bad}");
        }
        let config: Config = toml::from_str("model = \"event-loop\"").unwrap();
        assert_eq!((config.loop_count(), config.blocking_pool_size()), (1, 0));
        let config: Config =
            toml::from_str("model = \"event-loop\"\nblocking_threads = 4").unwrap();
        assert_eq!(config.blocking_pool_size(), 4);
    }

    /// Every key whose value is a number, a duration or a size (or unset), as `config`
    /// lists them, with its default.
    fn numeric_keys() -> Vec<(String, serde_json::Value)> {
        let settings = Settings::resolve(&Sources::default()).unwrap();
        let tree = serde_json::to_value(&settings.config).unwrap();
        sources::leaves(&tree, "")
            .into_iter()
            .filter(|(_, value)| match value {
                serde_json::Value::Number(_) | serde_json::Value::Null => true,
                serde_json::Value::String(text) => is_duration(text) || is_size(text),
                _ => false,
            })
            .map(|(key, value)| (key, value.clone()))
            .collect()
    }

    fn is_duration(text: &str) -> bool {
        units::parse_duration(text, Duration::ZERO).is_some()
    }

    fn is_size(text: &str) -> bool {
        text.ends_with('B') && units::parse_size(text).is_some()
    }

    /// Resolves a configuration of `key = text` alone, as a variable gives it.
    fn with(key: &str, text: &str) -> Result<Settings, ConfigError> {
        let name = format!("PROSCENIUM_{}", key.replace('.', "_").to_ascii_uppercase());
        Settings::resolve(&Sources {
            env: vec![(name, text.to_owned())],
            ..Sources::default()
        })
    }

    /// Issue 33: no number of the configuration takes a hostile value; a key added
    /// without a range fails here.
    #[test]
    fn every_number_is_range_checked_when_read() {
        let keys = numeric_keys();
        assert!(keys.len() > 40, "{keys:?}");
        for (key, _) in &keys {
            for hostile in ["1e19", "-1", "nan", "inf", "9223372036854775807"] {
                assert!(with(key, hostile).is_err(), "{key} = {hostile} was taken");
            }
        }
    }

    /// Issue 33: every duration is at most a day, and a day is taken (`tls.hsts`, a
    /// max-age told to browsers, is no wait: up to ten years).
    #[test]
    fn every_duration_is_at_most_a_day() {
        let durations: Vec<String> = numeric_keys()
            .into_iter()
            .filter(|(key, value)| value.as_str().is_some_and(is_duration) && key != "tls.hsts")
            .map(|(key, _)| key)
            .collect();
        assert!(durations.len() >= 13, "{durations:?}");
        for key in &durations {
            assert!(with(key, "86400").is_ok(), "{key}: a day refused");
            assert!(with(key, "1d").is_ok(), "{key}: a day refused");
            for past in ["86400.5", "1d1ms", "25h"] {
                let error = with(key, past).unwrap_err().to_string();
                assert!(
                    error.contains("to 86400 (") && error.contains(&format!("got \"{past}\"")),
                    "{key}: {error}"
                );
            }
        }
        // Zero only where it means something said in the key's docs.
        let mut zero_taken: Vec<&String> =
            durations.iter().filter(|k| with(k, "0").is_ok()).collect();
        zero_taken.sort();
        assert_eq!(zero_taken, ["timeouts.grace", "timeouts.shutdown"]);
    }

    /// Issue 37: every duration and size key takes its value as text, from any source,
    /// and `config` writes it back as text that reads back.
    #[test]
    fn issue37_every_duration_and_size_takes_text_and_writes_it_back() {
        let keys = numeric_keys();
        let texts = |is: fn(&str) -> bool| -> Vec<String> {
            keys.iter()
                .filter(|(_, value)| value.as_str().is_some_and(is))
                .map(|(key, _)| key.clone())
                .collect()
        };
        let (durations, sizes) = (texts(is_duration), texts(is_size));
        assert!(
            durations.len() >= 14 && sizes.len() >= 20,
            "{durations:?} {sizes:?}"
        );
        for (keys, text) in [(&durations, "1m30s"), (&sizes, "64KiB")] {
            for key in keys {
                let settings = with(key, text).unwrap();
                let entry = settings
                    .entries()
                    .into_iter()
                    .find(|e| &e.key == key)
                    .unwrap();
                assert_eq!(entry.value, Some(format!("\"{text}\"")), "{key}");
            }
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<Config>("lops = 2").is_err());
    }
}
