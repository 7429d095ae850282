//! Runs Leda's CEP application over a generated or given web-server log.
//!
//! Run with: `cargo run --release -p cep -- --entries 1000000 --config
//! examples/cep/configs/one-cluster.toml` (or `--log FILE` for a log of your own,
//! `--dir DIR` to keep the persisted windows). Prints each alarm, their count, the
//! entries, Correlate's pairs (a count and a digest, to compare runs) and the time,
//! then one `cep alarms=… entries=… elapsed_ms=…` line for a lab scenario.
//! `--write-log FILE` writes the generated log to FILE and stops: the lab's `cep`
//! scenario generates it once and gives every run the same.
//!
//! Over processes (Leda's Table 1, configuration 2, for real): a configuration with
//! `[processes.NAME]` tables (`configs/two-processes.toml`) and a `[redis] url` (or
//! `PROSCENIUM_REDIS_URL`) makes `cep` start every process mapped to `--host`
//! (`localhost` by default) — itself again, with `--process NAME` — supervise them,
//! and print what the process with *alarm* prints; `--process NAME` runs that one alone.
//! Live (`--follow FILE`, `--listen ADDR`, each repeatable): every source a stage and
//! a cluster of its own, following a log as it grows or taking lines from sockets;
//! alarms are printed as they are raised, until SIGINT or SIGTERM.
//! Exit codes: 0 done, 1 a run that failed, 2 bad arguments, 78 a process that refused
//! to run (its configuration or its graph is wrong: not restarted).

use std::path::PathBuf;
use std::process::ExitCode;

use cep::Code;
use cep::live::Feed;
use clap::Parser;
use proscenium::config::{Settings, Sources};
use proscenium::stage::{EXIT_REFUSED, Ended, HostProcesses, StageError, StopSignal};

/// Leda's CEP application: a web-server log through a stage graph, alarms out.
#[derive(Parser)]
#[command(name = "cep")]
struct Args {
    /// Entries of the generated log (ignored with --log).
    #[arg(long, default_value_t = 1_000_000)]
    entries: usize,
    /// The configuration file: its [clusters.NAME] tables partition the graph.
    #[arg(long)]
    config: Option<PathBuf>,
    /// A log of your own, one Common Log Format entry a line.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Where the persisted windows are kept (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Write the generated log of --entries to this file, and run nothing.
    #[arg(long, conflicts_with_all = ["log", "config", "dir"])]
    write_log: Option<PathBuf>,
    /// Run only this process of the configuration's [processes].
    #[arg(long, conflicts_with = "host")]
    process: Option<String>,
    /// Start and supervise the configuration's processes mapped to this host.
    #[arg(long, default_value = "localhost")]
    host: String,
    /// Run Filter and Correlate written in Lua: DIR/filter.lua and DIR/correlate.lua
    /// (examples/cep/lua), within the configuration's `[lua]` budgets.
    #[arg(long, value_name = "DIR")]
    lua: Option<PathBuf>,
    /// Follow this log as it grows (repeatable): a live source of its own, and the run
    /// goes on until SIGINT or SIGTERM, printing each alarm as it is raised.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["log", "write_log", "process"])]
    follow: Vec<PathBuf>,
    /// Take log lines sent to this address (repeatable), from any number of
    /// connections: a live source of its own, as --follow.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["log", "write_log", "process"])]
    listen: Vec<std::net::SocketAddr>,
}

/// How long stopping processes may take to drain.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a run failed, and the exit status that says it.
struct Failure {
    message: String,
    status: u8,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self { message, status: 1 }
    }
}

impl From<StageError> for Failure {
    fn from(error: StageError) -> Self {
        let status = if error.is_graph() {
            u8::try_from(EXIT_REFUSED).unwrap_or(1)
        } else {
            1
        };
        Self {
            message: error.to_string(),
            status,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    // A stage's failures (a script past its budget, a window that cannot be written)
    // are warnings of the stage layer: shown, on standard error.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
        .init();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("cep: {}", failure.message);
            ExitCode::from(failure.status)
        }
    }
}

