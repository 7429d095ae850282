//! The command line, as clap parses it; the doc comments are the help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Proscenium: a web server and runtime whose execution model is chosen at deploy time.
#[derive(Debug, Parser)]
#[command(name = "proscenium", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// The commands of every Proscenium app: here the app is DIR's static files and,
    /// with --tools, the diagnostic routes.
    #[command(flatten)]
    App(Box<proscenium::launch::Command>),
    /// Runs a lab scenario against Proscenium's models and peer servers, and writes
    /// DIR/report.html (plots, tables, machine, commands) and DIR/results.json. It
    /// builds the servers from the source checkout it was built from, or
    /// PROSCENIUM_SOURCE.
    Bench(BenchArgs),
    /// Runs the stage graph FILE describes (TOML, or a Lua file returning the same
    /// table): stages written in Lua and sources of lines, until the sources have read
    /// their files and every event is handled, or SIGINT or SIGTERM. What the stages
    /// print goes to standard error.
    Graph {
        /// The graph's file.
        file: PathBuf,
    },
}

/// Options of `bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The scenario: plaintext, json, static, dynamic, dynamic-lua (Leda's Lua page),
    /// on-system, off-system, mixed, scaling, stateful, workers, actors, cep (Leda's
    /// Table 1: a job under two partitions, no servers), or all.
    #[arg(required_unless_present = "index")]
    pub(crate) scenario: Option<String>,
    /// Runs no load: draws every OUT/*/ report again from its results.json and
    /// regenerates OUT/README.md from them (as `--index --out docs/results`).
    #[arg(long, conflicts_with = "scenario")]
    pub(crate) index: bool,
    /// Servers, comma-separated: proscenium:MODEL, with /pool=N or /workers=P or both
    /// after it (e.g. proscenium:loops, proscenium:thread-pool, proscenium:loops/pool=0,
    /// proscenium:thread-pool:1/workers=8), fib-cache:LOOPS (the stateful scenario's
    /// server), proscenium-lua and proscenium-cgi (Leda's page as a Lua page or a CGI
    /// script), proscenium-rack and proscenium-wsgi (a Rack or WSGI app, with puma and
    /// gunicorn serving the same one), nginx, nginx-lua, node, node-cluster, node-nbk (Node.Scala Fig.
    /// 1c's non-blocking /fib), actix, hyper, jetty, pekko, vertx, httpd-event,
    /// httpd-worker, httpd-prefork [default: the scenario's list; cep takes none].
    #[arg(long, value_delimiter = ',')]
    pub(crate) servers: Option<Vec<proscenium_lab::ServerSpec>>,
    /// quick (at most three minutes of load a scenario and round, on-system seven; `all`
    /// at three rounds, 82 minutes of load, about twice that in all) or full (the sources' parameters).
    #[arg(long, default_value = "quick")]
    pub(crate) profile: proscenium_lab::Profile,
    /// Where results go (with `all`, one subdirectory a scenario).
    #[arg(long, default_value = "lab-results")]
    pub(crate) out: PathBuf,
    /// Rounds of every server's steps, interleaved (each round starts with the next
    /// server); the report shows medians and their spread.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) rounds: u32,
    /// The servers' cores, as `taskset -c` takes them (0-3,6); with --load-cpus
    /// [default: each scenario's split of this machine's cores].
    #[arg(long, requires = "load_cpus")]
    pub(crate) server_cpus: Option<String>,
    /// The load generator's cores; with --server-cpus.
    #[arg(long, requires = "server_cpus")]
    pub(crate) load_cpus: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        let argv = ["proscenium", "bench"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Bench(bench) => Ok(bench),
            Command::App(_) | Command::Graph { .. } => panic!("not bench"),
        }
    }

    #[test]
    fn bench_takes_rounds_and_a_cpu_split_together() {
        let b = bench(&["plaintext"]).unwrap();
        assert_eq!((b.rounds, b.server_cpus, b.index), (3, None, false));
        let b = bench(&[
            "on-system",
            "--rounds",
            "5",
            "--server-cpus",
            "0-3",
            "--load-cpus",
            "4-7",
        ])
        .unwrap();
        assert_eq!(b.rounds, 5);
        assert_eq!(
            (b.server_cpus.unwrap(), b.load_cpus.unwrap()),
            ("0-3".into(), "4-7".into())
        );
        assert!(bench(&["plaintext", "--rounds", "0"]).is_err());
        assert!(
            bench(&["plaintext", "--server-cpus", "0"]).is_err(),
            "without --load-cpus"
        );
    }

    #[test]
    fn bench_index_needs_no_scenario_and_takes_none() {
        let b = bench(&["--index", "--out", "docs/results"]).unwrap();
        assert!(b.index && b.scenario.is_none());
        assert!(bench(&[]).is_err(), "a scenario or --index");
        assert!(bench(&["plaintext", "--index"]).is_err());
    }
}
