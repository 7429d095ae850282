//! Runs Leda's CEP application over a generated or given web-server log.
//!
//! Run with: `cargo run --release -p cep -- --entries 1000000 --config
//! examples/cep/configs/one-cluster.toml` (or `--log FILE` for a log of your own,
//! `--dir DIR` to keep the persisted windows). Prints the alarms, the entries and the
//! time, then one `cep alarms=… entries=… elapsed_ms=…` line for a lab scenario.
//! `--write-log FILE` writes the generated log to FILE and stops: the lab's `cep`
//! scenario generates it once and gives every run the same.
//! Exit codes: 0 done, 1 a run that failed, 2 bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use proscenium::config::{Settings, Sources};

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
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cep: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(path) = &args.write_log {
        return write_log(args.entries, path);
    }
    let sources = Sources {
        file: args.config.clone(),
        ..Sources::default()
    };
    let settings = Settings::resolve(&sources).map_err(|e| e.to_string())?;
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let log = match &args.log {
        Some(log) => log.clone(),
        None => {
            let path = scratch.path().join("access.log");
            write_log(args.entries, &path)?;
            path
        }
    };
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| scratch.path().join("windows"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let outcome = cep::run(&log, &dir, &settings.config.clusters).map_err(|e| e.to_string())?;
    let ms = outcome.elapsed.as_millis();
    println!("alarms: {}", outcome.alarms.len());
    println!("entries: {}", outcome.entries);
    println!("elapsed: {ms} ms");
    println!(
        "cep alarms={} entries={} elapsed_ms={ms}",
        outcome.alarms.len(),
        outcome.entries
    );
    Ok(())
}

/// Writes a generated log of `entries` to `path` (always the same for the same count).
fn write_log(entries: usize, path: &std::path::Path) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(cannot)?);
    cep::log::generate(entries, 42, &mut file).map_err(cannot)?;
    std::io::Write::flush(&mut file).map_err(cannot)
}
