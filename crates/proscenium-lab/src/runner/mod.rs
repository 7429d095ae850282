//! The runner: for each server of a scenario, build, start, wait, check, load step by
//! step while measuring what the server spends, stop; then the report.
//!
//! Shutdown steps on Ctrl-C (or SIGTERM): the signal sets a flag, the running load
//! generator (in the lab's own process group) ends at once, the runner sees the flag
//! before the next step and returns [`Error::Interrupted`], and dropping each
//! [`Running`] stops its server's process group by pid. Nothing is left behind.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod calibrate;
mod cpus;
mod job;
mod options;
mod round;

use self::cpus::{CpuSet, CpuSplit};
use self::job::Job;
pub use self::options::Options;
use self::round::Bench;
use crate::machine::{Machine, versions};
use crate::process::{Running, tree_cpu_seconds};
use crate::progress::Progress;
use crate::provenance::{self, Provenance};
use crate::results::{Results, ServerRun, Step};
use crate::scenario::{self, FILES, Plan};
use crate::servers::{Placement, ServerSpec};
use crate::tools::Tools;
use crate::{Error, report};

/// How long a server gets to answer its first request.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// The most a step waits for the server to go quiet after an overload.
const COOL_DOWN: Duration = Duration::from_secs(15);
/// The file descriptors the lab asks for (5,000 clients need more than the default).
const NOFILE: u64 = 65_536;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes SIGINT and SIGTERM stop the run cleanly (see the module's shutdown steps).
///
/// # Errors
///
/// When the handlers cannot be installed.
pub fn interrupt_on_signals() -> std::io::Result<()> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, flag.clone())?;
    }
    std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
        INTERRUPTED.store(true, Ordering::Relaxed);
    });
    Ok(())
}

fn check_interrupt() -> Result<(), Error> {
    if INTERRUPTED.load(Ordering::Relaxed) {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// Runs `options.scenario` (or every scenario for `all`); returns the directory of each
/// scenario's results.
///
/// # Errors
///
/// For an unknown scenario, a missing tool that cannot be installed, a failed build
/// of the lab's own app, or an interruption. A server that cannot be built, started or
/// checked is skipped and the reason recorded instead.
pub fn run(options: &Options) -> Result<Vec<PathBuf>, Error> {
    let cores = Machine::read().cores;
    let plans = plans(options, cores)?;
    let split = CpuSplit::choose(options, cores)?;
    raise_file_limit();
    let progress = Progress::new();
    let tools = Tools::new(checkout()?, progress.clone());
    let lineups = plans
        .iter()
        .map(|plan| lineup(plan, options))
        .collect::<Result<Vec<_>, Error>>()?;
    preflight(&plans, &tools)?;
    build_all(lineups.iter().flatten(), &tools)?;
    let one_of_many = plans.len() > 1;
    let outcome = plans
        .iter()
        .zip(&lineups)
        .map(|(plan, servers)| {
            run_scenario(
                plan,
                servers,
                one_of_many,
                options,
                &split,
                &tools,
                &progress,
            )
        })
        .collect();
    progress.finish();
    outcome
}

/// The plans of `options.scenario` (every scenario's for `all`) on `cores` cores.
fn plans(options: &Options, cores: usize) -> Result<Vec<Plan>, Error> {
    let names: Vec<&str> = if options.scenario == "all" {
        scenario::SCENARIOS.to_vec()
    } else {
        vec![options.scenario.as_str()]
    };
    names
        .iter()
        .map(|n| {
            scenario::plan(n, options.profile, cores)
                .ok_or_else(|| Error::UnknownScenario((*n).to_owned()))
        })
        .collect()
}

/// Builds every server (cargo, apt-get) before any load, so no build waits behind
/// another scenario's rounds. A failure is not lost: `run_servers` tries again
/// (cargo's cache makes it quick), skips the server and records why.
fn build_all<'a>(
    servers: impl Iterator<Item = &'a ServerSpec>,
    tools: &Tools,
) -> Result<(), Error> {
    for server in servers {
        check_interrupt()?;
        let _ = server.build(tools);
    }
    Ok(())
}

/// The checkout the lab builds lab-app and the peers from: `PROSCENIUM_SOURCE`, or the
/// one this binary was built from.
fn checkout() -> Result<PathBuf, Error> {
    checkout_at(std::env::var_os("PROSCENIUM_SOURCE").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
        PathBuf::from,
    ))
}

