//! What the commands print: the start line of `serve`, the route table of `routes`,
//! the effective configuration of `config`.

use std::process::ExitCode;

use super::Deploy;
use crate::config::Settings;
use crate::{App, Config, Dispatch, Model, Server, Signals, site};

/// How the app names itself.
pub(super) struct Heading<'a> {
    pub(super) name: &'a str,
    pub(super) version: Option<&'a str>,
}

/// Serves `app` until SIGINT or SIGTERM, reading the configuration again at each
/// SIGHUP; prints one start line first (a prefork worker, the same binary
/// re-executed, stays quiet).
pub(super) fn serve<O>(heading: &Heading<'_>, app: App, deploy: &Deploy<O>) -> ExitCode {
    let name = heading.name;
    let config = deploy.config().clone();
    let what = match &config.root {
        Some(root) => root.display().to_string(),
        None => {
            let routes = app.routes().count();
            format!("{routes} route{}", if routes == 1 { "" } else { "s" })
        }
    };
    let plan = describe(&config);
    let scheme = if config.tls.enabled() {
        "https"
    } else {
        "http"
    };
    let plain_serves = config.tls.plain.as_ref().map(|plain| plain.serve);
    // Watched before the start line is printed: a client that reads the line and at
    // once sends SIGTERM gets a clean shutdown, not a killed process.
    let started = Signals::watch()
        .and_then(|signals| Ok((signals, Server::new(app).config(config).start()?)))
        .map(|(signals, handle)| (signals, handle.rereading(deploy.rereader())));
    let (signals, handle) = match started {
        Ok(started) => started,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if crate::rt::prefork_worker().is_none() {
        let version = heading.version.map(|v| format!(" {v}")).unwrap_or_default();
        let plain = match (handle.plain_addr(), plain_serves) {
            (Some(addr), Some(crate::config::PlainServes::Redirect)) => {
                format!(" and http://{addr} (redirecting)")
            }
            (Some(addr), _) => format!(" and http://{addr}"),
            _ => String::new(),
        };
        let admin = handle
            .admin_addr()
            .map(|addr| format!("; admin on http://{addr}"))
            .unwrap_or_default();
        println!(
            "{name}{version} serving {what} on {scheme}://{}{plain} ({plan}){admin}; Ctrl-C stops",
            handle.local_addr()
        );
    }
    handle.run_until(signals);
    ExitCode::SUCCESS
}

/// Reads the start line (`NAME serving WHAT on http://ADDR (...)`, or `https://`) from the piped
/// standard output of an app started as a child process, and returns it with the
/// address it names: for tools and tests that start an app and talk to it.
///
/// # Errors
///
/// When the output cannot be read, or its first line names no address.
pub fn read_start_line(
    child: &mut std::process::Child,
) -> std::io::Result<(String, std::net::SocketAddr)> {
    use std::io::BufRead;
    let stdout = child.stdout.as_mut().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "stdout is not piped")
    })?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    let addr = served_address(&line).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("no address in the start line {line:?}"),
        )
    })?;
    Ok((line, addr))
}

/// Returns the address a start line names.
///
/// # Examples
///
/// ```
/// let line = "hello serving 3 routes on http://127.0.0.1:41234 (model loops, 2 loops); Ctrl-C stops";
/// assert_eq!(proscenium::launch::served_address(line).unwrap().port(), 41234);
/// let tls = "site serving site on https://127.0.0.1:8443 (model loops, 2 loops); Ctrl-C stops";
/// assert_eq!(proscenium::launch::served_address(tls).unwrap().port(), 8443);
/// ```
pub fn served_address(start_line: &str) -> Option<std::net::SocketAddr> {
    let (_, rest) = start_line.split_once(" on http")?;
    let rest = rest.strip_prefix("s").unwrap_or(rest).strip_prefix("://")?;
    rest.split(' ').next()?.parse().ok()
}

/// Prints the routes `serve` would answer, the web server's own included; a Lua app
/// that does not load is said on stderr, and the exit code is 2.
pub(super) fn routes(heading: &Heading<'_>, app: App, config: &Config) -> ExitCode {
    match site::configure(app, config) {
        Ok(app) => {
            for route in app.routes() {
                println!("{route}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", heading.name);
            ExitCode::from(2)
        }
    }
}

/// Prints every setting as TOML with its origin, unset ones as comments, and how the
/// server would run.
pub(super) fn config(settings: &Settings) {
    let entries = settings.entries();
    let lines: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            let line = match &e.value {
                Some(value) => format!("{} = {value}", e.key),
                None => format!("# {} unset", e.key),
            };
            (line, e.origin.to_string())
        })
        .collect();
    let width = lines.iter().map(|(line, _)| line.len()).max().unwrap_or(0);
    for (line, origin) in lines {
        println!("{line:<width$}  # {origin}");
    }
    println!("# runs as: {}", describe(&settings.config));
}

/// Describes how the server runs, for the start line and `config`.
pub(super) fn describe(config: &Config) -> String {
    let serving = describe_serving(config);
    if config.supervised() {
        format!("{serving}; in each of {} workers", config.worker_count())
    } else {
        serving
    }
}

/// Describes the model that serves connections, in this process or in each worker.
fn describe_serving(config: &Config) -> String {
    let model = config.serving_model();
    match model {
        Model::ThreadPool => format!(
            "model thread-pool, {} threads, queue {}",
            config.thread_count(),
            config.thread_queue
        ),
        Model::ThreadPerConn => format!(
            "model thread-per-conn, at most {} threads",
            config.thread_count()
        ),
        Model::Staged => {
            let threads = crate::staged::cluster(config).threads.unwrap_or(1);
            format!(
                "model staged, one cluster `http` of {threads} threads (wait-client, handle-client, route-handler)"
            )
        }
        Model::Loops | Model::EventLoop | Model::Prefork => {
            let loops = config.loop_count();
            let plural = if loops == 1 { "" } else { "s" };
            let blocking = match config.blocking_pool_size() {
                0 => "blocking inline".to_owned(),
                n => format!("blocking pool {n}"),
            };
            // A worker has one socket: `reuseport` falls back to JSQ there.
            let dispatch = match (config.supervised(), config.dispatch) {
                (true, _) => Dispatch::Jsq,
                (false, dispatch) => dispatch,
            };
            format!("model {model}, {loops} loop{plural}, dispatch {dispatch}, {blocking}")
        }
    }
}

/// Folds clap's error (message, tip, usage) into one line: the message and its tip.
pub(super) fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("; ")
}
