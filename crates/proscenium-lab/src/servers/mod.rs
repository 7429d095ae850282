//! The servers the lab compares: how each is named on the command line, built or
//! located, started pinned to its cores, and checked.
//!
//! Proscenium runs `examples/lab-app` (every workload as a route) under the model the
//! name gives, `examples/fib-cache` (the shared-state service) on N loops, or the
//! `proscenium` command serving Leda's Lua page (`bench/peers/lua/`) as a Lua page or a
//! CGI script; the peers are `bench/peers/` (actix-web, hyper, Node.js, and the
//! sources' own servers: Jetty, Pekko HTTP, Vert.x and Apache httpd) and nginx with
//! `bench/nginx.conf.in`'s config (with its Lua module for `nginx-lua`). A server runs
//! in a process group of its own, so a Ctrl-C at the terminal reaches the lab, which
//! stops it by pid, and not the server directly.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

mod launch;
mod nginx;

use self::launch::Launch;

use crate::Error;
use crate::process::Running;
use crate::tools::Tools;

/// A server to measure, as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    name: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// `proscenium:MODEL[/pool=N][/workers=P]`: lab-app under `--model MODEL`, with a
    /// blocking pool of N threads, in P worker processes.
    Proscenium {
        model: String,
        pool: Option<usize>,
        workers: Option<usize>,
    },
    /// `fib-cache[:N]`: the shared-state example on N loops (default: one per core) and
    /// no blocking pool, so its requests run on exactly N threads, as Node.Scala's
    /// loops ran them (with a pool, even one loop hands its work to up to 64 threads).
    FibCache {
        loops: Option<usize>,
    },
    /// `proscenium-lua` / `proscenium-cgi`: `proscenium serve` on a loop per core,
    /// answering `/leda.lua` as a Lua page or as a CGI script run by `lua5.4`.
    Script {
        cgi: bool,
    },
    /// `nginx`, or `nginx-lua`: with its Lua module answering `/leda.lua`.
    Nginx {
        lua: bool,
    },
    /// `node`, `node-cluster` (one process per core) or `node-nbk` (Node.Scala
    /// Fig. 1c's non-blocking `/fib`).
    Node(NodeMode),
    Actix,
    Hyper,
    /// A JVM peer, `bench/peers/NAME` built by Maven into one jar.
    Jvm(Jvm),
    /// `httpd-event`, `httpd-worker` or `httpd-prefork`: Apache httpd with
    /// `bench/peers/httpd/httpd.conf` under that MPM.
    Httpd(Mpm),
    /// `proscenium-rack` / `proscenium-wsgi`: `proscenium serve` on a loop per core
    /// hosting `bench/peers/hosted`'s Rack or WSGI app in a process per core.
    Hosted(Interface),
    /// The same apps under their own servers, a process per core serving one request
    /// at a time: `puma` (cluster mode, a thread a worker) or `gunicorn` (sync workers).
    AppServer(Interface),
}

/// Which of `bench/peers/hosted`'s apps: Ruby's Rack or Python's WSGI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interface {
    Rack,
    Wsgi,
}

/// Apache httpd's multi-processing modules, as httpd.conf configures them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mpm {
    /// Debian's 150 threads, a child per core, connections kept by a listener thread.
    Event,
    /// Leda's Apache: 150 threads started, up to 2,000.
    Worker,
    /// 150 processes.
    Prefork,
}

impl Mpm {
    /// The name httpd.conf's `-D` takes.
    fn define(self) -> &'static str {
        match self {
            Self::Event => "event",
            Self::Worker => "worker",
            Self::Prefork => "prefork",
        }
    }
}

/// How the Node.js peer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeMode {
    /// One process, every handler on its one loop.
    Single,
    /// The cluster module: a worker process per core sharing the port.
    Cluster,
    /// One process, `/fib` above Node.Scala's threshold split into events.
    NonBlocking,
}

/// The JVM peers: the servers the thesis's sources measured, or their open successors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Jvm {
    /// Jetty 12, a blocking servlet on 200 threads: the thesis's Spring on Jetty.
    Jetty,
    /// Pekko HTTP: the thesis's Play on Akka.
    Pekko,
    /// Vert.x 5, an event loop per core: the JVM's Node.Scala.
    Vertx,
}