/// Returns `root` when it is a checkout of Proscenium.
///
/// # Errors
///
/// When it holds no `examples/lab-app` (the binary was moved off its checkout, or
/// the checkout removed), saying how to give it one.
fn checkout_at(root: PathBuf) -> Result<PathBuf, Error> {
    let root = root.canonicalize().unwrap_or(root);
    if root.join("examples/lab-app/Cargo.toml").is_file() {
        Ok(root)
    } else {
        Err(Error::Tool(format!(
            "`proscenium bench` builds its servers from Proscenium's source checkout, and \
             there is none at {}: run it from a checkout (`cargo run --release -- bench ...`) \
             or set PROSCENIUM_SOURCE to one",
            root.display()
        )))
    }
}

/// Checks, before any load runs, what every scenario needs: the plots' font, taskset
/// and the load generators (installing them as it can), so a run fails here rather
/// than at its end without a report.
fn preflight(plans: &[Plan], tools: &Tools) -> Result<(), Error> {
    tools.need_file(Path::new(report::FONT), "fonts-dejavu-core")?;
    if !report::font_ready() {
        return Err(Error::Tool(format!(
            "the plots cannot use the font at {}: reinstall fonts-dejavu-core",
            report::FONT
        )));
    }
    tools.need("taskset", "util-linux")?;
    let loads = || plans.iter().flat_map(|p| &p.steps).map(|s| &s.load);
    if loads().any(|l| l.offered().is_none()) {
        tools.need("wrk", "wrk")?;
    }
    if loads().any(|l| l.offered().is_some()) {
        tools.vegeta()?;
    }
    Ok(())
}

/// The servers `plan` runs: those given, or its defaults; a job runs none.
fn lineup(plan: &Plan, options: &Options) -> Result<Vec<ServerSpec>, Error> {
    if scenario::is_job(plan.name) {
        return match options.servers {
            Some(_) if options.scenario != "all" => Err(Error::Tool(format!(
                "`{}` runs its own configurations, not servers: leave out --servers",
                plan.name
            ))),
            _ => Ok(Vec::new()),
        };
    }
    match &options.servers {
        Some(list) => Ok(list.clone()),
        None => plan.default_servers.iter().map(|s| s.parse()).collect(),
    }
}

/// Runs one scenario's plan and writes its report; returns the report's directory.
fn run_scenario(
    plan: &Plan,
    servers: &[ServerSpec],
    one_of_many: bool,
    options: &Options,
    split: &CpuSplit,
    tools: &Tools,
    progress: &Progress,
) -> Result<PathBuf, Error> {
    let dir = if one_of_many {
        options.out.join(plan.name)
    } else {
        options.out.clone()
    };
    std::fs::create_dir_all(&dir).map_err(Error::io("create the output directory"))?;
    let rounds = options.rounds();
    progress.restart((servers.len() * plan.steps.len()) as u64 * u64::from(rounds));
    let results = run_plan(plan, servers, options, split, tools, progress)?;
    report::write(&results, &dir)?;
    Ok(dir)
}

/// Runs one scenario's plan; returns its results, the report not yet written.
fn run_plan(
    plan: &Plan,
    servers: &[ServerSpec],
    options: &Options,
    split: &CpuSplit,
    tools: &Tools,
    progress: &Progress,
) -> Result<Results, Error> {
    // Both read as the run starts: the servers were built from this checkout just
    // before, and a commit made during a long run is not what ran.
    let started = (provenance::now(), provenance::commit_of(tools.root()));
    let machine = Machine::read();
    let cores = split.for_plan(plan.cores);
    let rounds = options.rounds();
    let job = scenario::is_job(plan.name);
    let (runs, steps) = if job {
        Job {
            tools,
            progress,
            cores: &cores.0.list,
            core_count: cores.0.count,
            rounds,
        }
        .run()?
    } else {
        run_servers(plan, servers, rounds, (&cores.0, &cores.1), tools, progress)?
    };
    let deviations = plan
        .deviations
        .iter()
        .cloned()
        .chain(split.note(plan.cores).filter(|_| !job))
        .collect();
    Ok(Results {
        scenario: plan.name.to_owned(),
        reproduces: plan.reproduces.to_owned(),
        profile: options.profile.name().to_owned(),
        provenance: Some(recorded(plan, options, started, cores)),
        machine,
        versions: versions(tools.root(), tools.installed_vegeta().as_deref()),
        deviations,
        servers: runs,
        steps,
        plots: Vec::new(),
        finding: None,
    })
}

/// The provenance of `plan`'s run: begun at `(date, commit)`, as `options` asked, on
/// `(server, load)` cores.
fn recorded(
    plan: &Plan,
    options: &Options,
    (date, commit): (String, String),
    (server_cores, load_cores): (CpuSet, CpuSet),
) -> Provenance {
    Provenance {
        date,
        commit,
        command: options.command_line.clone(),
        rounds: options.rounds(),
        server_cpus: server_cores.list,
        load_cpus: load_cores.list,
        targets: plan
            .steps
            .iter()
            .map(|s| (format!("{} / {}", s.group, s.label), s.load.mix()))
            .collect(),
    }
}

