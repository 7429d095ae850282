//! The CEP graph under both partitions of `configs/`: the same alarms, as many as the
//! incidents the generator planted; and with Filter and Correlate written in Lua
//! (`lua/`): the same alarms and the same pairs as in Rust.

use std::path::{Path, PathBuf};

use proscenium::config::{Settings, Sources};

const ENTRIES: usize = 20_000;

fn run_under(config: &str, log: &Path) -> cep::Outcome {
    run_in(&cep::Code::Rust, config, log)
}

fn run_in(code: &cep::Code, config: &str, log: &Path) -> cep::Outcome {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(config);
    let settings = Settings::resolve(&Sources {
        file: Some(file),
        ..Sources::default()
    })
    .unwrap();
    let windows = tempfile::tempdir().unwrap();
    cep::run(log, code, windows.path(), &settings.config.clusters).unwrap()
}

fn lua_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("lua")
}

/// A log of `entries` generated lines, in `scratch`.
fn generated(scratch: &Path, entries: usize) -> PathBuf {
    let log = scratch.join("access.log");
    let mut file = std::fs::File::create(&log).unwrap();
    cep::log::generate(entries, 42, &mut file).unwrap();
    log
}

#[test]
fn both_partitions_raise_the_same_alarms_one_per_planted_incident() {
    let scratch = tempfile::tempdir().unwrap();
    let log = generated(scratch.path(), ENTRIES);

    let one = run_under("one-cluster.toml", &log);
    let two = run_under("two-clusters.toml", &log);

    assert_eq!(one.alarms, two.alarms);
    assert_eq!(one.correlations, two.correlations);
    assert_eq!((one.entries, two.entries), (ENTRIES as u64, ENTRIES as u64));
    assert_eq!(one.alarms.len(), cep::log::incidents(ENTRIES));
}

#[test]
fn issue39_filter_and_correlate_in_lua_find_what_they_find_in_rust() {
    let scratch = tempfile::tempdir().unwrap();
    // Fewer entries: Correlate in Lua takes about six times Rust's time.
    let log = generated(scratch.path(), 5_000);
    let lua = lua_dir();
    let uncounted = proscenium::config::LuaSpec {
        instructions: 0,
        ..Default::default()
    };
    let in_lua = run_in(&cep::Code::Lua(lua, uncounted), "two-clusters.toml", &log);
    let in_rust = run_under("two-clusters.toml", &log);
    assert_eq!(in_lua.alarms, in_rust.alarms);
    assert_eq!(in_lua.correlations, in_rust.correlations);
    assert_eq!(in_lua.entries, 5_000);
    assert_eq!(in_lua.alarms.len(), cep::log::incidents(5_000));
}

/// A Lua Correlate past the default budget of instructions fails its windows: the run
/// ends with an error naming the stage, rather than waiting for reports that will not
/// come.
#[test]
fn issue39_a_run_whose_lua_stage_fails_its_windows_ends_saying_which() {
    let scratch = tempfile::tempdir().unwrap();
    let log = generated(scratch.path(), 2_000);
    let windows = tempfile::tempdir().unwrap();
    let code = cep::Code::Lua(lua_dir(), proscenium::config::LuaSpec::default());
    let failed = cep::run(
        &log,
        &code,
        windows.path(),
        &std::collections::HashMap::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(failed.contains("stage `correlate` failed"), "{failed}");
}