impl Jvm {
    /// The peer's directory below `bench/peers/` and its Maven module.
    fn module(self) -> &'static str {
        match self {
            Self::Jetty => "jetty",
            Self::Pekko => "pekko",
            Self::Vertx => "vertx",
        }
    }
}

impl FromStr for ServerSpec {
    type Err = Error;

    /// Parses `proscenium:MODEL[/pool=N][/workers=P]`, `fib-cache[:N]`, `proscenium-lua`,
    /// `proscenium-cgi`, `nginx`, `nginx-lua`, `node`, `node-cluster`, `node-nbk`,
    /// `actix`, `hyper`, `jetty`, `pekko`, `vertx`, `httpd-event`, `httpd-worker`,
    /// `httpd-prefork`, `proscenium-rack`, `proscenium-wsgi`, `puma` or `gunicorn`.
    fn from_str(name: &str) -> Result<Self, Error> {
        let kind = match name {
            "proscenium-lua" => Kind::Script { cgi: false },
            "proscenium-cgi" => Kind::Script { cgi: true },
            "nginx" => Kind::Nginx { lua: false },
            "nginx-lua" => Kind::Nginx { lua: true },
            "node" => Kind::Node(NodeMode::Single),
            "node-cluster" => Kind::Node(NodeMode::Cluster),
            "node-nbk" => Kind::Node(NodeMode::NonBlocking),
            "actix" => Kind::Actix,
            "hyper" => Kind::Hyper,
            "jetty" => Kind::Jvm(Jvm::Jetty),
            "pekko" => Kind::Jvm(Jvm::Pekko),
            "vertx" => Kind::Jvm(Jvm::Vertx),
            "httpd-event" => Kind::Httpd(Mpm::Event),
            "httpd-worker" => Kind::Httpd(Mpm::Worker),
            "httpd-prefork" => Kind::Httpd(Mpm::Prefork),
            "proscenium-rack" => Kind::Hosted(Interface::Rack),
            "proscenium-wsgi" => Kind::Hosted(Interface::Wsgi),
            "puma" => Kind::AppServer(Interface::Rack),
            "gunicorn" => Kind::AppServer(Interface::Wsgi),
            "fib-cache" => Kind::FibCache { loops: None },
            _ => Kind::with_count(name).ok_or_else(|| Error::UnknownServer(name.to_owned()))?,
        };
        Ok(Self {
            name: name.to_owned(),
            kind,
        })
    }
}

impl Kind {
    /// The kinds named with a count: `fib-cache:N` and
    /// `proscenium:MODEL[/pool=N][/workers=P]`.
    fn with_count(name: &str) -> Option<Self> {
        if let Some(loops) = name.strip_prefix("fib-cache:") {
            return Some(Self::FibCache {
                loops: Some(loops.parse().ok()?),
            });
        }
        let mut parts = name.strip_prefix("proscenium:")?.split('/');
        let model = parts.next().filter(|m| !m.is_empty())?;
        let (mut pool, mut workers) = (None, None);
        for part in parts {
            let (key, count) = part.split_once('=')?;
            let slot = match key {
                "pool" => &mut pool,
                "workers" => &mut workers,
                _ => return None,
            };
            *slot = Some(count.parse().ok()?);
        }
        Some(Self::Proscenium {
            model: model.to_owned(),
            pool,
            workers,
        })
    }
}

impl fmt::Display for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Where and with what a server starts.
#[derive(Debug, Clone)]
pub(crate) struct Placement<'a> {
    /// The cores it is pinned to (`taskset -c` syntax) and how many they are.
    pub(crate) cores: &'a str,
    pub(crate) core_count: usize,
    pub(crate) port: u16,
    /// The directory static files come from.
    pub(crate) root: &'a Path,
    /// The URL `/relay` fetches.
    pub(crate) upstream: &'a str,
    /// A directory for the server's own files (nginx's config, pid and logs).
    pub(crate) workdir: &'a Path,
}

