//! The command line every app shares, as clap parses it; the doc comments are the
//! help text. Deploy flags are taken as text and read by
//! [`Settings`](crate::config::Settings), so a bad value is reported the same way
//! whether it came from a flag, a variable or the file.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{Flag, Sources};

/// An app's command line: `serve` (the default), `routes` or `config`.
#[derive(Debug, Parser)]
pub(super) struct Cli<O: Args> {
    #[command(subcommand)]
    pub(super) command: Command<O>,
}

/// What to do with the app.
#[derive(Debug, Subcommand)]
pub enum Command<O: Args = NoOptions> {
    /// Serves the app (and DIR's files, if given) until Ctrl-C or SIGTERM.
    Serve(Options<O>),
    /// Prints the app's routes: method, pattern, where the handler runs, its class
    /// (stateless, reading, writing) and the shared state it locks.
    Routes(Options<O>),
    /// Prints the effective configuration, each value with where it came from
    /// (default, app default, file:line, environment variable, flag).
    Config(Options<O>),
}

impl<O: Args> Command<O> {
    pub(super) fn into_parts(self) -> (Action, Options<O>) {
        match self {
            Self::Serve(options) => (Action::Serve, options),
            Self::Routes(options) => (Action::Routes, options),
            Self::Config(options) => (Action::Config, options),
        }
    }
}

/// A [`Command`] without its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Serve,
    Routes,
    Config,
}

/// The options of every command: how to deploy, then the app's own.
#[derive(Debug, Args)]
#[group(skip)]
pub struct Options<O: Args = NoOptions> {
    /// How to deploy.
    #[command(flatten)]
    pub deploy: DeployArgs,
    /// The app's own options.
    #[command(flatten)]
    pub app: O,
}

/// An app without options of its own.
#[derive(Debug, Clone, Copy, Default, Args)]
#[group(skip)]
pub struct NoOptions {}

