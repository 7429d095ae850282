//! The `cep` scenario's runner: Leda's Table 1 is a job timed to its end, not a server
//! under load. The log is generated once; each round runs every row of the table under
//! both configurations (in an order rotated a round, as servers' turns are), each run
//! `cep --log L --config F` pinned to the plan's cores, recording its own time, its
//! wall time and CPU (its whole process, every thread) and its peak memory. A run whose
//! alarms differ from the first run's is invalid: partitions must not change the
//! output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::{check_interrupt, interleaved};
use crate::Error;
use crate::load::Measured;
use crate::process::RssPeak;
use crate::progress::Progress;
use crate::results::{JobOutcome, ServerRun, Step};
use crate::scenario::{CEP_CONFIGURATIONS, CEP_ENTRIES, CEP_GROUP, CEP_ROWS};
use crate::tools::Tools;

/// Where the job runs and what it reports to.
pub(super) struct Job<'a> {
    pub(super) tools: &'a Tools,
    pub(super) progress: &'a Progress,
    /// The `taskset -c` list of its cores, and how many.
    pub(super) cores: &'a str,
    pub(super) core_count: usize,
    pub(super) rounds: u32,
}

/// One run to make: a row of Table 1 under one configuration (1, 2, or 3: 2 over two
/// processes).
struct Run {
    row: usize,
    configuration: usize,
}

impl Job<'_> {
    /// Builds `cep`, generates the log and runs every round; returns the
    /// configurations as the report's servers and each run as a step.
    pub(super) fn run(&self) -> Result<(Vec<ServerRun>, Vec<Step>), Error> {
        self.tools.build_example("cep")?;
        let binary = self.tools.example_binary("cep");
        let work = tempfile::Builder::new()
            .prefix("proscenium-lab-cep-")
            .tempdir()
            .map_err(Error::io("create a work directory"))?;
        let log = self.write_log(&binary, work.path())?;
        let runs: Vec<Run> = (0..CEP_ROWS.len())
            .flat_map(|row| {
                (1..=CEP_CONFIGURATIONS.len()).map(move |configuration| Run { row, configuration })
            })
            .collect();
        self.progress
            .restart(runs.len() as u64 * u64::from(self.rounds));
        let mut steps: Vec<Step> = Vec::new();
        for round in 1..=self.rounds {
            for i in interleaved(runs.len(), round) {
                check_interrupt()?;
                let windows = work.path().join(format!("windows-{round}-{i}"));
                let mut step = self.time(&binary, &runs[i], &log, &windows, round)?;
                let _ = std::fs::remove_dir_all(&windows);
                step.invalid = differs(&steps, &step);
                steps.push(step);
                self.progress.advance();
            }
        }
        Ok((self.servers(&binary), steps))
    }

    /// Generates the log every run reads, in `work`; returns its path.
    fn write_log(&self, binary: &Path, work: &Path) -> Result<PathBuf, Error> {
        let log = work.join("access.log");
        self.progress
            .say(format!("cep: generating a log of {CEP_ENTRIES} entries"));
        output(
            "cep --write-log",
            Command::new(binary)
                .args(["--entries", &CEP_ENTRIES.to_string(), "--write-log"])
                .arg(&log),
        )?;
        Ok(log)
    }

    /// The configurations as the report's servers, each with its command.
    fn servers(&self, binary: &Path) -> Vec<ServerRun> {
        CEP_CONFIGURATIONS
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut run = ServerRun::new((*name).to_owned(), self.cores.to_owned());
                run.command = Some(format!(
                    "taskset -c {} {} --log LOG --config examples/cep/configs/table-1/\
                     config-{}-threads-T-instances-P-F-C.toml (a row's threads and instances{})",
                    self.cores,
                    binary.display(),
                    ["1", "2", "2p"][i],
                    if i == 2 { "; PROSCENIUM_REDIS_URL: a redis-server of the lab's own, fresh for each run" } else { "" }
                ));
                run
            })
            .collect()
    }

    /// Runs `run` once over `log`, its windows persisted under `windows`.
    fn time(
        &self,
        binary: &Path,
        run: &Run,
        log: &Path,
        windows: &Path,
        round: u32,
    ) -> Result<Step, Error> {
        let row = CEP_ROWS[run.row];
        self.progress.at("cep", run.server(), &row.label());
        let config = self.tools.root().join(row.config(run.configuration));
        let mut command = Command::new("taskset");
        command
            .args(["-c", self.cores])
            .arg(binary)
            .arg("--log")
            .arg(log)
            .arg("--config")
            .arg(&config)
            .arg("--dir")
            .arg(windows);
        // Over two processes, a Redis of the run's own between them (stopped when
        // dropped, after the run).
        let redis = (run.configuration == 3).then(proscenium::testing::Redis::start);
        if let Some(redis) = &redis {
            command.env("PROSCENIUM_REDIS_URL", redis.url());
        }
        let shown = format!("{command:?}").replace('"', "");
        let timed = Timed::run(command)?;
        let outcome = timed.outcome().ok_or_else(|| timed.failure(&shown))?;
        Ok(self.step(run, round, &timed, outcome, shown))
    }

    /// The step recording `run`'s `outcome` in `round`, as `timed`.
    fn step(
        &self,
        run: &Run,
        round: u32,
        timed: &Timed,
        outcome: JobOutcome,
        command: String,
    ) -> Step {
        let Timed { wall_s, cpu_s, .. } = *timed;
        Step {
            server: run.server().to_owned(),
            group: CEP_GROUP.to_owned(),
            label: CEP_ROWS[run.row].label(),
            x: run.row as f64,
            round,
            measured: Measured {
                requests: outcome.entries,
                achieved_rps: outcome.entries as f64 / outcome.elapsed_s.max(1e-9),
                ..Measured::default()
            },
            cpu_us_per_request: (outcome.entries > 0).then(|| cpu_s * 1e6 / outcome.entries as f64),
            server_utilisation: Some(cpu_s / (wall_s * self.core_count as f64)),
            peak_rss_kib: timed.peak_rss_kib,
            command,
            job: Some(outcome),
            ..Step::default()
        }
    }
}