impl ServerSpec {
    /// The name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the server compiles its code while it runs (the JVM's and V8's JITs):
    /// its first thousands of requests run interpreted or half-optimised, so its
    /// warm-up lasts longer ([`JIT_WARM_UP_SECONDS`](crate::scenario::JIT_WARM_UP_SECONDS)).
    pub(crate) fn compiles_at_run_time(&self) -> bool {
        matches!(self.kind, Kind::Jvm(_) | Kind::Node(_))
    }

    /// Builds what the server needs (once per lab run; cargo makes repeats cheap).
    pub(crate) fn build(&self, tools: &Tools) -> Result<(), Error> {
        match &self.kind {
            Kind::Proscenium { .. } => tools.build_example("lab-app"),
            Kind::FibCache { .. } => tools.build_example("fib-cache"),
            Kind::Script { cgi } => {
                if *cgi {
                    tools.need("lua5.4", "lua5.4")?;
                }
                tools.build_binary("proscenium-cli", "proscenium")
            }
            Kind::Actix => tools.build_peer("actix"),
            Kind::Hyper => tools.build_peer("hyper"),
            Kind::Nginx { lua } => {
                tools.need("nginx", "nginx")?;
                if *lua {
                    tools.need_file(Path::new(nginx::LUA_MODULE), "libnginx-mod-http-lua")?;
                }
                Ok(())
            }
            Kind::Node(_) => tools.need("node", "nodejs").map(|_| ()),
            Kind::Jvm(peer) => tools.build_jvm_peer(peer.module()),
            Kind::Httpd { .. } => tools.need("apache2", "apache2").map(|_| ()),
            Kind::Hosted(interface) => {
                interface.need(tools)?;
                tools.build_binary("proscenium-cli", "proscenium")
            }
            Kind::AppServer(Interface::Rack) => tools.need("puma", "puma").map(|_| ()),
            Kind::AppServer(Interface::Wsgi) => tools.need("gunicorn", "gunicorn").map(|_| ()),
        }
    }

    /// Starts the server pinned to `at.cores`.
    pub(crate) fn start(&self, tools: &Tools, at: &Placement<'_>) -> Result<Running, Error> {
        let launch = Launch::new(tools, at);
        let launch = match &self.kind {
            Kind::Proscenium {
                model,
                pool,
                workers,
            } => launch.proscenium(model, *pool, *workers),
            Kind::FibCache { loops } => launch.fib_cache(*loops),
            Kind::Actix => launch.rust_peer("actix"),
            Kind::Hyper => launch.rust_peer("hyper"),
            Kind::Node(mode) => launch.node(*mode),
            Kind::Script { cgi } => launch.script(*cgi),
            Kind::Nginx { lua } => launch.nginx(*lua)?,
            Kind::Jvm(peer) => launch.jvm(peer.module()),
            Kind::Httpd(mpm) => launch.httpd(&self.name, *mpm)?,
            Kind::Hosted(Interface::Rack) => launch.proscenium_rack(),
            Kind::Hosted(Interface::Wsgi) => launch.proscenium_wsgi(),
            Kind::AppServer(Interface::Rack) => launch.puma(),
            Kind::AppServer(Interface::Wsgi) => launch.gunicorn(),
        };
        Running::spawn(&self.name, launch.command)
    }
}

impl Interface {
    /// Installs what the app needs to run under `proscenium serve`.
    fn need(self, tools: &Tools) -> Result<(), Error> {
        match self {
            Self::Rack => tools.need_ruby_library("rack", "ruby-rack"),
            Self::Wsgi => tools.need("python3", "python3").map(|_| ()),
        }
    }
}

/// The processes httpd's prefork MPM starts and keeps (httpd.conf's `StartServers`
/// and `MaxRequestWorkers`).
const HTTPD_PREFORK_PROCESSES: usize = 150;

impl ServerSpec {
    /// Returns the family of servers this one belongs to and its worker processes,
    /// when the name fixes them: `proscenium:prefork:N` is N workers of
    /// `proscenium:prefork`, `proscenium:thread-pool:1/workers=N` N workers of
    /// `proscenium:thread-pool:1/workers`, `httpd-prefork` its 150 processes. The
    /// `workers` scenario draws a family as one line against its workers, as Yarn's
    /// Fig. 6.4 drew Yarn.
    pub(crate) fn workers(&self) -> Option<(String, usize)> {
        match &self.kind {
            Kind::Proscenium {
                model,
                pool: None,
                workers: Some(workers),
            } => Some((format!("proscenium:{model}/workers"), *workers)),
            Kind::Proscenium {
                model,
                pool: None,
                workers: None,
            } => Some((
                "proscenium:prefork".to_owned(),
                model.strip_prefix("prefork:")?.parse().ok()?,
            )),
            Kind::Httpd(Mpm::Prefork) => {
                Some(("httpd-prefork".to_owned(), HTTPD_PREFORK_PROCESSES))
            }
            _ => None,
        }
    }
}