/// The deploy flags; each overrides the same setting of the environment and the file.
#[derive(Debug, Clone, Default, Args)]
#[group(skip)]
pub struct DeployArgs {
    /// Directory of static files served below the app's routes (its proscenium.toml
    /// is read if present).
    pub dir: Option<PathBuf>,
    /// Address to listen on, as [`parse_bind`](crate::config::parse_bind) takes it.
    #[arg(
        long,
        short,
        help = "Address to listen on: 127.0.0.1:3000, localhost:3000, :3000 (every interface), [::1]:3000 [default: 127.0.0.1:3000]"
    )]
    pub bind: Option<String>,
    /// Execution model: loops or loops:N (N loops), event-loop (one loop; blocking
    /// handlers inline unless --blocking-pool is given), thread-pool or thread-pool:N
    /// (N threads, default 200), thread-per-conn or thread-per-conn:N (at most N
    /// threads, default 10000), prefork or prefork:P (P worker processes, default one
    /// per core, each running loops), staged or staged:N (the server as a stage graph,
    /// N threads) [default: loops]; with --workers, what each worker runs.
    #[arg(long, short)]
    pub model: Option<String>,
    /// Worker processes, each running --model, supervised by this one (Yarn's -w):
    /// --workers 4 --model thread-pool:1 serves one request at a time in each.
    #[arg(long, short)]
    pub workers: Option<String>,
    /// Event loops of the loops model, or of each prefork worker [default: one per
    /// core, shared among the workers].
    #[arg(long, short)]
    pub loops: Option<String>,
    /// Threads for blocking handlers; 0 runs them inline on the loop
    /// [default: 64 for loops, 0 for event-loop].
    #[arg(long)]
    pub blocking_pool: Option<String>,
    /// How connections are given to loops: jsq, round-robin or reuseport [default: jsq].
    #[arg(long)]
    pub dispatch: Option<String>,
    /// Config file [default: $PROSCENIUM_CONFIG, else DIR/proscenium.toml, else
    /// ./proscenium.toml, if present].
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Access log: a file path, or - for stdout.
    #[arg(long)]
    pub log: Option<String>,
    /// Adds request time and loop id to the access log, and debug messages to stderr.
    #[arg(long)]
    pub debug: bool,
    /// Mounts the diagnostic routes (off by default): /_status (loops and counters),
    /// /_echo (the request as parsed, credentials redacted), /_delay?ms=N (a slow answer).
    #[arg(long)]
    pub tools: bool,
    /// Runs CGI scripts below DIR: every file of DIR/cgi-bin/, and files with an
    /// extension given an interpreter in `[cgi] interpreters`.
    #[arg(long)]
    pub cgi: bool,
    /// Runs CGI scripts with this extension by this program, as Yarn's command line
    /// did: `--interpreter rb=ruby`, `--interpreter py="python3 -u"` (`[cgi]
    /// interpreters`). Repeatable.
    #[arg(long = "interpreter", value_name = "EXT=PROGRAM", value_parser = extension_program)]
    pub interpreters: Vec<(String, String)>,
    /// Runs the `.lua` files below DIR as pages: each defines `handle(request)`.
    #[arg(long)]
    pub lua: bool,
    /// Serves the app a Lua script defines (`app:get("/hello/:name", function(req) ...
    /// end)`), before DIR's files.
    #[arg(long, value_name = "FILE")]
    pub app: Option<PathBuf>,
    /// Serves the Rack app of this config.ru (Yarn's --rack) from Ruby processes,
    /// below DIR's files: `[hosted] rack`.
    #[arg(long, value_name = "FILE", conflicts_with = "wsgi")]
    pub rack: Option<PathBuf>,
    /// Serves this WSGI app (MODULE:NAME, imported from the working directory) from
    /// Python processes, below DIR's files: `[hosted] wsgi`.
    #[arg(long, value_name = "MODULE:APP")]
    pub wsgi: Option<String>,
    /// Serves HTTPS with this certificate chain (PEM, leaf first): `[tls] cert`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM): `[tls] key`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serves /healthz, /readyz and /metrics on this address, apart from the app's
    /// (`[admin] bind`) [default: none].
    #[arg(long, value_name = "ADDR")]
    pub admin_bind: Option<String>,
    /// Runs only this process of the configuration's processes: its clusters, and the
    /// app's routes if the process has serve = true.
    #[arg(long, conflicts_with = "host")]
    pub process: Option<String>,
    /// Starts and supervises the configuration's processes mapped to this host
    /// [default: localhost, when the configuration maps processes].
    #[arg(long)]
    pub host: Option<String>,
    /// Sets any key the file can set, its value as in the file (quotes optional):
    /// `--set timeouts.idle=90s --set limits.max_body=8MiB`. Repeatable; over the
    /// environment and the file, under the flag named for the same key (`--bind`).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<(String, String)>,
}

/// Splits `--set`'s `KEY=VALUE` at its first `=`.
fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!(
            "expected KEY=VALUE, such as timeouts.idle=90s, got {text:?}"
        )),
    }
}

/// Splits `--interpreter`'s `EXT=PROGRAM`: an extension of letters and digits (a
/// leading dot dropped) and a program.
fn extension_program(text: &str) -> Result<(String, String), String> {
    let (ext, program) = key_value(text)
        .map_err(|_| format!("expected EXT=PROGRAM, such as rb=ruby, got {text:?}"))?;
    let ext = ext.strip_prefix('.').unwrap_or(&ext);
    if ext.is_empty() || !ext.chars().all(|c| c.is_ascii_alphanumeric()) || program.is_empty() {
        return Err(format!(
            "expected EXT=PROGRAM with an extension of letters and digits, such as \
             rb=ruby, got {text:?}"
        ));
    }
    Ok((ext.to_owned(), program))
}