impl Run {
    /// The configuration's name, as the report's server.
    fn server(&self) -> &'static str {
        CEP_CONFIGURATIONS[self.configuration - 1]
    }
}

/// A run of `cep` as the lab saw it: its output, wall and CPU time, peak memory.
struct Timed {
    out: std::process::Output,
    wall_s: f64,
    cpu_s: f64,
    peak_rss_kib: u64,
}

impl Timed {
    /// Runs `command` to its end, watching its memory.
    fn run(mut command: Command) -> Result<Self, Error> {
        let cpu_before = children_cpu_seconds();
        let started = Instant::now();
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(Error::io("start cep"))?;
        let rss = RssPeak::watch(child.id());
        let out = child
            .wait_with_output()
            .map_err(Error::io("wait for cep"))?;
        Ok(Self {
            out,
            wall_s: started.elapsed().as_secs_f64(),
            peak_rss_kib: rss.finish(),
            cpu_s: children_cpu_seconds() - cpu_before,
        })
    }

    /// What the run reported, when it succeeded and said so.
    fn outcome(&self) -> Option<JobOutcome> {
        let text = String::from_utf8_lossy(&self.out.stdout);
        self.out
            .status
            .success()
            .then(|| parse(&text, self.wall_s, self.cpu_s))
            .flatten()
    }

    /// The error of a failed run of `shown`, with what it printed.
    fn failure(&self, shown: &str) -> Error {
        Error::Tool(format!(
            "{shown} failed ({}): {}{}",
            self.out.status,
            String::from_utf8_lossy(&self.out.stdout).trim(),
            String::from_utf8_lossy(&self.out.stderr).trim()
        ))
    }
}

/// Why `step` is invalid: its alarms or entries differ from the first run's.
fn differs(earlier: &[Step], step: &Step) -> Option<String> {
    let first = earlier.first().and_then(|s| s.job)?;
    let this = step.job?;
    ((first.alarms, first.entries) != (this.alarms, this.entries)).then(|| {
        format!(
            "{} alarms over {} entries, where the first run ({} / {}) raised {} over {}: \
             a partition changed the output",
            this.alarms,
            this.entries,
            earlier[0].server,
            earlier[0].label,
            first.alarms,
            first.entries
        )
    })
}

/// Reads `cep alarms=… entries=… elapsed_ms=…` off `cep`'s output.
fn parse(text: &str, wall_s: f64, cpu_s: f64) -> Option<JobOutcome> {
    let line = text.lines().find(|l| l.starts_with("cep "))?;
    let field = |name: &str| -> Option<u64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    Some(JobOutcome {
        elapsed_s: field("elapsed_ms")? as f64 / 1000.0,
        wall_s,
        cpu_s,
        alarms: field("alarms")?,
        entries: field("entries")?,
    })
}

/// Runs `command` to its end; its failure is the run's.
fn output(what: &str, command: &mut Command) -> Result<(), Error> {
    let out = command.output().map_err(Error::io("start cep"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Tool(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// CPU time (user + system) of the lab's children that have ended and been waited for:
/// a job's is the difference over its run, every thread counted.
fn children_cpu_seconds() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        seconds(u.user_time()) + seconds(u.system_time())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_read_off_its_last_line() {
        let text = "alarms: 200\nentries: 1000000\nelapsed: 1815 ms\n\
                    cep alarms=200 entries=1000000 elapsed_ms=1815\n";
        let outcome = parse(text, 2.0, 3.5).unwrap();
        assert_eq!(
            outcome,
            JobOutcome {
                elapsed_s: 1.815,
                wall_s: 2.0,
                cpu_s: 3.5,
                alarms: 200,
                entries: 1_000_000
            }
        );
        assert!(parse("alarms: 200\n", 1.0, 1.0).is_none());
    }
}