/// The `--model` argument for `model` on `cores` cores: the multi-loop, staged and
/// multi-process models get one loop, stage thread or worker per core unless the name
/// says how many.
fn proscenium_model(model: &str, cores: usize) -> String {
    match model {
        "loops" | "prefork" | "staged" => format!("{model}:{cores}"),
        _ => model.to_owned(),
    }
}

/// The JVM's flags for a peer on `cores` cores: a fixed 1 GiB heap (no resizing during a
/// step) and the throughput collector, as TechEmpower's JVM entries run; the processor
/// count is stated so the thread pools, event loops and dispatchers size themselves to
/// the pinned cores whatever the JVM reads from the affinity mask.
fn jvm_flags(cores: usize) -> [String; 4] {
    [
        "-Xms1g".to_owned(),
        "-Xmx1g".to_owned(),
        "-XX:+UseParallelGC".to_owned(),
        format!("-XX:ActiveProcessorCount={cores}"),
    ]
}

/// httpd's `-C "Define NAME VALUE"` arguments.
///
/// # Errors
///
/// A value with whitespace: `Define` takes one word, and quoting it would leave the
/// report's command, which shows arguments unquoted, wrong to copy.
fn httpd_defines(defines: &[(&str, &Path)]) -> Result<Vec<String>, Error> {
    let mut args = Vec::with_capacity(defines.len() * 2);
    for (name, value) in defines {
        let value = value.display().to_string();
        if value.contains(char::is_whitespace) {
            return Err(Error::Tool(format!(
                "httpd's config cannot take a path with whitespace: {value}"
            )));
        }
        args.extend(["-C".to_owned(), format!("Define {name} {value}")]);
    }
    Ok(args)
}

/// Lets httpd's children read `root`. Started as root, httpd serves as `nobody`
/// (httpd.conf's `User`), and the lab's work directory is private to its owner, so the
/// root and the directory holding it are opened for others to enter and read (done
/// whoever runs the lab: the files are the lab's own `x`-filled ones, removed at the end).
fn open_to_httpd_children(root: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    for dir in [Some(root), root.parent()].into_iter().flatten() {
        let mut permissions = std::fs::metadata(dir)
            .map_err(Error::io("read a directory's permissions"))?
            .permissions();
        permissions.set_mode(permissions.mode() | 0o005);
        std::fs::set_permissions(dir, permissions)
            .map_err(Error::io("open the static files to httpd"))?;
    }
    Ok(())
}