impl DeployArgs {
    /// Returns the sources these flags name, with the app's defaults and `env`.
    pub fn sources(&self, app_defaults: Option<&str>, env: Vec<(String, String)>) -> Sources {
        let mut flags = Vec::new();
        let mut flag = |name: &str, key: &str, text: &str| {
            flags.push(Flag {
                name: name.to_owned(),
                key: key.to_owned(),
                text: text.to_owned(),
            });
        };
        // First: a flag named for the same key, later, wins.
        for (key, value) in &self.set {
            flag(&format!("--set {key}"), key, value);
        }
        if let Some(dir) = &self.dir {
            flag("DIR", "root", &dir.to_string_lossy());
        }
        for (name, key, path) in [
            ("--app", "lua.app", &self.app),
            ("--rack", "hosted.rack", &self.rack),
            ("--tls-cert", "tls.cert", &self.tls_cert),
            ("--tls-key", "tls.key", &self.tls_key),
        ] {
            if let Some(path) = path {
                flag(name, key, &path.to_string_lossy());
            }
        }
        for (ext, program) in &self.interpreters {
            flag("--interpreter", &format!("cgi.interpreters.{ext}"), program);
        }
        for (name, key, value) in [
            ("--bind", "bind", &self.bind),
            ("--model", "model", &self.model),
            ("--workers", "workers", &self.workers),
            ("--loops", "loops", &self.loops),
            ("--blocking-pool", "blocking_threads", &self.blocking_pool),
            ("--dispatch", "dispatch", &self.dispatch),
            ("--log", "log", &self.log),
            ("--admin-bind", "admin.bind", &self.admin_bind),
            ("--wsgi", "hosted.wsgi", &self.wsgi),
        ] {
            if let Some(value) = value {
                flag(name, key, value);
            }
        }
        for (name, key, on) in [
            ("--debug", "debug", self.debug),
            ("--tools", "tools", self.tools),
            ("--cgi", "cgi.enabled", self.cgi),
            ("--lua", "lua.enabled", self.lua),
        ] {
            if on {
                flag(name, key, "true");
            }
        }
        Sources {
            app_defaults: app_defaults.map(str::to_owned),
            file: self.config.clone(),
            search: self
                .dir
                .iter()
                .cloned()
                .chain([PathBuf::from(".")])
                .collect(),
            env,
            flags,
        }
    }
}