fn run(args: &Args) -> Result<(), Failure> {
    if let Some(path) = &args.write_log {
        return Ok(write_log(args.entries, path)?);
    }
    // Watched before any thread starts: a stop that comes early is not lost.
    let stop = args
        .process
        .as_ref()
        .map(|_| StopSignal::watch())
        .transpose();
    let stop = stop.map_err(|e| format!("cannot watch stop signals: {e}"))?;
    let sources = Sources {
        file: args.config.clone(),
        env: std::env::vars().collect(),
        ..Sources::default()
    };
    let settings = Settings::resolve(&sources).map_err(|e| e.to_string())?;
    let config = &settings.config;
    let code = match &args.lua {
        Some(dir) => Code::Lua(dir.clone(), config.lua.clone()),
        None => Code::Rust,
    };
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    if !args.follow.is_empty() || !args.listen.is_empty() {
        let dir = args
            .dir
            .clone()
            .unwrap_or_else(|| scratch.path().join("windows"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        return live(args, &code, config, &dir);
    }
    let (log, dir) = inputs(args, scratch.path())?;
    let outcome = match (&args.process, stop) {
        (Some(process), Some(stop)) => cep::run_process(&log, &code, &dir, config, process, stop)?,
        _ if !config.processes.is_empty() => return supervise(args, config, &log, &dir),
        _ => Some(cep::run(&log, &code, &dir, &config.clusters)?),
    };
    if let Some(outcome) = outcome {
        let ms = outcome.elapsed.as_millis();
        for alarm in &outcome.alarms {
            println!("alarm: {alarm}");
        }
        println!("alarms: {}", outcome.alarms.len());
        println!("entries: {}", outcome.entries);
        println!(
            "correlations: {} digest {:016x}",
            outcome.correlations.len(),
            outcome.correlations_digest()
        );
        println!("elapsed: {ms} ms");
        println!(
            "cep alarms={} entries={} elapsed_ms={ms}",
            outcome.alarms.len(),
            outcome.entries
        );
    }
    Ok(())
}

/// Runs over the live sources of `--follow` and `--listen` until SIGINT or SIGTERM:
/// prints where each listens, then each alarm as it comes, then their count.
fn live(
    args: &Args,
    code: &Code,
    config: &proscenium::Config,
    dir: &std::path::Path,
) -> Result<(), Failure> {
    let stop = StopSignal::watch().map_err(|e| format!("cannot watch stop signals: {e}"))?;
    let mut feeds: Vec<Feed> = args.follow.iter().cloned().map(Feed::Follow).collect();
    for addr in &args.listen {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening on {bound}");
        feeds.push(Feed::Listen(listener));
    }
    let (raised, alarms) = std::sync::mpsc::channel();
    let printer = std::thread::spawn(move || {
        alarms
            .iter()
            .inspect(|alarm| println!("alarm: {alarm}"))
            .count()
    });
    println!("cep: {} live sources; SIGINT or SIGTERM stops", feeds.len());
    cep::run_live(feeds, code, dir, &config.clusters, stop, raised)?;
    let count = printer
        .join()
        .map_err(|_| "the alarm printer failed".to_owned())?;
    println!("alarms: {count}");
    Ok(())
}

/// The log to read (generated under `scratch` unless `--log`) and the directory for
/// the persisted windows (made).
fn inputs(args: &Args, scratch: &std::path::Path) -> Result<(PathBuf, PathBuf), String> {
    let log = match &args.log {
        Some(log) => log.clone(),
        None => {
            let path = scratch.join("access.log");
            write_log(args.entries, &path)?;
            path
        }
    };
    let dir = args.dir.clone().unwrap_or_else(|| scratch.join("windows"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok((log, dir))
}

/// Starts the processes mapped to `--host`, each reading `log` into `dir`, and waits
/// for the one with *alarm* to print the outcome and finish; then stops the others.
fn supervise(
    args: &Args,
    config: &proscenium::Config,
    log: &std::path::Path,
    dir: &std::path::Path,
) -> Result<(), Failure> {
    let file = args
        .config
        .as_ref()
        .ok_or_else(|| "the processes come from --config FILE".to_owned())?;
    let mut child_args: Vec<std::ffi::OsString> = vec![
        "--config".into(),
        file.into(),
        "--log".into(),
        log.into(),
        "--dir".into(),
        dir.into(),
    ];
    if let Some(lua) = &args.lua {
        child_args.extend(["--lua".into(), lua.into()]);
    }
    let processes = HostProcesses::start(config, &args.host, &child_args)?;
    let ended = processes.wait_ended(None);
    processes.stop(DRAIN);
    match ended {
        Some(Ended::Finished(_)) => Ok(()),
        Some(Ended::Refused(name)) => Err(Failure {
            message: format!("process {name} refused to run (its error is above)"),
            status: u8::try_from(EXIT_REFUSED).unwrap_or(1),
        }),
        None => Err("the processes stopped before the outcome".to_owned().into()),
    }
}

/// Writes a generated log of `entries` to `path` (always the same for the same count).
fn write_log(entries: usize, path: &std::path::Path) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(cannot)?);
    cep::log::generate(entries, 42, &mut file).map_err(cannot)?;
    std::io::Write::flush(&mut file).map_err(cannot)
}
