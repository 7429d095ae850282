//! `cep` over two processes (`configs/two-processes.toml`, Correlate in a process of
//! its own, reached through a Redis of the test's own) prints what the one-process run
//! prints: the same alarms, entries and Correlate pairs. And a process whose
//! configuration is wrong is not restarted: `cep` ends saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use proscenium::testing::Redis;

const ENTRIES: usize = 20_000;

fn config(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(name)
}

fn cep(config_file: &Path, log: &Path, redis: &Redis) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cep"))
        .arg("--config")
        .arg(config_file)
        .arg("--log")
        .arg(log)
        .env("PROSCENIUM_REDIS_URL", redis.url())
        .output()
        .unwrap()
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
    let log = scratch.path().join("access.log");
    let mut file = std::fs::File::create(&log).unwrap();
    cep::log::generate(ENTRIES, 42, &mut file).unwrap();
    drop(file);

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
    let log = scratch.path().join("access.log");
    let mut file = std::fs::File::create(&log).unwrap();
    cep::log::generate(2_000, 42, &mut file).unwrap();
    drop(file);

    let output = cep(&wrong, &log, &redis);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("correlat") && stderr.contains("refused to run"),
        "{stderr}"
    );
}
