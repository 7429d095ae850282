//! `cep` over two processes (`configs/two-processes.toml`, Correlate in a process of
//! its own, reached through a Redis of the test's own) prints what the one-process run
//! prints: the same alarms, entries and Correlate pairs — also when the Correlate
//! process is killed (SIGKILL) in the middle: its replacement claims what it had
//! taken, and the alarm stage, idempotent, counts a report delivered twice once. And a
//! process whose configuration is wrong is not restarted: `cep` ends saying so.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use proscenium::testing::Redis;

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

/// The pid of the child of `parent` running `--process NAME`, once there is one.
fn process_of(parent: &Child, name: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:"))?.trim();
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let wanted = format!("--process\0{name}\0");
            let runs = cmdline
                .windows(wanted.len())
                .any(|w| w == wanted.as_bytes());
            (ppid == parent.id().to_string() && runs).then_some(pid)
        })
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

/// `XLEN`, or 0 for a stream not made yet.
fn stream_len(redis: &Redis, stream: &str) -> u64 {
    let mut connection = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("XLEN")
        .arg(stream)
        .query(&mut connection)
        .unwrap()
}

#[test]
fn a_correlate_process_killed_mid_run_is_replaced_and_nothing_is_lost_or_counted_twice() {
    const KILLED_AT_REPORTS: u64 = 20;
    let entries = 200_000;
    let redis = Redis::start();
    let scratch = tempfile::tempdir().unwrap();
    let log = log_of(entries, scratch.path());
    let one = findings(&cep(&config("one-cluster.toml"), &log, &redis));

    let two = command(&config("two-processes.toml"), &log, &redis)
        // What the killed process had taken is claimed a second after.
        .env("PROSCENIUM_REDIS_CLAIM_IDLE", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let reports = "cep:correlate.reports:alarm";
    while stream_len(&redis, reports) < KILLED_AT_REPORTS {
        assert!(Instant::now() < deadline, "Correlate reported nothing");
        std::thread::sleep(Duration::from_millis(10));
    }
    let first = process_of(&two, "correlate").expect("a correlate process");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(findings(&finished(two, Duration::from_secs(120))), one);
    // The killed process's consumer and its replacement's, in Correlate's group.
    let mut connection = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let consumers: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg("cep:copy.correlate:correlate")
        .arg("correlate")
        .query(&mut connection)
        .unwrap();
    assert_eq!(consumers.len(), 2, "{consumers:?}");
    let windows = u64::try_from(entries / 1_000).unwrap();
    let reported = stream_len(&redis, reports);
    assert!(
        reported >= windows,
        "every window reported at least once: {reported} of {windows}"
    );
}
