//! The command line, as clap parses it; the doc comments are the help text.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use proscenium::{Dispatch, ModelSpec};

/// Proscenium: a web server and runtime whose execution model is chosen at deploy time.
#[derive(Debug, Parser)]
#[command(name = "proscenium", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serves DIR (static files, listings, error pages) until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Prints the routes `serve` would answer, with where each handler runs.
    Routes(ServeArgs),
    /// Runs a lab scenario against Proscenium's models and peer servers, and writes
    /// DIR/report.html (plots, tables, machine, commands) and DIR/results.json.
    Bench(BenchArgs),
}

/// Options of `bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The scenario: plaintext, json, static, dynamic, on-system, off-system, mixed,
    /// scaling, or all.
    pub(crate) scenario: String,
    /// Servers, comma-separated: proscenium:MODEL[/pool=N] (e.g. proscenium:loops,
    /// proscenium:thread-pool, proscenium:loops/pool=0), nginx, node, node-cluster,
    /// actix, hyper [default: the scenario's list].
    #[arg(long, value_delimiter = ',')]
    pub(crate) servers: Option<Vec<proscenium_lab::ServerSpec>>,
    /// quick (about two minutes a scenario) or full (the sources' parameters).
    #[arg(long, default_value = "quick")]
    pub(crate) profile: proscenium_lab::Profile,
    /// Where results go (with `all`, one subdirectory a scenario).
    #[arg(long, default_value = "lab-results")]
    pub(crate) out: PathBuf,
}

/// Options of `serve`; each overrides the same setting of the config file.
#[derive(Debug, Args, Default)]
pub(crate) struct ServeArgs {
    /// Directory to serve static files from (its proscenium.toml is read if present).
    pub(crate) dir: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:3000].
    #[arg(long, short)]
    pub(crate) bind: Option<SocketAddr>,
    /// Execution model: loops or loops:N (N loops), event-loop (one loop; blocking
    /// handlers inline unless --blocking-pool is given), thread-pool or thread-pool:N
    /// (N threads, default 200), thread-per-conn or thread-per-conn:N (at most N
    /// threads, default 10000), prefork or prefork:P (P worker processes, default one
    /// per core, each running loops) [default: loops].
    #[arg(long, short)]
    pub(crate) model: Option<ModelSpec>,
    /// Worker processes: short for --model prefork:P (Yarn's -w).
    #[arg(long, short)]
    pub(crate) workers: Option<usize>,
    /// Event loops of the loops model, or of each prefork worker [default: one per
    /// core, shared among the workers].
    #[arg(long, short)]
    pub(crate) loops: Option<usize>,
    /// Threads for blocking handlers; 0 runs them inline on the loop
    /// [default: 64 for loops, 0 for event-loop].
    #[arg(long)]
    pub(crate) blocking_pool: Option<usize>,
    /// How connections are given to loops: jsq, round-robin or reuseport [default: jsq].
    #[arg(long)]
    pub(crate) dispatch: Option<Dispatch>,
    /// Config file [default: DIR/proscenium.toml, else ./proscenium.toml, if present].
    #[arg(long, short)]
    pub(crate) config: Option<PathBuf>,
    /// Access log: a file path, or - for stdout.
    #[arg(long)]
    pub(crate) log: Option<PathBuf>,
    /// Adds request time and loop id to the access log, and debug messages to stderr.
    #[arg(long)]
    pub(crate) debug: bool,
    /// Mounts the diagnostic routes /_status, /_echo and /_delay.
    #[arg(long)]
    pub(crate) tools: bool,
}