/// Returns `args` with `serve` put first when no command is named, so that
/// `app --bind :8080` means `app serve --bind :8080`.
pub(super) fn default_to_serve(mut args: Vec<OsString>) -> Vec<OsString> {
    const NAMED: [&str; 8] = [
        "serve",
        "routes",
        "config",
        "help",
        "-h",
        "--help",
        "-V",
        "--version",
    ];
    let named = args
        .get(1)
        .and_then(|a| a.to_str())
        .is_some_and(|a| NAMED.contains(&a));
    if !named {
        args.insert(1.min(args.len()), OsString::from("serve"));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &[&str]) -> Command {
        let args = default_to_serve(line.iter().map(OsString::from).collect());
        Cli::<NoOptions>::try_parse_from(args).unwrap().command
    }

    #[test]
    fn serve_is_the_default_command() {
        let Command::Serve(options) = parse(&["app", "--bind", ":8080"]) else {
            panic!("not serve");
        };
        assert_eq!(options.deploy.bind.as_deref(), Some(":8080"));
        assert!(matches!(parse(&["app"]), Command::Serve(_)));
        assert!(matches!(parse(&["app", "routes"]), Command::Routes(_)));
        assert!(matches!(
            parse(&["app", "config", "-l", "2"]),
            Command::Config(_)
        ));
    }

    #[test]
    fn a_process_and_a_host_are_not_both_given() {
        let Command::Serve(options) = parse(&["app", "--process", "back"]) else {
            panic!("not serve");
        };
        assert_eq!(options.deploy.process.as_deref(), Some("back"));
        let args = default_to_serve(
            ["app", "--process", "back", "--host", "h2"]
                .iter()
                .map(OsString::from)
                .collect(),
        );
        assert!(Cli::<NoOptions>::try_parse_from(args).is_err());
    }

    #[test]
    fn flags_become_settings_with_their_names() {
        let Command::Serve(options) = parse(&[
            "app",
            "site",
            "-w",
            "3",
            "--blocking-pool",
            "0",
            "--tools",
            "-m",
            "loops:2",
        ]) else {
            panic!("not serve");
        };
        let sources = options.deploy.sources(None, Vec::new());
        let named: Vec<_> = sources
            .flags
            .iter()
            .map(|f| (f.name.as_str(), f.key.as_str(), f.text.as_str()))
            .collect();
        assert_eq!(
            named,
            [
                ("DIR", "root", "site"),
                ("--model", "model", "loops:2"),
                ("--workers", "workers", "3"),
                ("--blocking-pool", "blocking_threads", "0"),
                ("--tools", "tools", "true"),
            ]
        );
        assert_eq!(sources.search, [PathBuf::from("site"), PathBuf::from(".")]);
    }

    #[test]
    fn issue37_set_is_repeatable_and_a_flag_named_for_the_same_key_wins() {
        let Command::Config(options) = parse(&[
            "app",
            "config",
            "--set",
            "timeouts.idle=90s",
            "--bind",
            ":8080",
            "--set",
            "bind=127.0.0.1:9000",
            "--set",
            "lua.memory = 64MiB",
        ]) else {
            panic!("not config");
        };
        let env = vec![("PROSCENIUM_TIMEOUTS_IDLE".to_owned(), "5".to_owned())];
        let sources = options.deploy.sources(None, env);
        let settings = crate::config::Settings::resolve(&sources).unwrap();
        let config = &settings.config;
        assert_eq!(config.bind.to_string(), "0.0.0.0:8080");
        assert_eq!(config.timeouts.idle, std::time::Duration::from_secs(90));
        assert_eq!(config.lua.memory, 64 << 20);
        for line in [&["app", "--set", "idle"][..], &["app", "--set", "=5"]] {
            let args = default_to_serve(line.iter().map(OsString::from).collect());
            let err = Cli::<NoOptions>::try_parse_from(args).unwrap_err();
            assert!(err.to_string().contains("expected KEY=VALUE"), "{err}");
        }
    }

    #[test]
    fn issue39_interpreters_are_named_on_the_command_line_as_in_the_file() {
        let Command::Serve(options) = parse(&[
            "app",
            "--interpreter",
            "rb=ruby",
            "--interpreter",
            ".py=python3 -u",
            "--cgi",
        ]) else {
            panic!("not serve");
        };
        let sources = options.deploy.sources(None, Vec::new());
        let settings = crate::config::Settings::resolve(&sources).unwrap();
        let interpreters = &settings.config.cgi.interpreters;
        assert_eq!(interpreters["rb"], "ruby");
        assert_eq!(interpreters["py"], "python3 -u");
        for text in ["rb", "=ruby", "r.b=ruby", "rb="] {
            let args = default_to_serve(
                ["app", "--interpreter", text]
                    .iter()
                    .map(OsString::from)
                    .collect(),
            );
            let err = Cli::<NoOptions>::try_parse_from(args).unwrap_err();
            assert!(
                err.to_string().contains("expected EXT=PROGRAM"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn issue36_admin_bind_from_a_flag_or_the_environment_resolves_to_the_admin_listener() {
        let Command::Serve(options) = parse(&["app", "--admin-bind", ":9090"]) else {
            panic!("not serve");
        };
        let sources = options.deploy.sources(None, Vec::new());
        let settings = crate::config::Settings::resolve(&sources).unwrap();
        assert_eq!(
            settings.config.admin.bind,
            Some("0.0.0.0:9090".parse().unwrap())
        );
        let env = vec![(
            "PROSCENIUM_ADMIN_BIND".to_owned(),
            "127.0.0.1:9191".to_owned(),
        )];
        let sources = DeployArgs::default().sources(None, env);
        let settings = crate::config::Settings::resolve(&sources).unwrap();
        assert_eq!(
            settings.config.admin.bind,
            Some("127.0.0.1:9191".parse().unwrap())
        );
        let off = DeployArgs::default().sources(None, Vec::new());
        assert_eq!(
            crate::config::Settings::resolve(&off)
                .unwrap()
                .config
                .admin
                .bind,
            None
        );
    }
}
