//! Runs Leda's CEP application over a generated or given web-server log.
//!
//! Run with: `cargo run --release -p cep -- --entries 1000000 --config
//! examples/cep/configs/one-cluster.toml` (or `--log FILE` for a log of your own,
//! `--dir DIR` to keep the persisted windows). Prints the alarms, the entries and the
//! time, then one `cep alarms=… entries=… elapsed_ms=…` line for a lab scenario.
//! Exit codes: 0 done, 1 a run that failed, 2 bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use proscenium::config::{Settings, Sources};

struct Args {
    entries: usize,
    config: Option<PathBuf>,
    log: Option<PathBuf>,
    dir: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        entries: 1_000_000,
        config: None,
        log: None,
        dir: None,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(flag) = raw.next() {
        let value = raw.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--entries" => args.entries = value.parse().map_err(|e| format!("--entries: {e}"))?,
            "--config" => args.config = Some(value.into()),
            "--log" => args.log = Some(value.into()),
            "--dir" => args.dir = Some(value.into()),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!(
                "cep: {message}\nusage: cep [--entries N] [--config FILE] [--log FILE] [--dir DIR]"
            );
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cep: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
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
            let mut file =
                std::io::BufWriter::new(std::fs::File::create(&path).map_err(|e| e.to_string())?);
            cep::log::generate(args.entries, 42, &mut file).map_err(|e| e.to_string())?;
            drop(file);
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
