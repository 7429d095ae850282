//! The `proscenium` command: a thin `main` over a resolved [`proscenium::Config`].
//!
//! Exit codes: 0 after a clean shutdown, 1 when the server fails (address in use, ...),
//! 2 for bad flags or configuration.

mod cli;
mod settings;

use std::process::ExitCode;

use clap::Parser;
use proscenium::{App, Config, Model, Server};

use crate::cli::{BenchArgs, Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match &cli.command {
        Command::Serve(args) | Command::Routes(args) => args,
        Command::Bench(bench) => return run_bench(bench),
    };
    let config = match settings::resolve(args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("proscenium: {e}");
            return ExitCode::from(2);
        }
    };
    init_tracing(config.debug);
    match cli.command {
        Command::Serve(_) => serve(config),
        Command::Routes(_) => {
            for route in proscenium::web::configure(App::new(), &config).routes() {
                println!("{route}");
            }
            ExitCode::SUCCESS
        }
        Command::Bench(_) => unreachable!("handled above"),
    }
}

fn run_bench(args: &BenchArgs) -> ExitCode {
    if let Err(e) = proscenium_lab::interrupt_on_signals() {
        eprintln!("proscenium: cannot watch Ctrl-C: {e}");
        return ExitCode::FAILURE;
    }
    let options = proscenium_lab::Options {
        scenario: args.scenario.clone(),
        servers: args.servers.clone(),
        profile: args.profile,
        out: args.out.clone(),
    };
    match proscenium_lab::run(&options) {
        Ok(dirs) => {
            for dir in dirs {
                println!("report: {}", dir.join("report.html").display());
            }
            ExitCode::SUCCESS
        }
        Err(e @ proscenium_lab::Error::UnknownScenario(_)) => {
            eprintln!("proscenium: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("proscenium: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(config: Config) -> ExitCode {
    let what = config
        .root
        .as_ref()
        .map_or_else(|| "no directory".to_owned(), |r| r.display().to_string());
    let plan = describe(&config);
    let handle = match Server::new(App::new()).config(config).start() {
        Ok(handle) => handle,
        Err(e) => {
            eprintln!("proscenium: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A prefork worker is this same command re-executed: only the supervisor speaks.
    if proscenium::rt::prefork_worker().is_none() {
        println!(
            "proscenium {} serving {what} on http://{} ({plan}); Ctrl-C stops",
            env!("CARGO_PKG_VERSION"),
            handle.local_addr()
        );
    }
    match handle.run_until_signal() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("proscenium: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Describes how the server runs, for the start line.
fn describe(config: &Config) -> String {
    match config.model {
        Model::ThreadPool => {
            return format!(
                "model thread-pool, {} threads, queue {}",
                config.thread_count(),
                config.thread_queue
            );
        }
        Model::ThreadPerConn => {
            return format!(
                "model thread-per-conn, at most {} threads",
                config.thread_count()
            );
        }
        Model::Prefork => {
            let (workers, loops) = (config.worker_count(), config.loop_count());
            return format!("model prefork, {workers} workers, {loops} loops each, dispatch jsq");
        }
        Model::Loops | Model::EventLoop => {}
    }
    let loops = config.loop_count();
    let plural = if loops == 1 { "" } else { "s" };
    let blocking = match config.blocking_pool_size() {
        0 => "blocking inline".to_owned(),
        n => format!("blocking pool {n}"),
    };
    format!(
        "model {}, {loops} loop{plural}, dispatch {}, {blocking}",
        config.model, config.dispatch
    )
}

fn init_tracing(debug: bool) {
    let default = if debug { "debug" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
