//! `cep` over two processes (`configs/two-processes.toml`, Correlate in a process of
//! its own, reached through a Redis of the test's own) prints what the one-process run
//! prints: the same alarms, entries and Correlate pairs — also when the Correlate
//! process is killed (SIGKILL) in the middle: its replacement claims what it had
//! taken, and the alarm stage, idempotent, counts a report delivered twice once; and
//! when Redis (its append-only file synced on every write) is killed and restarted in
//! the middle: writers retry, readers reconnect. And a process whose configuration is
//! wrong is not restarted: `cep` ends saying so. And Correlate on another host (a
//! network namespace) cut off the network for five seconds: it goes on after. And Redis
//! absent when `cep` starts: its processes are restarted with backoff until it comes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use proscenium::testing::{Redis, process_of};

const ENTRIES: usize = 20_000;

fn config(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(name)
}

fn command(config_file: &Path, log: &Path, redis: &Redis) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cep"));
    command
        .arg("--config")
        .arg(config_file)
        .arg("--log")
        .arg(log)
        .env("PROSCENIUM_REDIS_URL", redis.url());
    command
}

fn cep(config_file: &Path, log: &Path, redis: &Redis) -> Output {
    command(config_file, log, redis).output().unwrap()
}

/// Writes a generated log of `entries` under `dir`.
fn log_of(entries: usize, dir: &Path) -> PathBuf {
    let log = dir.join("access.log");
    let mut file = std::fs::File::create(&log).unwrap();
    cep::log::generate(entries, 42, &mut file).unwrap();
    log
}

/// What two runs must agree on: every line but the times.
fn findings(output: &Output) -> Vec<String> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.starts_with("elapsed") && !l.starts_with("cep "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn two_processes_print_what_one_prints() {
    let redis = Redis::start();
    let scratch = tempfile::tempdir().unwrap();
    let log = log_of(ENTRIES, scratch.path());

    let one = findings(&cep(&config("one-cluster.toml"), &log, &redis));
    let two = findings(&cep(&config("two-processes.toml"), &log, &redis));

    assert_eq!(one, two);
    assert!(
        one.contains(&format!("alarms: {}", cep::log::incidents(ENTRIES))),
        "{one:?}"
    );
    assert!(one.contains(&format!("entries: {ENTRIES}")), "{one:?}");
}

#[test]
fn a_process_the_configuration_does_not_hold_refuses_and_is_not_restarted() {
    let redis = Redis::start();
    let scratch = tempfile::tempdir().unwrap();
    let wrong = scratch.path().join("wrong.toml");
    // `correlate`'s process names a cluster the graph's partition does not have.
    let text = std::fs::read_to_string(config("two-processes.toml"))
        .unwrap()
        .replace("clusters = [\"correlate\"]", "clusters = [\"correlat\"]");
    std::fs::write(&wrong, text).unwrap();
    let log = log_of(2_000, scratch.path());

    let output = cep(&wrong, &log, &redis);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("correlat") && stderr.contains("refused to run"),
        "{stderr}"
    );
}