/// The versions of the JVM peers' frameworks, as `bench/peers/pom.xml` pins them.
pub(crate) fn jvm_peer_versions() -> impl Iterator<Item = (String, String)> {
    const POM: &str = include_str!("../../../../bench/peers/pom.xml");
    ["jetty", "pekko", "pekko-http", "vertx"]
        .into_iter()
        .filter_map(|name| {
            let open = format!("<{name}.version>");
            let start = POM.find(&open)? + open.len();
            let len = POM[start..].find('<')?;
            Some((name.to_owned(), POM[start..start + len].to_owned()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_kinds_and_bad_ones_are_refused() {
        let spec: ServerSpec = "proscenium:loops/pool=0".parse().unwrap();
        assert_eq!(
            spec.kind,
            Kind::Proscenium {
                model: "loops".into(),
                pool: Some(0),
                workers: None,
            }
        );
        assert_eq!(
            "node-cluster".parse::<ServerSpec>().unwrap().kind,
            Kind::Node(NodeMode::Cluster)
        );
        assert_eq!(
            "node-nbk".parse::<ServerSpec>().unwrap().kind,
            Kind::Node(NodeMode::NonBlocking)
        );
        assert_eq!(
            "fib-cache:1".parse::<ServerSpec>().unwrap().kind,
            Kind::FibCache { loops: Some(1) }
        );
        assert_eq!(
            "jetty".parse::<ServerSpec>().unwrap().kind,
            Kind::Jvm(Jvm::Jetty)
        );
        assert_eq!(
            "pekko".parse::<ServerSpec>().unwrap().kind,
            Kind::Jvm(Jvm::Pekko)
        );
        assert_eq!(
            "vertx".parse::<ServerSpec>().unwrap().kind,
            Kind::Jvm(Jvm::Vertx)
        );
        for (name, kind) in [
            ("httpd-event", Kind::Httpd(Mpm::Event)),
            ("httpd-worker", Kind::Httpd(Mpm::Worker)),
            ("httpd-prefork", Kind::Httpd(Mpm::Prefork)),
            ("nginx-lua", Kind::Nginx { lua: true }),
            ("proscenium-lua", Kind::Script { cgi: false }),
            ("proscenium-cgi", Kind::Script { cgi: true }),
            ("proscenium-rack", Kind::Hosted(Interface::Rack)),
            ("proscenium-wsgi", Kind::Hosted(Interface::Wsgi)),
            ("puma", Kind::AppServer(Interface::Rack)),
            ("gunicorn", Kind::AppServer(Interface::Wsgi)),
        ] {
            assert_eq!(name.parse::<ServerSpec>().unwrap().kind, kind, "{name}");
        }
        for bad in [
            "apache",
            "httpd",
            "httpd-mpm",
            "proscenium-php",
            "jetty:2",
            "proscenium:",
            "proscenium:loops/pool=x",
        ] {
            assert!(bad.parse::<ServerSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn jvm_peer_versions_come_from_the_pom() {
        let versions: Vec<_> = jvm_peer_versions().map(|(name, _)| name).collect();
        assert_eq!(versions, ["jetty", "pekko", "pekko-http", "vertx"]);
        assert!(
            jvm_peer_versions().all(|(_, v)| v.chars().next().is_some_and(|c| c.is_ascii_digit()))
        );
    }

    #[test]
    fn httpd_defines_take_one_word_each() {
        assert_eq!(
            httpd_defines(&[("root", Path::new("/tmp/www"))]).unwrap(),
            ["-C", "Define root /tmp/www"]
        );
        assert!(httpd_defines(&[("root", Path::new("/tmp/a b"))]).is_err());
    }

    #[test]
    fn workers_are_read_from_the_name_or_httpd_conf() {
        let workers = |name: &str| name.parse::<ServerSpec>().unwrap().workers();
        let family = |name: &str, workers| Some((name.to_owned(), workers));
        assert_eq!(
            workers("proscenium:prefork:16"),
            family("proscenium:prefork", 16)
        );
        assert_eq!(
            workers("proscenium:thread-pool:1/workers=8"),
            family("proscenium:thread-pool:1/workers", 8)
        );
        assert_eq!(workers("httpd-prefork"), family("httpd-prefork", 150));
        for none in [
            "proscenium:prefork",
            "proscenium:loops:4",
            "proscenium:prefork:2/pool=0",
            "httpd-event",
        ] {
            assert_eq!(workers(none), None, "{none}");
        }
        let conf = include_str!("../../../../bench/peers/httpd/httpd.conf");
        let prefork = &conf[conf.find("<IfDefine prefork>").unwrap()..];
        let prefork = &prefork[..prefork.find("</IfDefine>").unwrap()];
        for directive in ["StartServers", "MaxRequestWorkers"] {
            assert!(
                prefork.contains(&format!("{directive} {HTTPD_PREFORK_PROCESSES}")),
                "{directive}"
            );
        }
    }

    #[test]
    fn multi_core_models_take_the_cores_they_are_given() {
        assert_eq!(proscenium_model("loops", 2), "loops:2");
        assert_eq!(proscenium_model("prefork", 4), "prefork:4");
        assert_eq!(proscenium_model("staged", 2), "staged:2");
        assert_eq!(proscenium_model("loops:3", 2), "loops:3");
        assert_eq!(proscenium_model("thread-pool", 2), "thread-pool");
        assert_eq!(proscenium_model("event-loop", 2), "event-loop");
    }
}