/// Runs `rounds` of `plan`'s steps against each of `servers`, the servers on the
/// first of `cores` and the load on the second; returns how each server ran and
/// every step.
fn run_servers(
    plan: &Plan,
    servers: &[ServerSpec],
    rounds: u32,
    (server_cores, load_cores): (&CpuSet, &CpuSet),
    tools: &Tools,
    progress: &Progress,
) -> Result<(Vec<ServerRun>, Vec<Step>), Error> {
    let work = WorkDir::new()?;
    let upstream_port = free_port()?;
    let upstream_url = upstream_page(upstream_port);
    let _upstream = plan
        .upstream
        .then(|| {
            start_upstream(
                tools,
                &load_cores.list,
                upstream_port,
                &work.www,
                &upstream_url,
            )
        })
        .transpose()?;
    let mut runs = unbuilt_skipped(servers, &server_cores.list, tools, progress)?;
    let bench = Bench {
        plan,
        tools,
        progress,
        placement: Placement {
            cores: &server_cores.list,
            core_count: server_cores.count,
            port: 0,
            root: &work.www,
            upstream: &upstream_url,
            workdir: &work.scratch,
        },
        load_cores,
    };
    let steps = bench.rounds(servers, rounds, &mut runs)?;
    Ok((runs, steps))
}

/// A run's files: static files, scripts and generator output live outside the
/// output directory, which keeps only what a reader wants; removed when dropped.
struct WorkDir {
    _dir: tempfile::TempDir,
    /// The static files every server serves.
    www: PathBuf,
    /// The servers' own files and the generators' output.
    scratch: PathBuf,
}

impl WorkDir {
    fn new() -> Result<Self, Error> {
        let dir = tempfile::Builder::new()
            .prefix("proscenium-lab-")
            .tempdir()
            .map_err(Error::io("create a work directory"))?;
        let www = dir.path().join("www");
        write_files(&www)?;
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).map_err(Error::io("create the scratch directory"))?;
        Ok(Self {
            _dir: dir,
            www,
            scratch,
        })
    }
}

/// A run for each of `servers` on `cores`, those that cannot be built recorded as
/// skipped. Built already (see `run`): this records them before any load, not after
/// the others' rounds.
fn unbuilt_skipped(
    servers: &[ServerSpec],
    cores: &str,
    tools: &Tools,
    progress: &Progress,
) -> Result<Vec<ServerRun>, Error> {
    let mut runs = Vec::with_capacity(servers.len());
    for server in servers {
        check_interrupt()?;
        let mut run = ServerRun::new(server.to_string(), cores.to_owned());
        if let Err(e) = server.build(tools) {
            progress.say(format!("skipping {server}: {e}"));
            run.skipped = Some(e.to_string());
        }
        runs.push(run);
    }
    Ok(runs)
}

/// The order of `count` servers in `round` (from 1): rotated by one a round.
fn interleaved(count: usize, round: u32) -> impl Iterator<Item = usize> {
    let start = (round as usize).saturating_sub(1) % count.max(1);
    (0..count).map(move |i| (start + i) % count)
}

/// Builds and starts `server`, waits until it answers, and checks its answers.
fn start_checked(
    plan: &Plan,
    server: &ServerSpec,
    tools: &Tools,
    at: &Placement<'_>,
) -> Result<Running, Error> {
    server.build(tools)?;
    let mut running = server.start(tools, at)?;
    wait_for_answer(&mut running, server.name(), at.port, &plan.checks[0].0)?;
    for (path, want) in &plan.checks {
        let (status, body) = get(at.port, path).map_err(Error::io("check an answer"))?;
        if status != 200 || !body.contains(want.as_str()) {
            let shown: String = body.chars().take(120).collect();
            return Err(Error::Check {
                server: server.to_string(),
                path: path.clone(),
                got: format!("{status} {shown}"),
            });
        }
    }
    Ok(running)
}

/// Waits until the server has used under 5 % of a core for half a second (an
/// overloaded server may still be working off its queue), at most [`COOL_DOWN`].
fn cool_down(pid: u32) {
    let deadline = Instant::now() + COOL_DOWN;
    let window = Duration::from_millis(500);
    while Instant::now() < deadline {
        let before = tree_cpu_seconds(pid);
        std::thread::sleep(window);
        if tree_cpu_seconds(pid) - before < 0.05 * window.as_secs_f64() {
            return;
        }
    }
}

/// The page `/relay` fetches from an upstream on `port`: the thesis's 44 KB after
/// 170 ms.
fn upstream_page(port: u16) -> String {
    format!("{}/page?ms=170&kb=44", base_url(port))
}