/// Waits for `child` to exit, killing it past `limit` (a run that never ends fails
/// instead of hanging the suite).
fn finished(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("cep did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Correlate's input, and its consumer group.
const CORRELATE_INPUT: (&str, &str) = ("cep:copy.correlate:correlate", "correlate");

/// Of Correlate's input: the windows its group has acknowledged, and those it holds
/// pending (0, 0 before the group is there).
fn correlate_progress(redis: &Redis) -> (u64, u64) {
    let mut connection = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let groups: redis::RedisResult<redis::streams::StreamInfoGroupsReply> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(CORRELATE_INPUT.0)
        .query(&mut connection);
    let Some(group) = groups
        .ok()
        .and_then(|g| g.groups.into_iter().find(|g| g.name == CORRELATE_INPUT.1))
    else {
        return (0, 0);
    };
    let read = group.entries_read.unwrap_or(0);
    let count = |n: usize| u64::try_from(n).unwrap();
    (
        count(read.saturating_sub(group.pending)),
        count(group.pending),
    )
}

/// Runs `cep` over two processes, with `midway` done once Correlate has acknowledged
/// `after` windows and holds at least as many still pending; returns its output.
fn interrupted(
    redis: &mut Redis,
    log: &Path,
    after: u64,
    midway: impl FnOnce(&Child, &mut Redis),
) -> Output {
    let two = command(&config("two-processes.toml"), log, redis)
        // What a killed process had taken is claimed a second after.
        .env("PROSCENIUM_REDIS_CLAIM_IDLE", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (done, pending) = correlate_progress(redis);
        if done >= after && pending >= after {
            break;
        }
        assert!(Instant::now() < deadline, "Correlate did not get going");
        std::thread::sleep(Duration::from_millis(5));
    }
    midway(&two, redis);
    finished(two, Duration::from_secs(120))
}

/// Entries of the runs interrupted midway: 200 windows, the interruption after 10.
const LONG_RUN: usize = 200_000;

#[test]
fn a_correlate_process_killed_mid_run_is_replaced_and_nothing_is_lost_or_counted_twice() {
    let mut redis = Redis::start();
    let scratch = tempfile::tempdir().unwrap();
    let log = log_of(LONG_RUN, scratch.path());
    let one = findings(&cep(&config("one-cluster.toml"), &log, &redis));

    let two = interrupted(&mut redis, &log, 10, |cep, _| {
        let correlate = process_of(cep.id(), "correlate").expect("a correlate process");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(correlate).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    });
    assert_eq!(findings(&two), one);
    // The killed process's consumer and its replacement's, in Correlate's group.
    let mut connection = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let consumers: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(CORRELATE_INPUT.0)
        .arg(CORRELATE_INPUT.1)
        .query(&mut connection)
        .unwrap();
    assert_eq!(consumers.len(), 2, "{consumers:?}");
}

#[test]
fn redis_restarted_mid_run_loses_nothing() {
    let mut redis = Redis::start_durable();
    let scratch = tempfile::tempdir().unwrap();
    let log = log_of(LONG_RUN, scratch.path());
    let one = findings(&cep(&config("one-cluster.toml"), &log, &redis));

    let two = interrupted(&mut redis, &log, 10, |_, redis| {
        redis.restart(Duration::from_secs(1));
    });
    assert_eq!(findings(&two), one);
}

/// Correlate's process on another host (a network namespace), cut off the network for
/// five seconds once it holds windows; joined again, it goes on, and `main` prints what
/// one process prints.
#[test]
fn a_host_cut_off_for_five_seconds_resumes_and_nothing_is_lost() {
    let host = proscenium::testing::Host::new();
    let redis = Redis::start_bound(host.gateway());
    let scratch = tempfile::tempdir().unwrap();
    let log = log_of(LONG_RUN, scratch.path());
    let one = findings(&cep(&config("one-cluster.toml"), &log, &redis));

    let process = |command: &mut Command, name: &str| {
        command
            .arg("--config")
            .arg(config("two-processes.toml"))
            .arg("--log")
            .arg(&log)
            .arg("--dir")
            .arg(scratch.path())
            .args(["--process", name])
            .env("PROSCENIUM_REDIS_URL", redis.url())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut correlate = process(&mut host.command(env!("CARGO_BIN_EXE_cep")), "correlate");
    let main = process(&mut Command::new(env!("CARGO_BIN_EXE_cep")), "main");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (done, pending) = correlate_progress(&redis);
        if done >= 10 && pending >= 10 {
            break;
        }
        assert!(Instant::now() < deadline, "Correlate did not get going");
        std::thread::sleep(Duration::from_millis(5));
    }
    host.set_connected(false);
    std::thread::sleep(Duration::from_secs(5));
    host.set_connected(true);
    let two = finished(main, Duration::from_secs(120));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(correlate.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = correlate.wait();
    assert_eq!(findings(&two), one);
}

/// Redis not there when `cep` starts: its processes say so and are restarted with
/// backoff until it comes; then the run is the one-process run's.
#[test]
fn redis_absent_at_start_is_waited_for_with_backoff() {
    let scratch = tempfile::tempdir().unwrap();
    let log = log_of(ENTRIES, scratch.path());
    let port = proscenium::testing::free_port();
    let two = Command::new(env!("CARGO_BIN_EXE_cep"))
        .arg("--config")
        .arg(config("two-processes.toml"))
        .arg("--log")
        .arg(&log)
        .env("PROSCENIUM_REDIS_URL", format!("redis://127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let redis = Redis::start_on(port);
    let output = finished(two, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot compare its shape in Redis"),
        "said why it could not start: {stderr}"
    );
    let one = findings(&cep(&config("one-cluster.toml"), &log, &redis));
    assert_eq!(findings(&output), one);
}
