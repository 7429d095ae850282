//! The `proscenium` command: the commands every Proscenium app has (`serve`, `routes`,
//! `config`, from [`proscenium::launch`]) over an app of static files, `bench`, the
//! lab, and `graph`, a stage graph described in a file.
//!
//! Exit codes: 0 after a clean shutdown, 1 when the server fails (address in use, ...),
//! 2 for bad flags or configuration.

mod cli;

use std::process::ExitCode;

use clap::Parser;
use proscenium::App;
use proscenium::launch::Launcher;
use proscenium::lua::GraphFile;
use proscenium::stage::StopSignal;

use crate::cli::{BenchArgs, Cli, Command};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::App(command) => Launcher::new()
            .name("proscenium")
            .version(env!("CARGO_PKG_VERSION"))
            .execute(*command, |_| App::new()),
        Command::Bench(bench) => run_bench(&bench),
        Command::Graph { file } => run_graph(&file),
    }
}

/// Runs the graph `file` describes: 2 for a file that is no graph, 1 for one that
/// does not start.
fn run_graph(file: &std::path::Path) -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // Watched before any stage starts: a stop that comes early is not lost.
    let stop = match StopSignal::watch() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("proscenium: cannot watch stop signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let graph = match GraphFile::read(file) {
        Ok(graph) => graph,
        Err(e) => {
            eprintln!("proscenium: {e}");
            return ExitCode::from(2);
        }
    };
    match graph.run(stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("proscenium: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_bench(args: &BenchArgs) -> ExitCode {
    let Some(scenario) = args.scenario.clone() else {
        let written = proscenium_lab::write_index(&args.out);
        return exit(written.map(|readme| println!("index: {}", readme.display())));
    };
    if let Err(e) = proscenium_lab::interrupt_on_signals() {
        eprintln!("proscenium: cannot watch Ctrl-C: {e}");
        return ExitCode::FAILURE;
    }
    let options = proscenium_lab::Options {
        scenario,
        servers: args.servers.clone(),
        profile: args.profile,
        out: args.out.clone(),
        rounds: Some(args.rounds),
        server_cpus: args.server_cpus.clone(),
        load_cpus: args.load_cpus.clone(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    exit(proscenium_lab::run(&options).map(|dirs| {
        for dir in dirs {
            println!("report: {}", dir.join("report.html").display());
        }
    }))
}

/// The exit code of a lab command, its error printed: 2 for an unknown scenario.
fn exit(outcome: Result<(), proscenium_lab::Error>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
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
