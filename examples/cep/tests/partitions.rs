//! The CEP graph under both partitions of `configs/`: the same alarms, as many as the
//! incidents the generator planted.

use std::path::{Path, PathBuf};

use proscenium::config::{Settings, Sources};

const ENTRIES: usize = 20_000;

fn run_under(config: &str, log: &Path) -> cep::Outcome {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(config);
    let settings = Settings::resolve(&Sources {
        file: Some(file),
        ..Sources::default()
    })
    .unwrap();
    let windows = tempfile::tempdir().unwrap();
    cep::run(log, windows.path(), &settings.config.clusters).unwrap()
}

#[test]
fn both_partitions_raise_the_same_alarms_one_per_planted_incident() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("access.log");
    let mut file = std::fs::File::create(&log).unwrap();
    cep::log::generate(ENTRIES, 42, &mut file).unwrap();
    drop(file);

    let one = run_under("one-cluster.toml", &log);
    let two = run_under("two-clusters.toml", &log);

    assert_eq!(one.alarms, two.alarms);
    assert_eq!(one.correlations, two.correlations);
    assert_eq!((one.entries, two.entries), (ENTRIES as u64, ENTRIES as u64));
    assert_eq!(one.alarms.len(), cep::log::incidents(ENTRIES));
}