/// The slow upstream of `/relay`: lab-app on the load's cores.
fn start_upstream(
    tools: &Tools,
    cores: &str,
    port: u16,
    www: &Path,
    url: &str,
) -> Result<Running, Error> {
    tools.build_example("lab-app")?;
    let mut command = std::process::Command::new("taskset");
    command
        .args(["-c", cores])
        .arg(tools.example_binary("lab-app"))
        .args(["--bind", &format!("127.0.0.1:{port}"), "--model", "loops:1"])
        .arg(www);
    let mut running = Running::spawn("upstream", command)?;
    let path = &url[url.find("/page").unwrap_or(0)..];
    wait_for_answer(&mut running, "upstream", port, path)?;
    Ok(running)
}

/// Waits until `running` answers `path` on `port`, up to [`START_TIMEOUT`].
fn wait_for_answer(running: &mut Running, name: &str, port: u16, path: &str) -> Result<(), Error> {
    let deadline = Instant::now() + START_TIMEOUT;
    while get(port, path).is_err() {
        check_interrupt()?;
        if running.has_exited() || Instant::now() > deadline {
            return Err(Error::Start {
                server: name.to_owned(),
                reason: format!("no answer on port {port} within {START_TIMEOUT:?}"),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Writes the static files every server serves (their content is `x` repeated).
fn write_files(www: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(www).map_err(Error::io("create the static root"))?;
    for (name, size) in FILES {
        let path = www.join(name);
        if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(size as u64) {
            std::fs::write(&path, vec![b'x'; size]).map_err(Error::io("write a static file"))?;
        }
    }
    // nginx's workers run as nobody: the root must be readable by all.
    let _ = std::process::Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(www)
        .status();
    Ok(())
}

fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(Error::io("find a free port"))?;
    Ok(listener
        .local_addr()
        .map_err(Error::io("find a free port"))?
        .port())
}

/// The URL the load generators send to a server on `port`.
fn base_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// A plain HTTP/1.1 GET on loopback; returns the status and body.
fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((status, body))
}

fn raise_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, NOFILE.min(hard), NOFILE.min(hard));
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn outside_a_checkout_the_lab_says_it_needs_one() {
        let built_from = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        assert!(checkout_at(built_from).is_ok());
        let elsewhere = tempfile::tempdir().unwrap();
        let why = checkout_at(elsewhere.path().to_owned())
            .unwrap_err()
            .to_string();
        assert!(why.contains("PROSCENIUM_SOURCE"), "{why}");
    }

    /// `server` started and checked as `scenario` starts it (its static files in
    /// `work`/www, `upstream` the page it relays); returns it and its port.
    pub(super) fn started_as(
        scenario: &str,
        server: &str,
        upstream: &str,
        work: &Path,
    ) -> (Running, u16) {
        let tools = Tools::new(checkout().unwrap(), Progress::new());
        let www = work.join("www");
        let cores = Machine::read().cores;
        let all_cores = format!("0-{}", cores - 1);
        let plan = scenario::plan(scenario, crate::scenario::Profile::Quick, cores).unwrap();
        let at = Placement {
            cores: &all_cores,
            core_count: cores,
            port: free_port().unwrap(),
            root: &www,
            upstream,
            workdir: work,
        };
        let server: ServerSpec = server.parse().unwrap();
        let running = start_checked(&plan, &server, &tools, &at).unwrap();
        (running, at.port)
    }

    /// The off-system upstream, started as off-system starts it, answers `/relay`
    /// through `proscenium:loops` (the scenario's own checks): it was broken for weeks
    /// while only plaintext ran end to end.
    #[test]
    fn off_system_relays_through_its_upstream() {
        let tools = Tools::new(checkout().unwrap(), Progress::new());
        let work = tempfile::tempdir().unwrap();
        let www = work.path().join("www");
        write_files(&www).unwrap();
        let cores = Machine::read().cores;
        let upstream_port = free_port().unwrap();
        let page = upstream_page(upstream_port);
        let all_cores = format!("0-{}", cores - 1);
        let _upstream = start_upstream(&tools, &all_cores, upstream_port, &www, &page).unwrap();
        let plan = scenario::plan("off-system", crate::scenario::Profile::Quick, cores).unwrap();
        assert_eq!(plan.checks[0].0, "/relay");
        started_as("off-system", "proscenium:loops", &page, work.path());
    }

    #[test]
    fn each_round_starts_with_the_next_server() {
        let order = |round| interleaved(3, round).collect::<Vec<_>>();
        assert_eq!(order(1), [0, 1, 2]);
        assert_eq!(order(2), [1, 2, 0]);
        assert_eq!(order(3), [2, 0, 1]);
        assert_eq!(order(4), [0, 1, 2]);
        assert_eq!(interleaved(0, 2).count(), 0);
    }
}
