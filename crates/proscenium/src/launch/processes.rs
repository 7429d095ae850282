//! `serve` over processes. With `[processes.NAME]` tables in the configuration, `APP
//! serve` (or `APP serve --host H`) builds no app: it starts every process mapped to
//! the host — the binary again, with its arguments and `--process NAME` — restarts one
//! that dies (prefork's backoff and budget), and stops them all on SIGTERM or Ctrl-C.
//! `APP serve --process NAME` is one of them: the app is built, its graphs started
//! with this process's clusters alone ([`Deploy::start_graph`]), and the process
//! serves the app's routes if its table says `serve = true`, else runs its clusters
//! until stopped.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use super::Deploy;
use super::report::{self, Heading};
use crate::App;
use crate::config::Config;
use crate::stage::{EXIT_REFUSED, Ended, HostProcesses, StopSignal};

/// How long the processes of a host, or the graphs of a process, may take to drain
/// when they stop.
pub(super) const DRAIN: Duration = Duration::from_secs(10);

/// How often a supervisor looks for a stop signal and for a process ended for good.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// What part of a deployment over processes this one is.
pub(super) enum Part {
    /// All of it: no `[processes]`.
    Whole,
    /// The supervisor of the processes mapped to this host.
    Host(String),
    /// This one process.
    Process(String),
}

impl Part {
    /// The part `process` and `host` (the flags) name in `config`.
    pub(super) fn of(config: &Config, process: Option<String>, host: Option<String>) -> Self {
        match (process, host) {
            (Some(process), _) => Self::Process(process),
            (None, Some(host)) => Self::Host(host),
            (None, None) if config.processes.is_empty() => Self::Whole,
            (None, None) => Self::Host("localhost".to_owned()),
        }
    }
}

/// Starts the processes `config` maps to `host` and supervises them until a stop
/// signal, or until one of them ends for good: exits 0 when it finished, 78 when it
/// refused to run (its configuration or graph is wrong), 1 when they cannot start.
pub(super) fn supervise(name: &str, config: &Config, host: &str) -> ExitCode {
    let started = StopSignal::watch()
        .map_err(|e| e.to_string())
        .and_then(|stop| {
            let args = without_host(std::env::args_os().skip(1).collect());
            let processes = HostProcesses::start(config, host, &args).map_err(|e| e.to_string())?;
            Ok((stop, processes))
        });
    let (mut stop, processes) = match started {
        Ok(started) => started,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{name} supervising the processes of host {host}; Ctrl-C stops");
    let code = loop {
        if stop.came_within(LOOK_EVERY) {
            break ExitCode::SUCCESS;
        }
        match processes.wait_ended(Some(Duration::ZERO)) {
            Some(Ended::Refused(process)) => {
                eprintln!("{name}: process {process} refused to run (its error is above)");
                break ExitCode::from(u8::try_from(EXIT_REFUSED).unwrap_or(1));
            }
            Some(Ended::Finished(process)) => {
                eprintln!("{name}: process {process} finished: stopping the others");
                break ExitCode::SUCCESS;
            }
            None => {}
        }
    };
    processes.stop(DRAIN);
    code
}

/// Runs process `process`: serves the app `build` returns if the process serves,
/// else builds it (starting its part of the graphs) and waits for a stop signal.
pub(super) fn run<O>(
    heading: &Heading<'_>,
    deploy: &Deploy<O>,
    process: &str,
    build: impl FnOnce(&Deploy<O>) -> App,
) -> ExitCode {
    let config = deploy.config();
    if config.processes[process].serve {
        return report::serve(heading, build(deploy), deploy);
    }
    // Watched before the app is built: a stop that comes while its graph starts is
    // not lost.
    let stop = match StopSignal::watch() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("{}: {e}", heading.name);
            return ExitCode::FAILURE;
        }
    };
    let app = build(deploy);
    println!(
        "{} running process {process} (clusters {:?}); SIGTERM stops",
        heading.name, config.processes[process].clusters
    );
    stop.wait();
    drop(app);
    ExitCode::SUCCESS
}

/// A supervisor's command line for its processes: its own, without `--host`.
fn without_host(args: Vec<OsString>) -> Vec<OsString> {
    let mut kept = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--host") => {
                args.next();
            }
            Some(a) if a.starts_with("--host=") => {}
            _ => kept.push(arg),
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supervisors_processes_get_its_arguments_without_the_host() {
        let args = ["serve", "--host", "h2", "-c", "app.toml", "--host=h3", "x"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(without_host(args), ["serve", "-c", "app.toml", "x"]);
    }
}
